#!/usr/bin/env bash
# Benchmark: mg-convert HF -> torch_dist and torch_dist -> HF against `cp -r` of the same bytes
# (plain and durable) and megatron-core's own dist_checkpointing.load + save_pretrained path,
# in one run; prints seconds, GB/s, peak RSS and the ratios (scripts/bench_convert_dist.py).
#   scripts/bench-convert-dist.sh [HF_MODEL_DIR]
# Without an argument the synthetic Llama-shaped bf16 checkpoint of bench-convert.sh (3.4 GB,
# ~/.cache/mgtools/bench/llama-synth-3.4GB) is used, generated once. Environment:
# MG_BENCH_WORKERS (mg-convert --workers), MG_BENCH_SKIP_MCORE=1 (leave megatron-core out),
# MG_BENCH_ROUNDS (rounds of all contenders, alternated, each reported by its fastest; 3).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$("$root/scripts/setup.sh" --python | sed -n 's/^MG_VENV=//p')
dir=${XDG_CACHE_HOME:-$HOME/.cache}/mgtools/bench
model=${1:-}
if [ -z "$model" ]; then
  mkdir -p "$dir"
  model=$dir/llama-synth-3.4GB
  "$venv/bin/python" "$root/scripts/bench_convert.py" generate "$model"
fi
[ -x "$root/bin/mg-convert" ] || { echo "bench-convert-dist: $root/bin/mg-convert missing: run make" >&2; exit 1; }
work=$dir/convert-dist-scratch
trap 'rm -rf "$work"' EXIT
extra=()
[ -n "${MG_BENCH_WORKERS:-}" ] && extra+=(--workers "$MG_BENCH_WORKERS")
[ "${MG_BENCH_SKIP_MCORE:-0}" = 1 ] && extra+=(--skip-mcore)
[ -n "${MG_BENCH_ROUNDS:-}" ] && extra+=(--rounds "$MG_BENCH_ROUNDS")
"$venv/bin/python" "$root/scripts/bench_convert_dist.py" run --bin "$root/bin" --model "$model" \
  --work "$work" "${extra[@]}"

#!/usr/bin/env bash
# Benchmark: mg-convert HF -> Megatron TP4 PP2 and back, against `cp -r` of the same bytes and
# a PyTorch converter that works like Megatron's tools/checkpoint/convert.py (load all, split,
# torch.save per rank; load all ranks, merge, save), in one run; prints seconds, GB/s, peak RSS
# and the ratios (scripts/bench_convert.py).
#   scripts/bench-convert.sh [HF_MODEL_DIR]
# Without an argument a synthetic Llama-shaped bf16 checkpoint (8 layers, hidden 4096, FFN
# 11008, 32 heads, 8 KV heads, vocab 32000: 3.4 GB) is generated once under
# ~/.cache/mgtools/bench/llama-synth-3.4GB. Outputs go to a scratch folder next to it (about
# 2x the model size at a time) and are removed. Environment: MG_BENCH_WORKERS (mg-convert
# --workers), MG_BENCH_SKIP_TORCH=1 (leave the PyTorch path out), MG_BENCH_ROUNDS (rounds of
# all contenders, alternated, each reported by its fastest; default 3), MG_BENCH_FORMAT=torch_dist
# (HF <-> torch_dist against cp and megatron-core's dist_checkpointing.load + save_pretrained;
# MG_BENCH_SKIP_TORCH=1 then leaves megatron-core out).
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
[ -x "$root/bin/mg-convert" ] || { echo "bench-convert: $root/bin/mg-convert missing: run make" >&2; exit 1; }
work=$dir/convert-scratch${MG_BENCH_FORMAT:+-$MG_BENCH_FORMAT}
trap 'rm -rf "$work"' EXIT
extra=()
[ -n "${MG_BENCH_WORKERS:-}" ] && extra+=(--workers "$MG_BENCH_WORKERS")
[ "${MG_BENCH_SKIP_TORCH:-0}" = 1 ] && extra+=(--skip-torch)
[ -n "${MG_BENCH_ROUNDS:-}" ] && extra+=(--rounds "$MG_BENCH_ROUNDS")
[ -n "${MG_BENCH_FORMAT:-}" ] && extra+=(--format "$MG_BENCH_FORMAT")
"$venv/bin/python" "$root/scripts/bench_convert.py" run --bin "$root/bin" --model "$model" \
  --work "$work" "${extra[@]}"

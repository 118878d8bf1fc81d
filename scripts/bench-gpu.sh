#!/usr/bin/env bash
# Benchmark: mg-train on one NVIDIA GPU in bf16 (--device cuda --bf16) against PyTorch's
# transformers training loop in the same run (scripts/bench_gpu.py): GPT-2 124M (B=16,
# T=1024) and a Llama-style 1.2B (Llama-3.2-1B's shape, B=4, T=2048) on mock data; prints
# tokens/s, TFLOP/s, MFU against the GPU's dense bf16 peak, and peak device memory beside
# mg-train --dry-run's plan. Issue 14's budget: under 8 minutes on one H100/H200.
#   scripts/bench-gpu.sh [--only gpt2|llama] [--iters N] [--warmup N] [--no-torch]
#   MG_BIN: the tools (default bin/, built by `make` where nvcc is present);
#   MG_PYTHON: the Python with torch and transformers (default: the test environment of
#   scripts/setup.sh when it exists, else python3; without torch the PyTorch rows say why).
# Without a visible GPU it measures nothing and exits 1.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
bin=${MG_BIN:-$root/bin}
[ -x "$bin/mg-train" ] || { echo "bench-gpu: $bin/mg-train not found: run make (with nvcc)" >&2; exit 2; }
py=${MG_PYTHON:-}
if [ -z "$py" ]; then
  venv=$(ls -d "${XDG_CACHE_HOME:-$HOME/.cache}"/mgtools/venv-*/ 2>/dev/null | head -1 || true)
  if [ -n "$venv" ] && [ -e "$venv/.complete" ]; then py=$venv/bin/python; else py=python3; fi
fi
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
exec "$py" "$root/scripts/bench_gpu.py" --bin "$bin" "$@"

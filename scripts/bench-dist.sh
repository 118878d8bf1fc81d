#!/usr/bin/env bash
# Benchmark: mg-train's data parallelism over MPI on this machine (scripts/bench_dist.py):
# the communication volume the comm layer measures in a training step against --dry-run's
# plan (must match exactly), and tokens/s of GPT-2 124M (mock data, vocabulary 50257) for
# the same global batch in 1 process x 2 threads and 2 processes x 1 thread (DP = 2, plain
# and with --use-distributed-optimizer): the DP overhead at the same total thread count.
#   scripts/bench-dist.sh [--iters N] [--threads N] [--seq N]   (MG_BIN: the tools)
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
command -v mpirun >/dev/null || { echo "bench-dist: mpirun not found (scripts/setup.sh --system)" >&2; exit 2; }
exec python3 "$root/scripts/bench_dist.py" --bin "${MG_BIN:-$root/bin}" "$@"

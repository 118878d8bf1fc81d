#!/usr/bin/env bash
# Benchmark: mg-preprocess end to end (JSONL -> .bin/.idx) against tiktoken and HF tokenizers
# encoding the same documents, each on one thread, in the same run; ratios printed.
#   scripts/bench-preprocess.sh [CORPUS.jsonl]
# Without an argument a >= 120 MB corpus is built from text installed on this machine
# (scripts/make-bench-corpus.py) under ~/.cache/mgtools/bench. Set MEGATRON_LM_DIR to a
# Megatron-LM checkout (tag core_v0.16.1, matching the megatron-core of the test environment)
# to include tools/preprocess_data.py; it needs the `six` module, installed here into
# ~/.cache/mgtools/bench/pyextra.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$("$root/scripts/setup.sh" --python | sed -n 's/^MG_VENV=//p')
corpus=${1:-}
if [ -z "$corpus" ]; then
  dir=${XDG_CACHE_HOME:-$HOME/.cache}/mgtools/bench
  mkdir -p "$dir"
  corpus=$dir/corpus-120MB.jsonl
  [ -s "$corpus" ] || "$venv/bin/python" "$root/scripts/make-bench-corpus.py" --size 120 --out "$corpus"
fi
if [ -n "${MEGATRON_LM_DIR:-}" ]; then
  extra=${XDG_CACHE_HOME:-$HOME/.cache}/mgtools/bench/pyextra
  [ -d "$extra/six.py" ] || [ -f "$extra/six.py" ] || "$venv/bin/pip" install -q --target "$extra" six
  export MG_BENCH_PYEXTRA=$extra
fi
vocab=${MG_VOCAB_DIR:-$root/build/vocab}
[ -n "${MG_VOCAB_DIR:-}" ] || "$root/scripts/unpack-vocab.sh" "$vocab"
exec "$venv/bin/python" "$root/scripts/bench_preprocess.py" --corpus "$corpus" \
  --bin "$root/bin" --vocab "$vocab"

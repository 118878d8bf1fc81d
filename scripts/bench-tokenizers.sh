#!/usr/bin/env bash
# Benchmark: mg-preprocess per tokenizer type (Llama-2, Llama-3, Qwen3, a Unigram model as
# .model and as tokenizer.json, a BPE .model and a WordPiece vocab.txt, both trained on
# botchan.txt and cached under ~/.cache/mgtools/bench) against HF tokenizers (1 thread) and
# sentencepiece, one core each, in the same run; MB/s and ratios printed (target >= 5x per
# core), end to end and for the encoder alone.
#   scripts/bench-tokenizers.sh [CORPUS.jsonl] [--mb N] [--only NAME]
# With --peers first, instead: mg-preprocess end to end and its encoder alone against
# gigatoken and quicktok-v1, the fastest exact BPE tokenizers on PyPI (GPT-2/r50k, cl100k,
# o200k, Llama-3, Qwen3; one core each; a cold and a warm pass; every id checked against
# tiktoken / HF tokenizers on the whole corpus; scripts/bench_peers.py says how):
#   scripts/bench-tokenizers.sh --peers [CORPUS.jsonl] [--rounds N] [--mb N] [--only a,b]
# With --zh first: the SentencePiece .model tokenizers (a Unigram and a BPE model trained on
# it, and test_ja_model) on Chinese text, Debian's fortunes-zh (GPL-3.0+) made into a JSONL
# corpus by scripts/make-zh-corpus.py under ~/.cache/mgtools/bench (every id checked):
#   scripts/bench-tokenizers.sh --zh [--rounds N] [--only NAME]
# (MG_BIN: the tools; MG_BUILD: the build folder holding tests/tools/encode_bench, the
# "encoder only" contender, built here with `make tools-test` when missing)
# Without a corpus the one of scripts/bench-preprocess.sh is used (built on first use by
# scripts/make-bench-corpus.py under ~/.cache/mgtools/bench); its first 20 MB by default.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
script=bench_tokenizers.py
venv=$("$root/scripts/setup.sh" --python | sed -n 's/^MG_VENV=//p')
corpus=
if [ "${1:-}" = --peers ]; then script=bench_peers.py; shift; fi
if [ "${1:-}" = --zh ]; then
  dir=${XDG_CACHE_HOME:-$HOME/.cache}/mgtools/bench
  mkdir -p "$dir"
  corpus=$dir/corpus-zh-fortunes.jsonl
  [ -s "$corpus" ] || "$venv/bin/python" "$root/scripts/make-zh-corpus.py" --out "$corpus"
fi
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then corpus=$1; shift; fi
if [ -z "$corpus" ]; then
  dir=${XDG_CACHE_HOME:-$HOME/.cache}/mgtools/bench
  mkdir -p "$dir"
  corpus=$dir/corpus-120MB.jsonl
  [ -s "$corpus" ] || "$venv/bin/python" "$root/scripts/make-bench-corpus.py" --size 120 --out "$corpus"
fi
build=${MG_BUILD:-$root/build}
[ -x "$build/tests/tools/encode_bench" ] || make -C "$root" -s tools-test BUILD="$build"
vocab=${MG_VOCAB_DIR:-$root/build/vocab}
[ -n "${MG_VOCAB_DIR:-}" ] || "$root/scripts/unpack-vocab.sh" "$vocab"
export TOKENIZERS_PARALLELISM=false RAYON_NUM_THREADS=1 OMP_NUM_THREADS=1 HF_HUB_OFFLINE=1
exec "$venv/bin/python" "$root/scripts/$script" --corpus "$corpus" \
  --bin "${MG_BIN:-$root/bin}" --encode-bench "$build/tests/tools/encode_bench" \
  --vocab "$vocab" "$@"

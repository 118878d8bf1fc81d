#!/usr/bin/env bash
# Benchmark: mg-train against a PyTorch CPU training loop (transformers models, AdamW,
# clipping) on GPT-2 124M and a Llama-shaped model of similar size, B=4, T=256, fp32, the
# same threads, in one run; prints tokens/s, the ratio, MFU against the measured sgemm peak
# and peak RSS against mg-train --dry-run's plan (scripts/bench_train.py).
#   scripts/bench-train.sh [--threads N] [--iters N] [--repeat N] [--only gpt2|llama]   (MG_BIN: the tools)
# The training data are the first 20 MB of the scripts/bench-preprocess.sh corpus, tokenized
# once with GPT-2 by mg-preprocess under ~/.cache/mgtools/bench/train.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
venv=$("$root/scripts/setup.sh" --python | sed -n 's/^MG_VENV=//p')
bin=${MG_BIN:-$root/bin}
vocab=${MG_VOCAB_DIR:-$root/build/vocab}
[ -n "${MG_VOCAB_DIR:-}" ] || "$root/scripts/unpack-vocab.sh" "$vocab"
dir=${XDG_CACHE_HOME:-$HOME/.cache}/mgtools/bench
mkdir -p "$dir/train"
corpus=$dir/corpus-120MB.jsonl
data=$dir/train/gpt2_text_document
if [ ! -s "$data.idx" ]; then
  [ -s "$corpus" ] || "$venv/bin/python" "$root/scripts/make-bench-corpus.py" --size 120 --out "$corpus"
  head -c 20000000 "$corpus" | head -n -1 > "$dir/train/c20.jsonl"
  "$bin/mg-preprocess" --input "$dir/train/c20.jsonl" --output-prefix "$dir/train/gpt2" \
    --tokenizer-type GPT2BPETokenizer --vocab-file "$vocab/gpt2/gpt2-vocab.json" \
    --merge-file "$vocab/gpt2/gpt2-merges.txt" --append-eod --quiet
  rm -f "$dir/train/c20.jsonl"
fi
export HF_HUB_OFFLINE=1 TOKENIZERS_PARALLELISM=false
exec "$venv/bin/python" "$root/scripts/bench_train.py" --bin "$bin" --data "$data" \
  --vocab "$vocab" "$@"

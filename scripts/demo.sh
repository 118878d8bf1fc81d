#!/usr/bin/env bash
# The main job on an embedded default: turns a real corpus (the English fortune cookies of
# Debian's `fortunes` package) into a Megatron indexed dataset with a real tokenizer (the
# GPT-2 byte-pair ranks shipped in the `openai-whisper` package on PyPI), then prints what was
# written. Both are fetched by scripts/setup.sh / this script into ~/.cache/mgtools/demo.
#   scripts/demo.sh [OUTPUT_DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/mgtools/demo
out=${1:-$root/demo-output}
mkdir -p "$cache" "$out"

ranks=$cache/gpt2.tiktoken
if [ ! -s "$ranks" ]; then
  tmp=$(mktemp -d)
  python3 -m pip download -q --no-deps --no-binary :all: -d "$tmp" openai-whisper==20250625
  tar -xzf "$tmp"/openai_whisper-*.tar.gz -C "$tmp" --wildcards '*/whisper/assets/gpt2.tiktoken'
  mv "$tmp"/openai_whisper-*/whisper/assets/gpt2.tiktoken "$ranks"
  rm -rf "$tmp"
fi

corpus=$cache/fortunes.jsonl
if [ ! -s "$corpus" ]; then
  python3 - "$corpus" <<'PY'
import json, os, sys
src = "/usr/share/games/fortunes"
with open(sys.argv[1], "w", encoding="utf-8") as out:
    for name in sorted(os.listdir(src)):
        path = os.path.join(src, name)
        if "." in name or not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8", errors="replace") as f:
            for text in f.read().split("\n%\n"):
                if text.strip():
                    out.write(json.dumps({"text": text.strip("\n") + "\n", "source": name}) + "\n")
PY
fi

echo "corpus:    $corpus ($(wc -l <"$corpus") documents, $(du -h "$corpus" | cut -f1))"
echo "tokenizer: GPT-2 byte-pair ranks $ranks (TikTokenizer, OpenAI r50k_base layout)"
"$root/bin/mg-preprocess" --input "$corpus" --output-prefix "$out/fortunes" \
  --tokenizer-type TikTokenizer --tokenizer-model "$ranks" --tiktoken-pattern r50k_base \
  --append-eod --workers 2
echo
echo "written:"
ls -l "$out"/fortunes_text_document.bin "$out"/fortunes_text_document.idx

#!/usr/bin/env bash
# Unpacks the test vocabularies (tests/data/vocab.tar.zst; provenance and licences in
# tests/data/README.md) into DIR (default build/vocab) and checks them against
# tests/data/vocab.sha256. Does nothing when DIR/.unpacked is newer than the archive, the
# checksum list and this script. `make vocab` runs it; so do the test runners when
# MG_VOCAB_DIR is not set.
#   scripts/unpack-vocab.sh [DIR]
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest=${1:-$root/build/vocab}
archive=$root/tests/data/vocab.tar.zst sums=$root/tests/data/vocab.sha256
stamp=$dest/.unpacked
if [ -f "$stamp" ] && [ "$stamp" -nt "$archive" ] && [ "$stamp" -nt "$sums" ] &&
   [ "$stamp" -nt "$0" ]; then
  exit 0
fi
if ! command -v zstd >/dev/null; then
  echo "unpack-vocab: zstd not found (scripts/setup.sh --system)" >&2; exit 1
fi
tmp=$dest.tmp.$$
trap 'rm -rf "$tmp"' EXIT
rm -rf "$tmp" && mkdir -p "$tmp"
zstd -dcq "$archive" | tar -xf - -C "$tmp"
(cd "$tmp" && sha256sum --quiet --strict -c "$sums") ||
  { echo "unpack-vocab: $archive does not match $sums" >&2; exit 1; }
for v in llama2 llama3 gemma3; do  # vocabularies under their own terms: the terms beside them
  cp "$root/tests/data/licenses/$v/"* "$tmp/hf/$v/"
done
rm -rf "$dest" && mv "$tmp" "$dest"
touch "$stamp"
echo "unpack-vocab: test vocabularies in $dest" >&2

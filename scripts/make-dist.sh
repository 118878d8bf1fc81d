#!/usr/bin/env bash
# make-dist.sh NAME REVISION — writes NAME.tar.gz, the release tarball: every file git
# tracks (as the working tree has it; the test vocabularies included) under NAME/, and
# NAME/REVISION holding REVISION (`git describe --always --dirty`), which the build reads
# for --version where there is no .git. Reproducible: names sorted, owner 0, every mtime
# that of the last commit. Needs a git checkout.
set -euo pipefail
[ $# -eq 2 ] || { echo "usage: $0 NAME REVISION" >&2; exit 2; }
name=$1 rev=$2
cd "$(dirname "$0")/.."
git rev-parse --is-inside-work-tree >/dev/null 2>&1 ||
  { echo "$0: make dist needs a git checkout (this tree has no .git)" >&2; exit 1; }
stage=$(mktemp -d "${TMPDIR:-/tmp}/mgdist-XXXXXX")
trap 'rm -rf "$stage"' EXIT
printf '%s\n' "$rev" >"$stage/REVISION"
tar_opts=(--sort=name --owner=0 --group=0 --numeric-owner --mtime="@$(git log -1 --format=%ct)"
          --format=gnu --transform="s|^|$name/|")
git ls-files -z | tar -cf "$stage/dist.tar" "${tar_opts[@]}" --null -T -
tar -rf "$stage/dist.tar" "${tar_opts[@]}" -C "$stage" REVISION
gzip -n -9 <"$stage/dist.tar" >"$name.tar.gz.tmp"
mv "$name.tar.gz.tmp" "$name.tar.gz"
echo "$name.tar.gz: $(git ls-files | wc -l) files + REVISION ($rev), $(du -h "$name.tar.gz" | cut -f1)"

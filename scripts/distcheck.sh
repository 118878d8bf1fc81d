#!/usr/bin/env bash
# distcheck.sh TARBALL [TARGET...] — checks that a release tarball is self-contained: unpacks
# it in an empty folder outside this tree, runs `make` there, checks that the tools name the
# tarball's REVISION in --version, then runs `make TARGET...` (default: test). The
# environment's MG_* variables are left out (MG_MEGATRON_LM_GIT, a user setting, is kept).
# The folder is removed when everything passed and kept for a look otherwise.
set -euo pipefail
[ $# -ge 1 ] || { echo "usage: $0 TARBALL [TARGET...]" >&2; exit 2; }
tarball=$(realpath "$1"); shift
targets=("${@:-test}")
for v in $(compgen -v MG_); do [ "$v" = MG_MEGATRON_LM_GIT ] || unset "$v"; done
dir=$(mktemp -d "${TMPDIR:-/tmp}/mgdistcheck-XXXXXX")
tar -C "$dir" -xzf "$tarball"
src=$dir/$(basename "$tarball" .tar.gz)
[ -f "$src/REVISION" ] || { echo "distcheck: $tarball has no REVISION file"; exit 1; }
cd "$src"
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make "$@"; }
if ! mk -j"$(nproc)"; then echo "distcheck: make failed in $src (kept)"; exit 1; fi
want="revision: $(cat REVISION)"
for t in bin/*; do
  got=$("$t" --version | sed -n 2p)
  [ "$got" = "$want" ] || { echo "distcheck: $t --version says '$got', expected '$want'"; exit 1; }
done
if ! mk "${targets[@]}"; then echo "distcheck: make ${targets[*]} failed in $src (kept)"; exit 1; fi
rm -rf "$dir"
echo "distcheck: $(basename "$tarball"): make and make ${targets[*]} pass in an empty folder"

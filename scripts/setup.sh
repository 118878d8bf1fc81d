#!/usr/bin/env bash
# Installs everything mgtools needs to build and to run its tests, on Debian.
#   scripts/setup.sh           system packages + Python test environment
#   scripts/setup.sh --system  only the Debian -dev packages (enough to build)
#   scripts/setup.sh --python  only the Python test environment
# Idempotent: it checks before it installs, so a second run takes seconds.
# Prints the path of the Python virtual environment as its last line (MG_VENV=...).
set -euo pipefail

here=$(cd "$(dirname "$0")/.." && pwd)
want_system=1 want_python=1
case "${1:-}" in
  --system) want_python=0 ;;
  --python) want_system=0 ;;
  "") ;;
  *) echo "usage: $0 [--system|--python]" >&2; exit 2 ;;
esac

# Debian packages: build dependencies, unicode tables, test data, test tools.
debs=(build-essential pkg-config libzstd-dev libarchive-dev libjansson-dev libonig-dev
      libutf8proc-dev libopenblas-openmp-dev unicode-data zstd xz-utils bzip2 gzip zip fortunes fortunes-zh fortunes-bg
      python3-venv clang libclang-rt-14-dev groff-base man-db bsdextrautils
      liblz4-dev libacl1-dev libopenmpi-dev openmpi-bin time)

install_system() {
  local missing=()
  for p in "${debs[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "setup: installing Debian packages: ${missing[*]}" >&2
  local sudo=""; [ "$(id -u)" -ne 0 ] && sudo=sudo
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >&2
}

venv_dir() {
  local req="$here/tests/interop/requirements.txt" nodeps="$here/tests/interop/requirements-nodeps.txt"
  local key; key=$( (cat "$req" "$nodeps"; python3 --version) | sha256sum | cut -c1-16)
  echo "${XDG_CACHE_HOME:-$HOME/.cache}/mgtools/venv-$key"
}

install_python() {
  local venv; venv=$(venv_dir)
  if [ ! -f "$venv/.complete" ]; then
    echo "setup: building the Python test environment in $venv" >&2
    rm -rf "$venv"
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q --upgrade pip >&2
    "$venv/bin/pip" install -q -r "$here/tests/interop/requirements.txt" >&2
    "$venv/bin/pip" install -q --no-deps -r "$here/tests/interop/requirements-nodeps.txt" >&2
    touch "$venv/.complete"
  fi
  echo "MG_VENV=$venv"
}

[ $want_system -eq 1 ] && install_system
[ $want_python -eq 1 ] && install_python
exit 0

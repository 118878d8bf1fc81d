#!/usr/bin/env bash
# CLI golden tests. Each tests/cli/NAME.sh is run with bash in a fresh temporary directory
# (its working directory), with MG_BIN (absolute tools dir), MG_VOCAB_DIR (default
# build/vocab, unpacked from tests/data/vocab.tar.zst when stale) and MG_CLI_DIR (this
# folder) exported. Its stdout, stderr and exit status must equal NAME.out, NAME.err
# and NAME.exit (a missing .out/.err means "must be empty", a missing .exit means 0).
# Lines of the golden files may hold the glob '*' (anywhere in the line: any text).
#   tests/cli/run.sh [--update] [NAME...]
set -u
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
export MG_BIN=$(cd "$root/${MG_BIN:-bin}" && pwd)
if [ -z "${MG_VOCAB_DIR:-}" ]; then
  "$root/scripts/unpack-vocab.sh" "$root/build/vocab" || exit 1
  export MG_VOCAB_DIR=$root/build/vocab
fi
export MG_CLI_DIR=$here
update=0
[ "${1:-}" = --update ] && { update=1; shift; }
names=("$@")
if [ ${#names[@]} -eq 0 ]; then
  for f in "$here"/*.sh; do b=$(basename "$f" .sh); [ "$b" = run ] || names+=("$b"); done
fi

# match GOLDEN ACTUAL: line by line, '*' in a golden line matches any text.
match() {
  python3 - "$1" "$2" <<'PY'
import fnmatch, sys
g = open(sys.argv[1], errors="replace").read().splitlines() if sys.argv[1] != "-" else []
a = open(sys.argv[2], errors="replace").read().splitlines()
ok = len(g) == len(a) and all(x == y or ("*" in x and fnmatch.fnmatchcase(y, x)) for x, y in zip(g, a))
if not ok:
    import difflib
    sys.stdout.writelines(l + "\n" for l in difflib.unified_diff(g, a, "expected", "actual", lineterm=""))
sys.exit(0 if ok else 1)
PY
}

pass=0 fail=0
for n in "${names[@]}"; do
  tmp=$(mktemp -d "${TMPDIR:-/tmp}/mgcli-$n-XXXXXX")
  (cd "$tmp" && bash "$here/$n.sh" >"$tmp/.stdout" 2>"$tmp/.stderr"; echo $? >"$tmp/.exit")
  if [ $update -eq 1 ]; then
    for k in out err; do
      src=$tmp/.std$k; [ $k = out ] && src=$tmp/.stdout; [ $k = err ] && src=$tmp/.stderr
      if [ -s "$src" ]; then cp "$src" "$here/$n.$k"; else rm -f "$here/$n.$k"; fi
    done
    if [ "$(cat "$tmp/.exit")" = 0 ]; then rm -f "$here/$n.exit"; else cp "$tmp/.exit" "$here/$n.exit"; fi
  fi
  ok=1
  for k in out err; do
    g=$here/$n.$k; [ -f "$g" ] || g=-
    a=$tmp/.stdout; [ $k = err ] && a=$tmp/.stderr
    diff=$(match "$g" "$a") || { ok=0; echo "FAIL $n: std$k differs"; echo "$diff" | head -40; }
  done
  want=0; [ -f "$here/$n.exit" ] && want=$(cat "$here/$n.exit")
  got=$(cat "$tmp/.exit")
  [ "$want" = "$got" ] || { ok=0; echo "FAIL $n: exit status $got, expected $want"; }
  if [ $ok -eq 1 ]; then pass=$((pass+1)); rm -rf "$tmp"; else fail=$((fail+1)); echo "  (kept $tmp)"; fi
done
echo "$pass passed, $fail failed"
[ $fail -eq 0 ]

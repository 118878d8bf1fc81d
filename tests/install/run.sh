#!/usr/bin/env bash
# tests/install/run.sh — the installed tools and their documentation, checked against the
# built tools (bin/) and their flag tables (TOOL --list-flags):
#   1. make install DESTDIR=TMP PREFIX=/usr installs exactly the expected files, BINDIR and
#      MANDIR move the tools and the man pages, make uninstall leaves no file behind; the
#      installed README's relative links (docs/*.md) resolve;
#   2. the installed tools print the same --help, --version and --list-flags as bin/;
#   3. every flag of a tool's table is in its --help and in its man page, every flag that
#      --help names is in the table, and the man pages render without warnings;
#   4. --version names the source tree's revision and one optional part per MG_HAVE_* macro
#      of the build;
#   5. the bash completion, sourced in bash, completes flags, files and directories, and no
#      flag named like a path (-dir, -path, -file, -prefix) completes as text;
#   6. an object is compiled again when its flags change (CFLAGS, an optional part forced
#      off), and one compiled with -Werror serves a build without it, not the reverse
#      (mk/compile_flags.mk), in a build folder of its own.
# Needs a built tree (make). Prints "N passed, N failed"; exit 1 if any check failed.
set -u
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
tools=(mg-preprocess mg-convert mg-train)
pass=0 fail=0
ok() { pass=$((pass + 1)); }
bad() { fail=$((fail + 1)); echo "FAIL $*"; }
check() { local what=$1; shift; if "$@"; then ok; else bad "$what"; fi; }
# a make of its own, on this tree's build (not the caller's job server or variables)
mk() { env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s --no-print-directory "$@"; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mginstall-XXXXXX")
trap 'rm -rf "$tmp"' EXIT
for t in "${tools[@]}"; do
  [ -x "bin/$t" ] || { echo "cannot run: bin/$t was not built (make)"; exit 1; }
done
for p in groff man col; do
  command -v $p >/dev/null || { echo "cannot run: $p not found (scripts/setup.sh --system)"; exit 1; }
done

# --- 1. install, the file list, uninstall ---
expected_files() { # PREFIX-relative paths install must write (links marked ' -> target')
  local d=$1
  for t in "${tools[@]}"; do echo "$d/bin/$t"; echo "$d/share/man/man1/$t.1"; done
  echo "$d/share/bash-completion/completions/${tools[0]}"
  for t in "${tools[@]:1}"; do echo "$d/share/bash-completion/completions/$t -> ${tools[0]}"; done
  echo "$d/share/doc/mgtools/README.md"
  for f in docs/*.md; do echo "$d/share/doc/mgtools/$f"; done
}
installed_files() { # every file and link under $1, relative to it
  (cd "$1" && find . \( -type f -printf '%P\n' \) -o \( -type l -printf '%P -> %l\n' \) | sort)
}
dest=$tmp/dest
if mk install DESTDIR="$dest" PREFIX=/usr >"$tmp/install.log" 2>&1; then ok
else bad "make install DESTDIR=$dest PREFIX=/usr failed:"; cat "$tmp/install.log"; fi
diff <(expected_files usr | sort) <(installed_files "$dest") >"$tmp/list.diff" && ok ||
  { bad "make install: files differ from the expected list (< expected, > installed)"; cat "$tmp/list.diff"; }
for t in "${tools[@]}"; do
  check "$dest/usr/bin/$t is not executable" test -x "$dest/usr/bin/$t"
done

# every relative link of the installed README names an installed file
readme=$dest/usr/share/doc/mgtools/README.md
for link in $(grep -o '](\([A-Za-z0-9_./-]*\)' "$readme" | sed 's/^](//' | sort -u); do
  check "installed README.md links to $link, which make install did not install" \
    test -f "$(dirname "$readme")/$link"
done

# --- 2. the installed tools behave as bin/ ---
for t in "${tools[@]}"; do
  for f in --help --version --list-flags; do
    cmp -s <("bin/$t" $f 2>&1) <("$dest/usr/bin/$t" $f 2>&1) && ok ||
      bad "installed $t $f differs from bin/$t $f"
  done
done

# --- 3. flags in --help and in the man page; man pages render cleanly ---
# flag words of a text: '-' or '--', a letter, then letters, digits, '-' and '_', after the
# start of a line, a space or one of ( [ { | , ; "
flag_words() { grep -oE '(^|[ ([{|,;"])--?[A-Za-z][-A-Za-z0-9_]*' | sed -E 's/^[^-]//' | sort -u; }
# words of --help that look like flags and are not: "--flag=value" (mg-preprocess's text
# about argparse's forms)
not_flags() { case $1 in mg-preprocess) echo --flag ;; esac; }
for t in "${tools[@]}"; do
  page=$dest/usr/share/man/man1/$t.1
  "bin/$t" --list-flags | cut -d' ' -f1 | sort -u >"$tmp/table"
  "bin/$t" --help | flag_words >"$tmp/help"
  warn=$(groff -ww -man -Tascii "$page" 2>&1 >/dev/null)
  [ -z "$warn" ] && ok || bad "$t.1: groff -ww warns: $warn"
  warn=$(MANWIDTH=80 man --warnings -l "$page" 2>&1 >/dev/null)
  [ -z "$warn" ] && ok || bad "$t.1: man --warnings warns: $warn"
  MANWIDTH=80 man -l "$page" 2>/dev/null | col -bx | flag_words >"$tmp/man"
  for sec in NAME SYNOPSIS DESCRIPTION 'EXIT STATUS' FILES EXAMPLES 'SEE ALSO'; do
    grep -q "^\.SH $sec\$" "$page" && ok || bad "$t.1 has no $sec section"
  done
  missing=$(comm -23 "$tmp/table" "$tmp/help")
  [ -z "$missing" ] && ok || bad "$t: in the flag table but not in --help:" $missing
  missing=$(comm -23 "$tmp/table" "$tmp/man")
  [ -z "$missing" ] && ok || bad "$t: in the flag table but not in man page $t.1:" $missing
  unknown=$(comm -13 "$tmp/table" "$tmp/help" | grep -vxF -e "$(not_flags "$t")" -e '')
  [ -z "$unknown" ] && ok || bad "$t: --help names flags that are not in the flag table:" $unknown
done

# --- 4. --version: revision and optional parts ---
if [ -f REVISION ]; then rev=$(cat REVISION); else rev=$(git describe --always --dirty 2>/dev/null || echo unknown); fi
built=$(mk -f mk/config.mk print-defs | grep -oE 'MG_HAVE_[A-Z0-9_]+=1' | wc -l)
unbuilt=$(mk -f mk/config.mk print-defs | grep -oE 'MG_HAVE_[A-Z0-9_]+=0' | wc -l)
count() { sed -n "s/^$1: //p" | tr ',' '\n' | grep -cv '^ *(none)$'; }
for t in "${tools[@]}"; do
  v=$("bin/$t" --version)
  [ "$(sed -n 1p <<<"$v")" = "$t (mgtools) $(sed -n 's/^#define MG_VERSION "\(.*\)"$/\1/p' libcommon/include/mg/cli.h)" ] &&
    ok || bad "$t --version: first line '$(sed -n 1p <<<"$v")'"
  [ "$(sed -n 2p <<<"$v")" = "revision: $rev" ] && ok ||
    bad "$t --version: '$(sed -n 2p <<<"$v")', the tree is at $rev (was the tool rebuilt?)"
  n=$(count 'built with' <<<"$v") m=$(count 'built without' <<<"$v")
  [ "$n" = "$built" ] && [ "$m" = "$unbuilt" ] && ok ||
    bad "$t --version lists $n parts built with and $m without; the build defines $built MG_HAVE_* macros to 1 and $unbuilt to 0 (libcommon/base/version.c needs a row per macro)"
done

# --- 5. bash completion ---
mkdir -p "$tmp/c/data" "$tmp/c/dir2" && touch "$tmp/c/vocab.json" "$tmp/c/data/x"
completions() { # WORD... : what the installed completion offers for the last word
  (cd "$tmp/c" && bash --norc --noprofile -c '
     source "$1"; shift
     COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1)); COMPREPLY=()
     _mgtools "$1" "${!#}" ""
     [ ${#COMPREPLY[@]} -eq 0 ] || printf "%s\n" "${COMPREPLY[@]}" | sort | tr "\n" " "' \
     _ "$dest/usr/share/bash-completion/completions/mg-train" "$@")
}
expect() { # EXPECTED WORD...
  local want=$1; shift
  local got; got=$(completions "$@")
  [ "$got" = "$want" ] && ok || bad "completion of '$*': '$got', expected '$want'"
}
expect '--tensor-model-parallel-size ' mg-train --tensor-model-p
expect '--save --save-interval ' mg-train --num-layers 2 --sa
expect '' mg-train --num-layers ''
expect 'data dir2 ' mg-train --save ''
expect 'data dir2 ' mg-train --load = d
expect 'data/x ' mg-train --data-path 0.5 data/
expect 'data dir2 vocab.json ' mg-preprocess --input a.jsonl ''
expect 'vocab.json ' mg-preprocess --vocab-f v
expect '--append-eod ' mg-preprocess --input a b --app
expect 'data dir2 ' mg-convert --load-dir ''
expect '--load-dir ' mg-convert --load-d
# a flag named like a path must say so in its table (files/dirs of mg_argv_spec)
for t in "${tools[@]}"; do
  text=$("bin/$t" --list-flags | awk '$3 == "text" && $1 ~ /-(dir|path|file|prefix)$/ { print $1 }')
  [ -z "$text" ] && ok || bad "$t: flags named like paths complete as text (list them in the table's files or dirs):" $text
done
for t in "${tools[@]}"; do
  n=$(completions "$t" -- | wc -w)
  want=$("bin/$t" --list-flags | grep -c '^--')
  [ "$n" = "$want" ] && ok || bad "completion of '$t --': $n flags, the table has $want"
done

# --- 1 (continued). other folders, uninstall ---
alt=$tmp/alt
mk install DESTDIR="$alt" PREFIX=/opt/mg BINDIR=/opt/bin MANDIR=/opt/man >/dev/null 2>&1 &&
  test -x "$alt/opt/bin/mg-train" && test -f "$alt/opt/man/man1/mg-train.1" &&
  test -f "$alt/opt/mg/share/doc/mgtools/README.md" && ok ||
  bad "make install with BINDIR=/opt/bin MANDIR=/opt/man: tools or man pages not there"
for d in "$dest:PREFIX=/usr" "$alt:PREFIX=/opt/mg BINDIR=/opt/bin MANDIR=/opt/man"; do
  # shellcheck disable=SC2086
  mk uninstall DESTDIR="${d%%:*}" ${d#*:} >/dev/null 2>&1 || bad "make uninstall ${d#*:} failed"
  left=$(cd "${d%%:*}" && find . \( -type f -o -type l \) -printf '%P\n')
  [ -z "$left" ] && ok || bad "make uninstall ${d#*:} left:" $left
done
[ ! -e "$dest/usr/share/doc/mgtools" ] && ok || bad "make uninstall left share/doc/mgtools"

# --- 6. compile flags ---
obj=libcommon/base/error.o
# how many times one make of $obj in a fresh build folder compiled something
compiles() { mk BUILD="$tmp/flags" "$@" "$tmp/flags/$obj" 2>&1 | grep -c ' CC '; }
for step in "first:1" "again:0" "CFLAGS=-DMG_FLAG_TEST:1" "CFLAGS=-Werror:1" "plain:0" \
            "CFLAGS=-Werror:0" "HAVE_ONIG=0:1" "plain:1"; do
  what=${step%:*} want=${step##*:} args=()
  case $what in *=*) args=("$what") ;; esac
  got=$(compiles "${args[@]}")
  [ "$got" = "$want" ] && ok ||
    bad "make $obj after a change of flags ($what): $got compiles, want $want"
done

echo "$pass passed, $fail failed"
[ $fail -eq 0 ]

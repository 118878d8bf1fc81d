#!/usr/bin/env bash
# Builds every libFuzzer target tests/fuzz/fuzz_NAME.c (with clang, ASan+UBSan) into
# build-fuzz/ and runs each for SECONDS seconds, starting from tests/fuzz/corpus/NAME/ if
# present. `make test` runs it for a few seconds per target, `make fuzz` for longer.
#   scripts/fuzz.sh SECONDS [NAME...]
set -u
cd "$(dirname "$0")/.."
secs=${1:-60}; shift || true
if ! command -v clang >/dev/null; then
  echo "fuzz: FAILED: clang not found, the fuzz targets cannot run (scripts/setup.sh --system)"
  exit 1
fi
san="-fsanitize=address,undefined -fno-sanitize-recover=all"
# libcommon is compiled once (by the Makefile, with clang and fuzzer instrumentation) into
# build-fuzz/libmgcommon.a; each target links against it.
make -s --no-print-directory BUILD=build-fuzz CC=clang \
  CFLAGS="-O1 -g -fsanitize=fuzzer-no-link $san" build-fuzz/libmgcommon.a >/dev/null || exit 1
libs=$(make -s --no-print-directory -f mk/config.mk print-libs 2>/dev/null)
defs=$(make -s --no-print-directory -f mk/config.mk print-defs 2>/dev/null)
targets=("$@")
[ ${#targets[@]} -eq 0 ] && for f in tests/fuzz/fuzz_*.c; do [ -e "$f" ] && targets+=("$(basename "$f" .c | sed 's/^fuzz_//')"); done
rc=0
for t in "${targets[@]}"; do
  exe=build-fuzz/fuzz_$t
  if ! clang -std=c11 -D_GNU_SOURCE -g -O1 -fsanitize=fuzzer $san $defs -Ilibcommon/include \
       -Ilibcommon -o "$exe" "tests/fuzz/fuzz_$t.c" build-fuzz/libmgcommon.a $libs -lm -pthread; then
    echo "fuzz: building $t failed"; rc=1; continue
  fi
  corpus=tests/fuzz/corpus/$t; work=build-fuzz/corpus-$t
  mkdir -p "$work"
  dirs=("$work"); [ -d "$corpus" ] && dirs+=("$corpus")
  if "$exe" -max_total_time="$secs" -print_final_stats=0 -artifact_prefix=build-fuzz/ "${dirs[@]}" >"build-fuzz/$t.log" 2>&1; then
    echo "fuzz $t: ok ($(grep -c . "build-fuzz/$t.log") log lines, ${secs}s)"
  else
    echo "fuzz $t: FAILED (build-fuzz/$t.log):"; tail -30 "build-fuzz/$t.log"; rc=1
  fi
done
exit $rc

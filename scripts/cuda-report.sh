#!/usr/bin/env bash
# cuda-report.sh NVCC SM FILE.cu... — `make cuda-report`: compiles each CUDA kernel file for
# sm_SM with ptxas -v and prints one line per kernel: registers, static shared memory, stack
# frame, spill stores/loads (the dynamic shared memory of the attention kernels is chosen at
# launch: docs/KERNELS.md). Exits 1 when a hot kernel spills. Every kernel of kernels/cuda is
# on the training step's path, so HOT (an extended regex on the demangled name) defaults to
# all of them.
set -u
nvcc=$1 sm=$2
shift 2
hot=${HOT:-.}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
status=0
printf '%-72s %5s %7s %6s %6s %6s\n' kernel regs smem stack spillS spillL
# compile every file at once (ptxas -v on stderr), then read the logs in order
i=0
for f in "$@"; do
  ( "$nvcc" -std=c++17 -O3 -DMG_HAVE_CUDA=1 -Ikernels -Ilibcommon/include \
      -gencode "arch=compute_$sm,code=sm_$sm" -Xptxas -v -c "$f" -o "$tmp/$i.o" 2>"$tmp/$i.log"
    echo $? >"$tmp/$i.rc" ) &
  i=$((i + 1))
done
wait
i=0
for f in "$@"; do
  cp "$tmp/$i.log" "$tmp/log"
  if [ "$(cat "$tmp/$i.rc")" != 0 ]; then
    cat "$tmp/log"
    echo "cuda-report: $f does not compile"
    exit 1
  fi
  i=$((i + 1))
  # ptxas: "Function properties for F" / "N bytes stack frame, N bytes spill stores, N bytes
  # spill loads" / "Used N registers, ... N bytes smem"
  awk '
    /Function properties for/ { name = $NF }
    /bytes stack frame/ { stack[name] = $1; ss[name] = $5; sl[name] = $9 }
    /Used [0-9]+ registers/ {
      regs = $0; sub(/.*Used /, "", regs); sub(/ registers.*/, "", regs)
      smem = 0
      if (match($0, /[0-9]+ bytes smem/)) { smem = substr($0, RSTART, RLENGTH); sub(/ .*/, "", smem) }
      r[name] = regs; s[name] = smem
    }
    END { for (n in r) print n, r[n], s[n], stack[n] + 0, ss[n] + 0, sl[n] + 0 }
  ' "$tmp/log" | sort >"$tmp/rows"
  while read -r mangled regs smem stack spst spld; do
    name=$(echo "$mangled" | c++filt | sed 's/(.*//')
    printf '%-72s %5s %7s %6s %6s %6s\n' "$(basename "$f"): ${name:0:60}" "$regs" "$smem" \
      "$stack" "$spst" "$spld"
    if { [ "$spst" != 0 ] || [ "$spld" != 0 ]; } && echo "$name" | grep -Eq "$hot"; then
      echo "cuda-report: error: hot kernel $name spills ($spst bytes stored, $spld loaded)"
      status=1
    fi
  done <"$tmp/rows"
done
exit $status

#!/usr/bin/env bash
# Runs every test suite and exits non-zero if any failed:
#   1. C unit tests      (build/test-unit)
#   1b. GPU tests       (build/test-gpu: the CUDA kernels on a real GPU; "skipped: no GPU"
#                        without one; not built without nvcc)
#   2. the same in a minimal build (make test-minimal: build-min/, every optional dependency
#      off; skipped with the unit tests too)
#   3. CUDA kernels on the host execution path (build/test-cuda-emu, docs/CUDA_EMU.md; fails
#      when it could not be built, e.g. without NVIDIA's CUDA headers)
#   4. CLI golden tests  (tests/cli/run.sh)
#   5. install, man pages, completion, --version, recompiles on a change of flags
#      (tests/install/run.sh, on bin/)
#   6. fuzz smoke runs   (scripts/fuzz.sh, a few seconds per target; fails without clang)
#   7. interop tests     (pytest -rs in the Python test environment of scripts/setup.sh; a
#      skip not named in tests/interop/expected-skips.txt fails it)
# A suite that cannot run fails; nothing is skipped unless the caller asks.
# Environment: MG_BIN (tools dir, default bin), MG_UNIT (unit test binary), MG_CUDA_EMU (the
# emulated CUDA suite's binary), MG_GPU_TEST (the GPU test program), MG_VOCAB_DIR (test
# vocabularies, default build/vocab, unpacked from tests/data/vocab.tar.zst),
# MG_SKIP_UNIT=1 / MG_SKIP_GPU=1 / MG_SKIP_MINIMAL=1 / MG_SKIP_CUDA_EMU=1 / MG_SKIP_CLI=1 /
# MG_SKIP_INSTALL=1 / MG_SKIP_FUZZ=1 / MG_SKIP_INTEROP=1 leave a suite out (and say so).
set -u
cd "$(dirname "$0")/.."
export MG_BIN=${MG_BIN:-bin}
unit=${MG_UNIT:-build/test-unit}
cuda_emu=${MG_CUDA_EMU:-build/test-cuda-emu}
if [ -z "${MG_VOCAB_DIR:-}" ]; then
  scripts/unpack-vocab.sh build/vocab || exit 1
  export MG_VOCAB_DIR=$PWD/build/vocab
fi
failed=() left_out=()
for s in UNIT GPU MINIMAL CUDA_EMU CLI INSTALL FUZZ INTEROP; do
  v=MG_SKIP_$s; [ "${!v:-0}" = 1 ] && left_out+=("$(echo "$s" | tr A-Z_ a-z-)")
done

if [ "${MG_SKIP_UNIT:-0}" != 1 ]; then
  echo "== C unit tests"
  "$unit" || failed+=(unit)
fi

if [ "${MG_SKIP_GPU:-0}" != 1 ]; then
  echo "== GPU tests (tests/gpu)"
  gpu=${MG_GPU_TEST:-build/test-gpu}
  if [ -x "$gpu" ]; then
    MG_GPU_BENCH=${MG_GPU_BENCH:-0} "$gpu" || failed+=(gpu)
  else
    echo "skipped: no GPU test program ($gpu is built where nvcc is present)"
  fi
fi

if [ "${MG_SKIP_UNIT:-0}" != 1 ] && [ "${MG_SKIP_MINIMAL:-0}" != 1 ]; then
  echo "== C unit tests, minimal build"
  # a make of its own: not the caller's job server or command-line variables
  env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -j"$(nproc)" test-minimal ||
    failed+=(minimal)
fi

if [ "${MG_SKIP_CUDA_EMU:-0}" != 1 ]; then
  echo "== CUDA kernels on the host execution path (three thread orders)"
  if [ -x "$cuda_emu" ]; then
    "$cuda_emu" || failed+=(cuda-emu)
  else
    echo "cannot run: $cuda_emu was not built (NVIDIA's CUDA headers missing? docs/CUDA_EMU.md)"
    failed+=(cuda-emu)
  fi
fi

if [ "${MG_SKIP_CLI:-0}" != 1 ]; then
  echo "== CLI tests"
  tests/cli/run.sh || failed+=(cli)
fi

if [ "${MG_SKIP_INSTALL:-0}" != 1 ]; then
  echo "== install, man pages, bash completion, --version, compile flags"
  tests/install/run.sh || failed+=(install)
fi

if [ "${MG_SKIP_FUZZ:-0}" != 1 ]; then
  echo "== fuzz smoke"
  scripts/fuzz.sh "${MG_FUZZ_SMOKE_SECONDS:-5}" || failed+=(fuzz)
fi

if [ "${MG_SKIP_INTEROP:-0}" != 1 ]; then
  echo "== interop tests (pytest against the real peers)"
  venv=$(scripts/setup.sh --python | sed -n 's/^MG_VENV=//p')
  if [ -z "$venv" ]; then
    failed+=(interop)
  else
    "$venv/bin/python" -m pytest -q -rs tests/interop -p no:cacheprovider || failed+=(interop)
  fi
fi

[ ${#left_out[@]} -gt 0 ] && echo "suites left out by MG_SKIP_*: ${left_out[*]}"
if [ ${#failed[@]} -gt 0 ]; then
  echo "FAILED suites: ${failed[*]}"
  exit 1
fi
echo "all suites passed"

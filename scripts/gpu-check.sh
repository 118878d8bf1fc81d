#!/usr/bin/env bash
# gpu-check.sh — the one script to run on a machine with an NVIDIA GPU (a few minutes): prints
# the driver, GPU and nvcc, builds only the CUDA kernels and their GPU test for this GPU's
# architecture (no libcommon dependencies: no jansson, BLAS or OpenMP needed), then runs
# build-gpu/test-gpu: every CUDA kernel against its CPU reference, then the kernel timings.
# Never stops at the first failure (each test runs on its own, under a timeout); ends with a
# summary and exits 1 if anything failed. Takes about 5 minutes with 16 cores.
# Environment: CUDA_ARCH (default: the GPU's compute capability, else 90), JOBS (make -j).
set -u
cd "$(dirname "$0")/.."
out=build-gpu
mkdir -p "$out"
failed=()
npass=0 nfail=0

echo "== machine"
date -u
nvidia-smi || failed+=(nvidia-smi)
command -v nvcc >/dev/null || export PATH=$PATH:/usr/local/cuda/bin
nvcc --version || failed+=(nvcc)
cc --version | head -1

arch=${CUDA_ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null |
  head -1 | tr -d ' .')}
arch=${arch:-90}
build() {
  make -j"${JOBS:-$(nproc)}" BUILD="$out" CUDA_ARCH="$arch" HAVE_CUDA=1 HAVE_JANSSON=0 \
    HAVE_BLAS=0 HAVE_OPENMP=0 HAVE_ARCHIVE=0 HAVE_ONIG=0 HAVE_UTF8PROC=0 "$@" gpu-test
}
echo "== build (CUDA_ARCH=$arch, warnings as errors)"
build 2>&1 | tee "$out/build.log"
if [ "${PIPESTATUS[0]}" -ne 0 ]; then
  failed+=(build-werror)
  echo "== build again without -Werror (the failure above is kept in the summary)"
  build NVCC_WERROR= 2>&1 | tee "$out/build-nowerror.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || failed+=(build)
fi
[ -x "$out/test-gpu" ] || failed+=(no-test-program)

if [ -x "$out/test-gpu" ]; then
  # one run per test: a kernel that aborts (a failed launch is fatal by design) costs only its
  # own test
  echo "== test-gpu: every CUDA kernel against its CPU reference, one test at a time"
  : >"$out/test-gpu.log"
  for name in $(grep -ho '^MG_TEST([a-z0-9_]*)' tests/cuda/*.c tests/gpu/*.c | sed 's/MG_TEST(\(.*\))/\1/' | sort); do
    MG_GPU_BENCH=0 MG_VERBOSE=1 timeout 120 "$out/test-gpu" "$name" >"$out/one.log" 2>&1
    rc=$?
    cat "$out/one.log" >>"$out/test-gpu.log"
    grep -v '^device:\|^== correctness\|passed, .* failed$' "$out/one.log"
    if [ $rc -eq 0 ]; then npass=$((npass + 1)); else
      nfail=$((nfail + 1)); failed+=("$name"); echo "FAILED $name (exit $rc)"; fi
  done
  echo "tests: $npass passed, $nfail failed"
  echo "== timings"
  MG_GPU_BENCH=1 timeout 240 "$out/test-gpu" no-test-has-this-name 2>&1 | grep -v 'passed, .* failed$' |
    tee "$out/bench.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || failed+=(timings)
fi

echo "== cuda-report (registers, shared memory, spills for sm_$arch)"
make BUILD="$out" CUDA_ARCH="$arch" HAVE_CUDA=1 HAVE_JANSSON=0 cuda-report 2>&1 |
  tee "$out/cuda-report.log" | tail -60
[ "${PIPESTATUS[0]}" -eq 0 ] || failed+=(cuda-report)

echo "== summary"
echo "kernel tests: $npass passed, $nfail failed"
if [ ${#failed[@]} -gt 0 ]; then
  echo "gpu-check: FAILED: ${failed[*]}"
  exit 1
fi
echo "gpu-check: all passed"

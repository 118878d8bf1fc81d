#!/usr/bin/env bash
# gpu-check.sh — the one script to run on a machine with an NVIDIA GPU (a few minutes): prints
# the driver, GPU and nvcc, builds only the CUDA kernels and their GPU test for this GPU's
# architecture (no libcommon dependencies: no jansson, BLAS or OpenMP needed), then runs
# build-gpu/test-gpu: every CUDA kernel against its CPU reference, then the kernel timings.
# Never stops at the first failure; ends with a summary and exits 1 if anything failed.
# Environment: CUDA_ARCH (default: the GPU's compute capability, else 90), JOBS (make -j).
set -u
cd "$(dirname "$0")/.."
out=build-gpu
mkdir -p "$out"
failed=()

echo "== machine"
date -u
nvidia-smi || failed+=(nvidia-smi)
command -v nvcc >/dev/null || export PATH=$PATH:/usr/local/cuda/bin
nvcc --version || failed+=(nvcc)
cc --version | head -1

arch=${CUDA_ARCH:-$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader 2>/dev/null |
  head -1 | tr -d ' .')}
arch=${arch:-90}
echo "== build (CUDA_ARCH=$arch)"
if ! make -j"${JOBS:-$(nproc)}" BUILD="$out" CUDA_ARCH="$arch" HAVE_CUDA=1 HAVE_JANSSON=0 \
    HAVE_BLAS=0 HAVE_OPENMP=0 HAVE_ARCHIVE=0 HAVE_ONIG=0 HAVE_UTF8PROC=0 gpu-test \
    2>&1 | tee "$out/build.log"; then
  failed+=(build)
fi
[ -x "$out/test-gpu" ] || failed+=(build)

if [ -x "$out/test-gpu" ]; then
  echo "== test-gpu: correctness, then timings"
  "$out/test-gpu" 2>&1 | tee "$out/test-gpu.log"
  [ "${PIPESTATUS[0]}" -eq 0 ] || failed+=(test-gpu)
  echo "== failed checks (from the log)"
  grep -E '^ *FAIL|FAILED|^[0-9]+ passed' "$out/test-gpu.log" || echo "(none)"
fi

echo "== cuda-report (registers, shared memory, spills for sm_$arch)"
make BUILD="$out" CUDA_ARCH="$arch" HAVE_CUDA=1 HAVE_JANSSON=0 cuda-report 2>&1 |
  tee "$out/cuda-report.log" | tail -60
[ "${PIPESTATUS[0]}" -eq 0 ] || failed+=(cuda-report)

echo "== summary"
if [ ${#failed[@]} -gt 0 ]; then
  echo "gpu-check: FAILED: ${failed[*]}"
  exit 1
fi
echo "gpu-check: all passed"

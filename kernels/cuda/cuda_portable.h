/* cuda_portable.h — the one header every kernel file (kernels/cuda/NAME.cu) includes first: it
 * makes the same kernel source compile under nvcc (a real GPU) and under the host compiler
 * against the emulator of kernels/cuda_emu/ (tests without a GPU).
 *
 * Contract (the subset of CUDA our kernels keep to; docs/KERNELS.md explains why):
 *   - A kernel is launched only through MGK_LAUNCH (kernel arguments by value, no references).
 *   - Shared memory only through MGK_SHARED (static size, one-dimensional) and MGK_DYN_SHARED
 *     (the launch's dynamic bytes, 16-byte aligned base), never a bare `__shared__`, never in a
 *     __device__ helper (pass the pointer). Shared memory is never assumed zero-initialised.
 *   - threadIdx/blockIdx/blockDim/gridDim: read their fields only, never take an address.
 *   - __syncthreads() in block-uniform control flow only; every thread reaches the same
 *     barriers: no `return` before a barrier (keep an `active` flag instead).
 *   - Warp operations: __shfl_sync, __shfl_xor_sync, __shfl_down_sync, __shfl_up_sync,
 *     __ballot_sync, __any_sync, __all_sync, __syncwarp, with a mask naming exactly the lanes
 *     that call them; width a power of two <= 32; types int, unsigned, float (bf16 via float);
 *     blockDim.x a multiple of 32 wherever they are used. No implicit warp-synchronous code.
 *   - Atomics: atomicAdd (int, unsigned, unsigned long long, float), atomicMax/atomicMin
 *     (int, unsigned), atomicCAS (32 and 64 bit), atomicExch. No spin-waits on other blocks.
 *   - Types: float, __nv_bfloat16/__nv_bfloat162 from NVIDIA's cuda_bf16.h and __half from
 *     cuda_fp16.h (arithmetic in float: conversions only); float4 loads on 16-byte-aligned pointers; 64-bit indexing (int64_t/size_t).
 *   - Math: expf logf sqrtf rsqrtf tanhf erff fmaxf fminf fmaf __expf __fdividef.
 *   - Tensor cores: nvcuda::wmma bf16 16x16x16 fragments (the emulator holds fragments its own
 *     way: code may apply an operation uniformly to every x[i] of a fragment, never assume
 *     which element a lane holds).
 *   - Not in any kernel the emulator runs: inline PTX/asm, cp.async, ldmatrix, mma.sync, TMA,
 *     grid-wide sync, dynamic parallelism, textures, clock64 logic, __nanosleep,
 *     __reduce_*_sync, __match_*_sync, __syncthreads_count/and/or. A faster variant that needs
 *     them lives beside a portable kernel of the same contract and tests/gpu compares the two.
 *     The one exception is mma_sm80.cuh: mma.sync m16n8k16 bf16, ldmatrix .x4 (.trans) and
 *     16-byte cp.async behind four functions that are PTX under nvcc and, in the emulator,
 *     portable code following the PTX ISA's documented fragment layouts (mma_layout.h,
 *     checked against the hardware by tests/cuda/test_cuda_mma.c); kernels reach them only
 *     through those functions, called by all 32 lanes of a warp.
 *   - Math also: exp2f, log2f (the C library's in the emulator).
 *
 * Host side: the runtime calls the kernels' launchers and entry points make are limited to
 * cudaMalloc, cudaFree, cudaMallocHost, cudaFreeHost, cudaMemcpy(Async), cudaMemset(Async),
 * cudaStreamCreate(WithFlags), cudaStreamDestroy, cudaStreamSynchronize, cudaStreamWaitEvent,
 * cudaDeviceSynchronize, cudaEvent{Create,Destroy,Record,Synchronize,ElapsedTime}, cudaGetLastError, cudaPeekAtLastError, cudaGetErrorString,
 * cudaGetDevice, cudaSetDevice, cudaGetDeviceCount, cudaGetDeviceProperties,
 * cudaDeviceGetAttribute, cudaFuncSetAttribute; and of cuBLASLt: cublasLtCreate/Destroy,
 * cublasLtMatmulDescCreate/Destroy/SetAttribute (TRANSA, TRANSB, EPILOGUE, BIAS_POINTER,
 * BIAS_DATA_TYPE, EPILOGUE_AUX_POINTER, EPILOGUE_AUX_LD), cublasLtMatrixLayoutCreate/Destroy/
 * SetAttribute (BATCH_COUNT, STRIDED_BATCH_OFFSET, ORDER = ROW or COL), cublasLtMatmulPreference
 * Create/Destroy/SetAttribute (MAX_WORKSPACE_BYTES), cublasLtMatmulAlgoGetHeuristic,
 * cublasLtMatmul; data types CUDA_R_32F and CUDA_R_16BF, compute type CUBLAS_COMPUTE_32F,
 * epilogues DEFAULT, BIAS, GELU, GELU_BIAS, GELU_AUX, GELU_AUX_BIAS, DGELU, DGELU_BGRAD,
 * BGRADA, BGRADB. The emulator serves exactly these (anything else fails loudly); a kernel
 * file that needs another adds it to the emulator and to this list.
 *
 * Defines: MGK_LAUNCH, MGK_SHARED, MGK_DYN_SHARED, and includes the
 * CUDA runtime (real or emulated) and cuda_bf16.h.
 */
#ifndef MGK_CUDA_PORTABLE_H
#define MGK_CUDA_PORTABLE_H

#if defined(MGK_CUDA_EMU)

/* Host compiler: the emulator defines __global__, __device__, threadIdx & co, barriers, warp
 * operations, atomics, wmma, the runtime and cuBLASLt calls above, and the three macros:
 *   MGK_LAUNCH(kernel, grid, block, smem_bytes, stream, args...)
 *   MGK_SHARED(T, name, count)   -> T *name, the block's array of count T
 *   MGK_DYN_SHARED(T, name)      -> T *name, the launch's dynamic shared memory */
#include "cuda_emu/cuda_emu.h"

#else /* nvcc */

#include <cuda_runtime.h>
#include <mma.h>

#define MGK_LAUNCH(kernel, grid, block, smem_bytes, stream, ...) \
    kernel<<<(grid), (block), (smem_bytes), (stream)>>>(__VA_ARGS__)
#define MGK_SHARED(T, name, count) __shared__ T name[count]
#define MGK_DYN_SHARED(T, name)                                     \
    extern __shared__ __align__(16) unsigned char mgk_dyn_smem_[]; \
    T *name = reinterpret_cast<T *>(mgk_dyn_smem_)

#endif

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#endif

/* cuda_emu.h — the CUDA execution model on the host CPU, for the kernels of kernels/cuda/ (.cu files)
 * compiled by the host C++ compiler (-x c++ -std=c++17 -DMGK_CUDA_EMU). Included by
 * cuda_portable.h; docs/CUDA_EMU.md explains the design, the modes and the checks.
 *
 * Contract:
 *   - Serves exactly the subset of CUDA listed in kernels/cuda/cuda_portable.h: a launch
 *     through MGK_LAUNCH runs the grid's blocks one at a time in the selected order; each
 *     block's threads run as plain calls until one reaches a synchronisation point, from then
 *     on as cooperative fibers (a thread that finished is never run again).
 *   - __syncthreads(), __syncwarp(), the __shfl*_sync, __ballot_sync, __any_sync, __all_sync
 *     and the wmma *_sync operations are real synchronisation points with exact masks; a
 *     misuse the hardware leaves undefined aborts with the file:line of the call (strict
 *     mode, the default) — see emu_control.h for the modes.
 *   - MGK_SHARED / MGK_DYN_SHARED come from heap blocks sized exactly as declared (so
 *     AddressSanitizer sees overflows), filled with NaN bytes (0xff) before every block.
 *   - Types (dim3, uint3, float4, __nv_bfloat16, ...) and the runtime API declarations are
 *     NVIDIA's own headers; their definitions are in cudart_emu.cc and cublaslt_*.cc.
 *   - Blocks of all launches run on the calling thread under one process-wide lock.
 *
 * Defines: __global__/__device__/__host__ (empty), threadIdx, blockIdx, blockDim, gridDim,
 * the synchronisation and warp operations, atomics, math intrinsics, nvcuda::wmma, and
 * MGK_LAUNCH, MGK_SHARED, MGK_DYN_SHARED; includes NVIDIA's cuda_runtime.h, cuda_bf16.h and
 * cublasLt.h, and the C++ overloads nvcc's cuda_runtime.h gives host code
 * (cudaFuncSetAttribute on a kernel).
 */
#ifndef MGK_CUDA_EMU_H
#define MGK_CUDA_EMU_H

#ifndef __cplusplus
#error "cuda_emu.h is C++: compile .cu files with the host C++ compiler (-x c++ -DMGK_CUDA_EMU)"
#endif

/* Before NVIDIA's headers, which would turn these into attributes gcc does not know (and
 * replacing theirs if a CUDA header came first). */
#undef __host__
#undef __device__
#undef __global__
#define __host__
#define __device__
#define __global__
#if __has_include(<cuda_runtime.h>) && __has_include(<cuda_bf16.h>) && __has_include(<cublasLt.h>)
#include <cuda_runtime.h>
#include <cuda_bf16.h>
#include <cublasLt.h>
#else
#error "the CUDA emulator needs NVIDIA's headers (cuda_runtime.h, cuda_bf16.h, cublasLt.h): pass -I<cuda>/include (see docs/CUDA_EMU.md)"
#endif

#include <cmath>
#include <cstdint>
#include <cstring>
#include <tuple>
#include <type_traits>
#include <utility>

#include "cuda_emu/emu_control.h"

#undef __launch_bounds__
#define __launch_bounds__(...)
#ifndef __noinline__
#define __noinline__ __attribute__((noinline))
#endif
/* A bare __shared__ is outside the contract: use MGK_SHARED / MGK_DYN_SHARED. */
#undef __shared__
#define __shared__ MGK_EMU_bare___shared___is_not_supported_use_MGK_SHARED

namespace mgk_emu {

/* Where a call was made: names the offending line in strict-mode reports. */
struct site {
    const char *file;
    int line;
};

/* The ids of the running thread; the scheduler rewrites them on every fiber switch. */
struct ids {
    uint3 thread_idx;
    uint3 block_idx;
    dim3 block_dim;
    dim3 grid_dim;
};
extern ids g_ids;

enum warp_kind : int {
    WARP_SYNC = 0,   /* __syncwarp */
    WARP_IDX = 1,    /* __shfl_sync */
    WARP_UP = 2,     /* __shfl_up_sync */
    WARP_DOWN = 3,   /* __shfl_down_sync */
    WARP_XOR = 4,    /* __shfl_xor_sync */
    WARP_BALLOT = 5, /* __ballot_sync, __any_sync, __all_sync */
    WARP_MMA = 6,    /* wmma load/store/mma_sync: all 32 lanes */
};

/* Block barrier (emu_sched.cc). */
void syncthreads(site at);
/* Warp operation: waits until every lane of mask has arrived at the same operation, then
 * returns this lane's result (the source lane's value for shuffles, the ballot of the
 * predicates for WARP_BALLOT, 0 otherwise). */
uint64_t warp_exchange(site at, warp_kind kind, unsigned mask, uint64_t value, unsigned b,
                       int width);

template <typename T> inline uint64_t to_bits(T v)
{
    static_assert(std::is_trivially_copyable<T>::value && sizeof(T) <= 8,
                  "warp shuffles carry 32- or 64-bit values");
    uint64_t bits = 0;
    memcpy(&bits, &v, sizeof v);
    return bits;
}
template <typename T> inline T from_bits(uint64_t bits)
{
    T v;
    memcpy(&v, &bits, sizeof v);
    return v;
}

/* The call site of a synchronisation operation: `__shfl_sync(...)` expands to
 * `mgk_emu::at{__FILE__, __LINE__}.shfl(...)`, so the default arguments of CUDA's
 * signatures stay default arguments. */
struct at {
    const char *file;
    int line;
    site here() const { return site{file, line}; }
    void syncthreads() const { mgk_emu::syncthreads(here()); }
    void syncwarp(unsigned mask = 0xffffffffu) const
    {
        warp_exchange(here(), WARP_SYNC, mask, 0, 0, 32);
    }
    template <typename T> T shfl(unsigned mask, T v, int src, int width = 32) const
    {
        return from_bits<T>(warp_exchange(here(), WARP_IDX, mask, to_bits(v), (unsigned)src, width));
    }
    template <typename T> T shfl_up(unsigned mask, T v, unsigned delta, int width = 32) const
    {
        return from_bits<T>(warp_exchange(here(), WARP_UP, mask, to_bits(v), delta, width));
    }
    template <typename T> T shfl_down(unsigned mask, T v, unsigned delta, int width = 32) const
    {
        return from_bits<T>(warp_exchange(here(), WARP_DOWN, mask, to_bits(v), delta, width));
    }
    template <typename T> T shfl_xor(unsigned mask, T v, int lane_mask, int width = 32) const
    {
        return from_bits<T>(
            warp_exchange(here(), WARP_XOR, mask, to_bits(v), (unsigned)lane_mask, width));
    }
    unsigned ballot(unsigned mask, int pred) const
    {
        return (unsigned)warp_exchange(here(), WARP_BALLOT, mask, pred != 0, 0, 32);
    }
    int any(unsigned mask, int pred) const { return (ballot(mask, pred) & mask) != 0; }
    int all(unsigned mask, int pred) const { return (ballot(mask, pred) & mask) == mask; }
};

/* ---- shared memory ---------------------------------------------------------------------- */

/* One MGK_SHARED call site; caches the block's array for the launch it was made in. */
struct smem_site {
    const char *file;
    int line;
    uint64_t launch; /* launch serial the pointer belongs to (0: none) */
    void *ptr;
    size_t bytes;
};
/* The block's array of bytes for this site (same pointer for every thread of a block). */
void *shared_static(smem_site *s, size_t bytes);
/* The launch's dynamic shared memory (16-byte aligned, size from the launch). */
void *shared_dynamic(site at);

/* ---- launches --------------------------------------------------------------------------- */

struct launch_desc {
    site at;
    const char *name;
    const void *func; /* identity for cudaFuncSetAttribute */
    dim3 grid, block;
    size_t smem;
    cudaStream_t stream;
    void (*body)(void *ctx); /* runs the kernel once, as the current thread */
    void *ctx;
};
/* Runs the whole grid (emu_launch.cc); errors go to cudaGetLastError as on a GPU. */
void launch(const launch_desc *d);
/* Strict mode: a pointer argument of a kernel must be NULL or point into a cudaMalloc block. */
void check_kernel_pointer(const launch_desc *d, int index, const void *p);

template <typename... P> struct bound_kernel {
    void (*kern)(P...);
    std::tuple<P...> args;
    static void run(void *self)
    {
        bound_kernel *b = static_cast<bound_kernel *>(self);
        std::apply(b->kern, b->args); /* each thread gets its own copy of the arguments */
    }
    template <size_t... I> void check_pointers(const launch_desc *d, std::index_sequence<I...>)
    {
        (check_arg(d, (int)I, std::get<I>(args)), ...);
    }
    template <typename A> static void check_arg(const launch_desc *d, int i, const A &a)
    {
        if constexpr (std::is_pointer<A>::value) check_kernel_pointer(d, i, (const void *)a);
    }
};

template <typename... P> struct bound_launch {
    launch_desc d;
    void (*kern)(P...);
    template <typename... A> void operator()(A &&...args)
    {
        static_assert(sizeof...(P) == sizeof...(A), "MGK_LAUNCH: wrong number of kernel arguments");
        bound_kernel<P...> b{kern, std::tuple<P...>(std::forward<A>(args)...)};
        d.body = &bound_kernel<P...>::run;
        d.ctx = &b;
        b.check_pointers(&d, std::index_sequence_for<P...>{});
        launch(&d);
    }
};

/* MGK_LAUNCH(k, grid, block, smem, stream, args...) is
 * `launcher(where, "k", grid, block, smem, stream).with(k)(args...)`. */
struct launcher {
    launch_desc d;
    launcher(site at, const char *name, dim3 grid, dim3 block, size_t smem, cudaStream_t stream)
        : d{at, name, nullptr, grid, block, smem, stream, nullptr, nullptr}
    {
    }
    template <typename... P> bound_launch<P...> with(void (*kern)(P...)) const
    {
        bound_launch<P...> l{d, kern};
        l.d.func = (const void *)kern;
        return l;
    }
};

/* Marks that a float atomic ran: results may then differ between thread orders in the
 * last bits, so the runner does not require them bitwise equal. */
extern bool g_float_atomics;

} /* namespace mgk_emu */

/* nvcc's cuda_runtime.h has this overload for host code only under __CUDACC__. */
template <class T>
static inline cudaError_t cudaFuncSetAttribute(T *func, enum cudaFuncAttribute attr, int value)
{
    return ::cudaFuncSetAttribute((const void *)func, attr, value);
}

/* NVIDIA's device_launch_parameters.h declares threadIdx & co as variables; the emulator's
 * are macros, so that header must never be read after this point. */
#ifndef __DEVICE_LAUNCH_PARAMETERS_H__
#define __DEVICE_LAUNCH_PARAMETERS_H__
#endif
extern "C" const int warpSize; /* 32, defined in cudart_emu.cc */
#define threadIdx (static_cast<const uint3 &>(::mgk_emu::g_ids.thread_idx))
#define blockIdx (static_cast<const uint3 &>(::mgk_emu::g_ids.block_idx))
#define blockDim (static_cast<const dim3 &>(::mgk_emu::g_ids.block_dim))
#define gridDim (static_cast<const dim3 &>(::mgk_emu::g_ids.grid_dim))

#define MGK_EMU_AT (::mgk_emu::at{__FILE__, __LINE__})
#define __syncthreads MGK_EMU_AT.syncthreads
#define __syncwarp MGK_EMU_AT.syncwarp
#define __shfl_sync MGK_EMU_AT.shfl
#define __shfl_up_sync MGK_EMU_AT.shfl_up
#define __shfl_down_sync MGK_EMU_AT.shfl_down
#define __shfl_xor_sync MGK_EMU_AT.shfl_xor
#define __ballot_sync MGK_EMU_AT.ballot
#define __any_sync MGK_EMU_AT.any
#define __all_sync MGK_EMU_AT.all

#define MGK_LAUNCH(kernel, grid, block, smem_bytes, stream, ...)                           \
    ::mgk_emu::launcher(::mgk_emu::site{__FILE__, __LINE__}, #kernel, (grid), (block),      \
                        (size_t)(smem_bytes), (stream))                                     \
        .with(kernel)(__VA_ARGS__)
#define MGK_SHARED(T, name, count)                                                              \
    static ::mgk_emu::smem_site mgk_emu_site_##name{__FILE__, __LINE__, 0, nullptr, 0};           \
    T *name = static_cast<T *>(::mgk_emu::shared_static(&mgk_emu_site_##name, sizeof(T) * (count)))
#define MGK_DYN_SHARED(T, name) T *name = static_cast<T *>(::mgk_emu::shared_dynamic({__FILE__, __LINE__}))

#include "cuda_emu/emu_device.h"
#include "cuda_emu/emu_wmma.h"

#endif

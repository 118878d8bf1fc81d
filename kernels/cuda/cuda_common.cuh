/* cuda_common.cuh — device and launcher helpers shared by kernels/cuda/NAME.cu (included after
 * cuda_portable.h): the backend state behind mg_kctx.cuda, launch checking, fp32/bf16/fp16
 * element access (MGK_BY_HALF: a context's 16-bit type), correctly rounded float operations,
 * and fixed-order (deterministic) warp and block reductions.
 *
 * Contract: the reductions combine values in an order fixed by thread indices only, and every
 * thread of the block (or warp) gets the same bits. Block reductions take a shared scratch of
 * at least 32 floats (the caller's MGK_SHARED: no __shared__ in helpers), need blockDim.x a
 * multiple of 32 (<= 1024), are called by every thread of the block, and may be called again
 * with the same scratch right away.
 */
#ifndef MGK_CUDA_COMMON_CUH
#define MGK_CUDA_COMMON_CUH

#include <stdint.h>

#include <cublasLt.h> /* NVIDIA's declarations; the emulator serves the calls (cuda_portable.h) */

#include "cuda_internal.h"
#include "kernels_cuda.h"

typedef __nv_bfloat16 bf16;
typedef __half f16; /* IEEE binary16 (cuda_fp16.h) */

/* What an MGK_CUDA context owns (kernels/cuda/runtime.cu). */
struct mgk_cuda_state {
    cudaStream_t stream;
    cudaStream_t copy_stream; /* host -> device uploads (mgk_cuda_upload_async) */
    cudaEvent_t copied;       /* recorded on copy_stream after each upload */
    cublasLtHandle_t lt;
    void *lt_ws; /* cuBLASLt workspace */
    size_t lt_ws_bytes;
    void *ws; /* the kernels' own workspace (reduction partials, index lists) */
    size_t ws_bytes;
};

static inline cudaStream_t mgk_stream(const mg_kctx *k)
{
    return k->cuda->stream;
}

/* Aborts with file:line on a CUDA error (a bug or a dead device: kernels return nothing). */
void mgk_cuda_check_at(cudaError_t e, const char *expr, const char *file, int line);
#define MGK_CUDA_CHECK(expr) mgk_cuda_check_at((expr), #expr, __FILE__, __LINE__)
/* After each MGK_LAUNCH. */
#define MGK_LAUNCH_CHECK() MGK_CUDA_CHECK(cudaGetLastError())
/* The context's workspace, at least bytes long (asserted). */
void *mgk_cuda_ws(const mg_kctx *k, size_t bytes);

/* Blocks for a grid-stride loop over n items with threads per block (at least 1). */
static inline unsigned mgk_grid(int64_t n, int threads, unsigned cap)
{
    int64_t g = (n + threads - 1) / threads;
    return g < 1 ? 1u : (g > (int64_t)cap ? cap : (unsigned)g);
}
#define MGK_GRID_CAP 8192u /* blocks of a grid-stride elementwise launch */
#define MGK_ROWS_CAP 65535u /* gridDim.y limit */

/* i over [0, n): grid-stride loop of a 1-D launch, 64-bit indices. */
#define MGK_FOR_EACH(i, n)                                                              \
    for (int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x; i < (n);           \
         i += (int64_t)gridDim.x * blockDim.x)
/* Rows of a 2-D launch: blockIdx.y strides over rows, x covers the columns. */
#define MGK_FOR_ROWS(r, N) for (int64_t r = blockIdx.y; r < (N); r += gridDim.y)
#define MGK_COL() ((int64_t)blockIdx.x * blockDim.x + threadIdx.x)
/* The grid of a rows x cols launch with `threads` per block. */
static inline dim3 mgk_grid_rows(int64_t rows, int64_t cols, int threads)
{
    int64_t gx = (cols + threads - 1) / threads;
    return dim3((unsigned)(gx < 1 ? 1 : gx),
                rows < 1 ? 1u : (rows > MGK_ROWS_CAP ? MGK_ROWS_CAP : (unsigned)rows));
}

/* The same with at most cap row blocks (each strides over rows). */
static inline dim3 mgk_grid_rows_cap(int64_t rows, int64_t cols, int threads, unsigned cap)
{
    dim3 g = mgk_grid_rows(rows, cols, threads);
    g.y = g.y > cap ? cap : g.y;
    return g;
}

/* Allows a kernel more than the default 48 KiB of dynamic shared memory. */
template <typename F>
static void set_smem_limit(F *kernel, size_t bytes)
{
    MGK_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void *>(kernel),
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
}

/* ---- elements ------------------------------------------------------------------------------ */

static __device__ inline float mgk_ld(const float *p)
{
    return *p;
}
static __device__ inline float mgk_ld(const bf16 *p)
{
    return __bfloat162float(*p);
}
static __device__ inline void mgk_st(float *p, float v)
{
    *p = v;
}
static __device__ inline void mgk_st(bf16 *p, float v)
{
    *p = __float2bfloat16(v);
}
static __device__ inline float mgk_ld(const f16 *p)
{
    return __half2float(*p);
}
static __device__ inline void mgk_st(f16 *p, float v)
{
    *p = __float2half_rn(v);
}

/* The C API's bf16 pointers (kernels_cuda.h) as NVIDIA's type. */
static inline bf16 *mgk_bf(mgk_bf16 *p)
{
    return reinterpret_cast<bf16 *>(p);
}
static inline const bf16 *mgk_bf(const mgk_bf16 *p)
{
    return reinterpret_cast<const bf16 *>(p);
}
/* The C API's 16-bit pointers (kernels_cuda.h mgk_h16) as T, the device type of the
 * context's k->half (MGK_BY_HALF). */
template <typename T>
static inline T *mgk_as(mgk_h16 *p)
{
    return reinterpret_cast<T *>(p);
}
template <typename T>
static inline const T *mgk_as(const mgk_h16 *p)
{
    return reinterpret_cast<const T *>(p);
}
/* Runs the statement `...` with the type name T bound to the device type of k->half. */
#define MGK_BY_HALF(k, T, ...)                                                                \
    do {                                                                                      \
        if ((k)->half == MGK_HALF_FP16) {                                                     \
            typedef f16 T;                                                                    \
            __VA_ARGS__;                                                                      \
        } else {                                                                              \
            typedef bf16 T;                                                                   \
            __VA_ARGS__;                                                                      \
        }                                                                                     \
    } while (0)
/* v rounded to T's precision. */
template <typename T>
static __device__ inline float mgk_round(float v)
{
    T t;
    mgk_st(&t, v);
    return mgk_ld(&t);
}

/* Correctly rounded operations that nvcc may not contract into fused multiply-adds (the
 * host compiler of the emulator does not contract without -ffp-contract=fast and FMA). */
#if defined(MGK_CUDA_EMU)
static __device__ inline float mgk_fmul(float a, float b) { return a * b; }
static __device__ inline float mgk_fadd(float a, float b) { return a + b; }
static __device__ inline float mgk_fsub(float a, float b) { return a - b; }
static __device__ inline float mgk_fdiv(float a, float b) { return a / b; }
#else
static __device__ inline float mgk_fmul(float a, float b) { return __fmul_rn(a, b); }
static __device__ inline float mgk_fadd(float a, float b) { return __fadd_rn(a, b); }
static __device__ inline float mgk_fsub(float a, float b) { return __fsub_rn(a, b); }
static __device__ inline float mgk_fdiv(float a, float b) { return __fdiv_rn(a, b); }
#endif

/* 16 bytes of T as floats: vec16<T>::N elements (4 fp32, 8 bf16 or 8 fp16); p 16-byte
 * aligned. */
template <typename T>
struct vec16;
template <>
struct vec16<float> {
    enum { N = 4 };
    static __device__ inline void load(float (&x)[4], const float *p)
    {
        float4 v = *reinterpret_cast<const float4 *>(p);
        x[0] = v.x, x[1] = v.y, x[2] = v.z, x[3] = v.w;
    }
    static __device__ inline void store(float *p, const float (&x)[4])
    {
        *reinterpret_cast<float4 *>(p) = make_float4(x[0], x[1], x[2], x[3]);
    }
};
/* The bits of a 16-bit type: element 0 / 1 of a 32-bit pair, and a rounded pair. */
struct bf16_bits {
    static __device__ inline float lo(unsigned u)
    {
        return __uint_as_float(u << 16);
    }
    static __device__ inline float hi(unsigned u)
    {
        return __uint_as_float(u & 0xffff0000u);
    }
    static __device__ inline unsigned pack(float a, float b)
    {
        return (unsigned)__bfloat16_as_ushort(__float2bfloat16(a)) |
               ((unsigned)__bfloat16_as_ushort(__float2bfloat16(b)) << 16);
    }
};
struct f16_bits {
    static __device__ inline float lo(unsigned u)
    {
        return __half2float(__ushort_as_half((unsigned short)(u & 0xffffu)));
    }
    static __device__ inline float hi(unsigned u)
    {
        return __half2float(__ushort_as_half((unsigned short)(u >> 16)));
    }
    static __device__ inline unsigned pack(float a, float b)
    {
        return (unsigned)__half_as_ushort(__float2half_rn(a)) |
               ((unsigned)__half_as_ushort(__float2half_rn(b)) << 16);
    }
};
/* 8 values of a 16-bit type T whose bits Bits converts. */
template <typename T, typename Bits>
struct vec16_of16 {
    enum { N = 8 };
    static __device__ inline void load(float (&x)[8], const T *p)
    {
        uint4 v = *reinterpret_cast<const uint4 *>(p);
        x[0] = Bits::lo(v.x), x[1] = Bits::hi(v.x), x[2] = Bits::lo(v.y), x[3] = Bits::hi(v.y);
        x[4] = Bits::lo(v.z), x[5] = Bits::hi(v.z), x[6] = Bits::lo(v.w), x[7] = Bits::hi(v.w);
    }
    static __device__ inline void store(T *p, const float (&x)[8])
    {
        *reinterpret_cast<uint4 *>(p) =
            make_uint4(Bits::pack(x[0], x[1]), Bits::pack(x[2], x[3]), Bits::pack(x[4], x[5]),
                       Bits::pack(x[6], x[7]));
    }
};
template <>
struct vec16<bf16> : vec16_of16<bf16, bf16_bits> {
};
template <>
struct vec16<f16> : vec16_of16<f16, f16_bits> {
};

/* p is 16-byte aligned (or NULL). */
static inline int mgk_aligned16(const void *p)
{
    return ((uintptr_t)p & 15) == 0;
}

/* W consecutive elements at p as floats: one (W = 1) or a 16-byte vector (W = vec16<T>::N,
 * p aligned). */
template <typename T, int W>
static __device__ inline void mgk_ldw(float (&x)[W], const T *p)
{
    if constexpr (W == 1)
        x[0] = mgk_ld(p);
    else
        vec16<T>::load(x, p);
}
template <typename T, int W>
static __device__ inline void mgk_stw(T *p, const float (&x)[W])
{
    if constexpr (W == 1)
        mgk_st(p, x[0]);
    else
        vec16<T>::store(p, x);
}

/* Rows of C elements can move as 16-byte vectors of E elements: C % E == 0 and every pointer
 * (NULL ones ignored) aligned. */
static inline int mgk_rows_vec_ok(int64_t C, int E, const void *a, const void *b = NULL,
                                  const void *c = NULL, const void *d = NULL)
{
    return C % E == 0 && mgk_aligned16(a) && mgk_aligned16(b) && mgk_aligned16(c) &&
           mgk_aligned16(d);
}
#define MGK_VTHREADS 64       /* block of a vectorised rows x columns launch */
#define MGK_VROWS_CAP 4096u   /* its row blocks (each strides over the rows) */

/* ---- reductions ---------------------------------------------------------------------------- */

#define MGK_FULL_MASK 0xffffffffu

/* Butterfly sums: lane i adds lane i^o's value, so both get the same bits at every step. */
static __device__ inline float mgk_warp_sum(float v)
{
    for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(MGK_FULL_MASK, v, o);
    return v;
}
static __device__ inline float mgk_warp_max(float v)
{
    for (int o = 16; o > 0; o >>= 1) v = fmaxf(v, __shfl_xor_sync(MGK_FULL_MASK, v, o));
    return v;
}

/* Sum over the block: warp sums, then every warp sums the warp sums the same way. */
static __device__ inline float mgk_block_sum(float v, float *red)
{
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = mgk_warp_sum(v);
    __syncthreads(); /* the previous call's readers are done with red */
    if (lane == 0) red[w] = v;
    __syncthreads();
    return mgk_warp_sum(lane < nw ? red[lane] : 0.0f);
}
static __device__ inline float mgk_block_max(float v, float *red)
{
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, nw = blockDim.x >> 5;
    v = mgk_warp_max(v);
    __syncthreads();
    if (lane == 0) red[w] = v;
    __syncthreads();
    return mgk_warp_max(lane < nw ? red[lane] : -INFINITY);
}

/* Sum of doubles over the block by a shared-memory tree (red: blockDim.x doubles, blockDim.x a
 * power of two); the result is in red[0] after the call, for every thread. */
static __device__ inline double mgk_block_sum_f64(double v, double *red)
{
    __syncthreads();
    red[threadIdx.x] = v;
    __syncthreads();
    for (unsigned s = blockDim.x / 2; s > 0; s >>= 1) {
        if (threadIdx.x < s) red[threadIdx.x] += red[threadIdx.x + s];
        __syncthreads();
    }
    return red[0];
}

#endif

/* elementwise.cu — zero, copy, add, accumulate, scale, bias add and gradient, and the
 * deterministic double reductions mgk_sumsq / mgk_sum, in fp32 (kernels.h) and bf16.
 *
 * Kernels: elementwise ops are grid-stride loops (block 256, at most 8192 blocks) over 16-byte
 * vectors where the tensors are aligned (the last n % 4 (fp32) or n % 8 (bf16) elements one
 * per thread), else over elements; bias_add is a rows x columns launch (16-byte vectors of
 * columns where rows are whole vectors); bias_grad is colsum.cuh. The reductions cut x into
 * the chunks of MGK_SUM_CHUNK elements the CPU backends use: block c (256 threads) sums chunk
 * c, thread j the elements j, j + 256, ... in double and left to right, then a shared-memory
 * tree; a one-block kernel adds the chunk sums the same way (thread j: chunks j, j + 256,
 * ...). The order depends on n only, so every launch gives the same bits (not the CPU's: its
 * chunk sums run left to right; they agree to double rounding).
 */
#include "cuda_portable.h"

#include "colsum.cuh"
#include "cuda_common.cuh"

#define THREADS 256

/* Elementwise kernels take W elements at a time (16-byte vectors when W > 1: every pointer
 * aligned), then the n % W last ones one per thread. */
template <typename T, int W>
static __global__ void add_kernel(T *out, const T *a, const T *b, int64_t n)
{
    MGK_FOR_EACH(v, n / W) {
        float x[W], y[W];
        mgk_ldw<T, W>(x, a + v * W);
        mgk_ldw<T, W>(y, b + v * W);
        for (int e = 0; e < W; e++) x[e] += y[e];
        mgk_stw<T, W>(out + v * W, x);
    }
    MGK_FOR_EACH(i, n % W) {
        int64_t j = n / W * W + i;
        mgk_st(out + j, mgk_ld(a + j) + mgk_ld(b + j));
    }
}

template <typename T, int W>
static __global__ void scale_kernel(T *x, int64_t n, float alpha)
{
    MGK_FOR_EACH(v, n / W) {
        float y[W];
        mgk_ldw<T, W>(y, x + v * W);
        for (int e = 0; e < W; e++) y[e] *= alpha;
        mgk_stw<T, W>(x + v * W, y);
    }
    MGK_FOR_EACH(i, n % W) {
        int64_t j = n / W * W + i;
        mgk_st(x + j, mgk_ld(x + j) * alpha);
    }
}

template <typename T, int W>
static __global__ void bias_add_kernel(T *x, const T *bias, int64_t N, int64_t C)
{
    int64_t c = MGK_COL() * W;
    if (c < C) {
        float b[W], v[W];
        mgk_ldw<T, W>(b, bias + c);
        MGK_FOR_ROWS(r, N) {
            mgk_ldw<T, W>(v, x + r * C + c);
            for (int e = 0; e < W; e++) v[e] += b[e];
            mgk_stw<T, W>(x + r * C + c, v);
        }
    }
}

template <typename T>
struct colsum_of {
    const T *x;
    int64_t C;
    __device__ void operator()(int64_t r, int64_t c, float *a, float *b) const
    {
        (void)b;
        *a += mgk_ld(x + r * C + c);
    }
    template <int W>
    __device__ void vec(int64_t r, int64_t c, float (&a)[W], float (&b)[W]) const
    {
        (void)b;
        float v[W];
        mgk_ldw<T, W>(v, x + r * C + c);
        for (int e = 0; e < W; e++) a[e] += v[e];
    }
};

template <typename T>
static void add_launch(const mg_kctx *k, T *out, const T *a, const T *b, int64_t n)
{
    if (n <= 0) return;
    const int E = vec16<T>::N;
    if (mgk_aligned16(out) && mgk_aligned16(a) && mgk_aligned16(b))
        MGK_LAUNCH((add_kernel<T, E>), mgk_grid(n / E + 1, THREADS, MGK_GRID_CAP), THREADS, 0,
                   mgk_stream(k), out, a, b, n);
    else
        MGK_LAUNCH((add_kernel<T, 1>), mgk_grid(n, THREADS, MGK_GRID_CAP), THREADS, 0,
                   mgk_stream(k), out, a, b, n);
    MGK_LAUNCH_CHECK();
}

template <typename T>
static void scale_launch(const mg_kctx *k, T *x, int64_t n, float alpha)
{
    if (n <= 0) return;
    const int E = vec16<T>::N;
    if (mgk_aligned16(x))
        MGK_LAUNCH((scale_kernel<T, E>), mgk_grid(n / E + 1, THREADS, MGK_GRID_CAP), THREADS, 0,
                   mgk_stream(k), x, n, alpha);
    else
        MGK_LAUNCH((scale_kernel<T, 1>), mgk_grid(n, THREADS, MGK_GRID_CAP), THREADS, 0,
                   mgk_stream(k), x, n, alpha);
    MGK_LAUNCH_CHECK();
}

template <typename T>
static void bias_add_launch(const mg_kctx *k, T *x, const T *bias, int64_t N, int64_t C)
{
    if (N <= 0 || C <= 0) return;
    const int E = vec16<T>::N;
    if (mgk_rows_vec_ok(C, E, x, bias))
        MGK_LAUNCH((bias_add_kernel<T, E>),
                   mgk_grid_rows_cap(N, C / E, MGK_VTHREADS, MGK_VROWS_CAP), MGK_VTHREADS, 0,
                   mgk_stream(k), x, bias, N, C);
    else
        MGK_LAUNCH((bias_add_kernel<T, 1>), mgk_grid_rows(N, C, THREADS), THREADS, 0,
                   mgk_stream(k), x, bias, N, C);
    MGK_LAUNCH_CHECK();
}

template <typename T>
static void bias_grad_launch(const mg_kctx *k, float *dbias, const T *dout, int64_t N, int64_t C)
{
    colsum_of<T> f = {dout, C};
    const int E = vec16<T>::N;
    if (mgk_rows_vec_ok(C, E, dout))
        colsum_run<colsum_of<T>, E>(k, f, dbias, (float *)NULL, N, C);
    else
        colsum_run(k, f, dbias, (float *)NULL, N, C);
}

/* ---- deterministic double reductions ---------------------------------------------------- */

static __global__ void chunk_sum_kernel(double *part, const float *x, const float *mask,
                                        int64_t n, int square)
{
    MGK_SHARED(double, red, THREADS);
    int64_t c0 = (int64_t)blockIdx.x * MGK_SUM_CHUNK;
    int64_t c1 = c0 + MGK_SUM_CHUNK < n ? c0 + MGK_SUM_CHUNK : n;
    double acc = 0.0;
    for (int64_t i = c0 + threadIdx.x; i < c1; i += THREADS) {
        double v = x[i];
        acc += square ? v * v : v * (mask ? mask[i] : 1.0f);
    }
    double s = mgk_block_sum_f64(acc, red);
    if (threadIdx.x == 0) part[blockIdx.x] = s;
}

static __global__ void total_sum_kernel(double *out, const double *part, int64_t nchunks)
{
    MGK_SHARED(double, red, THREADS);
    double acc = 0.0;
    for (int64_t i = threadIdx.x; i < nchunks; i += THREADS) acc += part[i];
    double s = mgk_block_sum_f64(acc, red);
    if (threadIdx.x == 0) *out = s;
}

static double chunked_sum(const mg_kctx *k, const float *x, const float *mask, int64_t n,
                          int square)
{
    if (n <= 0) return 0.0;
    int64_t nchunks = (n + MGK_SUM_CHUNK - 1) / MGK_SUM_CHUNK;
    double *part = (double *)mgk_cuda_ws(k, (size_t)(nchunks + 1) * sizeof(double));
    MG_ASSERT(nchunks <= (int64_t)INT32_MAX);
    MGK_LAUNCH(chunk_sum_kernel, (unsigned)nchunks, THREADS, 0, mgk_stream(k), part, x, mask, n,
               square);
    MGK_LAUNCH_CHECK();
    MGK_LAUNCH(total_sum_kernel, 1, THREADS, 0, mgk_stream(k), part + nchunks,
               (const double *)part, nchunks);
    MGK_LAUNCH_CHECK();
    double total = 0.0;
    MGK_CUDA_CHECK(cudaMemcpyAsync(&total, part + nchunks, sizeof total, cudaMemcpyDeviceToHost,
                                   mgk_stream(k)));
    MGK_CUDA_CHECK(cudaStreamSynchronize(mgk_stream(k)));
    return total;
}

/* ---- entry points ------------------------------------------------------------------------ */

extern "C" void mgk_cuda_zero(const mg_kctx *k, float *x, int64_t n)
{
    if (n > 0) MGK_CUDA_CHECK(cudaMemsetAsync(x, 0, (size_t)n * sizeof(float), mgk_stream(k)));
}

extern "C" void mgk_cuda_copy(const mg_kctx *k, float *dst, const float *src, int64_t n)
{
    if (n > 0)
        MGK_CUDA_CHECK(cudaMemcpyAsync(dst, src, (size_t)n * sizeof(float),
                                       cudaMemcpyDeviceToDevice, mgk_stream(k)));
}

extern "C" void mgk_cuda_zero_h16(const mg_kctx *k, mgk_h16 *x, int64_t n)
{
    if (n > 0) MGK_CUDA_CHECK(cudaMemsetAsync(x, 0, (size_t)n * sizeof(mgk_h16), mgk_stream(k)));
}

extern "C" void mgk_cuda_copy_h16(const mg_kctx *k, mgk_h16 *dst, const mgk_h16 *src, int64_t n)
{
    if (n > 0)
        MGK_CUDA_CHECK(cudaMemcpyAsync(dst, src, (size_t)n * sizeof(mgk_h16),
                                       cudaMemcpyDeviceToDevice, mgk_stream(k)));
}

extern "C" void mgk_cuda_add(const mg_kctx *k, float *out, const float *a, const float *b,
                             int64_t n)
{
    add_launch(k, out, a, b, n);
}

extern "C" void mgk_cuda_accumulate(const mg_kctx *k, float *y, const float *x, int64_t n)
{
    add_launch(k, y, (const float *)y, x, n);
}

extern "C" void mgk_cuda_scale(const mg_kctx *k, float *x, int64_t n, float alpha)
{
    scale_launch(k, x, n, alpha);
}

extern "C" void mgk_cuda_bias_add(const mg_kctx *k, float *x, const float *bias, int64_t N,
                                  int64_t C)
{
    bias_add_launch(k, x, bias, N, C);
}

extern "C" void mgk_cuda_bias_grad(const mg_kctx *k, float *dbias, const float *dout, int64_t N,
                                   int64_t C)
{
    bias_grad_launch(k, dbias, dout, N, C);
}

extern "C" double mgk_cuda_sumsq(const mg_kctx *k, const float *x, int64_t n)
{
    return chunked_sum(k, x, NULL, n, 1);
}

extern "C" double mgk_cuda_sum(const mg_kctx *k, const float *x, const float *mask, int64_t n)
{
    return chunked_sum(k, x, mask, n, 0);
}

extern "C" void mgk_cuda_add_h16(const mg_kctx *k, mgk_h16 *out, const mgk_h16 *a,
                                 const mgk_h16 *b, int64_t n)
{
    MGK_BY_HALF(k, T16, add_launch(k, mgk_as<T16>(out), mgk_as<T16>(a), mgk_as<T16>(b), n));
}

extern "C" void mgk_cuda_bias_add_h16(const mg_kctx *k, mgk_h16 *x, const mgk_h16 *bias, int64_t N,
                                      int64_t C)
{
    MGK_BY_HALF(k, T16, bias_add_launch(k, mgk_as<T16>(x), mgk_as<T16>(bias), N, C));
}

extern "C" void mgk_cuda_bias_grad_h16(const mg_kctx *k, float *dbias, const mgk_h16 *dout,
                                       int64_t N, int64_t C)
{
    MGK_BY_HALF(k, T16, bias_grad_launch(k, dbias, mgk_as<T16>(dout), N, C));
}

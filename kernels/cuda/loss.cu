/* loss.cu — softmax + cross-entropy over a padded, possibly sharded vocabulary (kernels.h
 * semantics: partial / rescale / finish / fwd / bwd), logits in fp32 or bf16.
 *
 * Kernels: one block of 256 threads per row (grid-stride over rows), 16-byte vectors of logits
 * per thread where rows are whole vectors on aligned tensors. The forward reads each
 * logit once: every thread keeps an online (max, sum of exp) over its columns, then the block
 * combines them in a fixed order; fp32 expf, fp32 sums. The backward reads and writes each
 * logit once (in place allowed: a thread writes only what it read). rescale and finish are
 * elementwise over rows, in double like the reference.
 */
#include "cuda_portable.h"

#include "cuda_common.cuh"

#define THREADS 256

static int64_t valid_cols(int64_t Vl, int64_t col0, int64_t vocab)
{
    int64_t n = vocab - col0;
    return n < 0 ? 0 : (n < Vl ? n : Vl);
}

/* The block's max and sum of exp(x - max) over x[0, nv); max = -inf, sum = 0 when nv = 0. With
 * W > 1 (x 16-byte aligned) each thread takes W logits at a time (one rescale per vector),
 * the tail past the last whole vector one at a time. */
template <typename T, int W>
static __device__ void row_stats(const T *x, int64_t nv, float *red, float *mx, float *sum)
{
    float m = -INFINITY, s = 0.0f;
    int64_t nvec = W > 1 ? nv / W : 0;
    for (int64_t j = threadIdx.x; j < nvec; j += blockDim.x) {
        float v[W];
        mgk_ldw<T, W>(v, x + j * W);
        float vm = v[0];
        for (int e = 1; e < W; e++) vm = fmaxf(vm, v[e]);
        if (vm > m) {
            s *= expf(m - vm);
            m = vm;
        }
        for (int e = 0; e < W; e++) s += expf(v[e] - m);
    }
    for (int64_t j = nvec * W + threadIdx.x; j < nv; j += blockDim.x) {
        float v = mgk_ld(x + j);
        if (v > m) {
            s = s * expf(m - v) + 1.0f;
            m = v;
        } else {
            s += expf(v - m);
        }
    }
    float M = mgk_block_max(m, red);
    *sum = mgk_block_sum(s > 0.0f ? s * expf(m - M) : 0.0f, red);
    *mx = M;
}

/* Per row of logits (N, Vl), global columns from col0, nv valid: full = 0 writes rowmax, rowsum,
 * tgt into o1, o2, o3 (mgk_xent_partial); full = 1 writes loss, lse into o1, o2 (mgk_xent_fwd,
 * col0 = 0), the log-sum-exp in double as the reference. */
template <typename T, int W>
static __global__ void xent_rows_kernel(float *o1, float *o2, float *o3, const T *logits,
                                        const int32_t *targets, int64_t N, int64_t Vl,
                                        int64_t col0, int64_t nv, int full)
{
    MGK_SHARED(float, red, 32);
    for (int64_t r = blockIdx.x; r < N; r += gridDim.x) {
        const T *x = logits + r * Vl;
        float M, S;
        row_stats<T, W>(x, nv, red, &M, &S);
        if (threadIdx.x == 0) {
            int64_t tj = (int64_t)targets[r] - col0;
            float xt = tj >= 0 && tj < nv ? mgk_ld(x + tj) : 0.0f;
            if (full) {
                double l = (double)M + log((double)S);
                o1[r] = (float)(l - xt);
                o2[r] = (float)l;
            } else {
                o1[r] = M, o2[r] = S, o3[r] = xt;
            }
        }
    }
}

/* The gradient of logit j (< Vl) of a row from its value v. */
static __device__ inline float xent_grad(float v, int64_t j, int64_t nv, int64_t tj, float l,
                                         float w)
{
    float g = j < nv ? expf(v - l) * w : 0.0f;
    return j == tj && j < nv ? g - w : g;
}

template <typename T, int W>
static __global__ void xent_bwd_kernel(T *dlogits, const T *logits, const float *lse,
                                       const int32_t *targets, const float *mask, float scale,
                                       int64_t N, int64_t Vl, int64_t col0, int64_t nv)
{
    for (int64_t r = blockIdx.x; r < N; r += gridDim.x) {
        float w = scale * (mask ? mask[r] : 1.0f), l = lse[r];
        int64_t tj = (int64_t)targets[r] - col0, nvec = W > 1 ? Vl / W : 0;
        const T *x = logits + r * Vl;
        T *g = dlogits + r * Vl;
        for (int64_t j = threadIdx.x; j < nvec; j += blockDim.x) {
            float v[W];
            mgk_ldw<T, W>(v, x + j * W);
            for (int e = 0; e < W; e++) v[e] = xent_grad(v[e], j * W + e, nv, tj, l, w);
            mgk_stw<T, W>(g + j * W, v);
        }
        for (int64_t j = nvec * W + threadIdx.x; j < Vl; j += blockDim.x)
            mgk_st(g + j, xent_grad(mgk_ld(x + j), j, nv, tj, l, w));
    }
}

static __global__ void xent_gmax_kernel(float *gmax, const float *all, int64_t tp, int64_t N)
{
    MGK_FOR_EACH(i, N) {
        float m = all[i];
        for (int64_t r = 1; r < tp; r++) m = fmaxf(m, all[r * N + i]);
        gmax[i] = m;
    }
}

static __global__ void xent_rescale_kernel(float *rowsum, const float *rowmax, const float *gmax,
                                           int64_t N)
{
    MGK_FOR_EACH(i, N)
    if (rowsum[i] != 0.0f) rowsum[i] = (float)(rowsum[i] * exp((double)rowmax[i] - gmax[i]));
}

static __global__ void xent_finish_kernel(float *loss, float *lse, const float *rowmax,
                                          const float *rowsum, const float *tgt, int64_t N)
{
    MGK_FOR_EACH(i, N) {
        double l = (double)rowmax[i] + log((double)rowsum[i]);
        loss[i] = (float)(l - tgt[i]);
        lse[i] = (float)l;
    }
}

static unsigned row_grid(int64_t N)
{
    return mgk_grid(N, 1, 1u << 30);
}

/* xent_rows_kernel over 16-byte vectors where rows of Vl logits are whole vectors on an
 * aligned tensor, else one logit at a time. */
template <typename T>
static void xent_rows(const mg_kctx *k, float *o1, float *o2, float *o3, const T *logits,
                      const int32_t *targets, int64_t N, int64_t Vl, int64_t col0, int64_t nv,
                      int full)
{
    const int E = vec16<T>::N;
    if (mgk_rows_vec_ok(Vl, E, logits))
        MGK_LAUNCH((xent_rows_kernel<T, E>), row_grid(N), THREADS, 0, mgk_stream(k), o1, o2, o3,
                   logits, targets, N, Vl, col0, nv, full);
    else
        MGK_LAUNCH((xent_rows_kernel<T, 1>), row_grid(N), THREADS, 0, mgk_stream(k), o1, o2, o3,
                   logits, targets, N, Vl, col0, nv, full);
    MGK_LAUNCH_CHECK();
}

template <typename T>
static void xent_partial(const mg_kctx *k, float *rowmax, float *rowsum, float *tgt,
                         const T *logits, const int32_t *targets, int64_t N, int64_t Vl,
                         int64_t col0, int64_t vocab)
{
    if (N <= 0) return;
    xent_rows(k, rowmax, rowsum, tgt, logits, targets, N, Vl, col0, valid_cols(Vl, col0, vocab),
              0);
}

template <typename T>
static void xent_fwd(const mg_kctx *k, float *loss, float *lse, const T *logits,
                     const int32_t *targets, int64_t N, int64_t Vp, int64_t vocab)
{
    MG_ASSERT(vocab >= 1 && vocab <= Vp);
    if (N <= 0) return;
    xent_rows(k, loss, lse, (float *)NULL, logits, targets, N, Vp, (int64_t)0,
              valid_cols(Vp, 0, vocab), 1);
}

template <typename T>
static void xent_bwd(const mg_kctx *k, T *dlogits, const T *logits, const float *lse,
                     const int32_t *targets, const float *mask, float scale, int64_t N,
                     int64_t Vl, int64_t col0, int64_t vocab)
{
    if (N <= 0) return;
    const int E = vec16<T>::N;
    if (mgk_rows_vec_ok(Vl, E, dlogits, logits))
        MGK_LAUNCH((xent_bwd_kernel<T, E>), row_grid(N), THREADS, 0, mgk_stream(k), dlogits,
                   logits, lse, targets, mask, scale, N, Vl, col0, valid_cols(Vl, col0, vocab));
    else
        MGK_LAUNCH((xent_bwd_kernel<T, 1>), row_grid(N), THREADS, 0, mgk_stream(k), dlogits,
                   logits, lse, targets, mask, scale, N, Vl, col0, valid_cols(Vl, col0, vocab));
    MGK_LAUNCH_CHECK();
}

extern "C" void mgk_cuda_xent_partial(const mg_kctx *k, float *rowmax, float *rowsum, float *tgt,
                                      const float *logits, const int32_t *targets, int64_t N,
                                      int64_t Vl, int64_t col0, int64_t vocab)
{
    xent_partial(k, rowmax, rowsum, tgt, logits, targets, N, Vl, col0, vocab);
}

extern "C" void mgk_cuda_xent_gmax(const mg_kctx *k, float *gmax, const float *all, int64_t tp,
                                   int64_t N)
{
    if (N <= 0) return;
    MGK_LAUNCH(xent_gmax_kernel, mgk_grid(N, THREADS, MGK_GRID_CAP), THREADS, 0, mgk_stream(k),
               gmax, all, tp, N);
    MGK_LAUNCH_CHECK();
}

extern "C" void mgk_cuda_xent_rescale(const mg_kctx *k, float *rowsum, const float *rowmax,
                                      const float *gmax, int64_t N)
{
    if (N <= 0) return;
    MGK_LAUNCH(xent_rescale_kernel, mgk_grid(N, THREADS, MGK_GRID_CAP), THREADS, 0,
               mgk_stream(k), rowsum, rowmax, gmax, N);
    MGK_LAUNCH_CHECK();
}

extern "C" void mgk_cuda_xent_finish(const mg_kctx *k, float *loss, float *lse,
                                     const float *rowmax, const float *rowsum, const float *tgt,
                                     int64_t N)
{
    if (N <= 0) return;
    MGK_LAUNCH(xent_finish_kernel, mgk_grid(N, THREADS, MGK_GRID_CAP), THREADS, 0,
               mgk_stream(k), loss, lse, rowmax, rowsum, tgt, N);
    MGK_LAUNCH_CHECK();
}

extern "C" void mgk_cuda_xent_fwd(const mg_kctx *k, float *loss, float *lse, const float *logits,
                                  const int32_t *targets, int64_t N, int64_t Vp, int64_t vocab)
{
    xent_fwd(k, loss, lse, logits, targets, N, Vp, vocab);
}

extern "C" void mgk_cuda_xent_bwd(const mg_kctx *k, float *dlogits, const float *logits,
                                  const float *lse, const int32_t *targets, const float *mask,
                                  float scale, int64_t N, int64_t Vl, int64_t col0,
                                  int64_t vocab)
{
    xent_bwd(k, dlogits, logits, lse, targets, mask, scale, N, Vl, col0, vocab);
}

extern "C" void mgk_cuda_xent_partial_h16(const mg_kctx *k, float *rowmax, float *rowsum,
                                          float *tgt, const mgk_h16 *logits,
                                          const int32_t *targets, int64_t N, int64_t Vl,
                                          int64_t col0, int64_t vocab)
{
    MGK_BY_HALF(
        k, T16,
        xent_partial(k, rowmax, rowsum, tgt, mgk_as<T16>(logits), targets, N, Vl, col0, vocab));
}

extern "C" void mgk_cuda_xent_fwd_h16(const mg_kctx *k, float *loss, float *lse,
                                      const mgk_h16 *logits, const int32_t *targets, int64_t N,
                                      int64_t Vp, int64_t vocab)
{
    MGK_BY_HALF(k, T16, xent_fwd(k, loss, lse, mgk_as<T16>(logits), targets, N, Vp, vocab));
}

extern "C" void mgk_cuda_xent_bwd_h16(const mg_kctx *k, mgk_h16 *dlogits, const mgk_h16 *logits,
                                      const float *lse, const int32_t *targets, const float *mask,
                                      float scale, int64_t N, int64_t Vl, int64_t col0,
                                      int64_t vocab)
{
    MGK_BY_HALF(k, T16,
                xent_bwd(k, mgk_as<T16>(dlogits), mgk_as<T16>(logits), lse, targets, mask, scale, N,
                         Vl, col0, vocab));
}

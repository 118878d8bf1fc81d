/* norm.cu — LayerNorm and RMSNorm forward and backward (kernels.h semantics), fp32 and bf16.
 *
 * Kernels: forward and the input gradient run one block of 256 threads per row (grid-stride
 * over rows): fp32 block sums in a fixed order (cuda_common.cuh) for the mean, the centred
 * sum of squares and, backward, sum(g) and sum(g * xhat) with g = dout * w; the row is read
 * from global memory on each pass (L1/L2 hits after the first). The weight and bias
 * gradients (column sums of dout * xhat and dout) come from the same pass as the input
 * gradient: a fixed 512 blocks (fewer for small N) each sum their rows per column in shared
 * memory, then colsum.cuh's finish adds the block sums in block order (deterministic, and
 * dout and x are read once); without dinp, or for C > 12288, they are colsum.cuh's separate
 * column sums. RMSNorm is the same code
 * with the mean fixed at 0 and no bias. The residual variants (kernels_cuda.h) first write the
 * row's sum resid = a + b, then normalise it, in the same block.
 */
#include "cuda_portable.h"

#include "colsum.cuh"
#include "cuda_common.cuh"

#define THREADS 256
#define FUSED_BLOCKS 512                  /* blocks of the one-pass backward (a fixed count) */
#define FUSED_MAX_SMEM ((size_t)96 << 10) /* its per-column sums: C <= 12288 */

/* One row per block: with resid, the row is first resid = ra + rb (rounded to T; each thread
 * then reads back only what it wrote), else inp. */
template <typename T>
static __global__ void norm_fwd_kernel(T *out, float *mean, float *rstd, const T *inp,
                                       T *resid, const T *ra, const T *rb, const T *w,
                                       const T *b, int64_t N, int64_t C, float eps, int center)
{
    MGK_SHARED(float, red, 32);
    for (int64_t r = blockIdx.x; r < N; r += gridDim.x) {
        if (resid)
            for (int64_t c = threadIdx.x; c < C; c += blockDim.x)
                mgk_st(resid + r * C + c, mgk_ld(ra + r * C + c) + mgk_ld(rb + r * C + c));
        const T *x = (resid ? resid : inp) + r * C;
        float mu = 0.0f, ss = 0.0f;
        if (center) {
            float s = 0.0f;
            for (int64_t c = threadIdx.x; c < C; c += blockDim.x) s += mgk_ld(x + c);
            mu = mgk_block_sum(s, red) / (float)C;
        }
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            float d = mgk_ld(x + c) - mu;
            ss += d * d;
        }
        float rs = 1.0f / sqrtf(mgk_block_sum(ss, red) / (float)C + eps);
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            float y = ((mgk_ld(x + c) - mu) * rs) * mgk_ld(w + c);
            mgk_st(out + r * C + c, b ? y + mgk_ld(b + c) : y);
        }
        if (threadIdx.x == 0) {
            if (mean) mean[r] = mu;
            rstd[r] = rs;
        }
    }
}

/* dinp += rstd * (g - mean(g) - xhat * mean(g * xhat)), g = dout * w (mean(g) = 0 for RMS).
 * With part: the block also sums dout * xhat and dout of its rows per column in shared memory
 * (2 C floats; column c always belongs to the same thread) and writes them to part[block] and
 * part[gridDim + block] (C floats each) for colsum_finish_kernel. */
template <typename T>
static __global__ void norm_dinp_kernel(T *dinp, float *part, const T *dout, const T *inp,
                                        const T *w, const float *mean, const float *rstd,
                                        int64_t N, int64_t C, int center)
{
    MGK_SHARED(float, red, 32);
    MGK_DYN_SHARED(float, acc);
    if (part)
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) acc[c] = 0.0f, acc[C + c] = 0.0f;
    for (int64_t r = blockIdx.x; r < N; r += gridDim.x) {
        const T *x = inp + r * C, *dy = dout + r * C;
        float mu = center ? mean[r] : 0.0f, rs = rstd[r], sg = 0.0f, sgx = 0.0f;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            float g = mgk_ld(dy + c) * mgk_ld(w + c);
            sg += g;
            sgx += g * ((mgk_ld(x + c) - mu) * rs);
        }
        float mg = center ? mgk_block_sum(sg, red) / (float)C : 0.0f;
        float mgx = mgk_block_sum(sgx, red) / (float)C;
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            float d = mgk_ld(dy + c), g = d * mgk_ld(w + c), xhat = (mgk_ld(x + c) - mu) * rs;
            T *dx = dinp + r * C + c;
            mgk_st(dx, mgk_ld(dx) + rs * (g - mg - xhat * mgx));
            if (part) acc[c] += d * xhat, acc[C + c] += d;
        }
    }
    if (part)
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            part[(int64_t)blockIdx.x * C + c] = acc[c];
            part[((int64_t)gridDim.x + blockIdx.x) * C + c] = acc[C + c];
        }
}

/* a += dout * xhat (weight gradient), b += dout (bias gradient). */
template <typename T>
struct norm_wgrad {
    const T *dout, *inp;
    const float *mean, *rstd;
    int64_t C;
    __device__ void operator()(int64_t r, int64_t c, float *a, float *b) const
    {
        float dy = mgk_ld(dout + r * C + c), mu = mean ? mean[r] : 0.0f;
        *a += dy * ((mgk_ld(inp + r * C + c) - mu) * rstd[r]);
        *b += dy;
    }
};

static unsigned row_grid(int64_t N)
{
    return mgk_grid(N, 1, 1u << 30);
}

/* The row source of a forward: inp, or (resid != NULL) resid = ra + rb. */
template <typename T>
struct norm_src {
    const T *inp;
    T *resid;
    const T *ra, *rb;
};

template <typename T>
static norm_src<T> plain(const T *inp)
{
    norm_src<T> s = {inp, (T *)NULL, (const T *)NULL, (const T *)NULL};
    return s;
}

template <typename T>
static norm_src<T> residual(T *resid, const T *a, const T *b)
{
    norm_src<T> s = {(const T *)NULL, resid, a, b};
    return s;
}

template <typename T>
static void norm_fwd(const mg_kctx *k, T *out, float *mean, float *rstd, norm_src<T> src,
                     const T *w, const T *b, int64_t N, int64_t C, float eps, int center)
{
    if (N <= 0) return;
    MGK_LAUNCH(norm_fwd_kernel<T>, row_grid(N), THREADS, 0, mgk_stream(k), out, mean, rstd,
               src.inp, src.resid, src.ra, src.rb, w, b, N, C, eps, center);
    MGK_LAUNCH_CHECK();
}

template <typename T>
static void norm_bwd(const mg_kctx *k, T *dinp, float *dw, float *db, const T *dout,
                     const T *inp, const T *w, const float *mean, const float *rstd, int64_t N,
                     int64_t C)
{
    if (N <= 0) return;
    size_t acc_bytes = (size_t)(2 * C) * sizeof(float);
    int64_t nblk = N < FUSED_BLOCKS ? N : FUSED_BLOCKS,
            fit = (int64_t)(k->cuda->ws_bytes / acc_bytes);
    nblk = nblk < fit ? nblk : fit;
    if (dinp && (dw || db) && acc_bytes <= FUSED_MAX_SMEM && nblk >= 1) {
        /* one pass: dinp and per-block weight-gradient sums, then the fixed-order block sum */
        float *part = (float *)mgk_cuda_ws(k, (size_t)nblk * acc_bytes);
        set_smem_limit(norm_dinp_kernel<T>, acc_bytes);
        MGK_LAUNCH(norm_dinp_kernel<T>, (unsigned)nblk, THREADS, acc_bytes, mgk_stream(k), dinp,
                   part, dout, inp, w, mean, rstd, N, C, mean != NULL);
        MGK_LAUNCH_CHECK();
        MGK_LAUNCH(colsum_finish_kernel, mgk_grid(C, THREADS, MGK_GRID_CAP), THREADS, 0,
                   mgk_stream(k), dw, db, (const float *)part, nblk, C);
        MGK_LAUNCH_CHECK();
        return;
    }
    if (dinp) {
        MGK_LAUNCH(norm_dinp_kernel<T>, row_grid(N), THREADS, 0, mgk_stream(k), dinp, (float *)NULL,
                   dout, inp, w, mean, rstd, N, C, mean != NULL);
        MGK_LAUNCH_CHECK();
    }
    norm_wgrad<T> f = {dout, inp, mean, rstd, C};
    colsum_run(k, f, dw, db, N, C);
}

extern "C" void mgk_cuda_layernorm_fwd(const mg_kctx *k, float *out, float *mean, float *rstd,
                                       const float *inp, const float *w, const float *b,
                                       int64_t N, int64_t C, float eps)
{
    norm_fwd(k, out, mean, rstd, plain(inp), w, b, N, C, eps, 1);
}

extern "C" void mgk_cuda_layernorm_bwd(const mg_kctx *k, float *dinp, float *dw, float *db,
                                       const float *dout, const float *inp, const float *w,
                                       const float *mean, const float *rstd, int64_t N,
                                       int64_t C)
{
    MG_ASSERT(mean != NULL);
    norm_bwd(k, dinp, dw, db, dout, inp, w, mean, rstd, N, C);
}

extern "C" void mgk_cuda_rmsnorm_fwd(const mg_kctx *k, float *out, float *rstd, const float *inp,
                                     const float *w, int64_t N, int64_t C, float eps)
{
    norm_fwd(k, out, (float *)NULL, rstd, plain(inp), w, (const float *)NULL, N, C, eps, 0);
}

extern "C" void mgk_cuda_rmsnorm_bwd(const mg_kctx *k, float *dinp, float *dw, const float *dout,
                                     const float *inp, const float *w, const float *rstd,
                                     int64_t N, int64_t C)
{
    norm_bwd(k, dinp, dw, (float *)NULL, dout, inp, w, (const float *)NULL, rstd, N, C);
}

extern "C" void mgk_cuda_residual_layernorm_fwd(const mg_kctx *k, float *resid, float *out,
                                                float *mean, float *rstd, const float *a,
                                                const float *b, const float *w, const float *bias,
                                                int64_t N, int64_t C, float eps)
{
    norm_fwd(k, out, mean, rstd, residual(resid, a, b), w, bias, N, C, eps, 1);
}

extern "C" void mgk_cuda_residual_rmsnorm_fwd(const mg_kctx *k, float *resid, float *out,
                                              float *rstd, const float *a, const float *b,
                                              const float *w, int64_t N, int64_t C, float eps)
{
    norm_fwd(k, out, (float *)NULL, rstd, residual(resid, a, b), w, (const float *)NULL, N, C,
             eps, 0);
}

extern "C" void mgk_cuda_residual_layernorm_fwd_bf16(const mg_kctx *k, mgk_bf16 *resid,
                                                     mgk_bf16 *out, float *mean, float *rstd,
                                                     const mgk_bf16 *a, const mgk_bf16 *b,
                                                     const mgk_bf16 *w, const mgk_bf16 *bias,
                                                     int64_t N, int64_t C, float eps)
{
    norm_fwd(k, mgk_bf(out), mean, rstd, residual(mgk_bf(resid), mgk_bf(a), mgk_bf(b)), mgk_bf(w),
             mgk_bf(bias), N, C, eps, 1);
}

extern "C" void mgk_cuda_residual_rmsnorm_fwd_bf16(const mg_kctx *k, mgk_bf16 *resid,
                                                   mgk_bf16 *out, float *rstd, const mgk_bf16 *a,
                                                   const mgk_bf16 *b, const mgk_bf16 *w,
                                                   int64_t N, int64_t C, float eps)
{
    norm_fwd(k, mgk_bf(out), (float *)NULL, rstd, residual(mgk_bf(resid), mgk_bf(a), mgk_bf(b)),
             mgk_bf(w), (const bf16 *)NULL, N, C, eps, 0);
}

extern "C" void mgk_cuda_layernorm_fwd_bf16(const mg_kctx *k, mgk_bf16 *out, float *mean,
                                            float *rstd, const mgk_bf16 *inp, const mgk_bf16 *w,
                                            const mgk_bf16 *b, int64_t N, int64_t C, float eps)
{
    norm_fwd(k, mgk_bf(out), mean, rstd, plain(mgk_bf(inp)), mgk_bf(w), mgk_bf(b), N, C, eps, 1);
}

extern "C" void mgk_cuda_layernorm_bwd_bf16(const mg_kctx *k, mgk_bf16 *dinp, float *dw,
                                            float *db, const mgk_bf16 *dout, const mgk_bf16 *inp,
                                            const mgk_bf16 *w, const float *mean,
                                            const float *rstd, int64_t N, int64_t C)
{
    MG_ASSERT(mean != NULL);
    norm_bwd(k, mgk_bf(dinp), dw, db, mgk_bf(dout), mgk_bf(inp), mgk_bf(w), mean, rstd, N, C);
}

extern "C" void mgk_cuda_rmsnorm_fwd_bf16(const mg_kctx *k, mgk_bf16 *out, float *rstd,
                                          const mgk_bf16 *inp, const mgk_bf16 *w, int64_t N,
                                          int64_t C, float eps)
{
    norm_fwd(k, mgk_bf(out), (float *)NULL, rstd, plain(mgk_bf(inp)), mgk_bf(w),
             (const bf16 *)NULL, N, C, eps, 0);
}

extern "C" void mgk_cuda_rmsnorm_bwd_bf16(const mg_kctx *k, mgk_bf16 *dinp, float *dw,
                                          const mgk_bf16 *dout, const mgk_bf16 *inp,
                                          const mgk_bf16 *w, const float *rstd, int64_t N,
                                          int64_t C)
{
    norm_bwd(k, mgk_bf(dinp), dw, (float *)NULL, mgk_bf(dout), mgk_bf(inp), mgk_bf(w),
             (const float *)NULL, rstd, N, C);
}

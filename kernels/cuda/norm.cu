/* norm.cu — LayerNorm and RMSNorm forward and backward (kernels.h semantics), fp32 and bf16.
 *
 * Kernels: where a row is a whole number of 16-byte vectors of at most 8 per lane (C <= 1024
 * fp32, 2048 bf16) and the tensors are aligned, one warp per row (blocks of 4 warps): the row
 * is loaded once into registers by 128-bit loads, mean, variance and, backward, sum(g) and
 * sum(g * xhat) (g = dout * w) are fixed-order warp sums, and the backward's weight and bias
 * gradients (column sums of dout * xhat and dout) are summed per warp in shared memory (a
 * column always belongs to the same lane), then per block in warp order, into a fixed number
 * of block partials (min(N/4, 512)) that colsum.cuh's finish adds in block order:
 * deterministic, dout and x read once. Other rows: one block of 256 threads per row
 * (grid-stride over rows) with fp32 block sums in a fixed order (cuda_common.cuh), the row
 * read from global memory on each pass (L1/L2 hits after the first), the weight gradients
 * from the same pass into 512 block partials (C <= 12288), else colsum.cuh's separate column
 * sums. RMSNorm is the same code with the mean fixed at 0 and no bias. The residual variants
 * (kernels_cuda.h) first write the row's sum resid = a + b (rounded to T), then normalise it.
 */
#include "cuda_portable.h"

#include "colsum.cuh"
#include "cuda_common.cuh"

#define THREADS 256
#define FUSED_BLOCKS 512                  /* blocks of the one-pass backward (a fixed count) */
#define FUSED_MAX_SMEM ((size_t)96 << 10) /* its per-column sums: C <= 12288 */
#define MGK_ROWS_GRID_CAP 16384u          /* blocks of a warp-per-row launch */

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

/* ---- one warp per row, the row in registers (C a multiple of 16 bytes, C <= 32 NV vectors) */

#define WTHREADS 128 /* 4 rows at a time per block */

/* Lane's NV vectors (vector j: elements (lane + 32 j) E ...) of row p, zeros past C. */
template <typename T, int NV>
static __device__ inline void load_row(float (&x)[NV][vec16<T>::N], const T *p, int nvec)
{
    const int E = vec16<T>::N;
    int lane = threadIdx.x & 31;
#pragma unroll
    for (int j = 0; j < NV; j++) {
        if (lane + 32 * j < nvec)
            vec16<T>::load(x[j], p + (lane + 32 * j) * E);
        else
            for (int e = 0; e < E; e++) x[j][e] = 0.0f;
    }
}

/* As norm_fwd_kernel, one warp per row: the row (or resid = ra + rb, rounded to T) is read
 * once into registers, mean and variance by warp sums (fixed order). */
template <typename T, int NV>
static __global__ void __launch_bounds__(WTHREADS)
    norm_fwd_warp_kernel(T *out, float *mean, float *rstd, const T *inp, T *resid, const T *ra,
                         const T *rb, const T *w, const T *b, int64_t N, int64_t C, float eps,
                         int center)
{
    const int E = vec16<T>::N;
    int lane = threadIdx.x & 31, nvec = (int)(C / E);
    int64_t nw = (int64_t)gridDim.x * (blockDim.x >> 5);
    for (int64_t r = (int64_t)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); r < N;
         r += nw) {
        float x[NV][E];
        if (resid) {
            float y[NV][E];
            load_row<T, NV>(x, ra + r * C, nvec);
            load_row<T, NV>(y, rb + r * C, nvec);
#pragma unroll
            for (int j = 0; j < NV; j++) {
                for (int e = 0; e < E; e++) x[j][e] = mgk_round<T>(x[j][e] + y[j][e]);
                if (lane + 32 * j < nvec)
                    vec16<T>::store(resid + r * C + (lane + 32 * j) * E, x[j]);
            }
        } else {
            load_row<T, NV>(x, inp + r * C, nvec);
        }
        float mu = 0.0f, ss = 0.0f;
        if (center) {
            float s = 0.0f;
#pragma unroll
            for (int j = 0; j < NV; j++)
                for (int e = 0; e < E; e++) s += x[j][e];
            mu = mgk_warp_sum(s) / (float)C;
        }
#pragma unroll
        for (int j = 0; j < NV; j++)
            if (lane + 32 * j < nvec)
                for (int e = 0; e < E; e++) ss += (x[j][e] - mu) * (x[j][e] - mu);
        float rs = 1.0f / sqrtf(mgk_warp_sum(ss) / (float)C + eps);
#pragma unroll
        for (int j = 0; j < NV; j++) {
            int c0 = (lane + 32 * j) * E;
            if (lane + 32 * j >= nvec) continue;
            float wv[E], bv[E];
            vec16<T>::load(wv, w + c0);
            if (b) vec16<T>::load(bv, b + c0);
            for (int e = 0; e < E; e++) {
                float y = ((x[j][e] - mu) * rs) * wv[e];
                x[j][e] = b ? y + bv[e] : y;
            }
            vec16<T>::store(out + r * C + c0, x[j]);
        }
        if (lane == 0) {
            if (mean) mean[r] = mu;
            rstd[r] = rs;
        }
    }
}

/* As norm_dinp_kernel, one warp per row (dout and x read once into registers); with part, each
 * warp sums dout * xhat and dout of its rows per column in its own 2 C floats of shared memory
 * (a column always belongs to the same lane), then the block adds its warps' sums in warp
 * order into part[block] and part[gridDim + block]. */
template <typename T, int NV>
static __global__ void __launch_bounds__(WTHREADS)
    norm_dinp_warp_kernel(T *dinp, float *part, const T *dout, const T *inp, const T *w,
                          const float *mean, const float *rstd, int64_t N, int64_t C, int center)
{
    const int E = vec16<T>::N;
    MGK_DYN_SHARED(float, acc);
    int lane = threadIdx.x & 31, wi = threadIdx.x >> 5, nwb = blockDim.x >> 5;
    int nvec = (int)(C / E);
    float *aw = acc + (int64_t)wi * 2 * C, *ab = aw + C;
    if (part)
        for (int64_t c = lane; c < C; c += 32) aw[c] = 0.0f, ab[c] = 0.0f;
    int64_t nw = (int64_t)gridDim.x * nwb;
    for (int64_t r = (int64_t)blockIdx.x * nwb + wi; r < N; r += nw) {
        float x[NV][E], dy[NV][E];
        load_row<T, NV>(x, inp + r * C, nvec);
        load_row<T, NV>(dy, dout + r * C, nvec);
        float mu = center ? mean[r] : 0.0f, rs = rstd[r], sg = 0.0f, sgx = 0.0f;
#pragma unroll
        for (int j = 0; j < NV; j++) {
            if (lane + 32 * j >= nvec) continue;
            float wv[E];
            vec16<T>::load(wv, w + (lane + 32 * j) * E);
            for (int e = 0; e < E; e++) {
                float g = dy[j][e] * wv[e];
                x[j][e] = (x[j][e] - mu) * rs; /* xhat from here on */
                sg += g;
                sgx += g * x[j][e];
            }
        }
        float mg = center ? mgk_warp_sum(sg) / (float)C : 0.0f;
        float mgx = mgk_warp_sum(sgx) / (float)C;
#pragma unroll
        for (int j = 0; j < NV; j++) {
            int c0 = (lane + 32 * j) * E;
            if (lane + 32 * j >= nvec) continue;
            float wv[E], dx[E];
            vec16<T>::load(wv, w + c0);
            vec16<T>::load(dx, dinp + r * C + c0);
            for (int e = 0; e < E; e++)
                dx[e] += rs * (dy[j][e] * wv[e] - mg - x[j][e] * mgx);
            vec16<T>::store(dinp + r * C + c0, dx);
            if (part)
                for (int e = 0; e < E; e++) {
                    aw[c0 + e] += dy[j][e] * x[j][e];
                    ab[c0 + e] += dy[j][e];
                }
        }
    }
    if (part) { /* uniform: a kernel argument */
        __syncthreads();
        for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
            float sw = 0.0f, sb = 0.0f;
            for (int i = 0; i < nwb; i++) {
                sw += acc[(int64_t)i * 2 * C + c];
                sb += acc[(int64_t)i * 2 * C + C + c];
            }
            part[(int64_t)blockIdx.x * C + c] = sw;
            part[((int64_t)gridDim.x + blockIdx.x) * C + c] = sb;
        }
    }
}

/* Vectors per lane of the warp kernels for C columns of T (0: they do not serve). */
template <typename T>
static int warp_nv(int64_t C)
{
    const int E = vec16<T>::N;
    if (C % E) return 0;
    int64_t nv = (C / E + 31) / 32;
    return nv <= 1 ? 1 : nv <= 2 ? 2 : nv <= 4 ? 4 : nv <= 6 ? 6 : nv <= 8 ? 8 : 0;
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
    int nv = warp_nv<T>(C);
    const void *ptrs[7] = {out, src.inp, src.resid, src.ra, src.rb, w, b};
    for (int i = 0; i < 7; i++) nv = mgk_aligned16(ptrs[i]) ? nv : 0;
    unsigned wg = mgk_grid(N, WTHREADS / 32, MGK_ROWS_GRID_CAP);
#define FWD_WARP(NV)                                                                         \
    MGK_LAUNCH((norm_fwd_warp_kernel<T, NV>), wg, WTHREADS, 0, mgk_stream(k), out, mean, rstd, \
               src.inp, src.resid, src.ra, src.rb, w, b, N, C, eps, center)
    switch (nv) {
    case 1: FWD_WARP(1); break;
    case 2: FWD_WARP(2); break;
    case 4: FWD_WARP(4); break;
    case 6: FWD_WARP(6); break;
    case 8: FWD_WARP(8); break;
    default:
        MGK_LAUNCH(norm_fwd_kernel<T>, row_grid(N), THREADS, 0, mgk_stream(k), out, mean, rstd,
                   src.inp, src.resid, src.ra, src.rb, w, b, N, C, eps, center);
    }
#undef FWD_WARP
    MGK_LAUNCH_CHECK();
}

/* The warp-per-row input gradient (nv vectors per lane) into dinp, with the per-block weight
 * gradient sums in part when it is not NULL; nblk blocks. */
template <typename T>
static void norm_dinp_warp(const mg_kctx *k, int nv, unsigned nblk, T *dinp, float *part,
                           const T *dout, const T *inp, const T *w, const float *mean,
                           const float *rstd, int64_t N, int64_t C)
{
    size_t sm = part ? (size_t)(WTHREADS / 32) * 2 * C * sizeof(float) : 0;
#define BWD_WARP(NV)                                                                      \
    if (sm) set_smem_limit(norm_dinp_warp_kernel<T, NV>, sm);                             \
    MGK_LAUNCH((norm_dinp_warp_kernel<T, NV>), nblk, WTHREADS, sm, mgk_stream(k), dinp, part, \
               dout, inp, w, mean, rstd, N, C, mean != NULL)
    switch (nv) {
    case 1: BWD_WARP(1); break;
    case 2: BWD_WARP(2); break;
    case 4: BWD_WARP(4); break;
    case 6: BWD_WARP(6); break;
    default: BWD_WARP(8); break;
    }
#undef BWD_WARP
    MGK_LAUNCH_CHECK();
}

template <typename T>
static void norm_bwd(const mg_kctx *k, T *dinp, float *dw, float *db, const T *dout,
                     const T *inp, const T *w, const float *mean, const float *rstd, int64_t N,
                     int64_t C)
{
    if (N <= 0) return;
    int nv = warp_nv<T>(C);
    const void *ptrs[4] = {dinp, dout, inp, w};
    for (int i = 0; i < 4; i++) nv = mgk_aligned16(ptrs[i]) ? nv : 0;
    size_t part_bytes = (size_t)(2 * C) * sizeof(float);
    if (dinp && nv && (size_t)(WTHREADS / 32) * part_bytes <= FUSED_MAX_SMEM) {
        int64_t nblk = mgk_grid(N, WTHREADS / 32, FUSED_BLOCKS),
                fit = (int64_t)(k->cuda->ws_bytes / part_bytes);
        if ((dw || db) && nblk <= fit) { /* one pass, then the fixed-order block sum */
            float *part = (float *)mgk_cuda_ws(k, (size_t)nblk * part_bytes);
            norm_dinp_warp(k, nv, (unsigned)nblk, dinp, part, dout, inp, w, mean, rstd, N, C);
            MGK_LAUNCH(colsum_finish_kernel, mgk_grid(C, THREADS, MGK_GRID_CAP), THREADS, 0,
                       mgk_stream(k), dw, db, (const float *)part, nblk, C);
            MGK_LAUNCH_CHECK();
            return;
        }
        if (!dw && !db) {
            norm_dinp_warp(k, nv, mgk_grid(N, WTHREADS / 32, MGK_ROWS_GRID_CAP), dinp,
                           (float *)NULL, dout, inp, w, mean, rstd, N, C);
            return;
        }
    }
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

extern "C" void mgk_cuda_residual_layernorm_fwd_h16(const mg_kctx *k, mgk_h16 *resid,
                                                    mgk_h16 *out, float *mean, float *rstd,
                                                    const mgk_h16 *a, const mgk_h16 *b,
                                                    const mgk_h16 *w, const mgk_h16 *bias,
                                                    int64_t N, int64_t C, float eps)
{
    MGK_BY_HALF(k, T16,
                norm_fwd(k, mgk_as<T16>(out), mean, rstd,
                         residual(mgk_as<T16>(resid), mgk_as<T16>(a), mgk_as<T16>(b)),
                         mgk_as<T16>(w), mgk_as<T16>(bias), N, C, eps, 1));
}

extern "C" void mgk_cuda_residual_rmsnorm_fwd_h16(const mg_kctx *k, mgk_h16 *resid,
                                                  mgk_h16 *out, float *rstd, const mgk_h16 *a,
                                                  const mgk_h16 *b, const mgk_h16 *w,
                                                  int64_t N, int64_t C, float eps)
{
    MGK_BY_HALF(k, T16,
                norm_fwd(k, mgk_as<T16>(out), (float *)NULL, rstd,
                         residual(mgk_as<T16>(resid), mgk_as<T16>(a), mgk_as<T16>(b)),
                         mgk_as<T16>(w), (const T16 *)NULL, N, C, eps, 0));
}

extern "C" void mgk_cuda_layernorm_fwd_h16(const mg_kctx *k, mgk_h16 *out, float *mean,
                                           float *rstd, const mgk_h16 *inp, const mgk_h16 *w,
                                           const mgk_h16 *b, int64_t N, int64_t C, float eps)
{
    MGK_BY_HALF(k, T16,
                norm_fwd(k, mgk_as<T16>(out), mean, rstd, plain(mgk_as<T16>(inp)), mgk_as<T16>(w),
                         mgk_as<T16>(b), N, C, eps, 1));
}

extern "C" void mgk_cuda_layernorm_bwd_h16(const mg_kctx *k, mgk_h16 *dinp, float *dw, float *db,
                                           const mgk_h16 *dout, const mgk_h16 *inp,
                                           const mgk_h16 *w, const float *mean, const float *rstd,
                                           int64_t N, int64_t C)
{
    MG_ASSERT(mean != NULL);
    MGK_BY_HALF(k, T16,
                norm_bwd(k, mgk_as<T16>(dinp), dw, db, mgk_as<T16>(dout), mgk_as<T16>(inp),
                         mgk_as<T16>(w), mean, rstd, N, C));
}

extern "C" void mgk_cuda_rmsnorm_fwd_h16(const mg_kctx *k, mgk_h16 *out, float *rstd,
                                         const mgk_h16 *inp, const mgk_h16 *w, int64_t N,
                                         int64_t C, float eps)
{
    MGK_BY_HALF(k, T16,
                norm_fwd(k, mgk_as<T16>(out), (float *)NULL, rstd, plain(mgk_as<T16>(inp)),
                         mgk_as<T16>(w), (const T16 *)NULL, N, C, eps, 0));
}

extern "C" void mgk_cuda_rmsnorm_bwd_h16(const mg_kctx *k, mgk_h16 *dinp, float *dw,
                                         const mgk_h16 *dout, const mgk_h16 *inp,
                                         const mgk_h16 *w, const float *rstd, int64_t N,
                                         int64_t C)
{
    MGK_BY_HALF(k, T16,
                norm_bwd(k, mgk_as<T16>(dinp), dw, (float *)NULL, mgk_as<T16>(dout),
                         mgk_as<T16>(inp), mgk_as<T16>(w), (const float *)NULL, rstd, N, C));
}

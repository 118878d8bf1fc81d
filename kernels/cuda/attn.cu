/* attn.cu — causal grouped-query attention as fused flash-style kernels (FlashAttention-2's
 * tiling and online softmax on CUDA cores, portable: no tensor cores), forward and backward,
 * with no T x T matrix in memory (kernels.h semantics), fp32 and bf16 tensors.
 *
 * Layouts: q, out (B, T, Hq, D); k, v (B, T, Hkv, D); query head h reads kv head h / (Hq/Hkv).
 * saved (fp32): lse (B, Hq, T) = log-sum-exp of each query row's scaled scores, then a copy of
 * out (B, T, Hq, D) (the backward's delta = rowsum(dout * out) needs it and kernels.h does
 * not pass out to the backward); scratch (k->scratch, fp32): delta (B, Hq, T).
 *
 * Tiles of BR = 32 query rows and BC = 32 keys, blocks of 4 warps; D is padded to DW = 32 *
 * DC (DC = 1, 2, 4 or 8: D <= 256) with zeros, and rows that lanes index are padded to DW + 1
 * floats in shared memory (no bank conflicts). fp32 arithmetic, expf.
 *   forward  grid (ceil(T/BR), B*Hq): warp w owns query rows 8w..8w+7, lane j is key j of a
 *            tile for the scores (warp max / sum give the row statistics) and feature lane +
 *            32c of the output accumulators; key tiles stop at the diagonal.
 *   dK, dV   grid (ceil(T/BC), B*Hkv): warp w owns keys 8w..8w+7 of the block's tile and sums
 *            over the rep query heads of its group and the query tiles from the diagonal on;
 *            lane j is query j for P and dS, feature lane + 32c for the accumulators.
 *   dQ       grid (ceil(T/BR), B*Hq): as the forward, recomputing P and dS.
 * No atomics: dQ and dK/dV are separate passes (7 T x T products instead of FA2's 5), so the
 * results are deterministic.
 */
#include "cuda_portable.h"

#include "attn_common.cuh"

#define BR 32
#define BC 32
#define WARPS 4
#define RW 8 /* rows (or keys) per warp */
#define THREADS (32 * WARPS)

/* dst[r][d] (row stride ld) = src row (row0 + r) feature d, 0 outside [0, nrows) x [0, D). */
template <typename T>
static __device__ void load_tile(float *dst, int ld, const T *src, int64_t stride, int64_t row0,
                                 int64_t nrows, int64_t D, int DW)
{
    for (int idx = threadIdx.x; idx < 32 * DW; idx += blockDim.x) {
        int r = idx / DW, d = idx - r * DW;
        int64_t row = row0 + r;
        dst[r * ld + d] = row < nrows && d < D ? mgk_ld(src + row * stride + d) : 0.0f;
    }
}

/* Adds mul * acc[i][c] into feature c * 32 + lane (< D) of rows r0 + i (< nrows) of a
 * (B, T, H, D) tensor: base points at the (b, 0, head) row, stride = H * D. */
template <typename T, int DC>
static __device__ inline void add_rows(T *base, int64_t stride, int64_t r0, int64_t nrows,
                                       int64_t D, const float (&acc)[RW][DC], float mul)
{
    int lane = threadIdx.x & 31;
    for (int i = 0; i < RW; i++) {
        if (r0 + i >= nrows) continue;
        T *row = base + (r0 + i) * stride;
        for (int c = 0; c < DC; c++) {
            int64_t d = c * 32 + lane;
            if (d < D) mgk_st(row + d, mgk_ld(row + d) + acc[i][c] * mul);
        }
    }
}

template <typename T, int DC>
static __global__ void attn_fwd_kernel(T *out, float *saved, const T *q, const T *kk, const T *v,
                                       const attn_args a)
{
    const int DW = 32 * DC, DP = DW + 1;
    MGK_DYN_SHARED(float, sm);
    float *Qs = sm, *Ks = Qs + BR * DW, *Vs = Ks + BC * DP, *Ps = Vs + BC * DW;
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    int64_t rep = a.Hq / a.Hkv, b = blockIdx.y / a.Hq, h = blockIdx.y % a.Hq, t0 = blockIdx.x * BR;
    const T *qb = q + (b * a.T * a.Hq + h) * a.D;
    const T *kb = kk + (b * a.T * a.Hkv + h / rep) * a.D,
            *vb = v + (b * a.T * a.Hkv + h / rep) * a.D;
    float *P = Ps + w * RW * BC;
    load_tile(Qs, DW, qb, a.Hq * a.D, t0, a.T, a.D, DW);
    float m[RW], l[RW], acc[RW][DC];
    for (int i = 0; i < RW; i++) {
        m[i] = -INFINITY, l[i] = 0.0f;
        for (int c = 0; c < DC; c++) acc[i][c] = 0.0f;
    }
    int64_t kend = t0 + BR < a.T ? t0 + BR : a.T;
    for (int64_t s0 = 0; s0 < kend; s0 += BC) {
        __syncthreads();
        load_tile(Ks, DP, kb, a.Hkv * a.D, s0, a.T, a.D, DW);
        load_tile(Vs, DW, vb, a.Hkv * a.D, s0, a.T, a.D, DW);
        __syncthreads();
        float sc[RW];
        for (int i = 0; i < RW; i++) sc[i] = 0.0f;
        for (int d = 0; d < DW; d++) {
            float kv = Ks[lane * DP + d];
            for (int i = 0; i < RW; i++) sc[i] += Qs[(w * RW + i) * DW + d] * kv;
        }
        for (int i = 0; i < RW; i++) {
            int64_t t = t0 + w * RW + i;
            int vis = visible(a, b, s0 + lane, t);
            float x = vis ? sc[i] * a.scale : -INFINITY;
            float mn = fmaxf(m[i], mgk_warp_max(x));
            float p = vis ? expf(x - mn) : 0.0f;
            float alpha = m[i] == -INFINITY ? 0.0f : expf(m[i] - mn);
            l[i] = l[i] * alpha + mgk_warp_sum(p);
            m[i] = mn;
            for (int c = 0; c < DC; c++) acc[i][c] *= alpha;
            P[i * BC + lane] = p;
        }
        __syncwarp(MGK_FULL_MASK);
        for (int j = 0; j < BC; j++)
            for (int i = 0; i < RW; i++) {
                float p = P[i * BC + j];
                for (int c = 0; c < DC; c++) acc[i][c] += p * Vs[j * DW + c * 32 + lane];
            }
        __syncwarp(MGK_FULL_MASK);
    }
    float *lse = saved, *ocopy = saved + a.B * a.Hq * a.T;
    for (int i = 0; i < RW; i++) {
        int64_t t = t0 + w * RW + i;
        if (t >= a.T) continue;
        int64_t o = ((b * a.T + t) * a.Hq + h) * a.D;
        for (int c = 0; c < DC; c++) {
            int64_t d = c * 32 + lane;
            if (d < a.D) {
                float y = acc[i][c] / l[i];
                mgk_st(out + o + d, y);
                ocopy[o + d] = y;
            }
        }
        if (lane == 0) lse[(b * a.Hq + h) * a.T + t] = m[i] + logf(l[i]);
    }
}

template <typename T, int DC>
static __global__ void attn_bwd_kv_kernel(T *dk, T *dv, const T *dout, const float *lse,
                                          const float *delta, const T *q, const T *kk,
                                          const T *v, const attn_args a)
{
    const int DW = 32 * DC, DP = DW + 1;
    MGK_DYN_SHARED(float, sm);
    float *Qs = sm, *dOs = Qs + BR * DP, *Ks = dOs + BR * DP, *Vs = Ks + BC * DW;
    float *Ps = Vs + BC * DW, *dSs = Ps + WARPS * RW * 32, *rowst = dSs + WARPS * RW * 32;
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    int64_t rep = a.Hq / a.Hkv, b = blockIdx.y / a.Hkv, g = blockIdx.y % a.Hkv;
    int64_t s0 = blockIdx.x * BC;
    load_tile(Ks, DW, kk + (b * a.T * a.Hkv + g) * a.D, a.Hkv * a.D, s0, a.T, a.D, DW);
    load_tile(Vs, DW, v + (b * a.T * a.Hkv + g) * a.D, a.Hkv * a.D, s0, a.T, a.D, DW);
    float *P = Ps + w * RW * 32, *dS = dSs + w * RW * 32;
    float adk[RW][DC], adv[RW][DC];
    for (int i = 0; i < RW; i++)
        for (int c = 0; c < DC; c++) adk[i][c] = 0.0f, adv[i][c] = 0.0f;
    for (int64_t h = g * rep; h < (g + 1) * rep; h++) {
        const T *qb = q + (b * a.T * a.Hq + h) * a.D, *dob = dout + (b * a.T * a.Hq + h) * a.D;
        for (int64_t t0 = s0 / BR * BR; t0 < a.T; t0 += BR) {
            __syncthreads();
            load_tile(Qs, DP, qb, a.Hq * a.D, t0, a.T, a.D, DW);
            load_tile(dOs, DP, dob, a.Hq * a.D, t0, a.T, a.D, DW);
            if (threadIdx.x < BR) {
                int64_t t = t0 + threadIdx.x, o = (b * a.Hq + h) * a.T + t;
                rowst[threadIdx.x] = t < a.T ? lse[o] : 0.0f;
                rowst[BR + threadIdx.x] = t < a.T ? delta[o] : 0.0f;
            }
            __syncthreads();
            float sc[RW], dp[RW];
            for (int i = 0; i < RW; i++) sc[i] = 0.0f, dp[i] = 0.0f;
            for (int d = 0; d < DW; d++) {
                float qv = Qs[lane * DP + d], dov = dOs[lane * DP + d];
                for (int i = 0; i < RW; i++) {
                    sc[i] += qv * Ks[(w * RW + i) * DW + d];
                    dp[i] += dov * Vs[(w * RW + i) * DW + d];
                }
            }
            int64_t t = t0 + lane;
            for (int i = 0; i < RW; i++) {
                int vis = visible(a, b, s0 + w * RW + i, t);
                float p = vis ? expf(sc[i] * a.scale - rowst[lane]) : 0.0f;
                P[i * 32 + lane] = p;
                dS[i * 32 + lane] = p * (dp[i] - rowst[BR + lane]);
            }
            __syncwarp(MGK_FULL_MASK);
            for (int j = 0; j < BR; j++)
                for (int i = 0; i < RW; i++) {
                    float p = P[i * 32 + j], ds = dS[i * 32 + j];
                    for (int c = 0; c < DC; c++) {
                        adv[i][c] += p * dOs[j * DP + c * 32 + lane];
                        adk[i][c] += ds * Qs[j * DP + c * 32 + lane];
                    }
                }
            __syncwarp(MGK_FULL_MASK);
        }
    }
    int64_t kvo = (b * a.T * a.Hkv + g) * a.D;
    add_rows(dk + kvo, a.Hkv * a.D, s0 + w * RW, a.T, a.D, adk, a.scale);
    add_rows(dv + kvo, a.Hkv * a.D, s0 + w * RW, a.T, a.D, adv, 1.0f);
}

template <typename T, int DC>
static __global__ void attn_bwd_q_kernel(T *dq, const T *dout, const float *lse,
                                         const float *delta, const T *q, const T *kk, const T *v,
                                         const attn_args a)
{
    const int DW = 32 * DC, DP = DW + 1;
    MGK_DYN_SHARED(float, sm);
    float *Qs = sm, *dOs = Qs + BR * DW, *Ks = dOs + BR * DW, *Vs = Ks + BC * DP;
    float *dSs = Vs + BC * DP;
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5;
    int64_t rep = a.Hq / a.Hkv, b = blockIdx.y / a.Hq, h = blockIdx.y % a.Hq, t0 = blockIdx.x * BR;
    const T *kb = kk + (b * a.T * a.Hkv + h / rep) * a.D,
            *vb = v + (b * a.T * a.Hkv + h / rep) * a.D;
    load_tile(Qs, DW, q + (b * a.T * a.Hq + h) * a.D, a.Hq * a.D, t0, a.T, a.D, DW);
    load_tile(dOs, DW, dout + (b * a.T * a.Hq + h) * a.D, a.Hq * a.D, t0, a.T, a.D, DW);
    float *dS = dSs + w * RW * 32, rl[RW], rd[RW], adq[RW][DC];
    for (int i = 0; i < RW; i++) {
        int64_t t = t0 + w * RW + i, o = (b * a.Hq + h) * a.T + t;
        rl[i] = t < a.T ? lse[o] : 0.0f;
        rd[i] = t < a.T ? delta[o] : 0.0f;
        for (int c = 0; c < DC; c++) adq[i][c] = 0.0f;
    }
    int64_t kend = t0 + BR < a.T ? t0 + BR : a.T;
    for (int64_t s0 = 0; s0 < kend; s0 += BC) {
        __syncthreads();
        load_tile(Ks, DP, kb, a.Hkv * a.D, s0, a.T, a.D, DW);
        load_tile(Vs, DP, vb, a.Hkv * a.D, s0, a.T, a.D, DW);
        __syncthreads();
        float sc[RW], dp[RW];
        for (int i = 0; i < RW; i++) sc[i] = 0.0f, dp[i] = 0.0f;
        for (int d = 0; d < DW; d++) {
            float kv = Ks[lane * DP + d], vv = Vs[lane * DP + d];
            for (int i = 0; i < RW; i++) {
                sc[i] += Qs[(w * RW + i) * DW + d] * kv;
                dp[i] += dOs[(w * RW + i) * DW + d] * vv;
            }
        }
        for (int i = 0; i < RW; i++) {
            int vis = visible(a, b, s0 + lane, t0 + w * RW + i);
            float p = vis ? expf(sc[i] * a.scale - rl[i]) : 0.0f;
            dS[i * 32 + lane] = p * (dp[i] - rd[i]);
        }
        __syncwarp(MGK_FULL_MASK);
        for (int j = 0; j < BC; j++)
            for (int i = 0; i < RW; i++) {
                float ds = dS[i * 32 + j];
                for (int c = 0; c < DC; c++) adq[i][c] += ds * Ks[j * DP + c * 32 + lane];
            }
        __syncwarp(MGK_FULL_MASK);
    }
    add_rows(dq + (b * a.T * a.Hq + h) * a.D, a.Hq * a.D, t0 + w * RW, a.T, a.D, adq, a.scale);
}

/* ---- launchers ---------------------------------------------------------------------------- */

static size_t fwd_smem(int DC)
{
    int DW = 32 * DC;
    return (size_t)(BR * DW + BC * (DW + 1) + BC * DW + WARPS * RW * BC) * sizeof(float);
}
static size_t kv_smem(int DC)
{
    int DW = 32 * DC;
    return (size_t)(2 * BR * (DW + 1) + 2 * BC * DW + 2 * WARPS * RW * 32 + 2 * BR) * sizeof(float);
}
static size_t q_smem(int DC)
{
    int DW = 32 * DC;
    return (size_t)(2 * BR * DW + 2 * BC * (DW + 1) + WARPS * RW * 32) * sizeof(float);
}

template <typename T, int DC>
static void attn_fwd_dc(const mg_kctx *k, const attn_args &a, T *out, float *saved, const T *q,
                        const T *kk, const T *v)
{
    size_t sm = fwd_smem(DC);
    set_smem_limit(attn_fwd_kernel<T, DC>, sm);
    dim3 grid((unsigned)((a.T + BR - 1) / BR), (unsigned)(a.B * a.Hq));
    MGK_LAUNCH((attn_fwd_kernel<T, DC>), grid, THREADS, sm, mgk_stream(k), out, saved, q, kk, v,
               a);
    MGK_LAUNCH_CHECK();
}

template <typename T, int DC>
static void attn_bwd_dc(const mg_kctx *k, const attn_args &a, T *dq, T *dk, T *dv,
                        const T *dout, const float *saved, const float *delta, const T *q,
                        const T *kk, const T *v)
{
    size_t smkv = kv_smem(DC), smq = q_smem(DC);
    set_smem_limit(attn_bwd_kv_kernel<T, DC>, smkv);
    set_smem_limit(attn_bwd_q_kernel<T, DC>, smq);
    dim3 gkv((unsigned)((a.T + BC - 1) / BC), (unsigned)(a.B * a.Hkv));
    MGK_LAUNCH((attn_bwd_kv_kernel<T, DC>), gkv, THREADS, smkv, mgk_stream(k), dk, dv, dout, saved,
               delta, q, kk, v, a);
    MGK_LAUNCH_CHECK();
    dim3 gq((unsigned)((a.T + BR - 1) / BR), (unsigned)(a.B * a.Hq));
    MGK_LAUNCH((attn_bwd_q_kernel<T, DC>), gq, THREADS, smq, mgk_stream(k), dq, dout, saved, delta,
               q, kk, v, a);
    MGK_LAUNCH_CHECK();
}

static int dchunks(int64_t D)
{
    return D <= 32 ? 1 : D <= 64 ? 2 : D <= 128 ? 4 : 8;
}

template <typename T>
static void attn_fwd(const mg_kctx *k, const mgk_attn_dims *d, T *out, float *saved, const T *q,
                     const T *kk, const T *v, const int32_t *seg)
{
    if (d->B * d->T * d->Hq <= 0) return;
    attn_args a = make_args(d, seg);
    switch (dchunks(d->D)) {
    case 1: attn_fwd_dc<T, 1>(k, a, out, saved, q, kk, v); break;
    case 2: attn_fwd_dc<T, 2>(k, a, out, saved, q, kk, v); break;
    case 4: attn_fwd_dc<T, 4>(k, a, out, saved, q, kk, v); break;
    default: attn_fwd_dc<T, 8>(k, a, out, saved, q, kk, v); break;
    }
}

template <typename T>
static void attn_bwd(const mg_kctx *k, const mgk_attn_dims *d, T *dq, T *dk, T *dv,
                     const T *dout, const float *saved, const T *q, const T *kk, const T *v,
                     const int32_t *seg)
{
    if (d->B * d->T * d->Hq <= 0) return;
    attn_args a = make_args(d, seg);
    const float *cdelta = attn_delta(k, a, dout, saved);
    switch (dchunks(d->D)) {
    case 1: attn_bwd_dc<T, 1>(k, a, dq, dk, dv, dout, saved, cdelta, q, kk, v); break;
    case 2: attn_bwd_dc<T, 2>(k, a, dq, dk, dv, dout, saved, cdelta, q, kk, v); break;
    case 4: attn_bwd_dc<T, 4>(k, a, dq, dk, dv, dout, saved, cdelta, q, kk, v); break;
    default: attn_bwd_dc<T, 8>(k, a, dq, dk, dv, dout, saved, cdelta, q, kk, v); break;
    }
}

extern "C" int64_t mgk_cuda_attn_saved_numel(const mgk_attn_dims *d)
{
    return d->B * d->Hq * d->T * (1 + d->D);
}

extern "C" int64_t mgk_cuda_attn_scratch_numel(const mgk_attn_dims *d)
{
    return d->B * d->Hq * d->T;
}

extern "C" void mgk_cuda_attn_fwd(const mg_kctx *k, const mgk_attn_dims *d, float *out,
                                  float *saved, const float *q, const float *kk, const float *v,
                                  const int32_t *seg)
{
    attn_fwd(k, d, out, saved, q, kk, v, seg);
}

extern "C" void mgk_cuda_attn_bwd(const mg_kctx *k, const mgk_attn_dims *d, float *dq, float *dk,
                                  float *dv, const float *dout, const float *saved,
                                  const float *q, const float *kk, const float *v,
                                  const int32_t *seg)
{
    attn_bwd(k, d, dq, dk, dv, dout, saved, q, kk, v, seg);
}

extern "C" void mgk_cuda_attn_fwd_h16_portable(const mg_kctx *k, const mgk_attn_dims *d,
                                               mgk_h16 *out, float *saved, const mgk_h16 *q,
                                               const mgk_h16 *kk, const mgk_h16 *v,
                                               const int32_t *seg)
{
    MGK_BY_HALF(k, T16,
                attn_fwd(k, d, mgk_as<T16>(out), saved, mgk_as<T16>(q), mgk_as<T16>(kk),
                         mgk_as<T16>(v), seg));
}

extern "C" void mgk_cuda_attn_bwd_h16_portable(const mg_kctx *k, const mgk_attn_dims *d,
                                               mgk_h16 *dq, mgk_h16 *dk, mgk_h16 *dv,
                                               const mgk_h16 *dout, const float *saved,
                                               const mgk_h16 *q, const mgk_h16 *kk,
                                               const mgk_h16 *v, const int32_t *seg)
{
    MG_ASSERT(k->scratch_numel >= mgk_cuda_attn_scratch_numel(d));
    MGK_BY_HALF(k, T16,
                attn_bwd(k, d, mgk_as<T16>(dq), mgk_as<T16>(dk), mgk_as<T16>(dv), mgk_as<T16>(dout),
                         saved, mgk_as<T16>(q), mgk_as<T16>(kk), mgk_as<T16>(v), seg));
}

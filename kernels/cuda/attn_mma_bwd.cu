/* attn_mma_bwd.cu — the bf16 attention backward on tensor cores with register accumulators
 * (attn_mma.cuh), the default of mgk_cuda_attn_bwd_h16 where it serves. delta = rowsum(dout *
 * out) first (attn_common.cuh), then two passes without atomics (7 T x T products instead of
 * FlashAttention-2's 5):
 *   dK, dV   grid (ceil(T/64), B*Hkv): warp w owns keys 16w..16w+15 of the block's 64; over
 *            the group's query heads and the query tiles of 64 from the diagonal, in halves of
 *            32 queries: S^T = K Q^T, dP^T = V dO^T, P^T, dS^T = P^T (dP^T - delta) in
 *            registers, dV += P^T dO, dK += dS^T Q (accumulators 2 x 16 x D per warp).
 *   dQ       grid (ceil(T/128), B*Hq), the forward's shape: warp w owns query rows
 *            32w..32w+31 (two accumulator tiles); per key tile of 32 up to the diagonal: S, dP,
 *            dS in registers, dQ += dS K.
 * Shared memory at D = 128: 102 KB each; registers (sm_90) 246 dK/dV, 254 dQ, no spills.
 */
#include "cuda_portable.h"

#include "attn_mma.cuh"

/* The backward's two score products for one warp: x = A1 B1^T and y = A2 B2^T (16 x 32, fp32)
 * with A rows arow..arow+15 and B rows brow..brow+31 of DK-wide tiles (row stride DK + 8). */
template <int DK>
static __device__ void products_16x32(float (&x)[4][4], float (&y)[4][4], const bf16 *A1,
                                      const bf16 *A2, int arow, const bf16 *B1, const bf16 *B2,
                                      int brow)
{
    const int LD = DK + 8;
    for (int j = 0; j < 4; j++)
        for (int i = 0; i < 4; i++) x[j][i] = 0.0f, y[j][i] = 0.0f;
    for (int kx = 0; kx < DK / 16; kx++) {
        uint32_t a1[4], a2[4];
        ldsm_x4(a1, ldsm_rows_first(A1, LD, arow, 16 * kx));
        ldsm_x4(a2, ldsm_rows_first(A2, LD, arow, 16 * kx));
        for (int np = 0; np < 2; np++) {
            uint32_t b1[4], b2[4];
            ldsm_x4(b1, ldsm_cols_first(B1, LD, brow + 16 * np, 16 * kx));
            ldsm_x4(b2, ldsm_cols_first(B2, LD, brow + 16 * np, 16 * kx));
            mma_16816(x[2 * np], a1, b1[0], b1[1]);
            mma_16816(x[2 * np + 1], a1, b1[2], b1[3]);
            mma_16816(y[2 * np], a2, b2[0], b2[1]);
            mma_16816(y[2 * np + 1], a2, b2[2], b2[3]);
        }
    }
}

/* The query tile `it` of the dK/dV pass: query head and first row. */
struct kv_step {
    int64_t h, t0;
};
static __device__ inline kv_step kv_step_at(int it, int ntq, int64_t g, int64_t rep,
                                            int64_t s0)
{
    kv_step st = {g * rep + it / ntq, s0 + (int64_t)(it % ntq) * MB};
    return st;
}

/* Q, dO rows of step st into buffer slots and the rows' lse (times log2 e) and delta. */
template <int DK>
static __device__ void kv_load_step(bf16 *Qt, bf16 *dOt, float *stats, const bf16 *q,
                                    const bf16 *dout, const float *lse, const float *delta,
                                    const attn_args &a, int64_t b, kv_step st)
{
    int64_t qo = (b * a.T * a.Hq + st.h) * DK;
    tile_async<DK>(Qt, q + qo, a.Hq * DK, st.t0, a.T);
    tile_async<DK>(dOt, dout + qo, a.Hq * DK, st.t0, a.T);
    for (int i = threadIdx.x; i < MB; i += blockDim.x) {
        int64_t t = st.t0 + i, o = (b * a.Hq + st.h) * a.T + t;
        stats[i] = t < a.T ? lse[o] * MLOG2E : 0.0f;
        stats[MB + i] = t < a.T ? delta[o] : 0.0f;
    }
}

template <int DK>
static __global__ void __launch_bounds__(MTHREADS)
    attn_bwd_kv_mma_kernel(bf16 *dk, bf16 *dv, const bf16 *dout, const float *lse,
                           const float *delta, const bf16 *q, const bf16 *kk, const bf16 *v,
                           const attn_args a)
{
    const int LD = DK + 8;
    MGK_DYN_SHARED(bf16, sm);
    bf16 *Ks = sm, *Vs = Ks + MB * LD, *Qs = Vs + MB * LD, *dOs = Qs + 2 * MB * LD;
    float *stats = reinterpret_cast<float *>(dOs + 2 * MB * LD); /* [2][lse 64 | delta 64] */
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, u = lane & 3;
    int64_t rep = a.Hq / a.Hkv, b = blockIdx.y / a.Hkv, gh = blockIdx.y % a.Hkv;
    int64_t s0 = (int64_t)blockIdx.x * MB, kvo = (b * a.T * a.Hkv + gh) * DK;
    int ntq = (int)((a.T - s0 + MB - 1) / MB), nit = (int)rep * ntq;
    tile_async<DK>(Ks, kk + kvo, a.Hkv * DK, s0, a.T);
    tile_async<DK>(Vs, v + kvo, a.Hkv * DK, s0, a.T);
    kv_load_step<DK>(Qs, dOs, stats, q, dout, lse, delta, a, b, kv_step_at(0, ntq, gh, rep, s0));
    cp_async_commit();
    const float sl2 = a.scale * MLOG2E;
    float adk[DK / 8][4], adv[DK / 8][4];
    for (int n = 0; n < DK / 8; n++)
        for (int i = 0; i < 4; i++) adk[n][i] = 0.0f, adv[n][i] = 0.0f;
    int64_t key[2] = {s0 + 16 * w + g, s0 + 16 * w + g + 8};
    for (int it = 0; it < nit; it++) {
        kv_step st = kv_step_at(it, ntq, gh, rep, s0);
        cp_async_wait_all();
        __syncthreads();
        if (it + 1 < nit) {
            int nb = (it + 1) & 1;
            kv_load_step<DK>(Qs + nb * MB * LD, dOs + nb * MB * LD, stats + nb * 2 * MB, q, dout,
                             lse, delta, a, b, kv_step_at(it + 1, ntq, gh, rep, s0));
            cp_async_commit();
        }
        const bf16 *Qt = Qs + (it & 1) * MB * LD, *dOt = dOs + (it & 1) * MB * LD;
        const float *ls = stats + (it & 1) * 2 * MB, *dl = ls + MB;
        for (int kh = 0; kh < 2; kh++) {
            int c0 = 32 * kh;
            float sc[4][4], dp[4][4];
            products_16x32<DK>(sc, dp, Ks, Vs, 16 * w, Qt, dOt, c0);
            int64_t q0 = st.t0 + c0;
            int need = a.seg || s0 + 16 * w + 15 > q0 || q0 + 32 > a.T || s0 + MB > a.T;
            for (int j = 0; j < 4; j++)
                for (int i = 0; i < 4; i++) {
                    int col = c0 + 8 * j + 2 * u + (i & 1);
                    float p = exp2f(sc[j][i] * sl2 - ls[col]);
                    if (need && !visible(a, b, key[i >> 1], st.t0 + col)) p = 0.0f;
                    sc[j][i] = p;
                    dp[j][i] = p * (dp[j][i] - dl[col]);
                }
            uint32_t pa[2][4], sa[2][4];
            acc_to_a(pa, sc);
            acc_to_a(sa, dp);
            for (int kx = 0; kx < 2; kx++)
                for (int dd = 0; dd < DK / 16; dd++) {
                    uint32_t of[4], qf[4];
                    ldsm_x4_t(of, ldsm_rows_first(dOt, LD, c0 + 16 * kx, 16 * dd));
                    ldsm_x4_t(qf, ldsm_rows_first(Qt, LD, c0 + 16 * kx, 16 * dd));
                    mma_16816(adv[2 * dd], pa[kx], of[0], of[1]);
                    mma_16816(adv[2 * dd + 1], pa[kx], of[2], of[3]);
                    mma_16816(adk[2 * dd], sa[kx], qf[0], qf[1]);
                    mma_16816(adk[2 * dd + 1], sa[kx], qf[2], qf[3]);
                }
        }
    }
    add_acc_rows<DK>(dk + kvo, a.Hkv * DK, s0 + 16 * w, a.T, adk, a.scale);
    add_acc_rows<DK>(dv + kvo, a.Hkv * DK, s0 + 16 * w, a.T, adv, 1.0f);
}

/* The dQ pass has the forward's shape: FM query rows per block, FMT accumulator tiles per warp
 * (each K and V fragment feeds FMT products), key tiles of FN. */
template <int DK>
static __global__ void __launch_bounds__(MTHREADS)
    attn_bwd_q_mma_kernel(bf16 *dq, const bf16 *dout, const float *lse, const float *delta,
                          const bf16 *q, const bf16 *kk, const bf16 *v, const attn_args a)
{
    const int LD = DK + 8;
    MGK_DYN_SHARED(bf16, sm);
    bf16 *Qs = sm, *dOs = Qs + FM * LD, *Ks = dOs + FM * LD, *Vs = Ks + 2 * FN * LD;
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, u = lane & 3;
    int64_t rep = a.Hq / a.Hkv, b = blockIdx.y / a.Hq, h = blockIdx.y % a.Hq;
    int64_t t0 = (int64_t)(gridDim.x - 1 - blockIdx.x) * FM, wrow0 = t0 + 16 * FMT * w;
    int64_t qo = (b * a.T * a.Hq + h) * DK, kvo = (b * a.T * a.Hkv + h / rep) * DK;
    int64_t kstride = a.Hkv * DK;
    int64_t kend = t0 + FM < a.T ? t0 + FM : a.T;
    int ntiles = (int)((kend + FN - 1) / FN);
    tile_async<DK, FM>(Qs, q + qo, a.Hq * DK, t0, a.T);
    tile_async<DK, FM>(dOs, dout + qo, a.Hq * DK, t0, a.T);
    tile_async<DK, FN>(Ks, kk + kvo, kstride, 0, a.T);
    tile_async<DK, FN>(Vs, v + kvo, kstride, 0, a.T);
    cp_async_commit();
    const float sl2 = a.scale * MLOG2E;
    float rl[FMT][2], rd[FMT][2], adq[FMT][DK / 8][4];
#pragma unroll
    for (int mt = 0; mt < FMT; mt++) {
#pragma unroll
        for (int hh = 0; hh < 2; hh++) {
            int64_t t = wrow0 + 16 * mt + 8 * hh + g, o = (b * a.Hq + h) * a.T + t;
            rl[mt][hh] = t < a.T ? lse[o] * MLOG2E : 0.0f;
            rd[mt][hh] = t < a.T ? delta[o] : 0.0f;
        }
#pragma unroll
        for (int n = 0; n < DK / 8; n++)
#pragma unroll
            for (int i = 0; i < 4; i++) adq[mt][n][i] = 0.0f;
    }
    for (int n = 0; n < ntiles; n++) {
        cp_async_wait_all();
        __syncthreads();
        if (n + 1 < ntiles) {
            int nb = (n + 1) & 1;
            tile_async<DK, FN>(Ks + nb * FN * LD, kk + kvo, kstride, (int64_t)(n + 1) * FN, a.T);
            tile_async<DK, FN>(Vs + nb * FN * LD, v + kvo, kstride, (int64_t)(n + 1) * FN, a.T);
            cp_async_commit();
        }
        int64_t k0 = (int64_t)n * FN;
        if (k0 > wrow0 + 16 * FMT - 1) continue; /* every key above this warp's rows */
        const bf16 *Kt = Ks + (n & 1) * FN * LD, *Vt = Vs + (n & 1) * FN * LD;
        float sc[FMT][FN / 8][4], dp[FMT][FN / 8][4];
#pragma unroll
        for (int mt = 0; mt < FMT; mt++)
#pragma unroll
            for (int j = 0; j < FN / 8; j++)
#pragma unroll
                for (int i = 0; i < 4; i++) sc[mt][j][i] = 0.0f, dp[mt][j][i] = 0.0f;
#pragma unroll
        for (int kx = 0; kx < DK / 16; kx++) {
            uint32_t qf[FMT][4], of[FMT][4];
#pragma unroll
            for (int mt = 0; mt < FMT; mt++) {
                ldsm_x4(qf[mt], ldsm_rows_first(Qs, LD, 16 * (FMT * w + mt), 16 * kx));
                ldsm_x4(of[mt], ldsm_rows_first(dOs, LD, 16 * (FMT * w + mt), 16 * kx));
            }
#pragma unroll
            for (int np = 0; np < FN / 16; np++) {
                uint32_t kf[4], vf[4];
                ldsm_x4(kf, ldsm_cols_first(Kt, LD, 16 * np, 16 * kx));
                ldsm_x4(vf, ldsm_cols_first(Vt, LD, 16 * np, 16 * kx));
#pragma unroll
                for (int mt = 0; mt < FMT; mt++) {
                    mma_16816(sc[mt][2 * np], qf[mt], kf[0], kf[1]);
                    mma_16816(sc[mt][2 * np + 1], qf[mt], kf[2], kf[3]);
                    mma_16816(dp[mt][2 * np], of[mt], vf[0], vf[1]);
                    mma_16816(dp[mt][2 * np + 1], of[mt], vf[2], vf[3]);
                }
            }
        }
        int need = a.seg || k0 + FN - 1 > wrow0 || k0 + FN > a.T || wrow0 + 16 * FMT > a.T;
        uint32_t sa[FMT][FN / 16][4];
#pragma unroll
        for (int mt = 0; mt < FMT; mt++) {
#pragma unroll
            for (int j = 0; j < FN / 8; j++)
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    int hh = i >> 1;
                    float p = exp2f(sc[mt][j][i] * sl2 - rl[mt][hh]);
                    int64_t t = wrow0 + 16 * mt + 8 * hh + g;
                    if (need && !visible(a, b, k0 + 8 * j + 2 * u + (i & 1), t)) p = 0.0f;
                    dp[mt][j][i] = p * (dp[mt][j][i] - rd[mt][hh]);
                }
#pragma unroll
            for (int kx = 0; kx < FN / 16; kx++) {
                acc_pair_to_a(sa[mt][kx], dp[mt][2 * kx], dp[mt][2 * kx + 1]);
            }
        }
        /* dQ += dS K */
#pragma unroll
        for (int kx = 0; kx < FN / 16; kx++)
#pragma unroll
            for (int dd = 0; dd < DK / 16; dd++) {
                uint32_t kf[4];
                ldsm_x4_t(kf, ldsm_rows_first(Kt, LD, 16 * kx, 16 * dd));
#pragma unroll
                for (int mt = 0; mt < FMT; mt++) {
                    mma_16816(adq[mt][2 * dd], sa[mt][kx], kf[0], kf[1]);
                    mma_16816(adq[mt][2 * dd + 1], sa[mt][kx], kf[2], kf[3]);
                }
            }
    }
#pragma unroll
    for (int mt = 0; mt < FMT; mt++)
        add_acc_rows<DK>(dq + qo, a.Hq * DK, wrow0 + 16 * mt, a.T, adq[mt], a.scale);
}

/* ---- launchers ---------------------------------------------------------------------------- */

template <int DK>
static size_t mma_smem(int tiles)
{
    return (size_t)tiles * MB * (DK + 8) * sizeof(bf16);
}

template <int DK>
static void attn_bwd_mma(const mg_kctx *k, const attn_args &a, bf16 *dq, bf16 *dk, bf16 *dv,
                         const bf16 *dout, const float *saved, const float *delta, const bf16 *q,
                         const bf16 *kk, const bf16 *v)
{
    size_t smkv = mma_smem<DK>(6) + 4 * MB * sizeof(float);
    size_t smq = (size_t)(2 * FM + 4 * FN) * (DK + 8) * sizeof(bf16);
    set_smem_limit(attn_bwd_kv_mma_kernel<DK>, smkv);
    set_smem_limit(attn_bwd_q_mma_kernel<DK>, smq);
    dim3 gkv((unsigned)((a.T + MB - 1) / MB), (unsigned)(a.B * a.Hkv));
    MGK_LAUNCH(attn_bwd_kv_mma_kernel<DK>, gkv, MTHREADS, smkv, mgk_stream(k), dk, dv, dout,
               saved, delta, q, kk, v, a);
    MGK_LAUNCH_CHECK();
    dim3 gq((unsigned)((a.T + FM - 1) / FM), (unsigned)(a.B * a.Hq));
    MGK_LAUNCH(attn_bwd_q_mma_kernel<DK>, gq, MTHREADS, smq, mgk_stream(k), dq, dout, saved,
               delta, q, kk, v, a);
    MGK_LAUNCH_CHECK();
}

extern "C" void mgk_cuda_attn_bwd_h16_mma(const mg_kctx *k, const mgk_attn_dims *d,
                                          mgk_h16 *dq, mgk_h16 *dk, mgk_h16 *dv,
                                          const mgk_h16 *dout, const float *saved,
                                          const mgk_h16 *q, const mgk_h16 *kk,
                                          const mgk_h16 *v, const int32_t *seg)
{
    if (k->half != MGK_HALF_BF16 || !mma_serves(d, dout, q, kk, v) || !mgk_aligned16(dq) ||
        !mgk_aligned16(dk) || !mgk_aligned16(dv)) {
        mgk_cuda_attn_bwd_h16_portable(k, d, dq, dk, dv, dout, saved, q, kk, v, seg);
        return;
    }
    if (d->B * d->T * d->Hq <= 0) return;
    MG_ASSERT(k->scratch_numel >= mgk_cuda_attn_scratch_numel(d));
    attn_args a = make_args(d, seg);
    const float *delta = attn_delta(k, a, mgk_bf(dout), saved);
    if (d->D == 64)
        attn_bwd_mma<64>(k, a, mgk_bf(dq), mgk_bf(dk), mgk_bf(dv), mgk_bf(dout), saved, delta,
                         mgk_bf(q), mgk_bf(kk), mgk_bf(v));
    else
        attn_bwd_mma<128>(k, a, mgk_bf(dq), mgk_bf(dk), mgk_bf(dv), mgk_bf(dout), saved, delta,
                          mgk_bf(q), mgk_bf(kk), mgk_bf(v));
}

/* The bf16 attention backward of the GPU path: these kernels where they serve, else the
 * portable ones. */
extern "C" void mgk_cuda_attn_bwd_h16(const mg_kctx *k, const mgk_attn_dims *d, mgk_h16 *dq,
                                      mgk_h16 *dk, mgk_h16 *dv, const mgk_h16 *dout,
                                      const float *saved, const mgk_h16 *q, const mgk_h16 *kk,
                                      const mgk_h16 *v, const int32_t *seg)
{
    mgk_cuda_attn_bwd_h16_mma(k, d, dq, dk, dv, dout, saved, q, kk, v, seg);
}

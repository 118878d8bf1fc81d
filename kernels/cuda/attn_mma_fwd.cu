/* attn_mma_fwd.cu — the bf16 attention forward on tensor cores with register accumulators
 * (attn_mma.cuh), the default of mgk_cuda_attn_fwd_h16 where it serves.
 *
 * Grid (ceil(T/128), B*Hq), heaviest query tiles first; warp w owns query rows 32w..32w+31 (two
 * accumulator tiles, so every K and V fragment read from shared memory feeds two products);
 * per key tile of 32 up to the diagonal (a warp skips the tiles wholly above its rows)
 * S = Q K^T (32 x 32 per warp), the online softmax in registers (row max and sum over the 4
 * lanes of a row by shuffles, exp2 with the scale folded in), O (32 x D per warp, fp32) += P V.
 * Shared memory at D = 128: 68 KB; 254 registers (sm_90), no spills.
 */
#include "cuda_portable.h"

#include "attn_mma.cuh"

template <int DK>
static __global__ void __launch_bounds__(MTHREADS)
    attn_fwd_mma_kernel(bf16 *out, float *saved, const bf16 *q, const bf16 *kk, const bf16 *v,
                        const attn_args a)
{
    const int LD = DK + 8;
    MGK_DYN_SHARED(bf16, sm);
    bf16 *Qs = sm, *Ks = Qs + FM * LD, *Vs = Ks + 2 * FN * LD;
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, u = lane & 3;
    int64_t rep = a.Hq / a.Hkv, b = blockIdx.y / a.Hq, h = blockIdx.y % a.Hq;
    int64_t t0 = (int64_t)(gridDim.x - 1 - blockIdx.x) * FM; /* heaviest tiles first */
    int64_t kstride = a.Hkv * DK, wrow0 = t0 + 16 * FMT * w; /* this warp's first row */
    const bf16 *kb = kk + (b * a.T * a.Hkv + h / rep) * DK,
               *vb = v + (b * a.T * a.Hkv + h / rep) * DK;
    int64_t kend = t0 + FM < a.T ? t0 + FM : a.T;
    int ntiles = (int)((kend + FN - 1) / FN);
    tile_async<DK, FM>(Qs, q + (b * a.T * a.Hq + h) * DK, a.Hq * DK, t0, a.T);
    tile_async<DK, FN>(Ks, kb, kstride, 0, a.T);
    tile_async<DK, FN>(Vs, vb, kstride, 0, a.T);
    cp_async_commit();
    const float sl2 = a.scale * MLOG2E;
    /* per accumulator tile mt and half hh: row wrow0 + 16 mt + 8 hh + g */
    float o[FMT][DK / 8][4], m[FMT][2], l[FMT][2];
#pragma unroll
    for (int mt = 0; mt < FMT; mt++) {
#pragma unroll
        for (int n = 0; n < DK / 8; n++)
#pragma unroll
            for (int i = 0; i < 4; i++) o[mt][n][i] = 0.0f;
        m[mt][0] = m[mt][1] = -INFINITY;
        l[mt][0] = l[mt][1] = 0.0f;
    }
    for (int n = 0; n < ntiles; n++) {
        cp_async_wait_all();
        __syncthreads(); /* tile n is in; every warp is done with tile n - 1 */
        if (n + 1 < ntiles) {
            int nb = (n + 1) & 1;
            tile_async<DK, FN>(Ks + nb * FN * LD, kb, kstride, (int64_t)(n + 1) * FN, a.T);
            tile_async<DK, FN>(Vs + nb * FN * LD, vb, kstride, (int64_t)(n + 1) * FN, a.T);
            cp_async_commit();
        }
        int64_t s0 = (int64_t)n * FN;
        if (s0 > wrow0 + 16 * FMT - 1) continue; /* every key above this warp's rows */
        const bf16 *Kt = Ks + (n & 1) * FN * LD, *Vt = Vs + (n & 1) * FN * LD;
        float s[FMT][FN / 8][4];
#pragma unroll
        for (int mt = 0; mt < FMT; mt++)
#pragma unroll
            for (int j = 0; j < FN / 8; j++)
#pragma unroll
                for (int i = 0; i < 4; i++) s[mt][j][i] = 0.0f;
#pragma unroll
        for (int kx = 0; kx < DK / 16; kx++) {
            uint32_t qf[FMT][4];
#pragma unroll
            for (int mt = 0; mt < FMT; mt++)
                ldsm_x4(qf[mt], ldsm_rows_first(Qs, LD, 16 * (FMT * w + mt), 16 * kx));
#pragma unroll
            for (int np = 0; np < FN / 16; np++) {
                uint32_t kf[4];
                ldsm_x4(kf, ldsm_cols_first(Kt, LD, 16 * np, 16 * kx));
#pragma unroll
                for (int mt = 0; mt < FMT; mt++) {
                    mma_16816(s[mt][2 * np], qf[mt], kf[0], kf[1]);
                    mma_16816(s[mt][2 * np + 1], qf[mt], kf[2], kf[3]);
                }
            }
        }
        /* online softmax over this tile's keys, rows g and g + 8 of each accumulator tile */
        int need = a.seg || s0 + FN - 1 > wrow0 || s0 + FN > a.T;
#pragma unroll
        for (int mt = 0; mt < FMT; mt++) {
            float mx[2] = {m[mt][0], m[mt][1]};
#pragma unroll
            for (int j = 0; j < FN / 8; j++)
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    float x = s[mt][j][i] * sl2;
                    int64_t t = wrow0 + 16 * mt + 8 * (i >> 1) + g;
                    if (need && !visible(a, b, s0 + 8 * j + 2 * u + (i & 1), t)) x = -INFINITY;
                    s[mt][j][i] = x;
                    mx[i >> 1] = fmaxf(mx[i >> 1], x);
                }
            float mu[2], alpha[2];
#pragma unroll
            for (int hh = 0; hh < 2; hh++) {
                mx[hh] = fmaxf(mx[hh], __shfl_xor_sync(MGK_FULL_MASK, mx[hh], 1));
                mx[hh] = fmaxf(mx[hh], __shfl_xor_sync(MGK_FULL_MASK, mx[hh], 2));
                mu[hh] = mx[hh] == -INFINITY ? 0.0f : mx[hh];
                alpha[hh] = exp2f(m[mt][hh] - mu[hh]);
                m[mt][hh] = mx[hh];
                l[mt][hh] *= alpha[hh];
            }
#pragma unroll
            for (int j = 0; j < FN / 8; j++)
#pragma unroll
                for (int i = 0; i < 4; i++) {
                    float p = exp2f(s[mt][j][i] - mu[i >> 1]);
                    l[mt][i >> 1] += p;
                    s[mt][j][i] = p;
                }
#pragma unroll
            for (int n2 = 0; n2 < DK / 8; n2++)
#pragma unroll
                for (int i = 0; i < 4; i++) o[mt][n2][i] *= alpha[i >> 1];
        }
        /* O += P V, P from the score accumulators (16 keys per product) */
#pragma unroll
        for (int kx = 0; kx < FN / 16; kx++) {
            uint32_t pf[FMT][4];
#pragma unroll
            for (int mt = 0; mt < FMT; mt++)
                acc_pair_to_a(pf[mt], s[mt][2 * kx], s[mt][2 * kx + 1]);
#pragma unroll
            for (int dp = 0; dp < DK / 16; dp++) {
                uint32_t vf[4];
                ldsm_x4_t(vf, ldsm_rows_first(Vt, LD, 16 * kx, 16 * dp));
#pragma unroll
                for (int mt = 0; mt < FMT; mt++) {
                    mma_16816(o[mt][2 * dp], pf[mt], vf[0], vf[1]);
                    mma_16816(o[mt][2 * dp + 1], pf[mt], vf[2], vf[3]);
                }
            }
        }
    }
    float *lse = saved, *ocopy = saved + a.B * a.Hq * a.T;
#pragma unroll
    for (int mt = 0; mt < FMT; mt++)
#pragma unroll
        for (int hh = 0; hh < 2; hh++) {
            float lsum = l[mt][hh];
            lsum += __shfl_xor_sync(MGK_FULL_MASK, lsum, 1);
            lsum += __shfl_xor_sync(MGK_FULL_MASK, lsum, 2);
            int64_t t = wrow0 + 16 * mt + 8 * hh + g;
            if (t >= a.T) continue;
            float inv = 1.0f / lsum;
            int64_t o0 = ((b * a.T + t) * a.Hq + h) * DK + 2 * u;
#pragma unroll
            for (int n = 0; n < DK / 8; n++) {
                float y0 = o[mt][n][2 * hh] * inv, y1 = o[mt][n][2 * hh + 1] * inv;
                *reinterpret_cast<__nv_bfloat162 *>(out + o0 + 8 * n) =
                    __floats2bfloat162_rn(y0, y1);
                ocopy[o0 + 8 * n] = y0;
                ocopy[o0 + 8 * n + 1] = y1;
            }
            if (u == 0) lse[(b * a.Hq + h) * a.T + t] = (m[mt][hh] + log2f(lsum)) * MLN2;
        }
}

/* ---- launchers ---------------------------------------------------------------------------- */

template <int DK>
static void attn_fwd_mma(const mg_kctx *k, const attn_args &a, bf16 *out, float *saved,
                         const bf16 *q, const bf16 *kk, const bf16 *v)
{
    size_t sm = (size_t)(FM + 4 * FN) * (DK + 8) * sizeof(bf16);
    set_smem_limit(attn_fwd_mma_kernel<DK>, sm);
    dim3 grid((unsigned)((a.T + FM - 1) / FM), (unsigned)(a.B * a.Hq));
    MGK_LAUNCH(attn_fwd_mma_kernel<DK>, grid, MTHREADS, sm, mgk_stream(k), out, saved, q, kk, v,
               a);
    MGK_LAUNCH_CHECK();
}

extern "C" int mgk_cuda_attn_mma_serves(const mgk_attn_dims *d)
{
    return (d->D == 64 || d->D == 128) && device_has_mma();
}

extern "C" void mgk_cuda_attn_fwd_h16_mma(const mg_kctx *k, const mgk_attn_dims *d,
                                          mgk_h16 *out, float *saved, const mgk_h16 *q,
                                          const mgk_h16 *kk, const mgk_h16 *v,
                                          const int32_t *seg)
{
    if (k->half != MGK_HALF_BF16 || !mma_serves(d, out, q, kk, v)) {
        mgk_cuda_attn_fwd_h16_portable(k, d, out, saved, q, kk, v, seg);
        return;
    }
    if (d->B * d->T * d->Hq <= 0) return;
    attn_args a = make_args(d, seg);
    if (d->D == 64)
        attn_fwd_mma<64>(k, a, mgk_bf(out), saved, mgk_bf(q), mgk_bf(kk), mgk_bf(v));
    else
        attn_fwd_mma<128>(k, a, mgk_bf(out), saved, mgk_bf(q), mgk_bf(kk), mgk_bf(v));
}

/* The bf16 attention of the GPU path: these kernels where they serve, else the portable ones. */
extern "C" void mgk_cuda_attn_fwd_h16(const mg_kctx *k, const mgk_attn_dims *d, mgk_h16 *out,
                                      float *saved, const mgk_h16 *q, const mgk_h16 *kk,
                                      const mgk_h16 *v, const int32_t *seg)
{
    mgk_cuda_attn_fwd_h16_mma(k, d, out, saved, q, kk, v, seg);
}

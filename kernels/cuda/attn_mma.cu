/* attn_mma.cu — bf16 causal grouped-query attention, forward and backward, on tensor cores with
 * register accumulators (mma.sync m16n8k16 and ldmatrix, mma_sm80.cuh): FlashAttention-2's
 * algorithm for D = 64 and 128, with the contract and saved state of the portable kernels
 * (attn.cu: lse, output copy), so any backward follows any forward. The emulator runs these
 * kernels through mma_sm80.cuh's portable versions of the instructions.
 *
 * All three kernels: blocks of 4 warps, tiles in shared memory (bf16 rows padded to D + 8
 * elements: the 8 rows an ldmatrix reads fall in distinct banks), loaded by 16-byte cp.async
 * one tile ahead of their use (double buffers). A lane holds rows g and g + 8 (g = lane / 4)
 * of every 16 x 8 accumulator tile, columns 2u, 2u + 1 (u = lane % 4); two neighbouring
 * accumulator tiles of S, rounded to bf16, are exactly the A operand of the next product (no
 * shared-memory round trip).
 *   forward  grid (ceil(T/128), B*Hq), heaviest query tiles first; warp w owns query rows
 *            32w..32w+31 (two accumulator tiles, so every K and V fragment read from shared
 *            memory feeds two products); per key tile of 32 up to the diagonal (a warp skips
 *            the tiles wholly above its rows) S = Q K^T (32 x 32 per warp), the online
 *            softmax in registers (row max and sum over the 4 lanes of a row by shuffles,
 *            exp2 with the scale folded in), O (32 x D per warp, fp32) += P V.
 *   dK, dV   grid (ceil(T/64), B*Hkv): warp w owns keys 16w..16w+15 of the block's 64; over
 *            the group's query heads and the query tiles of 64 from the diagonal, in halves of
 *            32 queries: S^T = K Q^T, dP^T = V dO^T, P^T, dS^T = P^T (dP^T - delta) in
 *            registers, dV += P^T dO, dK += dS^T Q (accumulators 2 x 16 x D per warp).
 *   dQ       grid (ceil(T/128), B*Hq), the forward's shape: warp w owns query rows
 *            32w..32w+31 (two accumulator tiles); per key tile of 32 up to the diagonal: S, dP,
 *            dS in registers, dQ += dS K.
 * No atomics (dQ is its own pass, as attn.cu): deterministic. P and dS enter the products
 * rounded to bf16 (the tests' bf16 tolerances). Shared memory at D = 128: 68 KB (forward),
 * 102 KB (dK/dV), 102 KB (dQ); registers (sm_90) 254 forward, 246 dK/dV, 254 dQ, no spills.
 */
#include "cuda_portable.h"

#include "attn_common.cuh"
#include "mma_sm80.cuh"

#define MB 64 /* rows of a tile (queries or keys) */
#define MWARPS 4
#define MTHREADS (32 * MWARPS)
#define MLOG2E 1.4426950408889634f
#define MLN2 0.6931471805599453f

/* rows [row0, row0 + R) (R = 64 unless given) of a (B, T, H, DK) head (src: its (b, 0, head)
 * row, stride elements between rows) into dst (row stride DK + 8) by 16-byte cp.async, zeros
 * past nrows; all threads of the block. */
template <int DK, int R = MB>
static __device__ void tile_async(bf16 *dst, const bf16 *src, int64_t stride, int64_t row0,
                                  int64_t nrows)
{
    const int CH = DK / 8;
    for (int i = threadIdx.x; i < R * CH; i += blockDim.x) {
        int r = i / CH, c = (i - r * CH) * 8;
        int ok = row0 + r < nrows;
        cp_async16(dst + r * (DK + 8) + c, src + (ok ? (row0 + r) * stride + c : 0), ok);
    }
}

/* rows row0 + g (+ 8) (< nrows) of a (B, T, H, DK) head (base: its (b, 0, head) row) +=
 * mul * acc, columns 8n + 2u, 8n + 2u + 1 of acc[n]. */
template <int DK>
static __device__ void add_acc_rows(bf16 *base, int64_t stride, int64_t row0, int64_t nrows,
                                    const float (&acc)[DK / 8][4], float mul)
{
    int lane = threadIdx.x & 31, g = lane >> 2, u = lane & 3;
    for (int hh = 0; hh < 2; hh++) {
        int64_t row = row0 + g + 8 * hh;
        if (row >= nrows) continue;
        __nv_bfloat162 *p = reinterpret_cast<__nv_bfloat162 *>(base + row * stride + 2 * u);
        for (int n = 0; n < DK / 8; n++) {
            float2 o = __bfloat1622float2(p[4 * n]);
            p[4 * n] = __floats2bfloat162_rn(o.x + acc[n][2 * hh] * mul,
                                             o.y + acc[n][2 * hh + 1] * mul);
        }
    }
}

/* Forward tiles: FM query rows per block (FMT = 2 accumulator tiles of 16 rows per warp, so
 * each K and V fragment read from shared memory feeds two products), FN keys per tile. */
#define FMT 2
#define FM (16 * FMT * MWARPS)
#define FN 32

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
            for (int mt = 0; mt < FMT; mt++) {
                pf[mt][0] = pack_bf16x2(s[mt][2 * kx][0], s[mt][2 * kx][1]);
                pf[mt][1] = pack_bf16x2(s[mt][2 * kx][2], s[mt][2 * kx][3]);
                pf[mt][2] = pack_bf16x2(s[mt][2 * kx + 1][0], s[mt][2 * kx + 1][1]);
                pf[mt][3] = pack_bf16x2(s[mt][2 * kx + 1][2], s[mt][2 * kx + 1][3]);
            }
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
                sa[mt][kx][0] = pack_bf16x2(dp[mt][2 * kx][0], dp[mt][2 * kx][1]);
                sa[mt][kx][1] = pack_bf16x2(dp[mt][2 * kx][2], dp[mt][2 * kx][3]);
                sa[mt][kx][2] = pack_bf16x2(dp[mt][2 * kx + 1][0], dp[mt][2 * kx + 1][1]);
                sa[mt][kx][3] = pack_bf16x2(dp[mt][2 * kx + 1][2], dp[mt][2 * kx + 1][3]);
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

/* The device runs mma.sync (compute capability 8.0 or later), asked once. */
static int device_has_mma(void)
{
    static int cached = -1;
    if (cached < 0) {
        int dev = 0, major = 0;
        MGK_CUDA_CHECK(cudaGetDevice(&dev));
        MGK_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
        cached = major >= 8;
    }
    return cached;
}

/* These kernels serve d (D = 64 or 128, 16-byte aligned tensors, an sm_80+ device). */
static int mma_serves(const mgk_attn_dims *d, const void *p0, const void *p1, const void *p2,
                      const void *p3)
{
    return (d->D == 64 || d->D == 128) && mgk_aligned16(p0) && mgk_aligned16(p1) &&
           mgk_aligned16(p2) && mgk_aligned16(p3) && device_has_mma();
}

extern "C" int mgk_cuda_attn_mma_serves(const mgk_attn_dims *d)
{
    return (d->D == 64 || d->D == 128) && device_has_mma();
}

extern "C" void mgk_cuda_attn_fwd_bf16_mma(const mg_kctx *k, const mgk_attn_dims *d,
                                           mgk_bf16 *out, float *saved, const mgk_bf16 *q,
                                           const mgk_bf16 *kk, const mgk_bf16 *v,
                                           const int32_t *seg)
{
    if (!mma_serves(d, out, q, kk, v)) {
        mgk_cuda_attn_fwd_bf16_portable(k, d, out, saved, q, kk, v, seg);
        return;
    }
    if (d->B * d->T * d->Hq <= 0) return;
    attn_args a = make_args(d, seg);
    if (d->D == 64)
        attn_fwd_mma<64>(k, a, mgk_bf(out), saved, mgk_bf(q), mgk_bf(kk), mgk_bf(v));
    else
        attn_fwd_mma<128>(k, a, mgk_bf(out), saved, mgk_bf(q), mgk_bf(kk), mgk_bf(v));
}

extern "C" void mgk_cuda_attn_bwd_bf16_mma(const mg_kctx *k, const mgk_attn_dims *d,
                                           mgk_bf16 *dq, mgk_bf16 *dk, mgk_bf16 *dv,
                                           const mgk_bf16 *dout, const float *saved,
                                           const mgk_bf16 *q, const mgk_bf16 *kk,
                                           const mgk_bf16 *v, const int32_t *seg)
{
    if (!mma_serves(d, dout, q, kk, v) || !mgk_aligned16(dq) || !mgk_aligned16(dk) ||
        !mgk_aligned16(dv)) {
        mgk_cuda_attn_bwd_bf16_portable(k, d, dq, dk, dv, dout, saved, q, kk, v, seg);
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

/* The bf16 attention of the GPU path: these kernels where they serve, else the portable ones. */
extern "C" void mgk_cuda_attn_fwd_bf16(const mg_kctx *k, const mgk_attn_dims *d, mgk_bf16 *out,
                                       float *saved, const mgk_bf16 *q, const mgk_bf16 *kk,
                                       const mgk_bf16 *v, const int32_t *seg)
{
    mgk_cuda_attn_fwd_bf16_mma(k, d, out, saved, q, kk, v, seg);
}

extern "C" void mgk_cuda_attn_bwd_bf16(const mg_kctx *k, const mgk_attn_dims *d, mgk_bf16 *dq,
                                       mgk_bf16 *dk, mgk_bf16 *dv, const mgk_bf16 *dout,
                                       const float *saved, const mgk_bf16 *q, const mgk_bf16 *kk,
                                       const mgk_bf16 *v, const int32_t *seg)
{
    mgk_cuda_attn_bwd_bf16_mma(k, d, dq, dk, dv, dout, saved, q, kk, v, seg);
}

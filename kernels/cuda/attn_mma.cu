/* attn_mma.cu — bf16 causal grouped-query attention, forward and backward, on tensor cores with
 * register accumulators (mma.sync m16n8k16 and ldmatrix, mma_sm80.cuh): FlashAttention-2's
 * algorithm for D = 64 and 128, with the contract and saved state of the portable kernels
 * (attn.cu: lse, output copy), so any backward follows any forward. The emulator runs these
 * kernels through mma_sm80.cuh's portable versions of the instructions.
 *
 * All three kernels: blocks of 4 warps, tiles of 64 rows in shared memory (bf16 rows padded to
 * D + 8 elements: the 8 rows an ldmatrix reads fall in distinct banks), loaded by 16-byte
 * cp.async one tile ahead of its use (double buffers), warp w owning rows 16w..16w+15 of the
 * block's 64. A lane holds rows g and g + 8 (g = lane / 4) of every 16 x 8 accumulator tile,
 * columns 2u, 2u + 1 (u = lane % 4); two neighbouring accumulator tiles of S, rounded to bf16,
 * are exactly the A operand of the next product (no shared-memory round trip).
 *   forward  grid (ceil(T/64), B*Hq), heaviest query tiles first: Q fragments in registers,
 *            per key tile of 64 up to the diagonal S = Q K^T (16 x 64 per warp), the online
 *            softmax in registers (row max and sum over the 4 lanes of a row by shuffles,
 *            exp2 with the scale folded in), O (16 x D per warp, fp32) += P V.
 *   dK, dV   grid (ceil(T/64), B*Hkv): warp w owns keys 16w..; over the group's query heads
 *            and the query tiles from the diagonal, in halves of 32 queries: S^T = K Q^T,
 *            dP^T = V dO^T, P^T, dS^T = P^T (dP^T - delta) in registers, dV += P^T dO,
 *            dK += dS^T Q (accumulators 2 x 16 x D per warp in registers).
 *   dQ       grid (ceil(T/64), B*Hq): warp w owns query rows 16w..; per key tile, in halves of
 *            32 keys: S, dP, dS in registers, dQ += dS K.
 * No atomics (dQ is its own pass, as attn.cu): deterministic. P and dS enter the products
 * rounded to bf16 (the tests' bf16 tolerances). Shared memory at D = 128: 85 KB (forward),
 * 103 KB (each backward pass).
 */
#include "cuda_portable.h"

#include "attn_common.cuh"
#include "mma_sm80.cuh"

#define MB 64 /* rows of a tile (queries or keys) */
#define MWARPS 4
#define MTHREADS (32 * MWARPS)
#define MLOG2E 1.4426950408889634f
#define MLN2 0.6931471805599453f

/* rows [row0, row0 + 64) of a (B, T, H, DK) head (src: its (b, 0, head) row, stride elements
 * between rows) into dst (row stride DK + 8) by 16-byte cp.async, zeros past nrows; all threads
 * of the block. */
template <int DK>
static __device__ void tile_async(bf16 *dst, const bf16 *src, int64_t stride, int64_t row0,
                                  int64_t nrows)
{
    const int CH = DK / 8;
    for (int i = threadIdx.x; i < MB * CH; i += blockDim.x) {
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

template <int DK>
static __global__ void __launch_bounds__(MTHREADS)
    attn_fwd_mma_kernel(bf16 *out, float *saved, const bf16 *q, const bf16 *kk, const bf16 *v,
                        const attn_args a)
{
    const int LD = DK + 8;
    MGK_DYN_SHARED(bf16, sm);
    bf16 *Qs = sm, *Ks = Qs + MB * LD, *Vs = Ks + 2 * MB * LD;
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, u = lane & 3;
    int64_t rep = a.Hq / a.Hkv, b = blockIdx.y / a.Hq, h = blockIdx.y % a.Hq;
    int64_t t0 = (int64_t)(gridDim.x - 1 - blockIdx.x) * MB; /* heaviest tiles first */
    int64_t kstride = a.Hkv * DK, rows[2] = {t0 + 16 * w + g, t0 + 16 * w + g + 8};
    const bf16 *kb = kk + (b * a.T * a.Hkv + h / rep) * DK,
               *vb = v + (b * a.T * a.Hkv + h / rep) * DK;
    int64_t kend = t0 + MB < a.T ? t0 + MB : a.T;
    int ntiles = (int)((kend + MB - 1) / MB);
    tile_async<DK>(Qs, q + (b * a.T * a.Hq + h) * DK, a.Hq * DK, t0, a.T);
    tile_async<DK>(Ks, kb, kstride, 0, a.T);
    tile_async<DK>(Vs, vb, kstride, 0, a.T);
    cp_async_commit();
    const float sl2 = a.scale * MLOG2E;
    uint32_t qf[DK / 16][4];
    float o[DK / 8][4], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
    for (int n = 0; n < DK / 8; n++)
        for (int i = 0; i < 4; i++) o[n][i] = 0.0f;
    for (int n = 0; n < ntiles; n++) {
        cp_async_wait_all();
        __syncthreads(); /* tile n is in; every warp is done with tile n - 1 */
        if (n == 0)
            for (int kx = 0; kx < DK / 16; kx++)
                ldsm_x4(qf[kx], ldsm_rows_first(Qs, LD, 16 * w, 16 * kx));
        if (n + 1 < ntiles) {
            int nb = (n + 1) & 1;
            tile_async<DK>(Ks + nb * MB * LD, kb, kstride, (int64_t)(n + 1) * MB, a.T);
            tile_async<DK>(Vs + nb * MB * LD, vb, kstride, (int64_t)(n + 1) * MB, a.T);
            cp_async_commit();
        }
        const bf16 *Kt = Ks + (n & 1) * MB * LD, *Vt = Vs + (n & 1) * MB * LD;
        int64_t s0 = (int64_t)n * MB;
        float s[8][4];
        for (int j = 0; j < 8; j++)
            for (int i = 0; i < 4; i++) s[j][i] = 0.0f;
        for (int kx = 0; kx < DK / 16; kx++)
            for (int np = 0; np < 4; np++) {
                uint32_t kf[4];
                ldsm_x4(kf, ldsm_cols_first(Kt, LD, 16 * np, 16 * kx));
                mma_16816(s[2 * np], qf[kx], kf[0], kf[1]);
                mma_16816(s[2 * np + 1], qf[kx], kf[2], kf[3]);
            }
        /* online softmax over this tile's 64 keys, rows g and g + 8 */
        int need = a.seg || s0 + MB - 1 > t0 + 16 * w || s0 + MB > a.T;
        float mx[2] = {m[0], m[1]};
        for (int j = 0; j < 8; j++)
            for (int i = 0; i < 4; i++) {
                float x = s[j][i] * sl2;
                if (need && !visible(a, b, s0 + 8 * j + 2 * u + (i & 1), rows[i >> 1]))
                    x = -INFINITY;
                s[j][i] = x;
                mx[i >> 1] = fmaxf(mx[i >> 1], x);
            }
        float mu[2], alpha[2];
        for (int hh = 0; hh < 2; hh++) {
            mx[hh] = fmaxf(mx[hh], __shfl_xor_sync(MGK_FULL_MASK, mx[hh], 1));
            mx[hh] = fmaxf(mx[hh], __shfl_xor_sync(MGK_FULL_MASK, mx[hh], 2));
            mu[hh] = mx[hh] == -INFINITY ? 0.0f : mx[hh];
            alpha[hh] = exp2f(m[hh] - mu[hh]);
            m[hh] = mx[hh];
            l[hh] *= alpha[hh];
        }
        for (int j = 0; j < 8; j++)
            for (int i = 0; i < 4; i++) {
                float p = exp2f(s[j][i] - mu[i >> 1]);
                l[i >> 1] += p;
                s[j][i] = p;
            }
        for (int n2 = 0; n2 < DK / 8; n2++)
            for (int i = 0; i < 4; i++) o[n2][i] *= alpha[i >> 1];
        /* O += P V, P from the score accumulators */
        for (int kh = 0; kh < 2; kh++) {
            uint32_t pf[2][4];
            acc_to_a(pf, *reinterpret_cast<float(*)[4][4]>(&s[4 * kh]));
            for (int kx = 0; kx < 2; kx++)
                for (int dp = 0; dp < DK / 16; dp++) {
                    uint32_t vf[4];
                    ldsm_x4_t(vf, ldsm_rows_first(Vt, LD, 32 * kh + 16 * kx, 16 * dp));
                    mma_16816(o[2 * dp], pf[kx], vf[0], vf[1]);
                    mma_16816(o[2 * dp + 1], pf[kx], vf[2], vf[3]);
                }
        }
    }
    float *lse = saved, *ocopy = saved + a.B * a.Hq * a.T;
    for (int hh = 0; hh < 2; hh++) {
        l[hh] += __shfl_xor_sync(MGK_FULL_MASK, l[hh], 1);
        l[hh] += __shfl_xor_sync(MGK_FULL_MASK, l[hh], 2);
        int64_t t = rows[hh];
        if (t >= a.T) continue;
        float inv = 1.0f / l[hh];
        int64_t o0 = ((b * a.T + t) * a.Hq + h) * DK + 2 * u;
        for (int n = 0; n < DK / 8; n++) {
            float y0 = o[n][2 * hh] * inv, y1 = o[n][2 * hh + 1] * inv;
            *reinterpret_cast<__nv_bfloat162 *>(out + o0 + 8 * n) = __floats2bfloat162_rn(y0, y1);
            ocopy[o0 + 8 * n] = y0;
            ocopy[o0 + 8 * n + 1] = y1;
        }
        if (u == 0) lse[(b * a.Hq + h) * a.T + t] = (m[hh] + log2f(l[hh])) * MLN2;
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

template <int DK>
static __global__ void __launch_bounds__(MTHREADS)
    attn_bwd_q_mma_kernel(bf16 *dq, const bf16 *dout, const float *lse, const float *delta,
                          const bf16 *q, const bf16 *kk, const bf16 *v, const attn_args a)
{
    const int LD = DK + 8;
    MGK_DYN_SHARED(bf16, sm);
    bf16 *Qs = sm, *dOs = Qs + MB * LD, *Ks = dOs + MB * LD, *Vs = Ks + 2 * MB * LD;
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, g = lane >> 2, u = lane & 3;
    int64_t rep = a.Hq / a.Hkv, b = blockIdx.y / a.Hq, h = blockIdx.y % a.Hq;
    int64_t t0 = (int64_t)(gridDim.x - 1 - blockIdx.x) * MB;
    int64_t qo = (b * a.T * a.Hq + h) * DK, kvo = (b * a.T * a.Hkv + h / rep) * DK;
    int64_t kstride = a.Hkv * DK, rows[2] = {t0 + 16 * w + g, t0 + 16 * w + g + 8};
    int64_t kend = t0 + MB < a.T ? t0 + MB : a.T;
    int ntiles = (int)((kend + MB - 1) / MB);
    tile_async<DK>(Qs, q + qo, a.Hq * DK, t0, a.T);
    tile_async<DK>(dOs, dout + qo, a.Hq * DK, t0, a.T);
    tile_async<DK>(Ks, kk + kvo, kstride, 0, a.T);
    tile_async<DK>(Vs, v + kvo, kstride, 0, a.T);
    cp_async_commit();
    const float sl2 = a.scale * MLOG2E;
    float rl[2], rd[2], adq[DK / 8][4];
    for (int hh = 0; hh < 2; hh++) {
        int64_t o = (b * a.Hq + h) * a.T + rows[hh];
        rl[hh] = rows[hh] < a.T ? lse[o] * MLOG2E : 0.0f;
        rd[hh] = rows[hh] < a.T ? delta[o] : 0.0f;
    }
    for (int n = 0; n < DK / 8; n++)
        for (int i = 0; i < 4; i++) adq[n][i] = 0.0f;
    for (int n = 0; n < ntiles; n++) {
        cp_async_wait_all();
        __syncthreads();
        if (n + 1 < ntiles) {
            int nb = (n + 1) & 1;
            tile_async<DK>(Ks + nb * MB * LD, kk + kvo, kstride, (int64_t)(n + 1) * MB, a.T);
            tile_async<DK>(Vs + nb * MB * LD, v + kvo, kstride, (int64_t)(n + 1) * MB, a.T);
            cp_async_commit();
        }
        const bf16 *Kt = Ks + (n & 1) * MB * LD, *Vt = Vs + (n & 1) * MB * LD;
        for (int kh = 0; kh < 2; kh++) {
            int c0 = 32 * kh;
            int64_t k0 = (int64_t)n * MB + c0;
            float sc[4][4], dp[4][4];
            products_16x32<DK>(sc, dp, Qs, dOs, 16 * w, Kt, Vt, c0);
            int need = a.seg || k0 + 31 > t0 + 16 * w || k0 + 32 > a.T || t0 + 16 * w + 16 > a.T;
            for (int j = 0; j < 4; j++)
                for (int i = 0; i < 4; i++) {
                    float p = exp2f(sc[j][i] * sl2 - rl[i >> 1]);
                    if (need && !visible(a, b, k0 + 8 * j + 2 * u + (i & 1), rows[i >> 1]))
                        p = 0.0f;
                    dp[j][i] = p * (dp[j][i] - rd[i >> 1]);
                }
            uint32_t sa[2][4];
            acc_to_a(sa, dp);
            for (int kx = 0; kx < 2; kx++)
                for (int dd = 0; dd < DK / 16; dd++) {
                    uint32_t kf[4];
                    ldsm_x4_t(kf, ldsm_rows_first(Kt, LD, c0 + 16 * kx, 16 * dd));
                    mma_16816(adq[2 * dd], sa[kx], kf[0], kf[1]);
                    mma_16816(adq[2 * dd + 1], sa[kx], kf[2], kf[3]);
                }
        }
    }
    add_acc_rows<DK>(dq + qo, a.Hq * DK, t0 + 16 * w, a.T, adq, a.scale);
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
    size_t sm = mma_smem<DK>(5);
    set_smem_limit(attn_fwd_mma_kernel<DK>, sm);
    dim3 grid((unsigned)((a.T + MB - 1) / MB), (unsigned)(a.B * a.Hq));
    MGK_LAUNCH(attn_fwd_mma_kernel<DK>, grid, MTHREADS, sm, mgk_stream(k), out, saved, q, kk, v,
               a);
    MGK_LAUNCH_CHECK();
}

template <int DK>
static void attn_bwd_mma(const mg_kctx *k, const attn_args &a, bf16 *dq, bf16 *dk, bf16 *dv,
                         const bf16 *dout, const float *saved, const float *delta, const bf16 *q,
                         const bf16 *kk, const bf16 *v)
{
    size_t smkv = mma_smem<DK>(6) + 4 * MB * sizeof(float), smq = mma_smem<DK>(6);
    set_smem_limit(attn_bwd_kv_mma_kernel<DK>, smkv);
    set_smem_limit(attn_bwd_q_mma_kernel<DK>, smq);
    dim3 gkv((unsigned)((a.T + MB - 1) / MB), (unsigned)(a.B * a.Hkv));
    MGK_LAUNCH(attn_bwd_kv_mma_kernel<DK>, gkv, MTHREADS, smkv, mgk_stream(k), dk, dv, dout,
               saved, delta, q, kk, v, a);
    MGK_LAUNCH_CHECK();
    dim3 gq((unsigned)((a.T + MB - 1) / MB), (unsigned)(a.B * a.Hq));
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

static int aligned16(const void *p)
{
    return ((uintptr_t)p & 15) == 0;
}

/* These kernels serve d (D = 64 or 128, 16-byte aligned tensors, an sm_80+ device). */
static int mma_serves(const mgk_attn_dims *d, const void *p0, const void *p1, const void *p2,
                      const void *p3)
{
    return (d->D == 64 || d->D == 128) && aligned16(p0) && aligned16(p1) && aligned16(p2) &&
           aligned16(p3) && device_has_mma();
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
    if (!mma_serves(d, dout, q, kk, v) || !aligned16(dq) || !aligned16(dk) || !aligned16(dv)) {
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

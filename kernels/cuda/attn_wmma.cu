/* attn_wmma.cu — bf16 attention forward and backward on tensor cores (nvcuda::wmma 16x16x16
 * bf16 fragments, fp32 accumulators), beside the portable attn.cu kernels of the same contract
 * and saved state (lse, output copy), so either backward follows either forward. The tests
 * compare them with the CPU reference and with the portable kernels. D = 64 or 128 (other
 * head dims go to the portable kernels).
 *
 * Forward:
 * Grid (ceil(T/64), B*Hq), block 128: warp w owns query rows 16w..16w+15 of the block's 64; key
 * tiles of 64 up to the diagonal. Per tile: S (16 x 64, fp32) = Q K^T by wmma into shared
 * memory; two lanes per row apply scale, mask and the online softmax (P rounded to bf16) and
 * rescale the row of the fp32 output accumulator O, which lives in shared memory (a fragment's
 * lane layout is unspecified, so rows cannot be rescaled inside one); then O += P V by wmma
 * (O loaded as the accumulator, stored back). Shared memory at D = 128: Q, K, V 3 x 17 KB
 * (bf16, rows padded by 8), S 17 KB, P 9 KB, O 33 KB: 110 KB.
 * Backward (delta = rowsum(dout * out) first, as attn.cu), two passes without atomics:
 *   dK, dV  grid (ceil(T/64), B*Hkv): warp w owns keys 16w..16w+15 of the block's 64 and loops
 *           over the group's query heads and the query tiles from the diagonal: S^T = K Q^T and
 *           dP^T = V dO^T by wmma, P^T and dS^T = P^T (dP^T - delta) by two lanes per key row
 *           (rounded to bf16), then dV += P^T dO and dK += dS^T Q in register fragments.
 *   dQ      grid (ceil(T/64), B*Hq): warp w owns 16 query rows; S = Q K^T, dP = dO V^T, dS,
 *           dQ += dS K in register fragments.
 *   Shared memory at D = 128: four 64-row bf16 tiles (68 KB), per warp S and dP in fp32 (also
 *   the output staging), P^T and dS^T in bf16: 121 KB (dK, dV), 111 KB (dQ).
 */
#include "cuda_portable.h"

#include "attn_common.cuh"

#define WBR 64 /* query rows per block */
#define WBC 64 /* keys per tile */
#define WWARPS 4
#define LDS (WBC + 4)
#define LDP (WBC + 8)

template <int DK>
struct wmma_smem {
    enum { LDQ = DK + 8, LDO = DK + 4 };
    enum {
        q = 0,
        k = q + WBR * LDQ * 2,
        v = k + WBC * LDQ * 2,
        s = v + WBC * LDQ * 2,
        p = s + WWARPS * 16 * LDS * 4,
        o = p + WWARPS * 16 * LDP * 2,
        bytes = o + WWARPS * 16 * LDO * 4
    };
};

/* rows [row0, row0 + 64) of a (B, T, H, D) head (base: its (b, 0, head) row) into dst, zeros
 * outside the sequence; 16 bytes per thread and step (src and the row strides 16-byte
 * aligned: checked by the entry points). */
static __device__ void load_tile_bf16(bf16 *dst, int ld, const bf16 *src, int64_t stride,
                                      int64_t row0, int64_t nrows, int D)
{
    const int CH = D / 8;
    for (int idx = threadIdx.x; idx < 64 * CH; idx += blockDim.x) {
        int r = idx / CH, d = (idx - r * CH) * 8;
        uint4 x = make_uint4(0u, 0u, 0u, 0u);
        if (row0 + r < nrows) x = *reinterpret_cast<const uint4 *>(src + (row0 + r) * stride + d);
        *reinterpret_cast<uint4 *>(dst + r * ld + d) = x;
    }
}

/* S (16 x 64, row stride LDS, fp32) = A B^T for A 16 rows and B 64 rows of DK bf16 (row
 * stride ld): one warp. */
template <int DK>
static __device__ void score_tile(float *S, const bf16 *A, const bf16 *B, int ld)
{
    using namespace nvcuda;
#pragma unroll 1
    for (int j = 0; j < WBC / 16; j++) {
        wmma::fragment<wmma::accumulator, 16, 16, 16, float> sf;
        wmma::fill_fragment(sf, 0.0f);
        for (int kx = 0; kx < DK / 16; kx++) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> af;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> bf;
            wmma::load_matrix_sync(af, A + kx * 16, ld);
            wmma::load_matrix_sync(bf, B + j * 16 * ld + kx * 16, ld);
            wmma::mma_sync(sf, af, bf, sf);
        }
        wmma::store_matrix_sync(S + j * 16, sf, LDS, wmma::mem_row_major);
    }
}

/* acc[c] += A (16 x 64 bf16, row stride LDP) B (64 rows of DK bf16, row stride ld), c over the
 * 16-column blocks of DK. */
template <int DK>
static __device__ void accumulate_tile(
    nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> (&acc)[DK / 16],
    const bf16 *A, const bf16 *B, int ld)
{
    using namespace nvcuda;
    for (int c = 0; c < DK / 16; c++)
#pragma unroll 1
        for (int j = 0; j < WBC / 16; j++) {
            wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> af;
            wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> bf;
            wmma::load_matrix_sync(af, A + j * 16, LDP);
            wmma::load_matrix_sync(bf, B + j * 16 * ld + c * 16, ld);
            wmma::mma_sync(acc[c], af, bf, acc[c]);
        }
}

/* rows [row0, row0 + 16) (< nrows) of a (B, T, H, DK) head += mul * acc, through stage (16 x
 * (DK + 4) floats of this warp's shared memory). */
template <int DK>
static __device__ void add_fragments(
    bf16 *base, int64_t stride, int64_t row0, int64_t nrows,
    const nvcuda::wmma::fragment<nvcuda::wmma::accumulator, 16, 16, 16, float> (&acc)[DK / 16],
    float mul, float *stage)
{
    using namespace nvcuda;
    const int ld = DK + 4;
    int lane = threadIdx.x & 31, r = lane >> 1, hf = lane & 1;
    for (int c = 0; c < DK / 16; c++)
        wmma::store_matrix_sync(stage + c * 16, acc[c], ld, wmma::mem_row_major);
    __syncwarp(MGK_FULL_MASK);
    if (row0 + r < nrows) {
        bf16 *row = base + (row0 + r) * stride;
        for (int d = hf * (DK / 2); d < (hf + 1) * (DK / 2); d++)
            row[d] = __float2bfloat16(__bfloat162float(row[d]) + stage[r * ld + d] * mul);
    }
    __syncwarp(MGK_FULL_MASK);
}

template <int DK>
static __global__ void attn_fwd_wmma_kernel(bf16 *out, float *saved, const bf16 *q,
                                            const bf16 *kk, const bf16 *v, const attn_args a)
{
    using namespace nvcuda;
    typedef wmma_smem<DK> L;
    MGK_DYN_SHARED(unsigned char, sm);
    bf16 *Qs = (bf16 *)(sm + L::q), *Ks = (bf16 *)(sm + L::k), *Vs = (bf16 *)(sm + L::v);
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, r = lane >> 1, hf = lane & 1;
    float *S = (float *)(sm + L::s) + w * 16 * LDS, *O = (float *)(sm + L::o) + w * 16 * L::LDO;
    bf16 *P = (bf16 *)(sm + L::p) + w * 16 * LDP;
    int64_t rep = a.Hq / a.Hkv, b = blockIdx.y / a.Hq, h = blockIdx.y % a.Hq, t0 = blockIdx.x * WBR;
    int64_t t = t0 + w * 16 + r;
    const bf16 *kb = kk + (b * a.T * a.Hkv + h / rep) * DK,
               *vb = v + (b * a.T * a.Hkv + h / rep) * DK;
    load_tile_bf16(Qs, L::LDQ, q + (b * a.T * a.Hq + h) * DK, a.Hq * DK, t0, a.T, DK);
    for (int d = hf * (DK / 2); d < (hf + 1) * (DK / 2); d++) O[r * L::LDO + d] = 0.0f;
    float m = -INFINITY, l = 0.0f;
    int64_t kend = t0 + WBR < a.T ? t0 + WBR : a.T;
    for (int64_t s0 = 0; s0 < kend; s0 += WBC) {
        __syncthreads();
        load_tile_bf16(Ks, L::LDQ, kb, a.Hkv * DK, s0, a.T, DK);
        load_tile_bf16(Vs, L::LDQ, vb, a.Hkv * DK, s0, a.T, DK);
        __syncthreads();
        score_tile<DK>(S, Qs + w * 16 * L::LDQ, Ks, L::LDQ);
        __syncwarp(MGK_FULL_MASK);
        /* online softmax: lanes 2r and 2r + 1 share row r, 32 keys each */
        float mx = -INFINITY, sum = 0.0f;
        for (int c = hf * 32; c < hf * 32 + 32; c++) {
            float x = visible(a, b, s0 + c, t) ? S[r * LDS + c] * a.scale : -INFINITY;
            S[r * LDS + c] = x;
            mx = fmaxf(mx, x);
        }
        float mn = fmaxf(m, fmaxf(mx, __shfl_xor_sync(MGK_FULL_MASK, mx, 1)));
        float alpha = m == -INFINITY ? 0.0f : expf(m - mn);
        for (int c = hf * 32; c < hf * 32 + 32; c++) {
            float x = S[r * LDS + c], p = x == -INFINITY ? 0.0f : expf(x - mn);
            P[r * LDP + c] = __float2bfloat16(p);
            sum += p;
        }
        l = l * alpha + sum + __shfl_xor_sync(MGK_FULL_MASK, sum, 1);
        m = mn;
        for (int d = hf * (DK / 2); d < (hf + 1) * (DK / 2); d++) O[r * L::LDO + d] *= alpha;
        __syncwarp(MGK_FULL_MASK);
        for (int c = 0; c < DK / 16; c++) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> of;
            wmma::load_matrix_sync(of, O + c * 16, L::LDO, wmma::mem_row_major);
            for (int j = 0; j < WBC / 16; j++) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> pf;
                wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::row_major> vf;
                wmma::load_matrix_sync(pf, P + j * 16, LDP);
                wmma::load_matrix_sync(vf, Vs + j * 16 * L::LDQ + c * 16, L::LDQ);
                wmma::mma_sync(of, pf, vf, of);
            }
            wmma::store_matrix_sync(O + c * 16, of, L::LDO, wmma::mem_row_major);
        }
        __syncwarp(MGK_FULL_MASK);
    }
    if (t < a.T) {
        int64_t o = ((b * a.T + t) * a.Hq + h) * DK;
        float *ocopy = saved + a.B * a.Hq * a.T;
        for (int d = hf * (DK / 2); d < (hf + 1) * (DK / 2); d++) {
            float y = O[r * L::LDO + d] / l;
            out[o + d] = __float2bfloat16(y);
            ocopy[o + d] = y;
        }
        if (hf == 0) saved[(b * a.Hq + h) * a.T + t] = m + logf(l);
    }
}

template <int DK>
static void attn_fwd_wmma(const mg_kctx *k, const attn_args &a, bf16 *out, float *saved,
                          const bf16 *q, const bf16 *kk, const bf16 *v)
{
    size_t sm = wmma_smem<DK>::bytes;
    set_smem_limit(attn_fwd_wmma_kernel<DK>, sm);
    dim3 grid((unsigned)((a.T + WBR - 1) / WBR), (unsigned)(a.B * a.Hq));
    MGK_LAUNCH(attn_fwd_wmma_kernel<DK>, grid, 32 * WWARPS, sm, mgk_stream(k), out, saved, q, kk,
               v, a);
    MGK_LAUNCH_CHECK();
}

extern "C" void mgk_cuda_attn_fwd_h16_wmma(const mg_kctx *k, const mgk_attn_dims *d,
                                           mgk_h16 *out, float *saved, const mgk_h16 *q,
                                           const mgk_h16 *kk, const mgk_h16 *v,
                                           const int32_t *seg)
{
    if (k->half != MGK_HALF_BF16 || (d->D != 64 && d->D != 128) || !mgk_aligned16(q) ||
        !mgk_aligned16(kk) || !mgk_aligned16(v)) {
        mgk_cuda_attn_fwd_h16_portable(k, d, out, saved, q, kk, v, seg);
        return;
    }
    if (d->B * d->T * d->Hq <= 0) return;
    attn_args a = make_args(d, seg);
    if (d->D == 64)
        attn_fwd_wmma<64>(k, a, mgk_bf(out), saved, mgk_bf(q), mgk_bf(kk), mgk_bf(v));
    else
        attn_fwd_wmma<128>(k, a, mgk_bf(out), saved, mgk_bf(q), mgk_bf(kk), mgk_bf(v));
}

/* Shared memory of the backward kernels: four 64-row bf16 tiles, then per warp S and dP (fp32,
 * contiguous: also the 16 x (DK + 4) output staging), two bf16 16 x 64 tiles, the rows' lse
 * and delta. */
template <int DK>
struct wmma_bwd_smem {
    enum { LDQ = DK + 8, TILE = 64 * LDQ * 2, WARP_F = 2 * 16 * LDS, WARP_H = 2 * 16 * LDP };
    enum {
        f = 4 * TILE,
        h = f + WWARPS * WARP_F * 4,
        st = h + WWARPS * WARP_H * 2,
        bytes = st + 2 * WBR * 4
    };
};

/* The backward's shared memory carved for this warp: tiles 0-3, S, dP, P, G (dS), lse, delta. */
struct bwd_view {
    bf16 *t[4];
    float *S, *dP, *lse, *delta;
    bf16 *P, *G;
};

template <int DK>
static __device__ bwd_view bwd_carve(unsigned char *sm)
{
    typedef wmma_bwd_smem<DK> L;
    int w = threadIdx.x >> 5;
    bwd_view v;
    for (int i = 0; i < 4; i++) v.t[i] = (bf16 *)sm + i * 64 * L::LDQ;
    v.S = (float *)(sm + L::f) + w * L::WARP_F, v.dP = v.S + 16 * LDS;
    v.P = (bf16 *)(sm + L::h) + w * L::WARP_H, v.G = v.P + 16 * LDP;
    v.lse = (float *)(sm + L::st), v.delta = v.lse + WBR;
    return v;
}

/* P and dS = P (dP - delta) of this lane pair's row r (32 columns each) of the 16 x 64 tiles;
 * keys and queries by the kv flag (1: rows are keys, columns queries). */
static __device__ void probs_and_dscores(bf16 *P, bf16 *G, const float *S, const float *dP,
                                         const attn_args &a, int64_t b, int64_t row,
                                         int64_t col0, const float *lse, const float *delta,
                                         int kv)
{
    int lane = threadIdx.x & 31, r = lane >> 1, hf = lane & 1;
    for (int c = hf * 32; c < hf * 32 + 32; c++) {
        int64_t s = kv ? row : col0 + c, t = kv ? col0 + c : row;
        int qi = kv ? c : 0; /* the query's lse / delta: per column (kv) or the row's */
        float p = visible(a, b, s, t) ? expf(S[r * LDS + c] * a.scale - lse[qi]) : 0.0f;
        if (P) P[r * LDP + c] = __float2bfloat16(p);
        G[r * LDP + c] = __float2bfloat16(p * (dP[r * LDS + c] - delta[qi]));
    }
}

template <int DK>
static __global__ void attn_bwd_kv_wmma_kernel(bf16 *dk, bf16 *dv, const bf16 *dout,
                                               const float *lse, const float *delta,
                                               const bf16 *q, const bf16 *kk, const bf16 *v,
                                               const attn_args a)
{
    using namespace nvcuda;
    typedef wmma_bwd_smem<DK> L;
    MGK_DYN_SHARED(unsigned char, sm);
    bwd_view sv = bwd_carve<DK>(sm);
    bf16 *Ks = sv.t[0], *Vs = sv.t[1], *Qs = sv.t[2], *dOs = sv.t[3], *P = sv.P, *G = sv.G;
    float *S = sv.S, *dP = sv.dP, *lse_s = sv.lse, *delta_s = sv.delta;
    int w = threadIdx.x >> 5, r = (threadIdx.x & 31) >> 1;
    int64_t rep = a.Hq / a.Hkv, b = blockIdx.y / a.Hkv, g = blockIdx.y % a.Hkv,
            s0 = blockIdx.x * WBC;
    int64_t kvo = (b * a.T * a.Hkv + g) * DK;
    load_tile_bf16(Ks, L::LDQ, kk + kvo, a.Hkv * DK, s0, a.T, DK);
    load_tile_bf16(Vs, L::LDQ, v + kvo, a.Hkv * DK, s0, a.T, DK);
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> adk[DK / 16], adv[DK / 16];
    for (int c = 0; c < DK / 16; c++)
        wmma::fill_fragment(adk[c], 0.0f), wmma::fill_fragment(adv[c], 0.0f);
    for (int64_t h = g * rep; h < (g + 1) * rep; h++) {
        int64_t qo = (b * a.T * a.Hq + h) * DK;
        for (int64_t t0 = s0; t0 < a.T; t0 += WBR) {
            __syncthreads();
            load_tile_bf16(Qs, L::LDQ, q + qo, a.Hq * DK, t0, a.T, DK);
            load_tile_bf16(dOs, L::LDQ, dout + qo, a.Hq * DK, t0, a.T, DK);
            for (int i = threadIdx.x; i < WBR; i += blockDim.x) {
                int64_t t = t0 + i, o = (b * a.Hq + h) * a.T + t;
                lse_s[i] = t < a.T ? lse[o] : 0.0f;
                delta_s[i] = t < a.T ? delta[o] : 0.0f;
            }
            __syncthreads();
            score_tile<DK>(S, Ks + w * 16 * L::LDQ, Qs, L::LDQ);
            score_tile<DK>(dP, Vs + w * 16 * L::LDQ, dOs, L::LDQ);
            __syncwarp(MGK_FULL_MASK);
            probs_and_dscores(P, G, S, dP, a, b, s0 + w * 16 + r, t0, lse_s, delta_s, 1);
            __syncwarp(MGK_FULL_MASK);
            accumulate_tile<DK>(adv, P, dOs, L::LDQ);
            accumulate_tile<DK>(adk, G, Qs, L::LDQ);
        }
    }
    __syncwarp(MGK_FULL_MASK);
    add_fragments<DK>(dk + kvo, a.Hkv * DK, s0 + w * 16, a.T, adk, a.scale, S);
    add_fragments<DK>(dv + kvo, a.Hkv * DK, s0 + w * 16, a.T, adv, 1.0f, S);
}

template <int DK>
static __global__ void attn_bwd_q_wmma_kernel(bf16 *dq, const bf16 *dout, const float *lse,
                                              const float *delta, const bf16 *q, const bf16 *kk,
                                              const bf16 *v, const attn_args a)
{
    using namespace nvcuda;
    typedef wmma_bwd_smem<DK> L;
    MGK_DYN_SHARED(unsigned char, sm);
    bwd_view sv = bwd_carve<DK>(sm);
    bf16 *Qs = sv.t[0], *dOs = sv.t[1], *Ks = sv.t[2], *Vs = sv.t[3], *G = sv.G;
    float *S = sv.S, *dP = sv.dP;
    int w = threadIdx.x >> 5, r = (threadIdx.x & 31) >> 1;
    int64_t rep = a.Hq / a.Hkv, b = blockIdx.y / a.Hq, h = blockIdx.y % a.Hq, t0 = blockIdx.x * WBR;
    int64_t t = t0 + w * 16 + r, qo = (b * a.T * a.Hq + h) * DK;
    int64_t kvo = (b * a.T * a.Hkv + h / rep) * DK;
    float rl = t < a.T ? lse[(b * a.Hq + h) * a.T + t] : 0.0f;
    float rd = t < a.T ? delta[(b * a.Hq + h) * a.T + t] : 0.0f;
    load_tile_bf16(Qs, L::LDQ, q + qo, a.Hq * DK, t0, a.T, DK);
    load_tile_bf16(dOs, L::LDQ, dout + qo, a.Hq * DK, t0, a.T, DK);
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> adq[DK / 16];
    for (int c = 0; c < DK / 16; c++) wmma::fill_fragment(adq[c], 0.0f);
    int64_t kend = t0 + WBR < a.T ? t0 + WBR : a.T;
    for (int64_t s0 = 0; s0 < kend; s0 += WBC) {
        __syncthreads();
        load_tile_bf16(Ks, L::LDQ, kk + kvo, a.Hkv * DK, s0, a.T, DK);
        load_tile_bf16(Vs, L::LDQ, v + kvo, a.Hkv * DK, s0, a.T, DK);
        __syncthreads();
        score_tile<DK>(S, Qs + w * 16 * L::LDQ, Ks, L::LDQ);
        score_tile<DK>(dP, dOs + w * 16 * L::LDQ, Vs, L::LDQ);
        __syncwarp(MGK_FULL_MASK);
        probs_and_dscores((bf16 *)NULL, G, S, dP, a, b, t, s0, &rl, &rd, 0);
        __syncwarp(MGK_FULL_MASK);
        accumulate_tile<DK>(adq, G, Ks, L::LDQ);
    }
    __syncwarp(MGK_FULL_MASK);
    add_fragments<DK>(dq + qo, a.Hq * DK, t0 + w * 16, a.T, adq, a.scale, S);
}

template <int DK>
static void attn_bwd_wmma(const mg_kctx *k, const attn_args &a, bf16 *dq, bf16 *dk, bf16 *dv,
                          const bf16 *dout, const float *saved, const float *delta, const bf16 *q,
                          const bf16 *kk, const bf16 *v)
{
    size_t sm = wmma_bwd_smem<DK>::bytes;
    set_smem_limit(attn_bwd_kv_wmma_kernel<DK>, sm);
    set_smem_limit(attn_bwd_q_wmma_kernel<DK>, sm);
    dim3 gkv((unsigned)((a.T + WBC - 1) / WBC), (unsigned)(a.B * a.Hkv));
    MGK_LAUNCH(attn_bwd_kv_wmma_kernel<DK>, gkv, 32 * WWARPS, sm, mgk_stream(k), dk, dv, dout,
               saved, delta, q, kk, v, a);
    MGK_LAUNCH_CHECK();
    dim3 gq((unsigned)((a.T + WBR - 1) / WBR), (unsigned)(a.B * a.Hq));
    MGK_LAUNCH(attn_bwd_q_wmma_kernel<DK>, gq, 32 * WWARPS, sm, mgk_stream(k), dq, dout, saved,
               delta, q, kk, v, a);
    MGK_LAUNCH_CHECK();
}

extern "C" void mgk_cuda_attn_bwd_h16_wmma(const mg_kctx *k, const mgk_attn_dims *d,
                                           mgk_h16 *dq, mgk_h16 *dk, mgk_h16 *dv,
                                           const mgk_h16 *dout, const float *saved,
                                           const mgk_h16 *q, const mgk_h16 *kk,
                                           const mgk_h16 *v, const int32_t *seg)
{
    if (k->half != MGK_HALF_BF16 || (d->D != 64 && d->D != 128) || !mgk_aligned16(q) ||
        !mgk_aligned16(kk) || !mgk_aligned16(v) || !mgk_aligned16(dout)) {
        mgk_cuda_attn_bwd_h16_portable(k, d, dq, dk, dv, dout, saved, q, kk, v, seg);
        return;
    }
    if (d->B * d->T * d->Hq <= 0) return;
    MG_ASSERT(k->scratch_numel >= mgk_cuda_attn_scratch_numel(d));
    attn_args a = make_args(d, seg);
    const float *delta = attn_delta(k, a, mgk_bf(dout), saved);
    if (d->D == 64)
        attn_bwd_wmma<64>(k, a, mgk_bf(dq), mgk_bf(dk), mgk_bf(dv), mgk_bf(dout), saved, delta,
                          mgk_bf(q), mgk_bf(kk), mgk_bf(v));
    else
        attn_bwd_wmma<128>(k, a, mgk_bf(dq), mgk_bf(dk), mgk_bf(dv), mgk_bf(dout), saved, delta,
                           mgk_bf(q), mgk_bf(kk), mgk_bf(v));
}

/* attn_wmma.cu — the bf16 attention forward on tensor cores (nvcuda::wmma 16x16x16 bf16
 * fragments, fp32 accumulators), beside the portable attn.cu kernel of the same contract:
 * same output, same saved state (lse, output copy), so the portable backward follows it.
 * tests compare it with the CPU reference and with the portable kernel.
 *
 * Grid (ceil(T/64), B*Hq), block 128: warp w owns query rows 16w..16w+15 of the block's 64; key
 * tiles of 64 up to the diagonal. Per tile: S (16 x 64, fp32) = Q K^T by wmma into shared
 * memory; two lanes per row apply scale, mask and the online softmax (P rounded to bf16) and
 * rescale the row of the fp32 output accumulator O, which lives in shared memory (a fragment's
 * lane layout is unspecified, so rows cannot be rescaled inside one); then O += P V by wmma
 * (O loaded as the accumulator, stored back). D = 64 or 128 (other head dims go to the
 * portable kernel). Shared memory at D = 128: Q, K, V 3 x 17 KB (bf16, rows padded by 8),
 * S 17 KB, P 9 KB, O 33 KB: 110 KB.
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
 * outside the sequence. */
static __device__ void load_tile_bf16(bf16 *dst, int ld, const bf16 *src, int64_t stride,
                                      int64_t row0, int64_t nrows, int D)
{
    for (int idx = threadIdx.x; idx < 64 * D; idx += blockDim.x) {
        int r = idx / D, d = idx - r * D;
        dst[r * ld + d] = row0 + r < nrows ? src[(row0 + r) * stride + d] : __float2bfloat16(0.0f);
    }
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
    const bf16 *kb = kk + (b * a.T * a.Hkv + h / rep) * DK, *vb = v + (b * a.T * a.Hkv + h / rep) * DK;
    load_tile_bf16(Qs, L::LDQ, q + (b * a.T * a.Hq + h) * DK, a.Hq * DK, t0, a.T, DK);
    for (int d = hf * (DK / 2); d < (hf + 1) * (DK / 2); d++) O[r * L::LDO + d] = 0.0f;
    __syncthreads();
    wmma::fragment<wmma::matrix_a, 16, 16, 16, bf16, wmma::row_major> qf[DK / 16];
    for (int kx = 0; kx < DK / 16; kx++)
        wmma::load_matrix_sync(qf[kx], Qs + w * 16 * L::LDQ + kx * 16, L::LDQ);
    float m = -INFINITY, l = 0.0f;
    int64_t kend = t0 + WBR < a.T ? t0 + WBR : a.T;
    for (int64_t s0 = 0; s0 < kend; s0 += WBC) {
        __syncthreads();
        load_tile_bf16(Ks, L::LDQ, kb, a.Hkv * DK, s0, a.T, DK);
        load_tile_bf16(Vs, L::LDQ, vb, a.Hkv * DK, s0, a.T, DK);
        __syncthreads();
        for (int j = 0; j < WBC / 16; j++) {
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> sf;
            wmma::fill_fragment(sf, 0.0f);
            for (int kx = 0; kx < DK / 16; kx++) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, bf16, wmma::col_major> kf;
                wmma::load_matrix_sync(kf, Ks + j * 16 * L::LDQ + kx * 16, L::LDQ);
                wmma::mma_sync(sf, qf[kx], kf, sf);
            }
            wmma::store_matrix_sync(S + j * 16, sf, LDS, wmma::mem_row_major);
        }
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

extern "C" void mgk_cuda_attn_fwd_bf16_wmma(const mg_kctx *k, const mgk_attn_dims *d,
                                            mgk_bf16 *out, float *saved, const mgk_bf16 *q,
                                            const mgk_bf16 *kk, const mgk_bf16 *v,
                                            const int32_t *seg)
{
    if (d->D != 64 && d->D != 128) {
        mgk_cuda_attn_fwd_bf16(k, d, out, saved, q, kk, v, seg);
        return;
    }
    if (d->B * d->T * d->Hq <= 0) return;
    attn_args a = make_args(d, seg);
    if (d->D == 64)
        attn_fwd_wmma<64>(k, a, mgk_bf(out), saved, mgk_bf(q), mgk_bf(kk), mgk_bf(v));
    else
        attn_fwd_wmma<128>(k, a, mgk_bf(out), saved, mgk_bf(q), mgk_bf(kk), mgk_bf(v));
}

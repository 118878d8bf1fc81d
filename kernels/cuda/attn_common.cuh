/* attn_common.cuh — what the attention kernels (attn.cu, attn_wmma.cu) share: the sizes they
 * take by value and the visibility rule of kernels.h (key s is seen from query t iff s <= t,
 * both inside the sequence, and in the same document segment when seg is given).
 */
#ifndef MGK_ATTN_COMMON_CUH
#define MGK_ATTN_COMMON_CUH

#include "cuda_common.cuh"

struct attn_args {
    int64_t B, T, Hq, Hkv, D;
    float scale;
    const int32_t *seg;
};

static __device__ inline int visible(const attn_args &a, int64_t b, int64_t s, int64_t t)
{
    return s < a.T && t < a.T && s <= t && (!a.seg || a.seg[b * a.T + s] == a.seg[b * a.T + t]);
}

static attn_args make_args(const mgk_attn_dims *d, const int32_t *seg)
{
    MG_ASSERT(d->D >= 1 && d->D <= 256 && d->Hkv > 0 && d->Hq % d->Hkv == 0);
    attn_args a = {d->B, d->T, d->Hq, d->Hkv, d->D, d->scale, seg};
    return a;
}

/* delta (B, Hq, T) = rowsum(dout * out): one warp per (b, t, h) row. */
template <typename T>
static __global__ void attn_delta_kernel(float *delta, const T *dout, const float *ocopy,
                                         const attn_args a)
{
    int lane = threadIdx.x & 31;
    int64_t rows = a.B * a.T * a.Hq, wid = ((int64_t)blockIdx.x * blockDim.x + threadIdx.x) >> 5;
    int64_t nw = ((int64_t)gridDim.x * blockDim.x) >> 5;
    for (int64_t r = wid; r < rows; r += nw) {
        float s = 0.0f;
        for (int64_t d = lane; d < a.D; d += 32)
            s += mgk_ld(dout + r * a.D + d) * ocopy[r * a.D + d];
        s = mgk_warp_sum(s);
        int64_t h = r % a.Hq, bt = r / a.Hq, b = bt / a.T, t = bt % a.T;
        if (lane == 0) delta[(b * a.Hq + h) * a.T + t] = s;
    }
}

/* Fills k->scratch with delta from dout and the saved output copy; returns it. */
template <typename T>
static const float *attn_delta(const mg_kctx *k, const attn_args &a, const T *dout,
                               const float *saved)
{
    int64_t rows = a.B * a.T * a.Hq;
    MGK_LAUNCH(attn_delta_kernel<T>, mgk_grid(rows * 32, 256, MGK_GRID_CAP), 256, 0, mgk_stream(k),
               k->scratch, dout, saved + rows, a);
    MGK_LAUNCH_CHECK();
    return k->scratch;
}

#endif

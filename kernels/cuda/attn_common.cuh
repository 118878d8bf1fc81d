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
    MG_ASSERT(d->D >= 1 && d->D <= 256);
    attn_args a = {d->B, d->T, d->Hq, d->Hkv, d->D, d->scale, seg};
    return a;
}

/* Allows a kernel more than the default 48 KiB of dynamic shared memory. */
template <typename F>
static void set_smem_limit(F *kernel, size_t bytes)
{
    MGK_CUDA_CHECK(cudaFuncSetAttribute(reinterpret_cast<const void *>(kernel),
                                        cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
}

#endif

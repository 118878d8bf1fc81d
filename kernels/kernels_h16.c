/* kernels_h16.c — kernels.h's 16-bit variants: each forwards to the CUDA backend's function of
 * the same name (kernels/cuda/kernels_cuda.h, mgk_cuda_*_h16, which reads k->half). A context
 * of a CPU backend is a bug (the CPU backends compute in fp32 only), and so is any call in a
 * build without CUDA, where no MGK_CUDA context can exist (mgk_ctx_init refuses it). */
#include "kernels.h"

#ifndef MG_HAVE_CUDA
#define MG_HAVE_CUDA 0
#endif

#if MG_HAVE_CUDA
#include "cuda/kernels_cuda.h"
#define CUDA_ONLY(name, args)                                                                 \
    do {                                                                                      \
        MG_ASSERT(k->backend == MGK_CUDA);                                                    \
        mgk_cuda_##name args;                                                                 \
    } while (0)
#else
/* Nothing to forward to: the arguments are unused. */
#pragma GCC diagnostic ignored "-Wunused-parameter"
#define CUDA_ONLY(name, args) MG_ASSERT(k->backend == MGK_CUDA && !"built without CUDA")
#endif

void mgk_zero_h16(const mg_kctx *k, mgk_h16 *x, int64_t n)
{
    CUDA_ONLY(zero_h16, (k, x, n));
}

void mgk_copy_h16(const mg_kctx *k, mgk_h16 *dst, const mgk_h16 *src, int64_t n)
{
    CUDA_ONLY(copy_h16, (k, dst, src, n));
}

void mgk_add_h16(const mg_kctx *k, mgk_h16 *out, const mgk_h16 *a, const mgk_h16 *b,
                 int64_t n)
{
    CUDA_ONLY(add_h16, (k, out, a, b, n));
}

void mgk_bias_add_h16(const mg_kctx *k, mgk_h16 *x, const mgk_h16 *bias, int64_t N, int64_t C)
{
    CUDA_ONLY(bias_add_h16, (k, x, bias, N, C));
}

void mgk_bias_grad_h16(const mg_kctx *k, float *dbias, const mgk_h16 *dout, int64_t N,
                       int64_t C)
{
    CUDA_ONLY(bias_grad_h16, (k, dbias, dout, N, C));
}

void mgk_linear_fwd_h16(const mg_kctx *k, mgk_h16 *out, const mgk_h16 *inp, const mgk_h16 *W,
                        const mgk_h16 *bias, int64_t N, int64_t IN, int64_t OUT)
{
    CUDA_ONLY(linear_fwd_h16, (k, out, NULL, inp, W, bias, N, IN, OUT, 0));
}

void mgk_linear_bwd_h16(const mg_kctx *k, mgk_h16 *dinp, float *dW, float *dbias,
                        const mgk_h16 *dout, const mgk_h16 *inp, const mgk_h16 *W, int64_t N,
                        int64_t IN, int64_t OUT)
{
    CUDA_ONLY(linear_bwd_h16, (k, dinp, dW, dbias, dout, inp, W, N, IN, OUT));
}

void mgk_embedding_fwd_h16(const mg_kctx *k, mgk_h16 *out, const int32_t *ids,
                           const mgk_h16 *table, int64_t N, int64_t C, int64_t row0,
                           int64_t nrows, int accumulate)
{
    CUDA_ONLY(embedding_fwd_h16, (k, out, ids, table, N, C, row0, nrows, accumulate));
}

void mgk_embedding_bwd_h16(const mg_kctx *k, float *dtable, const mgk_h16 *dout,
                           const int32_t *ids, int64_t N, int64_t C, int64_t row0, int64_t nrows)
{
    CUDA_ONLY(embedding_bwd_h16, (k, dtable, dout, ids, N, C, row0, nrows));
}

void mgk_layernorm_fwd_h16(const mg_kctx *k, mgk_h16 *out, float *mean, float *rstd,
                           const mgk_h16 *inp, const mgk_h16 *w, const mgk_h16 *b, int64_t N,
                           int64_t C, float eps)
{
    CUDA_ONLY(layernorm_fwd_h16, (k, out, mean, rstd, inp, w, b, N, C, eps));
}

void mgk_layernorm_bwd_h16(const mg_kctx *k, mgk_h16 *dinp, float *dw, float *db,
                           const mgk_h16 *dout, const mgk_h16 *inp, const mgk_h16 *w,
                           const float *mean, const float *rstd, int64_t N, int64_t C)
{
    CUDA_ONLY(layernorm_bwd_h16, (k, dinp, dw, db, dout, inp, w, mean, rstd, N, C));
}

void mgk_rmsnorm_fwd_h16(const mg_kctx *k, mgk_h16 *out, float *rstd, const mgk_h16 *inp,
                         const mgk_h16 *w, int64_t N, int64_t C, float eps)
{
    CUDA_ONLY(rmsnorm_fwd_h16, (k, out, rstd, inp, w, N, C, eps));
}

void mgk_rmsnorm_bwd_h16(const mg_kctx *k, mgk_h16 *dinp, float *dw, const mgk_h16 *dout,
                         const mgk_h16 *inp, const mgk_h16 *w, const float *rstd, int64_t N,
                         int64_t C)
{
    CUDA_ONLY(rmsnorm_bwd_h16, (k, dinp, dw, dout, inp, w, rstd, N, C));
}

void mgk_gelu_fwd_h16(const mg_kctx *k, mgk_h16 *out, const mgk_h16 *inp, int64_t n,
                      mgk_gelu_kind kind)
{
    CUDA_ONLY(gelu_fwd_h16, (k, out, inp, n, kind));
}

void mgk_gelu_bwd_h16(const mg_kctx *k, mgk_h16 *dinp, const mgk_h16 *dout,
                      const mgk_h16 *inp, int64_t n, mgk_gelu_kind kind)
{
    CUDA_ONLY(gelu_bwd_h16, (k, dinp, dout, inp, n, kind));
}

void mgk_swiglu_fwd_h16(const mg_kctx *k, mgk_h16 *out, const mgk_h16 *inp, int64_t N,
                        int64_t F)
{
    CUDA_ONLY(swiglu_fwd_h16, (k, out, inp, N, F));
}

void mgk_swiglu_bwd_h16(const mg_kctx *k, mgk_h16 *dinp, const mgk_h16 *dout,
                        const mgk_h16 *inp, int64_t N, int64_t F)
{
    CUDA_ONLY(swiglu_bwd_h16, (k, dinp, dout, inp, N, F));
}

void mgk_rope_fwd_h16(const mg_kctx *k, mgk_h16 *out, const mgk_h16 *inp, const int32_t *pos,
                      int64_t B, int64_t T, int64_t H, int64_t D, int64_t rot_dim, float base)
{
    CUDA_ONLY(rope_fwd_h16, (k, out, inp, pos, B, T, H, D, rot_dim, base));
}

void mgk_rope_bwd_h16(const mg_kctx *k, mgk_h16 *dinp, const mgk_h16 *dout,
                      const int32_t *pos, int64_t B, int64_t T, int64_t H, int64_t D,
                      int64_t rot_dim, float base)
{
    CUDA_ONLY(rope_bwd_h16, (k, dinp, dout, pos, B, T, H, D, rot_dim, base));
}

void mgk_qkv_split_h16(const mg_kctx *k, mgk_h16 *q, mgk_h16 *kk, mgk_h16 *v,
                       const mgk_h16 *qkv, int64_t N, int64_t Hq, int64_t Hkv, int64_t D)
{
    CUDA_ONLY(qkv_split_h16, (k, q, kk, v, qkv, N, Hq, Hkv, D));
}

void mgk_qkv_merge_h16(const mg_kctx *k, mgk_h16 *qkv, const mgk_h16 *q, const mgk_h16 *kk,
                       const mgk_h16 *v, int64_t N, int64_t Hq, int64_t Hkv, int64_t D)
{
    CUDA_ONLY(qkv_merge_h16, (k, qkv, q, kk, v, N, Hq, Hkv, D));
}

void mgk_attn_fwd_h16(const mg_kctx *k, const mgk_attn_dims *d, mgk_h16 *out, float *saved,
                      const mgk_h16 *q, const mgk_h16 *kk, const mgk_h16 *v,
                      const int32_t *seg)
{
    CUDA_ONLY(attn_fwd_h16, (k, d, out, saved, q, kk, v, seg));
}

void mgk_attn_bwd_h16(const mg_kctx *k, const mgk_attn_dims *d, mgk_h16 *dq, mgk_h16 *dk,
                      mgk_h16 *dv, const mgk_h16 *dout, const float *saved, const mgk_h16 *q,
                      const mgk_h16 *kk, const mgk_h16 *v, const int32_t *seg)
{
    CUDA_ONLY(attn_bwd_h16, (k, d, dq, dk, dv, dout, saved, q, kk, v, seg));
}

void mgk_xent_fwd_h16(const mg_kctx *k, float *loss, float *lse, const mgk_h16 *logits,
                      const int32_t *targets, int64_t N, int64_t Vp, int64_t vocab)
{
    CUDA_ONLY(xent_fwd_h16, (k, loss, lse, logits, targets, N, Vp, vocab));
}

void mgk_xent_partial_h16(const mg_kctx *k, float *rowmax, float *rowsum, float *tgt,
                          const mgk_h16 *logits, const int32_t *targets, int64_t N, int64_t Vl,
                          int64_t col0, int64_t vocab)
{
    CUDA_ONLY(xent_partial_h16, (k, rowmax, rowsum, tgt, logits, targets, N, Vl, col0, vocab));
}

void mgk_xent_bwd_h16(const mg_kctx *k, mgk_h16 *dlogits, const mgk_h16 *logits,
                      const float *lse, const int32_t *targets, const float *mask, float scale,
                      int64_t N, int64_t Vl, int64_t col0, int64_t vocab)
{
    CUDA_ONLY(xent_bwd_h16, (k, dlogits, logits, lse, targets, mask, scale, N, Vl, col0, vocab));
}

void mgk_adamw_h16(const mg_kctx *k, float *param, mgk_h16 *param16, float *m, float *v,
                   const float *grad, int64_t n, const mgk_adamw_hp *hp, int decay)
{
    CUDA_ONLY(adamw_h16, (k, param, param16, m, v, grad, n, hp, decay));
}

/* kernel_ops.h — every op of kernels.h with its return type and parameter list, written once.
 *
 * Contract: MGK_OPS(X) expands X(ret, name, params) for each op, so each backend's internal
 * header declares its implementations (mgk_ref_NAME, mgk_fast_NAME, mgk_cuda_NAME) from this
 * one list and the signatures cannot drift apart. Include after kernels.h.
 */
#ifndef MG_KERNEL_OPS_H
#define MG_KERNEL_OPS_H

#include "kernels.h"

#define MGK_OPS(X) \
    X(void, gemm, (const mg_kctx *k, float *C, int64_t ldc, const float *A, int64_t lda, \
          const float *B, int64_t ldb, int64_t M, int64_t N, int64_t K, int ta, int tb, \
          float alpha, float beta)) \
    X(void, linear_fwd, (const mg_kctx *k, float *out, const float *inp, const float *W, \
          const float *bias, int64_t N, int64_t IN, int64_t OUT)) \
    X(void, linear_bwd, (const mg_kctx *k, float *dinp, float *dW, float *dbias, \
          const float *dout, const float *inp, const float *W, int64_t N, int64_t IN, \
          int64_t OUT)) \
    X(void, bias_add, (const mg_kctx *k, float *x, const float *bias, int64_t N, int64_t C)) \
    X(void, bias_grad, (const mg_kctx *k, float *dbias, const float *dout, int64_t N, \
          int64_t C)) \
    X(void, zero, (const mg_kctx *k, float *x, int64_t n)) \
    X(void, copy, (const mg_kctx *k, float *dst, const float *src, int64_t n)) \
    X(void, add, (const mg_kctx *k, float *out, const float *a, const float *b, int64_t n)) \
    X(void, accumulate, (const mg_kctx *k, float *y, const float *x, int64_t n)) \
    X(void, scale, (const mg_kctx *k, float *x, int64_t n, float alpha)) \
    X(void, embedding_fwd, (const mg_kctx *k, float *out, const int32_t *ids, \
          const float *table, int64_t N, int64_t C, int64_t row0, int64_t nrows, \
          int accumulate)) \
    X(void, embedding_bwd, (const mg_kctx *k, float *dtable, const float *dout, \
          const int32_t *ids, int64_t N, int64_t C, int64_t row0, int64_t nrows)) \
    X(void, layernorm_fwd, (const mg_kctx *k, float *out, float *mean, float *rstd, \
          const float *inp, const float *w, const float *b, int64_t N, int64_t C, float eps)) \
    X(void, layernorm_bwd, (const mg_kctx *k, float *dinp, float *dw, float *db, \
          const float *dout, const float *inp, const float *w, const float *mean, \
          const float *rstd, int64_t N, int64_t C)) \
    X(void, rmsnorm_fwd, (const mg_kctx *k, float *out, float *rstd, const float *inp, \
          const float *w, int64_t N, int64_t C, float eps)) \
    X(void, rmsnorm_bwd, (const mg_kctx *k, float *dinp, float *dw, const float *dout, \
          const float *inp, const float *w, const float *rstd, int64_t N, int64_t C)) \
    X(void, gelu_fwd, (const mg_kctx *k, float *out, const float *inp, int64_t n, \
          mgk_gelu_kind kind)) \
    X(void, gelu_bwd, (const mg_kctx *k, float *dinp, const float *dout, const float *inp, \
          int64_t n, mgk_gelu_kind kind)) \
    X(void, swiglu_fwd, (const mg_kctx *k, float *out, const float *inp, int64_t N, int64_t F)) \
    X(void, swiglu_bwd, (const mg_kctx *k, float *dinp, const float *dout, const float *inp, \
          int64_t N, int64_t F)) \
    X(void, rope_fwd, (const mg_kctx *k, float *out, const float *inp, const int32_t *pos, \
          int64_t B, int64_t T, int64_t H, int64_t D, int64_t rot_dim, float base)) \
    X(void, rope_bwd, (const mg_kctx *k, float *dinp, const float *dout, const int32_t *pos, \
          int64_t B, int64_t T, int64_t H, int64_t D, int64_t rot_dim, float base)) \
    X(void, qkv_split, (const mg_kctx *k, float *q, float *kk, float *v, const float *qkv, \
          int64_t N, int64_t Hq, int64_t Hkv, int64_t D)) \
    X(void, qkv_merge, (const mg_kctx *k, float *qkv, const float *q, const float *kk, \
          const float *v, int64_t N, int64_t Hq, int64_t Hkv, int64_t D)) \
    X(void, attn_fwd, (const mg_kctx *k, const mgk_attn_dims *d, float *out, float *saved, \
          const float *q, const float *kk, const float *v, const int32_t *seg)) \
    X(void, attn_bwd, (const mg_kctx *k, const mgk_attn_dims *d, float *dq, float *dk, \
          float *dv, const float *dout, const float *saved, const float *q, const float *kk, \
          const float *v, const int32_t *seg)) \
    X(void, xent_partial, (const mg_kctx *k, float *rowmax, float *rowsum, float *tgt, \
          const float *logits, const int32_t *targets, int64_t N, int64_t Vl, int64_t col0, \
          int64_t vocab)) \
    X(void, xent_gmax, (const mg_kctx *k, float *gmax, const float *all, int64_t tp, \
          int64_t N)) \
    X(void, xent_rescale, (const mg_kctx *k, float *rowsum, const float *rowmax, \
          const float *gmax, int64_t N)) \
    X(void, xent_finish, (const mg_kctx *k, float *loss, float *lse, const float *rowmax, \
          const float *rowsum, const float *tgt, int64_t N)) \
    X(void, xent_fwd, (const mg_kctx *k, float *loss, float *lse, const float *logits, \
          const int32_t *targets, int64_t N, int64_t Vp, int64_t vocab)) \
    X(void, xent_bwd, (const mg_kctx *k, float *dlogits, const float *logits, const float *lse, \
          const int32_t *targets, const float *mask, float scale, int64_t N, int64_t Vl, \
          int64_t col0, int64_t vocab)) \
    X(void, adamw, (const mg_kctx *k, float *param, float *m, float *v, const float *grad, \
          int64_t n, const mgk_adamw_hp *hp, int decay)) \
    X(double, sumsq, (const mg_kctx *k, const float *x, int64_t n)) \
    X(double, sum, (const mg_kctx *k, const float *x, const float *mask, int64_t n))

#endif

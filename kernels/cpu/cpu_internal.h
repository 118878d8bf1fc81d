/* cpu_internal.h — private to kernels/: the CPU implementations behind kernels.h.
 *
 * Contract: for every op NAME of kernels.h there are two functions with exactly the public
 * signature, mgk_ref_NAME (kernels/cpu/ref_*.c: plain loops, the definition of the op) and
 * mgk_fast_NAME (kernels/cpu/fast_*.c: OpenMP + BLAS). kernels.c dispatches on k->backend.
 * Also the OpenMP helpers shared by the fast files. Never included outside kernels/ and the
 * kernel tests.
 */
#ifndef MG_KERNELS_CPU_INTERNAL_H
#define MG_KERNELS_CPU_INTERNAL_H

#include <math.h>

#include "kernels.h"

#if MG_HAVE_OPENMP
#define MGK_PRAGMA(x) _Pragma(#x)
/* A parallel for over the next loop with the context's thread count. */
#define MGK_OMP_FOR(nt) MGK_PRAGMA(omp parallel for num_threads(nt) schedule(static))
#define MGK_OMP_FOR_DYN(nt) MGK_PRAGMA(omp parallel for num_threads(nt) schedule(dynamic, 1))
#else
/* Serial: one statement that uses nt (no unused-parameter warnings) and runs the loop. */
#define MGK_OMP_FOR(nt) if (((void)(nt), 1))
#define MGK_OMP_FOR_DYN(nt) if (((void)(nt), 1))
#endif

/* Elements per chunk of the thread-count-independent reductions (mgk_sumsq, mgk_sum). */
#define MGK_SUM_CHUNK ((int64_t)1 << 14)

#define MGK_DECLARE(name, params) \
    void mgk_ref_##name params;   \
    void mgk_fast_##name params;

MGK_DECLARE(gemm, (const mg_kctx *k, float *C, int64_t ldc, const float *A, int64_t lda,
                   const float *B, int64_t ldb, int64_t M, int64_t N, int64_t K, int ta, int tb,
                   float alpha, float beta))
MGK_DECLARE(linear_fwd, (const mg_kctx *k, float *out, const float *inp, const float *W,
                         const float *bias, int64_t N, int64_t IN, int64_t OUT))
MGK_DECLARE(linear_bwd, (const mg_kctx *k, float *dinp, float *dW, float *dbias,
                         const float *dout, const float *inp, const float *W, int64_t N,
                         int64_t IN, int64_t OUT))
MGK_DECLARE(bias_add, (const mg_kctx *k, float *x, const float *bias, int64_t N, int64_t C))
MGK_DECLARE(bias_grad, (const mg_kctx *k, float *dbias, const float *dout, int64_t N, int64_t C))
MGK_DECLARE(zero, (const mg_kctx *k, float *x, int64_t n))
MGK_DECLARE(add, (const mg_kctx *k, float *out, const float *a, const float *b, int64_t n))
MGK_DECLARE(accumulate, (const mg_kctx *k, float *y, const float *x, int64_t n))
MGK_DECLARE(scale, (const mg_kctx *k, float *x, int64_t n, float alpha))
MGK_DECLARE(embedding_fwd, (const mg_kctx *k, float *out, const int32_t *ids,
                            const float *table, int64_t N, int64_t C, int64_t row0,
                            int64_t nrows, int accumulate))
MGK_DECLARE(embedding_bwd, (const mg_kctx *k, float *dtable, const float *dout,
                            const int32_t *ids, int64_t N, int64_t C, int64_t row0,
                            int64_t nrows))
MGK_DECLARE(layernorm_fwd, (const mg_kctx *k, float *out, float *mean, float *rstd,
                            const float *inp, const float *w, const float *b, int64_t N,
                            int64_t C, float eps))
MGK_DECLARE(layernorm_bwd, (const mg_kctx *k, float *dinp, float *dw, float *db,
                            const float *dout, const float *inp, const float *w,
                            const float *mean, const float *rstd, int64_t N, int64_t C))
MGK_DECLARE(rmsnorm_fwd, (const mg_kctx *k, float *out, float *rstd, const float *inp,
                          const float *w, int64_t N, int64_t C, float eps))
MGK_DECLARE(rmsnorm_bwd, (const mg_kctx *k, float *dinp, float *dw, const float *dout,
                          const float *inp, const float *w, const float *rstd, int64_t N,
                          int64_t C))
MGK_DECLARE(gelu_fwd, (const mg_kctx *k, float *out, const float *inp, int64_t n,
                       mgk_gelu_kind kind))
MGK_DECLARE(gelu_bwd, (const mg_kctx *k, float *dinp, const float *dout, const float *inp,
                       int64_t n, mgk_gelu_kind kind))
MGK_DECLARE(swiglu_fwd, (const mg_kctx *k, float *out, const float *inp, int64_t N, int64_t F))
MGK_DECLARE(swiglu_bwd, (const mg_kctx *k, float *dinp, const float *dout, const float *inp,
                         int64_t N, int64_t F))
MGK_DECLARE(rope_fwd, (const mg_kctx *k, float *out, const float *inp, const int32_t *pos,
                       int64_t B, int64_t T, int64_t H, int64_t D, int64_t rot_dim, float base))
MGK_DECLARE(rope_bwd, (const mg_kctx *k, float *dinp, const float *dout, const int32_t *pos,
                       int64_t B, int64_t T, int64_t H, int64_t D, int64_t rot_dim, float base))
MGK_DECLARE(qkv_split, (const mg_kctx *k, float *q, float *kk, float *v, const float *qkv,
                        int64_t N, int64_t Hq, int64_t Hkv, int64_t D))
MGK_DECLARE(qkv_merge, (const mg_kctx *k, float *qkv, const float *q, const float *kk,
                        const float *v, int64_t N, int64_t Hq, int64_t Hkv, int64_t D))
/* One row of the QKV layout change (shared by ref and fast). */
void mgk_qkv_row_split(float *q, float *kk, float *v, const float *row, int64_t Hq, int64_t Hkv,
                       int64_t D);
void mgk_qkv_row_merge(float *row, const float *q, const float *kk, const float *v, int64_t Hq,
                       int64_t Hkv, int64_t D);
MGK_DECLARE(attn_fwd, (const mg_kctx *k, const mgk_attn_dims *d, float *out, float *saved,
                       const float *q, const float *kk, const float *v, const int32_t *seg))
MGK_DECLARE(attn_bwd, (const mg_kctx *k, const mgk_attn_dims *d, float *dq, float *dk,
                       float *dv, const float *dout, const float *saved, const float *q,
                       const float *kk, const float *v, const int32_t *seg))
MGK_DECLARE(xent_partial, (const mg_kctx *k, float *rowmax, float *rowsum, float *tgt,
                           const float *logits, const int32_t *targets, int64_t N, int64_t Vl,
                           int64_t col0, int64_t vocab))
MGK_DECLARE(xent_rescale, (const mg_kctx *k, float *rowsum, const float *rowmax,
                           const float *gmax, int64_t N))
MGK_DECLARE(xent_finish, (const mg_kctx *k, float *loss, float *lse, const float *rowmax,
                          const float *rowsum, const float *tgt, int64_t N))
MGK_DECLARE(xent_fwd, (const mg_kctx *k, float *loss, float *lse, const float *logits,
                       const int32_t *targets, int64_t N, int64_t Vp, int64_t vocab))
MGK_DECLARE(xent_bwd, (const mg_kctx *k, float *dlogits, const float *logits, const float *lse,
                       const int32_t *targets, const float *mask, float scale, int64_t N,
                       int64_t Vl, int64_t col0, int64_t vocab))
MGK_DECLARE(adamw, (const mg_kctx *k, float *param, float *m, float *v, const float *grad,
                    int64_t n, const mgk_adamw_hp *hp, int decay))

double mgk_ref_sumsq(const mg_kctx *k, const float *x, int64_t n);
double mgk_fast_sumsq(const mg_kctx *k, const float *x, int64_t n);
double mgk_ref_sum(const mg_kctx *k, const float *x, const float *mask, int64_t n);
double mgk_fast_sum(const mg_kctx *k, const float *x, const float *mask, int64_t n);

/* Shared scalar definitions (ref and fast use the same formulas). */
/* inv_freq[i] = 1 / base^(2i/rot_dim) in fp32, as torch computes it. */
float mgk_rope_inv_freq(int64_t i, int64_t rot_dim, float base);
/* One AdamW element update, in torch.optim.AdamW's operation order. */
typedef struct mgk_adamw_coef {
    float lr, lerp_w, beta2, one_minus_beta2, eps, decay_mul, neg_step_size, bc2_sqrt, grad_scale;
} mgk_adamw_coef;
mgk_adamw_coef mgk_adamw_coefs(const mgk_adamw_hp *hp, int decay);
/* p *= 1 - lr wd; m = lerp(m, g, 1 - b1); v = v b2 + (1 - b2) g g;
 * p += -step_size * m / (sqrt(v) / sqrt(bc2) + eps).
 * lerp and the addcmul use fused multiply-adds as torch's vectorised CPU kernels do, which
 * makes m and v bitwise equal to torch.optim.AdamW (p agrees to an ulp). Only correctly
 * rounded operations (fmaf, sqrtf, +, *, /; no contraction under -std=c11), so a vectorised
 * loop over it gives the same bits as the scalar one. */
static inline void mgk_adamw_elem(const mgk_adamw_coef *c, float *p, float *m, float *v,
                                  float g)
{
    if (c->grad_scale != 1.0f) g *= c->grad_scale;
    *p *= c->decay_mul;
    *m = c->lerp_w < 0.5f ? fmaf(c->lerp_w, g - *m, *m) : fmaf(c->lerp_w - 1.0f, g - *m, g);
    *v = fmaf(c->one_minus_beta2 * g, g, *v * c->beta2);
    float denom = sqrtf(*v) / c->bc2_sqrt + c->eps;
    *p = *p + c->neg_step_size * *m / denom;
}

/* gemm by BLAS when built with it (OpenBLAS runs single-threaded inside a parallel region),
 * else by plain loops on the calling thread: the fast attention calls it per head. */
void mgk_gemm_inner(float *C, int64_t ldc, const float *A, int64_t lda, const float *B, int64_t ldb,
                 int64_t M, int64_t N, int64_t K, int ta, int tb, float alpha, float beta);

#endif

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

#include "kernel_ops.h" /* includes kernels.h */

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

/* mgk_ref_NAME and mgk_fast_NAME for every op of kernel_ops.h. */
#define MGK_DECLARE(ret, name, params) \
    ret mgk_ref_##name params;         \
    ret mgk_fast_##name params;
MGK_OPS(MGK_DECLARE)
#undef MGK_DECLARE

/* One row of the QKV layout change (shared by ref and fast). */
void mgk_qkv_row_split(float *q, float *kk, float *v, const float *row, int64_t Hq, int64_t Hkv,
                       int64_t D);
void mgk_qkv_row_merge(float *row, const float *q, const float *kk, const float *v, int64_t Hq,
                       int64_t Hkv, int64_t D);
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

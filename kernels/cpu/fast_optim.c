/* fast_optim.c — OpenMP AdamW: the reference's element update (mgk_adamw_elem) over
 * elements in parallel and, where the CPU has AVX2 and FMA, vectorised (fmaf, sqrtf and the
 * arithmetic are correctly rounded in every lane), so it equals the reference bitwise for
 * any thread count and either instruction set.
 */
#include "cpu_internal.h"

#define ADAMW_BLOCK ((int64_t)1 << 14) /* elements per parallel work item */

static void adamw_block(const mgk_adamw_coef *c, float *restrict p, float *restrict m,
                        float *restrict v, const float *restrict g, int64_t n)
{
    for (int64_t i = 0; i < n; i++) mgk_adamw_elem(c, p + i, m + i, v + i, g[i]);
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define ADAMW_X86 1
/* mgk_adamw_elem on 8 lanes, operation for operation; the tail goes through the scalar. */
__attribute__((target("avx2,fma"))) static void adamw_block_avx2(
    const mgk_adamw_coef *c, float *restrict p, float *restrict m, float *restrict v,
    const float *restrict g, int64_t n)
{
    const __m256 gs = _mm256_set1_ps(c->grad_scale), dm = _mm256_set1_ps(c->decay_mul);
    const __m256 lw = _mm256_set1_ps(c->lerp_w < 0.5f ? c->lerp_w : c->lerp_w - 1.0f);
    const __m256 ob2 = _mm256_set1_ps(c->one_minus_beta2), b2 = _mm256_set1_ps(c->beta2);
    const __m256 bc2 = _mm256_set1_ps(c->bc2_sqrt), eps = _mm256_set1_ps(c->eps);
    const __m256 nss = _mm256_set1_ps(c->neg_step_size);
    const int scale = c->grad_scale != 1.0f, low = c->lerp_w < 0.5f;
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 gi = _mm256_loadu_ps(g + i), mi = _mm256_loadu_ps(m + i);
        __m256 vi = _mm256_loadu_ps(v + i);
        if (scale) gi = _mm256_mul_ps(gi, gs);
        __m256 pi = _mm256_mul_ps(_mm256_loadu_ps(p + i), dm);
        __m256 d = _mm256_sub_ps(gi, mi);
        mi = _mm256_fmadd_ps(lw, d, low ? mi : gi);
        vi = _mm256_fmadd_ps(_mm256_mul_ps(ob2, gi), gi, _mm256_mul_ps(vi, b2));
        __m256 denom = _mm256_add_ps(_mm256_div_ps(_mm256_sqrt_ps(vi), bc2), eps);
        pi = _mm256_add_ps(pi, _mm256_div_ps(_mm256_mul_ps(nss, mi), denom));
        _mm256_storeu_ps(p + i, pi);
        _mm256_storeu_ps(m + i, mi);
        _mm256_storeu_ps(v + i, vi);
    }
    adamw_block(c, p + i, m + i, v + i, g + i, n - i);
}
#else
#define ADAMW_X86 0
#endif

void mgk_fast_adamw(const mg_kctx *k, float *param, float *m, float *v, const float *grad,
                    int64_t n, const mgk_adamw_hp *hp, int decay)
{
    mgk_adamw_coef c = mgk_adamw_coefs(hp, decay);
    void (*block)(const mgk_adamw_coef *, float *, float *, float *, const float *, int64_t) =
        adamw_block;
#if ADAMW_X86
    if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) block = adamw_block_avx2;
#endif
    int64_t nb = (n + ADAMW_BLOCK - 1) / ADAMW_BLOCK;
    MGK_OMP_FOR(k->nthreads)
    for (int64_t b = 0; b < nb; b++) {
        int64_t i = b * ADAMW_BLOCK, len = n - i < ADAMW_BLOCK ? n - i : ADAMW_BLOCK;
        block(&c, param + i, m + i, v + i, grad + i, len);
    }
}

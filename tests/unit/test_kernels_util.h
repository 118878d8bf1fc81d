/* test_kernels_util.h — helpers shared by the kernel unit tests (test_kernels*.c): a
 * deterministic random generator, buffers, and the tolerance check
 *     |a - b| <= atol + rtol * |b|   (b is the reference)
 * which reports the first offending element and the worst error. Test-only, header-only.
 */
#ifndef MG_TEST_KERNELS_UTIL_H
#define MG_TEST_KERNELS_UTIL_H

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "kernels.h"

static inline float kt_rand(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return (float)((double)(*s >> 11) / 9007199254740992.0 * 2.0 - 1.0);
}

/* n floats uniform in [-scale, scale), from seed (never 0). */
static inline float *kt_randn(int64_t n, uint64_t seed, float scale)
{
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int64_t i = 0; i < n; i++) p[i] = scale * kt_rand(&s);
    return p;
}

static inline float *kt_dup(const float *x, int64_t n)
{
    float *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(float));
    if (n > 0) memcpy(p, x, (size_t)n * sizeof(float));
    return p;
}

static inline int32_t *kt_ids(int64_t n, uint64_t seed, int32_t lo, int32_t hi)
{
    int32_t *p = malloc((size_t)(n > 0 ? n : 1) * sizeof(int32_t));
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    for (int64_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        p[i] = lo + (int32_t)((s >> 11) % (uint64_t)(hi - lo));
    }
    return p;
}

/* Checks a (candidate) against b (reference) elementwise; returns 1 when all pass. */
static inline int kt_close_at(mg_test_ctx *t, const char *file, int line, const char *what,
                              const float *a, const float *b, int64_t n, double atol,
                              double rtol)
{
    int64_t bad = -1, worst = 0;
    double worst_err = 0.0;
    for (int64_t i = 0; i < n; i++) {
        double err = fabs((double)a[i] - b[i]), lim = atol + rtol * fabs((double)b[i]);
        if (!(err <= lim) && bad < 0) bad = i;
        if (err > worst_err || err != err) worst_err = err, worst = i;
    }
    if (bad < 0) return 1;
    mg_test_fail(t, file, line,
                 "%s: element %lld: %.9g vs ref %.9g (atol %g rtol %g); worst |err| %.3g at %lld",
                 what, (long long)bad, a[bad], b[bad], atol, rtol, worst_err, (long long)worst);
    return 0;
}
#define KT_CLOSE(t, what, a, b, n, atol, rtol) \
    kt_close_at((t), __FILE__, __LINE__, (what), (a), (b), (n), (atol), (rtol))

/* Bitwise equality (the ops documented as identical across backends). */
#define KT_SAME(t, what, a, b, n) \
    MG_CHECK((t), memcmp((a), (b), (size_t)(n) * sizeof(float)) == 0 && (what))

/* A reference and a fast context, each with scratch floats reserved. */
static inline void kt_ctx_pair(mg_test_ctx *t, mg_kctx *ref, mg_kctx *fast, int64_t scratch)
{
    MG_CHECK_OK(t, mgk_ctx_init(ref, MGK_CPU_REF, 0));
    MG_CHECK_OK(t, mgk_ctx_init(fast, MGK_CPU_FAST, 0));
    MG_CHECK_OK(t, mgk_ctx_reserve(ref, scratch));
    MG_CHECK_OK(t, mgk_ctx_reserve(fast, scratch));
}

static inline void kt_ctx_pair_free(mg_kctx *ref, mg_kctx *fast)
{
    mgk_ctx_free(ref);
    mgk_ctx_free(fast);
}

#endif

/* cuda_test_util.h — helpers of the CUDA kernel tests (tests/cuda/NAME.c): a pair of contexts
 * (CPU reference and CUDA) with a list of the buffers a test allocates, host <-> device
 * copies, bf16 rounding, and the tolerance check of tests/unit/test_kernels_util.h
 *     |a - b| <= atol + rtol * |b|   (b is the CPU reference)
 * The same tests run on the host emulator (build/test-cuda-emu) and on a GPU (build/test-gpu).
 * Test-only, header-only.
 */
#ifndef MG_CUDA_TEST_UTIL_H
#define MG_CUDA_TEST_UTIL_H

#include "cuda/kernels_cuda.h"
#include "test_kernels_util.h"

#define CT_MAX_BUFS 1024

/* One test's contexts and the buffers to free at its end. */
typedef struct ct {
    mg_test_ctx *t;
    mg_kctx ref, dev;
    int ok; /* both contexts exist */
    void *dbuf[CT_MAX_BUFS], *hbuf[CT_MAX_BUFS];
    int nd, nh;
} ct;

static inline void ct_begin(ct *c, mg_test_ctx *t)
{
    memset(c, 0, sizeof *c);
    c->t = t;
    MG_CHECK_OK(t, mgk_ctx_init(&c->ref, MGK_CPU_REF, 1));
    mg_status st = mgk_ctx_init(&c->dev, MGK_CUDA, 1);
    MG_CHECK_OK(t, st);
    c->ok = st == MG_OK;
}

static inline void ct_end(ct *c)
{
    for (int i = 0; i < c->nd; i++) mgk_cuda_free(c->dbuf[i]);
    for (int i = 0; i < c->nh; i++) free(c->hbuf[i]);
    if (c->ok) MG_CHECK_OK(c->t, mgk_cuda_sync(&c->dev));
    mgk_ctx_free(&c->ref);
    if (c->ok) mgk_ctx_free(&c->dev);
}

/* A host buffer freed by ct_end (the kt_* allocators' results go through it). */
static inline void *ct_host(ct *c, void *p)
{
    MG_ASSERT(c->nh < CT_MAX_BUFS);
    c->hbuf[c->nh++] = p;
    return p;
}

static inline void *ct_dalloc(ct *c, size_t bytes)
{
    MG_ASSERT(c->nd < CT_MAX_BUFS);
    void *p = mgk_cuda_alloc(bytes > 0 ? bytes : 1);
    MG_ASSERT(p != NULL);
    c->dbuf[c->nd++] = p;
    return p;
}

/* Device copy of n elements of size es. */
static inline void *ct_up(ct *c, const void *h, int64_t n, size_t es)
{
    void *d = ct_dalloc(c, (size_t)n * es);
    if (n > 0) MG_CHECK_OK(c->t, mgk_cuda_upload(d, h, (size_t)n * es));
    return d;
}
#define CT_UPF(c, h, n) ((float *)ct_up((c), (h), (n), sizeof(float)))
#define CT_UPI(c, h, n) ((int32_t *)ct_up((c), (h), (n), sizeof(int32_t)))

/* Host copy (freed by ct_end) of n floats of device memory. */
static inline float *ct_down(ct *c, const float *d, int64_t n)
{
    float *h = (float *)ct_host(c, malloc((size_t)(n > 0 ? n : 1) * sizeof(float)));
    if (n > 0) MG_CHECK_OK(c->t, mgk_cuda_download(h, d, (size_t)n * sizeof(float)));
    return h;
}

/* Random floats uniform in [-scale, scale), freed by ct_end. */
static inline float *ct_rand(ct *c, int64_t n, uint64_t seed, float scale)
{
    return (float *)ct_host(c, kt_randn(n, seed, scale));
}

/* Document segments (B, T) for the attention mask: n per sequence, the second sequence's
 * shifted by one after t = 2 (ragged boundaries). */
static inline int32_t *ct_segments(ct *c, int64_t B, int64_t T, int n)
{
    int32_t *s = (int32_t *)ct_host(c, malloc((size_t)(B * T) * sizeof(int32_t)));
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++) s[b * T + t] = (int32_t)((t * n) / T + (b == 1 && t > 2));
    return s;
}

static inline float *ct_dup(ct *c, const float *x, int64_t n)
{
    return (float *)ct_host(c, kt_dup(x, n));
}

/* ---- bf16 ---------------------------------------------------------------------------------- */

static inline mgk_h16 ct_f2bf(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0; /* NaN */
    u += 0x7fffu + ((u >> 16) & 1u);                     /* round to nearest even */
    return (mgk_h16)(u >> 16);
}

static inline float ct_bf2f(mgk_h16 b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* Rounds x to bf16 values in place (the reference then sees the bf16 inputs exactly). */
static inline float *ct_round_bf16(float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) x[i] = ct_bf2f(ct_f2bf(x[i]));
    return x;
}

/* Device bf16 copy of n floats (already bf16 values: ct_round_bf16). */
static inline mgk_h16 *ct_up_bf16(ct *c, const float *h, int64_t n)
{
    mgk_h16 *tmp = (mgk_h16 *)malloc((size_t)(n > 0 ? n : 1) * sizeof(mgk_h16));
    for (int64_t i = 0; i < n; i++) tmp[i] = ct_f2bf(h[i]);
    mgk_h16 *d = (mgk_h16 *)ct_up(c, tmp, n, sizeof(mgk_h16));
    free(tmp);
    return d;
}

/* n random bf16 values: the host floats (for the reference) and a device bf16 copy. */
static inline float *ct_bf_in(ct *c, int64_t n, uint64_t seed, float scale, mgk_h16 **dev)
{
    float *h = ct_round_bf16(ct_rand(c, n, seed, scale), n);
    *dev = ct_up_bf16(c, h, n);
    return h;
}

/* Host float copy (freed by ct_end) of n bf16 values of device memory. */
static inline float *ct_down_bf16(ct *c, const mgk_h16 *d, int64_t n)
{
    mgk_h16 *tmp = (mgk_h16 *)malloc((size_t)(n > 0 ? n : 1) * sizeof(mgk_h16));
    float *h = (float *)ct_host(c, malloc((size_t)(n > 0 ? n : 1) * sizeof(float)));
    if (n > 0) MG_CHECK_OK(c->t, mgk_cuda_download(tmp, d, (size_t)n * sizeof(mgk_h16)));
    for (int64_t i = 0; i < n; i++) h[i] = ct_bf2f(tmp[i]);
    free(tmp);
    return h;
}

#endif

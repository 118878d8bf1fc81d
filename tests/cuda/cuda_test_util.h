/* cuda_test_util.h — helpers of the CUDA kernel tests (tests/cuda/NAME.c): a pair of contexts
 * (CPU reference and CUDA) with a list of the buffers a test allocates, host <-> device
 * copies, bf16 / fp16 rounding (the CUDA context's 16-bit type), and the tolerance check of
 * tests/unit/test_kernels_util.h
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
    char label[128]; /* ct_label's */
} ct;

/* The CUDA context's _h16 ops take 16-bit values of type half. */
static inline void ct_begin_half(ct *c, mg_test_ctx *t, mgk_half half)
{
    memset(c, 0, sizeof *c);
    c->t = t;
    MG_CHECK_OK(t, mgk_ctx_init(&c->ref, MGK_CPU_REF, 1));
    mg_status st = mgk_ctx_init_half(&c->dev, MGK_CUDA, 1, half);
    MG_CHECK_OK(t, st);
    c->ok = st == MG_OK;
}

static inline void ct_begin(ct *c, mg_test_ctx *t)
{
    ct_begin_half(c, t, MGK_HALF_BF16);
}

/* "what (bf16)" or "what (fp16)": a check's name with the context's 16-bit type (valid until
 * the next call). */
static inline const char *ct_label(ct *c, const char *what)
{
    snprintf(c->label, sizeof c->label, "%s (%s)", what, mgk_half_name(c->dev.half));
    return c->label;
}

static inline void ct_end(ct *c)
{
    for (int i = 0; i < c->nd; i++) mgk_cuda_free(c->dbuf[i]);
    for (int i = 0; i < c->nh; i++) free(c->hbuf[i]);
    if (c->ok) MG_CHECK_OK(c->t, mgk_cuda_sync(&c->dev));
    mgk_ctx_free(&c->ref);
    if (c->ok) mgk_ctx_free(&c->dev);
}

/* Runs cases once on bf16 and once on fp16 contexts. */
static inline void ct_each_half(mg_test_ctx *t, void (*cases)(ct *c))
{
    for (int h = MGK_HALF_BF16; h <= MGK_HALF_FP16; h++) {
        ct c;
        ct_begin_half(&c, t, (mgk_half)h);
        if (c.ok) cases(&c);
        ct_end(&c);
    }
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

/* The 16-bit attention implementations' signatures (kernels_cuda.h mgk_cuda_attn_*_h16*). */
typedef void (*ct_attn_fwd_fn)(const mg_kctx *, const mgk_attn_dims *, mgk_h16 *, float *,
                               const mgk_h16 *, const mgk_h16 *, const mgk_h16 *,
                               const int32_t *);
typedef void (*ct_attn_bwd_fn)(const mg_kctx *, const mgk_attn_dims *, mgk_h16 *, mgk_h16 *,
                               mgk_h16 *, const mgk_h16 *, const float *, const mgk_h16 *,
                               const mgk_h16 *, const mgk_h16 *, const int32_t *);

/* ---- 16-bit values ------------------------------------------------------------------------- */

static inline uint16_t ct_f2bf(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    if ((u & 0x7fffffffu) > 0x7f800000u) return 0x7fc0; /* NaN */
    u += 0x7fffu + ((u >> 16) & 1u);                     /* round to nearest even */
    return (uint16_t)(u >> 16);
}

static inline float ct_bf2f(uint16_t b)
{
    uint32_t u = (uint32_t)b << 16;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

/* IEEE binary16, rounded to nearest even (subnormals included, overflow to infinity). */
static inline uint16_t ct_f2h(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu;
    if (a > 0x7f800000u) return sign | 0x7e00;  /* NaN */
    if (a >= 0x477ff000u) return sign | 0x7c00; /* >= 65520: infinity */
    if (a >= 0x38800000u) {                     /* normal: rebias 127 -> 15, round 13 bits */
        uint32_t r = a - 0x38000000u;
        r += 0xfffu + ((r >> 13) & 1u);
        return sign | (uint16_t)(r >> 13);
    }
    float v;
    memcpy(&v, &a, 4);
    return sign | (uint16_t)nearbyintf(v * 16777216.0f); /* subnormal: units of 2^-24 */
}

static inline float ct_h2f(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16, e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
    if (e == 0) {
        float f = ldexpf((float)m, -24);
        return sign ? -f : f;
    }
    uint32_t u = sign | (e == 31 ? 0x7f800000u : (e + 112) << 23) | (m << 13);
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static inline uint16_t ct_f2h16(const ct *c, float f)
{
    return c->dev.half == MGK_HALF_FP16 ? ct_f2h(f) : ct_f2bf(f);
}

static inline float ct_h162f(const ct *c, uint16_t h)
{
    return c->dev.half == MGK_HALF_FP16 ? ct_h2f(h) : ct_bf2f(h);
}

/* Tolerances of a result rounded once to the context's 16-bit type: |got - ref| <= atol +
 * rtol |ref| with atol = rtol = ct_tol16 (bf16 1e-2: 2^-8 relative rounding plus fp32-vs-
 * reference arithmetic; fp16 2e-3: 2^-11 relative rounding, four times over). */
static inline double ct_tol16(const ct *c)
{
    return c->dev.half == MGK_HALF_FP16 ? 2e-3 : 1e-2;
}

/* Rounds x to 16-bit values in place (the reference then sees the 16-bit inputs exactly). */
static inline float *ct_round16(const ct *c, float *x, int64_t n)
{
    for (int64_t i = 0; i < n; i++) x[i] = ct_h162f(c, ct_f2h16(c, x[i]));
    return x;
}

/* Device 16-bit copy of n floats (already 16-bit values: ct_round16). */
static inline mgk_h16 *ct_up16(ct *c, const float *h, int64_t n)
{
    mgk_h16 *tmp = (mgk_h16 *)malloc((size_t)(n > 0 ? n : 1) * sizeof(mgk_h16));
    for (int64_t i = 0; i < n; i++) tmp[i] = ct_f2h16(c, h[i]);
    mgk_h16 *d = (mgk_h16 *)ct_up(c, tmp, n, sizeof(mgk_h16));
    free(tmp);
    return d;
}

/* n random 16-bit values: the host floats (for the reference) and a device 16-bit copy. */
static inline float *ct_in16(ct *c, int64_t n, uint64_t seed, float scale, mgk_h16 **dev)
{
    float *h = ct_round16(c, ct_rand(c, n, seed, scale), n);
    *dev = ct_up16(c, h, n);
    return h;
}

/* Host float copy (freed by ct_end) of n 16-bit values of device memory. */
static inline float *ct_down16(ct *c, const mgk_h16 *d, int64_t n)
{
    mgk_h16 *tmp = (mgk_h16 *)malloc((size_t)(n > 0 ? n : 1) * sizeof(mgk_h16));
    float *h = (float *)ct_host(c, malloc((size_t)(n > 0 ? n : 1) * sizeof(float)));
    if (n > 0) MG_CHECK_OK(c->t, mgk_cuda_download(tmp, d, (size_t)n * sizeof(mgk_h16)));
    for (int64_t i = 0; i < n; i++) h[i] = ct_h162f(c, tmp[i]);
    free(tmp);
    return h;
}

#endif

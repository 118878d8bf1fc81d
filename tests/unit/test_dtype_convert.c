/* test_dtype_convert.c — unit tests for mg/dtype_convert.h.
 *
 *   - every BF16 and F16 value (2^16 each) to F32 and back, fast path against the reference,
 *     round trips, and F16 against the compiler's _Float16 (where it has one);
 *   - F32 values to BF16 and to F16 through mg_dtype_convert_parallel against the scalar
 *     reference, and the reference against independent oracles (nearest-value search in
 *     double arithmetic, the compiler's _Float16): all 2^32 values with MG_TEST_EXHAUSTIVE=1
 *     (a few minutes), else ~170 M chosen to hold every rounding case at every exponent;
 *   - F64 <-> F32 on random bit patterns, every exponent and the rounding boundaries;
 *   - fixed anchors (zeros, subnormals, max normal, ties, overflow, NaN payloads, the
 *     double rounding of F64 -> BF16/F16) with the bits torch 2.15 gives for them;
 *   - all 12 float pairs and identity copies through mg_dtype_convert, _part (several
 *     splits, unaligned pointers) and _parallel against the composed references;
 *   - the unsupported pairs and bad arguments.
 */
#include <math.h>
#include <stdlib.h>

#include "harness.h"
#include "mg/dtype_convert.h"

#if MG_HAVE_OPENMP
#include <omp.h>
#endif

#if defined(__FLT16_MAX__)
#define HAVE_FLOAT16 1
#else
#define HAVE_FLOAT16 0
#endif

static uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static uint64_t f64_bits(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static double bits_f64(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

static uint64_t rng_next(uint64_t *s) /* splitmix64 */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15u);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9u;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebu;
    return z ^ (z >> 31);
}

/* ---- independent oracles ---- */

/* Value of a 16-bit pattern with `mbits` mantissa bits and bias `bias` (finite only). */
static double decode16(uint16_t h, int mbits, int bias)
{
    int e = (h & 0x7fff) >> mbits, m = h & ((1 << mbits) - 1);
    double v = e ? ldexp(1.0 + ldexp(m, -mbits), e - bias) : ldexp(m, 1 - bias - mbits);
    return (h & 0x8000) ? -v : v;
}

/* Nearest 16-bit pattern to finite x by binary search over the ordered positive patterns
 * [0, inf_bits]; ties to the even pattern. inf_bits decodes to 2^(emax+1) through
 * decode16's formula, so the midpoint max + ulp/2 is the overflow boundary, as RNE says. */
static uint16_t oracle16(double x, int mbits, int bias, uint16_t inf_bits)
{
    double ax = fabs(x);
    uint16_t sign = signbit(x) ? 0x8000 : 0, lo = 0, hi = inf_bits;
    while (hi - lo > 1) { /* decode16(lo) <= ax < decode16(hi) */
        uint16_t mid = (uint16_t)((lo + hi) / 2);
        if (decode16(mid, mbits, bias) <= ax) lo = mid; else hi = mid;
    }
    if (ax >= decode16(inf_bits, mbits, bias)) return (uint16_t)(sign | inf_bits);
    double dl = ax - decode16(lo, mbits, bias), dh = decode16(hi, mbits, bias) - ax;
    uint16_t r = (dl < dh || (dl == dh && !(lo & 1))) ? lo : hi;
    return (uint16_t)(sign | r);
}

static uint16_t oracle_bf16(float x) { return oracle16(x, 7, 127, 0x7f80); }
static uint16_t oracle_f16(float x) { return oracle16(x, 10, 15, 0x7c00); }

#if HAVE_FLOAT16
static uint16_t cc_f16(float x) /* the compiler's conversion (libgcc or F16C) */
{
    _Float16 h = (_Float16)x;
    uint16_t u;
    memcpy(&u, &h, 2);
    return u;
}
#endif

static int is_nan16(uint16_t h, int mbits)
{
    return ((h & 0x7fff) >> mbits) == (0x7fff >> mbits) && (h & ((1 << mbits) - 1));
}

/* ---- every 16-bit value ---- */

MG_TEST(dtype_bf16_all_to_f32_and_back)
{
    uint16_t src[65536], back[65536];
    float f[65536];
    for (int i = 0; i < 65536; i++) src[i] = (uint16_t)i;
    MG_CHECK_OK(t, mg_dtype_convert(f, MG_TD_F32, src, MG_TD_BF16, 65536));
    MG_CHECK_OK(t, mg_dtype_convert(back, MG_TD_BF16, f, MG_TD_F32, 65536));
    int bad = 0;
    for (int i = 0; i < 65536 && bad < 5; i++) {
        int nan = is_nan16(src[i], 7);
        uint16_t want = nan ? (uint16_t)(src[i] | 0x40) : src[i];
        uint32_t bits = (uint32_t)i << 16;
        int value_ok = nan || isinf(f[i]) || (double)f[i] == decode16(src[i], 7, 127);
        if (f32_bits(f[i]) != bits || f32_bits(mg_bf16_to_f32(src[i])) != bits ||
            back[i] != want || !value_ok) {
            mg_test_fail(t, __FILE__, __LINE__, "bf16 %04x -> %08x -> %04x", i, f32_bits(f[i]),
                         back[i]);
            bad++;
        }
    }
}

static int check_f16_value(mg_test_ctx *t, uint16_t h, float fast, uint16_t back)
{
    uint32_t ref = f32_bits(mg_f16_to_f32(h));
    int nan = is_nan16(h, 10);
    uint32_t want_nan =
        ((uint32_t)(h & 0x8000) << 16) | 0x7fc00000u | ((uint32_t)(h & 0x3ff) << 13);
    int ok = f32_bits(fast) == ref && back == (nan ? (h | 0x200) : h);
    if (nan) ok = ok && ref == want_nan;
    else if ((h & 0x7c00) != 0x7c00) ok = ok && (double)fast == decode16(h, 10, 15);
    else ok = ok && isinf(fast) && !!signbit(fast) == !!(h & 0x8000);
#if HAVE_FLOAT16
    _Float16 hv;
    memcpy(&hv, &h, 2);
    if (!nan) ok = ok && f32_bits((float)hv) == ref;
#endif
    if (!ok) mg_test_fail(t, __FILE__, __LINE__, "f16 %04x -> %08x (ref %08x) -> %04x", h,
                          f32_bits(fast), ref, back);
    return ok;
}

MG_TEST(dtype_f16_all_to_f32_and_back)
{
    uint16_t src[65536], back[65536];
    float f[65536];
    for (int i = 0; i < 65536; i++) src[i] = (uint16_t)i;
    MG_CHECK_OK(t, mg_dtype_convert(f, MG_TD_F32, src, MG_TD_F16, 65536));
    MG_CHECK_OK(t, mg_dtype_convert(back, MG_TD_F16, f, MG_TD_F32, 65536));
    int bad = 0;
    for (int i = 0; i < 65536 && bad < 5; i++) bad += !check_f16_value(t, src[i], f[i], back[i]);
}

/* ---- F32 values: all 2^32 with MG_TEST_EXHAUSTIVE=1, else a sample ---- */

/* The sample: every 251st pattern, plus, for each of the 512 sign+exponent values, all 2^16
 * low bits under two settings of the 7 mantissa bits BF16 keeps (0x00: even, no carry out;
 * 0x7f: odd, carry into the exponent): every rounding remainder, tie and carry of both
 * formats at every exponent. About 84 M values. */
enum { STRIDE = 251, STRIDE_COUNT = 0xffffffffu / STRIDE + 1 };
static const uint64_t SAMPLE_COUNT = STRIDE_COUNT + 512ull * 2 * 65536;

static int exhaustive(void)
{
    const char *e = getenv("MG_TEST_EXHAUSTIVE");
    return e && *e && strcmp(e, "0") != 0;
}

static uint64_t pattern_count(void) { return exhaustive() ? 1ull << 32 : SAMPLE_COUNT; }

/* Pattern k of the set (total = pattern_count(), exh = exhaustive()). */
static uint32_t pattern(uint64_t k, int exh)
{
    static const uint32_t top[2] = {0x00, 0x7f};
    if (exh) return (uint32_t)k;
    if (k < STRIDE_COUNT) return (uint32_t)k * STRIDE;
    k -= STRIDE_COUNT;
    uint32_t se = (uint32_t)(k >> 17);
    return (se << 23) | (top[(k >> 16) & 1] << 16) | (uint32_t)(k & 0xffff);
}

typedef uint16_t (*ref16_fn)(float);

enum { CHUNK = 1 << 20 };

/* Converts the patterns with mg_dtype_convert_parallel, CHUNK at a time, and compares with
 * ref; returns the number of mismatches, the first in *first. */
static uint64_t sweep_f32(mg_tdtype dst_type, ref16_fn ref, uint32_t *first, mg_status *st)
{
    uint32_t *in = malloc(CHUNK * sizeof *in);
    uint16_t *out = malloc(CHUNK * sizeof *out);
    uint64_t bad = 0, total = pattern_count();
    int exh = exhaustive();
    *st = (in && out) ? MG_OK : MG_ERR_NOMEM;
    for (uint64_t base = 0; *st == MG_OK && base < total; base += CHUNK) {
        size_t n = total - base < CHUNK ? (size_t)(total - base) : CHUNK;
        for (size_t i = 0; i < n; i++) in[i] = pattern(base + i, exh);
        *st = mg_dtype_convert_parallel(out, dst_type, in, MG_TD_F32, n, 0);
        uint64_t b = 0;
#if MG_HAVE_OPENMP
#pragma omp parallel for reduction(+ : b)
#endif
        for (size_t i = 0; i < n; i++) b += out[i] != ref(bits_f32(in[i]));
        if (b && !bad)
            for (size_t i = 0; i < n; i++)
                if (out[i] != ref(bits_f32(in[i]))) { *first = in[i]; break; }
        bad += b;
    }
    free(in);
    free(out);
    return bad;
}

MG_TEST(dtype_f32_to_bf16_fast_matches_reference)
{
    uint32_t first = 0;
    mg_status st;
    uint64_t bad = sweep_f32(MG_TD_BF16, mg_f32_to_bf16, &first, &st);
    MG_CHECK_OK(t, st);
    if (bad) mg_test_fail(t, __FILE__, __LINE__, "%llu mismatches, first f32 %08x -> %04x",
                          (unsigned long long)bad, first, mg_f32_to_bf16(bits_f32(first)));
}

MG_TEST(dtype_f32_to_f16_fast_matches_reference)
{
    uint32_t first = 0;
    mg_status st;
    uint64_t bad = sweep_f32(MG_TD_F16, mg_f32_to_f16, &first, &st);
    MG_CHECK_OK(t, st);
    if (bad) mg_test_fail(t, __FILE__, __LINE__, "%llu mismatches, first f32 %08x -> %04x",
                          (unsigned long long)bad, first, mg_f32_to_f16(bits_f32(first)));
}

/* The reference against an oracle for one pattern. NaNs: quiet, sign and top payload bits
 * kept; oracle16 (nearest-value search) or, for F16 with cc, the compiler's _Float16. */
static int ref_vs_oracle(uint32_t u, int f16, int cc)
{
    float x = bits_f32(u);
    uint16_t got = f16 ? mg_f32_to_f16(x) : mg_f32_to_bf16(x);
    if (isnan(x)) {
        uint16_t want = f16 ? (uint16_t)(((u >> 16) & 0x8000) | 0x7e00 | ((u >> 13) & 0x3ff))
                            : (uint16_t)((u >> 16) | 0x40);
        return got == want;
    }
    if (isinf(x)) return got == (uint16_t)(((u >> 16) & 0x8000) | (f16 ? 0x7c00 : 0x7f80));
#if HAVE_FLOAT16
    if (f16 && cc) return got == cc_f16(x);
#else
    (void)cc;
#endif
    return got == (f16 ? oracle_f16(x) : oracle_bf16(x));
}

/* Nearest-value search on every 65521st pattern and, for each upper half, the BF16
 * boundary low halves 0x0000, 0x7fff, 0x8000, 0x8001. */
MG_TEST(dtype_f32_reference_matches_search_oracle)
{
    uint64_t bad = 0;
    uint32_t first = 0;
#if MG_HAVE_OPENMP
#pragma omp parallel for reduction(+ : bad)
#endif
    for (uint32_t hi = 0; hi < 65536; hi++) {
        uint32_t u = (uint32_t)(hi * 65521ull);
        int ok = ref_vs_oracle(u, 0, 0) && ref_vs_oracle(u, 1, 0);
        for (uint32_t low = 0; low < 4; low++)
            ok = ok && ref_vs_oracle((hi << 16) | (low ? 0x7ffeu + low : 0), 0, 0);
        if (!ok) {
            bad++;
#if MG_HAVE_OPENMP
#pragma omp critical
#endif
            first = hi;
        }
    }
    if (bad) mg_test_fail(t, __FILE__, __LINE__, "%llu mismatches, e.g. upper half %04x",
                          (unsigned long long)bad, first);
}

/* Against _Float16 on every pattern with MG_TEST_EXHAUSTIVE=1, else on every 5th of the
 * sample. A compiler without _Float16 (gcc >= 12 and clang have it on x86-64 and aarch64)
 * fails it: the oracle is missing, the test cannot run. */
MG_TEST(dtype_f32_to_f16_reference_matches_float16)
{
#if !HAVE_FLOAT16
    mg_test_fail(t, __FILE__, __LINE__, "this compiler has no _Float16: no oracle to compare with");
    return;
#endif
    uint64_t bad = 0, total = pattern_count();
    int exh = exhaustive();
#if MG_HAVE_OPENMP
#pragma omp parallel for reduction(+ : bad)
#endif
    for (uint64_t k = 0; k < total; k += exh ? 1 : 5)
        bad += !ref_vs_oracle(pattern(k, exh), 1, 1);
    MG_CHECK_EQ_INT(t, bad, 0);
}

/* ---- F64 <-> F32 ---- */

static int check_f64_f32(uint64_t u)
{
    double d = bits_f64(u);
    float ref = mg_f64_to_f32(d), fast;
    if (mg_dtype_convert(&fast, MG_TD_F32, &d, MG_TD_F64, 1) != MG_OK) return 0;
    if (f32_bits(fast) != f32_bits(ref)) return 0;
    if (isnan(d)) {
        uint32_t want = (uint32_t)((u >> 32) & 0x80000000u) | 0x7fc00000u |
                        (uint32_t)((u >> 29) & 0x7fffff);
        return f32_bits(ref) == want;
    }
    return f32_bits(ref) == f32_bits((float)d); /* the hardware's RNE conversion */
}

MG_TEST(dtype_f64_to_f32)
{
    uint64_t s = 42;
    int bad = 0;
    for (int i = 0; i < 2000000 && bad < 5; i++) {
        uint64_t u = rng_next(&s);
        /* half the time an exponent near F32's range, with low bits near a tie */
        if (i & 1) u = (u & 0x800fffffffffffffu) | ((uint64_t)(850 + (u >> 40) % 320) << 52);
        if (i & 2) u = (u & ~0x3fffffffu) | (0x10000000u + (uint32_t)(i % 5) - 2);
        if (!check_f64_f32(u)) {
            mg_test_fail(t, __FILE__, __LINE__, "f64 %016llx", (unsigned long long)u);
            bad++;
        }
    }
    static const uint64_t special[] = {
        0, 0x8000000000000000u, 1, 0x000fffffffffffffu, 0x7ff0000000000000u,
        0xfff0000000000000u, 0x7ff0000000000001u, 0x7ff8000000000000u, 0xfff0123456789abcu,
        0x47effffff0000000u, 0x47efffffefffffffu, 0x36a0000000000000u, /* 2^-149 */
        0x3690000000000000u, 0x3690000000000001u, 0x369fffffffffffffu, 0x380fffffffffffffu,
    };
    for (size_t i = 0; i < sizeof special / sizeof special[0]; i++)
        if (!check_f64_f32(special[i]))
            mg_test_fail(t, __FILE__, __LINE__, "f64 %016llx", (unsigned long long)special[i]);
}

MG_TEST(dtype_f32_to_f64_exact)
{
    uint64_t bad = 0;
    for (uint64_t k = 0; k < (1ull << 32); k += 4099) {
        float x = bits_f32((uint32_t)k);
        double ref = mg_f32_to_f64(x), fast;
        MG_CHECK_OK(t, mg_dtype_convert(&fast, MG_TD_F64, &x, MG_TD_F32, 1));
        int ok = f64_bits(ref) == f64_bits(fast);
        if (!isnan(x)) ok = ok && f64_bits(ref) == f64_bits((double)x);
        else ok = ok && f32_bits(mg_f64_to_f32(ref)) == (f32_bits(x) | 0x400000u);
        bad += !ok;
    }
    for (uint32_t m = 0; m < (1u << 23); m += 7) { /* subnormals, both signs */
        float x = bits_f32(m), y = bits_f32(m | 0x80000000u);
        bad += f64_bits(mg_f32_to_f64(x)) != f64_bits((double)x);
        bad += f64_bits(mg_f32_to_f64(y)) != f64_bits((double)y);
    }
    MG_CHECK_EQ_INT(t, bad, 0);
}

/* ---- anchors: the bits torch 2.15 gives (tensor.to(dtype) on CPU), except the BF16 of a
 * NaN, where torch's bits depend on its code path (0xFFFF from the AVX2 kernel, 0x7FC0 from
 * the scalar one) and we keep sign and payload like every other narrowing ---- */

struct anchor32 { uint32_t in; uint16_t bf16, f16; };

MG_TEST(dtype_f32_anchors)
{
    static const struct anchor32 a[] = {
        {0x00000000, 0x0000, 0x0000}, {0x80000000, 0x8000, 0x8000},
        {0x3f800000, 0x3f80, 0x3c00}, /* 1 */
        {0x3f808000, 0x3f80, 0x3c04}, /* 1 + 2^-8: BF16 tie to even (down) */
        {0x3f818000, 0x3f82, 0x3c0c}, /* 1 + 3*2^-8: BF16 tie to even (up) */
        {0x3f808001, 0x3f81, 0x3c04}, {0x3f801000, 0x3f80, 0x3c00}, /* F16 tie, down */
        {0x3f803000, 0x3f80, 0x3c02}, /* F16 tie, up */
        {0x7f7fffff, 0x7f80, 0x7c00}, /* FLT_MAX -> Inf in both */
        {0x7f7f7fff, 0x7f7f, 0x7c00}, {0x477fe000, 0x4780, 0x7bff}, /* 65504 */
        {0x477fefff, 0x4780, 0x7bff}, {0x477ff000, 0x4780, 0x7c00}, /* 65520 -> Inf */
        {0x7f800000, 0x7f80, 0x7c00}, {0xff800000, 0xff80, 0xfc00},
        {0x00000001, 0x0000, 0x0000}, {0x00010000, 0x0001, 0x0000}, /* F32 subnormals */
        {0x807fffff, 0x8080, 0x8000}, {0x00408000, 0x0040, 0x0000},
        {0x33800000, 0x3380, 0x0001}, /* 2^-24 */
        {0x33000000, 0x3300, 0x0000}, /* 2^-25: tie to zero */
        {0x33000001, 0x3300, 0x0001}, {0x38800000, 0x3880, 0x0400}, /* 2^-14 */
        {0x387fe000, 0x3880, 0x0400}, /* 2^-14 - 2^-25: tie, up to the smallest normal */
        {0x387fa000, 0x3880, 0x03fe}, {0x387fc000, 0x3880, 0x03ff}, /* 1022.5, 1023 units */
        {0xb8000000, 0xb800, 0x8200}, /* -2^-15 */
        {0x7fc00000, 0x7fc0, 0x7e00}, {0xffc00001, 0xffc0, 0xfe00}, /* NaNs */
        {0x7f812345, 0x7fc1, 0x7e09}, {0xff800001, 0xffc0, 0xfe00}, {0x7fffffff, 0x7fff, 0x7fff},
    };
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
        float x = bits_f32(a[i].in);
        uint16_t b, h;
        MG_CHECK_OK(t, mg_dtype_convert(&b, MG_TD_BF16, &x, MG_TD_F32, 1));
        MG_CHECK_OK(t, mg_dtype_convert(&h, MG_TD_F16, &x, MG_TD_F32, 1));
        if (b != a[i].bf16 || h != a[i].f16 || mg_f32_to_bf16(x) != b || mg_f32_to_f16(x) != h)
            mg_test_fail(t, __FILE__, __LINE__,
                         "f32 %08x -> bf16 %04x (want %04x), f16 %04x (want %04x)", a[i].in, b,
                         a[i].bf16, h, a[i].f16);
    }
}

struct anchor64 { uint64_t in; uint16_t bf16, f16; uint32_t f32; };

MG_TEST(dtype_f64_anchors_double_rounding)
{
    static const struct anchor64 a[] = {
        /* 1 + 2^-8 + 2^-30: F32 rounds to the BF16 tie, which goes to even: 1.0 (torch too;
         * the correctly rounded BF16 would be 0x3f81) */
        {0x3ff0100004000000u, 0x3f80, 0x3c04, 0x3f808000},
        /* 1 + 2^-11 + 2^-40: F16 1.0 (correctly rounded: 0x3c01) */
        {0x3ff0020000100000u, 0x3f80, 0x3c00, 0x3f801000},
        /* 65520 - 2^-20: F32 65520, then Inf in F16 (correctly rounded: 65504) */
        {0x40effdffffff0000u, 0x4780, 0x7c00, 0x477ff000},
        {0x7ff0000000000000u, 0x7f80, 0x7c00, 0x7f800000},
        {0x47efffffffffffffu, 0x7f80, 0x7c00, 0x7f800000}, /* rounds to F32 Inf */
        {0x3e70000000000001u, 0x3380, 0x0001, 0x33800000}, /* 2^-24 (+tiny) */
        {0x1000000000000000u, 0x0000, 0x0000, 0x00000000}, /* underflow */
        {0x7ff8000000000000u, 0x7fc0, 0x7e00, 0x7fc00000},
        {0xfff8000000000123u, 0xffc0, 0xfe00, 0xffc00000},
        {0x7ff0123456789abcu, 0x7fc0, 0x7e04, 0x7fc091a2}, /* torch: f16 7e04, f32 7fc091a2 */
    };
    for (size_t i = 0; i < sizeof a / sizeof a[0]; i++) {
        double d = bits_f64(a[i].in);
        uint16_t b, h;
        float f;
        MG_CHECK_OK(t, mg_dtype_convert(&b, MG_TD_BF16, &d, MG_TD_F64, 1));
        MG_CHECK_OK(t, mg_dtype_convert(&h, MG_TD_F16, &d, MG_TD_F64, 1));
        MG_CHECK_OK(t, mg_dtype_convert(&f, MG_TD_F32, &d, MG_TD_F64, 1));
        if (b != a[i].bf16 || h != a[i].f16 || f32_bits(f) != a[i].f32 ||
            mg_f64_to_bf16(d) != b || mg_f64_to_f16(d) != h)
            mg_test_fail(t, __FILE__, __LINE__, "f64 %016llx -> bf16 %04x f16 %04x f32 %08x",
                         (unsigned long long)a[i].in, b, h, f32_bits(f));
    }
}

/* ---- every pair, through the three entry points ---- */

static const mg_tdtype FLOATS[4] = {MG_TD_F32, MG_TD_F64, MG_TD_BF16, MG_TD_F16};

/* Element i of a random array of type ty (raw bytes), with specials mixed in. */
static void fill_random(unsigned char *p, mg_tdtype ty, size_t n, uint64_t seed)
{
    size_t sz = mg_tdtype_size(ty);
    for (size_t i = 0; i < n; i++) {
        uint64_t r = rng_next(&seed);
        if (ty == MG_TD_F64 && (i % 3) == 0) r = f64_bits((double)(int32_t)r * 0x1p-20);
        memcpy(p + i * sz, &r, sz);
    }
}

/* The reference conversion of one element: source -> F32 -> target with the scalar
 * reference functions (the composition the header documents). */
static void ref_one(unsigned char *d, mg_tdtype dt, const unsigned char *s, mg_tdtype st)
{
    float f = 0;
    uint16_t v16 = 0;
    uint64_t v64 = 0;
    memcpy(st == MG_TD_F64 ? (void *)&v64 : st == MG_TD_F32 ? (void *)&f : (void *)&v16, s,
           mg_tdtype_size(st));
    if (st == MG_TD_F64) f = mg_f64_to_f32(bits_f64(v64));
    if (st == MG_TD_BF16) f = mg_bf16_to_f32(v16);
    if (st == MG_TD_F16) f = mg_f16_to_f32(v16);
    if (dt == st) { memcpy(d, s, mg_tdtype_size(st)); return; }
    if (dt == MG_TD_F32) memcpy(d, &f, 4);
    if (dt == MG_TD_BF16) v16 = mg_f32_to_bf16(f);
    if (dt == MG_TD_F16) v16 = mg_f32_to_f16(f);
    if (dt == MG_TD_BF16 || dt == MG_TD_F16) memcpy(d, &v16, 2);
    if (dt == MG_TD_F64) { double x = mg_f32_to_f64(f); memcpy(d, &x, 8); }
}

static void check_pair(mg_test_ctx *t, mg_tdtype dt, mg_tdtype st, size_t n)
{
    size_t dsz = mg_tdtype_size(dt), ssz = mg_tdtype_size(st);
    unsigned char *src = malloc(n * ssz + 1), *want = malloc(n * dsz), *got = malloc(n * dsz + 3);
    MG_CHECK(t, src && want && got);
    if (!src || !want || !got) goto out;
    fill_random(src + 1, st, n, n * 31 + (uint64_t)dt * 7 + (uint64_t)st); /* unaligned */
    for (size_t i = 0; i < n; i++) ref_one(want + i * dsz, dt, src + 1 + i * ssz, st);
    for (int mode = 0; mode < 5; mode++) { /* whole, parts 1/3/7, parallel */
        memset(got, 0xa5, n * dsz + 3);
        if (mode == 0) MG_CHECK_OK(t, mg_dtype_convert(got + 3, dt, src + 1, st, n));
        for (int nth = mode * 2 - 1, i = 0; mode >= 1 && mode <= 3 && i < nth; i++)
            MG_CHECK_OK(t, mg_dtype_convert_part(got + 3, dt, src + 1, st, n, i, nth));
        if (mode == 4) MG_CHECK_OK(t, mg_dtype_convert_parallel(got + 3, dt, src + 1, st, n, 3));
        if (memcmp(got + 3, want, n * dsz) != 0)
            mg_test_fail(t, __FILE__, __LINE__, "%s -> %s, n=%zu, mode %d differs",
                         mg_tdtype_name(st), mg_tdtype_name(dt), n, mode);
    }
out:
    free(src);
    free(want);
    free(got);
}

MG_TEST(dtype_all_pairs_all_entry_points)
{
    static const size_t sizes[] = {0, 1, 7, 63, 64, 65, 513, 1000, 70001};
    for (int a = 0; a < 4; a++)
        for (int b = 0; b < 4; b++)
            for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++)
                check_pair(t, FLOATS[a], FLOATS[b], sizes[k]);
}

MG_TEST(dtype_identity_any_type_and_in_place)
{
    int64_t a[5] = {1, -2, 3, INT64_MAX, INT64_MIN}, b[5] = {0};
    MG_CHECK_OK(t, mg_dtype_convert(b, MG_TD_I64, a, MG_TD_I64, 5));
    MG_CHECK(t, memcmp(a, b, sizeof a) == 0);
    MG_CHECK_OK(t, mg_dtype_convert(a, MG_TD_I64, a, MG_TD_I64, 5));
    MG_CHECK(t, memcmp(a, b, sizeof a) == 0);
    unsigned char e8[3] = {1, 2, 3}, e8b[3] = {0};
    MG_CHECK_OK(t, mg_dtype_convert_parallel(e8b, MG_TD_F8_E4M3, e8, MG_TD_F8_E4M3, 3, 0));
    MG_CHECK(t, memcmp(e8, e8b, 3) == 0);
    MG_CHECK(t, mg_dtype_convert_supported(MG_TD_BOOL, MG_TD_BOOL));
}

MG_TEST(dtype_unsupported_and_bad_args)
{
    int64_t i64[2] = {1, 2};
    uint16_t out[2] = {7, 7};
    MG_CHECK_ERR(t, mg_dtype_convert(out, MG_TD_BF16, i64, MG_TD_I64, 2), MG_ERR_UNSUPPORTED,
                 "cannot convert I64 to BF16");
    MG_CHECK(t, out[0] == 7 && out[1] == 7);
    MG_CHECK_ERR(t, mg_dtype_convert(i64, MG_TD_I32, out, MG_TD_F32, 1), MG_ERR_UNSUPPORTED,
                 "cannot convert F32 to I32");
    MG_CHECK_ERR(t, mg_dtype_convert(out, MG_TD_F16, out, MG_TD_F8_E5M2, 1),
                 MG_ERR_UNSUPPORTED, "F8_E5M2 to F16");
    MG_CHECK_ERR(t, mg_dtype_convert_parallel(out, MG_TD_F16, out, MG_TD_INVALID, 1, 2),
                 MG_ERR_UNSUPPORTED, "invalid");
    MG_CHECK(t, !mg_dtype_convert_supported(MG_TD_F32, MG_TD_BOOL));
    MG_CHECK(t, !mg_dtype_convert_supported((mg_tdtype)99, (mg_tdtype)99));
    MG_CHECK_ERR(t, mg_dtype_convert(NULL, MG_TD_F16, out, MG_TD_F32, 1), MG_ERR_ARG, "NULL");
    MG_CHECK_OK(t, mg_dtype_convert(NULL, MG_TD_F16, NULL, MG_TD_F32, 0));
    MG_CHECK_ERR(t, mg_dtype_convert_part(out, MG_TD_F16, out, MG_TD_F16, 1, 2, 2), MG_ERR_ARG,
                 "bad part 2 of 2");
    MG_CHECK_ERR(t, mg_dtype_convert_part(out, MG_TD_F16, out, MG_TD_F16, 1, 0, 0), MG_ERR_ARG,
                 "bad part");
}

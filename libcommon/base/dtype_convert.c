/* dtype_convert.c — F32/F64/BF16/F16 array conversion (contract in mg/dtype_convert.h).
 *
 * Two implementations of every conversion:
 *   - the scalar reference functions mg_*_to_*: readable, branchy, integer arithmetic only,
 *     written from the IEEE 754 definitions; they define the results;
 *   - the fast kernels blk_*: branch-free selects over whole arrays, written so that the
 *     compiler vectorises them (`omp simd` when OpenMP is on), tested bit for bit against the
 *     reference over every F32 input in tests/unit/test_dtype_convert.c.
 * Pairs without F32 on either side go through F32 one block at a time (a stack buffer).
 * Arrays are read and written with memcpy, so no alignment is needed.
 */
#include <string.h>

#include "mg/dtype_convert.h"

#if MG_HAVE_OPENMP
#include <omp.h>
#endif
/* `omp simd` only for GCC: clang warns (-Wpass-failed) where it cannot vectorise a loop. */
#if MG_HAVE_OPENMP && !defined(__clang__)
#define MG_SIMD _Pragma("omp simd")
#else
#define MG_SIMD
#endif

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "dtype_convert.c reads little-endian data with native loads: big-endian hosts unsupported"
#endif

enum {
    BLOCK = 512,         /* elements per step of a two-stage conversion */
    PART_ALIGN = 64,     /* mg_dtype_convert_part splits on multiples of this */
    PARALLEL_MIN = 1 << 16,
};

/* ---- bit access ---- */

static inline uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float bits_f32(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }
static inline uint64_t f64_bits(double d) { uint64_t u; memcpy(&u, &d, 8); return u; }
static inline double bits_f64(uint64_t u) { double d; memcpy(&d, &u, 8); return d; }

static inline uint16_t ld16(const unsigned char *p) { uint16_t v; memcpy(&v, p, 2); return v; }
static inline uint32_t ld32(const unsigned char *p) { uint32_t v; memcpy(&v, p, 4); return v; }
static inline uint64_t ld64(const unsigned char *p) { uint64_t v; memcpy(&v, p, 8); return v; }
static inline void st16(unsigned char *p, uint16_t v) { memcpy(p, &v, 2); }
static inline void st32(unsigned char *p, uint32_t v) { memcpy(p, &v, 4); }
static inline void st64(unsigned char *p, uint64_t v) { memcpy(p, &v, 8); }

/* Rounds q (the truncated result) up when the dropped bits rem, out of a field whose half
 * is `half`, exceed half, or equal it and q is odd: round to nearest, ties to even. */
static inline uint64_t round_even(uint64_t q, uint64_t rem, uint64_t half)
{
    return (rem > half || (rem == half && (q & 1))) ? q + 1 : q;
}

/* ---- scalar reference ---- */

uint16_t mg_f32_to_bf16(float x)
{
    uint32_t u = f32_bits(x);
    if ((u & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((u >> 16) | 0x0040u); /* NaN */
    /* sign and exponent sit above the 7 kept mantissa bits: a carry out of the mantissa
     * increments the exponent, and FLT_MAX-ish values carry into Inf as RNE requires */
    return (uint16_t)round_even(u >> 16, u & 0xffffu, 0x8000u);
}

uint16_t mg_f32_to_f16(float x)
{
    uint32_t u = f32_bits(x);
    uint16_t sign = (uint16_t)((u >> 16) & 0x8000u);
    uint32_t a = u & 0x7fffffffu, m = a & 0x7fffffu;
    int e = (int)(a >> 23) - 127 + 15; /* F16 biased exponent */
    if (a > 0x7f800000u) return (uint16_t)(sign | 0x7e00u | (m >> 13));
    if (a == 0x7f800000u || e >= 31) return (uint16_t)(sign | 0x7c00u);
    if (e >= 1) {
        uint64_t q = round_even(((uint32_t)e << 10) | (m >> 13), m & 0x1fffu, 0x1000u);
        return (uint16_t)(sign | q); /* q == 0x7c00 after a carry is Inf: correct */
    }
    if ((a >> 23) == 0) return sign; /* F32 subnormal: below 2^-126, rounds to zero */
    int shift = 14 - e;               /* value in units of 2^-24 is (m|2^23) >> shift */
    if (shift > 24) return sign;      /* below 2^-25: rounds to zero */
    uint32_t full = m | 0x800000u;
    uint64_t q = round_even(full >> shift, full & ((1u << shift) - 1), 1u << (shift - 1));
    return (uint16_t)(sign | q); /* q == 0x400 is the smallest normal: correct */
}

float mg_bf16_to_f32(uint16_t h) { return bits_f32((uint32_t)h << 16); }

float mg_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
    int e = (h >> 10) & 0x1f;
    uint32_t m = h & 0x3ffu;
    if (e == 31) return bits_f32(sign | 0x7f800000u | (m << 13) | (m ? 0x400000u : 0));
    if (e == 0) {
        if (m == 0) return bits_f32(sign);
        e = 1;
        while (!(m & 0x400u)) { /* normalise the subnormal */
            m <<= 1;
            e--;
        }
        m &= 0x3ffu;
    }
    return bits_f32(sign | ((uint32_t)(e + 127 - 15) << 23) | (m << 13)); /* e >= -9 */
}

float mg_f64_to_f32(double x)
{
    uint64_t u = f64_bits(x), a = u & 0x7fffffffffffffffu, m = a & 0xfffffffffffffu;
    uint32_t sign = (uint32_t)(u >> 32) & 0x80000000u;
    int e = (int)(a >> 52); /* F64 biased exponent */
    if (a > 0x7ff0000000000000u) return bits_f32(sign | 0x7fc00000u | (uint32_t)(m >> 29));
    if (a >= 0x47effffff0000000u) return bits_f32(sign | 0x7f800000u); /* >= FLT_MAX+ulp/2 */
    if (e >= 1023 - 126) {
        uint64_t q = round_even(((uint64_t)(e - 1023 + 127) << 23) | (m >> 29),
                                m & 0x1fffffffu, 0x10000000u);
        return bits_f32(sign | (uint32_t)q);
    }
    int shift = 926 - e; /* value in units of 2^-149 is (m|2^52) >> shift, shift >= 30 */
    if (e == 0 || shift > 53) return bits_f32(sign);
    uint64_t full = m | (1ull << 52);
    uint64_t q = round_even(full >> shift, full & ((1ull << shift) - 1), 1ull << (shift - 1));
    return bits_f32(sign | (uint32_t)q);
}

double mg_f32_to_f64(float x)
{
    uint32_t u = f32_bits(x), a = u & 0x7fffffffu, m = a & 0x7fffffu;
    uint64_t sign = (uint64_t)(u & 0x80000000u) << 32;
    int e = (int)(a >> 23);
    if (a > 0x7f800000u) return bits_f64(sign | 0x7ff8000000000000u | ((uint64_t)m << 29));
    if (a == 0x7f800000u) return bits_f64(sign | 0x7ff0000000000000u);
    if (a == 0) return bits_f64(sign);
    if (e == 0) { /* F32 subnormal: normal in F64 */
        e = 1;
        while (!(m & 0x800000u)) {
            m <<= 1;
            e--;
        }
        m &= 0x7fffffu;
    }
    return bits_f64(sign | ((uint64_t)(e + 1023 - 127) << 52) | ((uint64_t)m << 29));
}

uint16_t mg_f64_to_bf16(double x) { return mg_f32_to_bf16(mg_f64_to_f32(x)); }
uint16_t mg_f64_to_f16(double x) { return mg_f32_to_f16(mg_f64_to_f32(x)); }

/* ---- fast kernels: one element, branch-free ---- */

/* cond ? a : b with masks: GCC does not if-convert ternaries around float arithmetic that
 * might trap (-ftrapping-math), and a branch stops vectorisation. */
static inline uint32_t sel32(int cond, uint32_t a, uint32_t b)
{
    uint32_t mask = 0u - (uint32_t)(cond != 0);
    return (a & mask) | (b & ~mask);
}

static inline uint64_t sel64(int cond, uint64_t a, uint64_t b)
{
    uint64_t mask = 0u - (uint64_t)(cond != 0);
    return (a & mask) | (b & ~mask);
}

static inline uint16_t fast_f32_bf16(uint32_t u)
{
    uint32_t rounded = (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
    uint32_t nan = (u >> 16) | 0x40u;
    return (uint16_t)((u & 0x7fffffffu) > 0x7f800000u ? nan : rounded);
}

static inline uint16_t fast_f32_f16(uint32_t u)
{
    uint32_t a = u & 0x7fffffffu, sign = (u >> 16) & 0x8000u;
    /* normal F16: rebias the exponent by (127-15)<<23, then add just under half an F16 ulp
     * plus the kept lsb (ties to even); a carry into the exponent is correct */
    uint32_t normal = (a - 0x38000000u + 0xfffu + ((a >> 13) & 1u)) >> 13;
    /* below 2^-14: adding 0.5f (ulp 2^-24 = F16's subnormal unit) rounds to a multiple of
     * 2^-24 in the FPU's round-to-nearest-even; the mantissa then counts those units.
     * Independent of FTZ/DAZ: a flushed F32 subnormal input rounds to zero either way. */
    uint32_t sub = f32_bits(bits_f32(a) + 0.5f) - 0x3f000000u;
    uint32_t h = sel32(a < 0x38800000u, sub, normal);
    h = sel32(a >= 0x477ff000u, 0x7c00u, h); /* |x| >= 65520 rounds to Inf */
    h = sel32(a > 0x7f800000u, 0x7e00u | ((a >> 13) & 0x3ffu), h);
    return (uint16_t)(h | sign);
}

static inline uint32_t fast_f16_f32(uint16_t h)
{
    uint32_t a = h & 0x7fffu, sign = (uint32_t)(h & 0x8000u) << 16;
    uint32_t normal = (a << 13) + 0x38000000u;
    /* subnormal m * 2^-24: build 2^-14 * (1 + m/1024) and subtract 2^-14 (exact) */
    uint32_t sub = f32_bits(bits_f32((a << 13) + 0x38800000u) - bits_f32(0x38800000u));
    uint32_t infnan = (a << 13) | 0x7f800000u | (a > 0x7c00u ? 0x400000u : 0u);
    return sel32(a >= 0x7c00u, infnan, sel32(a < 0x400u, sub, normal)) | sign;
}

/* F64 <-> F32 use the hardware conversion (IEEE RNE; assumes FTZ/DAZ off, the default) and
 * fix NaNs to the documented bits, which some hardware (RISC-V) canonicalises. */
static inline uint32_t fast_f64_f32(uint64_t u)
{
    uint32_t r = f32_bits((float)bits_f64(u));
    uint32_t nan = ((uint32_t)(u >> 32) & 0x80000000u) | 0x7fc00000u |
                   (uint32_t)((u >> 29) & 0x7fffffu);
    /* NaN test without a 64-bit compare (SSE2 has none): |u| > Inf iff |u| + 2^52-1 >= 2^63 */
    uint32_t is_nan = (uint32_t)(((u & 0x7fffffffffffffffu) + 0x000fffffffffffffu) >> 63);
    return sel32((int)is_nan, nan, r);
}

static inline uint64_t fast_f32_f64(uint32_t u)
{
    uint64_t r = f64_bits((double)bits_f32(u));
    uint64_t nan = ((uint64_t)(u & 0x80000000u) << 32) | 0x7ff8000000000000u |
                   ((uint64_t)(u & 0x7fffffu) << 29);
    return sel64((u & 0x7fffffffu) > 0x7f800000u, nan, r);
}

/* ---- fast kernels: arrays ---- */

typedef void (*blk_fn)(unsigned char *d, const unsigned char *s, size_t n);

/* GCC on x86-64 Linux also compiles the array kernels for AVX2 and picks at load time
 * (ifunc); -DMG_DTYPE_NO_CLONES builds the baseline only (to test it on an AVX2 machine). */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && defined(__linux__) && \
    !defined(MG_DTYPE_NO_CLONES)
#define MG_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define MG_CLONES
#endif

/* blk_NAME(d, s, n): n elements of DSZ bytes at d from n of SSZ bytes at s, element i being
 * EXPR of the loaded source `x`. The body runs in 64-element steps with a constant trip
 * count, which GCC vectorises at -O2 even without `omp simd`, then the tail. */
#define DEFINE_BLK(name, DSZ, SSZ, LOAD, STORE, EXPR)                                      \
    static inline __attribute__((always_inline)) void name##_n(                           \
        unsigned char *restrict d, const unsigned char *restrict s, size_t n)              \
    {                                                                                      \
        MG_SIMD for (size_t i = 0; i < n; i++) {                                           \
            __typeof__(LOAD(s)) x = LOAD(s + (SSZ) * i);                                   \
            STORE(d + (DSZ) * i, EXPR);                                                    \
        }                                                                                  \
    }                                                                                      \
    MG_CLONES static void name(unsigned char *restrict d, const unsigned char *restrict s, \
                               size_t n)                                                   \
    {                                                                                      \
        size_t i = 0;                                                                      \
        for (; i + 64 <= n; i += 64) name##_n(d + (DSZ) * i, s + (SSZ) * i, 64);           \
        name##_n(d + (DSZ) * i, s + (SSZ) * i, n - i);                                     \
    }

DEFINE_BLK(blk_f32_bf16, 2, 4, ld32, st16, fast_f32_bf16(x))
DEFINE_BLK(blk_f32_f16, 2, 4, ld32, st16, fast_f32_f16(x))
DEFINE_BLK(blk_f32_f64, 8, 4, ld32, st64, fast_f32_f64(x))
DEFINE_BLK(blk_bf16_f32, 4, 2, ld16, st32, (uint32_t)x << 16)
DEFINE_BLK(blk_f16_f32, 4, 2, ld16, st32, fast_f16_f32(x))
DEFINE_BLK(blk_f64_f32, 4, 8, ld64, st32, fast_f64_f32(x))

/* Float types in table order. */
enum { FT_F32, FT_F64, FT_BF16, FT_F16, FT_NONE };

static int float_index(mg_tdtype t)
{
    switch (t) {
    case MG_TD_F32: return FT_F32;
    case MG_TD_F64: return FT_F64;
    case MG_TD_BF16: return FT_BF16;
    case MG_TD_F16: return FT_F16;
    default: return FT_NONE;
    }
}

static const blk_fn to_f32[FT_NONE] = {NULL, blk_f64_f32, blk_bf16_f32, blk_f16_f32};
static const blk_fn from_f32[FT_NONE] = {NULL, blk_f32_f64, blk_f32_bf16, blk_f32_f16};

/* src type -> F32 (stack buffer) -> dst type, BLOCK elements at a time. */
static void convert_via_f32(unsigned char *d, size_t dsz, int dt, const unsigned char *s,
                            size_t ssz, int st, size_t n)
{
    unsigned char tmp[BLOCK * 4];
    for (size_t i = 0; i < n; i += BLOCK) {
        size_t m = n - i < BLOCK ? n - i : BLOCK;
        to_f32[st](tmp, s + i * ssz, m);
        from_f32[dt](d + i * dsz, tmp, m);
    }
}

/* The conversion of elements [lo, hi), the pair already validated. */
static void convert_range(void *dst, mg_tdtype dst_type, const void *src, mg_tdtype src_type,
                          size_t lo, size_t hi)
{
    size_t dsz = mg_tdtype_size(dst_type), ssz = mg_tdtype_size(src_type);
    unsigned char *d = (unsigned char *)dst + lo * dsz;
    const unsigned char *s = (const unsigned char *)src + lo * ssz;
    int dt = float_index(dst_type), st = float_index(src_type);
    if (hi <= lo) return;
    if (dst_type == src_type) {
        if (d != s) memcpy(d, s, (hi - lo) * dsz);
    } else if (st == FT_F32) {
        from_f32[dt](d, s, hi - lo);
    } else if (dt == FT_F32) {
        to_f32[st](d, s, hi - lo);
    } else {
        convert_via_f32(d, dsz, dt, s, ssz, st, hi - lo);
    }
}

/* ---- public entry points ---- */

int mg_dtype_convert_supported(mg_tdtype dst_type, mg_tdtype src_type)
{
    if (mg_tdtype_size(dst_type) == 0 || mg_tdtype_size(src_type) == 0) return 0;
    if (dst_type == src_type) return 1;
    return float_index(dst_type) != FT_NONE && float_index(src_type) != FT_NONE;
}

static mg_status check_args(void *dst, mg_tdtype dst_type, const void *src, mg_tdtype src_type,
                            size_t n)
{
    if (!mg_dtype_convert_supported(dst_type, src_type))
        return mg_error_set(MG_ERR_UNSUPPORTED, "cannot convert %s to %s",
                            mg_tdtype_name(src_type), mg_tdtype_name(dst_type));
    MG_RETURN_IF(n > 0 && (!dst || !src), MG_ERR_ARG, "dtype conversion: NULL array");
    MG_RETURN_IF(n > SIZE_MAX / 8, MG_ERR_ARG, "dtype conversion: %zu elements is too many", n);
    return MG_OK;
}

mg_status mg_dtype_convert(void *dst, mg_tdtype dst_type, const void *src, mg_tdtype src_type,
                           size_t n)
{
    MG_FORWARD(check_args(dst, dst_type, src, src_type, n));
    convert_range(dst, dst_type, src, src_type, 0, n);
    return MG_OK;
}

/* Start of part ith of nth: equal shares of whole PART_ALIGN blocks. */
static size_t part_start(size_t n, int ith, int nth)
{
    size_t blocks = (n + PART_ALIGN - 1) / PART_ALIGN;
    size_t per = blocks / (size_t)nth, extra = blocks % (size_t)nth, i = (size_t)ith;
    size_t start = (i * per + (i < extra ? i : extra)) * PART_ALIGN;
    return start < n ? start : n;
}

mg_status mg_dtype_convert_part(void *dst, mg_tdtype dst_type, const void *src,
                                mg_tdtype src_type, size_t n, int ith, int nth)
{
    MG_RETURN_IF(nth < 1 || ith < 0 || ith >= nth, MG_ERR_ARG,
                 "dtype conversion: bad part %d of %d", ith, nth);
    MG_FORWARD(check_args(dst, dst_type, src, src_type, n));
    convert_range(dst, dst_type, src, src_type, part_start(n, ith, nth),
                  part_start(n, ith + 1, nth));
    return MG_OK;
}

mg_status mg_dtype_convert_parallel(void *dst, mg_tdtype dst_type, const void *src,
                                    mg_tdtype src_type, size_t n, int nthreads)
{
    MG_FORWARD(check_args(dst, dst_type, src, src_type, n));
#if MG_HAVE_OPENMP
    if (n >= PARALLEL_MIN && nthreads != 1) {
        int nt = nthreads > 0 ? nthreads : omp_get_max_threads();
#pragma omp parallel num_threads(nt)
        {
            int ith = omp_get_thread_num(), nth = omp_get_num_threads();
            convert_range(dst, dst_type, src, src_type, part_start(n, ith, nth),
                          part_start(n, ith + 1, nth));
        }
        return MG_OK;
    }
#else
    (void)nthreads;
#endif
    convert_range(dst, dst_type, src, src_type, 0, n);
    return MG_OK;
}

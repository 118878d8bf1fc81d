/* idxds_convert.c — token ids (int64) into a dataset dtype, as numpy.array(ids, dtype) does
 * for values it accepts (idxds_internal.h): the range check of a whole document and the
 * narrowing. uint16 and int32 (the dtypes of every tokenizer's datasets) have an AVX-512
 * path (vpmovqw / vpmovqd, 8 ids an instruction) used when the CPU has AVX-512F; the
 * portable loops below are the reference the tests compare it with; the writer's path
 * (mg_idx_ids_convert_checked) checks the range in the same pass. */
#include "idxds_internal.h"

#include <string.h>

/* The dtype's integer range as ((uint64_t)v + bias) >> bits == 0: v survives
 * numpy.array([v], dtype) unchanged (numpy >= 2 raises otherwise). bits 64: any int64. */
typedef struct {
    uint64_t bias;
    int bits;
} id_range;

static id_range range_of(mg_dtype dt)
{
    switch (dt) {
    case MG_DT_UINT8: return (id_range){0, 8};
    case MG_DT_INT8: return (id_range){UINT64_C(1) << 7, 8};
    case MG_DT_INT16: return (id_range){UINT64_C(1) << 15, 16};
    case MG_DT_UINT16: return (id_range){0, 16};
    case MG_DT_INT32: return (id_range){UINT64_C(1) << 31, 32};
    default: return (id_range){0, 64}; /* int64, float32, float64 take any int64 */
    }
}

int mg_idx_id_fits(mg_dtype dt, int64_t v)
{
    id_range r = range_of(dt);
    return r.bits == 64 || (((uint64_t)v + r.bias) >> r.bits) == 0;
}

/* Whether every token fits: one OR over the biased values (branch-free, 4 lanes, which the
 * compiler widens to its vectors). */
int mg_idx_ids_fit(mg_dtype dt, const int64_t *t, size_t n)
{
    id_range r = range_of(dt);
    if (r.bits == 64) return 1;
    uint64_t a = 0, b = 0, c = 0, d = 0;
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        a |= (uint64_t)t[i] + r.bias;
        b |= (uint64_t)t[i + 1] + r.bias;
        c |= (uint64_t)t[i + 2] + r.bias;
        d |= (uint64_t)t[i + 3] + r.bias;
    }
    for (; i < n; i++) a |= (uint64_t)t[i] + r.bias;
    return ((a | b | c | d) >> r.bits) == 0;
}

#define CONVERT(T, EXPR)                                                                   \
    for (size_t i = 0; i < n; i++) {                                                       \
        T x_ = (T)(EXPR);                                                                  \
        memcpy(dst + i * sizeof x_, &x_, sizeof x_);                                       \
    }                                                                                      \
    break

/* uint16 ids, four to a 64-bit store. */
static void convert_u16(const int64_t *src, size_t n, uint8_t *dst)
{
    size_t i = 0;
    for (; i + 4 <= n; i += 4) {
        uint64_t x = (uint64_t)(uint16_t)src[i] | (uint64_t)(uint16_t)src[i + 1] << 16 |
                     (uint64_t)(uint16_t)src[i + 2] << 32 | (uint64_t)(uint16_t)src[i + 3] << 48;
        memcpy(dst + 2 * i, &x, sizeof x);
    }
    for (; i < n; i++) {
        uint16_t x = (uint16_t)src[i];
        memcpy(dst + 2 * i, &x, sizeof x);
    }
}

void mg_idx_ids_convert_portable(mg_dtype dt, const int64_t *src, size_t n, uint8_t *dst)
{
    switch (dt) {
    case MG_DT_UINT8: CONVERT(uint8_t, src[i]);
    case MG_DT_INT8: CONVERT(int8_t, src[i]);
    case MG_DT_INT16: CONVERT(int16_t, src[i]);
    case MG_DT_UINT16: convert_u16(src, n, dst); break;
    case MG_DT_INT32: CONVERT(int32_t, src[i]);
    case MG_DT_INT64: CONVERT(int64_t, src[i]);
    case MG_DT_FLOAT32: CONVERT(float, (double)src[i]); /* through double, as numpy */
    case MG_DT_FLOAT64: CONVERT(double, src[i]);
    }
}

#if MG_IDX_AVX512
#include <immintrin.h>

/* The low 16 / 32 bits of each id, 8 ids at a time (values already range-checked, so the
 * truncation is the value); the tail by the portable loop. */
__attribute__((target("avx512f"))) static void convert_avx512(mg_dtype dt, const int64_t *src,
                                                               size_t n, uint8_t *dst)
{
    size_t i = 0;
    if (dt == MG_DT_UINT16) {
        for (; i + 8 <= n; i += 8) {
            __m512i x = _mm512_loadu_si512((const void *)(src + i));
            _mm_storeu_si128((__m128i *)(void *)(dst + 2 * i), _mm512_cvtepi64_epi16(x));
        }
        convert_u16(src + i, n - i, dst + 2 * i);
    } else {
        for (; i + 8 <= n; i += 8) {
            __m512i x = _mm512_loadu_si512((const void *)(src + i));
            _mm256_storeu_si256((__m256i *)(void *)(dst + 4 * i), _mm512_cvtepi64_epi32(x));
        }
        mg_idx_ids_convert_portable(dt, src + i, n - i, dst + 4 * i);
    }
}

int mg_idx_ids_convert_avx512(mg_dtype dt, const int64_t *src, size_t n, uint8_t *dst)
{
    if ((dt != MG_DT_UINT16 && dt != MG_DT_INT32) || !__builtin_cpu_supports("avx512f"))
        return 0;
    convert_avx512(dt, src, n, dst);
    return 1;
}

/* convert_avx512 with the range check in the same pass: the OR of the biased values, as
 * mg_idx_ids_fit. Whether all fit. */
__attribute__((target("avx512f"))) static int convert_checked_avx512(mg_dtype dt,
                                                                      const int64_t *src,
                                                                      size_t n, uint8_t *dst)
{
    id_range r = range_of(dt);
    __m512i bias = _mm512_set1_epi64((long long)r.bias), acc = _mm512_setzero_si512();
    size_t i = 0;
    if (dt == MG_DT_UINT16) {
        for (; i + 8 <= n; i += 8) {
            __m512i x = _mm512_loadu_si512((const void *)(src + i));
            acc = _mm512_or_si512(acc, _mm512_add_epi64(x, bias));
            _mm_storeu_si128((__m128i *)(void *)(dst + 2 * i), _mm512_cvtepi64_epi16(x));
        }
    } else {
        for (; i + 8 <= n; i += 8) {
            __m512i x = _mm512_loadu_si512((const void *)(src + i));
            acc = _mm512_or_si512(acc, _mm512_add_epi64(x, bias));
            _mm256_storeu_si256((__m256i *)(void *)(dst + 4 * i), _mm512_cvtepi64_epi32(x));
        }
    }
    uint64_t all = (uint64_t)_mm512_reduce_or_epi64(acc);
    if ((all >> r.bits) != 0 || !mg_idx_ids_fit(dt, src + i, n - i)) return 0;
    mg_idx_ids_convert_portable(dt, src + i, n - i, dst + (dt == MG_DT_UINT16 ? 2 : 4) * i);
    return 1;
}

int mg_idx_ids_convert_checked_avx512(mg_dtype dt, const int64_t *src, size_t n, uint8_t *dst,
                                      int *fit)
{
    if ((dt != MG_DT_UINT16 && dt != MG_DT_INT32) || !__builtin_cpu_supports("avx512f"))
        return 0;
    *fit = convert_checked_avx512(dt, src, n, dst);
    return 1;
}
#endif

int mg_idx_ids_convert_checked(mg_dtype dt, const int64_t *src, size_t n, uint8_t *dst)
{
#if MG_IDX_AVX512
    int fit;
    if (mg_idx_ids_convert_checked_avx512(dt, src, n, dst, &fit)) return fit;
#endif
    if (!mg_idx_ids_fit(dt, src, n)) return 0;
    mg_idx_ids_convert_portable(dt, src, n, dst);
    return 1;
}

void mg_idx_ids_convert(mg_dtype dt, const int64_t *src, size_t n, uint8_t *dst)
{
#if MG_IDX_AVX512
    if (mg_idx_ids_convert_avx512(dt, src, n, dst)) return;
#endif
    mg_idx_ids_convert_portable(dt, src, n, dst);
}

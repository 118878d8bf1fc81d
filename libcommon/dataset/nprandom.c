/* nprandom.c — numpy's legacy RandomState: MT19937 with init_genrand seeding, bounded
 * integers by masked rejection, Fisher-Yates shuffle (contract in mg/nprandom.h, facts in
 * docs/FORMATS.md §4). Written from the MT19937 definition and that description, not from
 * numpy's source.
 */
#include "mg/nprandom.h"

#include <string.h>

#define MT_M 397
#define MT_MATRIX_A 0x9908b0dfu
#define MT_UPPER 0x80000000u
#define MT_LOWER 0x7fffffffu

mg_status mg_nprandom_seed(mg_nprandom *rs, uint64_t seed)
{
    MG_RETURN_IF(seed > 0xffffffffu, MG_ERR_ARG,
                 "seed %llu: must be between 0 and 2**32 - 1", (unsigned long long)seed);
    uint32_t x = (uint32_t)seed;
    for (int i = 0; i < MG_NPRANDOM_N; i++) {
        rs->key[i] = x;
        x = 1812433253u * (x ^ (x >> 30)) + (uint32_t)i + 1u;
    }
    rs->pos = MG_NPRANDOM_N;
    return MG_OK;
}

static uint32_t twist(uint32_t a, uint32_t b, uint32_t c)
{
    uint32_t y = (a & MT_UPPER) | (b & MT_LOWER);
    return c ^ (y >> 1) ^ ((y & 1u) ? MT_MATRIX_A : 0u);
}

static void regenerate(mg_nprandom *rs)
{
    uint32_t *k = rs->key;
    for (int i = 0; i < MG_NPRANDOM_N; i++)
        k[i] = twist(k[i], k[(i + 1) % MG_NPRANDOM_N], k[(i + MT_M) % MG_NPRANDOM_N]);
    rs->pos = 0;
}

uint32_t mg_nprandom_next32(mg_nprandom *rs)
{
    if (rs->pos >= MG_NPRANDOM_N) regenerate(rs);
    uint32_t y = rs->key[rs->pos++];
    y ^= y >> 11;
    y ^= (y << 7) & 0x9d2c5680u;
    y ^= (y << 15) & 0xefc60000u;
    y ^= y >> 18;
    return y;
}

uint64_t mg_nprandom_next64(mg_nprandom *rs)
{
    uint64_t hi = mg_nprandom_next32(rs);
    return (hi << 32) | mg_nprandom_next32(rs);
}

double mg_nprandom_random_sample(mg_nprandom *rs)
{
    uint32_t a = mg_nprandom_next32(rs) >> 5;
    uint32_t b = mg_nprandom_next32(rs) >> 6;
    return (a * 67108864.0 + b) / 9007199254740992.0;
}

/* Smallest 2^k - 1 >= v. */
static uint64_t fill_mask(uint64_t v)
{
    v |= v >> 1;
    v |= v >> 2;
    v |= v >> 4;
    v |= v >> 8;
    v |= v >> 16;
    v |= v >> 32;
    return v;
}

/* One masked-rejection draw in [0, max] with a precomputed mask. */
static uint64_t masked_draw(mg_nprandom *rs, uint64_t max, uint64_t mask)
{
    uint64_t v;
    if (max <= 0xffffffffu) {
        do v = mg_nprandom_next32(rs) & mask; while (v > max);
    } else {
        do v = mg_nprandom_next64(rs) & mask; while (v > max);
    }
    return v;
}

uint64_t mg_nprandom_interval(mg_nprandom *rs, uint64_t max)
{
    if (max == 0) return 0;
    return masked_draw(rs, max, fill_mask(max));
}

void mg_nprandom_shuffle(mg_nprandom *rs, void *data, size_t n, size_t elem_size)
{
    MG_ASSERT(elem_size > 0 && elem_size <= 16);
    unsigned char tmp[16];
    unsigned char *p = data;
    for (size_t i = n > 0 ? n - 1 : 0; i >= 1; i--) {
        size_t j = (size_t)mg_nprandom_interval(rs, i);
        memcpy(tmp, p + j * elem_size, elem_size);
        memcpy(p + j * elem_size, p + i * elem_size, elem_size);
        memcpy(p + i * elem_size, tmp, elem_size);
    }
}

/* Typed versions: same draws, direct swaps (the hot path of Megatron's index build). */
#define MG_SHUFFLE_TYPED(name, type)                                                       \
    void name(mg_nprandom *rs, type *a, size_t n)                                          \
    {                                                                                      \
        for (size_t i = n > 0 ? n - 1 : 0; i >= 1; i--) {                                  \
            size_t j = (size_t)mg_nprandom_interval(rs, i);                                \
            type t = a[j];                                                                 \
            a[j] = a[i];                                                                   \
            a[i] = t;                                                                      \
        }                                                                                  \
    }

MG_SHUFFLE_TYPED(mg_nprandom_shuffle_i32, int32_t)
MG_SHUFFLE_TYPED(mg_nprandom_shuffle_u32, uint32_t)
MG_SHUFFLE_TYPED(mg_nprandom_shuffle_i64, int64_t)

void mg_nprandom_permutation(mg_nprandom *rs, int64_t *out, size_t n)
{
    for (size_t i = 0; i < n; i++) out[i] = (int64_t)i;
    mg_nprandom_shuffle_i64(rs, out, n);
}

mg_status mg_nprandom_randint(mg_nprandom *rs, int64_t low, int64_t high, int64_t *out, size_t n)
{
    MG_RETURN_IF(low >= high, MG_ERR_ARG, "randint: low %lld >= high %lld", (long long)low,
                 (long long)high);
    uint64_t rng = (uint64_t)high - (uint64_t)low - 1u;
    uint64_t mask = fill_mask(rng);
    for (size_t i = 0; i < n; i++) {
        uint64_t v;
        if (rng == 0) v = 0;
        else if (rng == 0xffffffffu) v = mg_nprandom_next32(rs);
        else if (rng == UINT64_MAX) v = mg_nprandom_next64(rs);
        else v = masked_draw(rs, rng, mask);
        out[i] = (int64_t)((uint64_t)low + v);
    }
    return MG_OK;
}

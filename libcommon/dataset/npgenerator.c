/* npgenerator.c — numpy's SeedSequence, PCG64 and Generator.integers (contract in
 * mg/npgenerator.h). 128-bit arithmetic is done on 64-bit halves, so no compiler extension
 * is needed.
 */
#include "mg/npgenerator.h"

/* SeedSequence constants (O'Neill's seed_seq alternative, 32-bit words). */
#define SS_INIT_A 0x43b0d7e5u
#define SS_MULT_A 0x931e8875u
#define SS_INIT_B 0x8b51f9ddu
#define SS_MULT_B 0x58f38dedu
#define SS_MIX_L 0xca01f9ddu
#define SS_MIX_R 0x4973f715u
#define SS_XSHIFT 16

/* PCG's default 128-bit LCG multiplier. */
#define PCG_MULT_HI 0x2360ed051fc65da4ull
#define PCG_MULT_LO 0x4385df649fccf645ull

static uint32_t hashmix(uint32_t value, uint32_t *hash_const)
{
    value ^= *hash_const;
    *hash_const *= SS_MULT_A;
    value *= *hash_const;
    return value ^ (value >> SS_XSHIFT);
}

static uint32_t mix(uint32_t x, uint32_t y)
{
    uint32_t r = SS_MIX_L * x - SS_MIX_R * y;
    return r ^ (r >> SS_XSHIFT);
}

void mg_seedseq_init_words(mg_seedseq *s, const uint32_t *words, size_t n)
{
    uint32_t hc = SS_INIT_A, *pool = s->pool;
    for (size_t i = 0; i < MG_SEEDSEQ_POOL; i++) pool[i] = hashmix(i < n ? words[i] : 0, &hc);
    for (size_t src = 0; src < MG_SEEDSEQ_POOL; src++)
        for (size_t dst = 0; dst < MG_SEEDSEQ_POOL; dst++)
            if (src != dst) pool[dst] = mix(pool[dst], hashmix(pool[src], &hc));
    for (size_t src = MG_SEEDSEQ_POOL; src < n; src++)
        for (size_t dst = 0; dst < MG_SEEDSEQ_POOL; dst++)
            pool[dst] = mix(pool[dst], hashmix(words[src], &hc));
}

void mg_seedseq_init(mg_seedseq *s, uint64_t seed)
{
    uint32_t w[2] = {(uint32_t)seed, (uint32_t)(seed >> 32)};
    mg_seedseq_init_words(s, w, w[1] ? 2 : 1);
}

void mg_seedseq_generate_u32(const mg_seedseq *s, uint32_t *out, size_t n)
{
    uint32_t hc = SS_INIT_B;
    for (size_t i = 0; i < n; i++) {
        uint32_t v = s->pool[i % MG_SEEDSEQ_POOL] ^ hc;
        hc *= SS_MULT_B;
        v *= hc;
        out[i] = v ^ (v >> SS_XSHIFT);
    }
}

void mg_seedseq_generate_u64(const mg_seedseq *s, uint64_t *out, size_t n)
{
    /* the 32-bit stream of generate_u32, two words per output, low word first */
    uint32_t hc = SS_INIT_B;
    for (size_t i = 0; i < 2 * n; i++) {
        uint32_t v = s->pool[i % MG_SEEDSEQ_POOL] ^ hc;
        hc *= SS_MULT_B;
        v *= hc;
        v ^= v >> SS_XSHIFT;
        if (i % 2 == 0) out[i / 2] = v;
        else out[i / 2] |= (uint64_t)v << 32;
    }
}

/* ---- 128-bit helpers ---------------------------------------------------------------- */

/* The full 128-bit product a * b as (*hi, *lo). */
static void mul_64x64(uint64_t a, uint64_t b, uint64_t *hi, uint64_t *lo)
{
    uint64_t a0 = a & 0xffffffffu, a1 = a >> 32, b0 = b & 0xffffffffu, b1 = b >> 32;
    uint64_t p00 = a0 * b0, p01 = a0 * b1, p10 = a1 * b0, p11 = a1 * b1;
    uint64_t mid = (p00 >> 32) + (p01 & 0xffffffffu) + (p10 & 0xffffffffu);
    *lo = (mid << 32) | (p00 & 0xffffffffu);
    *hi = p11 + (p01 >> 32) + (p10 >> 32) + (mid >> 32);
}

/* (*hi, *lo) += (bhi, blo) modulo 2^128. */
static void add_128(uint64_t *hi, uint64_t *lo, uint64_t bhi, uint64_t blo)
{
    uint64_t l = *lo + blo;
    *hi += bhi + (l < blo);
    *lo = l;
}

/* state = state * multiplier + inc (mod 2^128). */
static void pcg_step(mg_pcg64 *g)
{
    uint64_t hi, lo;
    mul_64x64(g->state_lo, PCG_MULT_LO, &hi, &lo);
    hi += g->state_lo * PCG_MULT_HI + g->state_hi * PCG_MULT_LO;
    add_128(&hi, &lo, g->inc_hi, g->inc_lo);
    g->state_hi = hi;
    g->state_lo = lo;
}

void mg_pcg64_seed_seq(mg_pcg64 *g, const mg_seedseq *s)
{
    uint64_t w[4];
    mg_seedseq_generate_u64(s, w, 4);
    g->state_hi = g->state_lo = 0;
    g->inc_hi = (w[2] << 1) | (w[3] >> 63);
    g->inc_lo = (w[3] << 1) | 1u;
    pcg_step(g);
    add_128(&g->state_hi, &g->state_lo, w[0], w[1]);
    pcg_step(g);
    g->has_uint32 = 0;
    g->uinteger = 0;
}

void mg_pcg64_seed(mg_pcg64 *g, uint64_t seed)
{
    mg_seedseq s;
    mg_seedseq_init(&s, seed);
    mg_pcg64_seed_seq(g, &s);
}

uint64_t mg_pcg64_next64(mg_pcg64 *g)
{
    pcg_step(g);
    unsigned rot = (unsigned)(g->state_hi >> 58);
    uint64_t x = g->state_hi ^ g->state_lo;
    return (x >> rot) | (x << ((64u - rot) & 63u));
}

uint32_t mg_pcg64_next32(mg_pcg64 *g)
{
    if (g->has_uint32) {
        g->has_uint32 = 0;
        return g->uinteger;
    }
    uint64_t v = mg_pcg64_next64(g);
    g->has_uint32 = 1;
    g->uinteger = (uint32_t)(v >> 32);
    return (uint32_t)v;
}

/* ---- bounded integers --------------------------------------------------------------- */

/* Lemire's multiply-shift on 32-bit draws: a value in [0, rng], rng < 2^32 - 1. */
static uint32_t lemire32(mg_pcg64 *g, uint32_t rng)
{
    uint32_t excl = rng + 1u;
    uint64_t m = (uint64_t)mg_pcg64_next32(g) * excl;
    uint32_t left = (uint32_t)m;
    if (left < excl) {
        uint32_t threshold = (UINT32_MAX - rng) % excl; /* 2^32 mod excl */
        while (left < threshold) {
            m = (uint64_t)mg_pcg64_next32(g) * excl;
            left = (uint32_t)m;
        }
    }
    return (uint32_t)(m >> 32);
}

/* The same on 64-bit draws, rng < 2^64 - 1. */
static uint64_t lemire64(mg_pcg64 *g, uint64_t rng)
{
    uint64_t excl = rng + 1u, hi, left;
    mul_64x64(mg_pcg64_next64(g), excl, &hi, &left);
    if (left < excl) {
        uint64_t threshold = (UINT64_MAX - rng) % excl;
        while (left < threshold) mul_64x64(mg_pcg64_next64(g), excl, &hi, &left);
    }
    return hi;
}

/* A value in [0, rng] as random_bounded_uint64_fill / random_bounded_uint32_fill draw it. */
static uint64_t bounded(mg_pcg64 *g, uint64_t rng)
{
    if (rng == 0) return 0;
    if (rng == 0xffffffffu) return mg_pcg64_next32(g);
    if (rng < 0xffffffffu) return lemire32(g, (uint32_t)rng);
    if (rng == UINT64_MAX) return mg_pcg64_next64(g);
    return lemire64(g, rng);
}

/* numpy's bound checks: [low, high] (high already inclusive) inside [lo_bound, hi_bound]. */
static mg_status check_bounds(int64_t low, int64_t high, int endpoint, int64_t lo_bound,
                              int64_t hi_bound, const char *dtype)
{
    MG_RETURN_IF(low < lo_bound, MG_ERR_ARG, "low %lld is out of bounds for %s",
                 (long long)low, dtype);
    MG_RETURN_IF(high > hi_bound, MG_ERR_ARG, "high %lld is out of bounds for %s",
                 (long long)high + (endpoint ? 0 : 1), dtype);
    MG_RETURN_IF(low > high, MG_ERR_ARG, "%s", endpoint ? "low > high" : "low >= high");
    return MG_OK;
}

mg_status mg_npgen_integers_i32(mg_pcg64 *g, int64_t low, int64_t high, int endpoint,
                                int32_t *out, size_t n)
{
    MG_RETURN_IF(!endpoint && high <= low, MG_ERR_ARG, "low >= high");
    int64_t top = endpoint ? high : high - 1;
    MG_FORWARD(check_bounds(low, top, endpoint, INT32_MIN, INT32_MAX, "int32"));
    uint32_t rng = (uint32_t)(top - low), off = (uint32_t)low;
    for (size_t i = 0; i < n; i++) out[i] = (int32_t)(off + (uint32_t)bounded(g, rng));
    return MG_OK;
}

mg_status mg_npgen_integers_i64(mg_pcg64 *g, int64_t low, int64_t high, int endpoint,
                                int64_t *out, size_t n)
{
    MG_RETURN_IF(!endpoint && high <= low, MG_ERR_ARG, "low >= high");
    int64_t top = endpoint ? high : high - 1;
    MG_FORWARD(check_bounds(low, top, endpoint, INT64_MIN, INT64_MAX, "int64"));
    uint64_t rng = (uint64_t)top - (uint64_t)low, off = (uint64_t)low;
    for (size_t i = 0; i < n; i++) out[i] = (int64_t)(off + bounded(g, rng));
    return MG_OK;
}

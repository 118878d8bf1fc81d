/* pretok_ascii.c — fills a scanner window (pretok_ascii.h): the classes of up to 64 bytes
 * as bit masks, in one step with AVX-512BW where the CPU has it (checked at run time), else
 * 16 bytes a step with SSE2 (x86-64's baseline), byte by byte elsewhere.
 */
#include "pretok_ascii.h"

#include <string.h>

#if defined(__SSE2__)
#include <emmintrin.h>
#endif
#if MG_PK_AVX512
#include <immintrin.h>
#endif

static void set_len(mg_pk_win *w, size_t n, size_t base)
{
    w->base = base;
    w->len = n - base < 64 ? n - base : 64;
    w->at_end = base + w->len == n;
    w->rlim = w->at_end ? w->len : w->len - 1;
}

void mg_pk_win_fill_scalar(mg_pk_win *w, const uint8_t *s, size_t n, size_t base)
{
    set_len(w, n, base);
    memset(w->m, 0, sizeof w->m);
    for (size_t k = 0; k < w->len; k++) {
        uint8_t b = s[base + k];
        uint64_t bit = 1ULL << k;
        if (b >= 0x80) {
            w->m[MG_PK_C_HIGH] |= bit;
            continue;
        }
        if (b == ' ') w->m[MG_PK_C_SPACE] |= bit;
        if (b == '\'') w->m[MG_PK_C_QUOTE] |= bit;
        if (b == '/') w->m[MG_PK_C_SLASH] |= bit;
        if ((unsigned)(b - 'A') < 26) w->m[MG_PK_C_UPPER] |= bit;
        if ((unsigned)(b - 'a') < 26) w->m[MG_PK_C_LOWER] |= bit;
        if ((unsigned)((b | 0x20) - 'a') < 26) w->m[MG_PK_C_LETTER] |= bit;
        else if ((unsigned)(b - '0') < 10) w->m[MG_PK_C_DIGIT] |= bit;
        else if (b == ' ' || (unsigned)(b - '\t') < 5) w->m[MG_PK_C_WS] |= bit;
        else w->m[MG_PK_C_OTHER] |= bit;
        if (b == '\r' || b == '\n') w->m[MG_PK_C_CRLF] |= bit;
    }
}

#if defined(__SSE2__)
/* (x - lo) < count as unsigned bytes, for count < 128: shifted into the signed range. */
static inline __m128i in_range(__m128i x, char lo, int count)
{
    __m128i u = _mm_add_epi8(x, _mm_set1_epi8((char)(0x80 - (unsigned char)lo)));
    return _mm_cmplt_epi8(u, _mm_set1_epi8((char)(-128 + count)));
}

/* The class masks of the 64 bytes at p. */
static void classify64(mg_pk_win *w, const uint8_t *p)
{
    uint64_t up = 0, lo = 0, d = 0, sp = 0, c = 0, high = 0, sp1 = 0, q = 0, sl = 0;
    for (unsigned k = 0; k < 64; k += 16) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(p + k));
        __m128i cr = _mm_or_si128(_mm_cmpeq_epi8(x, _mm_set1_epi8('\r')),
                                  _mm_cmpeq_epi8(x, _mm_set1_epi8('\n')));
        __m128i space = _mm_cmpeq_epi8(x, _mm_set1_epi8(' '));
        __m128i ws = _mm_or_si128(space, in_range(x, '\t', 5));
        up |= (uint64_t)(unsigned)_mm_movemask_epi8(in_range(x, 'A', 26)) << k;
        lo |= (uint64_t)(unsigned)_mm_movemask_epi8(in_range(x, 'a', 26)) << k;
        d |= (uint64_t)(unsigned)_mm_movemask_epi8(in_range(x, '0', 10)) << k;
        sp |= (uint64_t)(unsigned)_mm_movemask_epi8(ws) << k;
        c |= (uint64_t)(unsigned)_mm_movemask_epi8(cr) << k;
        high |= (uint64_t)(unsigned)_mm_movemask_epi8(x) << k;
        sp1 |= (uint64_t)(unsigned)_mm_movemask_epi8(space) << k;
        q |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8('\''))) << k;
        sl |= (uint64_t)(unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(x, _mm_set1_epi8('/'))) << k;
    }
    uint64_t l = up | lo;
    w->m[MG_PK_C_LETTER] = l;
    w->m[MG_PK_C_UPPER] = up;
    w->m[MG_PK_C_LOWER] = lo;
    w->m[MG_PK_C_DIGIT] = d;
    w->m[MG_PK_C_WS] = sp;
    w->m[MG_PK_C_CRLF] = c;
    w->m[MG_PK_C_OTHER] = ~(l | d | sp | high);
    w->m[MG_PK_C_SPACE] = sp1;
    w->m[MG_PK_C_QUOTE] = q;
    w->m[MG_PK_C_SLASH] = sl;
    w->m[MG_PK_C_HIGH] = high;
}
#endif

#if MG_PK_AVX512
/* The class masks of the min(64, len) bytes at p in one AVX-512BW step (a masked load:
 * nothing at or past p + len is read). */
__attribute__((target("avx512bw"))) static void classify64_avx512(mg_pk_win *w,
                                                                 const uint8_t *p, size_t len)
{
    __mmask64 in = len >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << len) - 1;
    __m512i x = _mm512_maskz_loadu_epi8(in, p);
#define RANGE(lo, count)                                                                   \
    _mm512_mask_cmplt_epu8_mask(in, _mm512_sub_epi8(x, _mm512_set1_epi8((char)(lo))),     \
                                _mm512_set1_epi8((char)(count)))
#define EQ(c) _mm512_mask_cmpeq_epi8_mask(in, x, _mm512_set1_epi8((char)(c)))
    uint64_t up = RANGE('A', 26), lo = RANGE('a', 26), d = RANGE('0', 10);
    uint64_t space = EQ(' '), ws = space | RANGE('\t', 5), high = _mm512_movepi8_mask(x) & in;
    w->m[MG_PK_C_LETTER] = up | lo;
    w->m[MG_PK_C_UPPER] = up;
    w->m[MG_PK_C_LOWER] = lo;
    w->m[MG_PK_C_DIGIT] = d;
    w->m[MG_PK_C_WS] = ws;
    w->m[MG_PK_C_CRLF] = EQ('\r') | EQ('\n');
    w->m[MG_PK_C_OTHER] = in & ~(up | lo | d | ws | high);
    w->m[MG_PK_C_SPACE] = space;
    w->m[MG_PK_C_QUOTE] = EQ('\'');
    w->m[MG_PK_C_SLASH] = EQ('/');
    w->m[MG_PK_C_HIGH] = high;
#undef RANGE
#undef EQ
}

int mg_pk_win_fill_avx512(mg_pk_win *w, const uint8_t *s, size_t n, size_t base)
{
    if (!__builtin_cpu_supports("avx512bw")) return 0;
    classify64_avx512(w, s + base, n - base);
    set_len(w, n, base);
    return 1;
}
#endif

#if defined(__SSE2__)
void mg_pk_win_fill_sse2(mg_pk_win *w, const uint8_t *s, size_t n, size_t base)
{
    if (n - base < 64) { /* the text's tail: a copy padded with 0x80 (in no class) */
        uint8_t tail[64];
        memset(tail, 0x80, sizeof tail);
        memcpy(tail, s + base, n - base);
        classify64(w, tail);
        w->m[MG_PK_C_HIGH] &= (1ULL << (n - base)) - 1; /* the padding is no text */
    } else {
        classify64(w, s + base);
    }
    set_len(w, n, base);
}
#endif

void mg_pk_win_fill(mg_pk_win *w, const uint8_t *s, size_t n, size_t base)
{
#if MG_PK_AVX512
    if (mg_pk_win_fill_avx512(w, s, n, base)) return;
#endif
#if defined(__SSE2__)
    mg_pk_win_fill_sse2(w, s, n, base);
#else
    mg_pk_win_fill_scalar(w, s, n, base);
#endif
}

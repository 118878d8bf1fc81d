/* test_pretok_fast.c — the scanners' window loops (libcommon/text/pretok_ascii.h): the byte
 * classes of the default and the portable classifier against mg_pk_ascii_kind for all 256
 * bytes, every classifier (AVX-512BW where the CPU has it, SSE2, portable) alike on every
 * window position of a mixed text, and the GPT-2, cl100k and o200k window loops against
 * their reference loops (tests/fuzz/pretok_fast_oracle.h) on edge cases and on deterministic
 * pseudo-random texts mixing ASCII runs longer than a window, contractions, CR/LF,
 * non-ASCII letters, digits and spaces, and malformed bytes.
 */
#include <stdlib.h>
#include <string.h>

#include "../fuzz/pretok_fast_oracle.h"
#include "harness.h"
#include "text/pretok_ascii.h"

/* The class letters of byte k of window w ("LU", "LL", "N", "W", "O", "" for none; "WC"
 * CR/LF; "?" for an impossible combination). */
static const char *win_class(const mg_pk_win *w, unsigned k)
{
    uint64_t bit = 1ULL << k;
    int l = !!(w->m[MG_PK_C_LETTER] & bit), d = !!(w->m[MG_PK_C_DIGIT] & bit);
    int s = !!(w->m[MG_PK_C_WS] & bit), o = !!(w->m[MG_PK_C_OTHER] & bit);
    int c = !!(w->m[MG_PK_C_CRLF] & bit);
    int up = !!(w->m[MG_PK_C_UPPER] & bit), lo = !!(w->m[MG_PK_C_LOWER] & bit);
    if (l + d + s + o > 1 || (c && !s) || up + lo != l) return "?";
    if (up) return "LU";
    if (lo) return "LL";
    return l ? "L" : d ? "N" : o ? "O" : s ? (c ? "WC" : "W") : "";
}

static const char *table_class(unsigned b)
{
    if (b >= 0x80) return "";
    switch (mg_pk_ascii_kind[b]) {
    case MG_PK_L: return b < 'a' ? "LU" : "LL";
    case MG_PK_N: return "N";
    case MG_PK_WS: return b == '\r' || b == '\n' ? "WC" : "W";
    default: return "O";
    }
}

/* The overlapping classes of byte k (of value b) of window w: space, quote, slash, high. */
static int extra_classes_right(const mg_pk_win *w, unsigned k, unsigned b)
{
    return (int)(w->m[MG_PK_C_SPACE] >> k & 1) == (b == ' ') &&
           (int)(w->m[MG_PK_C_QUOTE] >> k & 1) == (b == '\'') &&
           (int)(w->m[MG_PK_C_SLASH] >> k & 1) == (b == '/') &&
           (int)(w->m[MG_PK_C_HIGH] >> k & 1) == (b >= 0x80);
}

MG_TEST(pretok_fast_window_classes_match_the_ascii_table)
{
    uint8_t buf[64];
    for (unsigned b = 0; b < 256; b++) {
        memset(buf, 'a', sizeof buf);
        for (unsigned k = 0; k < 64; k += 21) buf[k] = (uint8_t)b;
        mg_pk_win w, v;
        mg_pk_win_fill(&w, buf, 64, 0);
        mg_pk_win_fill_scalar(&v, buf, 64, 0);
        for (unsigned k = 0; k < 64; k += 21) {
            if (strcmp(win_class(&w, k), table_class(b)) != 0)
                mg_test_fail(t, __FILE__, __LINE__, "byte 0x%02x at %u: window class %s", b,
                             k, win_class(&w, k));
            if (strcmp(win_class(&v, k), table_class(b)) != 0)
                mg_test_fail(t, __FILE__, __LINE__, "byte 0x%02x at %u: scalar class %s", b,
                             k, win_class(&v, k));
            if (!extra_classes_right(&w, k, b) || !extra_classes_right(&v, k, b))
                mg_test_fail(t, __FILE__, __LINE__, "byte 0x%02x at %u: space/quote/slash/high",
                             b, k);
        }
    }
}

/* ---- pseudo-random texts ---- */

static uint64_t rng_next(uint64_t *x)
{
    *x ^= *x << 13;
    *x ^= *x >> 7;
    *x ^= *x << 17;
    return *x;
}

/* Fragments the generator strings together: what the fast path decides and what it must
 * leave to the reference (the scanners' hard cases). */
static const char *const fragments[] = {
    "the", " quick", " Brown", "FOX", " ", "  ", "   ", "\t", "\n", "\r\n", "\n\n", " \n ",
    "'s", "'S", "'ll", "'LL", "'re", "'ve", "'m", "'d", "'t", "'", "''", " 'x", "1", "12",
    "123", "1234567", " 42", ".", ",", "!!", "...", " (", ")", "--", "==", "/", "\\", "\x01",
    "\x7f", "\x0b", "\x0c", "\xc3\xa9", "caf\xc3\xa9", "\xd0\xbf\xd1\x80\xd0\xb8", "\xd9\xa3",
    "1\xd9\xa3", "\xc2\xa0", " \xc2\xa0", "\xe3\x80\x80", "\xe2\x80\x94", "\xe4\xb8\xad",
    "\xff", "\xc3", "\xe2\x80", "\x80", " \xc3\xa9t\xc3\xa9", "a\xcc\x81", "\xef\xbc\x91",
    "HTTPServer", "iPhone", "ABCdef", "/\n/", " //", "?/", "\xc3\x89" "cole", "XML\xc3\xa9",
};
#define NFRAG (sizeof fragments / sizeof fragments[0])

/* Appends a random text of about `size` bytes to buf (cap bytes); returns its length.
 * One text in three is plain ASCII prose; long runs (letters, spaces, digits, dashes)
 * cross windows. */
static size_t random_text(uint64_t *x, uint8_t *buf, size_t cap, size_t size)
{
    size_t n = 0;
    int prose = rng_next(x) % 3 == 0;
    while (n < size) {
        uint64_t r = rng_next(x);
        const char *f = fragments[r % (prose ? 22 : NFRAG)];
        size_t len = strlen(f), reps = (r >> 32) % 23 == 0 ? 20 + (r >> 40) % 90 : 1;
        for (size_t k = 0; k < reps && n + len < cap; k++) {
            memcpy(buf + n, f, len);
            n += len;
        }
        if (n + len >= cap) break;
    }
    return n;
}

static int same_window(const mg_pk_win *a, const mg_pk_win *b)
{
    return a->len == b->len && a->at_end == b->at_end && memcmp(a->m, b->m, sizeof a->m) == 0;
}

MG_TEST(pretok_fast_windows_classify_alike)
{
    uint8_t buf[4096];
    uint64_t x = 0x9E3779B97F4A7C15ULL;
    size_t n = random_text(&x, buf, sizeof buf, 3000);
    for (size_t base = 0; base < n; base++) {
        mg_pk_win w, v;
        mg_pk_win_fill(&w, buf, n, base);
        mg_pk_win_fill_scalar(&v, buf, n, base);
        if (!same_window(&w, &v))
            mg_test_fail(t, __FILE__, __LINE__, "windows at %zu of %zu differ", base, n);
#if defined(__SSE2__)
        mg_pk_win_fill_sse2(&w, buf, n, base);
        if (!same_window(&w, &v))
            mg_test_fail(t, __FILE__, __LINE__, "SSE2 window at %zu of %zu differs", base, n);
#endif
#if MG_PK_AVX512
        if (mg_pk_win_fill_avx512(&w, buf, n, base) && !same_window(&w, &v))
            mg_test_fail(t, __FILE__, __LINE__, "AVX-512 window at %zu of %zu differs", base,
                         n);
#endif
    }
}

static void check_text(mg_test_ctx *t, const uint8_t *s, size_t n, size_t base)
{
    for (size_t c = 0; c < PRETOK_FAST_NCASES; c++) {
        const char *diff = pretok_fast_oracle_check(&pretok_fast_cases[c], s, n, base);
        if (diff) mg_test_fail(t, __FILE__, __LINE__, "%s (text of %zu bytes)", diff, n);
    }
}

MG_TEST(pretok_fast_edge_cases_match_the_reference)
{
    static const char *const texts[] = {
        "", "a", " ", "'", "1", "\n", " a", "a ", "  a", "a  ", " \n", "\r\n\r\n", "x\r\ny",
        "don't", "DON'T", " 'll", "ab'LL", "1234", "12345 678", "a1b2", " !", " !a", "!\n\n",
        "a \xc2\xa0" "b", "a\xc2\xa0", "1\xd9\xa3\xd9\xa3", "caf\xc3\xa9s", "x  \xe3\x80\x80",
        "   \t\t  \n  ", "tail   ", "(\r\n", "\x01\x02 x",
        /* non-ASCII characters the bulk step classes: a prefix, case changes, marks */
        "it\xe2\x80\x99s", " \xe2\x80\x94word", "\xd0\xb6\xd0\x96x\xd0\xb6",
        "a\xe4\xb8\xad" "B", "\xe4\xb8\xad" "Ab", "\xe0\xa4\xb9\xe0\xa4\xbf\xe0\xa4\xa8",
        "\xf0\x9f\x91\xa9\xcf\x82", "((\xc3\xa9", " (\xc3\xa9", ".\r\n\xc3\xa9",
        "abcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyzabcdefghijklmnopqrstuvwxyz!",
        "                                                                                x",
        "----------------------------------------------------------------------------\r\n",
        "1111111111111111111111111111111111111111111111111111111111111111111111111111",
    };
    for (size_t i = 0; i < sizeof texts / sizeof texts[0]; i++) {
        check_text(t, (const uint8_t *)texts[i], strlen(texts[i]), 0);
        check_text(t, (const uint8_t *)texts[i], strlen(texts[i]), 1000);
    }
}

MG_TEST(pretok_fast_random_texts_match_the_reference)
{
    static uint8_t buf[1 << 14];
    uint64_t x = 0x2545F4914F6CDD1DULL;
    for (int round = 0; round < 400; round++) {
        size_t size = round < 200 ? (size_t)round : 200 + rng_next(&x) % 12000;
        size_t n = random_text(&x, buf, sizeof buf, size);
        check_text(t, buf, n, 0);
        for (size_t cut = 1; cut < 70 && cut < n; cut += 7) check_text(t, buf, n - cut, 0);
    }
}

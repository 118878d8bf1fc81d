/* test_unicode.c — the code point class table and UTF-8 helpers (mg/unicode.h).
 * The exhaustive tests compare every code point's class with Debian's Oniguruma (\p{..}
 * over a buffer holding all of U+0000..U+10FFFF): identical where the class data is as in
 * Unicode 14.0 (age 0), and unassigned in Oniguruma 6.9.8 for the code points assigned
 * later (age 1: Unicode 15.0, age 2: 15.1/16.0 as implemented by the peers).
 */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "mg/unicode.h"

#if MG_HAVE_ONIG
#include <oniguruma.h>
#endif

MG_TEST(unicode_white_space_is_the_25_code_points)
{
    static const uint32_t ws[] = {0x09,   0x0A,   0x0B,   0x0C,   0x0D,   0x20,   0x85,
                                  0xA0,   0x1680, 0x2000, 0x2001, 0x2002, 0x2003, 0x2004,
                                  0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A, 0x2028,
                                  0x2029, 0x202F, 0x205F, 0x3000};
    size_t count = 0;
    for (uint32_t cp = 0; cp < 0x110000; cp++) count += mg_uc_is_ws(cp);
    MG_CHECK_EQ_INT(t, count, 25);
    for (size_t i = 0; i < sizeof ws / sizeof ws[0]; i++) MG_CHECK(t, mg_uc_is_ws(ws[i]));
    for (uint32_t cp = 0x1C; cp <= 0x1F; cp++) MG_CHECK(t, !mg_uc_is_ws(cp));
    MG_CHECK(t, !mg_uc_is_ws(0x200B)); /* ZWSP is Cf */
    MG_CHECK(t, !mg_uc_is_ws(0xFEFF));
}

MG_TEST(unicode_sample_categories)
{
    MG_CHECK_EQ_INT(t, mg_uc_props('A') & MG_UC_CAT_MASK, MG_UC_LU);
    MG_CHECK_EQ_INT(t, mg_uc_props('z') & MG_UC_CAT_MASK, MG_UC_LL);
    MG_CHECK_EQ_INT(t, mg_uc_props(0x01C5) & MG_UC_CAT_MASK, MG_UC_LT); /* Dz with caron */
    MG_CHECK_EQ_INT(t, mg_uc_props(0x02B0) & MG_UC_CAT_MASK, MG_UC_LM);
    MG_CHECK_EQ_INT(t, mg_uc_props(0x4E2D) & MG_UC_CAT_MASK, MG_UC_LO);
    MG_CHECK_EQ_INT(t, mg_uc_props(0x0301) & MG_UC_CAT_MASK, MG_UC_MN);
    MG_CHECK_EQ_INT(t, mg_uc_props(0x093F) & MG_UC_CAT_MASK, MG_UC_MC);
    MG_CHECK_EQ_INT(t, mg_uc_props(0x20DD) & MG_UC_CAT_MASK, MG_UC_ME);
    MG_CHECK_EQ_INT(t, mg_uc_props('7') & MG_UC_CAT_MASK, MG_UC_ND);
    MG_CHECK_EQ_INT(t, mg_uc_props(0x216B) & MG_UC_CAT_MASK, MG_UC_NL); /* Roman XII */
    MG_CHECK_EQ_INT(t, mg_uc_props(0x00BD) & MG_UC_CAT_MASK, MG_UC_NO); /* 1/2 */
    MG_CHECK_EQ_INT(t, mg_uc_props('!') & MG_UC_CAT_MASK, MG_UC_P);
    MG_CHECK_EQ_INT(t, mg_uc_props(0x2019) & MG_UC_CAT_MASK, MG_UC_P);
    MG_CHECK_EQ_INT(t, mg_uc_props('$') & MG_UC_CAT_MASK, MG_UC_S);
    MG_CHECK_EQ_INT(t, mg_uc_props(0x1F600) & MG_UC_CAT_MASK, MG_UC_S);
    MG_CHECK_EQ_INT(t, mg_uc_props(0x3000), MG_UC_Z | MG_UC_WS);
    MG_CHECK_EQ_INT(t, mg_uc_props(0x200B), MG_UC_OTHER);
    MG_CHECK_EQ_INT(t, mg_uc_props(0xE000), MG_UC_OTHER);   /* Co */
    MG_CHECK_EQ_INT(t, mg_uc_props(0x10FFFF), MG_UC_OTHER); /* Cn */
    MG_CHECK_EQ_INT(t, mg_uc_props(0x110000), 0);
    MG_CHECK(t, mg_uc_props(0x4E2D) & MG_UC_HAN);
    MG_CHECK(t, !(mg_uc_props(0x3042) & MG_UC_HAN)); /* hiragana */
}

MG_TEST(unicode_ages_of_new_code_points)
{
    /* Unicode 15.0 (Debian's data) */
    MG_CHECK_EQ_INT(t, mg_uc_props(0x11F04), MG_UC_LO | 1 << MG_UC_AGE_SHIFT); /* Kawi */
    MG_CHECK_EQ_INT(t, mg_uc_props(0x1E030), MG_UC_LM | 1 << MG_UC_AGE_SHIFT);
    MG_CHECK_EQ_INT(t, mg_uc_props(0x31350), MG_UC_LO | MG_UC_HAN | 1 << MG_UC_AGE_SHIFT);
    MG_CHECK_EQ_INT(t, mg_uc_props(0x0CF3), MG_UC_MC | 1 << MG_UC_AGE_SHIFT);
    /* Unicode 15.1 / 16.0 (probed from the peers) */
    MG_CHECK_EQ_INT(t, mg_uc_props(0x2EBF0), MG_UC_LO | MG_UC_HAN | 2 << MG_UC_AGE_SHIFT);
    MG_CHECK_EQ_INT(t, mg_uc_props(0x10D4A), MG_UC_LO | 2 << MG_UC_AGE_SHIFT); /* Garay */
    MG_CHECK_EQ_INT(t, mg_uc_props(0x1CCF0), MG_UC_ND | 2 << MG_UC_AGE_SHIFT);
    MG_CHECK_EQ_INT(t, mg_uc_props(0x1171E), MG_UC_MC | 2 << MG_UC_AGE_SHIFT); /* was Mn */
    /* Unicode 17.0 is not implemented by the peers: unassigned */
    MG_CHECK_EQ_INT(t, mg_uc_props(0x323B0), MG_UC_OTHER);
    size_t n1 = 0, n2 = 0;
    for (uint32_t cp = 0; cp < 0x110000; cp++) {
        n1 += MG_UC_AGE(mg_uc_props(cp)) == 1;
        n2 += MG_UC_AGE(mg_uc_props(cp)) == 2;
    }
    MG_CHECK_EQ_INT(t, n1, 4489); /* characters added in 15.0 */
    MG_CHECK_EQ_INT(t, n2, 627 + 5185 + 1);
}

MG_TEST(unicode_fold_to_ascii_letter)
{
    MG_CHECK_EQ_INT(t, mg_uc_fold_ascii_letter('S'), 's');
    MG_CHECK_EQ_INT(t, mg_uc_fold_ascii_letter('s'), 's');
    MG_CHECK_EQ_INT(t, mg_uc_fold_ascii_letter(0x017F), 's'); /* LONG S */
    MG_CHECK_EQ_INT(t, mg_uc_fold_ascii_letter(0x212A), 'k'); /* KELVIN SIGN */
    MG_CHECK_EQ_INT(t, mg_uc_fold_ascii_letter(0x212B), 0);   /* ANGSTROM SIGN -> å */
    MG_CHECK_EQ_INT(t, mg_uc_fold_ascii_letter(0x0130), 0);   /* I WITH DOT: full fold only */
    MG_CHECK_EQ_INT(t, mg_uc_fold_ascii_letter(0x00DF), 0);   /* sharp s: full fold "ss" */
    MG_CHECK_EQ_INT(t, mg_uc_fold_ascii_letter('1'), 0);
    size_t n = 0;
    for (uint32_t cp = 0x80; cp < 0x110000; cp++) n += mg_uc_fold_ascii_letter(cp) != 0;
    MG_CHECK_EQ_INT(t, n, 2);
}

MG_TEST(unicode_utf8_roundtrip_every_code_point)
{
    size_t bad = 0;
    for (uint32_t cp = 0; cp < 0x110000; cp++) {
        uint8_t b[4];
        size_t n = mg_utf8_encode(cp, b);
        if (cp >= 0xD800 && cp <= 0xDFFF) {
            bad += n != 0;
            continue;
        }
        uint32_t back = 0;
        size_t m = n ? mg_utf8_decode(b, n, &back) : 0;
        bad += !n || m != n || back != cp || mg_utf8_validate(b, n) != n;
        bad += n > 1 && mg_utf8_decode(b, n - 1, &back) != 1; /* truncated */
    }
    MG_CHECK_EQ_INT(t, bad, 0);
    uint8_t b[4];
    MG_CHECK_EQ_INT(t, mg_utf8_encode(0x110000, b), 0);
}

MG_TEST(unicode_utf8_rejects_malformed)
{
    static const struct {
        const char *s;
        size_t len, valid;
    } cases[] = {
        {"ab\xC0\x80", 4, 2},         /* overlong NUL */
        {"\xC1\xBF", 2, 0},           /* overlong */
        {"\xE0\x80\x80", 3, 0},       /* overlong 3-byte */
        {"x\xED\xA0\x80", 4, 1},      /* surrogate U+D800 */
        {"\xF4\x90\x80\x80", 4, 0},   /* above U+10FFFF */
        {"\xF0\x80\x80\x80", 4, 0},   /* overlong 4-byte */
        {"\xF5\x80\x80\x80", 4, 0},   /* invalid lead */
        {"abc\x80", 4, 3},            /* lone continuation */
        {"abcdefgh\xE4\xB8", 10, 8},  /* truncated at the end */
        {"\xE4\xB8\xADok", 5, 5},     /* valid */
        {"12345678\xFF", 9, 8},       /* 0xFF after the ASCII fast path */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const uint8_t *s = (const uint8_t *)cases[i].s;
        MG_CHECK_EQ_INT(t, mg_utf8_validate(s, cases[i].len), cases[i].valid);
    }
    uint32_t cp;
    MG_CHECK_EQ_INT(t, mg_utf8_decode((const uint8_t *)"\xC0\x80", 2, &cp), 1);
    MG_CHECK_EQ_INT(t, cp, MG_UC_BAD);
    MG_CHECK_EQ_INT(t, mg_utf8_decode((const uint8_t *)"\xE4\xB8\xAD", 2, &cp), 1);
    MG_CHECK_EQ_INT(t, cp, MG_UC_BAD);
}

/* mg_ascii_end (16, 8 and 1 byte steps) and the validator built on it: one byte >= 0x80,
 * or a malformed sequence, at every offset of ASCII buffers of every length up to 70, and
 * the search started at every offset before it. */
MG_TEST(unicode_ascii_end_and_validate_at_every_offset)
{
    uint8_t buf[72];
    int bad = 0;
    for (size_t n = 0; n <= 70; n++) {
        memset(buf, 'a', sizeof buf);
        buf[n] = 0x80; /* past the end: never to be reported */
        for (size_t i = 0; i <= n; i++) bad += mg_ascii_end(buf, i, n) != n;
        for (size_t at = 0; at < n; at++) {
            memset(buf, 'a', sizeof buf);
            buf[at] = 0xC3; /* a lone lead byte: not ASCII, not valid */
            for (size_t i = 0; i <= at; i++) bad += mg_ascii_end(buf, i, n) != at;
            bad += mg_utf8_validate(buf, n) != at;
            if (at + 1 < n) buf[at + 1] = 0xA9; /* now U+00E9: valid */
            bad += mg_utf8_validate(buf, n) != (at + 1 < n ? n : at);
        }
    }
    MG_CHECK_EQ_INT(t, bad, 0);
}

/* Category sizes of Unicode 16.0 as both peers implement it (HF tokenizers' Oniguruma and
 * tiktoken's regex agree on every code point; measured with gen-unicode-tables.py
 * --probe-delta). */
static void check_counts(mg_test_ctx *t)
{
    static const size_t want[15] = {0,   1858, 2258, 31,  404, 136477, 2020, 468,
                                    13,  760,  236,  915, 855, 8514,   19};
    size_t n[16] = {0}, ws = 0, han = 0;
    for (uint32_t cp = 0; cp < 0x110000; cp++) {
        uint8_t props = mg_uc_props(cp);
        n[props & MG_UC_CAT_MASK]++;
        ws += (props & MG_UC_WS) != 0;
        han += (props & MG_UC_HAN) != 0;
    }
    for (int c = 1; c < 15; c++)
        if (n[c] != want[c])
            mg_test_fail(t, __FILE__, __LINE__, "category %d: %zu != %zu", c, n[c], want[c]);
    MG_CHECK_EQ_INT(t, n[15], 0);
    MG_CHECK_EQ_INT(t, ws, 25);
    MG_CHECK_EQ_INT(t, han, 99030);
}

MG_TEST(unicode_category_sizes_are_unicode_16)
{
    check_counts(t);
}

#if MG_HAVE_ONIG

/* All code points except surrogates, UTF-8 encoded, with each one's start offset. */
typedef struct {
    uint8_t *buf;
    size_t len;
    uint32_t *cp_at; /* code point starting at each byte offset (or MG_UC_BAD) */
} all_cps;

static int all_cps_build(all_cps *a)
{
    a->buf = malloc(4 * 0x110000);
    a->cp_at = malloc(4 * 0x110000 * sizeof(uint32_t));
    if (!a->buf || !a->cp_at) return 0;
    OnigEncoding use[1] = {ONIG_ENCODING_UTF8};
    onig_initialize(use, 1);
    a->len = 0;
    for (uint32_t cp = 0; cp < 0x110000; cp++) {
        if (cp >= 0xD800 && cp <= 0xDFFF) continue;
        size_t n = mg_utf8_encode(cp, a->buf + a->len);
        for (size_t k = 0; k < n; k++) a->cp_at[a->len + k] = k ? MG_UC_BAD : cp;
        a->len += n;
    }
    return 1;
}

static void all_cps_free(all_cps *a)
{
    free(a->buf);
    free(a->cp_at);
}

/* Marks in member[] every code point the pattern (one character) matches; returns how
 * many (0 also when the pattern does not compile). */
static size_t onig_members(const all_cps *a, const char *pattern, uint8_t *member)
{
    regex_t *re;
    OnigErrorInfo ei;
    const UChar *p = (const UChar *)pattern;
    if (onig_new(&re, p, p + strlen(pattern), ONIG_OPTION_NONE, ONIG_ENCODING_UTF8,
                 ONIG_SYNTAX_DEFAULT, &ei) != ONIG_NORMAL)
        return 0;
    OnigRegion *r = onig_region_new();
    memset(member, 0, 0x110000);
    size_t pos = 0, count = 0;
    while (pos < a->len) {
        int at = onig_search(re, a->buf, a->buf + a->len, a->buf + pos, a->buf + a->len, r,
                             ONIG_OPTION_NONE);
        if (at < 0) break;
        member[a->cp_at[at]] = 1;
        count++;
        pos = (size_t)r->end[0];
    }
    onig_region_free(r, 1);
    onig_free(re);
    return count;
}

typedef struct {
    const char *pattern;
    int (*ours)(uint8_t props);
} class_probe;

static int is_cat(uint8_t props, unsigned cat) { return (props & MG_UC_CAT_MASK) == cat; }
static int c_lu(uint8_t p) { return is_cat(p, MG_UC_LU); }
static int c_ll(uint8_t p) { return is_cat(p, MG_UC_LL); }
static int c_lt(uint8_t p) { return is_cat(p, MG_UC_LT); }
static int c_lm(uint8_t p) { return is_cat(p, MG_UC_LM); }
static int c_lo(uint8_t p) { return is_cat(p, MG_UC_LO); }
static int c_mn(uint8_t p) { return is_cat(p, MG_UC_MN); }
static int c_mc(uint8_t p) { return is_cat(p, MG_UC_MC); }
static int c_me(uint8_t p) { return is_cat(p, MG_UC_ME); }
static int c_nd(uint8_t p) { return is_cat(p, MG_UC_ND); }
static int c_nl(uint8_t p) { return is_cat(p, MG_UC_NL); }
static int c_no(uint8_t p) { return is_cat(p, MG_UC_NO); }
static int c_p(uint8_t p) { return is_cat(p, MG_UC_P); }
static int c_s(uint8_t p) { return is_cat(p, MG_UC_S); }
static int c_z(uint8_t p) { return is_cat(p, MG_UC_Z); }
static int c_ws(uint8_t p) { return (p & MG_UC_WS) != 0; }
static int c_han(uint8_t p) { return (p & MG_UC_HAN) != 0; }
static int c_l(uint8_t p) { return MG_UC_IS_L(p & MG_UC_CAT_MASK); }
static int c_m(uint8_t p) { return MG_UC_IS_M(p & MG_UC_CAT_MASK); }
static int c_n(uint8_t p) { return MG_UC_IS_N(p & MG_UC_CAT_MASK); }

static void classes_body(mg_test_ctx *t)
{
    static const class_probe probes[] = {
        {"\\p{Lu}", c_lu}, {"\\p{Ll}", c_ll}, {"\\p{Lt}", c_lt}, {"\\p{Lm}", c_lm},
        {"\\p{Lo}", c_lo}, {"\\p{Mn}", c_mn}, {"\\p{Mc}", c_mc}, {"\\p{Me}", c_me},
        {"\\p{Nd}", c_nd}, {"\\p{Nl}", c_nl}, {"\\p{No}", c_no}, {"\\p{P}", c_p},
        {"\\p{S}", c_s},   {"\\p{Z}", c_z},   {"\\s", c_ws},     {"\\p{Han}", c_han},
        {"\\p{L}", c_l},   {"\\p{M}", c_m},   {"\\p{N}", c_n},
    };
    all_cps a;
    uint8_t *member = malloc(0x110000);
    if (!member || !all_cps_build(&a)) {
        mg_test_fail(t, __FILE__, __LINE__, "out of memory");
        free(member);
        return;
    }
    for (size_t k = 0; k < sizeof probes / sizeof probes[0]; k++) {
        if (!onig_members(&a, probes[k].pattern, member)) {
            mg_test_fail(t, __FILE__, __LINE__, "%s: no member", probes[k].pattern);
            continue;
        }
        size_t bad = 0, first = 0;
        for (uint32_t cp = 0; cp < 0x110000; cp++) {
            if (cp >= 0xD800 && cp <= 0xDFFF) continue;
            uint8_t props = mg_uc_props(cp);
            int want = probes[k].ours(props);
            /* newer code points are unassigned in Oniguruma 6.9.8 (Unicode 14.0), except
             * U+1171E whose category changed (Mn -> Mc) in 16.0 */
            if (MG_UC_AGE(props) != 0) want = cp == 0x1171E ? member[cp] : 0;
            if (member[cp] != want && bad++ == 0) first = cp;
        }
        if (bad)
            mg_test_fail(t, __FILE__, __LINE__, "%s: %zu code points differ, first U+%04zX",
                         probes[k].pattern, bad, first);
    }
    free(member);
    all_cps_free(&a);
}

static void folding_body(mg_test_ctx *t)
{
    all_cps a;
    uint8_t *member = malloc(0x110000);
    if (!member || !all_cps_build(&a)) {
        mg_test_fail(t, __FILE__, __LINE__, "out of memory");
        free(member);
        return;
    }
    for (char c = 'a'; c <= 'z'; c++) {
        char pat[16];
        snprintf(pat, sizeof pat, "(?i:%c)", c);
        if (onig_members(&a, pat, member) < 2) {
            mg_test_fail(t, __FILE__, __LINE__, "%s: too few members", pat);
            continue;
        }
        size_t bad = 0;
        for (uint32_t cp = 0; cp < 0x110000; cp++)
            if (!(cp >= 0xD800 && cp <= 0xDFFF))
                bad += member[cp] != (mg_uc_fold_ascii_letter(cp) == c);
        if (bad) mg_test_fail(t, __FILE__, __LINE__, "(?i:%c): %zu code points differ", c, bad);
    }
    free(member);
    all_cps_free(&a);
}

#endif /* MG_HAVE_ONIG */

/* Without Oniguruma there is no oracle: these check the table's totals instead. */
MG_TEST(unicode_classes_match_oniguruma_for_every_code_point)
{
#if MG_HAVE_ONIG
    classes_body(t);
#else
    check_counts(t);
#endif
}

MG_TEST(unicode_simple_folding_matches_oniguruma)
{
#if MG_HAVE_ONIG
    folding_body(t);
#else
    MG_CHECK_EQ_INT(t, mg_uc_fold_ascii_letter(0x017F), 's');
#endif
}

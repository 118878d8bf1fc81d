/* pretok_internal.h — private interface between pretok.c, the hand-written scanners
 * (pretok_gpt2.c, pretok_cl100k.c, pretok_o200k.c, pretok_deepseek.c) and the Oniguruma
 * engine (pretok_onig.c). Never included by the tools.
 *
 * A scanner finds the leftmost match of its family's regex in s[0, n) that starts at or
 * after pos, exactly as the regex engine would (leftmost-first alternation, greedy,
 * backtracking), treating n as the end of text. Scanner matches are never empty. The
 * text is UTF-8; malformed bytes are single characters of class "other" (never read past n).
 */
#ifndef MG_PRETOK_INTERNAL_H
#define MG_PRETOK_INTERNAL_H

#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "mg/error.h"
#include "mg/pretok.h"
#include "mg/unicode.h"

/* Parameters shared by the families of one scanner file. */
typedef struct {
    int contractions; /* 0: none; 1: 's|'t|... case-sensitive; 2: (?i:...) simple folding */
    int digits_max;   /* \p{N} run length per piece: 1, 3, or 0 = unbounded */
    int ws_end;       /* 1: tiktoken's \s++$ (a whitespace run reaching the end is one piece) */
} mg_scan_cfg;

/* Returns 1 and sets [*ms, *me) for the next match at or after pos (< n); 0 if none. */
typedef int (*mg_scan_fn)(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t pos,
                          size_t *ms, size_t *me);

int mg_scan_gpt2(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t pos, size_t *ms,
                 size_t *me);
int mg_scan_cl100k(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t pos, size_t *ms,
                   size_t *me);
int mg_scan_o200k(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t pos, size_t *ms,
                  size_t *me);
int mg_scan_deepseek1(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t pos,
                      size_t *ms, size_t *me);
int mg_scan_deepseek2(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t pos,
                      size_t *ms, size_t *me);
int mg_scan_deepseek3(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t pos,
                      size_t *ms, size_t *me);

/* The GPT-2 scanner's kind of an ASCII byte ('W', 'L', 'N', 'O'; 0 for b >= 0x80), for the
 * test that checks its table against the Unicode table. */
int mg_pk_gpt2_ascii_kind(uint8_t b);
/* That table (pretok_gpt2.c), for the ASCII fast paths of the other scanners. */
enum { MG_PK_WS = 'W', MG_PK_L = 'L', MG_PK_N = 'N', MG_PK_O = 'O' };
extern const char mg_pk_ascii_kind[129];

/* Total scanners (every character belongs to some match, so matches tile the text) also
 * have a loop that appends all pieces of s[0, n) at offset base to out. */
typedef mg_status (*mg_split_all_fn)(const mg_scan_cfg *cfg, const uint8_t *s, size_t n,
                                     size_t base, mg_spans *out);
mg_status mg_split_gpt2(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t base,
                        mg_spans *out);
mg_status mg_split_cl100k(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t base,
                          mg_spans *out);
mg_status mg_split_o200k(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t base,
                         mg_spans *out);
/* The reference loops: the scanner's piece function at every position, no window
 * (tests/unit/test_pretok_fast.c and tests/fuzz/fuzz_pretok_fast.c compare them with the
 * loops above, which decide the ASCII pieces from pretok_ascii.h's window). */
mg_status mg_split_gpt2_ref(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t base,
                            mg_spans *out);
mg_status mg_split_cl100k_ref(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t base,
                              mg_spans *out);
mg_status mg_split_o200k_ref(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t base,
                             mg_spans *out);

/* Grows out (pretok.c); the inline push below calls it when full. */
mg_status mg_pk_spans_grow(mg_spans *out);

static inline mg_status mg_pk_push(mg_spans *out, size_t off, size_t len)
{
    if (out->n == out->cap && mg_pk_spans_grow(out) != MG_OK) return MG_ERR_NOMEM;
    out->v[out->n].off = (uint32_t)off;
    out->v[out->n].len = (uint32_t)len;
    out->n++;
    return MG_OK;
}

/* Defines NAME as the split-all loop over PIECE(cfg, s, n, i) -> end of the piece at i. */
#define MG_PK_DEFINE_SPLIT_ALL(NAME, PIECE)                                                 \
    mg_status NAME(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t base,        \
                   mg_spans *out)                                                          \
    {                                                                                      \
        for (size_t i = 0; i < n;) {                                                       \
            size_t e = PIECE(cfg, s, n, i);                                                \
            MG_ASSERT(e > i && e <= n);                                                    \
            if (mg_pk_push(out, base + i, e - i) != MG_OK) return MG_ERR_NOMEM;            \
            i = e;                                                                         \
        }                                                                                  \
        return MG_OK;                                                                      \
    }

/* ---- character helpers shared by the scanners ---- */

/* Category bit masks over (1 << (props & MG_UC_CAT_MASK)). */
#define PK_BIT(cat) (1u << (cat))
#define PK_L                                                                               \
    (PK_BIT(MG_UC_LU) | PK_BIT(MG_UC_LL) | PK_BIT(MG_UC_LT) | PK_BIT(MG_UC_LM) | PK_BIT(MG_UC_LO))
#define PK_M (PK_BIT(MG_UC_MN) | PK_BIT(MG_UC_MC) | PK_BIT(MG_UC_ME))
#define PK_N (PK_BIT(MG_UC_ND) | PK_BIT(MG_UC_NL) | PK_BIT(MG_UC_NO))
#define PK_PS (PK_BIT(MG_UC_P) | PK_BIT(MG_UC_S))

/* End of the run of ASCII letters from i ([A-Za-z], or only [a-z] when lower_only): eight
 * bytes at a time while they are there (SWAR: a byte is a letter iff it is below 0x80 and
 * (b | 0x20) - 'a' < 26; no carry crosses a byte before the first non-letter, so the
 * lowest non-letter byte found is exact), then byte by byte. */
static inline size_t mg_pk_ascii_letters(const uint8_t *s, size_t n, size_t i, int lower_only)
{
    const uint64_t hi = 0x8080808080808080ULL, ones = 0x0101010101010101ULL;
    const uint64_t fold = lower_only ? 0 : 0x20 * ones;
    while (i + 8 <= n) {
        uint64_t x;
        memcpy(&x, s + i, 8);
        uint64_t t = x | fold;
        uint64_t letter = (t + 0x1F * ones) & ~(t + 0x05 * ones) & ~x & hi;
        uint64_t stop = ~letter & hi;
        if (stop) return i + ((size_t)__builtin_ctzll(stop) >> 3);
        i += 8;
    }
    while (i < n && (unsigned)((s[i] | (uint8_t)fold) - 'a') < 26) i++;
    return i;
}

/* Property byte and byte length of the character at s[i] (i < n). */
static inline uint8_t pk_props(const uint8_t *s, size_t n, size_t i, size_t *len)
{
    if (s[i] < 0x80) {
        *len = 1;
        return mg_uc_stage2[s[i]];
    }
    uint32_t cp;
    *len = mg_utf8_decode(s + i, n - i, &cp);
    return cp == MG_UC_BAD ? 0 : mg_uc_props(cp);
}

/* Category mask bit of a property byte. */
static inline unsigned pk_cat(uint8_t props) { return PK_BIT(props & MG_UC_CAT_MASK); }

/* Byte length of the character at s[i]. */
static inline size_t pk_len(const uint8_t *s, size_t n, size_t i)
{
    uint32_t cp;
    return s[i] < 0x80 ? 1 : mg_utf8_decode(s + i, n - i, &cp);
}

/* Length of a contraction ('s 't 're 've 'm 'll 'd) at s[i] == '\'', or 0.
 * fold != 0: (?i:...) with Unicode simple case folding (so 'ſ and 'S match). */
size_t mg_pk_contraction(const uint8_t *s, size_t n, size_t i, int fold);

/* End of the \s+(?!\S)|\s+ match for a whitespace run [i, j): the whole run at the end of
 * text, else the run minus its last character (last = start of that character) when the
 * run has two characters or more, else the single character. */
static inline size_t pk_ws_tail(size_t i, size_t j, size_t last, size_t n)
{
    if (j == n) return j;
    return last > i ? last : j;
}

/* Scans the whitespace run starting at i; returns its end and sets *last (start of its last
 * character) and *crlf (one past the last \r or \n in it, or 0 if none). */
size_t mg_pk_ws_run(const uint8_t *s, size_t n, size_t i, size_t *last, size_t *crlf);

/* ---- Oniguruma engine (pretok_onig.c) ---- */

typedef struct mg_onig mg_onig; /* compiled regex; shared, read-only */

/* Compiles `pattern` (len bytes) in the given dialect: MG_REGEX_HF = Oniguruma's default
 * syntax, as the onig crate; MG_REGEX_TIKTOKEN = Perl syntax with unescaped `$` outside
 * classes turned into `\z` (fancy-regex: `$` is end of text, `{n,m}+` possessive). */
mg_status mg_onig_compile(const char *pattern, size_t len, mg_regex_dialect d, mg_onig **out);
void mg_onig_free(mg_onig *re);
/* Per-thread search state (an OnigRegion); created on first use. */
void mg_onig_region_free(void *region);
/* Leftmost match in s[0, n) starting at or after pos: 1 found, 0 none, < 0 error. */
int mg_onig_search(const mg_onig *re, void **region, const uint8_t *s, size_t n, size_t pos,
                   size_t *ms, size_t *me);

#endif /* MG_PRETOK_INTERNAL_H */

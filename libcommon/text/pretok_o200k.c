/* pretok_o200k.c — the o200k scanner (O200K, HF and tiktoken texts are identical) and
 * Megatron TikTokenizer v2 (no contraction suffix, single digits):
 *     [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+C?|
 *     [^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*C?|
 *     \p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n/]*|\s*[\r\n]+|\s+(?!\S)|\s+
 * with C = (?i:'s|'t|'re|'ve|'m|'ll|'d). Write U = Lu|Lt|Lm|Lo|M ("upper") and
 * W = Ll|Lm|Lo|M ("lower"); the two overlap in Lm, Lo and M, which is why the backtracking
 * of U* against W+ is emulated exactly below. Every character is matched by some
 * alternative, so a match always starts at pos.
 * mg_split_o200k decides the ASCII pieces from a window of byte classes (o200k_fast,
 * pretok_ascii.h) and leaves every other piece to o200k_piece, the reference, which
 * mg_split_o200k_ref applies to every piece.
 */
#include "pretok_ascii.h"
#include "pretok_internal.h"

#define SET_U (PK_BIT(MG_UC_LU) | PK_BIT(MG_UC_LT) | PK_BIT(MG_UC_LM) | PK_BIT(MG_UC_LO) | PK_M)
#define SET_W (PK_BIT(MG_UC_LL) | PK_BIT(MG_UC_LM) | PK_BIT(MG_UC_LO) | PK_M)

static inline int is_crlf(uint8_t b) { return b == '\r' || b == '\n'; }

/* Category mask of the character at i, 0 past the end. */
static inline unsigned cat_at(const uint8_t *s, size_t n, size_t i, size_t *len)
{
    if (i >= n) {
        *len = 0;
        return 0;
    }
    return pk_cat(pk_props(s, n, i, len));
}

/* End of the run of characters whose category is in set, from i. */
static size_t run_set(const uint8_t *s, size_t n, size_t i, unsigned set)
{
    size_t len;
    while (i < n && (cat_at(s, n, i, &len) & set)) i += len;
    return i;
}

/* U*W+ at i: 0 if it cannot match. U* is greedy; when the character after the U-run is
 * not in W, U* gives back characters until the last one of the run that is in W. */
static size_t upper_lower(const uint8_t *s, size_t n, size_t i)
{
    size_t len, last_w = 0, last_w_end = 0;
    while (i < n) {
        unsigned c = cat_at(s, n, i, &len);
        if (!(c & SET_U)) break;
        if (c & SET_W) last_w = 1, last_w_end = i + len;
        i += len;
    }
    if (cat_at(s, n, i, &len) & SET_W) return run_set(s, n, i + len, SET_W);
    return last_w ? last_w_end : 0;
}

/* U+W* at i: 0 if it cannot match. */
static size_t upper_then_lower(const uint8_t *s, size_t n, size_t i)
{
    size_t len;
    if (!(cat_at(s, n, i, &len) & SET_U)) return 0;
    return run_set(s, n, run_set(s, n, i + len, SET_U), SET_W);
}

static inline int is_upper(uint8_t b) { return (unsigned)(b - 'A') < 26; }
static inline int is_lower(uint8_t b) { return (unsigned)(b - 'a') < 26; }

/* ASCII fast path of word(): an optional ASCII prefix, then ASCII letters up to an ASCII
 * non-letter or the end. Returns 0 when it does not apply (the general path decides). */
static size_t word_ascii(const uint8_t *s, size_t n, size_t i)
{
    size_t j = i, k, e;
    if (!is_upper(s[j]) && !is_lower(s[j])) {
        if (s[j] >= 0x80 || (unsigned)(s[j] - '0') < 10 || is_crlf(s[j]) || j + 1 >= n ||
            (!is_upper(s[j + 1]) && !is_lower(s[j + 1])))
            return 0;
        j++;
    }
    for (k = j; k < n && is_upper(s[k]); k++) {
    }
    if (k < n && is_lower(s[k])) /* U*W+ */
        e = mg_pk_ascii_letters(s, n, k + 1, 1);
    else
        e = k; /* no W in the run: U+W* with an empty W* */
    return e < n && s[e] >= 0x80 ? 0 : e;
}

/* The two letter alternatives with the optional prefix; 0 if neither matches. */
static size_t word(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t i)
{
    size_t len, e = word_ascii(s, n, i);
    if (e) {
        if (cfg->contractions && e < n && s[e] == '\'') e += mg_pk_contraction(s, n, e, 1);
        return e;
    }
    /* an ASCII non-letter followed by one (or the end): the letters cannot start at i or at
     * i + 1 (the prefix is one character), so neither alternative matches */
    if (s[i] < 0x80 && !is_upper(s[i]) && !is_lower(s[i]) &&
        (i + 1 >= n || (s[i + 1] < 0x80 && !is_upper(s[i + 1]) && !is_lower(s[i + 1]))))
        return 0;
    unsigned c = cat_at(s, n, i, &len);
    int prefix = !(c & (PK_L | PK_N)) && !is_crlf(s[i]);
    if (prefix) e = upper_lower(s, n, i + len);
    if (!e) e = upper_lower(s, n, i);
    if (!e && prefix) e = upper_then_lower(s, n, i + len);
    if (!e) e = upper_then_lower(s, n, i);
    if (e && cfg->contractions && e < n && s[e] == '\'') e += mg_pk_contraction(s, n, e, 1);
    return e;
}

/* [^\s\p{L}\p{N}]+[\r\n/]* from i (s[i] is such a character). */
static size_t other_run(const uint8_t *s, size_t n, size_t i)
{
    while (i < n) {
        size_t len;
        uint8_t props = pk_props(s, n, i, &len);
        if ((props & MG_UC_WS) || (pk_cat(props) & (PK_L | PK_N))) break;
        i += len;
    }
    while (i < n && (is_crlf(s[i]) || s[i] == '/')) i++;
    return i;
}

/* ASCII fast path after word() found no letter alternative, for a character and its
 * successor both ASCII (else 0): another non-space non-digit starts
 * [^\s\p{L}\p{N}]+[\r\n/]*, and so does a space before one. */
static inline size_t other_ascii(const uint8_t *s, size_t n, size_t i)
{
    uint8_t b = s[i];
    if (b >= 0x80 || i + 1 >= n || s[i + 1] >= 0x80) return 0;
    char k = mg_pk_ascii_kind[b], k2 = mg_pk_ascii_kind[s[i + 1]];
    if (k == MG_PK_O) return other_run(s, n, i + 1);
    if (b == ' ' && k2 == MG_PK_O) return other_run(s, n, i + 2);
    return 0;
}

static inline size_t o200k_piece(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t i)
{
    size_t len, len2, e = word(cfg, s, n, i);
    if (e) return e;
    if ((e = other_ascii(s, n, i)) != 0) return e;
    uint8_t props = pk_props(s, n, i, &len);
    if (pk_cat(props) & PK_N) {
        for (int k = 0; i < n && (cfg->digits_max == 0 || k < cfg->digits_max); k++) {
            if (!(cat_at(s, n, i, &len2) & PK_N)) break;
            i += len2;
        }
        return i;
    }
    if (!(props & MG_UC_WS)) return other_run(s, n, i);
    if (s[i] == ' ' && i + 1 < n) {
        uint8_t next = pk_props(s, n, i + 1, &len2);
        if (!(next & MG_UC_WS) && !(pk_cat(next) & (PK_L | PK_N))) return other_run(s, n, i + 1);
    }
    size_t last, crlf, j = mg_pk_ws_run(s, n, i, &last, &crlf);
    if (crlf) return crlf;
    return pk_ws_tail(i, j, last, n);
}

int mg_scan_o200k(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t pos, size_t *ms,
                  size_t *me)
{
    *ms = pos;
    *me = o200k_piece(cfg, s, n, pos);
    return 1;
}

MG_PK_DEFINE_SPLIT_ALL(mg_split_o200k_ref, o200k_piece)

/* ---- the window's fast path: o200k_piece's ASCII decisions with the runs from masks ---- */

#define FAST static inline __attribute__((always_inline))

/* word_ascii from j, the first letter (after the prefix, if any): [A-Z]*[a-z]+ or [A-Z]+,
 * then the contraction suffix; 0 when a byte >= 0x80 ends the letters. */
FAST size_t fast_word(const mg_scan_cfg *cfg, mg_pk_win *w, const uint8_t *s, size_t n,
                      size_t j)
{
    size_t k = mg_pk_win_run(w, s, n, MG_PK_C_UPPER, j);
    size_t e = k < n && is_lower(s[k]) ? mg_pk_win_run(w, s, n, MG_PK_C_LOWER, k + 1) : k;
    if (e < n && s[e] >= 0x80) return 0;
    if (cfg->contractions && e < n && s[e] == '\'') e += mg_pk_contraction(s, n, e, 1);
    return e;
}

/* [^\s\p{L}\p{N}]+[\r\n/]* from p (other_run) over the window. */
FAST size_t fast_other(mg_pk_win *w, const uint8_t *s, size_t n, size_t p)
{
    size_t e = mg_pk_win_ascii_run(w, s, n, MG_PK_C_OTHER, p);
    while (e && e < n && (is_crlf(s[e]) || s[e] == '/')) e++;
    return e;
}

/* o200k_piece for an ASCII s[i] (and s[i + 1], if any), in its order, or 0 (pretok_ascii.h):
 * a letter, or a prefix [^\r\n\p{L}\p{N}] before one, starts word(); two ASCII non-letters
 * rule both letter alternatives out, and other_ascii, the digits and the whitespace
 * alternatives follow. */
FAST size_t o200k_fast(const mg_scan_cfg *cfg, mg_pk_win *w, const uint8_t *s, size_t n,
                       size_t i)
{
    uint8_t b = s[i];
    if (b >= 0x80 || i + 1 >= n || s[i + 1] >= 0x80) return 0;
    if (mg_pk_win_is(w, MG_PK_C_LETTER, i)) return fast_word(cfg, w, s, n, i);
    int digit = mg_pk_win_is(w, MG_PK_C_DIGIT, i);
    if (mg_pk_win_is(w, MG_PK_C_LETTER, i + 1))
        return digit || is_crlf(b) ? 0 : fast_word(cfg, w, s, n, i + 1);
    if (mg_pk_win_is(w, MG_PK_C_OTHER, i)) return fast_other(w, s, n, i + 1);
    if (b == ' ' && mg_pk_win_is(w, MG_PK_C_OTHER, i + 1)) return fast_other(w, s, n, i + 2);
    if (digit) return mg_pk_win_digits(cfg, w, s, n, i);
    return mg_pk_win_ws(cfg, w, s, n, i);
}

/* The window's piece starts (pretok_ascii.h's bulk step): mg_pk_bulk_crlf_family with
 * its upper-case rule, the window stopping also at a slash right after a CR/LF (the
 * [\r\n/]* after an "other" run would take it). */
FAST unsigned o200k_bulk(const mg_scan_cfg *cfg, const mg_pk_win *w, const uint8_t *s,
                         uint64_t *starts, unsigned *stop)
{
    uint64_t slash_after_crlf = w->m[MG_PK_C_SLASH] & w->m[MG_PK_C_CRLF] << 1;
    return mg_pk_bulk_crlf_family(cfg, w, s, slash_after_crlf, 1, starts, stop);
}

MG_PK_DEFINE_SPLIT_BULK(mg_split_o200k, o200k_bulk, o200k_fast, o200k_piece)

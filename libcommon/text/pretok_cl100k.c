/* pretok_cl100k.c — the cl100k scanner, parameterised (mg_scan_cfg) for the family of
 * regexes built like cl100k_base:
 *   CL100K_HF (original cl100k = Llama-3; also tiktoken 0.6's form):
 *     (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}|
 *     ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+
 *   CL100K_TIKTOKEN (tiktoken >= 0.8): the same pieces except \s++$ (ws_end = 1)
 *   CL100K_TIKTOKEN_ONIG: that text under Oniguruma, digit runs unbounded
 *   QWEN2: \p{N} single digits;  MEGATRON_V1: no contractions, single digits.
 * Every character is matched by some alternative, so a match always starts at pos.
 * mg_split_cl100k decides the ASCII pieces from a window of byte classes (cl100k_fast,
 * pretok_ascii.h) and leaves every other piece to cl100k_piece, the reference, which
 * mg_split_cl100k_ref applies to every piece.
 */
#include "pretok_ascii.h"
#include "pretok_internal.h"

static inline int is_crlf(uint8_t b) { return b == '\r' || b == '\n'; }

/* End of the \p{L} run starting at i. */
static size_t run_letters(const uint8_t *s, size_t n, size_t i)
{
    for (;;) {
        i = mg_pk_ascii_letters(s, n, i, 0);
        if (i >= n || s[i] < 0x80) return i;
        size_t len;
        if (!(pk_cat(pk_props(s, n, i, &len)) & PK_L)) return i;
        i += len;
    }
}

/* End of at most max (0 = any number of) \p{N} characters from i (s[i] is one). */
static size_t run_digits(const uint8_t *s, size_t n, size_t i, int max)
{
    for (int k = 0; i < n && (max == 0 || k < max); k++) {
        size_t len;
        if (s[i] < 0x80) { /* ASCII: the table, no decoding */
            if (mg_pk_ascii_kind[s[i]] != MG_PK_N) break;
            i++;
            continue;
        }
        if (!(pk_cat(pk_props(s, n, i, &len)) & PK_N)) break;
        i += len;
    }
    return i;
}

/* [^\s\p{L}\p{N}]+ from i, then [\r\n]*. */
static size_t run_other_crlf(const uint8_t *s, size_t n, size_t i)
{
    while (i < n) {
        size_t len;
        uint8_t props = pk_props(s, n, i, &len);
        if ((props & MG_UC_WS) || (pk_cat(props) & (PK_L | PK_N))) break;
        i += len;
    }
    while (i < n && is_crlf(s[i])) i++;
    return i;
}

/* Whitespace alternatives at i (s[i] is White_Space). */
static size_t ws_piece(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t i)
{
    size_t last, crlf, j = mg_pk_ws_run(s, n, i, &last, &crlf);
    if (cfg->ws_end && j == n) return n; /* \s++$ */
    if (crlf) return crlf;               /* \s*[\r\n]+ ends at the run's last CR/LF */
    return pk_ws_tail(i, j, last, n);
}

/* ASCII fast path, for a character and its successor both ASCII (else 0: the general path
 * decides; so does an apostrophe, which may start a contraction):
 *   a letter, or a character of [^\r\n\p{L}\p{N}] before a letter: [^\r\n\p{L}\p{N}]?\p{L}+
 *   another non-space non-letter non-digit (no letter after it): [^\s\p{L}\p{N}]+[\r\n]*
 *   a space before such a character: the same with the space;
 *   a digit (before an ASCII character): \p{N}{1,max};
 *   whitespace (before an ASCII character that is no letter): the whitespace alternatives. */
static inline size_t piece_ascii(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t i)
{
    uint8_t b = s[i];
    if (b >= 0x80 || b == '\'') return 0;
    char k = mg_pk_ascii_kind[b];
    if (k == MG_PK_L) return run_letters(s, n, i + 1);
    if (i + 1 >= n || s[i + 1] >= 0x80) return 0;
    char k2 = mg_pk_ascii_kind[s[i + 1]];
    if (k2 == MG_PK_L && k != MG_PK_N && b != '\r' && b != '\n') return run_letters(s, n, i + 2);
    if (k == MG_PK_O) return run_other_crlf(s, n, i + 1);
    if (b == ' ' && k2 == MG_PK_O) return run_other_crlf(s, n, i + 2);
    if (k == MG_PK_N) return run_digits(s, n, i, cfg->digits_max);
    if (k == MG_PK_WS) return ws_piece(cfg, s, n, i);
    return 0;
}

static inline size_t cl100k_piece(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t i)
{
    size_t len, len2 = 0, k = piece_ascii(cfg, s, n, i);
    if (k) return k;
    if (s[i] == '\'' && cfg->contractions && (k = mg_pk_contraction(s, n, i, 1)) != 0)
        return i + k;
    uint8_t props = pk_props(s, n, i, &len);
    unsigned cat = pk_cat(props);
    if (cat & PK_L) return run_letters(s, n, i + len);
    int has_next = i + len < n;
    uint8_t next = has_next ? pk_props(s, n, i + len, &len2) : 0;
    if (!(cat & PK_N) && !is_crlf(s[i]) && has_next && (pk_cat(next) & PK_L))
        return run_letters(s, n, i + len + len2);
    if (cat & PK_N) return run_digits(s, n, i, cfg->digits_max);
    int other = !(props & MG_UC_WS);
    if (other) return run_other_crlf(s, n, i + len);
    if (s[i] == ' ' && has_next && !(next & MG_UC_WS) && !(pk_cat(next) & (PK_L | PK_N)))
        return run_other_crlf(s, n, i + 1 + len2);
    return ws_piece(cfg, s, n, i);
}

int mg_scan_cl100k(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t pos, size_t *ms,
                   size_t *me)
{
    *ms = pos;
    *me = cl100k_piece(cfg, s, n, pos);
    return 1;
}

MG_PK_DEFINE_SPLIT_ALL(mg_split_cl100k_ref, cl100k_piece)

/* ---- the window's fast path: piece_ascii's decisions with the runs read from masks ---- */

#define FAST static inline __attribute__((always_inline))

/* [^\s\p{L}\p{N}]+ from p, then [\r\n]* (run_other_crlf). */
FAST size_t fast_other_crlf(mg_pk_win *w, const uint8_t *s, size_t n, size_t p)
{
    size_t e = mg_pk_win_ascii_run(w, s, n, MG_PK_C_OTHER, p);
    while (e && e < n && is_crlf(s[e])) e++; /* ASCII: no other character continues it */
    return e;
}

/* piece_ascii over the window, or 0 (pretok_ascii.h). Its two letter cases come first (a
 * letter bit implies an ASCII byte that is no apostrophe); the rest in piece_ascii's order. */
FAST size_t cl100k_fast(const mg_scan_cfg *cfg, mg_pk_win *w, const uint8_t *s, size_t n,
                        size_t i)
{
    size_t off = i - w->base;
    uint64_t letters = w->m[MG_PK_C_LETTER] >> off;
    if (letters & 1) return mg_pk_win_ascii_run_at(w, s, n, MG_PK_C_LETTER, i + 1, letters >> 1);
    uint8_t b = s[i];
    /* [^\r\n\p{L}\p{N}] before a letter (the letter bit says s[i + 1] exists) */
    uint64_t before = (w->m[MG_PK_C_OTHER] | w->m[MG_PK_C_WS]) & ~w->m[MG_PK_C_CRLF];
    if ((letters & 2) && (before >> off & 1) && b != '\'')
        return mg_pk_win_ascii_run_at(w, s, n, MG_PK_C_LETTER, i + 2, letters >> 2);
    if (b >= 0x80 || b == '\'' || i + 1 >= n || s[i + 1] >= 0x80) return 0;
    if (mg_pk_win_is(w, MG_PK_C_OTHER, i)) return fast_other_crlf(w, s, n, i + 1);
    if (b == ' ' && mg_pk_win_is(w, MG_PK_C_OTHER, i + 1)) return fast_other_crlf(w, s, n, i + 2);
    if (mg_pk_win_is(w, MG_PK_C_DIGIT, i)) return mg_pk_win_digits(cfg, w, s, n, i);
    return mg_pk_win_ws(cfg, w, s, n, i);
}

/* The window's piece starts (pretok_ascii.h's bulk step): mg_pk_bulk_crlf_family. */
FAST unsigned cl100k_bulk(const mg_scan_cfg *cfg, const mg_pk_win *w, const uint8_t *s,
                          uint64_t *starts, unsigned *stop)
{
    return mg_pk_bulk_crlf_family(cfg, w, s, 0, 0, starts, stop);
}

MG_PK_DEFINE_SPLIT_BULK(mg_split_cl100k, cl100k_bulk, cl100k_fast, cl100k_piece)

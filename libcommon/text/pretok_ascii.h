/* pretok_ascii.h — the fast split loops' view of the text: the classes of up to 64 bytes at
 * once (a window), as bit masks, so that a scanner's ASCII piece ends with one shift and a
 * count of trailing zeros instead of a byte loop. Private to the scanners (pretok_*.c).
 *
 * Classes of a byte (those of mg_pk_ascii_kind, checked against it for all 256 bytes by
 * tests/unit/test_pretok_fast.c): letter [A-Za-z] (also upper [A-Z] and lower [a-z]), digit
 * [0-9], ws (\t \n \v \f \r and space), crlf (\r \n, also in ws), other (every other
 * byte below 0x80). A byte >= 0x80 is in
 * none: a run that stops on one is not decided by the window (the next character may
 * continue it), and the fast piece gives up there.
 *
 * A fast piece function decides a piece from the classes of its first two bytes and finds
 * its end in the masks (moving the window on when a run goes past it); it returns 0 for
 * anything else (an apostrophe, a byte >= 0x80, a run that stops on one), and the loop then
 * runs the scanner's reference piece function, exact by definition, for that piece.
 */
#ifndef MG_PRETOK_ASCII_H
#define MG_PRETOK_ASCII_H

#include <stddef.h>
#include <stdint.h>

#include "pretok_internal.h"

/* The byte classes, indexes of mg_pk_win.m. */
enum {
    MG_PK_C_LETTER, /* [A-Za-z] */
    MG_PK_C_UPPER,  /* [A-Z] */
    MG_PK_C_LOWER,  /* [a-z] */
    MG_PK_C_DIGIT,
    MG_PK_C_WS,
    MG_PK_C_CRLF,
    MG_PK_C_OTHER,
    MG_PK_C_N_
};

typedef struct {
    size_t base, len; /* the window is s[base, base + len), len = min(64, n - base) */
    int at_end;       /* base + len == n */
    size_t rlim;      /* a piece at i, i - base < rlim (unsigned), has s[i] and s[i + 1]
                       * (if any) in the window */
    uint64_t m[MG_PK_C_N_]; /* bit k of m[c]: s[base + k] is of class c */
} mg_pk_win;

/* Classifies s[base, min(base + 64, n)) into w: SSE2 on x86-64 (16 bytes a step), else
 * mg_pk_win_fill_scalar. Reads no byte at or past n. */
void mg_pk_win_fill(mg_pk_win *w, const uint8_t *s, size_t n, size_t base);
/* The portable byte-by-byte classifier (the other targets' path; the tests compare both). */
void mg_pk_win_fill_scalar(mg_pk_win *w, const uint8_t *s, size_t n, size_t base);

/* End of the run of class c from p (w->base <= p <= w->base + w->len): past the window's
 * end the window moves on, 64 bytes at a time, so the run may be of any length. */
static inline size_t mg_pk_win_run(mg_pk_win *w, const uint8_t *s, size_t n, int c, size_t p)
{
    for (;;) {
        size_t off = p - w->base;
        if (off < w->len) {
            uint64_t x = ~w->m[c] >> off; /* bits past len are 0: a short window ends at n */
            if (x) return p + (size_t)__builtin_ctzll(x);
        }
        if (w->at_end) return n;
        mg_pk_win_fill(w, s, n, w->base + w->len);
        p = w->base;
    }
}

/* mg_pk_win_run, and 0 when the run stops on a byte >= 0x80 (a non-ASCII character might
 * continue it: the reference decides). */
static inline size_t mg_pk_win_ascii_run(mg_pk_win *w, const uint8_t *s, size_t n, int c,
                                         size_t p)
{
    size_t e = mg_pk_win_run(w, s, n, c, p);
    return e < n && s[e] >= 0x80 ? 0 : e;
}

/* mg_pk_win_ascii_run from p (p - w->base <= 63) given rest = w->m[c] >> (p - w->base):
 * the run's end from the bits already shifted when it ends inside the window. */
static inline size_t mg_pk_win_ascii_run_at(mg_pk_win *w, const uint8_t *s, size_t n, int c,
                                            size_t p, uint64_t rest)
{
    size_t k = (size_t)__builtin_ctzll(~rest), e = p + k; /* ~rest != 0: its top bit is 1 */
    if (e >= w->base + w->len) return mg_pk_win_ascii_run(w, s, n, c, p);
    return e < n && s[e] >= 0x80 ? 0 : e;
}

/* Is s[i] (in the window) of class c? */
static inline int mg_pk_win_is(const mg_pk_win *w, int c, size_t i)
{
    return (int)(w->m[c] >> (i - w->base) & 1);
}

/* One past the last CR/LF in the whitespace run [i, j), 0 if none; j is where
 * mg_pk_win_run stopped (in the window, or its end). */
static inline size_t mg_pk_win_last_crlf(const mg_pk_win *w, const uint8_t *s, size_t i,
                                         size_t j)
{
    if (i < w->base) { /* the run began in an earlier window */
        for (size_t k = j; k > i; k--)
            if (s[k - 1] == '\r' || s[k - 1] == '\n') return k;
        return 0;
    }
    size_t lo = i - w->base, hi = j - w->base;
    uint64_t below = hi >= 64 ? ~0ULL : (1ULL << hi) - 1;
    uint64_t m = w->m[MG_PK_C_CRLF] & below & (~0ULL << lo);
    return m ? w->base + 64 - (size_t)__builtin_clzll(m) : 0;
}

/* ---- runs shared by the cl100k and o200k fast paths ---- */

/* \p{N}{1,max} from i (max 0: any number), s[i] an ASCII digit. */
static inline size_t mg_pk_win_digits(const mg_scan_cfg *cfg, mg_pk_win *w, const uint8_t *s,
                                      size_t n, size_t i)
{
    size_t e = mg_pk_win_run(w, s, n, MG_PK_C_DIGIT, i);
    if (cfg->digits_max && e - i >= (size_t)cfg->digits_max) return i + (size_t)cfg->digits_max;
    return e < n && s[e] >= 0x80 ? 0 : e; /* a non-ASCII \p{N} may follow */
}

/* \s++$ (cfg->ws_end), \s*[\r\n]+, \s+(?!\S), \s+ at i for a run of ASCII whitespace: the
 * scanners' ws_piece when the run ends on an ASCII byte or at n. */
static inline size_t mg_pk_win_ws(const mg_scan_cfg *cfg, mg_pk_win *w, const uint8_t *s,
                                  size_t n, size_t i)
{
    size_t j = mg_pk_win_ascii_run(w, s, n, MG_PK_C_WS, i);
    if (j == 0) return 0;
    if (cfg->ws_end && j == n) return n;
    size_t crlf = mg_pk_win_last_crlf(w, s, i, j);
    if (crlf) return crlf;
    return pk_ws_tail(i, j, j - 1, n);
}

/* Defines NAME, a split-all loop (mg_split_all_fn) over the window: FAST(cfg, &w, s, n, i)
 * first (the piece's end, or 0 when the window cannot decide it), PIECE(cfg, s, n, i) (the
 * reference) when it returns 0. The spans' count and array stay in locals (written back
 * before growing and at the end). */
#define MG_PK_DEFINE_SPLIT_FAST(NAME, FAST, PIECE)                                          \
    mg_status NAME(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t base,        \
                   mg_spans *out)                                                          \
    {                                                                                      \
        mg_pk_win w;                                                                       \
        mg_pk_win_fill(&w, s, n, 0);                                                       \
        mg_span *v = out->v;                                                               \
        size_t k = out->n, cap = out->cap;                                                 \
        for (size_t i = 0; i < n;) {                                                       \
            if (i - w.base >= w.rlim) mg_pk_win_fill(&w, s, n, i); /* also i < base */     \
            size_t e = FAST(cfg, &w, s, n, i); /* > i when not 0 */                        \
            if (e == 0) {                                                                  \
                e = PIECE(cfg, s, n, i);                                                   \
                MG_ASSERT(e > i && e <= n);                                                \
            }                                                                              \
            if (k == cap) {                                                                \
                out->n = k;                                                                \
                if (mg_pk_spans_grow(out) != MG_OK) return MG_ERR_NOMEM;                   \
                v = out->v;                                                                \
                cap = out->cap;                                                            \
            }                                                                              \
            v[k].off = (uint32_t)(base + i);                                               \
            v[k].len = (uint32_t)(e - i);                                                  \
            k++;                                                                           \
            i = e;                                                                         \
        }                                                                                  \
        out->n = k;                                                                        \
        return MG_OK;                                                                      \
    }

#endif /* MG_PRETOK_ASCII_H */

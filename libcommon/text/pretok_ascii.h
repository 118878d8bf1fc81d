/* pretok_ascii.h — the fast split loops' view of the text: the classes of up to 64 bytes at
 * once (a window), as bit masks, so that a scanner's ASCII piece ends with one shift and a
 * count of trailing zeros instead of a byte loop. Private to the scanners (pretok_*.c).
 *
 * Classes of a byte (those of mg_pk_ascii_kind, checked against it for all 256 bytes by
 * tests/unit/test_pretok_fast.c): letter [A-Za-z] (also upper [A-Z] and lower [a-z]), digit
 * [0-9], ws (\t \n \v \f \r and space), crlf (\r \n, also in ws), other (every other
 * byte below 0x80); and, overlapping those, space, quote (the apostrophe), slash and high
 * (a byte >= 0x80). A byte >= 0x80 is in none of the first seven: a run that stops on one
 * is not decided by the window (the next character may continue it), and the fast piece
 * gives up there.
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
    MG_PK_C_SPACE, /* ' ' (also in ws) */
    MG_PK_C_QUOTE, /* '\'' (also in other) */
    MG_PK_C_SLASH, /* '/' (also in other) */
    MG_PK_C_HIGH,  /* a byte >= 0x80 */
    MG_PK_C_N_
};

typedef struct {
    size_t base, len; /* the window is s[base, base + len), len = min(64, n - base) */
    int at_end;       /* base + len == n */
    size_t rlim;      /* a piece at i, i - base < rlim (unsigned), has s[i] and s[i + 1]
                       * (if any) in the window */
    uint64_t m[MG_PK_C_N_]; /* bit k of m[c]: s[base + k] is of class c */
} mg_pk_win;

/* Classifies s[base, min(base + 64, n)) into w: AVX-512BW when the CPU has it, else SSE2
 * on x86-64 (16 bytes a step), else mg_pk_win_fill_scalar. Reads no byte at or past n. */
void mg_pk_win_fill(mg_pk_win *w, const uint8_t *s, size_t n, size_t base);
/* The portable byte-by-byte classifier (the other targets' path; the tests compare all). */
void mg_pk_win_fill_scalar(mg_pk_win *w, const uint8_t *s, size_t n, size_t base);
#if defined(__SSE2__)
void mg_pk_win_fill_sse2(mg_pk_win *w, const uint8_t *s, size_t n, size_t base);
#endif
/* x86-64 with GCC or clang: an AVX-512BW classifier, used when the CPU has it. */
#if defined(__x86_64__) && defined(__GNUC__)
#define MG_PK_AVX512 1
/* Fills w and returns 1 if the CPU has AVX-512BW, else returns 0. */
int mg_pk_win_fill_avx512(mg_pk_win *w, const uint8_t *s, size_t n, size_t base);
#else
#define MG_PK_AVX512 0
#endif

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

/* ---- bulk: every piece start of a window at once ----
 *
 * A window filled at a piece start i (w->base == i) holds what decides the pieces after i:
 * the regexes have no lookbehind, so the pieces from i on depend on s[i..] alone. A
 * family's BULK function computes, from the class masks of the window's first V bytes (V:
 * the first apostrophe, non-ASCII character (mg_pk_bulk_high_char) or other byte it
 * cannot decide, else the window's length; a non-ASCII character's class is set on all of
 * its bytes), the bit mask of the positions where a piece starts, with shifts and masks of
 * whole words (bit 0 is i itself); the piece that may go on at V (the next character might
 * continue it) is left out: BULK returns the cut, the start of that last piece, or V when
 * the text ends there, and the loop emits the pieces before the cut. A cut of 0 (the first
 * piece is undecided) sends the loop to the per-piece path. Bits are the window's offsets;
 * (x << 1) moves each byte's bit onto its successor ("the byte before is x"). */

/* The decidable part of a window: bits [0, V) (U), and whether the text ends at V. */
typedef struct {
    uint64_t U;
    unsigned V;
    int text_end;
} mg_pk_lim;

/* What the bulk rules read: the classes of the bytes of [0, V), a character's class on
 * every byte of it (letter, upper, lower, digit, whitespace, CR/LF, space, other). */
typedef struct {
    uint64_t L, UP, LO, D, WS, C, SP, O;
    uint64_t T; /* the bytes of a non-ASCII character after its first */
} mg_pk_cls;

/* The class bits of the non-ASCII character at p (of at most avail bytes) at bit j, or 0
 * when the bulk rules cannot take it: whitespace and numbers (their runs are counted in
 * characters), malformed or cut-off UTF-8, and with cased (o200k) the letters that are
 * neither upper/title nor lower case and the marks (in both of its letter classes). */
static inline int mg_pk_bulk_high_char(const uint8_t *p, size_t avail, unsigned j, int cased,
                                       mg_pk_cls *k, uint64_t *bits)
{
    uint32_t cp;
    size_t len = mg_utf8_decode(p, avail, &cp);
    if (cp == MG_UC_BAD) return 0;
    uint8_t props = mg_uc_props(cp);
    unsigned cat = props & MG_UC_CAT_MASK;
    if ((props & MG_UC_WS) || MG_UC_IS_N(cat)) return 0;
    *bits = ((1ULL << len) - 1) << j;
    k->T |= *bits & ~(1ULL << j);
    if (MG_UC_IS_L(cat)) {
        if (cased && cat != MG_UC_LU && cat != MG_UC_LT && cat != MG_UC_LL) return 0;
        k->L |= *bits;
        if (cased) *(cat == MG_UC_LL ? &k->LO : &k->UP) |= *bits;
    } else {
        if (cased && MG_UC_IS_M(cat)) return 0;
        k->O |= *bits; /* punctuation, symbols, marks (but o200k's), format, unassigned */
    }
    return 1;
}

/* The limit of window w (filled at a piece start at s + w->base) and its classes in *k:
 * the limit is the first apostrophe, byte of extra or non-ASCII character that
 * mg_pk_bulk_high_char refuses (cased: o200k's letters). */
static inline mg_pk_lim mg_pk_bulk_classes(const mg_pk_win *w, const uint8_t *s, uint64_t extra,
                                           int cased, mg_pk_cls *k)
{
    uint64_t hard = w->m[MG_PK_C_QUOTE] | extra;
    if (w->len < 64) hard |= ~0ULL << w->len;
    unsigned v = hard ? (unsigned)__builtin_ctzll(hard) : 64;
    k->L = w->m[MG_PK_C_LETTER];
    k->UP = w->m[MG_PK_C_UPPER];
    k->LO = w->m[MG_PK_C_LOWER];
    k->O = w->m[MG_PK_C_OTHER];
    k->T = 0;
    uint64_t high = w->m[MG_PK_C_HIGH] & (v == 64 ? ~0ULL : (1ULL << v) - 1);
    const uint8_t *p = s + w->base;
    while (high) {
        unsigned j = (unsigned)__builtin_ctzll(high);
        uint64_t bits;
        if (!mg_pk_bulk_high_char(p + j, w->len - j, j, cased, k, &bits)) {
            v = j;
            break;
        }
        high &= ~bits;
    }
    mg_pk_lim lim;
    lim.V = v;
    lim.U = v == 64 ? ~0ULL : (1ULL << v) - 1;
    lim.text_end = w->at_end && v == w->len;
    k->L &= lim.U;
    k->UP &= lim.U;
    k->LO &= lim.U;
    k->O &= lim.U;
    k->D = w->m[MG_PK_C_DIGIT] & lim.U;
    k->WS = w->m[MG_PK_C_WS] & lim.U;
    k->C = w->m[MG_PK_C_CRLF] & lim.U;
    k->SP = w->m[MG_PK_C_SPACE] & lim.U;
    return lim;
}

/* The characters whose first bytes are in x, all their bytes (T: the bytes after a
 * non-ASCII character's first; adding x's successors carries through each one's). */
static inline uint64_t mg_pk_bulk_whole(uint64_t x, uint64_t T)
{
    return x | (T & ~(T + (x << 1 & T)));
}

/* The starts of \p{N}{1,max} pieces in the digit mask D (cfg->digits_max 1, 3 or 0 = any
 * length): a digit run's first digit, and every third after it when max is 3. */
static inline uint64_t mg_pk_bulk_digits(const mg_scan_cfg *cfg, uint64_t D)
{
    if (cfg->digits_max == 1) return D;
    uint64_t st = D & ~(D << 1);
    if (cfg->digits_max == 3) {
        uint64_t d3 = D & D << 1 & D << 2; /* the digit and the two before it */
        for (uint64_t g = st; (g = g << 3 & d3) != 0;) st |= g;
    }
    return st;
}

/* The CR/LF run right after each run of "other" bytes: [^\s\p{L}\p{N}]+[\r\n]* takes it
 * (x: each such run's first CR/LF; adding it carries through the run). */
static inline uint64_t mg_pk_bulk_absorbed(uint64_t C, uint64_t O)
{
    uint64_t x = C & O << 1;
    return C & ~(C + x);
}

/* Starts in and after whitespace for the families with \s*[\r\n]+ (cl100k, o200k): WS
 * all whitespace, E the whitespace no earlier piece took (runs of E begin pieces), C all
 * CR/LF, NC = WS & ~C. In a run of E, the CR/LF alternative ends at the run's last CR/LF;
 * the rest, when it ends before a non-space, gives \s+(?!\S) (the rest minus its last
 * character, which starts the next piece) -- or the whole rest at the end of text,
 * unless cfg->ws_end (\s++$: the whole run one piece). */
static inline uint64_t mg_pk_bulk_ws_crlf(const mg_scan_cfg *cfg, uint64_t WS, uint64_t E,
                                          uint64_t C, mg_pk_lim lim)
{
    uint64_t NC = WS & ~C;
    uint64_t run = E & ~(E << 1);
    uint64_t last = NC & (lim.U & ~WS) >> 1 & E << 1; /* the last of 2+ before a non-space */
    uint64_t tails = 0, y = NC & (C & E) << 1;        /* non-CR/LF right after a CR/LF */
    while (y) {
        unsigned k = (unsigned)__builtin_ctzll(y);
        y &= y - 1;
        uint64_t rest = ~NC >> k;
        unsigned e = rest ? k + (unsigned)__builtin_ctzll(rest) : 64;
        int after_last_crlf = e < lim.V ? !(WS >> e & 1) : lim.text_end && !cfg->ws_end;
        if (after_last_crlf) tails |= 1ULL << k;
    }
    return run | last | tails;
}

/* The cut of a window's starts st (bit 0 set, no bit at or past V): V at the end of text,
 * else the start of the last piece, or of the whitespace run E holds at V - 1 (its inner
 * starts depend on what follows). *starts: the starts before the cut. */
static inline unsigned mg_pk_bulk_cut(uint64_t st, uint64_t E, mg_pk_lim lim, uint64_t *starts)
{
    if (lim.V == 0) return 0;
    if (lim.text_end) {
        *starts = st;
        return lim.V;
    }
    unsigned cut = 63 - (unsigned)__builtin_clzll(st);
    if (E >> (lim.V - 1) & 1) {
        uint64_t before = ~E & ((1ULL << (lim.V - 1)) - 1);
        cut = before ? 64 - (unsigned)__builtin_clzll(before) : 0;
    }
    *starts = st & ((1ULL << cut) - 1);
    return cut;
}

/* The starts of the cl100k family (cl100k_base, Llama-3, Qwen2/3, Megatron v1) and, with
 * camel, of o200k's (o200k_base, Megatron v2), in the decidable part of window w (its text
 * at s + w->base; mg_pk_bulk_classes, which also stops at the bytes of extra; *stop: V):
 *   [^\r\n\p{L}\p{N}]?\p{L}+  a letter run starts a piece unless a space, another
 *                           whitespace but CR/LF, or an "other" character that starts a
 *                           piece comes right before it (that character starts it); with
 *                           camel (o200k's [A-Z]*[a-z]+|[A-Z]+[a-z]*) an upper-case letter
 *                           after a lower-case one starts one too;
 *   ?[^\s\p{L}\p{N}]+[\r\n]*  an "other" byte starts one unless an "other" byte or a
 *                           space comes right before it; the CR/LF run after is taken;
 *   \p{N}{1,max}            mg_pk_bulk_digits;  whitespace: mg_pk_bulk_ws_crlf. */
static inline unsigned mg_pk_bulk_crlf_family(const mg_scan_cfg *cfg, const mg_pk_win *w,
                                              const uint8_t *s, uint64_t extra, int camel,
                                              uint64_t *starts, unsigned *stop)
{
    mg_pk_cls k;
    mg_pk_lim lim = mg_pk_bulk_classes(w, s, extra, camel, &k);
    *stop = lim.V;
    if (lim.V == 0) return 0;
    uint64_t other = k.O & ~((k.O | k.SP) << 1);
    uint64_t letters = k.L & ~((k.L | (k.WS & ~k.C) | mg_pk_bulk_whole(other, k.T)) << 1);
    if (camel) letters |= k.UP & k.LO << 1;
    uint64_t E = k.WS & ~mg_pk_bulk_absorbed(k.C, k.O);
    uint64_t st = 1 | letters | other | mg_pk_bulk_digits(cfg, k.D) |
                  mg_pk_bulk_ws_crlf(cfg, k.WS, E, k.C, lim);
    return mg_pk_bulk_cut(st, E, lim, starts);
}

/* Appends the pieces of starts (bit 0 set) before cut, at text offset off, to v[k...];
 * returns the new count. */
static inline size_t mg_pk_bulk_emit(mg_span *v, size_t k, size_t off, uint64_t starts,
                                     unsigned cut)
{
    unsigned b = 0;
    for (uint64_t m = starts & (starts - 1); m; m &= m - 1) {
        unsigned e = (unsigned)__builtin_ctzll(m);
        v[k].off = (uint32_t)(off + b);
        v[k].len = e - b;
        k++;
        b = e;
    }
    v[k].off = (uint32_t)(off + b);
    v[k].len = cut - b;
    return k + 1;
}

/* Defines NAME, a split-all loop (mg_split_all_fn): windows filled at each cut, their
 * pieces from BULK(cfg, &w, s, &starts, &stop) (above); where BULK cannot decide the first
 * piece, FAST(cfg, &w, s, n, i) or else PIECE(cfg, s, n, i) (the reference), piece by
 * piece until past the byte where BULK stopped. */
#define MG_PK_DEFINE_SPLIT_BULK(NAME, BULK, FAST, PIECE)                                    \
    mg_status NAME(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t base,        \
                   mg_spans *out)                                                          \
    {                                                                                      \
        mg_pk_win w;                                                                       \
        size_t i = 0;                                                                      \
        while (i < n) {                                                                    \
            while (out->cap - out->n < 65)                                                 \
                if (mg_pk_spans_grow(out) != MG_OK) return MG_ERR_NOMEM;                   \
            mg_pk_win_fill(&w, s, n, i);                                                   \
            uint64_t starts;                                                               \
            unsigned stop, cut = BULK(cfg, &w, s, &starts, &stop);                         \
            if (cut) {                                                                     \
                out->n = mg_pk_bulk_emit(out->v, out->n, base + i, starts, cut);           \
                i += cut;                                                                  \
                continue;                                                                  \
            }                                                                              \
            size_t past = i + stop; /* the first byte BULK could not class */              \
            do {                                                                           \
                if (i - w.base >= w.rlim) mg_pk_win_fill(&w, s, n, i); /* also i < base */ \
                size_t e = FAST(cfg, &w, s, n, i); /* > i when not 0 */                    \
                if (e == 0) {                                                              \
                    e = PIECE(cfg, s, n, i);                                               \
                    MG_ASSERT(e > i && e <= n);                                            \
                }                                                                          \
                if (mg_pk_push(out, base + i, e - i) != MG_OK) return MG_ERR_NOMEM;        \
                i = e;                                                                     \
            } while (i < n && i <= past);                                                  \
        }                                                                                  \
        return MG_OK;                                                                      \
    }

#endif /* MG_PRETOK_ASCII_H */

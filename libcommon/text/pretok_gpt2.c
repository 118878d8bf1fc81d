/* pretok_gpt2.c — the GPT-2 scanner and the helpers shared by all scanners.
 *
 * Regex (HF ByteLevel, original encoder.py; tiktoken r50k/p50k have an equivalent form,
 * proved by the differential tests):
 *     's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
 * Every character is matched by some alternative, so a match always starts at pos.
 * mg_split_gpt2 decides the ASCII pieces from a window of byte classes (gpt2_fast,
 * pretok_ascii.h) and leaves every other piece to gpt2_piece, the reference, which
 * mg_split_gpt2_ref applies to every piece.
 */
#include "pretok_ascii.h"
#include "pretok_internal.h"

/* Character kinds: White_Space, \p{L}, \p{N}, anything else. */
enum { K_WS = MG_PK_WS, K_L = MG_PK_L, K_N = MG_PK_N, K_O = MG_PK_O };

/* Kinds of the ASCII characters (checked against the Unicode table by test_pretok.c). */
const char mg_pk_ascii_kind[129] = "OOOOOOOOOWWWWWOO"
                                    "OOOOOOOOOOOOOOOO"
                                    "WOOOOOOOOOOOOOOO"
                                    "NNNNNNNNNNOOOOOO"
                                    "OLLLLLLLLLLLLLLL"
                                    "LLLLLLLLLLLOOOOO"
                                    "OLLLLLLLLLLLLLLL"
                                    "LLLLLLLLLLLOOOOO";

static inline int kind_of(uint8_t props)
{
    if (props & MG_UC_WS) return K_WS;
    unsigned c = pk_cat(props);
    return (c & PK_L) ? K_L : (c & PK_N) ? K_N : K_O;
}

static inline int kind_at(const uint8_t *s, size_t n, size_t i, size_t *len)
{
    if (s[i] < 0x80) {
        *len = 1;
        return mg_pk_ascii_kind[s[i]];
    }
    return kind_of(pk_props(s, n, i, len));
}

/* End of the run of characters of one kind starting at i. */
static size_t run_kind(const uint8_t *s, size_t n, size_t i, int kind)
{
    for (;;) {
        if (kind == K_L) i = mg_pk_ascii_letters(s, n, i, 0);
        while (i < n && s[i] < 0x80 && mg_pk_ascii_kind[s[i]] == kind) i++;
        if (i >= n || s[i] < 0x80) return i;
        size_t len;
        if (kind_at(s, n, i, &len) != kind) return i;
        i += len;
    }
}

int mg_pk_gpt2_ascii_kind(uint8_t b) { return b < 0x80 ? mg_pk_ascii_kind[b] : 0; }

size_t mg_pk_contraction(const uint8_t *s, size_t n, size_t i, int fold)
{
    uint32_t cp;
    size_t p = i + 1, la, lb;
    if (p >= n) return 0;
    la = mg_utf8_decode(s + p, n - p, &cp);
    int a = fold ? mg_uc_fold_ascii_letter(cp) : (cp >= 'a' && cp <= 'z' ? (int)cp : 0);
    if (a == 's' || a == 't' || a == 'm' || a == 'd') return 1 + la;
    if (a != 'r' && a != 'v' && a != 'l') return 0;
    p += la;
    if (p >= n) return 0;
    lb = mg_utf8_decode(s + p, n - p, &cp);
    int b = fold ? mg_uc_fold_ascii_letter(cp) : (cp >= 'a' && cp <= 'z' ? (int)cp : 0);
    if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l'))
        return 1 + la + lb;
    return 0;
}

size_t mg_pk_ws_run(const uint8_t *s, size_t n, size_t i, size_t *last, size_t *crlf)
{
    *last = i;
    *crlf = 0;
    while (i < n) {
        size_t len;
        if (s[i] < 0x80) { /* ASCII: the table, no decoding */
            if (mg_pk_ascii_kind[s[i]] != K_WS) break;
            if (s[i] == '\r' || s[i] == '\n') *crlf = i + 1;
            *last = i++;
            continue;
        }
        uint8_t props = pk_props(s, n, i, &len);
        if (!(props & MG_UC_WS)) break;
        if (s[i] == '\r' || s[i] == '\n') *crlf = i + 1;
        *last = i;
        i += len;
    }
    return i;
}

static inline size_t gpt2_piece(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t i)
{
    (void)cfg;
    size_t len, k;
    /* fast path: ` ?[A-Za-z]` starts ` ?\p{L}+` */
    size_t j = s[i] == ' ' && i + 1 < n ? i + 1 : i;
    if (s[j] < 0x80 && mg_pk_ascii_kind[s[j]] == K_L) return run_kind(s, n, j + 1, K_L);
    if (s[i] == '\'' && (k = mg_pk_contraction(s, n, i, 0)) != 0) return i + k;
    int kind = kind_at(s, n, i, &len);
    if (s[i] == ' ' && i + 1 < n) {
        size_t len2;
        int next = kind_at(s, n, i + 1, &len2);
        if (next != K_WS) return run_kind(s, n, i + 1 + len2, next);
    }
    if (kind != K_WS) return run_kind(s, n, i + len, kind);
    size_t last, crlf, e = mg_pk_ws_run(s, n, i, &last, &crlf);
    return pk_ws_tail(i, e, last, n);
}

int mg_scan_gpt2(const mg_scan_cfg *cfg, const uint8_t *s, size_t n, size_t pos, size_t *ms,
                 size_t *me)
{
    *ms = pos;
    *me = gpt2_piece(cfg, s, n, pos);
    return 1;
}

MG_PK_DEFINE_SPLIT_ALL(mg_split_gpt2_ref, gpt2_piece)

/* ---- the window's fast path: gpt2_piece's decisions with the runs read from masks ---- */

/* The window class of an ASCII kind other than whitespace. */
static inline int kind_class(int kind)
{
    return kind == K_L ? MG_PK_C_LETTER : kind == K_N ? MG_PK_C_DIGIT : MG_PK_C_OTHER;
}

/* gpt2_piece over the window (same order of tests), or 0 (pretok_ascii.h). */
static inline __attribute__((always_inline)) size_t
gpt2_fast(const mg_scan_cfg *cfg, mg_pk_win *w, const uint8_t *s, size_t n, size_t i)
{
    (void)cfg;
    uint8_t b = s[i];
    if (b >= 0x80 || b == '\'') return 0;
    if (b == ' ' && i + 1 < n) { /* ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+` */
        if (s[i + 1] >= 0x80) return 0;
        int next = mg_pk_ascii_kind[s[i + 1]];
        if (next != K_WS) return mg_pk_win_ascii_run(w, s, n, kind_class(next), i + 2);
    }
    int kind = mg_pk_ascii_kind[b];
    if (kind != K_WS) return mg_pk_win_ascii_run(w, s, n, kind_class(kind), i + 1);
    size_t j = mg_pk_win_ascii_run(w, s, n, MG_PK_C_WS, i);
    return j ? pk_ws_tail(i, j, j - 1, n) : 0;
}

/* The window's piece starts (pretok_ascii.h's bulk step) in its decidable part
 * (mg_pk_bulk_classes: letters and "other" characters beyond ASCII too): a
 * run of letters, of digits or of "other" bytes starts a piece unless a space comes right
 * before it (` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: the space starts it); a
 * whitespace run starts one, and so does its last character when two or more end before a
 * non-space (\s+(?!\S)). */
static inline __attribute__((always_inline)) unsigned
gpt2_bulk(const mg_scan_cfg *cfg, const mg_pk_win *w, const uint8_t *s, uint64_t *starts,
          unsigned *stop)
{
    (void)cfg;
    mg_pk_cls k;
    mg_pk_lim lim = mg_pk_bulk_classes(w, s, 0, 0, &k);
    *stop = lim.V;
    if (lim.V == 0) return 0;
    uint64_t not_after_space = ~(k.SP << 1);
    uint64_t runs = (k.L & ~(k.L << 1)) | (k.D & ~(k.D << 1)) | (k.O & ~(k.O << 1));
    uint64_t ws = (k.WS & ~(k.WS << 1)) | (k.WS & (lim.U & ~k.WS) >> 1 & k.WS << 1);
    uint64_t st = 1 | (runs & not_after_space) | ws;
    return mg_pk_bulk_cut(st, k.WS, lim, starts);
}

MG_PK_DEFINE_SPLIT_BULK(mg_split_gpt2, gpt2_bulk, gpt2_fast, gpt2_piece)

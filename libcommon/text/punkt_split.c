/* punkt_split.c — PunktSentenceTokenizer.tokenize (NLTK 3.10.4) over code points; see
 * mg/punkt.h. Our own implementation of the published algorithm:
 *   1. candidates: matches of the period-context regex (stock or Megatron's keep-newlines
 *      variant), found left to right without overlap;
 *   2. for each, the context "previous word + match + following token" is word-tokenized
 *      and annotated (first pass: sentence-end characters, ellipses, abbreviations; second
 *      pass: collocations, orthographic heuristic, frequent sentence starters, initials and
 *      ordinal numbers); a break is taken when a token other than the last is a break;
 *   3. sentences are the slices between breaks, the last one right-stripped; closing quotes
 *      and brackets after a break are moved onto the sentence they follow.
 * Character classes are those of the `regex` module that NLTK uses: \s = White_Space,
 * \d = Nd, \w = letters, marks, Nd, Nl, Pc, join controls and the other-alphabetic circled
 * letters; Python's str.isspace (rstrip/strip) adds U+001C..U+001F. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#if MG_HAVE_UTF8PROC
#include <utf8proc.h>
#endif

#include "mg/grow.h"
#include "mg/unicode.h"
#include "punkt_internal.h"

/* A token of a context: [start, end) in ctx code points, and its annotations. */
typedef struct {
    size_t start, end;
    const char *type; /* UTF-8 lower-cased type, or "##number##" (in the splitter's arena) */
    size_t type_off, type_len;
    int period_final, sentbreak, abbr, ellipsis;
} pk_tok;

/* One regex match of the period context: [start, end), the after_tok group and next_tok. */
typedef struct {
    size_t start, end;
    size_t after_start, after_end;
    int has_next;
    size_t next_start;
} pk_match;

typedef struct {
    size_t start, stop; /* code points, Python slice semantics (start may exceed stop) */
} pk_slice;

struct mg_punkt_splitter {
    const mg_punkt *p;
    int keep_newlines;
    uint32_t *cp;    /* code points of the current piece */
    size_t *boff;    /* byte offset of each code point, relative to the piece; [n] = length */
    size_t n, cap, boff_cap;
    uint32_t *ctx;   /* the context being tested */
    size_t ctx_n, ctx_cap;
    pk_tok *toks;
    size_t n_toks, toks_cap;
    char *arena;     /* type strings of toks */
    size_t arena_n, arena_cap;
    uint32_t *low;   /* lower-casing scratch */
    size_t low_cap;
    pk_slice *slices;
    size_t n_slices, slices_cap;
    mg_punkt_span *spans;
    size_t n_spans, spans_cap;
};

/* ---- growth -------------------------------------------------------------------------- */

#define GROW(s, arr, cap, need) MG_FORWARD(MG_GROW((s)->arr, (s)->cap, (need), 64))

/* ---- character classes --------------------------------------------------------------- */

static int is_ws(uint32_t c) /* regex \s */
{
    return c < 0x110000 && mg_uc_is_ws(c);
}

static int is_pyspace(uint32_t c) /* str.isspace */
{
    return is_ws(c) || (c >= 0x1C && c <= 0x1F);
}

static int is_ascii_ws(uint32_t c) /* string.whitespace */
{
    return c == ' ' || (c >= '\t' && c <= '\r');
}

static int in_ranges(uint32_t c, const uint32_t (*r)[2], size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (c >= r[i][0] && c <= r[i][1]) return 1;
    return 0;
}

/* PropList Other_Uppercase / Other_Lowercase (Python's isupper/islower add them). */
static const uint32_t other_upper[][2] = {
    {0x2160, 0x216F}, {0x24B6, 0x24CF}, {0x1F130, 0x1F149}, {0x1F150, 0x1F169},
    {0x1F170, 0x1F189}};
static const uint32_t other_lower[][2] = {
    {0xAA, 0xAA},       {0xBA, 0xBA},       {0x2B0, 0x2B8},     {0x2C0, 0x2C1},
    {0x2E0, 0x2E4},     {0x345, 0x345},     {0x37A, 0x37A},     {0x10FC, 0x10FC},
    {0x1D2C, 0x1D6A},   {0x1D78, 0x1D78},   {0x1D9B, 0x1DBF},   {0x2071, 0x2071},
    {0x207F, 0x207F},   {0x2090, 0x209C},   {0x2170, 0x217F},   {0x24D0, 0x24E9},
    {0x2C7C, 0x2C7D},   {0xA69C, 0xA69D},   {0xA770, 0xA770},   {0xA7F2, 0xA7F4},
    {0xA7F8, 0xA7F9},   {0xAB5C, 0xAB5F},   {0xAB69, 0xAB69},   {0x10780, 0x10780},
    {0x10783, 0x10785}, {0x10787, 0x107B0}, {0x107B2, 0x107BA}, {0x1E030, 0x1E06D}};
/* Alphabetic symbols (So) that the regex module's \w matches. */
static const uint32_t alpha_symbols[][2] = {
    {0x24B6, 0x24E9}, {0x1F130, 0x1F149}, {0x1F150, 0x1F169}, {0x1F170, 0x1F189}};
/* Connector punctuation (Pc). */
static const uint32_t connectors[][2] = {{0x5F, 0x5F},     {0x203F, 0x2040}, {0x2054, 0x2054},
                                         {0xFE33, 0xFE34}, {0xFE4D, 0xFE4F}, {0xFF3F, 0xFF3F}};

#define N_RANGES(r) (sizeof(r) / sizeof((r)[0]))

static unsigned cat_of(uint32_t c)
{
    return c < 0x110000 ? (mg_uc_props(c) & MG_UC_CAT_MASK) : MG_UC_OTHER;
}

static int py_isupper(uint32_t c)
{
    return cat_of(c) == MG_UC_LU || in_ranges(c, other_upper, N_RANGES(other_upper));
}

static int py_islower(uint32_t c)
{
    return cat_of(c) == MG_UC_LL || in_ranges(c, other_lower, N_RANGES(other_lower));
}

/* [^\W\d]: a word character that is not a decimal digit. */
static int is_alpha_word(uint32_t c)
{
    unsigned cat = cat_of(c);
    if (MG_UC_IS_L(cat) || MG_UC_IS_M(cat) || cat == MG_UC_NL) return 1;
    if (c == 0x200C || c == 0x200D) return 1;
    return in_ranges(c, connectors, N_RANGES(connectors)) ||
           in_ranges(c, alpha_symbols, N_RANGES(alpha_symbols));
}

static int is_digit(uint32_t c)
{
    return cat_of(c) == MG_UC_ND;
}

static int is_sent_end(uint32_t c)
{
    return c == '.' || c == '?' || c == '!';
}

/* _re_non_word_chars: characters that cannot appear within words. */
static int is_non_word(uint32_t c)
{
    switch (c) {
    case ')': case '"': case ';': case '}': case ']': case '*': case ':': case '@':
    case '\'': case '(': case '{': case '[': case 0x2018: case 0x2019: case 0x201C:
    case 0x201D: case 0xAB: case 0xBB: case '?': case '!':
        return 1;
    default:
        return 0;
    }
}

/* _re_word_start excludes these. */
static int is_word_start(uint32_t c)
{
    return c == 0 || c >= 0x80 || !strchr("(\"`{[:;&#*@)}]-,", (int)c);
}

/* re_boundary_realignment's closing characters. */
static int is_closing(uint32_t c)
{
    switch (c) {
    case '"': case '\'': case ')': case ']': case '}': case 0x2018: case 0x2019:
    case 0x201C: case 0x201D: case 0xAB: case 0xBB:
        return 1;
    default:
        return 0;
    }
}

/* ---- lower-casing (Python str.lower) ------------------------------------------------- */

static int is_cased(uint32_t c)
{
    return py_isupper(c) || py_islower(c) || cat_of(c) == MG_UC_LT;
}

static int is_case_ignorable(uint32_t c)
{
    switch (c) {
    case '\'': case '.': case ':': case '^': case '`': case 0xA8: case 0xAD: case 0xAF:
    case 0xB4: case 0xB7: case 0xB8: case 0x387: case 0x55F: case 0x5F4: case 0x2018:
    case 0x2019: case 0x2024: case 0x2027: case 0xFE13: case 0xFE52: case 0xFE55:
    case 0xFF07: case 0xFF0E: case 0xFF1A:
        return 1;
    default:
        break;
    }
    unsigned cat = cat_of(c);
    if (cat == MG_UC_MN || cat == MG_UC_ME || cat == MG_UC_LM) return 1;
#if MG_HAVE_UTF8PROC
    if (c < 0x110000) {
        utf8proc_category_t k = utf8proc_category((utf8proc_int32_t)c);
        return k == UTF8PROC_CATEGORY_CF || k == UTF8PROC_CATEGORY_SK;
    }
#endif
    return 0;
}

/* Python's Final_Sigma condition for s[i] == U+03A3 within s[0, n). */
static int final_sigma(const uint32_t *s, size_t n, size_t i)
{
    size_t j = i;
    while (j > 0 && is_case_ignorable(s[j - 1])) j--;
    if (j == 0 || !is_cased(s[j - 1])) return 0;
    j = i + 1;
    while (j < n && is_case_ignorable(s[j])) j++;
    return j == n || !is_cased(s[j]);
}

static uint32_t lower_simple(uint32_t c)
{
    if (c >= 'A' && c <= 'Z') return c + 32;
    if (c < 0x80 || c >= 0x110000) return c;
#if MG_HAVE_UTF8PROC
    return (uint32_t)utf8proc_tolower((utf8proc_int32_t)c);
#else
    if ((c >= 0xC0 && c <= 0xDE && c != 0xD7)) return c + 32;
    return c;
#endif
}

/* s[0, n).lower() into sp->low; returns its length. */
static mg_status lower_cps(mg_punkt_splitter *sp, const uint32_t *s, size_t n, size_t *out_n)
{
    GROW(sp, low, low_cap, 2 * n + 1);
    size_t k = 0;
    for (size_t i = 0; i < n; i++) {
        uint32_t c = s[i];
        if (c == 0x130) {
            sp->low[k++] = 'i';
            sp->low[k++] = 0x307;
        } else if (c == 0x3A3) {
            sp->low[k++] = final_sigma(s, n, i) ? 0x3C2 : 0x3C3;
        } else {
            sp->low[k++] = lower_simple(c);
        }
    }
    *out_n = k;
    return MG_OK;
}

/* ^-?[\.,]?\d[\d,\.-]*\.?$ */
static int is_numeric(const uint32_t *s, size_t n)
{
    size_t i = 0;
    if (i < n && s[i] == '-') i++;
    if (i < n && (s[i] == '.' || s[i] == ',')) i++;
    if (i >= n || !is_digit(s[i])) return 0;
    for (i++; i < n; i++)
        if (!is_digit(s[i]) && s[i] != ',' && s[i] != '.' && s[i] != '-') return 0;
    return 1;
}

/* Appends the UTF-8 of s[0, n) to the arena; *off receives its offset. */
static mg_status arena_put(mg_punkt_splitter *sp, const uint32_t *s, size_t n, size_t *off)
{
    GROW(sp, arena, arena_cap, sp->arena_n + 4 * n + 1);
    *off = sp->arena_n;
    for (size_t i = 0; i < n; i++) {
        size_t w = s[i] < 0x110000 ? mg_utf8_encode(s[i], (uint8_t *)sp->arena + sp->arena_n) : 0;
        if (w == 0) { /* a surrogate or a malformed byte: U+FFFD */
            memcpy(sp->arena + sp->arena_n, "\xEF\xBF\xBD", 3);
            w = 3;
        }
        sp->arena_n += w;
    }
    return MG_OK;
}

/* ---- word tokenization (PunktLanguageVars.word_tokenize) ----------------------------- */

/* Length of the _re_multi_char_punct match at s[i] within [.., n), or 0. */
static size_t multi_char(const uint32_t *s, size_t n, size_t i)
{
    if (i + 1 >= n) return 0;
    if ((s[i] == '-' || s[i] == '.') && s[i + 1] == s[i]) {
        size_t j = i + 2;
        while (j < n && s[j] == s[i]) j++;
        return j - i;
    }
    if (s[i] != '.') return 0;
    size_t reps = 0;
    while (i + 2 * reps + 1 < n && s[i + 2 * reps] == '.' && is_ws(s[i + 2 * reps + 1])) reps++;
    for (; reps >= 2; reps--)
        if (i + 2 * reps < n && s[i + 2 * reps] == '.') return 2 * reps + 1;
    return 0;
}

/* The lookahead that ends a word token at s[j] (line end n). */
static int word_end(const uint32_t *s, size_t n, size_t j)
{
    if (j >= n || is_ws(s[j]) || is_non_word(s[j]) || multi_char(s, n, j)) return 1;
    if (s[j] != ',') return 0;
    return j + 1 >= n || is_ws(s[j + 1]) || is_non_word(s[j + 1]) || multi_char(s, n, j + 1);
}

/* Length of the token at s[i] (line end n); 0 at whitespace. */
static size_t word_token(const uint32_t *s, size_t n, size_t i)
{
    size_t m = multi_char(s, n, i);
    if (m) return m;
    if (is_ws(s[i])) return 0;
    if (!is_word_start(s[i])) return 1;
    size_t j = i + 1;
    while (!word_end(s, n, j)) j++;
    return j - i;
}

/* Fills the token's type and first-pass annotation. */
static mg_status first_pass(mg_punkt_splitter *sp, pk_tok *t)
{
    const uint32_t *s = sp->ctx + t->start;
    size_t n = t->end - t->start, ln, off;
    MG_FORWARD(lower_cps(sp, s, n, &ln));
    if (is_numeric(sp->low, ln)) {
        static const uint32_t num[] = {'#', '#', 'n', 'u', 'm', 'b', 'e', 'r', '#', '#'};
        MG_FORWARD(arena_put(sp, num, 10, &off));
    } else {
        MG_FORWARD(arena_put(sp, sp->low, ln, &off));
    }
    t->type_off = off; /* t->type is set once the arena is final */
    t->type_len = sp->arena_n - off;
    t->period_final = s[n - 1] == '.';
    int ellipsis = n >= 2;
    for (size_t i = 0; i < n && ellipsis; i++) ellipsis = s[i] == '.';
    if (n == 1 && is_sent_end(s[0])) {
        t->sentbreak = 1;
    } else if (ellipsis) {
        t->ellipsis = 1;
    } else if (t->period_final && !(n >= 2 && s[n - 2] == '.')) {
        MG_FORWARD(lower_cps(sp, s, n - 1, &ln));
        size_t dash = ln;
        while (dash > 0 && sp->low[dash - 1] != '-') dash--;
        size_t a, b;
        MG_FORWARD(arena_put(sp, sp->low, ln, &a));
        size_t alen = sp->arena_n - a;
        MG_FORWARD(arena_put(sp, sp->low + dash, ln - dash, &b));
        size_t blen = sp->arena_n - b;
        int abbr = pk_is_abbrev(sp->p, sp->arena + a, alen) ||
                   pk_is_abbrev(sp->p, sp->arena + b, blen);
        sp->arena_n = a; /* scratch only */
        if (abbr) t->abbr = 1;
        else t->sentbreak = 1;
    }
    return MG_OK;
}

/* Tokenizes ctx like PunktBaseClass._tokenize_words and annotates the first pass. */
static mg_status tokenize_ctx(mg_punkt_splitter *sp)
{
    sp->n_toks = 0;
    sp->arena_n = 0;
    const uint32_t *s = sp->ctx;
    for (size_t a = 0; a <= sp->ctx_n;) {
        size_t e = a;
        while (e < sp->ctx_n && s[e] != '\n') e++;
        size_t blank = a;
        while (blank < e && is_pyspace(s[blank])) blank++;
        for (size_t i = blank < e ? a : e; i < e;) {
            size_t len = word_token(s, e, i);
            if (!len) {
                i++;
                continue;
            }
            GROW(sp, toks, toks_cap, sp->n_toks + 1);
            pk_tok *t = &sp->toks[sp->n_toks++];
            memset(t, 0, sizeof *t);
            t->start = i;
            t->end = i + len;
            MG_FORWARD(first_pass(sp, t));
            i += len;
        }
        a = e + 1;
    }
    for (size_t i = 0; i < sp->n_toks; i++)
        sp->toks[i].type = sp->arena + sp->toks[i].type_off;
    return MG_OK;
}

/* ---- second pass --------------------------------------------------------------------- */

static size_t type_no_period_len(const pk_tok *t)
{
    if (t->type_len > 1 && t->type[t->type_len - 1] == '.') return t->type_len - 1;
    return t->type_len;
}

static size_t type_no_sentperiod_len(const pk_tok *t)
{
    return t->sentbreak ? type_no_period_len(t) : t->type_len;
}

enum { ORTHO_FALSE, ORTHO_TRUE, ORTHO_UNKNOWN };

static int ortho_heuristic(const mg_punkt_splitter *sp, const pk_tok *t)
{
    uint32_t c0 = sp->ctx[t->start];
    if (t->end - t->start == 1 && c0 && c0 < 0x80 && strchr(";:,.!?", (int)c0)) return ORTHO_FALSE;
    int64_t oc = pk_ortho(sp->p, t->type, type_no_sentperiod_len(t));
    if (py_isupper(c0) && (oc & PK_LC) && !(oc & PK_MID_UC)) return ORTHO_TRUE;
    if (py_islower(c0) && ((oc & PK_UC) || !(oc & PK_BEG_LC))) return ORTHO_FALSE;
    return ORTHO_UNKNOWN;
}

static void second_pass(const mg_punkt_splitter *sp, pk_tok *t1, const pk_tok *t2)
{
    if (!t1->period_final) return;
    const mg_punkt *p = sp->p;
    size_t tlen = type_no_period_len(t1), nlen = type_no_sentperiod_len(t2);
    int initial = t1->end - t1->start == 2 && is_alpha_word(sp->ctx[t1->start]) &&
                  !is_digit(sp->ctx[t1->start]) && sp->ctx[t1->start + 1] == '.';
    if (pk_is_collocation(p, t1->type, tlen, t2->type, nlen)) {
        t1->sentbreak = 0;
        t1->abbr = 1;
        return;
    }
    if ((t1->abbr || t1->ellipsis) && !initial) {
        if (ortho_heuristic(sp, t2) == ORTHO_TRUE) {
            t1->sentbreak = 1;
            return;
        }
        if (py_isupper(sp->ctx[t2->start]) && pk_is_sent_starter(p, t2->type, nlen)) {
            t1->sentbreak = 1;
            return;
        }
    }
    int number = tlen == 10 && memcmp(t1->type, "##number##", 10) == 0;
    if (!initial && !number) return;
    int o = ortho_heuristic(sp, t2);
    if (o == ORTHO_FALSE || (o == ORTHO_UNKNOWN && initial && py_isupper(sp->ctx[t2->start]) &&
                             !(pk_ortho(p, t2->type, nlen) & PK_LC))) {
        t1->sentbreak = 0;
        t1->abbr = 1;
    }
}

/* PunktSentenceTokenizer.text_contains_sentbreak(ctx). */
static mg_status contains_sentbreak(mg_punkt_splitter *sp, int *found)
{
    MG_FORWARD(tokenize_ctx(sp));
    *found = 0;
    for (size_t i = 0; i + 1 < sp->n_toks; i++) {
        second_pass(sp, &sp->toks[i], &sp->toks[i + 1]);
        if (sp->toks[i].sentbreak) {
            *found = 1;
            return MG_OK;
        }
    }
    return MG_OK;
}

/* ---- period contexts ----------------------------------------------------------------- */

/* Stock _period_context_fmt: [.?!](?=(NonWord | \s+(\S+))) at or after pos. */
static int match_stock(const uint32_t *s, size_t n, size_t pos, pk_match *m)
{
    for (size_t i = pos; i < n; i++) {
        if (!is_sent_end(s[i]) || i + 1 >= n) continue;
        memset(m, 0, sizeof *m);
        m->start = i;
        m->end = m->after_start = i + 1;
        if (is_non_word(s[i + 1])) {
            m->after_end = i + 2;
            return 1;
        }
        size_t j = i + 1;
        while (j < n && is_ws(s[j])) j++;
        if (j == i + 1 || j >= n) continue;
        size_t k = j;
        while (k < n && !is_ws(s[k])) k++;
        m->after_end = k;
        m->has_next = 1;
        m->next_start = j;
        return 1;
    }
    return 0;
}

/* The lookahead (NonWord | (\S+)) at s[j] (s[j] is not whitespace). */
static void set_after(const uint32_t *s, size_t n, size_t j, pk_match *m)
{
    m->after_start = j;
    if (is_non_word(s[j])) {
        m->after_end = j + 1;
        return;
    }
    size_t k = j;
    while (k < n && !is_ws(s[k])) k++;
    m->after_end = k;
    m->has_next = 1;
    m->next_start = j;
}

/* Megatron's CustomLanguageVars: \S*[.?!]\s*(?=(NonWord | (\S+))) at or after pos. */
static int match_keep_newlines(const uint32_t *s, size_t n, size_t pos, pk_match *m)
{
    for (size_t p = pos; p < n;) {
        if (is_ws(s[p])) {
            p++;
            continue;
        }
        size_t q = p;
        while (q < n && !is_ws(s[q])) q++;
        for (size_t e = q; e-- > p;) {
            if (!is_sent_end(s[e])) continue;
            size_t r = e + 1;
            if (r == q) {
                while (r < n && is_ws(s[r])) r++;
                if (r >= n) continue;
            }
            memset(m, 0, sizeof *m);
            m->start = p;
            m->end = r;
            set_after(s, n, r, m);
            return 1;
        }
        p = q;
    }
    return 0;
}

static int next_match(const mg_punkt_splitter *sp, size_t pos, pk_match *m)
{
    return sp->keep_newlines ? match_keep_newlines(sp->cp, sp->n, pos, m)
                             : match_stock(sp->cp, sp->n, pos, m);
}

/* ctx = text[word] + match.group() + match.group("after_tok"). */
static mg_status build_ctx(mg_punkt_splitter *sp, pk_slice word, const pk_match *m)
{
    size_t w0 = word.start < word.stop ? word.start : word.stop;
    size_t wn = word.stop - w0;
    size_t need = wn + (m->end - m->start) + (m->after_end - m->after_start);
    GROW(sp, ctx, ctx_cap, need + 1);
    memcpy(sp->ctx, sp->cp + w0, wn * sizeof *sp->ctx);
    memcpy(sp->ctx + wn, sp->cp + m->start, (m->end - m->start) * sizeof *sp->ctx);
    memcpy(sp->ctx + wn + (m->end - m->start), sp->cp + m->after_start,
           (m->after_end - m->after_start) * sizeof *sp->ctx);
    sp->ctx_n = need;
    return MG_OK;
}

static mg_status push_slice(mg_punkt_splitter *sp, size_t start, size_t stop)
{
    GROW(sp, slices, slices_cap, sp->n_slices + 1);
    sp->slices[sp->n_slices].start = start;
    sp->slices[sp->n_slices++].stop = stop;
    return MG_OK;
}

/* Takes candidate m (with its previous-word slice) as in _slices_from_text. */
static mg_status consider(mg_punkt_splitter *sp, const pk_match *m, pk_slice word,
                          size_t *last_break)
{
    int brk;
    MG_FORWARD(build_ctx(sp, word, m));
    MG_FORWARD(contains_sentbreak(sp, &brk));
    if (!brk) return MG_OK;
    MG_FORWARD(push_slice(sp, *last_break, m->end));
    *last_break = m->has_next ? m->next_start : m->end;
    return MG_OK;
}

/* _match_potential_end_contexts + _slices_from_text. */
static mg_status find_slices(mg_punkt_splitter *sp)
{
    sp->n_slices = 0;
    size_t last_break = 0, pos = 0;
    pk_slice prev_word = {0, 0};
    pk_match prev, m;
    int have_prev = 0;
    while (next_match(sp, pos, &m)) {
        pos = m.end;
        size_t ws = 0; /* last string.whitespace in text[prev_word.stop, m.start), 0: none */
        for (size_t i = m.start; i > prev_word.stop; i--)
            if (is_ascii_ws(sp->cp[i - 1])) {
                ws = i - 1 - prev_word.stop;
                break;
            }
        pk_slice word = {ws ? ws + prev_word.stop + 1 : prev_word.start, m.start};
        if (have_prev && prev_word.stop <= word.start)
            MG_FORWARD(consider(sp, &prev, prev_word, &last_break));
        prev = m;
        prev_word = word;
        have_prev = 1;
    }
    if (have_prev) MG_FORWARD(consider(sp, &prev, prev_word, &last_break));
    size_t end = sp->n;
    while (end > 0 && is_pyspace(sp->cp[end - 1])) end--;
    return push_slice(sp, last_break, end);
}

/* ---- realignment and output ---------------------------------------------------------- */

/* re_boundary_realignment.match(text[s]): match length, or -1. *kept = its length without
 * the trailing whitespace. */
static long realign_match(const mg_punkt_splitter *sp, pk_slice s, size_t *kept)
{
    size_t stop = s.stop < sp->n ? s.stop : sp->n;
    if (s.start >= stop) return -1;
    for (size_t k = s.start; k < stop && is_closing(sp->cp[k]); k++) {
        size_t j = k + 1; /* the quotes are text[s.start, j) */
        *kept = j - s.start;
        if (j < stop && is_ws(sp->cp[j])) {
            while (j < stop && is_ws(sp->cp[j])) j++;
            return (long)(j - s.start);
        }
        if (j == stop || (j + 1 < stop && sp->cp[j] == '-' && sp->cp[j + 1] == '-'))
            return (long)(j - s.start);
    }
    return -1;
}

static mg_status push_span(mg_punkt_splitter *sp, size_t base, size_t start, size_t stop)
{
    if (start > sp->n) start = sp->n;
    if (stop > sp->n) stop = sp->n;
    if (stop < start) stop = start;
    GROW(sp, spans, spans_cap, sp->n_spans + 1);
    sp->spans[sp->n_spans].start = base + sp->boff[start];
    sp->spans[sp->n_spans++].end = base + sp->boff[stop];
    return MG_OK;
}

static int nonempty(const mg_punkt_splitter *sp, pk_slice s)
{
    size_t stop = s.stop < sp->n ? s.stop : sp->n;
    return s.start < stop;
}

/* _realign_boundaries over the slices; spans at byte offset base. */
static mg_status realign(mg_punkt_splitter *sp, size_t base)
{
    size_t shift = 0;
    for (size_t i = 0; i < sp->n_slices; i++) {
        pk_slice s1 = {sp->slices[i].start + shift, sp->slices[i].stop};
        if (i + 1 == sp->n_slices) {
            if (nonempty(sp, s1)) MG_FORWARD(push_span(sp, base, s1.start, s1.stop));
            break;
        }
        size_t kept = 0;
        long len = realign_match(sp, sp->slices[i + 1], &kept);
        if (len >= 0) {
            MG_FORWARD(push_span(sp, base, s1.start, sp->slices[i + 1].start + kept));
            shift = (size_t)len;
        } else {
            shift = 0;
            if (nonempty(sp, s1)) MG_FORWARD(push_span(sp, base, s1.start, s1.stop));
        }
    }
    return MG_OK;
}

/* ---- public -------------------------------------------------------------------------- */

mg_status mg_punkt_splitter_create(mg_punkt_splitter **out, const mg_punkt *p, int keep_newlines)
{
    *out = mg_calloc(1, sizeof **out);
    if (!*out) return MG_ERR_NOMEM;
    (*out)->p = p;
    (*out)->keep_newlines = keep_newlines != 0;
    return MG_OK;
}

void mg_punkt_splitter_free(mg_punkt_splitter *s)
{
    if (!s) return;
    free(s->cp);
    free(s->boff);
    free(s->ctx);
    free(s->toks);
    free(s->arena);
    free(s->low);
    free(s->slices);
    free(s->spans);
    free(s);
}

/* Decodes up to max_chars code points of text[0, len) into sp->cp; returns bytes used. */
static mg_status decode_piece(mg_punkt_splitter *sp, const char *text, size_t len,
                              size_t max_chars, size_t *used)
{
    size_t most = max_chars && max_chars < len ? max_chars : len;
    GROW(sp, cp, cap, most + 1);
    GROW(sp, boff, boff_cap, most + 1);
    size_t i = 0, n = 0;
    while (i < len && n < most) {
        uint32_t c;
        size_t w = mg_utf8_decode((const uint8_t *)text + i, len - i, &c);
        sp->cp[n] = c;
        sp->boff[n++] = i;
        i += w;
    }
    sp->boff[n] = i;
    sp->n = n;
    *used = i;
    return MG_OK;
}

mg_status mg_punkt_split(mg_punkt_splitter *sp, const char *text, size_t len, size_t chunk_chars,
                         const mg_punkt_span **spans, size_t *n_spans)
{
    sp->n_spans = 0;
    *spans = NULL;
    *n_spans = 0;
    for (size_t base = 0; base < len;) {
        size_t used;
        MG_FORWARD(decode_piece(sp, text + base, len - base, chunk_chars, &used));
        MG_FORWARD(find_slices(sp));
        MG_FORWARD(realign(sp, base));
        base += used;
    }
    *spans = sp->spans;
    *n_spans = sp->n_spans;
    return MG_OK;
}

/* jsonl.c — extracts string (or list-of-strings) values of top-level keys from one JSON
 * Lines record.
 *
 * Contract (see mg/jsonl.h): accepts exactly what Python's json.loads accepts on the line
 * decoded as strict UTF-8 (NaN/Infinity/-Infinity, lone surrogate escapes, \u0000,
 * duplicate keys with the last one winning, whitespace " \t\n\r" around tokens), and
 * rejects the rest with MG_ERR_FORMAT. Deviations from CPython 3.11+: nesting deeper than
 * 2048 levels is an error here (Python raises RecursionError near 1000) and integers with
 * more than 4300 digits are an error as in Python (its int_max_str_digits default).
 *
 * Design: one pass, no allocation per line. A recursive-descent validator walks the whole
 * line; only the string values of requested keys are decoded (into one buffer per key,
 * reused across lines), everything else is validated in place. Runs of plain string bytes
 * are found 8 bytes at a time (SWAR) and copied with memcpy; non-ASCII bytes are checked
 * as strict UTF-8 (no overlongs, no encoded surrogates, nothing above U+10FFFF).
 * Lone surrogate escapes are written as 3-byte generalized UTF-8 (ED A0 80 .. ED BF BF).
 * A list value of a requested key is decoded into the key's buffer, its strings one after
 * the other, each followed by a NUL; the item table records their lengths while parsing
 * (the buffer may move) and gets its pointers once the line is accepted.
 */
#include "mg/jsonl.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "mg/strbuf.h"
#include "mg/unicode.h"

#define MAX_DEPTH 2048          /* as jansson's JSON_PARSER_MAX_DEPTH */
#define PY_INT_MAX_DIGITS 4300  /* CPython's default sys.int_info.default_max_str_digits */

enum vtype { V_NONE, V_STRING, V_NUMBER, V_BOOL, V_NULL, V_OBJECT, V_ARRAY };

typedef struct {
    char *data;
    size_t len, cap;
} outbuf;

typedef struct {
    enum vtype type;   /* type of the last value seen for this key, V_NONE if absent */
    size_t lone;       /* lone surrogates in the last string value (or list) */
    mg_jsonl_item one; /* the item of a string value */
    mg_jsonl_item *items; /* a list value's strings (str set by collect()) */
    size_t n_items, items_cap;
    size_t bad_item;   /* a list value: 1-based index of its first non-string, 0 if none */
    enum vtype bad_type;
} keyslot;

struct mg_jsonl {
    outbuf *bufs;      /* one per requested key */
    keyslot *slots;
    size_t nslots;
    outbuf scratch;    /* decoded object keys that contain escapes */
};

typedef struct {
    const uint8_t *s;
    size_t n;
    size_t pos;
    const char *err;   /* reason of the first error, NULL if none */
    size_t err_pos;
    int nomem;
} scanner;

/* ---- small helpers ------------------------------------------------------------------- */

static int fail(scanner *sc, size_t pos, const char *why)
{
    if (!sc->err) {
        sc->err = why;
        sc->err_pos = pos;
    }
    return -1;
}

static int buf_reserve(scanner *sc, outbuf *b, size_t extra)
{
    if (b->len + extra + 1 <= b->cap) return 0;
    if (mg_strbuf_grow(&b->data, &b->cap, b->len + extra + 1)) {
        sc->nomem = 1;
        return fail(sc, sc->pos, "out of memory");
    }
    return 0;
}

static int buf_append(scanner *sc, outbuf *b, const uint8_t *p, size_t len)
{
    if (buf_reserve(sc, b, len)) return -1;
    memcpy(b->data + b->len, p, len);
    b->len += len;
    return 0;
}

static inline int is_ws(uint8_t c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

static inline void skip_ws(scanner *sc)
{
    while (sc->pos < sc->n && is_ws(sc->s[sc->pos])) sc->pos++;
}

static inline int is_digit(uint8_t c) { return c >= '0' && c <= '9'; }

/* Length of the strict UTF-8 sequence at s (1..4), 0 if invalid. s[0] >= 0x80. */
static inline __attribute__((always_inline)) size_t utf8_seq(const uint8_t *s, size_t avail)
{
    uint8_t c = s[0], lo = 0x80, hi = 0xBF;
    size_t len;
    if (c >= 0xC2 && c <= 0xDF) len = 2;
    else if (c >= 0xE0 && c <= 0xEF) len = 3;
    else if (c >= 0xF0 && c <= 0xF4) len = 4;
    else return 0;
    if (c == 0xE0) lo = 0xA0;
    else if (c == 0xED) hi = 0x9F;
    else if (c == 0xF0) lo = 0x90;
    else if (c == 0xF4) hi = 0x8F;
    if (avail < len || s[1] < lo || s[1] > hi) return 0;
    for (size_t k = 2; k < len; k++)
        if ((s[k] & 0xC0) != 0x80) return 0;
    return len;
}

/* Are s[0..2] (s[0] >= 0x80) a valid 3-byte UTF-8 sequence? (CJK text is nearly all of
 * these.) A lead E0..EF with two continuation bytes, except E0 with s[1] < A0 (overlong)
 * and ED with s[1] >= A0 (a surrogate); for a continuation byte, bit 5 says >= A0. The
 * three bytes are tested as one word, without a branch between them. */
static inline int utf8_three(const uint8_t *s)
{
    uint32_t w = s[0] | (uint32_t)s[1] << 8 | (uint32_t)s[2] << 16;
    if ((w & 0xC0C0F0) != 0x8080E0) return 0;
    uint32_t low = w & 0x0F, high_s1 = w >> 13 & 1;
    return !(low == 0 && !high_s1) && !(low == 0x0D && high_s1);
}

/* Index of the first byte at or after i that is '"', '\\', < 0x20 or >= 0x80: 16 bytes a
 * step with SSE2 (every x86-64 has it; as signed bytes, < 0x20 also holds >= 0x80), then
 * 8 with SWAR, then one. */
static inline size_t skip_plain(const uint8_t *s, size_t i, size_t n)
{
#if defined(__SSE2__)
    const __m128i quote = _mm_set1_epi8('"'), bslash = _mm_set1_epi8('\\');
    const __m128i space = _mm_set1_epi8(0x20);
    while (i + 16 <= n) {
        __m128i x = _mm_loadu_si128((const __m128i *)(const void *)(s + i));
        __m128i m = _mm_or_si128(_mm_or_si128(_mm_cmpeq_epi8(x, quote), _mm_cmpeq_epi8(x, bslash)),
                                 _mm_cmplt_epi8(x, space));
        unsigned bits = (unsigned)_mm_movemask_epi8(m);
        if (bits) return i + (size_t)__builtin_ctz(bits);
        i += 16;
    }
#endif
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    const uint64_t ones = 0x0101010101010101ull, highs = 0x8080808080808080ull;
    while (i + 8 <= n) {
        uint64_t x;
        memcpy(&x, s + i, 8);
        uint64_t q = x ^ (ones * '"'), b = x ^ (ones * '\\');
        uint64_t m = ((q - ones) & ~q) | ((b - ones) & ~b) | ((x - ones * 0x20) & ~x) | x;
        m &= highs; /* the lowest flagged byte is exact: borrows only run upwards */
        if (m) return i + ((size_t)__builtin_ctzll(m) >> 3);
        i += 8;
    }
#endif
    while (i < n && s[i] >= 0x20 && s[i] < 0x80 && s[i] != '"' && s[i] != '\\') i++;
    return i;
}

/* ---- strings ------------------------------------------------------------------------ */

static int hex4(const uint8_t *p, unsigned *v)
{
    unsigned r = 0;
    for (int k = 0; k < 4; k++) {
        uint8_t c = p[k];
        unsigned d;
        if (c >= '0' && c <= '9') d = c - '0';
        else if (c >= 'a' && c <= 'f') d = c - 'a' + 10;
        else if (c >= 'A' && c <= 'F') d = c - 'A' + 10;
        else return -1;
        r = r << 4 | d;
    }
    *v = r;
    return 0;
}

/* Encodes cp (any value up to 0x10FFFF, surrogates included) as (generalized) UTF-8. */
static size_t put_utf8(uint8_t *o, unsigned cp)
{
    if (cp < 0x80) {
        o[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        o[0] = (uint8_t)(0xC0 | cp >> 6);
        o[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp < 0x10000) {
        o[0] = (uint8_t)(0xE0 | cp >> 12);
        o[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        o[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    o[0] = (uint8_t)(0xF0 | cp >> 18);
    o[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    o[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    o[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

/* \uXXXX at sc->pos (pointing at the backslash), joining a high+low surrogate pair the
 * way CPython does. Sets *cp and *lone (1 for a lone surrogate). */
static int unicode_escape(scanner *sc, unsigned *cp, int *lone)
{
    const uint8_t *s = sc->s;
    size_t i = sc->pos;
    unsigned c, c2;
    if (i + 6 > sc->n || hex4(s + i + 2, &c)) return fail(sc, i + 1, "invalid \\uXXXX escape");
    i += 6;
    if (c >= 0xD800 && c <= 0xDBFF && i + 6 <= sc->n && s[i] == '\\' && s[i + 1] == 'u') {
        if (hex4(s + i + 2, &c2)) return fail(sc, i + 1, "invalid \\uXXXX escape");
        if (c2 >= 0xDC00 && c2 <= 0xDFFF) {
            c = 0x10000 + ((c - 0xD800) << 10) + (c2 - 0xDC00);
            i += 6;
        }
    }
    *lone = c >= 0xD800 && c <= 0xDFFF;
    *cp = c;
    sc->pos = i;
    return 0;
}

/* One escape at sc->pos (the backslash); appends its bytes to out if out != NULL. */
static int escape(scanner *sc, outbuf *out, size_t *lone)
{
    static const uint8_t simple[256] = {['"'] = '"', ['\\'] = '\\', ['/'] = '/', ['b'] = '\b',
                                        ['f'] = '\f', ['n'] = '\n', ['r'] = '\r', ['t'] = '\t'};
    size_t i = sc->pos; /* i + 1 < n: checked by the caller */
    uint8_t e = sc->s[i + 1];
    if (e == 'u') {
        unsigned cp;
        int is_lone;
        if (unicode_escape(sc, &cp, &is_lone)) return -1;
        *lone += (size_t)is_lone;
        if (!out) return 0;
        if (buf_reserve(sc, out, 4)) return -1;
        out->len += put_utf8((uint8_t *)out->data + out->len, cp);
        return 0;
    }
    if (!simple[e]) return fail(sc, i, "invalid \\escape");
    sc->pos = i + 2;
    return out ? buf_append(sc, out, &simple[e], 1) : 0;
}

/* Scans a string whose opening quote is at sc->pos; leaves pos after the closing quote.
 * Decodes into out (appending) when out != NULL. *escaped is set if it had escapes. */
static int scan_string(scanner *sc, outbuf *out, size_t *lone, int *escaped)
{
    const uint8_t *s = sc->s;
    size_t n = sc->n, start = sc->pos, i = start + 1;
    for (;;) {
        size_t run = i;
        for (;;) {
            i = skip_plain(s, i, n);
            if (i >= n || s[i] < 0x80) break;
            do { /* a run of non-ASCII characters (CJK text): no SWAR between them */
                if (i + 3 <= n && utf8_three(s + i)) {
                    i += 3;
                    continue;
                }
                size_t k = utf8_seq(s + i, n - i);
                if (!k) return fail(sc, i, "invalid UTF-8");
                i += k;
            } while (i < n && s[i] >= 0x80);
        }
        if (out && i > run && buf_append(sc, out, s + run, i - run)) return -1;
        if (i >= n) return fail(sc, start, "unterminated string");
        if (s[i] == '"') break;
        if (s[i] != '\\') return fail(sc, i, "invalid control character in string");
        if (i + 1 >= n) return fail(sc, start, "unterminated string");
        *escaped = 1;
        sc->pos = i;
        if (escape(sc, out, lone)) return -1;
        i = sc->pos;
    }
    sc->pos = i + 1;
    return 0;
}

/* ---- other values ------------------------------------------------------------------- */

static int literal(scanner *sc, const char *word)
{
    size_t len = strlen(word);
    if (sc->n - sc->pos < len || memcmp(sc->s + sc->pos, word, len) != 0)
        return fail(sc, sc->pos, "expecting value");
    sc->pos += len;
    return 0;
}

static size_t digits(scanner *sc)
{
    size_t from = sc->pos;
    while (sc->pos < sc->n && is_digit(sc->s[sc->pos])) sc->pos++;
    return sc->pos - from;
}

/* -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)? or -Infinity; a '.' or 'e' that does not
 * continue the number ends it (the caller then sees an unexpected character), as in
 * Python's scanner. */
static int number(scanner *sc)
{
    const uint8_t *s = sc->s;
    size_t start = sc->pos;
    if (s[sc->pos] == '-') {
        sc->pos++;
        if (sc->pos < sc->n && s[sc->pos] == 'I') return literal(sc, "Infinity");
    }
    if (sc->pos >= sc->n || !is_digit(s[sc->pos])) return fail(sc, start, "expecting value");
    size_t nd = s[sc->pos] == '0' ? (sc->pos++, 1) : digits(sc);
    int is_int = 1;
    if (sc->pos + 1 < sc->n && s[sc->pos] == '.' && is_digit(s[sc->pos + 1])) {
        sc->pos++;
        digits(sc);
        is_int = 0;
    }
    if (sc->pos < sc->n && (s[sc->pos] == 'e' || s[sc->pos] == 'E')) {
        size_t e = sc->pos + 1;
        if (e < sc->n && (s[e] == '+' || s[e] == '-')) e++;
        if (e < sc->n && is_digit(s[e])) {
            sc->pos = e;
            digits(sc);
            is_int = 0;
        }
    }
    if (is_int && nd > PY_INT_MAX_DIGITS)
        return fail(sc, start, "integer with more than 4300 digits (Python's limit)");
    return 0;
}

static int value(scanner *sc, int depth);

static int expect_value(scanner *sc, int depth)
{
    skip_ws(sc);
    if (sc->pos >= sc->n) return fail(sc, sc->pos, "expecting value");
    return value(sc, depth);
}

static int array(scanner *sc, int depth)
{
    if (depth > MAX_DEPTH) return fail(sc, sc->pos, "nesting too deep");
    sc->pos++;
    skip_ws(sc);
    if (sc->pos < sc->n && sc->s[sc->pos] == ']') return sc->pos++, 0;
    for (;;) {
        if (expect_value(sc, depth)) return -1;
        skip_ws(sc);
        if (sc->pos >= sc->n) return fail(sc, sc->pos, "expecting ',' delimiter");
        uint8_t c = sc->s[sc->pos++];
        if (c == ']') return 0;
        if (c != ',') return fail(sc, sc->pos - 1, "expecting ',' delimiter");
    }
}

/* Key and ':' of an object member, sc->pos at the first byte after '{' or ','; the key
 * spans [key_at, key_end) including its quotes. */
static int member_key(scanner *sc, size_t *key_at, size_t *key_end, int *escaped)
{
    skip_ws(sc);
    if (sc->pos >= sc->n || sc->s[sc->pos] != '"')
        return fail(sc, sc->pos, "expecting property name enclosed in double quotes");
    size_t lone = 0;
    *key_at = sc->pos;
    *escaped = 0;
    if (scan_string(sc, NULL, &lone, escaped)) return -1;
    *key_end = sc->pos;
    skip_ws(sc);
    if (sc->pos >= sc->n || sc->s[sc->pos] != ':')
        return fail(sc, sc->pos, "expecting ':' delimiter");
    sc->pos++;
    return 0;
}

/* After a member value: 1 at '}', 0 at ',', -1 on error. */
static int member_end(scanner *sc)
{
    skip_ws(sc);
    if (sc->pos >= sc->n) return fail(sc, sc->pos, "expecting ',' delimiter");
    uint8_t c = sc->s[sc->pos++];
    if (c == '}') return 1;
    if (c != ',') return fail(sc, sc->pos - 1, "expecting ',' delimiter");
    return 0;
}

static int object(scanner *sc, int depth)
{
    if (depth > MAX_DEPTH) return fail(sc, sc->pos, "nesting too deep");
    sc->pos++;
    skip_ws(sc);
    if (sc->pos < sc->n && sc->s[sc->pos] == '}') return sc->pos++, 0;
    for (;;) {
        size_t at, to;
        int escaped, end;
        if (member_key(sc, &at, &to, &escaped) || expect_value(sc, depth)) return -1;
        if ((end = member_end(sc)) != 0) return end < 0 ? -1 : 0;
    }
}

static int value(scanner *sc, int depth)
{
    size_t lone = 0;
    int escaped = 0;
    switch (sc->s[sc->pos]) {
    case '{': return object(sc, depth + 1);
    case '[': return array(sc, depth + 1);
    case '"': return scan_string(sc, NULL, &lone, &escaped);
    case 't': return literal(sc, "true");
    case 'f': return literal(sc, "false");
    case 'n': return literal(sc, "null");
    case 'N': return literal(sc, "NaN");
    case 'I': return literal(sc, "Infinity");
    default: return number(sc);
    }
}

static enum vtype type_of(uint8_t c)
{
    switch (c) {
    case '"': return V_STRING;
    case '{': return V_OBJECT;
    case '[': return V_ARRAY;
    case 't':
    case 'f': return V_BOOL;
    case 'n': return V_NULL;
    default: return V_NUMBER;
    }
}

/* "key \"K\" is <this>, expected a string" */
static const char *type_phrase(enum vtype t)
{
    static const char *const names[] = {"missing", "a string", "a number", "a boolean",
                                        "null",    "an object", "an array"};
    return names[t];
}

/* ---- the top-level object ----------------------------------------------------------- */

typedef struct {
    mg_jsonl *p;
    const char *const *keys;
    size_t nkeys;
} request;

/* Index of the requested key equal to the key in [key_at, key_end), or nkeys. */
static size_t match_key(scanner *sc, const request *rq, size_t key_at, size_t key_end,
                        int escaped)
{
    const uint8_t *k = sc->s + key_at + 1;
    size_t klen = key_end - key_at - 2;
    if (escaped) {
        outbuf *sb = &rq->p->scratch;
        size_t lone = 0, save = sc->pos;
        int esc = 0;
        sb->len = 0;
        sc->pos = key_at;
        if (scan_string(sc, sb, &lone, &esc)) return rq->nkeys;
        sc->pos = save;
        k = (const uint8_t *)sb->data;
        klen = sb->len;
    }
    for (size_t i = 0; i < rq->nkeys; i++)
        if (strlen(rq->keys[i]) == klen && memcmp(rq->keys[i], k, klen) == 0) return i;
    return rq->nkeys;
}

/* One element (at sc->pos, index k from 1) of a requested list: a string is decoded into b
 * and NUL-terminated, anything else is validated and remembered as the first bad item. */
static int list_item(scanner *sc, outbuf *b, keyslot *slot, size_t k)
{
    if (sc->s[sc->pos] != '"') {
        if (!slot->bad_item) {
            slot->bad_item = k;
            slot->bad_type = type_of(sc->s[sc->pos]);
        }
        return value(sc, 2);
    }
    if (slot->n_items == slot->items_cap) {
        size_t cap = slot->items_cap ? 2 * slot->items_cap : 16;
        mg_jsonl_item *it = realloc(slot->items, cap * sizeof *it);
        if (!it) {
            sc->nomem = 1;
            return fail(sc, sc->pos, "out of memory");
        }
        slot->items = it;
        slot->items_cap = cap;
    }
    size_t start = b->len, lone = 0;
    int escaped = 0;
    if (scan_string(sc, b, &lone, &escaped) || buf_reserve(sc, b, 0)) return -1;
    b->data[b->len++] = 0;
    slot->items[slot->n_items++] = (mg_jsonl_item){NULL, b->len - 1 - start, lone};
    slot->lone += lone;
    return 0;
}

/* A requested list (sc->pos at '['): as array() with its elements at depth 2, strings
 * decoded. */
static int string_list(scanner *sc, outbuf *b, keyslot *slot)
{
    b->len = 0;
    slot->lone = slot->n_items = slot->bad_item = 0;
    sc->pos++;
    skip_ws(sc);
    if (sc->pos < sc->n && sc->s[sc->pos] == ']') return sc->pos++, 0;
    for (size_t k = 1;; k++) {
        skip_ws(sc);
        if (sc->pos >= sc->n) return fail(sc, sc->pos, "expecting value");
        if (list_item(sc, b, slot, k)) return -1;
        skip_ws(sc);
        if (sc->pos >= sc->n) return fail(sc, sc->pos, "expecting ',' delimiter");
        uint8_t c = sc->s[sc->pos++];
        if (c == ']') return 0;
        if (c != ',') return fail(sc, sc->pos - 1, "expecting ',' delimiter");
    }
}

/* Value of requested key i at sc->pos: decoded if a string or a list, else validated and
 * typed. */
static int requested_value(scanner *sc, const request *rq, size_t i)
{
    skip_ws(sc);
    if (sc->pos >= sc->n) return fail(sc, sc->pos, "expecting value");
    keyslot *slot = &rq->p->slots[i];
    slot->type = type_of(sc->s[sc->pos]);
    if (slot->type == V_ARRAY) return string_list(sc, &rq->p->bufs[i], slot);
    if (slot->type != V_STRING) return value(sc, 1);
    outbuf *b = &rq->p->bufs[i];
    int escaped = 0;
    b->len = 0;
    slot->lone = 0;
    if (scan_string(sc, b, &slot->lone, &escaped)) return -1;
    if (buf_reserve(sc, b, 0)) return -1;
    b->data[b->len] = 0;
    return 0;
}

static int top_object(scanner *sc, const request *rq)
{
    sc->pos++;
    skip_ws(sc);
    if (sc->pos < sc->n && sc->s[sc->pos] == '}') return sc->pos++, 0;
    for (;;) {
        size_t at, to;
        int escaped, end;
        if (member_key(sc, &at, &to, &escaped)) return -1;
        size_t i = match_key(sc, rq, at, to, escaped);
        if (sc->err) return -1;
        if (i < rq->nkeys ? requested_value(sc, rq, i) : expect_value(sc, 1)) return -1;
        if ((end = member_end(sc)) != 0) return end < 0 ? -1 : 0;
    }
}

/* ---- public API ----------------------------------------------------------------------- */

mg_status mg_jsonl_create(mg_jsonl **p)
{
    *p = mg_calloc(1, sizeof **p);
    return *p ? MG_OK : MG_ERR_NOMEM;
}

void mg_jsonl_free(mg_jsonl *p)
{
    if (!p) return;
    for (size_t i = 0; i < p->nslots; i++) {
        free(p->bufs[i].data);
        free(p->slots[i].items);
    }
    free(p->bufs);
    free(p->slots);
    free(p->scratch.data);
    free(p);
}

static mg_status ensure_slots(mg_jsonl *p, size_t n)
{
    if (n <= p->nslots) return MG_OK;
    outbuf *b = mg_realloc(p->bufs, n * sizeof *b);
    if (!b) return MG_ERR_NOMEM;
    p->bufs = b;
    memset(b + p->nslots, 0, (n - p->nslots) * sizeof *b);
    keyslot *k = mg_realloc(p->slots, n * sizeof *k);
    if (!k) return MG_ERR_NOMEM;
    p->slots = k;
    memset(k + p->nslots, 0, (n - p->nslots) * sizeof *k);
    p->nslots = n;
    return MG_OK;
}

static mg_status parse_error(const scanner *sc)
{
    if (sc->nomem) return mg_error_set(MG_ERR_NOMEM, "out of memory decoding a JSON line");
    size_t bad = mg_utf8_validate(sc->s, sc->n); /* Python decodes before it parses */
    if (bad < sc->n) return mg_error_set(MG_ERR_FORMAT, "invalid UTF-8 at column %zu", bad + 1);
    return mg_error_set(MG_ERR_FORMAT, "invalid JSON at column %zu: %s", sc->err_pos + 1,
                        sc->err);
}

/* Parses the whole line; 0 if it is one valid JSON value (requested keys recorded when it
 * is an object), -1 on error. *is_object tells which. */
static int parse_line(scanner *sc, const request *rq, int *is_object)
{
    if (sc->n >= 3 && memcmp(sc->s, "\xEF\xBB\xBF", 3) == 0)
        return fail(sc, 0, "unexpected UTF-8 BOM");
    skip_ws(sc);
    *is_object = sc->s[sc->pos] == '{';
    if (*is_object ? top_object(sc, rq) : value(sc, 0)) return -1;
    skip_ws(sc);
    if (sc->pos < sc->n) return fail(sc, sc->pos, "extra data");
    return 0;
}

/* The value of a list: item pointers into the key's buffer (no longer moving). */
static mg_jsonl_value list_value(keyslot *s, const outbuf *b)
{
    const char *at = b->data;
    for (size_t k = 0; k < s->n_items; k++) {
        s->items[k].str = at;
        at += s->items[k].len + 1;
    }
    return (mg_jsonl_value){NULL, 0, s->lone, 1, s->n_items, s->items};
}

static mg_status collect(mg_jsonl *p, const char *const *keys, size_t n, mg_jsonl_value *out)
{
    for (size_t i = 0; i < n; i++) {
        size_t j = i;
        for (size_t k = 0; k < i; k++) /* a key requested twice: matches went to the first */
            if (strcmp(keys[k], keys[i]) == 0) j = k;
        keyslot *s = &p->slots[j];
        if (s->type == V_NONE) return mg_error_set(MG_ERR_FORMAT, "missing key \"%s\"", keys[i]);
        if (s->type == V_ARRAY && s->bad_item)
            return mg_error_set(MG_ERR_FORMAT, "key \"%s\" item %zu is %s, expected a string",
                                keys[i], s->bad_item, type_phrase(s->bad_type));
        if (s->type == V_ARRAY) {
            out[i] = list_value(s, &p->bufs[j]);
            continue;
        }
        if (s->type != V_STRING)
            return mg_error_set(MG_ERR_FORMAT, "key \"%s\" is %s, expected a string", keys[i],
                                type_phrase(s->type));
        s->one = (mg_jsonl_item){p->bufs[j].data, p->bufs[j].len, s->lone};
        out[i] = (mg_jsonl_value){s->one.str, s->one.len, s->lone, 0, 1, &s->one};
    }
    return MG_OK;
}

mg_status mg_jsonl_extract(mg_jsonl *p, const char *line, size_t len, const char *const *keys,
                           size_t n, mg_jsonl_value *out)
{
    MG_FORWARD(ensure_slots(p, n));
    for (size_t i = 0; i < n; i++) {
        p->slots[i].type = V_NONE;
        out[i] = (mg_jsonl_value){NULL, 0, 0, 0, 0, NULL};
    }
    scanner sc = {(const uint8_t *)line, len, 0, NULL, 0, 0};
    skip_ws(&sc);
    if (sc.pos == len) return mg_error_set(MG_ERR_FORMAT, "empty line");
    request rq = {p, keys, n};
    int is_object;
    if (parse_line(&sc, &rq, &is_object)) return parse_error(&sc);
    if (!is_object) return mg_error_set(MG_ERR_FORMAT, "not a JSON object");
    return collect(p, keys, n, out);
}

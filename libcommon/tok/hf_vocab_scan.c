/* hf_vocab_scan.c — model.vocab / model.merges of a tokenizer.json in one pass; see
 * hf_vocab_scan.h. Everything outside the values taken is skipped, not checked: jansson
 * checks it when it parses the rest. */
#include "tok/hf_vocab_scan.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mg/grow.h"
#include "mg/unicode.h"

typedef struct {
    const uint8_t *s;
    size_t n, pos;
    char *arena; /* decoded strings (never longer than the text: see put_string) */
    size_t used;
    mg_hf_str *vocab;
    int64_t *ids;
    size_t n_vocab, cap_vocab, cap_ids;
    mg_hf_str *ml, *mr;
    size_t n_merges, cap_ml, cap_mr;
    size_t at[2], end[2]; /* value ranges: [0] vocab, [1] merges; end 0 if absent */
    int nomem;
} scan;

/* ---- lexing ---- */

static inline void ws(scan *c)
{
    while (c->pos < c->n) {
        uint8_t b = c->s[c->pos];
        if (b == ' ' && c->pos + 8 <= c->n) { /* indentation: 8 bytes at a time */
            uint64_t w;
            memcpy(&w, c->s + c->pos, 8);
            uint64_t other = w ^ 0x2020202020202020ULL; /* non-zero bytes: not a space */
            c->pos += other ? (size_t)__builtin_ctzll(other) / 8 : 8;
            continue;
        }
        if (b != ' ' && b != '\n' && b != '\r' && b != '\t') return;
        c->pos++;
    }
}

static int eat(scan *c, uint8_t want)
{
    ws(c);
    if (c->pos >= c->n || c->s[c->pos] != want) return 0;
    c->pos++;
    return 1;
}

static int peek(scan *c)
{
    ws(c);
    return c->pos < c->n ? c->s[c->pos] : -1;
}

/* A string, not decoded; *escaped = 1 if it holds a backslash. 0 if unterminated. */
static int skip_string(scan *c, int *escaped)
{
    *escaped = 0;
    if (!eat(c, '"')) return 0;
    while (c->pos < c->n) {
        uint8_t b = c->s[c->pos++];
        if (b == '"') return 1;
        if (b == '\\') {
            *escaped = 1;
            c->pos++;
        }
    }
    return 0;
}

/* Any value, brackets balanced, strings skipped whole; 0 at the end of the text. */
static int skip_value(scan *c)
{
    size_t depth = 0;
    int esc;
    do {
        int b = peek(c);
        if (b < 0) return 0;
        if (b == '"') {
            if (!skip_string(c, &esc)) return 0;
        } else if (b == '{' || b == '[') {
            depth++, c->pos++;
        } else if (b == '}' || b == ']') {
            if (depth == 0) return 0;
            depth--, c->pos++;
        } else {
            c->pos++;
        }
    } while (depth > 0 || (c->pos < c->n && peek(c) != ',' && peek(c) != '}' &&
                           peek(c) != ']' && peek(c) != -1));
    return 1;
}

static int hex4(const uint8_t *p, unsigned *v)
{
    *v = 0;
    for (int i = 0; i < 4; i++) {
        uint8_t h = p[i];
        unsigned d = h >= '0' && h <= '9'   ? h - (unsigned)'0'
                     : h >= 'a' && h <= 'f' ? h - 'a' + 10u
                     : h >= 'A' && h <= 'F' ? h - 'A' + 10u
                                            : 16u;
        if (d == 16) return 0;
        *v = *v << 4 | d;
    }
    return 1;
}

/* \uXXXX (a surrogate pair joined) at c->pos (after the 'u'); 0 for \u0000, a lone
 * surrogate or a bad escape. */
static int unicode_escape(scan *c, uint32_t *cp)
{
    unsigned hi, lo;
    if (c->n - c->pos < 4 || !hex4(c->s + c->pos, &hi) || hi == 0) return 0;
    c->pos += 4;
    if (hi < 0xD800 || hi > 0xDFFF) {
        *cp = hi;
        return 1;
    }
    if (hi > 0xDBFF || c->n - c->pos < 6 || c->s[c->pos] != '\\' || c->s[c->pos + 1] != 'u' ||
        !hex4(c->s + c->pos + 2, &lo) || lo < 0xDC00 || lo > 0xDFFF)
        return 0;
    c->pos += 6;
    *cp = 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
    return 1;
}

/* One escape after its backslash, appended to o; 0 if outside the subset. */
static int put_escape(scan *c, uint8_t *o, size_t *k)
{
    static const char from[] = "\"\\/bfnrt", to[] = "\"\\/\b\f\n\r\t";
    if (c->pos >= c->n) return 0;
    uint8_t e = c->s[c->pos++];
    if (e == 'u') {
        uint32_t cp;
        if (!unicode_escape(c, &cp)) return 0;
        *k += mg_utf8_encode(cp, o + *k);
        return 1;
    }
    const char *f = e ? memchr(from, e, sizeof from - 1) : NULL;
    if (!f) return 0;
    o[(*k)++] = (uint8_t)to[f - from];
    return 1;
}

/* A string decoded into the arena, NUL-terminated (the decoded text plus its NUL never
 * outgrows the quoted text). 0 if outside the subset. */
static int put_string(scan *c, mg_hf_str *out)
{
    if (!eat(c, '"')) return 0;
    uint8_t *o = (uint8_t *)c->arena + c->used;
    size_t k = 0;
    while (c->pos < c->n) {
        uint8_t b = c->s[c->pos];
        if (b >= 0x20 && b < 0x80 && b != '"' && b != '\\') { /* most bytes: copied */
            o[k++] = b;
            c->pos++;
            continue;
        }
        if (b == '"') {
            c->pos++;
            o[k] = 0;
            *out = (mg_hf_str){(const char *)o, k};
            c->used += k + 1;
            return 1;
        }
        if (b < 0x20) return 0;
        if (b == '\\') {
            c->pos++;
            if (!put_escape(c, o, &k)) return 0;
            continue;
        }
        if (b >= 0xC2 && b < 0xE0 && c->pos + 1 < c->n && (c->s[c->pos + 1] & 0xC0) == 0x80) {
            o[k++] = b; /* a 2-byte character (byte-level vocabularies' U+0100-U+0143) */
            o[k++] = c->s[c->pos + 1];
            c->pos += 2;
            continue;
        }
        uint32_t cp;
        size_t m = mg_utf8_decode(c->s + c->pos, c->n - c->pos, &cp);
        if (cp == MG_UC_BAD) return 0;
        for (size_t i = 0; i < m; i++) o[k++] = c->s[c->pos++];
    }
    return 0;
}

/* A token id: 0 or [1-9][0-9]* up to INT32_MAX. */
static int put_id(scan *c, int64_t *id)
{
    ws(c);
    size_t p = c->pos;
    int64_t v = 0;
    while (p < c->n && c->s[p] >= '0' && c->s[p] <= '9' && p - c->pos < 11)
        v = v * 10 + (c->s[p++] - '0');
    size_t digits = p - c->pos;
    if (digits == 0 || digits > 10 || (digits > 1 && c->s[c->pos] == '0') || v > INT32_MAX)
        return 0;
    c->pos = p;
    *id = v;
    return 1;
}

/* ---- the two values ---- */

/* Room for one more entry in two parallel arrays. */
static int room(scan *c, void *a, size_t *cap_a, size_t ea, void *b, size_t *cap_b, size_t eb,
                size_t n)
{
    if (mg_grow(a, cap_a, n + 1, ea, 1 << 12) == MG_OK &&
        mg_grow(b, cap_b, n + 1, eb, 1 << 12) == MG_OK)
        return 1;
    c->nomem = 1;
    return 0;
}

static int scan_vocab(scan *c)
{
    if (!eat(c, '{')) return 0;
    if (peek(c) == '}') return c->pos++, 1;
    do {
        if (!room(c, &c->vocab, &c->cap_vocab, sizeof *c->vocab, &c->ids, &c->cap_ids,
                  sizeof *c->ids, c->n_vocab) ||
            !put_string(c, &c->vocab[c->n_vocab]) || !eat(c, ':') ||
            !put_id(c, &c->ids[c->n_vocab]))
            return 0;
        c->n_vocab++;
    } while (eat(c, ','));
    return eat(c, '}');
}

/* One merge, "a b" (split at its one space, which becomes the NUL of a) or ["a", "b"]. */
static int put_merge(scan *c, mg_hf_str *l, mg_hf_str *r)
{
    if (peek(c) == '[')
        return eat(c, '[') && put_string(c, l) && eat(c, ',') && put_string(c, r) &&
               eat(c, ']');
    mg_hf_str s;
    if (!put_string(c, &s)) return 0;
    char *sp = c->arena + (s.s - c->arena); /* the arena is ours to write */
    sp = memchr(sp, ' ', s.len);
    if (!sp || memchr(sp + 1, ' ', s.len - (size_t)(sp + 1 - s.s))) return 0;
    *sp = 0;
    *l = (mg_hf_str){s.s, (size_t)(sp - s.s)};
    *r = (mg_hf_str){sp + 1, s.len - l->len - 1};
    return 1;
}

static int scan_merges(scan *c)
{
    if (!eat(c, '[')) return 0;
    if (peek(c) == ']') return c->pos++, 1;
    do {
        if (!room(c, &c->ml, &c->cap_ml, sizeof *c->ml, &c->mr, &c->cap_mr, sizeof *c->mr,
                  c->n_merges) ||
            !put_merge(c, &c->ml[c->n_merges], &c->mr[c->n_merges]))
            return 0;
        c->n_merges++;
    } while (eat(c, ','));
    return eat(c, ']');
}

/* No vocabulary string twice (FNV-1a into an open-addressed table of indices). */
static int vocab_unique(scan *c)
{
    size_t cap = 16;
    while (cap < 2 * c->n_vocab) cap *= 2;
    uint32_t *slot = calloc(cap, sizeof *slot); /* index + 1; 0 = empty */
    if (!slot) return c->nomem = 1, 0;
    int ok = 1;
    for (size_t i = 0; ok && i < c->n_vocab; i++) {
        const mg_hf_str *v = &c->vocab[i];
        uint64_t h = 1469598103934665603u;
        for (size_t j = 0; j < v->len; j++) h = (h ^ (uint8_t)v->s[j]) * 1099511628211u;
        size_t k = (size_t)h & (cap - 1);
        for (; slot[k]; k = (k + 1) & (cap - 1)) {
            const mg_hf_str *w = &c->vocab[slot[k] - 1];
            if (w->len == v->len && memcmp(w->s, v->s, v->len) == 0) ok = 0;
        }
        slot[k] = (uint32_t)i + 1;
    }
    free(slot);
    return ok;
}

/* ---- walking to them ---- */

/* A member key without escapes and its colon; *name / *len: the key's text. */
static int member_key(scan *c, const char **name, size_t *len)
{
    int esc;
    ws(c);
    size_t k0 = c->pos;
    if (!skip_string(c, &esc) || esc) return 0;
    *name = (const char *)c->s + k0 + 1;
    *len = c->pos - k0 - 2;
    return eat(c, ':');
}

static int name_is(const char *name, size_t len, const char *want)
{
    return len == strlen(want) && memcmp(name, want, len) == 0;
}

/* The members of the model object: vocab (an object) and merges (an array) taken, the
 * rest skipped. */
static int walk_model(scan *c)
{
    if (!eat(c, '{')) return 0;
    if (peek(c) == '}') return c->pos++, 1;
    do {
        const char *name;
        size_t len;
        if (!member_key(c, &name, &len)) return 0;
        int which = name_is(name, len, "vocab") ? 0 : name_is(name, len, "merges") ? 1 : -1;
        if (which < 0) {
            if (!skip_value(c)) return 0;
            continue;
        }
        if (c->end[which]) return 0; /* twice */
        c->at[which] = (ws(c), c->pos);
        if (!(which == 0 ? scan_vocab(c) : scan_merges(c))) return 0;
        c->end[which] = c->pos;
    } while (eat(c, ','));
    return eat(c, '}');
}

/* The top-level object: its one "model" member walked, the others skipped. */
static int walk_top(scan *c)
{
    int seen = 0;
    if (!eat(c, '{')) return 0;
    if (peek(c) == '}') return 0;
    do {
        const char *name;
        size_t len;
        if (!member_key(c, &name, &len)) return 0;
        if (!name_is(name, len, "model")) {
            if (!skip_value(c)) return 0;
            continue;
        }
        if (seen++ || !walk_model(c)) return 0;
    } while (eat(c, ','));
    return eat(c, '}') && seen && c->end[0];
}

/* ---- the rest, for jansson ---- */

/* The value s[at, end): its lines and the characters on its last line. */
static void value_shape(const scan *c, size_t at, size_t end, size_t *lines, size_t *col)
{
    const uint8_t *p = c->s + at, *e = c->s + end, *last = p, *nl;
    *lines = *col = 0;
    while ((nl = memchr(p, '\n', (size_t)(e - p))) != NULL) (*lines)++, p = last = nl + 1;
    for (p = last; p < e; p++) *col += (*p & 0xC0) != 0x80;
}

static const char *const open_marker[2] = {"{\"" MG_HF_SCAN_MARKER "\":0",
                                           "[\"" MG_HF_SCAN_MARKER "\""};

/* Drops a taken value whose marker does not fit (a one-line value shorter than it: jansson
 * parses that one). */
static void drop_short(scan *c, int w)
{
    size_t lines, col;
    value_shape(c, c->at[w], c->end[w], &lines, &col);
    if (!c->end[w] || lines > 0 || col > strlen(open_marker[w])) return;
    c->end[w] = 0;
    if (w == 0) c->n_vocab = 0;
    else c->n_merges = 0;
}

/* Appends the marker standing for a taken value: open marker, as many newlines as the
 * value, then spaces up to the column where the value ended, then the closing bracket. */
static void put_marker(const scan *c, int w, char *o, size_t *k)
{
    size_t lines, col, m = strlen(open_marker[w]);
    value_shape(c, c->at[w], c->end[w], &lines, &col);
    memcpy(o + *k, open_marker[w], m);
    *k += m;
    memset(o + *k, '\n', lines);
    *k += lines;
    size_t pad = (lines ? col : col - m) - 1;
    memset(o + *k, ' ', pad);
    *k += pad;
    o[(*k)++] = w == 0 ? '}' : ']';
}

/* The text with the taken values replaced by their markers; 0 if none is left. */
static int make_rest(scan *c, char **rest, size_t *rest_len)
{
    drop_short(c, 0);
    drop_short(c, 1);
    if (!c->end[0] && !c->end[1]) return 0;
    char *o = malloc(c->n + 64); /* a marker outgrows its value by < 32 bytes */
    if (!o) return c->nomem = 1, 0;
    int first = !c->end[1] || (c->end[0] && c->at[0] < c->at[1]) ? 0 : 1;
    size_t k = 0, from = 0;
    for (int i = 0; i < 2; i++) {
        int w = i == 0 ? first : 1 - first;
        if (!c->end[w]) continue;
        memcpy(o + k, c->s + from, c->at[w] - from);
        k += c->at[w] - from;
        put_marker(c, w, o, &k);
        from = c->end[w];
    }
    memcpy(o + k, c->s + from, c->n - from);
    *rest = o;
    *rest_len = k + c->n - from;
    return 1;
}

/* Hands what was taken to d (the arena becomes d's), or frees it all: *ok says which. */
static mg_status finish(scan *c, mg_hf_desc *d, size_t len, int *ok, char **rest)
{
    mg_status st = *ok ? mg_hf_desc_own_text(d, c->arena) : MG_OK; /* frees it on failure */
    if (st != MG_OK) c->arena = NULL, *ok = 0;
    if (!*ok) {
        int nomem = c->nomem || (len && !c->arena && st == MG_OK);
        free(c->arena);
        free(c->vocab), free(c->ids), free(c->ml), free(c->mr);
        if (rest) free(*rest), *rest = NULL;
        if (st != MG_OK) return st;
        if (nomem)
            return mg_error_set(MG_ERR_NOMEM, "%s: out of memory scanning the vocabulary",
                                d->file);
        return MG_OK;
    }
    if (c->end[0]) d->vocab = c->vocab, d->vocab_id = c->ids, d->n_vocab = c->n_vocab;
    else free(c->vocab), free(c->ids);
    if (c->end[1]) d->merge_l = c->ml, d->merge_r = c->mr, d->n_merges = c->n_merges;
    else free(c->ml), free(c->mr);
    d->scanned_vocab = c->end[0] != 0;
    d->scanned_merges = c->end[1] != 0;
    return MG_OK;
}

mg_status mg_hf_scan_model(mg_hf_desc *d, const char *buf, size_t len, char **rest,
                           size_t *rest_len)
{
    scan c = {.s = (const uint8_t *)buf, .n = len};
    *rest = NULL;
    *rest_len = 0;
    c.arena = malloc(len ? len : 1);
    int ok = c.arena && walk_top(&c) && vocab_unique(&c) && make_rest(&c, rest, rest_len);
    return finish(&c, d, len, &ok, rest);
}

mg_status mg_hf_scan_vocab_json(mg_hf_desc *d, const char *buf, size_t len)
{
    scan c = {.s = (const uint8_t *)buf, .n = len};
    c.arena = malloc(len ? len : 1);
    int ok = c.arena && (ws(&c), c.at[0] = c.pos, scan_vocab(&c)) && (ws(&c), c.pos == c.n) &&
             vocab_unique(&c);
    c.end[0] = c.pos;
    return finish(&c, d, len, &ok, NULL);
}

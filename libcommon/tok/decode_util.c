/* decode_util.c — UTF-8 repair, the byte-level reverse map, token lists and the HF
 * tokenizer.json decoders; see decode_util.h. */
#include "tok/decode_util.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "mg/grow.h"

#include "tok/byte_level.h"

#define REPLACEMENT "\xEF\xBF\xBD" /* U+FFFD */

/* ---- UTF-8 ---- */

/* Length of the valid UTF-8 sequence at s[0, n) (n >= 1), or 0 if there is none; then
 * *part = the length of the maximal invalid subpart there (>= 1). */
static size_t seq_len(const uint8_t *s, size_t n, size_t *part)
{
    uint8_t c = s[0], lo = 0x80, hi = 0xBF;
    size_t need;
    *part = 1;
    if (c < 0x80) return 1;
    if (c >= 0xC2 && c <= 0xDF) {
        need = 2;
    } else if (c >= 0xE0 && c <= 0xEF) {
        need = 3;
        lo = c == 0xE0 ? 0xA0 : 0x80;
        hi = c == 0xED ? 0x9F : 0xBF;
    } else if (c >= 0xF0 && c <= 0xF4) {
        need = 4;
        lo = c == 0xF0 ? 0x90 : 0x80;
        hi = c == 0xF4 ? 0x8F : 0xBF;
    } else {
        return 0;
    }
    size_t k = 1;
    for (; k < need && k < n; k++) {
        uint8_t l = k == 1 ? lo : 0x80, h = k == 1 ? hi : 0xBF;
        if (s[k] < l || s[k] > h) break;
    }
    if (k == need) return need;
    *part = k;
    return 0;
}

/* Appends s[0, n), replacing invalid parts; per_byte: one U+FFFD per byte, else one per
 * maximal invalid subpart. */
static mg_status repair(mg_text *out, const uint8_t *s, size_t n, int per_byte)
{
    size_t i = 0, run = 0; /* s[run, i) is valid and not yet copied */
    while (i < n) {
        size_t part, k = seq_len(s + i, n - i, &part);
        if (k) {
            i += k;
            continue;
        }
        MG_FORWARD(mg_text_append(out, (const char *)s + run, i - run));
        MG_FORWARD(mg_text_append(out, REPLACEMENT, 3));
        i += per_byte ? 1 : part;
        run = i;
    }
    return mg_text_append(out, (const char *)s + run, n - run);
}

mg_status mg_decode_utf8_lossy(mg_text *out, const uint8_t *s, size_t n)
{
    return repair(out, s, n, 0);
}

mg_status mg_decode_utf8_per_byte(mg_text *out, const uint8_t *s, size_t n)
{
    return repair(out, s, n, 1);
}

int mg_decode_utf8_valid(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t part, k = seq_len(s + i, n - i, &part);
        if (!k) return 0;
        i += k;
    }
    return 1;
}

mg_status mg_decode_byte_level(mg_text *bytes, const char *tok, size_t len)
{
    size_t at = bytes->n, m;
    MG_FORWARD(mg_text_append(bytes, tok, len)); /* room, and the fallback content */
    if (mg_byte_level_decode(tok, len, (uint8_t *)bytes->p + at, &m)) {
        bytes->n = at + m;
        bytes->p[bytes->n] = '\0';
    } else {
        memcpy(bytes->p + at, tok, len); /* a character outside the map: kept as is */
    }
    return MG_OK;
}

/* ---- string replacement ---- */

mg_status mg_decode_replace_all(mg_text *out, const char *s, size_t n, const char *from,
                                size_t from_len, const char *to, size_t to_len)
{
    if (from_len == 0) return mg_text_append(out, s, n);
    size_t i = 0;
    const char *hit;
    while (i < n && (hit = memmem(s + i, n - i, from, from_len)) != NULL) {
        size_t at = (size_t)(hit - s);
        MG_FORWARD(mg_text_append(out, s + i, at - i));
        MG_FORWARD(mg_text_append(out, to, to_len));
        i = at + from_len;
    }
    return mg_text_append(out, s + i, n - i);
}

static const char *const cleanups[][2] = {
    {" .", "."},      {" ?", "?"},     {" !", "!"},     {" ,", ","},
    {" ' ", "'"},     {" n't", "n't"}, {" 'm", "'m"},   {" do not", " don't"},
    {" 's", "'s"},    {" 've", "'ve"}, {" 're", "'re"},
};

mg_status mg_decode_cleanup(mg_text *out, const char *s, size_t n, int with_do_not)
{
    mg_text a = {0}, b = {0};
    mg_status st = mg_text_append(&a, s, n);
    for (size_t i = 0; st == MG_OK && i < sizeof cleanups / sizeof cleanups[0]; i++) {
        if (!with_do_not && strcmp(cleanups[i][0], " do not") == 0) continue;
        b.n = 0;
        st = mg_decode_replace_all(&b, a.n ? a.p : "", a.n, cleanups[i][0],
                                   strlen(cleanups[i][0]), cleanups[i][1],
                                   strlen(cleanups[i][1]));
        mg_text t = a;
        a = b;
        b = t;
    }
    if (st == MG_OK) st = mg_text_append(out, a.n ? a.p : "", a.n);
    mg_text_free(&a);
    mg_text_free(&b);
    return st;
}

/* ---- token lists ---- */

mg_status mg_tok_strs_push(mg_tok_strs *l, const char *s, size_t len)
{
    MG_FORWARD(MG_GROW(l->end, l->cap, l->n + 1, 64));
    MG_FORWARD(mg_text_append(&l->buf, s, len));
    l->end[l->n++] = l->buf.n;
    return MG_OK;
}

const char *mg_tok_strs_get(const mg_tok_strs *l, size_t i, size_t *len)
{
    size_t start = i ? l->end[i - 1] : 0;
    *len = l->end[i] - start;
    return l->buf.p ? l->buf.p + start : "";
}

void mg_tok_strs_clear(mg_tok_strs *l)
{
    l->n = 0;
    l->buf.n = 0;
}

void mg_tok_strs_free(mg_tok_strs *l)
{
    mg_text_free(&l->buf);
    free(l->end);
    memset(l, 0, sizeof *l);
}

/* ---- decoders ---- */

typedef enum {
    DEC_BYTE_LEVEL = 1,
    DEC_REPLACE,
    DEC_BYTE_FALLBACK,
    DEC_FUSE,
    DEC_STRIP,
    DEC_METASPACE,
    DEC_WORDPIECE,
    DEC_BPE
} dec_kind;

typedef struct {
    dec_kind kind;
    char *a, *b;          /* Replace pattern/content, Strip/Metaspace char, WordPiece prefix,
                             BPEDecoder suffix */
    size_t start, stop;   /* Strip */
    int flag;             /* Metaspace: prepend (scheme != never); WordPiece: cleanup */
} dec_step;

#define MAX_STEPS 32

struct mg_hf_decoder {
    dec_step steps[MAX_STEPS];
    size_t n;
    int none; /* no decoder: tokens joined with ' ' */
};

/* Decoder output for one step: in -> out. */
typedef mg_status (*step_fn)(const dec_step *st, const mg_tok_strs *in, mg_tok_strs *out);

/* Length of the UTF-8 character at s[0, n). */
static size_t char_len(const char *s, size_t n)
{
    size_t k = 1;
    while (k < n && ((unsigned char)s[k] & 0xC0) == 0x80) k++;
    return k;
}

static mg_status run_byte_level(const dec_step *st, const mg_tok_strs *in, mg_tok_strs *out)
{
    (void)st;
    mg_text bytes = {0}, text = {0};
    mg_status s = MG_OK;
    for (size_t i = 0; s == MG_OK && i < in->n; i++) {
        size_t len;
        const char *t = mg_tok_strs_get(in, i, &len);
        s = mg_decode_byte_level(&bytes, t, len);
    }
    if (s == MG_OK) s = mg_decode_utf8_lossy(&text, (const uint8_t *)bytes.p, bytes.n);
    if (s == MG_OK) s = mg_tok_strs_push(out, text.n ? text.p : "", text.n);
    mg_text_free(&bytes);
    mg_text_free(&text);
    return s;
}

/* Each token with every `from` replaced by `to` (in the last token: by `to_last`). */
static mg_status replace_tokens(const mg_tok_strs *in, mg_tok_strs *out, const char *from,
                                const char *to, const char *to_last)
{
    mg_text t = {0};
    mg_status s = MG_OK;
    for (size_t i = 0; s == MG_OK && i < in->n; i++) {
        size_t len;
        const char *p = mg_tok_strs_get(in, i, &len);
        const char *rep = i + 1 == in->n ? to_last : to;
        t.n = 0;
        s = mg_decode_replace_all(&t, p, len, from, strlen(from), rep, strlen(rep));
        if (s == MG_OK) s = mg_tok_strs_push(out, t.n ? t.p : "", t.n);
    }
    mg_text_free(&t);
    return s;
}

static mg_status run_replace(const dec_step *st, const mg_tok_strs *in, mg_tok_strs *out)
{
    return replace_tokens(in, out, st->a, st->b, st->b);
}

static int hex_digit(char c)
{
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

/* "<0xXX>" -> the byte (Rust u8::from_str_radix(XX, 16): also "+X"), else -1. */
static int byte_token(const char *t, size_t len)
{
    if (len != 6 || memcmp(t, "<0x", 3) != 0 || t[5] != '>') return -1;
    int h = hex_digit(t[3]), l = hex_digit(t[4]);
    if (t[3] == '+' && l >= 0) return l;
    return h >= 0 && l >= 0 ? h * 16 + l : -1;
}

/* A run of byte tokens: one string if it is valid UTF-8, else one U+FFFD per byte. */
static mg_status flush_bytes(mg_text *run, mg_tok_strs *out)
{
    if (run->n == 0) return MG_OK;
    mg_status s = MG_OK;
    if (mg_decode_utf8_valid((const uint8_t *)run->p, run->n)) {
        s = mg_tok_strs_push(out, run->p, run->n);
    } else {
        for (size_t i = 0; s == MG_OK && i < run->n; i++) s = mg_tok_strs_push(out, REPLACEMENT, 3);
    }
    run->n = 0;
    return s;
}

static mg_status run_byte_fallback(const dec_step *st, const mg_tok_strs *in, mg_tok_strs *out)
{
    (void)st;
    mg_text run = {0};
    mg_status s = MG_OK;
    for (size_t i = 0; s == MG_OK && i < in->n; i++) {
        size_t len;
        const char *t = mg_tok_strs_get(in, i, &len);
        int b = byte_token(t, len);
        if (b >= 0) {
            char c = (char)b;
            s = mg_text_append(&run, &c, 1);
            continue;
        }
        s = flush_bytes(&run, out);
        if (s == MG_OK) s = mg_tok_strs_push(out, t, len);
    }
    if (s == MG_OK) s = flush_bytes(&run, out);
    mg_text_free(&run);
    return s;
}

static mg_status run_fuse(const dec_step *st, const mg_tok_strs *in, mg_tok_strs *out)
{
    (void)st;
    return mg_tok_strs_push(out, in->buf.p ? in->buf.p : "", in->buf.n);
}

/* Strip: up to start leading and stop trailing characters equal to st->a. */
static mg_status run_strip(const dec_step *st, const mg_tok_strs *in, mg_tok_strs *out)
{
    size_t cl = strlen(st->a);
    for (size_t i = 0; i < in->n; i++) {
        size_t len, b = 0;
        const char *t = mg_tok_strs_get(in, i, &len);
        for (size_t k = 0; k < st->start && b + cl <= len && memcmp(t + b, st->a, cl) == 0; k++)
            b += cl;
        size_t e = len;
        for (size_t k = 0; k < st->stop && e >= b + cl && memcmp(t + e - cl, st->a, cl) == 0; k++)
            e -= cl;
        MG_FORWARD(mg_tok_strs_push(out, t + b, e - b));
    }
    return MG_OK;
}

static mg_status run_metaspace(const dec_step *st, const mg_tok_strs *in, mg_tok_strs *out)
{
    size_t rl = strlen(st->a);
    mg_text t = {0};
    mg_status s = MG_OK;
    for (size_t i = 0; s == MG_OK && i < in->n; i++) {
        size_t len;
        const char *p = mg_tok_strs_get(in, i, &len);
        t.n = 0;
        for (size_t j = 0; s == MG_OK && j < len;) {
            size_t k = char_len(p + j, len - j);
            if (k == rl && memcmp(p + j, st->a, rl) == 0) {
                if (!(i == 0 && st->flag)) s = mg_text_append(&t, " ", 1);
            } else {
                s = mg_text_append(&t, p + j, k);
            }
            j += k;
        }
        if (s == MG_OK) s = mg_tok_strs_push(out, t.n ? t.p : "", t.n);
    }
    mg_text_free(&t);
    return s;
}

static mg_status run_wordpiece(const dec_step *st, const mg_tok_strs *in, mg_tok_strs *out)
{
    size_t pl = strlen(st->a);
    mg_text t = {0}, c = {0};
    mg_status s = MG_OK;
    for (size_t i = 0; s == MG_OK && i < in->n; i++) {
        size_t len;
        const char *p = mg_tok_strs_get(in, i, &len);
        t.n = c.n = 0;
        if (i != 0 && len >= pl && memcmp(p, st->a, pl) == 0) {
            s = mg_text_append(&t, p + pl, len - pl);
        } else {
            if (i != 0) s = mg_text_append(&t, " ", 1);
            if (s == MG_OK) s = mg_text_append(&t, p, len);
        }
        if (s == MG_OK && st->flag) {
            s = mg_decode_cleanup(&c, t.n ? t.p : "", t.n, 1);
            if (s == MG_OK) s = mg_tok_strs_push(out, c.n ? c.p : "", c.n);
        } else if (s == MG_OK) {
            s = mg_tok_strs_push(out, t.n ? t.p : "", t.n);
        }
    }
    mg_text_free(&t);
    mg_text_free(&c);
    return s;
}

/* BPEDecoder: the suffix becomes ' ', except in the last token (removed). */
static mg_status run_bpe(const dec_step *st, const mg_tok_strs *in, mg_tok_strs *out)
{
    return replace_tokens(in, out, st->a, " ", "");
}

static step_fn step_function(dec_kind k)
{
    switch (k) {
    case DEC_BYTE_LEVEL: return run_byte_level;
    case DEC_REPLACE: return run_replace;
    case DEC_BYTE_FALLBACK: return run_byte_fallback;
    case DEC_FUSE: return run_fuse;
    case DEC_STRIP: return run_strip;
    case DEC_METASPACE: return run_metaspace;
    case DEC_WORDPIECE: return run_wordpiece;
    default: return run_bpe;
    }
}

static mg_status join_tokens(const mg_tok_strs *l, const char *sep, mg_text *out)
{
    for (size_t i = 0; i < l->n; i++) {
        size_t len;
        const char *t = mg_tok_strs_get(l, i, &len);
        if (i) MG_FORWARD(mg_text_append(out, sep, strlen(sep)));
        MG_FORWARD(mg_text_append(out, t, len));
    }
    return MG_OK;
}

mg_status mg_hf_decoder_run(const mg_hf_decoder *dec, mg_tok_strs *tokens, mg_text *out)
{
    if (dec->none) return join_tokens(tokens, " ", out);
    mg_tok_strs other = {0};
    mg_tok_strs *in = tokens, *res = &other;
    mg_status s = MG_OK;
    for (size_t i = 0; s == MG_OK && i < dec->n; i++) {
        mg_tok_strs_clear(res);
        s = step_function(dec->steps[i].kind)(&dec->steps[i], in, res);
        mg_tok_strs *t = in;
        in = res;
        res = t;
    }
    if (s == MG_OK) s = join_tokens(in, "", out);
    mg_tok_strs_free(&other);
    return s;
}

/* ---- parsing ---- */

void mg_hf_decoder_free(mg_hf_decoder *dec)
{
    if (!dec) return;
    for (size_t i = 0; i < dec->n; i++) {
        free(dec->steps[i].a);
        free(dec->steps[i].b);
    }
    free(dec);
}

static mg_status dup_str(char **dst, const char *s)
{
    *dst = strdup(s ? s : "");
    return *dst ? MG_OK : mg_error_set(MG_ERR_NOMEM, "out of memory");
}

static mg_status bad(const char *file, const char *what)
{
    return mg_error_set(MG_ERR_FORMAT, "%s: decoder: %s", file, what);
}

/* A string member, def if absent; another type is an error. */
static mg_status str_member(const json_t *o, const char *key, const char *def, const char *file,
                            const char **v)
{
    const json_t *j = json_object_get(o, key);
    *v = def;
    if (!j || json_is_null(j)) return MG_OK;
    if (!json_is_string(j)) return bad(file, key);
    *v = json_string_value(j);
    return MG_OK;
}

static mg_status size_member(const json_t *o, const char *key, const char *file, size_t *v)
{
    const json_t *j = json_object_get(o, key);
    *v = 0;
    if (!j || json_is_null(j)) return MG_OK;
    if (!json_is_integer(j) || json_integer_value(j) < 0) return bad(file, key);
    *v = (size_t)json_integer_value(j);
    return MG_OK;
}

static int bool_member(const json_t *o, const char *key, int def)
{
    const json_t *j = json_object_get(o, key);
    return json_is_boolean(j) ? json_is_true(j) : def;
}

static mg_status parse_replace(dec_step *st, const json_t *o, const char *file)
{
    const json_t *pat = json_object_get(o, "pattern");
    const char *content;
    if (json_is_object(pat) && json_object_get(pat, "Regex"))
        return mg_error_set(MG_ERR_UNSUPPORTED, "not supported yet: decoder Replace with a "
                            "Regex pattern in %s", file);
    const json_t *s = json_is_object(pat) ? json_object_get(pat, "String") : NULL;
    if (!json_is_string(s)) return bad(file, "Replace needs pattern {\"String\": ...}");
    MG_FORWARD(str_member(o, "content", NULL, file, &content));
    if (!content) return bad(file, "Replace needs content");
    MG_FORWARD(dup_str(&st->a, json_string_value(s)));
    return dup_str(&st->b, content);
}

static mg_status parse_metaspace(dec_step *st, const json_t *o, const char *file)
{
    const char *r, *scheme;
    MG_FORWARD(str_member(o, "replacement", "\xE2\x96\x81", file, &r));
    MG_FORWARD(str_member(o, "prepend_scheme", NULL, file, &scheme));
    if (!*r || char_len(r, strlen(r)) != strlen(r))
        return bad(file, "Metaspace replacement must be one character");
    if (scheme)
        st->flag = strcmp(scheme, "never") != 0;
    else
        st->flag = bool_member(o, "add_prefix_space", 1);
    return dup_str(&st->a, r);
}

static mg_status parse_strip(dec_step *st, const json_t *o, const char *file)
{
    const char *c;
    MG_FORWARD(str_member(o, "content", " ", file, &c));
    if (!*c || char_len(c, strlen(c)) != strlen(c))
        return bad(file, "Strip content must be one character");
    MG_FORWARD(size_member(o, "start", file, &st->start));
    MG_FORWARD(size_member(o, "stop", file, &st->stop));
    return dup_str(&st->a, c);
}

static mg_status parse_step(mg_hf_decoder *d, const json_t *o, const char *file, int depth);

static mg_status parse_sequence(mg_hf_decoder *d, const json_t *o, const char *file, int depth)
{
    const json_t *list = json_object_get(o, "decoders");
    if (!json_is_array(list)) return bad(file, "Sequence needs a decoders list");
    for (size_t i = 0; i < json_array_size(list); i++)
        MG_FORWARD(parse_step(d, json_array_get(list, i), file, depth + 1));
    return MG_OK;
}

static mg_status parse_kind(dec_step *st, const char *type, const json_t *o, const char *file)
{
    const char *v;
    if (!strcmp(type, "ByteLevel")) st->kind = DEC_BYTE_LEVEL;
    else if (!strcmp(type, "ByteFallback")) st->kind = DEC_BYTE_FALLBACK;
    else if (!strcmp(type, "Fuse")) st->kind = DEC_FUSE;
    else if (!strcmp(type, "Replace")) return st->kind = DEC_REPLACE, parse_replace(st, o, file);
    else if (!strcmp(type, "Strip")) return st->kind = DEC_STRIP, parse_strip(st, o, file);
    else if (!strcmp(type, "Metaspace"))
        return st->kind = DEC_METASPACE, parse_metaspace(st, o, file);
    else if (!strcmp(type, "WordPiece")) {
        st->kind = DEC_WORDPIECE;
        st->flag = bool_member(o, "cleanup", 1);
        MG_FORWARD(str_member(o, "prefix", "##", file, &v));
        return dup_str(&st->a, v);
    } else if (!strcmp(type, "BPEDecoder")) {
        st->kind = DEC_BPE;
        MG_FORWARD(str_member(o, "suffix", "</w>", file, &v));
        return dup_str(&st->a, v);
    } else {
        return mg_error_set(MG_ERR_UNSUPPORTED, "not supported yet: decoder %.60s in %s", type,
                            file);
    }
    return MG_OK;
}

static mg_status parse_step(mg_hf_decoder *d, const json_t *o, const char *file, int depth)
{
    if (!json_is_object(o)) return bad(file, "not an object");
    const json_t *t = json_object_get(o, "type");
    if (!json_is_string(t)) return bad(file, "missing type");
    const char *type = json_string_value(t);
    if (!strcmp(type, "Sequence")) {
        if (depth > 8) return bad(file, "Sequences nested too deeply");
        return parse_sequence(d, o, file, depth);
    }
    if (d->n == MAX_STEPS) return bad(file, "too many steps");
    dec_step *st = &d->steps[d->n++];
    return parse_kind(st, type, o, file);
}

mg_status mg_hf_decoder_create(mg_hf_decoder **dec, const void *json, const char *file)
{
    *dec = NULL;
    mg_hf_decoder *d = calloc(1, sizeof *d);
    if (!d) return mg_error_set(MG_ERR_NOMEM, "out of memory");
    const json_t *j = json;
    mg_status st = MG_OK;
    if (!j || json_is_null(j))
        d->none = 1;
    else
        st = parse_step(d, j, file ? file : "tokenizer.json", 0);
    if (st != MG_OK) {
        mg_hf_decoder_free(d);
        return st;
    }
    *dec = d;
    return MG_OK;
}

mg_status mg_hf_decoder_create_byte_level(mg_hf_decoder **dec)
{
    *dec = calloc(1, sizeof **dec);
    if (!*dec) return mg_error_set(MG_ERR_NOMEM, "out of memory");
    (*dec)->steps[0].kind = DEC_BYTE_LEVEL;
    (*dec)->n = 1;
    return MG_OK;
}

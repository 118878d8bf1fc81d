/* gptds_desc.c — the text Megatron hashes to name its index caches: json.dumps(
 * unique_identifiers, indent=4) of a GPTDataset / BlendedDataset, byte for byte (Python's
 * float repr, ensure_ascii escaping), and the tokenizer's unique_identifiers for mg-train's
 * tokenizer flags (megatron-core 0.16.1 build_tokenizer + MegatronTokenizerText). Contract
 * in gptds_internal.h and mg/gptds.h; facts in docs/FORMATS.md §3.10.
 */
#include "gptds_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- the JSON text (mg/strbuf.h inside mg_jbuf) ---- */

static void jb_raw(mg_jbuf *b, const char *s, size_t n)
{
    mg_strbuf_put(&b->t, s, n);
}

static void jb_puts(mg_jbuf *b, const char *s)
{
    mg_strbuf_puts(&b->t, s);
}

/* json.dumps(indent=4): a newline and 4 spaces per level before every item. */
static void jb_next(mg_jbuf *b)
{
    jb_puts(b, b->items[b->depth] ? ",\n" : "\n");
    b->items[b->depth] = 1;
    for (int i = 0; i < b->depth; i++) jb_puts(b, "    ");
}

static void jb_open(mg_jbuf *b, const char *bracket)
{
    jb_puts(b, bracket);
    MG_ASSERT(b->depth + 1 < (int)(sizeof b->items / sizeof b->items[0]));
    b->items[++b->depth] = 0;
}

static void jb_close(mg_jbuf *b, const char *bracket)
{
    int had = b->items[b->depth--];
    if (had) {
        jb_puts(b, "\n");
        for (int i = 0; i < b->depth; i++) jb_puts(b, "    ");
    }
    jb_puts(b, bracket);
}

/* One code point as \uXXXX (a surrogate pair above U+FFFF), lowercase hex. */
static void jb_uescape(mg_jbuf *b, uint32_t cp)
{
    char u[16];
    if (cp > 0xffff) {
        cp -= 0x10000;
        snprintf(u, sizeof u, "\\u%04x\\u%04x", 0xd800 + (cp >> 10), 0xdc00 + (cp & 0x3ff));
    } else {
        snprintf(u, sizeof u, "\\u%04x", cp);
    }
    jb_puts(b, u);
}

/* Decodes one UTF-8 sequence at s (len bytes left); invalid bytes decode as Python's
 * surrogateescape does (U+DC80..U+DCFF), one byte at a time. Returns the bytes used. */
static size_t utf8_next(const unsigned char *s, size_t len, uint32_t *cp)
{
    int n = s[0] >= 0xf0 && s[0] <= 0xf4 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 ? 2 : 0;
    if (s[0] >= 0xf8) n = 0;
    uint32_t v = n == 4 ? s[0] & 0x07u : n == 3 ? s[0] & 0x0fu : s[0] & 0x1fu;
    for (int i = 1; i < n; i++) {
        if ((size_t)i >= len || (s[i] & 0xc0) != 0x80) n = 0;
        else v = v << 6 | (s[i] & 0x3fu);
    }
    int overlong = (n == 3 && v < 0x800) || (n == 4 && (v < 0x10000 || v > 0x10ffff)) ||
                   (n == 3 && v >= 0xd800 && v <= 0xdfff);
    if (n == 0 || overlong) {
        *cp = 0xdc00 + s[0];
        return 1;
    }
    *cp = v;
    return (size_t)n;
}

/* json.dumps string with ensure_ascii=True. */
static void jb_str(mg_jbuf *b, const char *s)
{
    jb_puts(b, "\"");
    const unsigned char *p = (const unsigned char *)s;
    size_t len = strlen(s);
    for (size_t i = 0; i < len;) {
        unsigned char c = p[i];
        const char *esc = c == '"' ? "\\\"" : c == '\\' ? "\\\\" : c == '\n' ? "\\n"
                        : c == '\r' ? "\\r" : c == '\t' ? "\\t" : c == '\b' ? "\\b"
                        : c == '\f' ? "\\f" : NULL;
        if (esc) {
            jb_puts(b, esc);
            i++;
        } else if (c >= 0x20 && c < 0x7f) {
            jb_raw(b, (const char *)&p[i], 1);
            i++;
        } else if (c < 0x80) {
            jb_uescape(b, c);
            i++;
        } else {
            uint32_t cp;
            i += utf8_next(p + i, len - i, &cp);
            jb_uescape(b, cp);
        }
    }
    jb_puts(b, "\"");
}

static void jb_key(mg_jbuf *b, const char *key)
{
    jb_next(b);
    jb_str(b, key);
    jb_puts(b, ": ");
}

static void jb_int(mg_jbuf *b, int64_t v)
{
    char t[32];
    snprintf(t, sizeof t, "%lld", (long long)v);
    jb_puts(b, t);
}

static void jb_float(mg_jbuf *b, double v)
{
    char t[32];
    mg_py_float_repr(v, t);
    jb_puts(b, t);
}

void mg_jbuf_free(mg_jbuf *b)
{
    mg_strbuf_free(&b->t);
    memset(b, 0, sizeof *b);
}

/* ---- Python float repr ------------------------------------------------------------- */

/* Shortest "%.*e" that reads back as v: its digits (no point, trailing zeros dropped) and
 * decimal exponent. */
static void shortest_digits(double v, char *digits, int *exp10)
{
    char e[40];
    for (int prec = 1; prec <= 17; prec++) {
        snprintf(e, sizeof e, "%.*e", prec - 1, v);
        if (strtod(e, NULL) == v) break;
    }
    const char *p = e + (e[0] == '-');
    size_t n = 0;
    for (; *p && *p != 'e'; p++)
        if (*p != '.') digits[n++] = *p;
    while (n > 1 && digits[n - 1] == '0') n--;
    digits[n] = '\0';
    *exp10 = atoi(p + 1);
}

/* d1 d2 ... with the point after digit exp10 + 1 (exp10 in [-4, 16)). */
static void positional(const char *digits, int exp10, char *out)
{
    size_t n = strlen(digits), o = 0;
    if (exp10 < 0) {
        out[o++] = '0';
        out[o++] = '.';
        for (int i = -1; i > exp10; i--) out[o++] = '0';
        memcpy(out + o, digits, n);
        o += n;
    } else {
        for (int i = 0; i <= exp10; i++) out[o++] = (size_t)i < n ? digits[i] : '0';
        out[o++] = '.';
        if ((size_t)exp10 + 1 < n) {
            memcpy(out + o, digits + exp10 + 1, n - (size_t)exp10 - 1);
            o += n - (size_t)exp10 - 1;
        } else {
            out[o++] = '0';
        }
    }
    out[o] = '\0';
}

void mg_py_float_repr(double v, char out[32])
{
    if (isnan(v)) {
        strcpy(out, "NaN");
        return;
    }
    if (isinf(v)) {
        strcpy(out, v > 0 ? "Infinity" : "-Infinity");
        return;
    }
    if (v == 0) {
        strcpy(out, signbit(v) ? "-0.0" : "0.0");
        return;
    }
    char digits[24];
    int exp10;
    shortest_digits(v, digits, &exp10);
    char *o = out;
    if (v < 0) *o++ = '-';
    if (exp10 >= -4 && exp10 < 16) {
        positional(digits, exp10, o);
        return;
    }
    size_t n = strlen(digits);
    *o++ = digits[0];
    if (n > 1) {
        *o++ = '.';
        memcpy(o, digits + 1, n - 1);
        o += n - 1;
    }
    snprintf(o, 12, "e%c%02d", exp10 < 0 ? '-' : '+', abs(exp10) % 1000);
}

/* ---- descriptions ------------------------------------------------------------------- */

static void emit_split_matrix(mg_jbuf *b, const mg_split_matrix *m)
{
    if (!m) {
        jb_puts(b, "null");
        return;
    }
    jb_open(b, "[");
    for (int k = 0; k < MG_SPLIT_COUNT; k++) {
        jb_next(b);
        if (!m->present[k]) {
            jb_puts(b, "null");
            continue;
        }
        jb_open(b, "[");
        jb_next(b);
        if (k == 0) jb_puts(b, "0"); /* the expansion starts with the int 0 */
        else jb_float(b, m->beg[k]);
        jb_next(b);
        jb_float(b, m->end[k]);
        jb_close(b, "]");
    }
    jb_close(b, "]");
}

static void emit_tokenizer(mg_jbuf *b, const mg_gpt_cache *c)
{
    jb_open(b, "{");
    for (size_t i = 0; i < c->n_tokenizer; i++) {
        jb_key(b, c->tokenizer[2 * i]);
        if (c->tokenizer[2 * i + 1]) jb_str(b, c->tokenizer[2 * i + 1]);
        else jb_puts(b, "null");
    }
    jb_close(b, "}");
}

static void emit_gptds(mg_jbuf *b, const mg_gpt_desc_ctx *x, const char *path,
                       int64_t num_samples, int k)
{
    jb_open(b, "{");
    jb_key(b, "class");
    jb_str(b, x->mock ? "MockGPTDataset" : "GPTDataset");
    jb_key(b, "dataset_path");
    if (path) jb_str(b, path);
    else jb_puts(b, "null");
    jb_key(b, "num_samples");
    if (num_samples >= 0) jb_int(b, num_samples);
    else jb_puts(b, "null");
    jb_key(b, "index_split");
    jb_str(b, mg_split_name(k));
    jb_key(b, "random_seed");
    jb_int(b, (int64_t)x->seed);
    jb_key(b, "sequence_length");
    jb_int(b, x->seq_length);
    jb_key(b, "split");
    if (x->split) jb_str(b, x->split);
    else jb_puts(b, "null");
    jb_key(b, "split_matrix");
    emit_split_matrix(b, x->matrix);
    jb_key(b, "tokenizer");
    emit_tokenizer(b, x->cache);
    jb_close(b, "}");
}

mg_status mg_gptds_description(const mg_gpt_desc_ctx *x, const char *dataset_path,
                               int64_t num_samples, int index_split, mg_jbuf *out)
{
    memset(out, 0, sizeof *out);
    emit_gptds(out, x, dataset_path, num_samples, index_split);
    return out->t.nomem ? mg_error_set(MG_ERR_NOMEM, "out of memory") : MG_OK;
}

mg_status mg_blend_description(const mg_blend_desc *d, mg_jbuf *out)
{
    memset(out, 0, sizeof *out);
    mg_jbuf *b = out;
    jb_open(b, "{");
    jb_key(b, "class");
    jb_str(b, "BlendedDataset");
    jb_key(b, "datasets");
    jb_open(b, "[");
    for (size_t p = 0; p < d->n; p++) {
        jb_next(b);
        emit_gptds(b, d->ctx, d->prefixes[p], d->ds[p]->num_samples, d->index_split);
    }
    jb_close(b, "]");
    jb_key(b, "split");
    jb_str(b, mg_split_name(d->index_split));
    jb_key(b, "weights");
    jb_open(b, "[");
    for (size_t p = 0; p < d->n; p++) {
        jb_next(b);
        if (d->weights) jb_float(b, d->weights[p]);
        else jb_int(b, d->lengths[p]);
    }
    jb_close(b, "]");
    jb_key(b, "size");
    if (d->size >= 0) jb_int(b, d->size);
    else jb_puts(b, "null");
    jb_close(b, "}");
    return out->t.nomem ? mg_error_set(MG_ERR_NOMEM, "out of memory") : MG_OK;
}

/* ---- the tokenizer's unique_identifiers ---------------------------------------------- */

typedef struct {
    char **kv;
    size_t n, cap;
    int nomem;
} kvlist;

static char *dup_or_null(const char *s)
{
    if (!s) return NULL;
    char *d = malloc(strlen(s) + 1);
    if (d) strcpy(d, s);
    return d;
}

static void kv_add(kvlist *l, const char *key, const char *value)
{
    if (l->nomem) return;
    if (l->n + 2 > l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 32;
        char **p = realloc(l->kv, cap * sizeof *p);
        if (!p) {
            l->nomem = 1;
            return;
        }
        l->kv = p;
        l->cap = cap;
    }
    l->kv[l->n] = dup_or_null(key);
    l->kv[l->n + 1] = dup_or_null(value);
    if (!l->kv[l->n] || (value && !l->kv[l->n + 1])) l->nomem = 1;
    l->n += 2;
}

/* Python repr() of an ASCII str ('...' unless it holds ' and no "). */
static void py_repr_str(mg_jbuf *b, const char *s)
{
    char q = strchr(s, '\'') && !strchr(s, '"') ? '"' : '\'';
    jb_raw(b, &q, 1);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        char t[8];
        if (*p == '\\' || *p == (unsigned char)q) snprintf(t, sizeof t, "\\%c", *p);
        else if (*p == '\n') strcpy(t, "\\n");
        else if (*p == '\r') strcpy(t, "\\r");
        else if (*p == '\t') strcpy(t, "\\t");
        else if (*p < 0x20 || *p == 0x7f) snprintf(t, sizeof t, "\\x%02x", *p);
        else snprintf(t, sizeof t, "%c", *p);
        jb_puts(b, t);
    }
    jb_raw(b, &q, 1);
}

/* str(list) of n strings, or str(None) when none_if_empty and n == 0. */
static void kv_add_list(kvlist *l, const char *key, const char *const *v, size_t n,
                        int none_if_empty)
{
    if (n == 0) {
        kv_add(l, key, none_if_empty ? "None" : "[]");
        return;
    }
    mg_jbuf b;
    memset(&b, 0, sizeof b);
    jb_puts(&b, "[");
    for (size_t i = 0; i < n; i++) {
        if (i) jb_puts(&b, ", ");
        py_repr_str(&b, v[i]);
    }
    jb_puts(&b, "]");
    if (b.t.nomem) l->nomem = 1;
    else kv_add(l, key, b.t.s);
    mg_jbuf_free(&b);
}

static void kv_add_int(kvlist *l, const char *key, int64_t v)
{
    char t[32];
    snprintf(t, sizeof t, "%lld", (long long)v);
    kv_add(l, key, t);
}

static const char *str_or_none(const char *s)
{
    return s ? s : "None";
}

/* library 'megatron': GPT2BPETokenizer, BertWordPieceLowerCase, BertWordPieceCase. */
static void megatron_kwargs(kvlist *l, const mg_tok_opts *t)
{
    if (strcmp(t->type, "BertWordPieceCase") == 0) {
        char names[100][24]; /* "<extra_id_99>"; room for any int, for -Wformat-truncation */
        const char *ptr[100];
        for (int i = 0; i < 100; i++) {
            snprintf(names[i], sizeof names[i], "<extra_id_%d>", i);
            ptr[i] = names[i];
        }
        kv_add_list(l, "additional_special_tokens", ptr, 100, 0);
    } else {
        kv_add_list(l, "additional_special_tokens", t->special_tokens, t->n_special_tokens, 0);
    }
    kv_add(l, "vocab_file", str_or_none(t->vocab_file));
    kv_add(l, "merges_file", str_or_none(t->merge_file));
    kv_add(l, "use_fast", "False");
    kv_add(l, "trust_remote_code", "False");
    kv_add(l, "include_special_tokens", "False");
}

static int is_one_of(const char *s, const char *const *names)
{
    for (; *names; names++)
        if (strcmp(s, *names) == 0) return 1;
    return 0;
}

/* The kwargs build_tokenizer passes for t->type (path already added). */
static mg_status tokenizer_kwargs(kvlist *l, const mg_tok_opts *t)
{
    static const char *const megatron[] = {"GPT2BPETokenizer", "BertWordPieceLowerCase",
                                           "BertWordPieceCase", NULL};
    static const char *const sp[] = {"SentencePieceTokenizer", "GPTSentencePieceTokenizer",
                                     "Llama2Tokenizer", NULL};
    if (is_one_of(t->type, megatron)) {
        megatron_kwargs(l, t);
    } else if (is_one_of(t->type, sp)) {
        kv_add(l, "legacy", "False");
        kv_add_list(l, "special_tokens", t->special_tokens, t->n_special_tokens, 1);
    } else if (strcmp(t->type, "TikTokenizer") == 0) {
        if (t->tiktoken_pattern) kv_add(l, "pattern", t->tiktoken_pattern);
        if (t->vocab_size > 0) kv_add_int(l, "vocab_size", t->vocab_size);
        kv_add_int(l, "num_special_tokens", t->tiktoken_num_special);
        kv_add_list(l, "special_tokens", t->special_tokens, t->n_special_tokens, 1);
    } else if (strcmp(t->type, "HuggingFaceTokenizer") == 0) {
        kv_add(l, "vocab_file", str_or_none(t->vocab_file));
        kv_add(l, "merges_file", str_or_none(t->merge_file));
        kv_add_list(l, "additional_special_tokens", t->special_tokens, t->n_special_tokens, 0);
        kv_add(l, "use_fast", "False");
        kv_add(l, "trust_remote_code", "False");
        kv_add(l, "include_special_tokens", "False");
    } else {
        return mg_error_set(MG_ERR_UNSUPPORTED, "not supported yet: the cache description of "
                            "--tokenizer-type %s", t->type);
    }
    return MG_OK;
}

static const char *tokenizer_path(const mg_tok_opts *t)
{
    static const char *const named[] = {"GPT2BPETokenizer", "BertWordPieceLowerCase",
                                        "BertWordPieceCase", NULL};
    return is_one_of(t->type, named) ? t->type : t->model;
}

mg_status mg_gpt_cache_set_tokenizer(mg_gpt_cache *c, const mg_tok_opts *t)
{
    mg_gpt_cache_clear_tokenizer(c);
    kvlist l;
    memset(&l, 0, sizeof l);
    mg_status st = MG_OK;
    kv_add(&l, "class", "megatron.core.tokenizers.text.models.default_tokenizer."
                        "DefaultTokenizerText");
    if (!t->type || strcmp(t->type, "NullTokenizer") == 0) {
        kv_add(&l, "tokenizer_path", NULL);
        if (t->vocab_size > 0) kv_add_int(&l, "vocab_size", t->vocab_size);
    } else {
        kv_add(&l, "tokenizer_path", tokenizer_path(t));
        st = tokenizer_kwargs(&l, t);
    }
    c->tokenizer = l.kv;
    c->n_tokenizer = l.n / 2;
    if (st == MG_OK && l.nomem) st = mg_error_set(MG_ERR_NOMEM, "out of memory");
    if (st != MG_OK) mg_gpt_cache_clear_tokenizer(c);
    return st;
}

void mg_gpt_cache_clear_tokenizer(mg_gpt_cache *c)
{
    for (size_t i = 0; i < 2 * c->n_tokenizer; i++) free(c->tokenizer[i]);
    free(c->tokenizer);
    c->tokenizer = NULL;
    c->n_tokenizer = 0;
}

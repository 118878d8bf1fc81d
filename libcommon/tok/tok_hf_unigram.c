/* tok_hf_unigram.c — HuggingFaceTokenizer over a Unigram tokenizer.json; contract in
 * tok_hf_unigram.h.
 *
 * HF tokenizers semantics followed (tokenizers 0.2x):
 *   - Unigram::from: every vocabulary piece is in the trie (duplicates: the last id wins,
 *     as token_to_ids); min_score over all pieces; unk score min_score - 10; all f64,
 *     each score the value serde_json reads from the file (serde_f64).
 *   - Precompiled (spm_precompiled): per extended grapheme cluster (utf8proc), a cluster
 *     of < 6 bytes with a charsmap rule matching a prefix of it (the shortest key) becomes
 *     that rule's replacement as a whole; otherwise each character is replaced by the rule
 *     matching a prefix of it, or kept.
 *   - Metaspace: ' ' -> replacement, the replacement prepended (always; first = the piece
 *     starts the original text) unless the piece starts with it, then (split) cut before
 *     each replacement (MergedWithNext).
 * Encoding allocates nothing per piece: buffers live in the per-thread state and only grow.
 */
#include "tok/tok_hf_unigram.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if MG_HAVE_UTF8PROC
#include <utf8proc.h>
#endif

#include "mg/base64.h"
#include "tok/hf_frame.h"
#include "tok/spm_proto.h"
#include "tok/tok_internal.h"

#define UNK_PENALTY 10.0
#define MAX_DEC 16

typedef enum { DEC_METASPACE = 1, DEC_REPLACE, DEC_BYTE_FALLBACK, DEC_FUSE, DEC_STRIP } dec_kind;

typedef struct {
    dec_kind kind;
    char a[64], b[64]; /* Metaspace: replacement; Replace: pattern, content; Strip: content */
    size_t alen, blen;
    int start, stop;   /* Strip */
    int prepend;       /* Metaspace: prepend_scheme != never */
} dec_step;

typedef struct {
    mg_hf_frame frame; /* first: added tokens, normalizer, post-processor ids */
    /* model */
    mg_spm_trie *trie;
    double *score;
    char *pool;       /* pieces, NUL-separated */
    size_t *off;      /* id -> offset in pool */
    size_t n_vocab;
    int32_t unk_id;   /* -1: none */
    double unk_score;
    int byte_fallback;
    int64_t tokens_unk; /* no-include-special: the config's unk_token id, -1 if none */
    int32_t byte_id[256]; /* <0xXX> ids, -1 if absent */
    /* pipeline */
    mg_spm_normalizer precompiled;
    int has_precompiled;
    const char *ascii_rule[128]; /* Precompiled rule of each ASCII byte, NULL if none */
    mg_pretok *pre;
    size_t n_split;
    int has_meta;
    mg_hf_pre_stage meta;
    /* decoder */
    dec_step dec[MAX_DEC];
    size_t n_dec;
    int has_decoder;
    char dec_unsupported[160]; /* non-empty: the message decoding answers */
} uni_impl;

typedef struct {
    mg_hf_frame_state fs; /* first (hf_frame.h) */
    mg_spm_scratch scratch;
    mg_spm_refs refs;
    mg_spm_buf pre;  /* Precompiled output */
    mg_text meta;    /* Metaspace output */
    mg_spans spans;
} uni_state;

/* ---- the model: pieces to ids ---- */

static const char *piece(const uni_impl *u, int32_t id) { return u->pool + u->off[id]; }

/* Unigram::tokenize for a run [a, b) of refs that are all unk (fused), text t. */
static mg_status unk_run(const uni_impl *u, const uint8_t *t, const mg_spm_ref *a,
                         const mg_spm_ref *b, mg_ids *out)
{
    size_t off = a->off, len = (size_t)(b[-1].off + b[-1].len) - off;
    int32_t id = mg_spm_trie_find(u->trie, t + off, len);
    if (id >= 0) return mg_ids_push(out, id);
    int all = u->byte_fallback;
    for (size_t i = 0; all && i < len; i++) all = u->byte_id[t[off + i]] >= 0;
    if (!all && u->frame.include_special) return mg_ids_push(out, u->unk_id);
    /* convert_tokens_to_ids(tokenize(text)): the unknown string becomes unk_token_id */
    MG_RETURN_IF(!all && u->tokens_unk < 0, MG_ERR_ARG, "\"%.*s\" has no token and "
                 "tokenizer_config.json names no unk_token (transformers' "
                 "convert_tokens_to_ids gives None)", (int)(len < 40 ? len : 40),
                 (const char *)t + off);
    if (!all) return mg_ids_push(out, u->tokens_unk);
    for (size_t i = 0; i < len; i++) MG_FORWARD(mg_ids_push(out, u->byte_id[t[off + i]]));
    return MG_OK;
}

static mg_status model_piece(const void *model, void *state, const char *p, size_t n,
                             mg_ids *out)
{
    const uni_impl *u = model;
    uni_state *s = state;
    if (n == 0) return MG_OK;
    mg_unigram_lattice L = {.trie = u->trie, .score = u->score, .unk_score = u->unk_score,
                            .unk_id = u->unk_id};
    const uint8_t *t = (const uint8_t *)p;
    s->refs.n = 0;
    mg_status st = mg_unigram_viterbi(&L, &s->scratch, t, n, &s->refs);
    if (st != MG_OK) return st;
    const mg_spm_ref *r = s->refs.v, *end = r + s->refs.n;
    while (r < end) {
        if (u->unk_id < 0 || r->id != u->unk_id) {
            MG_FORWARD(mg_ids_push(out, r->id));
            r++;
            continue;
        }
        const mg_spm_ref *q = r;
        while (q < end && q->id == u->unk_id) q++;
        MG_FORWARD(unk_run(u, t, r, q, out));
        r = q;
    }
    return MG_OK;
}

/* ---- Metaspace ---- */

static mg_status meta_piece(const uni_impl *u, uni_state *s, const char *p, size_t n, int first,
                            mg_ids *out)
{
    if (!u->has_meta) return model_piece(u, s, p, n, out);
    return mg_hf_metaspace(&u->meta, &s->meta, p, n, first, model_piece, u, s, out);
}

/* Split stages, then Metaspace on each piece (mg_hf_plain_fn). */
static mg_status encode_plain(const void *model, void *state, const char *t, size_t n,
                              int first, mg_ids *out)
{
    const uni_impl *u = model;
    uni_state *s = state;
    if (u->n_split == 0) return meta_piece(u, s, t, n, first, out);
    s->spans.n = 0;
    MG_FORWARD(mg_pretok_split(u->pre, s->fs.scratch, t, n, &s->spans));
    for (size_t i = 0; i < s->spans.n; i++) {
        const mg_span *sp = &s->spans.v[i];
        MG_FORWARD(meta_piece(u, s, t + sp->off, sp->len, first && sp->off == 0, out));
    }
    return MG_OK;
}

/* ---- Precompiled ---- */

#if MG_HAVE_UTF8PROC
/* Length of the extended grapheme cluster at t (UAX #29, utf8proc). */
static size_t grapheme_len(const uint8_t *t, size_t n)
{
    if (t[0] < 0x80 && (n == 1 || (t[1] < 0x80 && !(t[0] == '\r' && t[1] == '\n')))) return 1;
    utf8proc_int32_t prev, cur;
    utf8proc_int32_t state = 0;
    size_t k = (size_t)utf8proc_iterate(t, (utf8proc_ssize_t)n, &prev);
    while (k < n) {
        utf8proc_ssize_t c = utf8proc_iterate(t + k, (utf8proc_ssize_t)(n - k), &cur);
        if (utf8proc_grapheme_break_stateful(prev, cur, &state)) break;
        k += (size_t)c;
        prev = cur;
    }
    return k;
}

static mg_status emit_char(const uni_impl *u, const uint8_t *c, size_t k, mg_spm_buf *b)
{
    const char *r;
    size_t rl;
    if (c[0] < 0x80) {
        r = u->ascii_rule[c[0]];
        return r ? mg_spm_buf_append(b, r, strlen(r)) : mg_spm_buf_append(b, c, 1);
    }
    if (mg_spm_charsmap_first(&u->precompiled, c, k, &r, &rl)) return mg_spm_buf_append(b, r, rl);
    return mg_spm_buf_append(b, c, k);
}

/* Bytes from t[0] that are ASCII without a rule and single-byte graphemes (followed by
 * ASCII: only CR LF joins two ASCII characters, and CR is not kept here). */
static size_t plain_ascii_run(const uni_impl *u, const uint8_t *t, size_t n)
{
    size_t k = 0;
    while (k + 1 < n && t[k] < 0x80 && t[k] != '\r' && !u->ascii_rule[t[k]] && t[k + 1] < 0x80)
        k++;
    return k;
}
#endif

/* Precompiled (mg_hf_prenorm_fn). */
static mg_status precompiled(const void *model, void *state, const char *text, size_t len,
                             const char **out, size_t *out_len)
{
#if MG_HAVE_UTF8PROC
    const uni_impl *u = model;
    uni_state *s = state;
    const uint8_t *t = (const uint8_t *)text;
    mg_spm_buf *b = &s->pre;
    b->n = 0;
    for (size_t i = 0; i < len;) {
        size_t run = plain_ascii_run(u, t + i, len - i);
        if (run > 0) {
            MG_FORWARD(mg_spm_buf_append(b, t + i, run));
            i += run;
            continue;
        }
        size_t g = grapheme_len(t + i, len - i);
        if (g == 1 && t[i] < 0x80) {
            MG_FORWARD(emit_char(u, t + i, 1, b));
            i++;
            continue;
        }
        const char *r;
        size_t rl;
        if (g < 6 && mg_spm_charsmap_first(&u->precompiled, t + i, g, &r, &rl)) {
            MG_FORWARD(mg_spm_buf_append(b, r, rl));
        } else {
            for (size_t j = i; j < i + g;) {
                size_t k = mg_spm_char_len(t[j]);
                MG_FORWARD(emit_char(u, t + j, k, b));
                j += k;
            }
        }
        i += g;
    }
    *out = b->n ? (const char *)b->v : "";
    *out_len = b->n;
    return MG_OK;
#else
    (void)model, (void)state, (void)text, (void)len, (void)out, (void)out_len;
    return mg_error_set(MG_ERR_UNSUPPORTED, "not supported yet: Precompiled without utf8proc");
#endif
}

/* ---- encoding ---- */

static mg_status uni_encode(const mg_tokenizer *tk, void *state, const char *text, size_t len,
                            mg_ids *out)
{
    const uni_impl *u = tk->impl;
    uni_state *s = state;
    MG_RETURN_IF(len > UINT32_MAX - 1, MG_ERR_LIMIT, "a text of %zu bytes (more than 4 GiB)", len);
    return mg_hf_frame_encode(&u->frame, &s->fs, text, len, out);
}

static void uni_encoder_free(void *state)
{
    uni_state *s = state;
    if (!s) return;
    mg_spm_scratch_free(&s->scratch);
    free(s->refs.v);
    free(s->pre.v);
    mg_text_free(&s->meta);
    mg_spans_free(&s->spans);
    mg_hf_frame_state_delete(s);
}

static mg_status uni_encoder_create(const mg_tokenizer *tk, void **state)
{
    (void)tk;
    return mg_hf_frame_state_new(sizeof(uni_state), state);
}

static void uni_free(void *impl)
{
    uni_impl *u = impl;
    if (!u) return;
    mg_spm_trie_free(u->trie);
    free(u->score);
    free(u->pool);
    free(u->off);
    mg_hf_frame_free(&u->frame);
    mg_spm_normalizer_free(&u->precompiled);
    mg_pretok_free(u->pre);
    free(u);
}

/* ---- decoding ---- */

typedef struct {
    mg_text a, b; /* the tokens, each NUL-terminated, in a (b: the next step's output) */
    size_t n;
} tokens;

/* The tokens of ids: added tokens first, then the model's pieces. */
static mg_status id_tokens(const uni_impl *u, const int64_t *ids, size_t n, tokens *tk)
{
    for (size_t i = 0; i < n; i++) {
        size_t len = 0;
        const char *s = mg_hf_frame_added_str(&u->frame, ids[i], &len);
        if (!s && (size_t)ids[i] < u->n_vocab) s = piece(u, (int32_t)ids[i]), len = strlen(s);
        if (!s) continue; /* no token: skipped, as tokenizers does */
        MG_FORWARD(mg_text_append(&tk->a, s, len));
        MG_FORWARD(mg_text_append(&tk->a, "", 1));
        tk->n++;
    }
    return MG_OK;
}

static mg_status put(mg_text *t, const char *s, size_t n) { return mg_text_append(t, s, n); }
static mg_status end_token(mg_text *t) { return mg_text_append(t, "", 1); }

/* Replaces every occurrence of `from` by `to` in token s. */
static mg_status replace_all(mg_text *o, const char *s, const char *from, size_t fl,
                             const char *to, size_t tl, int drop)
{
    size_t n = strlen(s);
    for (size_t i = 0; i < n;) {
        if (fl && i + fl <= n && memcmp(s + i, from, fl) == 0) {
            if (!drop) MG_FORWARD(put(o, to, tl));
            i += fl;
        } else {
            MG_FORWARD(put(o, s + i, 1));
            i++;
        }
    }
    return end_token(o);
}

static int byte_token(const char *s, uint8_t *v)
{
    if (strlen(s) != 6 || memcmp(s, "<0x", 3) != 0 || s[5] != '>') return 0;
    unsigned x;
    char hex[3] = {s[3], s[4], 0}, *e;
    x = (unsigned)strtoul(hex, &e, 16);
    if (*e || !((s[3] >= '0' && s[3] <= '9') || (s[3] >= 'A' && s[3] <= 'F')) ||
        !((s[4] >= '0' && s[4] <= '9') || (s[4] >= 'A' && s[4] <= 'F')))
        return 0;
    *v = (uint8_t)x;
    return 1;
}

static int valid_utf8(const uint8_t *s, size_t n)
{
#if MG_HAVE_UTF8PROC
    utf8proc_int32_t c;
    for (size_t i = 0; i < n;) {
        utf8proc_ssize_t k = utf8proc_iterate(s + i, (utf8proc_ssize_t)(n - i), &c);
        if (k <= 0) return 0;
        i += (size_t)k;
    }
    return 1;
#else
    for (size_t i = 0; i < n; i++)
        if (s[i] >= 0x80) return 0;
    return 1;
#endif
}

/* ByteFallback: runs of <0xXX> tokens become their bytes (if valid UTF-8) or one U+FFFD
 * per byte. */
static mg_status flush_bytes(mg_text *o, uint8_t *bytes, size_t *nb, size_t *count)
{
    if (*nb == 0) return MG_OK;
    if (valid_utf8(bytes, *nb)) {
        MG_FORWARD(put(o, (const char *)bytes, *nb));
        MG_FORWARD(end_token(o));
        (*count)++;
    } else {
        for (size_t i = 0; i < *nb; i++) {
            MG_FORWARD(put(o, "\xEF\xBF\xBD", 3));
            MG_FORWARD(end_token(o));
            (*count)++;
        }
    }
    *nb = 0;
    return MG_OK;
}

static mg_status byte_fallback(tokens *tk, mg_text *o, size_t *count)
{
    uint8_t *bytes = mg_malloc(tk->n + 1);
    if (!bytes) return MG_ERR_NOMEM;
    size_t nb = 0;
    mg_status st = MG_OK;
    const char *s = tk->a.p;
    for (size_t i = 0; i < tk->n && st == MG_OK; i++, s += strlen(s) + 1) {
        uint8_t v;
        if (byte_token(s, &v)) {
            bytes[nb++] = v;
            continue;
        }
        st = flush_bytes(o, bytes, &nb, count);
        if (st == MG_OK) st = put(o, s, strlen(s) + 1);
        (*count)++;
    }
    if (st == MG_OK) st = flush_bytes(o, bytes, &nb, count);
    free(bytes);
    return st;
}

/* Strip: up to `start` leading and `stop` trailing occurrences of the content. */
static mg_status strip_token(mg_text *o, const char *s, const dec_step *d)
{
    size_t n = strlen(s), cl = d->alen;
    int k = 0;
    while (k < d->start && cl && n >= cl && memcmp(s, d->a, cl) == 0) s += cl, n -= cl, k++;
    for (k = 0; k < d->stop && cl && n >= cl && memcmp(s + n - cl, d->a, cl) == 0; k++) n -= cl;
    MG_FORWARD(put(o, s, n));
    return end_token(o);
}

static mg_status apply_step(const dec_step *d, tokens *tk)
{
    mg_text *o = &tk->b;
    o->n = 0;
    size_t count = tk->n;
    if (d->kind == DEC_BYTE_FALLBACK) {
        count = 0;
        MG_FORWARD(byte_fallback(tk, o, &count));
    } else if (d->kind == DEC_FUSE) {
        const char *s = tk->a.p;
        for (size_t i = 0; i < tk->n; i++, s += strlen(s) + 1) MG_FORWARD(put(o, s, strlen(s)));
        MG_FORWARD(end_token(o));
        count = 1;
    } else {
        const char *s = tk->a.p;
        for (size_t i = 0; i < tk->n; i++, s += strlen(s) + 1) {
            if (d->kind == DEC_METASPACE)
                MG_FORWARD(replace_all(o, s, d->a, d->alen, " ", 1, i == 0 && d->prepend));
            else if (d->kind == DEC_REPLACE)
                MG_FORWARD(replace_all(o, s, d->a, d->alen, d->b, d->blen, 0));
            else
                MG_FORWARD(strip_token(o, s, d));
        }
    }
    mg_text tmp = tk->a;
    tk->a = tk->b;
    tk->b = tmp;
    tk->n = count;
    return MG_OK;
}

static mg_status decode_tokens(const uni_impl *u, tokens *tk, mg_text *out)
{
    for (size_t i = 0; i < u->n_dec; i++)
        if (tk->n) MG_FORWARD(apply_step(&u->dec[i], tk));
    const char *s = tk->a.p;
    for (size_t i = 0; i < tk->n; i++, s += strlen(s) + 1) {
        if (i && !u->has_decoder) MG_FORWARD(mg_text_append(out, " ", 1));
        MG_FORWARD(mg_text_append(out, s, strlen(s)));
    }
    return MG_OK;
}

static mg_status uni_decode(const mg_tokenizer *t, const int64_t *ids, size_t n, mg_text *out)
{
    const uni_impl *u = t->impl;
    MG_RETURN_IF(u->dec_unsupported[0], MG_ERR_UNSUPPORTED, "%s", u->dec_unsupported);
    tokens tk = {0};
    mg_status st = id_tokens(u, ids, n, &tk);
    if (st == MG_OK) st = decode_tokens(u, &tk, out);
    if (st == MG_OK && out->n == 0) st = mg_text_append(out, "", 0);
    mg_text_free(&tk.a);
    mg_text_free(&tk.b);
    return st;
}

static const struct mg_tok_vtbl uni_vtbl = {
    .encoder_create = uni_encoder_create,
    .encoder_free = uni_encoder_free,
    .encode = uni_encode,
    .free = uni_free,
    .decode = uni_decode,
};

/* ---- building: the decoder ---- */

static void dec_str(char *dst, size_t *len, const json_t *v)
{
    const char *s = json_string_value(v);
    size_t n = s ? json_string_length(v) : 0;
    if (n >= 64) n = 0; /* checked by the caller */
    memcpy(dst, s ? s : "", n);
    dst[n] = 0;
    *len = n;
}

static int dec_fill(dec_step *st, const json_t *j, const char *type)
{
    const json_t *pat = json_object_get(j, "pattern");
    if (strcmp(type, "ByteFallback") == 0) st->kind = DEC_BYTE_FALLBACK;
    else if (strcmp(type, "Fuse") == 0) st->kind = DEC_FUSE;
    else if (strcmp(type, "Metaspace") == 0) {
        const json_t *r = json_object_get(j, "replacement");
        const char *ps = json_string_value(json_object_get(j, "prepend_scheme"));
        const json_t *aps = json_object_get(j, "add_prefix_space");
        if (!json_is_string(r) || json_string_length(r) >= 64) return 0;
        st->kind = DEC_METASPACE;
        dec_str(st->a, &st->alen, r);
        st->prepend = ps ? strcmp(ps, "never") != 0 : !json_is_false(aps);
    } else if (strcmp(type, "Replace") == 0 && json_is_string(json_object_get(pat, "String")) &&
               json_is_string(json_object_get(j, "content")) &&
               json_string_length(json_object_get(pat, "String")) < 64 &&
               json_string_length(json_object_get(j, "content")) < 64) {
        st->kind = DEC_REPLACE;
        dec_str(st->a, &st->alen, json_object_get(pat, "String"));
        dec_str(st->b, &st->blen, json_object_get(j, "content"));
    } else if (strcmp(type, "Strip") == 0 && json_is_string(json_object_get(j, "content")) &&
               json_string_length(json_object_get(j, "content")) < 64) {
        st->kind = DEC_STRIP;
        dec_str(st->a, &st->alen, json_object_get(j, "content"));
        st->start = (int)json_integer_value(json_object_get(j, "start"));
        st->stop = (int)json_integer_value(json_object_get(j, "stop"));
    } else {
        return 0;
    }
    return 1;
}

static void parse_decoder(uni_impl *u, const json_t *j, const char *file, int depth)
{
    const char *type = json_string_value(json_object_get(j, "type"));
    if (u->dec_unsupported[0]) return;
    if (type && strcmp(type, "Sequence") == 0 && depth < 4) {
        const json_t *list = json_object_get(j, "decoders");
        for (size_t i = 0; i < json_array_size(list); i++)
            parse_decoder(u, json_array_get(list, i), file, depth + 1);
        return;
    }
    if (type && u->n_dec < MAX_DEC && dec_fill(&u->dec[u->n_dec], j, type)) {
        u->n_dec++;
        return;
    }
    snprintf(u->dec_unsupported, sizeof u->dec_unsupported, "not supported yet: decoder %.40s "
             "in %.80s", type ? type : "(no type)", file);
}

/* ---- building: the model ---- */

static mg_status malformed(const mg_hf_desc *d, const char *what)
{
    return mg_error_set(MG_ERR_FORMAT, "%s: Unigram model.%s", d->file, what);
}

/* The f64 tokenizers holds for a score written as x: files are written with the shortest
 * round-trip digits (ryu), and serde_json (without float_roundtrip) reads d digits as the
 * integer D times or divided by the power of ten 10^|e| (two roundings, not always the
 * nearest double). pow10[i] = 1e<i> correctly rounded, i in [0, 308]. */
static double serde_f64(double x, const double *pow10)
{
    if (x == 0 || !isfinite(x)) return x;
    char buf[40];
    for (int p = 1; p <= 17; p++) {
        snprintf(buf, sizeof buf, "%.*e", p - 1, x);
        if (strtod(buf, NULL) == x) break;
    }
    const char *s = buf + (buf[0] == '-');
    uint64_t sig = 0;
    int nd = 0;
    for (; *s && *s != 'e'; s++)
        if (*s != '.') sig = sig * 10 + (uint64_t)(*s - '0'), nd++;
    int e = atoi(s + 1) - (nd - 1);
    double f = (double)sig;
    while (e < -308 && f != 0) {
        f /= pow10[308];
        e += 308;
    }
    if (e > 308) return buf[0] == '-' ? -INFINITY : INFINITY;
    f = e >= 0 ? f * pow10[e] : f / pow10[-e];
    return buf[0] == '-' ? -f : f;
}

/* Copies the pieces into the pool; fills scores and min_score. */
static mg_status parse_vocab(uni_impl *u, const mg_hf_desc *d, const json_t *vocab)
{
    size_t n = json_array_size(vocab), total = 0;
    for (size_t i = 0; i < n; i++) {
        const json_t *e = json_array_get(vocab, i);
        if (!json_is_array(e) || json_array_size(e) != 2 ||
            !json_is_string(json_array_get(e, 0)) || !json_is_number(json_array_get(e, 1)))
            return malformed(d, "vocab entry is not [piece, score]");
        total += json_string_length(json_array_get(e, 0)) + 1;
    }
    u->score = mg_malloc((n ? n : 1) * sizeof *u->score);
    u->off = mg_malloc((n ? n : 1) * sizeof *u->off);
    u->pool = mg_malloc(total + 1);
    if (!u->score || !u->off || !u->pool) return MG_ERR_NOMEM;
    double min_score = INFINITY, pow10[309];
    for (int i = 0; i <= 308; i++) {
        char p[16];
        snprintf(p, sizeof p, "1e%d", i);
        pow10[i] = strtod(p, NULL);
    }
    for (size_t i = 0, o = 0; i < n; i++) {
        const json_t *e = json_array_get(vocab, i), *s = json_array_get(e, 0);
        u->off[i] = o;
        memcpy(u->pool + o, json_string_value(s), json_string_length(s) + 1);
        o += json_string_length(s) + 1;
        u->score[i] = serde_f64(json_number_value(json_array_get(e, 1)), pow10);
        if (u->score[i] < min_score) min_score = u->score[i];
    }
    u->n_vocab = n;
    u->unk_score = min_score - UNK_PENALTY;
    return MG_OK;
}

/* The trie (last duplicate wins: inserted from the end) and the <0xXX> pieces. */
static mg_status build_trie(uni_impl *u)
{
    MG_FORWARD(mg_spm_trie_create(&u->trie));
    for (size_t i = u->n_vocab; i-- > 0;) {
        const char *s = piece(u, (int32_t)i);
        size_t len = strlen(s);
        int added;
        if (len == 0) continue;
        MG_FORWARD(mg_spm_trie_insert(u->trie, (const uint8_t *)s, len, (int32_t)i, &added));
    }
    for (int b = 0; b < 256; b++) {
        char name[8];
        snprintf(name, sizeof name, "<0x%02X>", b);
        u->byte_id[b] = mg_spm_trie_find(u->trie, (const uint8_t *)name, 6);
    }
    return MG_OK;
}

static mg_status parse_model(uni_impl *u, const mg_hf_desc *d, int t5)
{
    const json_t *m = d->unigram;
    const json_t *vocab = json_object_get(m, "vocab"), *unk = json_object_get(m, "unk_id");
    const json_t *bf = json_object_get(m, "byte_fallback");
    if (!json_is_array(vocab)) return malformed(d, "vocab is not an array");
    MG_FORWARD(parse_vocab(u, d, vocab));
    if (unk && !json_is_null(unk) &&
        (!json_is_integer(unk) || json_integer_value(unk) < 0 ||
         (size_t)json_integer_value(unk) >= u->n_vocab))
        return malformed(d, "unk_id is not an index into the vocabulary");
    u->unk_id = json_is_integer(unk) ? (int32_t)json_integer_value(unk) : -1;
    if (bf && !json_is_null(bf) && !json_is_boolean(bf))
        return malformed(d, "byte_fallback is not a boolean");
    u->byte_fallback = json_is_true(bf);
    if (t5) { /* transformers' T5Tokenizer: Unigram(vocab, unk_id=2, byte_fallback=False) */
        u->unk_id = u->n_vocab > 2 ? 2 : -1;
        u->byte_fallback = 0;
    }
    return build_trie(u);
}

/* ---- building: Precompiled ---- */

static mg_status build_precompiled(uni_impl *u, const mg_hf_desc *d)
{
#if MG_HAVE_UTF8PROC
    size_t len = strlen(d->precompiled), n;
    uint8_t *blob = mg_malloc(mg_base64_decoded_max(len));
    if (!blob) return MG_ERR_NOMEM;
    mg_status st = mg_base64_decode(d->precompiled, len, blob, &n);
    if (st == MG_OK) st = mg_spm_charsmap_init(&u->precompiled, blob, n);
    free(blob);
    if (st != MG_OK) {
        mg_error_prefix("%s: Precompiled precompiled_charsmap", d->file);
        return st;
    }
    u->has_precompiled = 1;
    for (int c = 0; c < 128; c++) {
        uint8_t b = (uint8_t)c;
        const char *r;
        size_t rl;
        if (mg_spm_charsmap_first(&u->precompiled, &b, 1, &r, &rl)) u->ascii_rule[c] = r;
    }
    return MG_OK;
#else
    (void)u;
    return mg_error_set(MG_ERR_UNSUPPORTED, "not supported yet: normalizer Precompiled (not "
                        "built with utf8proc) in %s", d->file);
#endif
}

/* ---- building: added tokens (hf_frame.c) ---- */

typedef struct {
    uni_impl *u;
    const mg_hf_desc *d;
} builder;

static int64_t vocab_cb(const void *u, const char *s, size_t len)
{
    return len ? mg_spm_trie_find(((const uni_impl *)u)->trie, (const uint8_t *)s, len) : -1;
}

/* ---- building: normalizer and pre-tokenizer ---- */

static mg_status build_pipeline(uni_impl *u, const mg_hf_desc *d, int t5)
{
    if (d->precompiled) MG_FORWARD(build_precompiled(u, d));
    if (!t5) MG_FORWARD(mg_normalizer_copy(&u->frame.norm, &d->norm));
    MG_FORWARD(mg_pretok_create(&u->pre));
    if (t5) {
        u->has_meta = 1;
        u->meta = (mg_hf_pre_stage){.kind = MG_HF_PRE_METASPACE, .replacement = "\xe2\x96\x81",
                                    .prepend_scheme = MG_HF_PREPEND_ALWAYS, .split = 1};
        u->n_split = 1;
        return mg_pretok_add_regex(u->pre, MG_HF_WHITE_SPACE_RE, MG_SPLIT_REMOVED, 0);
    }
    for (size_t i = 0; i < d->n_pre; i++) {
        const mg_hf_pre_stage *s = &d->pre[i];
        if (s->kind == MG_HF_PRE_BYTE_LEVEL)
            return mg_error_set(MG_ERR_UNSUPPORTED, "not supported yet: pre_tokenizer "
                                "ByteLevel with a Unigram model in %s", d->file);
        if (s->kind == MG_HF_PRE_METASPACE) { /* last, checked by the parser */
            u->has_meta = 1;
            u->meta = *s;
            continue;
        }
        mg_status st = s->is_regex ? mg_pretok_add_regex(u->pre, s->pattern, s->behavior, s->invert)
                                   : mg_pretok_add_literal(u->pre, s->pattern, s->behavior,
                                                           s->invert);
        if (st != MG_OK) {
            mg_error_prefix("%s", d->file);
            return st;
        }
        u->n_split++;
    }
    return MG_OK;
}

static int class_is_t5(const mg_hf_desc *d)
{
    return strcmp(d->tokenizer_class, "T5Tokenizer") == 0 ||
           strcmp(d->tokenizer_class, "T5TokenizerFast") == 0;
}

static void describe(mg_tokenizer *tk, const builder *b, int t5)
{
    const uni_impl *u = b->u;
    const mg_hf_desc *d = b->d;
    int n = snprintf(tk->describe, sizeof tk->describe,
             "HuggingFaceTokenizer %s: Unigram%s%s, %zu pieces + %zu added (vocab_size %lld, "
             "eod %lld), normalizer %s%s, pre-tokenizer %zu split stage(s)%s, "
             "post-processor +%zu/+%zu ids%s",
             d->file, u->byte_fallback ? " (byte_fallback)" : "",
             t5 ? " as transformers' T5Tokenizer" : "", u->n_vocab, u->frame.n_added,
             (long long)tk->vocab_size, (long long)tk->eod,
             u->has_precompiled ? "Precompiled+" : "", u->frame.norm.n ? "steps" : "none",
             u->n_split, u->has_meta ? "+Metaspace" : "", u->frame.n_prefix, u->frame.n_suffix,
             mg_hf_frame_special_note(&u->frame));
    if (n >= (int)sizeof tk->describe) memcpy(tk->describe + sizeof tk->describe - 4, "...", 4);
}

static mg_status build(builder *b, mg_tokenizer *tk, const mg_tok_opts *o)
{
    const mg_hf_desc *d = b->d;
    uni_impl *u = b->u;
    int t5 = class_is_t5(d);
    MG_FORWARD(parse_model(u, d, t5));
    MG_FORWARD(mg_hf_frame_build(&u->frame, d, o, vocab_cb, u, (int64_t)u->n_vocab));
    MG_FORWARD(build_pipeline(u, d, t5));
    u->frame.plain = encode_plain;
    u->frame.prenorm = u->has_precompiled ? precompiled : NULL;
    if (t5) {
        u->n_dec = 1;
        u->dec[0] = (dec_step){.kind = DEC_METASPACE, .a = "\xe2\x96\x81", .alen = 3,
                               .prepend = 1};
        u->has_decoder = 1;
    } else if (d->decoder) {
        u->has_decoder = 1;
        parse_decoder(u, d->decoder, d->file, 0);
    }
    tk->vocab_size = u->frame.vocab_size;
    u->tokens_unk = mg_hf_frame_token_id(&u->frame, d->cfg_unk_token, vocab_cb, u);
    tk->eod = mg_hf_frame_token_id(&u->frame, d->eos_token ? d->eos_token : d->sep_token,
                                   vocab_cb, u);
    describe(tk, b, t5);
    return MG_OK;
}

mg_status mg_hf_unigram_build(mg_tokenizer *tk, const mg_hf_desc *d, const mg_tok_opts *o)
{
    builder b = {.d = d};
    b.u = mg_calloc(1, sizeof *b.u);
    if (!b.u) return MG_ERR_NOMEM;
    mg_status st = build(&b, tk, o);
    if (st == MG_OK) {
        tk->vt = &uni_vtbl;
        tk->impl = b.u;
        tk->accepts_lone_surrogates = 0;
    } else {
        uni_free(b.u);
    }
    return st;
}

/* hf_frame.c — the Hugging Face Tokenizer frame (added tokens, normalizer,
 * post-processor ids) shared by the BPE, WordPiece and Unigram tokenizers; contract in
 * hf_frame.h.
 */
#include "tok/hf_frame.h"

#include <stdlib.h>
#include <string.h>

#include "mg/grow.h"

#include "tok/tok_internal.h"

/* ---- building: added tokens ---- */

typedef struct {
    mg_hf_frame *f;
    mg_hf_vocab_fn vocab;
    const void *ctx;
    int64_t n_vocab;
    int64_t max_added; /* largest added-token id so far, -1 if none */
} adder;

int64_t mg_hf_frame_added_id(const mg_hf_frame *f, const char *s, size_t len)
{
    for (size_t i = 0; i < f->n_added; i++)
        if (f->added[i].len == len && memcmp(f->added[i].content, s, len) == 0)
            return f->added[i].id;
    return -1;
}

/* tokenizers' AddedVocabulary::add_tokens, one token (see hf_frame.h). */
static void add_token(adder *a, const mg_added_token *t)
{
    mg_hf_frame *f = a->f;
    if (t->len == 0 || mg_hf_frame_added_id(f, t->content, t->len) >= 0) return;
    mg_added_token k = *t;
    k.id = a->vocab(a->ctx, t->content, t->len);
    if (k.id < 0) {
        int64_t nv = a->n_vocab;
        k.id = a->max_added < 0 ? nv : (a->max_added >= nv || nv == 0) ? a->max_added + 1 : nv;
        f->vocab_size++;
    }
    if (k.id > a->max_added) a->max_added = k.id;
    f->added[f->n_added++] = k;
}

static void add_all(adder *a, const mg_hf_desc *d, const mg_tok_opts *o)
{
    for (size_t i = 0; i < d->n_added; i++) add_token(a, &d->added[i]);
    /* transformers: named special tokens of tokenizer_config.json not yet added */
    for (size_t i = 0; i < d->n_named; i++) {
        mg_added_token t = d->named[i];
        t.special = 1;
        add_token(a, &t);
    }
    /* Megatron: --tokenizer-special-tokens (add_special_tokens, normalized false) */
    for (size_t i = 0; i < o->n_special_tokens; i++) {
        const char *s = o->special_tokens[i];
        mg_added_token t = {.content = s, .len = strlen(s), .special = 1};
        add_token(a, &t);
    }
}

/* Gives the final added tokens their own NUL-terminated copies of the contents. */
static mg_status own_added(mg_hf_frame *f)
{
    size_t total = 1;
    for (size_t i = 0; i < f->n_added; i++) total += f->added[i].len + 1;
    f->added_buf = mg_malloc(total);
    if (!f->added_buf) return MG_ERR_NOMEM;
    for (size_t i = 0, o = 0; i < f->n_added; i++) {
        memcpy(f->added_buf + o, f->added[i].content, f->added[i].len);
        f->added_buf[o + f->added[i].len] = 0;
        f->added[i].content = f->added_buf + o;
        o += f->added[i].len + 1;
    }
    return MG_OK;
}

/* Splits the added tokens into the raw-text and normalized-text matchers. */
static mg_status build_matchers(mg_hf_frame *f)
{
    mg_added_token *part = mg_calloc(f->n_added + 1, sizeof *part);
    if (!part) return MG_ERR_NOMEM;
    size_t n = 0;
    for (size_t i = 0; i < f->n_added; i++)
        if (!f->added[i].normalized) part[n++] = f->added[i];
    mg_status st = mg_added_tokens_create(&f->raw_added, part, n);
    n = 0;
    for (size_t i = 0; i < f->n_added; i++)
        if (f->added[i].normalized) part[n++] = f->added[i];
    if (st == MG_OK) st = mg_added_tokens_create(&f->norm_added, part, n);
    free(part);
    return st;
}

mg_status mg_hf_frame_build(mg_hf_frame *f, const mg_hf_desc *d, const mg_tok_opts *o,
                            mg_hf_vocab_fn vocab, const void *ctx, int64_t n_vocab)
{
    adder a = {.f = f, .vocab = vocab, .ctx = ctx, .n_vocab = n_vocab, .max_added = -1};
    f->added = mg_calloc(d->n_added + d->n_named + o->n_special_tokens + 1, sizeof *f->added);
    if (!f->added) return MG_ERR_NOMEM;
    f->vocab_size = n_vocab;
    add_all(&a, d, o);
    MG_FORWARD(own_added(f));
    MG_FORWARD(build_matchers(f));
    f->include_special = !o->hf_no_include_special;
    memcpy(f->prefix, d->prefix, sizeof f->prefix);
    memcpy(f->suffix, d->suffix, sizeof f->suffix);
    f->n_prefix = d->n_prefix;
    f->n_suffix = d->n_suffix;
    return MG_OK;
}

void mg_hf_frame_free(mg_hf_frame *f)
{
    mg_added_tokens_free(f->raw_added);
    mg_added_tokens_free(f->norm_added);
    free(f->added);
    free(f->added_buf);
    mg_normalizer_free(&f->norm);
}

/* ---- lookups ---- */

int64_t mg_hf_frame_token_id(const mg_hf_frame *f, const char *s, mg_hf_vocab_fn vocab,
                             const void *ctx)
{
    if (!s) return -1;
    int64_t id = mg_hf_frame_added_id(f, s, strlen(s));
    return id >= 0 ? id : vocab(ctx, s, strlen(s));
}

const char *mg_hf_frame_added_str(const mg_hf_frame *f, int64_t id, size_t *len)
{
    for (size_t i = 0; i < f->n_added; i++)
        if (f->added[i].id == id) {
            *len = f->added[i].len;
            return f->added[i].content;
        }
    return NULL;
}

const char *mg_hf_frame_special_note(const mg_hf_frame *f)
{
    return f->include_special ? "" : " (not added: no-include-special-tokens)";
}

/* ---- encoding ---- */

static mg_status plain(const mg_hf_frame *f, mg_hf_frame_state *fs, const char *text,
                       size_t len, int first, mg_ids *out)
{
    return len ? f->plain(f, fs, text, len, first, out) : MG_OK;
}

/* A gap between raw added tokens: normalize, then split on normalized added tokens. */
static mg_status encode_segment(const mg_hf_frame *f, mg_hf_frame_state *fs, const char *text,
                                size_t len, int first, mg_ids *out)
{
    if (len == 0) return MG_OK;
    if (f->prenorm) MG_FORWARD(f->prenorm(f, fs, text, len, &text, &len));
    const char *t;
    size_t n, pos = 0, ms, me;
    int64_t id;
    MG_FORWARD(mg_normalize(&f->norm, &fs->norm, text, len, &t, &n));
    while (mg_added_tokens_find(f->norm_added, t, n, pos, &ms, &me, &id)) {
        MG_FORWARD(plain(f, fs, t + pos, ms - pos, first && pos == 0, out));
        MG_FORWARD(mg_ids_push(out, id));
        pos = me;
    }
    return plain(f, fs, t + pos, n - pos, first && pos == 0, out);
}

static mg_status push_all(mg_ids *out, const int64_t *ids, size_t n)
{
    for (size_t i = 0; i < n; i++) MG_FORWARD(mg_ids_push(out, ids[i]));
    return MG_OK;
}

mg_status mg_hf_frame_encode(const mg_hf_frame *f, mg_hf_frame_state *fs, const char *text,
                             size_t len, mg_ids *out)
{
    size_t pos = 0, ms, me;
    int64_t id;
    if (f->include_special) MG_FORWARD(push_all(out, f->prefix, f->n_prefix));
    while (mg_added_tokens_find(f->raw_added, text, len, pos, &ms, &me, &id)) {
        MG_FORWARD(encode_segment(f, fs, text + pos, ms - pos, pos == 0, out));
        MG_FORWARD(mg_ids_push(out, id));
        pos = me;
    }
    MG_FORWARD(encode_segment(f, fs, text + pos, len - pos, pos == 0, out));
    if (f->include_special) MG_FORWARD(push_all(out, f->suffix, f->n_suffix));
    return MG_OK;
}

mg_status mg_hf_frame_tok_encode(const mg_tokenizer *tk, void *state, const char *text,
                                 size_t len, mg_ids *out)
{
    return mg_hf_frame_encode(tk->impl, state, text, len, out);
}

/* ---- Metaspace ---- */

static mg_status reserve(mg_text *t, size_t n)
{
    return MG_GROW(t->p, t->cap, n, 256);
}

/* The Metaspace text of p[0, n) into buf: ' ' -> r, then the prepended r. */
static mg_status metaspace_text(const mg_hf_pre_stage *meta, size_t rl, mg_text *buf,
                                const char *p, size_t n, int first)
{
    const char *r = meta->replacement;
    size_t o = 0;
    MG_FORWARD(reserve(buf, rl + n * (rl > 1 ? rl : 1) + 1));
    int starts = n >= 1 && (p[0] == ' ' || (n >= rl && memcmp(p, r, rl) == 0));
    mg_hf_prepend sc = meta->prepend_scheme;
    if (!starts && (sc == MG_HF_PREPEND_ALWAYS || (sc == MG_HF_PREPEND_FIRST && first))) {
        memcpy(buf->p, r, rl);
        o = rl;
    }
    for (size_t i = 0; i < n; i++) {
        if (p[i] == ' ') {
            memcpy(buf->p + o, r, rl);
            o += rl;
        } else {
            buf->p[o++] = p[i];
        }
    }
    buf->n = o;
    return MG_OK;
}

mg_status mg_hf_metaspace(const mg_hf_pre_stage *meta, mg_text *buf, const char *p, size_t n,
                          int first, mg_hf_piece_fn piece, const void *model, void *state,
                          mg_ids *out)
{
    size_t rl = strlen(meta->replacement), start = 0;
    MG_FORWARD(metaspace_text(meta, rl, buf, p, n, first));
    const char *q = buf->p;
    size_t m = buf->n;
    if (!meta->split) return piece(model, state, q, m, out);
    for (size_t i = 1; i + rl <= m; i++) {
        if (memcmp(q + i, meta->replacement, rl) != 0) continue;
        MG_FORWARD(piece(model, state, q + start, i - start, out));
        start = i;
        i += rl - 1;
    }
    return piece(model, state, q + start, m - start, out);
}

/* ---- per-thread state ---- */

void mg_hf_frame_state_delete(void *state)
{
    mg_hf_frame_state *s = state;
    if (!s) return;
    mg_norm_buf_free(&s->norm);
    mg_pretok_scratch_free(s->scratch);
    free(s);
}

mg_status mg_hf_frame_state_new(size_t size, void **state)
{
    *state = NULL;
    mg_hf_frame_state *s = mg_calloc(1, size);
    if (!s) return MG_ERR_NOMEM;
    mg_status st = mg_pretok_scratch_create(&s->scratch);
    if (st != MG_OK) {
        mg_hf_frame_state_delete(s);
        return st;
    }
    *state = s;
    return MG_OK;
}

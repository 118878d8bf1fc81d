/* tok_hf_wordpiece.c — WordPiece tokenizers over an mg_hf_desc (tokenizer.json, or the
 * description tok_bert.c builds from vocab.txt); see tok_hf_wordpiece.h.
 *
 * Encoding allocates nothing per word: the normalization buffers, the two span lists
 * (pieces before / after a pre-tokenizer stage) and a word -> ids cache live in the
 * per-thread state.
 */
#include "tok/tok_hf_wordpiece.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/file.h"
#include "mg/unicode.h"
#include "tok/added_tokens.h"
#include "tok/bert_basic.h"
#include "tok/decode_util.h"
#include "tok/hf_frame.h"
#include "tok/normalize.h"
#include "tok/tok_internal.h"
#include "tok/wordpiece.h"

typedef struct {
    mg_hf_frame frame; /* first: added tokens, normalizer, post-processor ids */
    mg_wordpiece *wp;
    mg_hf_pre_kind pre_kind[MG_HF_MAX_PRE];
    mg_pretok *pre_split[MG_HF_MAX_PRE]; /* Split stages (regex or literal) */
    size_t n_pre;
    mg_hf_decoder *dec; /* NULL: dec_err says why decoding is not supported */
    char dec_err[256];
    int cleanup_spaces;
} wp_impl;

/* Per-thread word cache: words of up to WC_MAXW bytes whose encoding has at most
 * WC_MAXI ids; a direct-mapped table (a colliding word replaces the entry). */
#define WC_SLOTS 65536
#define WC_MAXW 24
#define WC_MAXI 6

typedef struct {
    uint64_t h;
    uint8_t wlen, nids; /* wlen 0: empty */
    char w[WC_MAXW];
    int32_t ids[WC_MAXI];
} wc_entry;

typedef struct {
    mg_hf_frame_state fs; /* first (hf_frame.h) */
    mg_spans a, b;
    wc_entry *cache; /* WC_SLOTS entries */
} wp_state;

static uint64_t word_hash(const char *s, size_t n)
{
    uint64_t h = 0x9E3779B97F4A7C15ULL ^ n;
    for (size_t i = 0; i < n; i++) h = (h ^ (unsigned char)s[i]) * 0x100000001B3ULL;
    return h ^ (h >> 32);
}

/* Encodes one word through the cache. */
static mg_status encode_word(const wp_impl *h, wp_state *s, const char *w, size_t n, mg_ids *out)
{
    if (n > WC_MAXW) return mg_wordpiece_encode_word(h->wp, w, n, out);
    uint64_t hv = word_hash(w, n);
    wc_entry *e = &s->cache[hv & (WC_SLOTS - 1)];
    if (e->wlen == n && e->h == hv && memcmp(e->w, w, n) == 0) {
        for (size_t i = 0; i < e->nids; i++) MG_FORWARD(mg_ids_push(out, e->ids[i]));
        return MG_OK;
    }
    size_t mark = out->n;
    MG_FORWARD(mg_wordpiece_encode_word(h->wp, w, n, out));
    if (out->n - mark > WC_MAXI) return MG_OK;
    e->h = hv;
    e->wlen = (uint8_t)n;
    e->nids = (uint8_t)(out->n - mark);
    memcpy(e->w, w, n);
    for (size_t i = 0; i < e->nids; i++) e->ids[i] = (int32_t)out->v[mark + i];
    return MG_OK;
}

/* ---- pre-tokenization ---- */

/* Punctuation(Isolated): every punctuation character is a piece, and so is each gap. */
static mg_status split_punct(const char *text, const mg_span *in, mg_spans *out)
{
    size_t start = in->off, end = (size_t)in->off + in->len;
    for (size_t i = start; i < end;) {
        uint32_t cp;
        size_t k = mg_utf8_decode((const uint8_t *)text + i, end - i, &cp);
        if (mg_bert_is_punct(cp)) {
            if (i > start) MG_FORWARD(mg_spans_push(out, (uint32_t)start, (uint32_t)(i - start)));
            MG_FORWARD(mg_spans_push(out, (uint32_t)i, (uint32_t)k));
            start = i + k;
        }
        i += k;
    }
    if (end > start) MG_FORWARD(mg_spans_push(out, (uint32_t)start, (uint32_t)(end - start)));
    return MG_OK;
}

/* One pre-tokenizer stage applied to every piece of s->a; the result goes to s->b. */
static mg_status stage(const wp_impl *h, wp_state *s, size_t k, const char *text)
{
    s->b.n = 0;
    for (size_t i = 0; i < s->a.n; i++) {
        const mg_span *p = &s->a.v[i];
        if (h->pre_kind[k] == MG_HF_PRE_BERT) {
            MG_FORWARD(mg_bert_pretokenize(text + p->off, p->len, p->off, &s->b));
        } else if (h->pre_kind[k] == MG_HF_PRE_PUNCTUATION) {
            MG_FORWARD(split_punct(text, p, &s->b));
        } else {
            size_t from = s->b.n;
            MG_FORWARD(mg_pretok_split(h->pre_split[k], s->fs.scratch, text + p->off, p->len,
                                       &s->b));
            for (size_t j = from; j < s->b.n; j++) s->b.v[j].off += p->off;
        }
    }
    mg_spans t = s->a;
    s->a = s->b;
    s->b = t;
    return MG_OK;
}

/* Pre-tokenizes text (no added token in it) and encodes each word (mg_hf_plain_fn). */
static mg_status encode_words(const void *model, void *state, const char *text, size_t len,
                              int first, mg_ids *out)
{
    const wp_impl *h = model;
    wp_state *s = state;
    (void)first;
    MG_RETURN_IF(len > UINT32_MAX - 1, MG_ERR_LIMIT,
                 "a text segment of %zu bytes (more than 4 GiB)", len);
    s->a.n = 0;
    MG_FORWARD(mg_spans_push(&s->a, 0, (uint32_t)len));
    for (size_t k = 0; k < h->n_pre; k++) MG_FORWARD(stage(h, s, k, text));
    for (size_t i = 0; i < s->a.n; i++)
        MG_FORWARD(encode_word(h, s, text + s->a.v[i].off, s->a.v[i].len, out));
    return MG_OK;
}

static void wp_encoder_free(void *state)
{
    wp_state *s = state;
    if (!s) return;
    mg_spans_free(&s->a);
    mg_spans_free(&s->b);
    free(s->cache);
    mg_hf_frame_state_delete(s);
}

static mg_status wp_encoder_create(const mg_tokenizer *tk, void **state)
{
    (void)tk;
    MG_FORWARD(mg_hf_frame_state_new(sizeof(wp_state), state));
    wp_state *s = *state;
    s->cache = mg_calloc(WC_SLOTS, sizeof *s->cache);
    if (s->cache) return MG_OK;
    wp_encoder_free(s);
    *state = NULL;
    return MG_ERR_NOMEM;
}

/* ---- decoding ---- */

static const char *token_string(const wp_impl *h, int64_t id, size_t *len)
{
    const char *s = mg_hf_frame_added_str(&h->frame, id, len);
    return s ? s : mg_wordpiece_token(h->wp, id, len);
}

static mg_status decode_tokens(const wp_impl *h, const int64_t *ids, size_t n,
                               mg_tok_strs *toks, mg_text *joined)
{
    for (size_t i = 0; i < n; i++) {
        size_t len;
        const char *s = token_string(h, ids[i], &len);
        if (s) MG_FORWARD(mg_tok_strs_push(toks, s, len)); /* HF drops unknown ids */
    }
    return mg_hf_decoder_run(h->dec, toks, joined);
}

static mg_status wp_decode(const mg_tokenizer *tk, const int64_t *ids, size_t n, mg_text *out)
{
    const wp_impl *h = tk->impl;
    MG_RETURN_IF(!h->dec, MG_ERR_UNSUPPORTED, "%s", h->dec_err);
    mg_tok_strs toks = {0};
    mg_text joined = {0};
    mg_status st = decode_tokens(h, ids, n, &toks, &joined);
    if (st == MG_OK && h->cleanup_spaces)
        st = mg_decode_cleanup(out, joined.n ? joined.p : "", joined.n, 0);
    else if (st == MG_OK)
        st = mg_text_append(out, joined.n ? joined.p : "", joined.n);
    mg_tok_strs_free(&toks);
    mg_text_free(&joined);
    return st;
}

static void wp_free(void *impl)
{
    wp_impl *h = impl;
    if (!h) return;
    mg_wordpiece_free(h->wp);
    mg_hf_frame_free(&h->frame);
    for (size_t i = 0; i < h->n_pre; i++) mg_pretok_free(h->pre_split[i]);
    mg_hf_decoder_free(h->dec);
    free(h);
}

static const struct mg_tok_vtbl wp_vtbl = {
    .encoder_create = wp_encoder_create,
    .encoder_free = wp_encoder_free,
    .encode = mg_hf_frame_tok_encode,
    .free = wp_free,
    .decode = wp_decode,
};

/* ---- building ---- */

static mg_status build_model(wp_impl *h, const mg_hf_desc *d)
{
    MG_FORWARD(mg_wordpiece_create(&h->wp, d->wp_prefix ? d->wp_prefix : "##",
                                   d->unk_token ? d->unk_token : "[UNK]",
                                   (size_t)d->wp_max_chars));
    for (size_t i = 0; i < d->n_vocab; i++)
        MG_FORWARD(mg_wordpiece_add(h->wp, d->vocab[i].s, d->vocab[i].len, d->vocab_id[i]));
    return mg_wordpiece_finalize(h->wp);
}

static int64_t vocab_cb(const void *wp, const char *s, size_t len)
{
    return mg_wordpiece_id(wp, s, len);
}

static mg_status build_pre(wp_impl *h, const mg_hf_desc *d)
{
    for (size_t i = 0; i < d->n_pre; i++) {
        const mg_hf_pre_stage *s = &d->pre[i];
        h->pre_kind[i] = s->kind;
        h->n_pre = i + 1;
        if (s->kind == MG_HF_PRE_BYTE_LEVEL || s->kind == MG_HF_PRE_METASPACE)
            return mg_error_set(MG_ERR_UNSUPPORTED, "not supported yet: a %s pre-tokenizer "
                                "with a WordPiece model in %s",
                                s->kind == MG_HF_PRE_BYTE_LEVEL ? "ByteLevel" : "Metaspace",
                                d->file);
        if (s->kind == MG_HF_PRE_PUNCTUATION && s->behavior != MG_SPLIT_ISOLATED)
            return mg_error_set(MG_ERR_UNSUPPORTED, "not supported yet: a Punctuation "
                                "pre-tokenizer with a behavior other than Isolated in %s",
                                d->file);
        if ((s->kind == MG_HF_PRE_BERT || s->kind == MG_HF_PRE_PUNCTUATION) &&
            !mg_bert_available())
            return mg_error_set(MG_ERR_UNSUPPORTED, "%s: BertPreTokenizer/Punctuation: not "
                                "built with utf8proc", d->file);
        if (s->kind != MG_HF_PRE_SPLIT) continue;
        MG_FORWARD(mg_pretok_create(&h->pre_split[i]));
        mg_pretok *p = h->pre_split[i];
        mg_status st = s->is_regex ? mg_pretok_add_regex(p, s->pattern, s->behavior, s->invert)
                                   : mg_pretok_add_literal(p, s->pattern, s->behavior, s->invert);
        if (st != MG_OK) {
            mg_error_prefix("%s", d->file);
            return st;
        }
    }
    return MG_OK;
}

static void build_decoder(wp_impl *h, const mg_hf_desc *d)
{
    if (mg_hf_decoder_create(&h->dec, d->decoder, d->file) != MG_OK) {
        snprintf(h->dec_err, sizeof h->dec_err, "%s", mg_last_error());
        h->dec = NULL;
    }
    h->cleanup_spaces = d->cleanup_spaces == 1;
}

static void describe(mg_tokenizer *tk, const wp_impl *h, const mg_hf_desc *d, const char *kind)
{
    char nz[128] = "", pre[128] = "";
    static const char *const pre_names[] = {"?", "Split", "ByteLevel", "Metaspace",
                                            "BertPreTokenizer", "Punctuation"};
    size_t u = 0;
    const mg_hf_frame *f = &h->frame;
    for (size_t i = 0; i < f->norm.n && u < sizeof nz - 24; i++)
        u += (size_t)snprintf(nz + u, sizeof nz - u, "%s%s", i ? "+" : "",
                              mg_norm_step_name(f->norm.steps[i]));
    u = 0;
    for (size_t i = 0; i < h->n_pre && u < sizeof pre - 24; i++) {
        mg_hf_pre_kind k = h->pre_kind[i] <= MG_HF_PRE_PUNCTUATION ? h->pre_kind[i] : 0;
        u += (size_t)snprintf(pre + u, sizeof pre - u, "%s%s", i ? "+" : "", pre_names[k]);
    }
    int n = snprintf(tk->describe, sizeof tk->describe,
                     "%s %s: WordPiece, %zu tokens + %zu added (vocab_size %lld, eod %lld), "
                     "normalizer %s, pre-tokenizer %s, post-processor +%zu/+%zu ids%s",
                     kind, d->file, mg_wordpiece_size(h->wp), f->n_added,
                     (long long)tk->vocab_size, (long long)tk->eod, nz[0] ? nz : "none",
                     pre[0] ? pre : "none", f->n_prefix, f->n_suffix,
                     mg_hf_frame_special_note(f));
    if (n >= (int)sizeof tk->describe) memcpy(tk->describe + sizeof tk->describe - 4, "...", 4);
}

static mg_status build(wp_impl *h, mg_tokenizer *tk, const mg_hf_desc *d, const mg_tok_opts *o)
{
    MG_FORWARD(build_model(h, d));
    MG_FORWARD(mg_hf_frame_build(&h->frame, d, o, vocab_cb, h->wp,
                                 (int64_t)mg_wordpiece_size(h->wp)));
    h->frame.plain = encode_words;
    MG_FORWARD(build_pre(h, d));
    MG_FORWARD(mg_normalizer_copy(&h->frame.norm, &d->norm));
    build_decoder(h, d);
    tk->vocab_size = h->frame.vocab_size;
    tk->eod = mg_hf_frame_token_id(&h->frame, d->eos_token ? d->eos_token : d->sep_token,
                                   vocab_cb, h->wp);
    return MG_OK;
}

mg_status mg_hf_wordpiece_build(mg_tokenizer *tk, const mg_hf_desc *d, const char *kind,
                                const mg_tok_opts *o)
{
    MG_RETURN_IF(d->wp_max_chars < 0, MG_ERR_FORMAT, "%s: negative max_input_chars_per_word",
                 d->file);
    wp_impl *h = mg_calloc(1, sizeof *h);
    if (!h) return MG_ERR_NOMEM;
    mg_status st = build(h, tk, d, o);
    if (st != MG_OK) {
        wp_free(h);
        return st;
    }
    tk->vt = &wp_vtbl;
    tk->impl = h;
    tk->accepts_lone_surrogates = 0;
    describe(tk, h, d, kind);
    return MG_OK;
}

/* ---- transformers 5's BertTokenizer class ---- */

typedef struct {
    int lower, chinese, strip; /* strip: -1 = follows lower */
    char unk[128], cls[128], sep[128];
} bert_cfg;

static void cfg_string(const json_t *root, const char *key, const char *def, char *out, size_t cap)
{
    const json_t *v = json_object_get(root, key);
    if (json_is_object(v)) v = json_object_get(v, "content");
    snprintf(out, cap, "%s", json_is_string(v) ? json_string_value(v) : def);
}

static int cfg_bool(const json_t *root, const char *key, int def)
{
    const json_t *v = json_object_get(root, key);
    return json_is_boolean(v) ? json_is_true(v) : def;
}

/* BertTokenizer and its transformers 5 subclasses / aliases (same pipeline). */
static int bert_class(const char *cls)
{
    static const char *const names[] = {"BertTokenizer", "DistilBertTokenizer",
                                        "ConvBertTokenizer", "MobileBertTokenizer",
                                        "SqueezeBertTokenizer"};
    for (size_t i = 0; cls && i < sizeof names / sizeof names[0]; i++) {
        size_t n = strlen(names[i]);
        if (strncmp(cls, names[i], n) == 0 && (cls[n] == 0 || strcmp(cls + n, "Fast") == 0))
            return 1;
    }
    return 0;
}

static mg_status read_bert_cfg(const char *dir, bert_cfg *c, int *is_bert)
{
    char path[MG_PATH_MAX];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    json_error_t err;
    json_t *root = json_load_file(path, JSON_DECODE_INT_AS_REAL, &err);
    *is_bert = 0;
    if (!root) return MG_OK; /* missing: the file's pipeline stays (parse errors: hf_json) */
    const char *cls = json_string_value(json_object_get(root, "tokenizer_class"));
    *is_bert = bert_class(cls);
    c->lower = cfg_bool(root, "do_lower_case", 1);
    c->chinese = cfg_bool(root, "tokenize_chinese_chars", 1);
    c->strip = cfg_bool(root, "strip_accents", -1);
    cfg_string(root, "unk_token", "[UNK]", c->unk, sizeof c->unk);
    cfg_string(root, "cls_token", "[CLS]", c->cls, sizeof c->cls);
    cfg_string(root, "sep_token", "[SEP]", c->sep, sizeof c->sep);
    json_decref(root);
    return MG_OK;
}

int64_t mg_hf_desc_vocab_id(const mg_hf_desc *d, const char *s)
{
    int64_t id = -1;
    for (size_t i = 0; i < d->n_vocab; i++)
        if (d->vocab[i].len == strlen(s) && memcmp(d->vocab[i].s, s, d->vocab[i].len) == 0)
            id = d->vocab_id[i];
    return id;
}

mg_status mg_hf_wordpiece_decoder(mg_hf_desc *d)
{
    json_t *dec = json_pack("{s:s, s:s, s:b}", "type", "WordPiece", "prefix", "##", "cleanup", 1);
    if (!dec) return mg_error_set(MG_ERR_NOMEM, "out of memory");
    MG_FORWARD(mg_hf_desc_own_json(d, dec));
    d->decoder = dec;
    return MG_OK;
}

static mg_status apply_bert_class(mg_hf_desc *d, const bert_cfg *c, mg_hf_str *owned)
{
    int64_t cls = mg_hf_desc_vocab_id(d, c->cls), sep = mg_hf_desc_vocab_id(d, c->sep);
    MG_RETURN_IF(cls < 0 || sep < 0, MG_ERR_UNSUPPORTED, "not supported yet: a BertTokenizer "
                 "whose cls_token/sep_token is not in the vocabulary in %s", d->file);
    int strip = c->strip < 0 ? c->lower : c->strip;
    mg_normalizer_free(&d->norm);
    MG_FORWARD(mg_normalizer_add_bert(&d->norm, MG_NORM_BERT_CLEAN |
                                      (c->chinese ? MG_NORM_BERT_CHINESE : 0) |
                                      (strip ? MG_NORM_BERT_STRIP_ACCENTS : 0) |
                                      (c->lower ? MG_NORM_BERT_LOWERCASE : 0)));
    d->n_pre = 1;
    d->pre[0] = (mg_hf_pre_stage){.kind = MG_HF_PRE_BERT};
    d->wp_prefix = "##";
    d->wp_max_chars = 100;
    d->unk_token = owned->s;
    d->prefix[0] = cls;
    d->suffix[0] = sep;
    d->n_prefix = d->n_suffix = 1;
    return mg_hf_wordpiece_decoder(d);
}

mg_status mg_hf_wordpiece_create(mg_tokenizer *tk, mg_hf_desc *d, const mg_tok_opts *o)
{
    bert_cfg c;
    int is_bert;
    MG_FORWARD(read_bert_cfg(o->model, &c, &is_bert));
    if (is_bert) {
        char *unk = mg_malloc(strlen(c.unk) + 1);
        if (!unk) return MG_ERR_NOMEM;
        memcpy(unk, c.unk, strlen(c.unk) + 1);
        MG_FORWARD(mg_hf_desc_own_text(d, unk));
        mg_hf_str owned = {unk, strlen(unk)};
        MG_FORWARD(apply_bert_class(d, &c, &owned));
    }
    return mg_hf_wordpiece_build(tk, d, "HuggingFaceTokenizer", o);
}

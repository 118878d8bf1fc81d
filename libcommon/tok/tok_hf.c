/* tok_hf.c — Megatron's HuggingFaceTokenizer over a BPE tokenizer.json (byte-level, or
 * SentencePiece-style char-initial), and the shared engine behind GPT2BPETokenizer
 * (tok_gpt2.c).
 *
 * Semantics (Megatron HEAD = transformers 5 AutoTokenizer on a local folder):
 *   - ids = tokenizer(text).input_ids: added tokens with normalized:false are matched in the
 *     raw text (leftmost-longest, single_word/lstrip/rstrip); each gap is normalized, then
 *     searched for normalized:true added tokens; each remaining gap is pre-tokenized (Split
 *     stages, then ByteLevel) and each piece BPE-encoded on raw bytes; the post-processor's
 *     special ids go around the whole (TemplateProcessing / Bert / Roberta).
 *   - Char-initial files (no ByteLevel: Llama-2, Mistral, Gemma): vocabulary strings are
 *     plain UTF-8; each gap is normalized (Prepend, Replace, NFC), split by the Split
 *     stages, then Metaspace (' ' -> replacement, prepend per always/first/never, where
 *     "first" means the piece at offset 0 of the original text, optional split before
 *     each replacement) and each piece encoded by mg_bpe_encode_chars (byte_fallback,
 *     unk, fuse_unk). transformers' LlamaTokenizer / GemmaTokenizer rebuild the pipeline
 *     (mg_hf_apply_class).
 *     transformers 5 ignores add_bos_token / add_eos_token of tokenizer_config.json when a
 *     tokenizer.json exists, so only tokenizer.json's post-processor adds tokens.
 *   - --tokenizer-hf-no-include-special-tokens: convert_tokens_to_ids(tokenize(text)), the
 *     same ids without the post-processor's tokens.
 *   - vocab_size = len(tokenizer) = model vocabulary + added tokens not in it; eod = id of
 *     tokenizer_config.json's eos_token (else sep_token, else none). Named special tokens
 *     of tokenizer_config.json missing from added_tokens, and --tokenizer-special-tokens,
 *     become added (special, matched in text) tokens, new ones numbered from
 *     max(vocabulary size, largest added id + 1), as transformers/tokenizers do.
 * Encoding allocates nothing per piece: spans, normalization and prefix-space buffers live
 * in the per-thread state and only grow.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/file.h"
#include "tok/added_tokens.h"
#include "tok/bpe.h"
#include "tok/byte_level.h"
#include "tok/decode_util.h"
#include "tok/hf_frame.h"
#include "tok/hf_json.h"
#include "tok/tok_hf_wordpiece.h"
#include "tok/normalize.h"
#include "tok/tok_hf_unigram.h"
#include "tok/tok_internal.h"

#define MAX_NOCUT 16
#define SPM_SPACE "\xe2\x96\x81" /* U+2581 */

/* Decoding: a token string that is not a BPE token's byte-level form (added tokens, and
 * vocabulary strings that are not byte-level). */
typedef struct {
    int64_t id;
    size_t off, len; /* in hf_impl.extra_buf */
    int prio;        /* 0 added (wins, as HF looks the added vocabulary up first), 1 vocab */
} dec_entry;

typedef struct {
    mg_hf_frame frame;     /* first: added tokens, normalizer, post-processor ids */
    mg_bpe *bpe;
    mg_hf_decoder *dec;    /* NULL: dec_err says why decoding is not supported */
    char dec_err[256];
    dec_entry *extra;      /* sorted by id, one entry per id */
    size_t n_extra;
    char *extra_buf;
    int chars;             /* char-initial model (mg_bpe_encode_chars) */
    int has_meta;          /* a final Metaspace stage (chars only) */
    mg_hf_pre_stage meta;
    /* chars: pieces are cut before each U+2581 run (then encoded one by one, cached) where
     * no token can span the cut: cut_ok, and the character before the run is a token and
     * not one of the n_nocut characters that some token has right before a U+2581. */
    int cut_ok;
    char nocut[MAX_NOCUT][4];
    uint8_t nocut_len[MAX_NOCUT];
    size_t n_nocut;
    mg_pretok *pre;        /* Split stages (+ the ByteLevel regex unless prefix_space) */
    mg_pretok *pre_prefix; /* ByteLevel regex run on each space-prefixed piece, or NULL */
    int prefix_space;      /* ByteLevel add_prefix_space */
} hf_impl;

typedef struct {
    mg_hf_frame_state fs; /* first (hf_frame.h) */
    mg_bpe_cache *cache;
    mg_spans spans, spans2;
    mg_text pbuf; /* " " + piece, or the Metaspace output of a piece */
} hf_state;

/* ---- encoding ---- */

static mg_status bpe_piece(const hf_impl *h, hf_state *s, const char *p, size_t n, mg_ids *out)
{
    return mg_bpe_encode_piece(h->bpe, s->cache, (const uint8_t *)p, n, out);
}

/* " " + piece into the state's buffer. */
static mg_status with_space(hf_state *s, const char *p, size_t n, const char **q)
{
    s->pbuf.n = 0;
    MG_FORWARD(mg_text_append(&s->pbuf, " ", 1));
    MG_FORWARD(mg_text_append(&s->pbuf, p, n));
    *q = s->pbuf.p;
    return MG_OK;
}

/* ByteLevel add_prefix_space: a piece not starting with ' ' gets one, then the regex. */
static mg_status prefixed_piece(const hf_impl *h, hf_state *s, const char *p, size_t n,
                                mg_ids *out)
{
    if (p[0] != ' ') {
        MG_FORWARD(with_space(s, p, n, &p));
        n++;
    }
    if (!h->pre_prefix) return bpe_piece(h, s, p, n, out);
    s->spans2.n = 0;
    MG_FORWARD(mg_pretok_split(h->pre_prefix, s->fs.scratch, p, n, &s->spans2));
    for (size_t i = 0; i < s->spans2.n; i++)
        MG_FORWARD(bpe_piece(h, s, p + s->spans2.v[i].off, s->spans2.v[i].len, out));
    return MG_OK;
}

/* ---- char-initial encoding ---- */

static mg_status chars_encode(const hf_impl *h, hf_state *s, const char *p, size_t n,
                              mg_ids *out)
{
    return mg_bpe_encode_chars(h->bpe, s->cache, (const uint8_t *)p, n, out);
}

/* May the piece be cut before the U+2581 at p[i] (i > 0)? */
static int can_cut(const hf_impl *h, const char *p, size_t i)
{
    size_t k = i - 1;
    while (k > 0 && ((unsigned char)p[k] & 0xC0) == 0x80) k--;
    size_t cl = i - k;
    if (cl == 3 && memcmp(p + k, SPM_SPACE, 3) == 0) return 0; /* inside a run */
    for (size_t j = 0; j < h->n_nocut; j++)
        if (h->nocut_len[j] == cl && memcmp(h->nocut[j], p + k, cl) == 0) return 0;
    return mg_bpe_token_id(h->bpe, (const uint8_t *)p + k, cl) >= 0;
}

/* Encodes a piece, cut before U+2581 runs where that cannot change the result: no token
 * spans a cut, so no merge crosses it and each part merges as it would in the whole. */
static mg_status chars_piece(const void *model, void *state, const char *p, size_t n,
                             mg_ids *out)
{
    const hf_impl *h = model;
    hf_state *s = state;
    if (!h->cut_ok) return chars_encode(h, s, p, n, out);
    size_t start = 0;
    const char *q = p + 1, *end = p + n;
    while (q + 3 <= end && (q = memmem(q, (size_t)(end - q), SPM_SPACE, 3)) != NULL) {
        size_t i = (size_t)(q - p);
        if (can_cut(h, p, i)) {
            MG_FORWARD(chars_encode(h, s, p + start, i - start, out));
            start = i;
        }
        q += 3;
    }
    return chars_encode(h, s, p + start, n - start, out);
}

/* Char-initial: Split stages, then Metaspace (if any), each piece encoded. `first`: the
 * text starts at offset 0 of the original text. */
static mg_status encode_plain_chars(const hf_impl *h, hf_state *s, const char *text, size_t len,
                                    int first, mg_ids *out)
{
    s->spans.n = 0;
    MG_FORWARD(mg_pretok_split(h->pre, s->fs.scratch, text, len, &s->spans));
    for (size_t i = 0; i < s->spans.n; i++) {
        const char *p = text + s->spans.v[i].off;
        size_t n = s->spans.v[i].len;
        if (h->has_meta)
            MG_FORWARD(mg_hf_metaspace(&h->meta, &s->pbuf, p, n, first && s->spans.v[i].off == 0,
                                       chars_piece, h, s, out));
        else
            MG_FORWARD(chars_piece(h, s, p, n, out));
    }
    return MG_OK;
}

/* Pre-tokenizes and BPE-encodes text with no added token in it (mg_hf_plain_fn). */
static mg_status encode_plain(const void *model, void *state, const char *text, size_t len,
                              int first, mg_ids *out)
{
    const hf_impl *h = model;
    hf_state *s = state;
    if (len > UINT32_MAX - 1)
        return mg_error_set(MG_ERR_LIMIT, "a text segment of %zu bytes (more than 4 GiB)", len);
    if (h->chars) return encode_plain_chars(h, s, text, len, first, out);
    s->spans.n = 0;
    MG_FORWARD(mg_pretok_split(h->pre, s->fs.scratch, text, len, &s->spans));
    if (!h->prefix_space)
        return mg_bpe_encode_spans(h->bpe, s->cache, text, s->spans.v, s->spans.n, out);
    for (size_t i = 0; i < s->spans.n; i++) {
        const char *p = text + s->spans.v[i].off;
        size_t n = s->spans.v[i].len;
        if (h->prefix_space)
            MG_FORWARD(prefixed_piece(h, s, p, n, out));
        else
            MG_FORWARD(bpe_piece(h, s, p, n, out));
    }
    return MG_OK;
}

static void hf_encoder_free(void *state)
{
    hf_state *s = state;
    if (!s) return;
    mg_bpe_cache_free(s->cache);
    mg_spans_free(&s->spans);
    mg_spans_free(&s->spans2);
    mg_text_free(&s->pbuf);
    mg_hf_frame_state_delete(s);
}

static mg_status hf_encoder_create(const mg_tokenizer *tk, void **state)
{
    const hf_impl *h = tk->impl;
    MG_FORWARD(mg_hf_frame_state_new(sizeof(hf_state), state));
    hf_state *s = *state;
    mg_status st = mg_bpe_cache_create(&s->cache, h->bpe);
    if (st != MG_OK) {
        hf_encoder_free(s);
        *state = NULL;
    }
    return st;
}

static void hf_free(void *impl)
{
    hf_impl *h = impl;
    if (!h) return;
    mg_bpe_free(h->bpe);
    mg_hf_frame_free(&h->frame);
    mg_pretok_free(h->pre);
    mg_pretok_free(h->pre_prefix);
    mg_hf_decoder_free(h->dec);
    free(h->extra);
    free(h->extra_buf);
    free(h);
}

/* ---- decoding (tokenizers 0.23 Tokenizer::decode, special tokens kept) ---- */

static const dec_entry *find_extra(const hf_impl *h, int64_t id)
{
    size_t lo = 0, hi = h->n_extra;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (h->extra[mid].id == id) return &h->extra[mid];
        if (h->extra[mid].id < id) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* Pushes the token string of id (added vocabulary first, then the model; an id that is
 * neither is dropped, as HF's filter_map does). */
static mg_status push_token(const hf_impl *h, int64_t id, mg_tok_strs *toks, mg_text *scratch)
{
    const dec_entry *e = find_extra(h, id);
    if (e) return mg_tok_strs_push(toks, h->extra_buf + e->off, e->len);
    size_t len;
    const uint8_t *bytes = mg_bpe_token_bytes(h->bpe, (int32_t)id, &len);
    if (!bytes) return MG_OK;
    if (h->chars) return mg_tok_strs_push(toks, (const char *)bytes, len);
    scratch->n = 0; /* room for the byte-level form: at most 2 bytes per byte */
    MG_FORWARD(mg_text_append(scratch, (const char *)bytes, len));
    MG_FORWARD(mg_text_append(scratch, (const char *)bytes, len));
    size_t m = mg_byte_level_encode(bytes, len, scratch->p);
    return mg_tok_strs_push(toks, scratch->p, m);
}

static mg_status hf_decode(const mg_tokenizer *tk, const int64_t *ids, size_t n, mg_text *out)
{
    const hf_impl *h = tk->impl;
    MG_RETURN_IF(!h->dec, MG_ERR_UNSUPPORTED, "%s", h->dec_err);
    mg_tok_strs toks = {0};
    mg_text scratch = {0};
    mg_status st = MG_OK;
    for (size_t i = 0; st == MG_OK && i < n; i++) st = push_token(h, ids[i], &toks, &scratch);
    if (st == MG_OK) st = mg_hf_decoder_run(h->dec, &toks, out);
    mg_tok_strs_free(&toks);
    mg_text_free(&scratch);
    return st;
}

static const struct mg_tok_vtbl hf_vtbl = {
    .encoder_create = hf_encoder_create,
    .encoder_free = hf_encoder_free,
    .encode = mg_hf_frame_tok_encode,
    .free = hf_free,
    .decode = hf_decode,
};

/* ---- building: vocabulary and merges ---- */

typedef struct {
    const mg_hf_desc *d;
    hf_impl *h;
    uint8_t *buf;       /* byte-level decoding scratch */
    size_t buf_cap;     /* longest vocabulary string or merge (decodes never grow) */
    size_t *invalid;    /* vocab entries that are not byte-level strings */
    size_t n_invalid;
} builder;

/* Id of a vocabulary string (byte-level form), -1 if absent. */
static int64_t vocab_lookup(const builder *b, const char *s, size_t len)
{
    size_t n;
    if (len > b->buf_cap) return -1; /* longer than every vocabulary string */
    if (b->d->char_level) return mg_bpe_token_id(b->h->bpe, (const uint8_t *)s, len);
    if (mg_byte_level_decode(s, len, b->buf, &n)) {
        int32_t id = mg_bpe_token_id(b->h->bpe, b->buf, n);
        if (id >= 0 || n > 0) return id;
    }
    for (size_t i = 0; i < b->n_invalid; i++) {
        const mg_hf_str *v = &b->d->vocab[b->invalid[i]];
        if (v->len == len && memcmp(v->s, s, len) == 0) return b->d->vocab_id[b->invalid[i]];
    }
    return -1;
}

/* Vocabulary entries and merges go to the model AT_ONCE at a time (mg_bpe_add_tokens and
 * mg_bpe_add_merges overlap their lookups), their byte-level forms decoded into one buffer
 * of QUEUE_BYTES + the longest (a byte-level string decodes to at most as many bytes). */
#define AT_ONCE 64
#define QUEUE_BYTES 16384

typedef struct {
    int merges; /* what it holds: merges, else tokens */
    mg_bpe_token tok[AT_ONCE];
    mg_bpe_merge merge[AT_ONCE];
    size_t index[AT_ONCE]; /* in model.vocab / model.merges */
    size_t n, used;
    uint8_t *bytes;
} bpe_queue;

typedef mg_status (*queue_fn)(builder *b, bpe_queue *q, size_t i);

static mg_status flush_queue(builder *b, bpe_queue *q)
{
    size_t bad;
    mg_status st = q->merges ? mg_bpe_add_merges(b->h->bpe, q->merge, q->n, &bad)
                             : mg_bpe_add_tokens(b->h->bpe, q->tok, q->n, &bad);
    if (st != MG_OK && q->merges)
        mg_error_prefix("%s: model.merges[%zu]", b->d->file, q->index[bad]);
    else if (st != MG_OK)
        mg_error_prefix("%s: model.vocab[\"%.80s\"]", b->d->file, b->d->vocab[q->index[bad]].s);
    q->n = q->used = 0;
    return st;
}

/* Room in q for one more entry of at most `bytes` bytes (q flushed if it has none). */
static mg_status queue_room(builder *b, bpe_queue *q, size_t bytes)
{
    if (q->n < AT_ONCE && q->used + bytes <= QUEUE_BYTES + b->buf_cap) return MG_OK;
    return flush_queue(b, q);
}

/* queue(b, q, i) for every i < n, then the rest of the queue to the model. */
static mg_status run_queue(builder *b, int merges, size_t n, queue_fn queue)
{
    bpe_queue q = {.merges = merges, .bytes = mg_malloc(QUEUE_BYTES + b->buf_cap)};
    if (!q.bytes) return MG_ERR_NOMEM;
    mg_status st = MG_OK;
    for (size_t i = 0; i < n && st == MG_OK; i++) st = queue(b, &q, i);
    if (st == MG_OK && q.n) st = flush_queue(b, &q);
    free(q.bytes);
    return st;
}

/* Queues vocabulary entry i, its byte-level form decoded. */
static mg_status queue_token(builder *b, bpe_queue *q, size_t i)
{
    const mg_hf_str *v = &b->d->vocab[i];
    MG_FORWARD(queue_room(b, q, v->len));
    size_t n;
    if (!mg_byte_level_decode(v->s, v->len, q->bytes + q->used, &n) || n == 0) {
        b->invalid[b->n_invalid++] = i; /* e.g. special tokens kept in the vocabulary */
        return MG_OK;
    }
    q->tok[q->n] = (mg_bpe_token){q->bytes + q->used, n, (int32_t)b->d->vocab_id[i], 0};
    q->index[q->n++] = i;
    q->used += n;
    return MG_OK;
}

/* Queues merge i, its byte-level form decoded (a merge that is not byte-level can never
 * apply: its tokens must still exist). */
static mg_status queue_byte_level(builder *b, bpe_queue *q, size_t i)
{
    const mg_hf_desc *d = b->d;
    const mg_hf_str *l = &d->merge_l[i], *r = &d->merge_r[i];
    MG_FORWARD(queue_room(b, q, l->len + r->len));
    uint8_t *at = q->bytes + q->used;
    size_t nl, nr;
    int ok_l = mg_byte_level_decode(l->s, l->len, at, &nl) && nl > 0;
    int ok_r = ok_l && mg_byte_level_decode(r->s, r->len, at + nl, &nr) && nr > 0;
    if (!ok_l || !ok_r) {
        if (vocab_lookup(b, l->s, l->len) >= 0 && vocab_lookup(b, r->s, r->len) >= 0)
            return MG_OK;
        MG_FORWARD(flush_queue(b, q)); /* the error of an earlier merge comes first */
        return mg_error_set(MG_ERR_FORMAT, "%s: model.merges[%zu] uses a token that is not "
                            "in the vocabulary", d->file, i);
    }
    q->merge[q->n] = (mg_bpe_merge){at, at + nl, nl, nr};
    q->index[q->n++] = i;
    q->used += nl + nr;
    return MG_OK;
}

/* Queues vocabulary entry i as a plain string (char-initial models). */
static mg_status queue_char_token(builder *b, bpe_queue *q, size_t i)
{
    const mg_hf_str *v = &b->d->vocab[i];
    MG_FORWARD(queue_room(b, q, 0));
    q->tok[q->n] = (mg_bpe_token){(const uint8_t *)v->s, v->len, (int32_t)b->d->vocab_id[i], 0};
    q->index[q->n++] = i;
    return MG_OK;
}

/* Queues merge i as plain strings (char-initial models). */
static mg_status queue_chars(builder *b, bpe_queue *q, size_t i)
{
    const mg_hf_str *l = &b->d->merge_l[i], *r = &b->d->merge_r[i];
    MG_FORWARD(queue_room(b, q, 0));
    q->merge[q->n] = (mg_bpe_merge){(const uint8_t *)l->s, (const uint8_t *)r->s, l->len,
                                    r->len};
    q->index[q->n++] = i;
    return MG_OK;
}

/* Char-initial: vocabulary and merges as plain UTF-8 strings. */
static mg_status build_chars(builder *b)
{
    const mg_hf_desc *d = b->d;
    mg_bpe *bpe = b->h->bpe;
    MG_FORWARD(run_queue(b, 0, d->n_vocab, queue_char_token));
    MG_FORWARD(run_queue(b, 1, d->n_merges, queue_chars));
    int32_t unk = -1;
    if (d->unk_token) {
        unk = mg_bpe_token_id(bpe, (const uint8_t *)d->unk_token, strlen(d->unk_token));
        if (unk < 0)
            return mg_error_set(MG_ERR_FORMAT, "%s: model.unk_token \"%.80s\" is not in the "
                                "vocabulary", d->file, d->unk_token);
    }
    MG_FORWARD(mg_bpe_set_char_symbols(bpe, d->byte_fallback, unk, d->fuse_unk));
    mg_status st = mg_bpe_finalize(bpe, d->ignore_merges);
    if (st != MG_OK) mg_error_prefix("%s", d->file);
    return st;
}

static mg_status build_bpe(builder *b)
{
    const mg_hf_desc *d = b->d;
    size_t longest = 16;
    for (size_t i = 0; i < d->n_vocab; i++)
        if (d->vocab[i].len > longest) longest = d->vocab[i].len;
    for (size_t i = 0; i < d->n_merges; i++)
        if (d->merge_l[i].len + d->merge_r[i].len > longest)
            longest = d->merge_l[i].len + d->merge_r[i].len;
    b->buf = mg_malloc(longest + 1);
    b->buf_cap = longest;
    b->invalid = mg_calloc(d->n_vocab ? d->n_vocab : 1, sizeof *b->invalid);
    if (!b->buf || !b->invalid) return MG_ERR_NOMEM;
    MG_FORWARD(mg_bpe_create(&b->h->bpe, MG_BPE_PAIR_RANK));
    MG_FORWARD(mg_bpe_reserve(b->h->bpe, d->n_vocab, d->n_merges));
    if (d->char_level) return build_chars(b);
    MG_FORWARD(run_queue(b, 0, d->n_vocab, queue_token));
    MG_FORWARD(run_queue(b, 1, d->n_merges, queue_byte_level));
    mg_status st = mg_bpe_finalize(b->h->bpe, d->ignore_merges);
    if (st != MG_OK) mg_error_prefix("%s", d->file);
    return st;
}

/* ---- building: pre-tokenizer ---- */

/* Makes a pretok error name the file ("not supported yet: X in FILE"). */
static mg_status pretok_error(const mg_hf_desc *d, mg_status st)
{
    char msg[MG_ERROR_MAX];
    snprintf(msg, sizeof msg, "%s", mg_last_error());
    if (st == MG_ERR_UNSUPPORTED && strncmp(msg, "not supported yet", 17) == 0 &&
        !strstr(msg, d->file))
        return mg_error_set(st, "%s in %s", msg, d->file);
    return mg_error_set(st, "%s: %s", d->file, msg);
}

static mg_status add_split(const mg_hf_desc *d, mg_pretok *p, const mg_hf_pre_stage *s)
{
    mg_status st = s->is_regex ? mg_pretok_add_regex(p, s->pattern, s->behavior, s->invert)
                               : mg_pretok_add_literal(p, s->pattern, s->behavior, s->invert);
    return st == MG_OK ? MG_OK : pretok_error(d, st);
}

/* Records the character before each U+2581 (not itself U+2581) in token v. */
static void note_nocut(hf_impl *h, const mg_hf_str *v)
{
    for (size_t i = 1; i + 3 <= v->len; i++) {
        if (memcmp(v->s + i, SPM_SPACE, 3) != 0) continue;
        size_t k = i - 1;
        while (k > 0 && ((unsigned char)v->s[k] & 0xC0) == 0x80) k--;
        size_t cl = i - k, j;
        if (cl > 4 || (cl == 3 && memcmp(v->s + k, SPM_SPACE, 3) == 0)) continue;
        for (j = 0; j < h->n_nocut; j++)
            if (h->nocut_len[j] == cl && memcmp(h->nocut[j], v->s + k, cl) == 0) break;
        if (j < h->n_nocut) continue;
        if (h->n_nocut == MAX_NOCUT) {
            h->cut_ok = 0;
            return;
        }
        memcpy(h->nocut[h->n_nocut], v->s + k, cl);
        h->nocut_len[h->n_nocut++] = (uint8_t)cl;
    }
}

/* Whether pieces may be cut before U+2581 runs (see hf_impl). */
static void plan_cuts(const mg_hf_desc *d, hf_impl *h)
{
    h->cut_ok = !d->ignore_merges && mg_bpe_token_id(h->bpe, (const uint8_t *)SPM_SPACE, 3) >= 0;
    for (size_t i = 0; h->cut_ok && i < d->n_vocab; i++)
        if (d->vocab[i].len > 3 && memmem(d->vocab[i].s + 1, d->vocab[i].len - 1, SPM_SPACE, 3))
            note_nocut(h, &d->vocab[i]);
}

static mg_status build_pretok_chars(const mg_hf_desc *d, hf_impl *h)
{
    plan_cuts(d, h);
    h->chars = 1;
    MG_FORWARD(mg_pretok_create(&h->pre));
    for (size_t i = 0; i < d->n_pre; i++) {
        if (d->pre[i].kind == MG_HF_PRE_METASPACE) { /* last, checked by the parser */
            h->has_meta = 1;
            h->meta = d->pre[i];
            continue;
        }
        MG_FORWARD(add_split(d, h->pre, &d->pre[i]));
    }
    return MG_OK;
}

static mg_status build_pretok(const mg_hf_desc *d, hf_impl *h)
{
    if (d->char_level) return build_pretok_chars(d, h);
    const mg_hf_pre_stage *bl = &d->pre[d->n_pre - 1]; /* ByteLevel, checked by the parser */
    MG_FORWARD(mg_pretok_create(&h->pre));
    for (size_t i = 0; i + 1 < d->n_pre; i++) MG_FORWARD(add_split(d, h->pre, &d->pre[i]));
    h->prefix_space = bl->add_prefix_space;
    if (!bl->use_regex) return MG_OK;
    mg_pretok *target = h->pre;
    if (h->prefix_space) {
        MG_FORWARD(mg_pretok_create(&h->pre_prefix));
        target = h->pre_prefix;
    }
    mg_status st = mg_pretok_add_family(target, MG_PRETOK_GPT2);
    return st == MG_OK ? MG_OK : pretok_error(d, st);
}

/* ---- building: decoding ---- */

static int cmp_entry(const void *a, const void *b)
{
    const dec_entry *x = a, *y = b;
    if (x->id != y->id) return x->id < y->id ? -1 : 1;
    return x->prio - y->prio;
}

static void add_extra(hf_impl *h, size_t *used, int64_t id, const char *s, size_t len, int prio)
{
    memcpy(h->extra_buf + *used, s, len);
    h->extra[h->n_extra++] = (dec_entry){.id = id, .off = *used, .len = len, .prio = prio};
    *used += len;
}

/* The id -> string table of added tokens and non-byte-level vocabulary strings. */
static mg_status build_extra(builder *b)
{
    hf_impl *h = b->h;
    const mg_hf_desc *d = b->d;
    const mg_hf_frame *f = &h->frame;
    size_t bytes = 1, n = f->n_added + b->n_invalid, used = 0;
    for (size_t i = 0; i < f->n_added; i++) bytes += f->added[i].len;
    for (size_t i = 0; i < b->n_invalid; i++) bytes += d->vocab[b->invalid[i]].len;
    h->extra = mg_calloc(n ? n : 1, sizeof *h->extra);
    h->extra_buf = mg_malloc(bytes);
    if (!h->extra || !h->extra_buf) return MG_ERR_NOMEM;
    for (size_t i = 0; i < f->n_added; i++)
        add_extra(h, &used, f->added[i].id, f->added[i].content, f->added[i].len, 0);
    for (size_t i = 0; i < b->n_invalid; i++) {
        const mg_hf_str *v = &d->vocab[b->invalid[i]];
        add_extra(h, &used, d->vocab_id[b->invalid[i]], v->s, v->len, 1);
    }
    qsort(h->extra, h->n_extra, sizeof *h->extra, cmp_entry);
    size_t k = 0;
    for (size_t i = 0; i < h->n_extra; i++)
        if (k == 0 || h->extra[k - 1].id != h->extra[i].id) h->extra[k++] = h->extra[i];
    h->n_extra = k;
    return MG_OK;
}

/* The decoder: tokenizer.json's "decoder" (the first JSON the description owns), or
 * ByteLevel for GPT2BPETokenizer (transformers' GPT2Tokenizer). A decoder we cannot run
 * does not stop encoding: decoding then reports it. */
static mg_status build_decoder(builder *b, const char *kind)
{
    hf_impl *h = b->h;
    const mg_hf_desc *d = b->d;
    MG_FORWARD(build_extra(b));
    mg_status st;
    if (strcmp(kind, "GPT2BPETokenizer") == 0 || d->n_json == 0)
        st = mg_hf_decoder_create_byte_level(&h->dec);
    else
        st = mg_hf_decoder_create(&h->dec, json_object_get(d->json[0], "decoder"), d->file);
    if (st == MG_ERR_NOMEM) return st;
    if (st != MG_OK) snprintf(h->dec_err, sizeof h->dec_err, "%s", mg_last_error());
    return MG_OK;
}

/* ---- building: the whole ---- */

static int64_t vocab_cb(const void *b, const char *s, size_t len)
{
    return vocab_lookup(b, s, len);
}

/* Pre-tokenizer stages for the description line ("Split(known)+Split(regex)+"). */
static size_t describe_splits(const builder *b, char *pre, size_t cap, size_t n_split)
{
    size_t used = 0;
    for (size_t i = 0; i < n_split && used < cap - 40; i++) {
        mg_pretok_family f = mg_pretok_stage_family(b->h->pre, i);
        used += (size_t)snprintf(pre + used, cap - used, "%s%s", i ? "+" : "",
                                 f == MG_PRETOK_GENERIC ? "Split(regex)" : "Split(known)");
    }
    return used;
}

static const char *norm_names(const mg_normalizer *nz, char *buf, size_t cap)
{
    static const char *const names[] = {"?", "NFC", "Prepend", "Replace"};
    size_t used = 0;
    buf[0] = 0;
    for (size_t i = 0; i < nz->n && used < cap - 12; i++)
        used += (size_t)snprintf(buf + used, cap - used, "%s%s", i ? "+" : "",
                                 names[nz->steps[i] <= MG_NORM_REPLACE ? nz->steps[i] : 0]);
    return nz->n ? buf : "none";
}

static void describe_chars(mg_tokenizer *tk, const builder *b, const char *kind)
{
    const hf_impl *h = b->h;
    const mg_hf_desc *d = b->d;
    static const char *const schemes[] = {"always", "first", "never"};
    char pre[160] = "", meta[64] = "", nz[64];
    size_t used = describe_splits(b, pre, sizeof pre, mg_pretok_stages(h->pre));
    if (h->has_meta)
        snprintf(meta, sizeof meta, "%sMetaspace(%s, split=%d)", used ? "+" : "",
                 schemes[h->meta.prepend_scheme], h->meta.split);
    int n = snprintf(tk->describe, sizeof tk->describe,
             "%s %s: char BPE (SentencePiece-style%s%s), %zu tokens + %zu added (vocab_size "
             "%lld, eod %lld), normalizer %s, pre-tokenizer %s%s%s, post-processor +%zu/+%zu "
             "ids%s",
             kind, d->file, d->byte_fallback ? ", byte_fallback" : "",
             d->unk_token ? ", unk" : "", d->n_vocab, h->frame.n_added, (long long)tk->vocab_size,
             (long long)tk->eod, norm_names(&d->norm, nz, sizeof nz), pre, meta,
             used || h->has_meta ? "" : "none", h->frame.n_prefix, h->frame.n_suffix,
             mg_hf_frame_special_note(&h->frame));
    if (n >= (int)sizeof tk->describe) memcpy(tk->describe + sizeof tk->describe - 4, "...", 4);
}

static void describe(mg_tokenizer *tk, const builder *b, const char *kind)
{
    const hf_impl *h = b->h;
    const mg_hf_desc *d = b->d;
    if (d->char_level) {
        describe_chars(tk, b, kind);
        return;
    }
    char pre[160] = "";
    size_t used = describe_splits(b, pre, sizeof pre, d->n_pre - 1);
    int n = snprintf(tk->describe, sizeof tk->describe,
             "%s %s: byte-level BPE, %zu tokens + %zu added (vocab_size %lld, eod %lld), "
             "normalizer %s, pre-tokenizer %s%sByteLevel(regex=%d, prefix_space=%d)%s, "
             "post-processor +%zu/+%zu ids%s",
             kind, d->file, d->n_vocab, h->frame.n_added, (long long)tk->vocab_size,
             (long long)tk->eod, d->norm.n ? "NFC" : "none", pre, used ? "+" : "",
             d->pre[d->n_pre - 1].use_regex, h->prefix_space,
             d->ignore_merges ? ", ignore_merges" : "", h->frame.n_prefix, h->frame.n_suffix,
             mg_hf_frame_special_note(&h->frame));
    if (n >= (int)sizeof tk->describe) /* a long path: keep the truncated line */
        memcpy(tk->describe + sizeof tk->describe - 4, "...", 4);
}

static mg_status build(builder *b, mg_tokenizer *tk, const mg_tok_opts *o)
{
    const mg_hf_desc *d = b->d;
    hf_impl *h = b->h;
    MG_FORWARD(build_bpe(b));
    MG_FORWARD(mg_hf_frame_build(&h->frame, d, o, vocab_cb, b, (int64_t)d->n_vocab));
    h->frame.plain = encode_plain;
    MG_FORWARD(build_pretok(d, h));
    MG_FORWARD(mg_normalizer_copy(&h->frame.norm, &d->norm));
    tk->vocab_size = h->frame.vocab_size;
    tk->eod = mg_hf_frame_token_id(&h->frame, d->eos_token ? d->eos_token : d->sep_token,
                                   vocab_cb, b);
    return MG_OK;
}

mg_status mg_hf_build(mg_tokenizer *tk, const mg_hf_desc *d, const char *kind,
                      const mg_tok_opts *o)
{
    builder b = {.d = d};
    b.h = mg_calloc(1, sizeof *b.h);
    if (!b.h) return MG_ERR_NOMEM;
    mg_status st = build(&b, tk, o);
    if (st == MG_OK) st = build_decoder(&b, kind);
    if (st == MG_OK) {
        tk->vt = &hf_vtbl;
        tk->impl = b.h;
        tk->accepts_lone_surrogates = 0;
        describe(tk, &b, kind);
    } else {
        hf_free(b.h);
    }
    free(b.buf);
    free(b.invalid);
    return st;
}

/* ---- HuggingFaceTokenizer --tokenizer-model DIR ---- */

static mg_status load_config(mg_hf_desc *d, const char *dir)
{
    char path[MG_PATH_MAX];
    snprintf(path, sizeof path, "%s/tokenizer_config.json", dir);
    char *buf;
    size_t len;
    mg_status st = mg_read_file(path, &buf, &len);
    if (st == MG_ERR_NOTFOUND) return MG_OK; /* optional */
    MG_FORWARD(st);
    st = mg_hf_config_parse(d, buf, len, path);
    free(buf);
    return st;
}

mg_status mg_tok_hf_create(mg_tokenizer *tk, const mg_tok_opts *o)
{
    MG_RETURN_IF(!o->model, MG_ERR_ARG, "HuggingFaceTokenizer needs --tokenizer-model DIR");
    MG_RETURN_IF(!mg_is_dir(o->model), MG_ERR_ARG,
                 "--tokenizer-model %s: not a directory (HuggingFaceTokenizer reads "
                 "DIR/tokenizer.json; hub names are not downloaded)", o->model);
    MG_RETURN_IF(o->vocab_file || o->merge_file, MG_ERR_UNSUPPORTED,
                 "not supported yet: --vocab-file/--merge-file with HuggingFaceTokenizer");
    char path[MG_PATH_MAX];
    snprintf(path, sizeof path, "%s/tokenizer.json", o->model);
    mg_hf_desc d;
    mg_hf_desc_init(&d);
    mg_status st = mg_hf_desc_load(&d, path);
    if (st == MG_OK) st = load_config(&d, o->model);
    if (st == MG_OK) st = mg_hf_build_model(tk, &d, o);
    mg_hf_desc_free(&d);
    return st;
}

mg_status mg_hf_build_model(mg_tokenizer *tk, mg_hf_desc *d, const mg_tok_opts *o)
{
    if (d->unigram) return mg_hf_unigram_build(tk, d, o);        /* tok_hf_unigram.c */
    if (d->wordpiece) return mg_hf_wordpiece_create(tk, d, o);   /* tok_hf_wordpiece.c */
    MG_FORWARD(mg_hf_apply_class(d));
    return mg_hf_build(tk, d, "HuggingFaceTokenizer", o);
}

/* tok_spm.c — SentencePieceTokenizer, GPTSentencePieceTokenizer and Llama2Tokenizer:
 * a SentencePiece .model file (--tokenizer-model), encoded like the sentencepiece library
 * (0.2.x) without it.
 *
 * Megatron semantics (megatron-core 0.16 megatron/core/tokenizers: the three names map to
 * the same `sentencepiece` library class, legacy=False): tokenize = encode_as_ids(text),
 * no BOS/EOS added (the legacy megatron/training Llama2Tokenizer prepended BOS; the
 * current one does not); vocab_size = piece count; eod = eos_id() (the eos piece, "</s>"
 * unless the TrainerSpec names another, if it is a CONTROL piece; else -1: no eod).
 * --tokenizer-special-tokens is rejected, as Megatron rejects special tokens without
 * --tokenizer-sentencepiece-legacy.
 *
 * encode_as_ids = Normalize (spm_normalize.c), the model's Encode (spm_unigram.c or
 * spm_bpe.c), then PopulateSentencePieceText (for Unigram models both in one step,
 * mg_spm_unigram_ids; a Unigram model with a NaN or infinite score is refused, as
 * sentencepiece 0.2.3 does): with byte_fallback an unknown piece becomes
 * the ids of its UTF-8 bytes' <0xXX> pieces; without it a run of unknown pieces is one
 * unk id. Text whose piece is CONTROL (a one-character CONTROL piece met by the CHAR or
 * WORD model) is unknown text, as in sentencepiece 0.2.3 (0.2.1 failed there).
 * All four model types: UNIGRAM, BPE, WORD (split before each "▁", one piece per word)
 * and CHAR (one piece per character or user-defined symbol). Self-test samples in the
 * model are not run.
 * Lone surrogates are rejected by the facade (Python cannot pass them to sentencepiece).
 */
#include "tok/tok_internal.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/file.h"
#include "tok/decode_util.h"
#include "tok/spm_proto.h"

typedef struct {
    char *file; /* the .model bytes: the proto's strings point here */
    mg_spm_model md;
    mg_spm_normalizer nz;
    int32_t byte_ids[256];
} spm_impl;

typedef struct {
    const spm_impl *im;
    mg_spm_buf norm;
    mg_spm_refs refs;
    mg_spm_scratch scratch;
} spm_state;

static mg_status spm_encoder_create(const mg_tokenizer *tk, void **out)
{
    spm_state *s = mg_calloc(1, sizeof *s);
    if (!s) return MG_ERR_NOMEM;
    s->im = tk->impl;
    *out = s;
    return MG_OK;
}

static void spm_encoder_free(void *state)
{
    spm_state *s = state;
    if (!s) return;
    free(s->norm.v);
    free(s->refs.v);
    mg_spm_scratch_free(&s->scratch);
    free(s);
}

/* mg_ids_push without the call while there is room. */
static inline mg_status push_id(mg_ids *out, int64_t id)
{
    if (out->n == out->cap) return mg_ids_push(out, id);
    out->v[out->n++] = id;
    return MG_OK;
}

static int is_unigram(int model_type)
{
    return model_type != SPM_BPE && model_type != SPM_WORD && model_type != SPM_CHAR;
}

/* PopulateSentencePieceText on the normalized text t, keeping only the ids (the BPE, WORD
 * and CHAR models; the Unigram model's: mg_spm_unigram_ids). */
static mg_status populate(const spm_impl *im, const uint8_t *t, const mg_spm_refs *refs,
                          mg_ids *out)
{
    const mg_spm_piece *pcs = im->md.proto.pieces;
    int prev_unk = 0;
    for (size_t i = 0; i < refs->n; i++) {
        const mg_spm_ref *r = &refs->v[i];
        int type = pcs[r->id].type;
        /* sentencepiece 0.2.3: text whose piece is CONTROL (a CHAR/WORD model's "x" marked
         * CONTROL; BPE never yields one) is encoded as unknown text */
        int unk = type == SPM_UNKNOWN || type == SPM_CONTROL;
        if (unk && im->md.proto.byte_fallback) {
            for (uint32_t k = 0; k < r->len; k++)
                MG_FORWARD(push_id(out, im->byte_ids[t[r->off + k]]));
        } else if (!(unk && prev_unk)) {
            MG_FORWARD(push_id(out, unk ? im->md.unk_id : r->id));
        }
        prev_unk = unk;
    }
    return MG_OK;
}

/* ---- the WORD and CHAR models (word_model.cc, char_model.cc) ---- */

static int is_space_symbol(const uint8_t *t, size_t n)
{
    return n == 3 && t[0] == 0xE2 && t[1] == 0x96 && t[2] == 0x81;
}

static size_t one_char(const uint8_t *t, size_t n)
{
    size_t k = mg_spm_char_len(t[0]);
    return k < n ? k : n;
}

/* SplitIntoWords(text) with the defaults: a word starts at the text's start and at each
 * "▁"; each word is PieceToId'd. */
static mg_status word_encode(const mg_spm_model *md, const uint8_t *t, size_t n,
                             mg_spm_refs *out)
{
    size_t start = 0;
    for (size_t pos = 0; pos < n;) {
        size_t k = one_char(t + pos, n - pos);
        if (pos > start && is_space_symbol(t + pos, k)) {
            MG_FORWARD(mg_spm_refs_push(out, (uint32_t)start, (uint32_t)(pos - start),
                                        mg_spm_piece_to_id(md, t + start, pos - start)));
            start = pos;
        }
        pos += k;
    }
    if (n == 0) return MG_OK;
    return mg_spm_refs_push(out, (uint32_t)start, (uint32_t)(n - start),
                            mg_spm_piece_to_id(md, t + start, n - start));
}

/* One piece per user-defined symbol (longest) or character. */
static mg_status char_encode(const mg_spm_model *md, const uint8_t *t, size_t n,
                             mg_spm_refs *out)
{
    for (size_t pos = 0; pos < n;) {
        size_t k = md->user ? mg_spm_trie_longest(md->user, t + pos, n - pos) : 0;
        if (k == 0) k = one_char(t + pos, n - pos);
        MG_FORWARD(mg_spm_refs_push(out, (uint32_t)pos, (uint32_t)k,
                                    mg_spm_piece_to_id(md, t + pos, k)));
        pos += k;
    }
    return MG_OK;
}

static mg_status model_encode(spm_state *s)
{
    const mg_spm_model *md = &s->im->md;
    const uint8_t *t = s->norm.v;
    size_t n = s->norm.n;
    MG_RETURN_IF(n >= INT32_MAX, MG_ERR_LIMIT, "normalized text of %zu bytes is too long", n);
    switch (md->proto.model_type) {
    case SPM_BPE: return mg_spm_bpe_encode(md, &s->scratch, t, n, &s->refs);
    case SPM_WORD: return word_encode(md, t, n, &s->refs);
    default: return char_encode(md, t, n, &s->refs); /* SPM_CHAR: Unigram is not here */
    }
}

/* The Unigram model's ids, written straight into out (mg_spm_unigram_ids). */
static mg_status unigram_ids(spm_state *s, mg_ids *out)
{
    const spm_impl *im = s->im;
    size_t n = s->norm.n, k;
    if (n == 0) return MG_OK;
    if (out->cap - out->n < n) {
        size_t cap = out->cap ? out->cap : 64;
        while (cap - out->n < n) cap *= 2;
        int64_t *v = mg_realloc(out->v, cap * sizeof *v);
        if (!v) return MG_ERR_NOMEM;
        out->v = v;
        out->cap = cap;
    }
    int64_t *room = out->v + out->n;
    MG_FORWARD(mg_spm_unigram_ids(&im->md, &s->scratch, s->norm.v, n,
                                  im->md.proto.byte_fallback ? im->byte_ids : NULL, room, &k));
    memmove(room, room + n - k, k * sizeof *room);
    out->n += k;
    return MG_OK;
}

static mg_status spm_encode(const mg_tokenizer *tk, void *state, const char *text, size_t len,
                            mg_ids *out)
{
    (void)tk;
    spm_state *s = state;
    const spm_impl *im = s->im;
    MG_FORWARD(mg_spm_normalize(&im->nz, (const uint8_t *)text, len, &s->norm));
    if (is_unigram(im->md.proto.model_type)) return unigram_ids(s, out);
    s->refs.n = 0;
    MG_FORWARD(model_encode(s));
    return populate(im, s->norm.v, &s->refs, out);
}

/* ---- decoding: SentencePieceProcessor::Decode(ids) (sentencepiece 0.2.x) ---- */

#define SPACE_SYMBOL "\xe2\x96\x81"    /* U+2581 */
#define UNK_SURFACE " \xe2\x81\x87 "   /* the default TrainerSpec.unk_surface " ⁇ " */

/* The byte of a BYTE piece "<0xXX>" (PieceToByte), -1 if malformed. */
static int piece_byte(const mg_spm_str *p)
{
    unsigned v = 0;
    if (p->n != 6 || memcmp(p->p, "<0x", 3) != 0 || p->p[5] != '>') return -1;
    for (int i = 3; i < 5; i++) {
        int c = p->p[i];
        int d = c >= '0' && c <= '9' ? c - '0' : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
        if (d < 0) return -1;
        v = v * 16 + (unsigned)d;
    }
    return (int)v;
}

/* ProcessBytePieces: the bytes of pieces ids[from, to), one U+FFFD per invalid byte. */
static mg_status decode_bytes(const spm_impl *im, const int64_t *ids, size_t from, size_t to,
                              mg_text *out)
{
    if (from >= to) return MG_OK;
    mg_text bytes = {0};
    mg_status st = MG_OK;
    for (size_t i = from; st == MG_OK && i < to; i++) {
        int b = piece_byte(&im->md.proto.pieces[ids[i]].piece);
        char c = (char)b;
        st = b < 0 ? mg_error_set(MG_ERR_FORMAT, "sentencepiece: byte piece %lld is not "
                                  "<0xXX>", (long long)ids[i])
                   : mg_text_append(&bytes, &c, 1);
    }
    if (st == MG_OK) st = mg_decode_utf8_per_byte(out, (const uint8_t *)bytes.p, bytes.n);
    mg_text_free(&bytes);
    return st;
}

/* DecodeSentencePiece: the surface of a non-byte piece; *bos_ws = it consumed a leading
 * U+2581 that counts as the dummy prefix. */
static mg_status piece_surface(const spm_impl *im, int64_t id, int is_bos_ws, int *bos_ws,
                               mg_text *out)
{
    const mg_spm_proto *pr = &im->md.proto;
    const mg_spm_piece *pc = &pr->pieces[id];
    *bos_ws = 0;
    if (pc->type == SPM_CONTROL) return MG_OK;
    if (pc->type == SPM_UNKNOWN) return mg_text_append(out, UNK_SURFACE, 5);
    const char *p = (const char *)pc->piece.p;
    size_t n = pc->piece.n;
    if (is_bos_ws && (pr->add_dummy_prefix || pr->remove_extra_ws) && n >= 3 &&
        memcmp(p, SPACE_SYMBOL, 3) == 0) {
        p += 3;
        n -= 3;
        *bos_ws = !pr->remove_extra_ws;
    }
    return mg_decode_replace_all(out, p, n, SPACE_SYMBOL, 3, " ", 1);
}

static mg_status spm_decode(const mg_tokenizer *tk, const int64_t *ids, size_t n, mg_text *out)
{
    const spm_impl *im = tk->impl;
    size_t base = out->n, byte_start = 0;
    int is_bos_ws = 1, bos_ws_seen = 0;
    for (size_t i = 0; i < n; i++) {
        if (im->md.proto.pieces[ids[i]].type == SPM_BYTE) continue;
        MG_FORWARD(decode_bytes(im, ids, byte_start, i, out));
        if (bos_ws_seen || out->n > base) is_bos_ws = 0;
        byte_start = i + 1;
        MG_FORWARD(piece_surface(im, ids[i], is_bos_ws, &bos_ws_seen, out));
    }
    return decode_bytes(im, ids, byte_start, n, out);
}

static void spm_free(void *impl)
{
    spm_impl *im = impl;
    if (!im) return;
    mg_spm_normalizer_free(&im->nz);
    mg_spm_model_free(&im->md);
    free(im->file);
    free(im);
}

static const struct mg_tok_vtbl spm_vtbl = {
    .encoder_create = spm_encoder_create,
    .encoder_free = spm_encoder_free,
    .encode = spm_encode,
    .free = spm_free,
    .decode = spm_decode,
};

/* ---- loading ---- */

/* SentencePieceProcessor::eos_id(): the eos piece's id if it is a CONTROL piece, else -1. */
static int64_t eos_id(const mg_spm_model *md)
{
    mg_spm_str p = md->proto.eos_piece;
    if (p.n == 0) p = (mg_spm_str){(const uint8_t *)"</s>", 4};
    int32_t id = mg_spm_piece_to_id(md, p.p, p.n);
    return md->proto.pieces[id].type == SPM_CONTROL ? id : -1;
}

static const char *model_type_name(int t)
{
    static const char *const names[] = {"?", "unigram", "bpe", "word", "char"};
    return t >= 1 && t <= 4 ? names[t] : "?";
}

/* sentencepiece 0.2.3 refuses a Unigram model with a NaN or infinite piece score. */
static mg_status check_scores(const mg_spm_proto *p)
{
    for (size_t i = 0; i < p->n_pieces; i++)
        MG_RETURN_IF(!isfinite(p->pieces[i].score), MG_ERR_FORMAT, "score is NaN or Inf "
                     "(piece %zu)", i);
    return MG_OK;
}

static int has_matchable(const mg_spm_proto *p)
{
    for (size_t i = 0; i < p->n_pieces; i++) {
        int t = p->pieces[i].type;
        if (t == SPM_NORMAL || t == SPM_USER_DEFINED || t == SPM_UNUSED) return 1;
    }
    return 0;
}

/* Parses the file's n bytes (already in im->file). */
static mg_status load(spm_impl *im, size_t n)
{
    MG_FORWARD(mg_spm_proto_parse(&im->md.proto, (const uint8_t *)im->file, n));
    MG_FORWARD(mg_spm_model_init(&im->md));
    int t = im->md.proto.model_type;
    MG_RETURN_IF(t == SPM_UNIGRAM && !has_matchable(&im->md.proto), MG_ERR_FORMAT,
                 "no pieces are loaded (a unigram model needs a normal piece)");
    if (is_unigram(t)) MG_FORWARD(check_scores(&im->md.proto));
    MG_FORWARD(mg_spm_normalizer_init(&im->nz, &im->md));
    for (int b = 0; b < 256; b++) {
        char piece[8];
        snprintf(piece, sizeof piece, "<0x%02X>", b);
        im->byte_ids[b] = mg_spm_piece_to_id(&im->md, (const uint8_t *)piece, 6);
    }
    return MG_OK;
}

static void describe(mg_tokenizer *tk, const spm_impl *im, const mg_tok_opts *o)
{
    const mg_spm_proto *p = &im->md.proto;
    snprintf(tk->describe, sizeof tk->describe,
             "%s %s (SentencePiece %s, %zu pieces, normalizer %.*s, byte_fallback %s; "
             "megatron-core 0.16 semantics: encode_as_ids(text), no BOS/EOS added (legacy "
             "Llama2Tokenizer prepended BOS), vocab_size %lld, eod = eos_id %lld; encoder "
             "follows sentencepiece 0.2.x)",
             o->type, o->model, model_type_name(p->model_type), p->n_pieces,
             (int)(p->norm_name.n > 32 ? 32 : p->norm_name.n),
             p->norm_name.n ? (const char *)p->norm_name.p : "", p->byte_fallback ? "on" : "off",
             (long long)tk->vocab_size, (long long)tk->eod);
}

mg_status mg_tok_spm_create(mg_tokenizer *tk, const mg_tok_opts *o)
{
    MG_RETURN_IF(!o->model || !*o->model, MG_ERR_ARG, "%s needs --tokenizer-model FILE.model",
                 o->type);
    MG_RETURN_IF(o->n_special_tokens > 0, MG_ERR_ARG, "%s: --tokenizer-special-tokens needs "
                 "Megatron's --tokenizer-sentencepiece-legacy, which is not supported",
                 o->type);
    spm_impl *im = mg_calloc(1, sizeof *im);
    if (!im) return MG_ERR_NOMEM;
    size_t n;
    mg_status st = mg_read_file(o->model, &im->file, &n);
    if (st == MG_OK && (st = load(im, n)) != MG_OK) mg_error_prefix("%s", o->model);
    if (st != MG_OK) {
        spm_free(im);
        return st;
    }
    tk->vt = &spm_vtbl;
    tk->impl = im;
    tk->vocab_size = (int64_t)im->md.proto.n_pieces;
    tk->eod = eos_id(&im->md);
    tk->accepts_lone_surrogates = 0;
    describe(tk, im, o);
    return MG_OK;
}

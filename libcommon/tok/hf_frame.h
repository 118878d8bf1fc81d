/* hf_frame.h — the Hugging Face Tokenizer frame around a model, shared by the BPE
 * (tok_hf.c), WordPiece (tok_hf_wordpiece.c) and Unigram (tok_hf_unigram.c) tokenizers.
 * Private to libcommon/tok.
 *
 * Contract (HF tokenizers 0.23 Tokenizer::encode as transformers 5 runs it):
 *   - mg_hf_frame holds what surrounds the model: the added tokens (the final list with
 *     owned contents, a raw-text matcher for normalized:false ones and a normalized-text
 *     matcher for normalized:true ones), the normalizer, and the post-processor's
 *     prefix / suffix ids with include_special (0: --tokenizer-hf-no-include-special-tokens).
 *     It is the first member of the model's implementation struct (tk->impl), and
 *     mg_hf_frame_state the first member of the model's per-thread state, so that the
 *     frame's callbacks get the implementation and the state as `model` and `state`, and
 *     mg_hf_frame_tok_encode() can be the vtable's encode. Immutable after building;
 *     shared by threads.
 *   - mg_hf_frame_build() runs tokenizers' AddedVocabulary::add_tokens over tokenizer.json's
 *     added_tokens, then tokenizer_config.json's named special tokens (special), then
 *     --tokenizer-special-tokens (special, normalized false): an empty or already-added
 *     content is skipped; the ids written in tokenizer.json are not used; a content the
 *     vocabulary knows (vocab(ctx, s, len) >= 0) keeps that id, a new one gets
 *     max(added ids) + 1, or n_vocab while every added id is below it, and counts in
 *     f->vocab_size (= len(tokenizer), from n_vocab). It also takes the post-processor ids
 *     and include_special; the normalizer is left empty (the model copies d->norm).
 *   - mg_hf_frame_encode(): ids = prefix + pipeline + suffix (prefix/suffix only with
 *     include_special). Raw added tokens are matched in text (added_tokens.h); each gap
 *     goes through f->prenorm (if set: a model normalization run first, e.g. Unigram's
 *     Precompiled), then f->norm, then is searched for normalized added tokens; each
 *     remaining non-empty gap goes to f->plain with first = 1 when it starts at offset 0 of
 *     both the text and the gap. Returns the first error of a step.
 *   - mg_hf_metaspace(): tokenizers' Metaspace pre-tokenizer on one piece p[0, n): each
 *     ' ' becomes the replacement, which is also prepended (prepend_scheme always, or first
 *     when `first`) unless the piece starts with ' ' or the replacement; with split the
 *     result is cut before each replacement (MergedWithNext). Each resulting piece goes to
 *     piece(model, state, ...); buf is the caller's per-thread buffer (the text lives there
 *     during the calls).
 *   - mg_hf_frame_state: the per-thread buffers every model needs (normalization output,
 *     pretok scratch). mg_hf_frame_state_new() allocates a model's zeroed state of `size`
 *     bytes and sets up its first member (MG_ERR_NOMEM: *state = NULL);
 *     mg_hf_frame_state_delete() frees that member and the block (NULL: nothing).
 */
#ifndef MG_TOK_HF_FRAME_H
#define MG_TOK_HF_FRAME_H

#include "tok/hf_json.h"

typedef int64_t (*mg_hf_vocab_fn)(const void *ctx, const char *s, size_t len);
/* Encodes text (len > 0) that holds no added token; model: the implementation (its first
 * member is the frame), state: the per-thread state (its first member is the frame's). */
typedef mg_status (*mg_hf_plain_fn)(const void *model, void *state, const char *text,
                                    size_t len, int first, mg_ids *out);
/* Encodes one pre-tokenized piece. */
typedef mg_status (*mg_hf_piece_fn)(const void *model, void *state, const char *p, size_t n,
                                    mg_ids *out);
/* A normalization run before f->norm; *out points into state or is text. */
typedef mg_status (*mg_hf_prenorm_fn)(const void *model, void *state, const char *text,
                                      size_t len, const char **out, size_t *out_len);

typedef struct {
    mg_added_tokens *raw_added;  /* normalized:false, matched in the raw text */
    mg_added_tokens *norm_added; /* normalized:true, matched in normalized text */
    mg_added_token *added;       /* final list, contents in added_buf */
    size_t n_added;
    char *added_buf;
    int64_t vocab_size;          /* len(tokenizer) */
    mg_normalizer norm;
    int include_special;         /* add the post-processor's ids */
    int64_t prefix[MG_HF_MAX_POST], suffix[MG_HF_MAX_POST];
    size_t n_prefix, n_suffix;
    mg_hf_plain_fn plain;
    mg_hf_prenorm_fn prenorm;    /* NULL: none */
} mg_hf_frame;

typedef struct {
    mg_norm_buf norm;
    mg_pretok_scratch *scratch;
} mg_hf_frame_state;

mg_status mg_hf_frame_build(mg_hf_frame *f, const mg_hf_desc *d, const mg_tok_opts *o,
                            mg_hf_vocab_fn vocab, const void *ctx, int64_t n_vocab);
void mg_hf_frame_free(mg_hf_frame *f); /* what f owns; f itself is the caller's */

/* Id of an added token's content, -1 if none. */
int64_t mg_hf_frame_added_id(const mg_hf_frame *f, const char *s, size_t len);
/* Id of s: added tokens first, then vocab(ctx, ...); -1 for NULL or unknown. */
int64_t mg_hf_frame_token_id(const mg_hf_frame *f, const char *s, mg_hf_vocab_fn vocab,
                             const void *ctx);
/* Content of the added token with this id (decoding), NULL if none. */
const char *mg_hf_frame_added_str(const mg_hf_frame *f, int64_t id, size_t *len);
/* The description line's ending for include_special ("" or the "not added" note). */
const char *mg_hf_frame_special_note(const mg_hf_frame *f);

mg_status mg_hf_frame_encode(const mg_hf_frame *f, mg_hf_frame_state *fs, const char *text,
                             size_t len, mg_ids *out);
/* The vtable encode: mg_hf_frame_encode(tk->impl, state, ...). */
mg_status mg_hf_frame_tok_encode(const mg_tokenizer *tk, void *state, const char *text,
                                 size_t len, mg_ids *out);

mg_status mg_hf_metaspace(const mg_hf_pre_stage *meta, mg_text *buf, const char *p, size_t n,
                          int first, mg_hf_piece_fn piece, const void *model, void *state,
                          mg_ids *out);

mg_status mg_hf_frame_state_new(size_t size, void **state);
void mg_hf_frame_state_delete(void *state);

#endif

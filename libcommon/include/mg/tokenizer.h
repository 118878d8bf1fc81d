/* mg/tokenizer.h — Megatron's tokenizers, with Megatron's ids.
 *
 * Contract:
 *   - mg_tokenizer_create() builds a tokenizer from Megatron's flags (mg_tok_opts, the
 *     names of tools/preprocess_data.py). Supported --tokenizer-type values:
 *       GPT2BPETokenizer      --vocab-file vocab.json --merge-file merges.txt
 *       HuggingFaceTokenizer  --tokenizer-model DIR (tokenizer.json [+ tokenizer_config.json])
 *       TikTokenizer          --tokenizer-model FILE (Megatron JSON list or .tiktoken ranks)
 *       SentencePieceTokenizer, GPTSentencePieceTokenizer, Llama2Tokenizer
 *                             --tokenizer-model FILE.model
 *       NullTokenizer         --vocab-size V
 *       BertWordPieceLowerCase, BertWordPieceCase
 *                             --vocab-file vocab.txt (HEAD: transformers' BertTokenizer on
 *                             it: [CLS] ... [SEP] per text, eod = [SEP]; Case adds 100
 *                             <extra_id_i>; needs utf8proc)
 *     HuggingFaceTokenizer also takes WordPiece tokenizer.json files (BERT-style).
 *     Megatron's other types are MG_ERR_UNSUPPORTED "not supported yet: --tokenizer-type
 *     X"; a name Megatron does not have is MG_ERR_ARG listing its choices (mg/argv.h).
 *   - Semantics follow Megatron's current tokenizer system (megatron/core/tokenizers,
 *     "HEAD" in these comments; docs/TOKENIZERS.md): ids == what Megatron writes into .bin.
 *   - A tokenizer is immutable and shared by threads; each thread encodes through its own
 *     mg_encoder (which owns caches and scratch memory).
 *   - mg_encode() appends the ids of one text (one JSON value, UTF-8) to *out; it includes
 *     the BOS/EOS the HF post-processor adds when Megatron's call would add them.
 *   - Invalid UTF-8 or a lone surrogate: see mg_encode.
 */
#ifndef MG_TOKENIZER_H
#define MG_TOKENIZER_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"

typedef struct {
    const char *type;              /* --tokenizer-type */
    const char *vocab_file;        /* --vocab-file */
    const char *merge_file;        /* --merge-file */
    const char *model;             /* --tokenizer-model */
    int64_t vocab_size;            /* --vocab-size, -1 if not given */
    const char *tiktoken_pattern;  /* --tiktoken-pattern v1|v2|<OpenAI encoding>, NULL = v2 */
    int64_t tiktoken_num_special;  /* --tiktoken-num-special-tokens, default 1000 */
    const char *const *special_tokens; /* --tokenizer-special-tokens */
    size_t n_special_tokens;
    int hf_no_include_special;     /* --tokenizer-hf-no-include-special-tokens */
    int64_t null_eod_id;           /* --null-tokenizer-eod-id, -1 if not given */
} mg_tok_opts;

/* 1 if name is a --tiktoken-pattern value TikTokenizer knows: v1, v2 (Megatron layout) or
 * an OpenAI encoding name (r50k_base, p50k_base, p50k_edit, cl100k_base, o200k_base: the
 * OpenAI id layout). */
int mg_tiktoken_pattern_known(const char *name);

/* Fills the defaults (vocab_size -1, tiktoken_num_special 1000, null_eod_id -1). */
void mg_tok_opts_init(mg_tok_opts *o);

typedef struct mg_tokenizer mg_tokenizer;
typedef struct mg_encoder mg_encoder;

mg_status mg_tokenizer_create(mg_tokenizer **tk, const mg_tok_opts *o);
void mg_tokenizer_free(mg_tokenizer *tk); /* accepts NULL */

/* Megatron's tokenizer.vocab_size (unpadded; decides the .bin dtype). */
int64_t mg_tokenizer_vocab_size(const mg_tokenizer *tk);
/* Megatron's tokenizer.eod (-1 if the tokenizer has none: then --append-eod is an error). */
int64_t mg_tokenizer_eod(const mg_tokenizer *tk);
/* One line describing the tokenizer (type, vocabulary, pre-tokenizer family, semantics). */
const char *mg_tokenizer_describe(const mg_tokenizer *tk);

typedef struct {
    int64_t *v;
    size_t n, cap;
} mg_ids;

mg_status mg_ids_push(mg_ids *ids, int64_t id);
void mg_ids_free(mg_ids *ids);

mg_status mg_encoder_create(mg_encoder **e, const mg_tokenizer *tk);
void mg_encoder_free(mg_encoder *e); /* accepts NULL */

/* Appends the ids of text[0, len) to out. Text must be valid UTF-8 (MG_ERR_FORMAT
 * "invalid UTF-8 at byte N" otherwise). NullTokenizer: Megatron's int(x) for x in
 * text.split(' ') — a non-integer field is MG_ERR_FORMAT. */
mg_status mg_encode(mg_encoder *e, const char *text, size_t len, mg_ids *out);

/* mg_encode for a text the caller knows to be strict UTF-8 without surrogate forms (a
 * string that mg_jsonl decoded with lone_surrogates == 0): the same ids, without checking
 * the text again. */
mg_status mg_encode_valid(mg_encoder *e, const char *text, size_t len, mg_ids *out);

/* Text of a decode: a growable byte buffer (p is NUL-terminated when n > 0). */
typedef struct {
    char *p;
    size_t n, cap;
} mg_text;

mg_status mg_text_append(mg_text *t, const char *s, size_t len);
void mg_text_free(mg_text *t);

/* Appends to *out the text of ids[0, n), as the reference library decodes them with
 * special tokens kept (transformers tokenizer.decode(ids) / tiktoken decode /
 * sentencepiece DecodeIds): bytes that do not form valid UTF-8 become U+FFFD as the
 * reference does. An id outside [0, vocab_size) is MG_ERR_ARG naming its position.
 * A tokenizer that cannot decode yet answers MG_ERR_UNSUPPORTED "not supported yet:
 * decoding <type>". Thread-safe (the tokenizer is immutable). */
mg_status mg_tokenizer_decode(const mg_tokenizer *tk, const int64_t *ids, size_t n,
                              mg_text *out);

#endif

/* decode_util.h — helpers shared by the tokenizers' decode functions (private to
 * libcommon/tok).
 *
 * Contract:
 *   - UTF-8 repair, as the reference libraries do it:
 *       mg_decode_utf8_lossy: Python's bytes.decode("utf-8", "replace") = Rust's
 *         String::from_utf8_lossy: one U+FFFD per maximal invalid subpart (a lead byte
 *         followed by the longest prefix of a valid sequence, or one stray byte);
 *         surrogate forms (ED A0..BF) and overlong forms are invalid.
 *       mg_decode_utf8_per_byte: sentencepiece's DecodeUTF8 loop: one U+FFFD per byte
 *         that does not start a complete valid sequence.
 *       mg_decode_utf8_valid: strict validity (Rust String::from_utf8).
 *   - mg_decode_byte_level: the HF ByteLevel decoder on one token string: the bytes of
 *     its characters through the GPT-2 byte map (byte_level.h) if every character is in
 *     the map, else the token's own UTF-8 bytes.
 *   - mg_tok_strs: a list of byte strings in one buffer (the tokens a decoder works on).
 *   - mg_hf_decoder: a tokenizer.json "decoder" (HF tokenizers 0.23 decode_chain
 *     semantics, steps applied in order, results joined): ByteLevel, Replace (String
 *     pattern), ByteFallback, Fuse, Strip, Metaspace, WordPiece, BPEDecoder, Sequence of
 *     those; null = tokens joined with ' ' (tokenizers without a decoder). Anything else
 *     (CTC, a Regex pattern) is MG_ERR_UNSUPPORTED "not supported yet: decoder X in FILE".
 *   - mg_decode_replace_all: Python/Rust str.replace (left to right, non-overlapping).
 *   - mg_decode_cleanup: tokenizers' WordPiece cleanup (" ." -> ".", ... " do not" ->
 *     " don't"); with_do_not = 0 gives transformers' clean_up_tokenization (no " do not").
 *   All functions are reentrant; a decoder is immutable after creation.
 */
#ifndef MG_TOK_DECODE_UTIL_H
#define MG_TOK_DECODE_UTIL_H

#include <stddef.h>
#include <stdint.h>

#include "mg/tokenizer.h"

mg_status mg_decode_utf8_lossy(mg_text *out, const uint8_t *s, size_t n);
mg_status mg_decode_utf8_per_byte(mg_text *out, const uint8_t *s, size_t n);
int mg_decode_utf8_valid(const uint8_t *s, size_t n);

/* Appends the bytes of one byte-level token string tok[0, len) to *bytes (not repaired). */
mg_status mg_decode_byte_level(mg_text *bytes, const char *tok, size_t len);

mg_status mg_decode_replace_all(mg_text *out, const char *s, size_t n, const char *from,
                                size_t from_len, const char *to, size_t to_len);
mg_status mg_decode_cleanup(mg_text *out, const char *s, size_t n, int with_do_not);

typedef struct {
    mg_text buf;
    size_t *end; /* token i = buf.p[end[i-1] (0 for i = 0), end[i]) */
    size_t n, cap;
} mg_tok_strs;

mg_status mg_tok_strs_push(mg_tok_strs *l, const char *s, size_t len);
const char *mg_tok_strs_get(const mg_tok_strs *l, size_t i, size_t *len);
void mg_tok_strs_clear(mg_tok_strs *l); /* keeps the memory */
void mg_tok_strs_free(mg_tok_strs *l);

typedef struct mg_hf_decoder mg_hf_decoder;

/* json: the tokenizer.json "decoder" value (a json_t *; NULL or JSON null: no decoder);
 * file names the file in messages. */
mg_status mg_hf_decoder_create(mg_hf_decoder **dec, const void *json, const char *file);
/* The single ByteLevel decoder (GPT-2 vocab.json + merges.txt). */
mg_status mg_hf_decoder_create_byte_level(mg_hf_decoder **dec);
void mg_hf_decoder_free(mg_hf_decoder *dec); /* accepts NULL */
/* Runs the decoder over *tokens (which it may reuse as scratch) and appends the joined
 * result to *out. */
mg_status mg_hf_decoder_run(const mg_hf_decoder *dec, mg_tok_strs *tokens, mg_text *out);

#endif

/* bpe.h — the byte-level BPE engine shared by every BPE tokenizer (private to libcommon/tok).
 *
 * Contract:
 *   - A model holds tokens as raw byte strings with their ids, and merge priorities:
 *       MG_BPE_PAIR_RANK  (HF tokenizers): only listed merges apply; priority = the merge's
 *                          index in the merges list (mg_bpe_add_merge call order); a later
 *                          duplicate pair overrides the earlier one's rank (HF HashMap collect).
 *       MG_BPE_TOKEN_RANK (tiktoken): any adjacent pair whose concatenation is a token merges;
 *                          priority = that token's rank (= its id minus nothing: the rank).
 *     Ties: lowest priority value first, then leftmost position (tiktoken and HF agree).
 *   - Initial symbols are the single bytes of the piece: every byte 0..255 must be a token
 *     (mg_bpe_finalize checks it: MG_ERR_FORMAT naming the missing byte).
 *   - whole_piece_shortcut: if the whole piece is a token, emit it without merging (tiktoken
 *     always; HF only with ignore_merges:true).
 *   - Encoding a piece appends its ids; the model is immutable after finalize and shared by
 *     threads; each thread uses its own mg_bpe_cache (pre-token -> ids memo + scratch).
 *   - Pieces of any length are handled in O(n log n) (heap merge for long pieces).
 *   - Char-initial models (added; HF BPE without ByteLevel: SentencePiece-style files such as
 *     Llama-2, Mistral, Gemma): mg_bpe_set_char_symbols() before finalize. Tokens are then
 *     plain UTF-8 strings, single bytes need not be tokens, and mg_bpe_encode_chars()
 *     encodes a piece as HF's merge_word: each UTF-8 character is a symbol if it is a
 *     token; else (byte_fallback) its bytes as "<0xXX>" tokens if all exist; else the unk
 *     token (consecutive unknown characters fused into one with fuse_unk; dropped if there
 *     is no unk token); then the listed merges apply by rank. mg_bpe_encode_piece and
 *     mg_bpe_encode_spans stay the byte-level entry points (unchanged, byte models only).
 */
#ifndef MG_TOK_BPE_H
#define MG_TOK_BPE_H

#include <stddef.h>
#include <stdint.h>

#include "mg/pretok.h"
#include "mg/tokenizer.h"

typedef enum { MG_BPE_PAIR_RANK = 1, MG_BPE_TOKEN_RANK = 2 } mg_bpe_mode;

typedef struct mg_bpe mg_bpe;
typedef struct mg_bpe_cache mg_bpe_cache;

mg_status mg_bpe_create(mg_bpe **b, mg_bpe_mode mode);
/* Adds a token. TOKEN_RANK mode: its rank is `rank`; PAIR_RANK mode: rank is ignored.
 * A duplicate byte string is MG_ERR_FORMAT. */
mg_status mg_bpe_add_token(mg_bpe *b, const uint8_t *bytes, size_t len, int32_t id, int32_t rank);
typedef struct {
    const uint8_t *bytes;
    size_t len;
    int32_t id, rank;
} mg_bpe_token;
/* mg_bpe_add_token for x[0, n) in order, faster: the probes of a batch of tokens overlap.
 * On an error *bad is the index of the token it is about (the tokens before it were
 * added). */
mg_status mg_bpe_add_tokens(mg_bpe *b, const mg_bpe_token *x, size_t n, size_t *bad);
/* PAIR_RANK mode only: adds merge (left, right) -> the token left||right, rank = call index.
 * Unknown left/right/merged token is MG_ERR_FORMAT (message names the merge). */
mg_status mg_bpe_add_merge(mg_bpe *b, const uint8_t *left, size_t llen, const uint8_t *right,
                           size_t rlen);
typedef struct {
    const uint8_t *left, *right;
    size_t llen, rlen;
} mg_bpe_merge;
/* mg_bpe_add_merge for m[0, n) in order, faster: the lookups of a batch of merges overlap
 * (a vocabulary's merges are looked up at random). On an error *bad is the index of the
 * merge it is about (the merges before it were added). */
mg_status mg_bpe_add_merges(mg_bpe *b, const mg_bpe_merge *m, size_t n, size_t *bad);
/* Sizes the tables for n_tokens tokens and n_pairs merges before they are added (a hint:
 * more may follow; loading then does not rehash the tables as they fill). */
mg_status mg_bpe_reserve(mg_bpe *b, size_t n_tokens, size_t n_pairs);
/* Builds the lookup tables; the pair table is packed into half the bytes where the ranks
 * order as the merged ids (bpe_impl.h). */
mg_status mg_bpe_finalize(mg_bpe *b, int whole_piece_shortcut);
/* 1 if the finalized model's pair table is the packed one (for tests), else 0. */
int mg_bpe_pairs_packed(const mg_bpe *b);
/* Makes the model char-initial (added; PAIR_RANK only, before finalize). unk_id < 0: no
 * unk token. */
mg_status mg_bpe_set_char_symbols(mg_bpe *b, int byte_fallback, int32_t unk_id, int fuse_unk);
size_t mg_bpe_n_tokens(const mg_bpe *b);
/* Id of a byte string, -1 if not a token. */
int32_t mg_bpe_token_id(const mg_bpe *b, const uint8_t *bytes, size_t len);
/* Byte string of an id (NULL if unknown, or before mg_bpe_finalize); for decoding and tests. */
const uint8_t *mg_bpe_token_bytes(const mg_bpe *b, int32_t id, size_t *len);
void mg_bpe_free(mg_bpe *b);

mg_status mg_bpe_cache_create(mg_bpe_cache **c, const mg_bpe *b);
void mg_bpe_cache_free(mg_bpe_cache *c);

/* Appends the ids of one pre-token (raw bytes). */
mg_status mg_bpe_encode_piece(const mg_bpe *b, mg_bpe_cache *c, const uint8_t *piece, size_t len,
                              mg_ids *out);

/* Appends the ids of every piece text[spans[i].off, +spans[i].len), in order: the same as
 * calling mg_bpe_encode_piece on each, with the cache lines of the next pieces prefetched. */
mg_status mg_bpe_encode_spans(const mg_bpe *b, mg_bpe_cache *c, const char *text,
                              const mg_span *spans, size_t n, mg_ids *out);

/* Char-initial models (added): appends the ids of one pre-token (valid UTF-8). */
mg_status mg_bpe_encode_chars(const mg_bpe *b, mg_bpe_cache *c, const uint8_t *piece,
                              size_t len, mg_ids *out);

#endif

/* wordpiece.h — the WordPiece model (private to libcommon/tok).
 *
 * Contract (HF tokenizers 0.23 models/wordpiece = Google BERT's WordpieceTokenizer):
 *   - A vocabulary maps byte strings to ids; when a string is added twice the later id
 *     wins (Python dict / JSON object semantics). mg_wordpiece_finalize() must be called
 *     once after the last add and before any lookup or encode.
 *   - mg_wordpiece_encode_word() encodes one pre-tokenized word: a word of more than
 *     max_input_chars_per_word characters (code points) is the unk token; otherwise greedy
 *     longest-match-first from the left, the first piece looked up as is and every later
 *     piece as continuing_subword_prefix + piece; if some position has no match the whole
 *     word is the unk token. A needed unk token that is not in the vocabulary is
 *     MG_ERR_FORMAT (HF: "Missing [UNK] token from the vocabulary").
 *   - mg_wordpiece_token() gives the string of an id (NULL if no token has that id).
 *   - Immutable after finalize; shared by threads (encoding needs no per-thread state).
 */
#ifndef MG_TOK_WORDPIECE_H
#define MG_TOK_WORDPIECE_H

#include <stddef.h>
#include <stdint.h>

#include "mg/tokenizer.h"

typedef struct mg_wordpiece mg_wordpiece;

/* prefix: continuing_subword_prefix (may be ""); unk: the unk token string. */
mg_status mg_wordpiece_create(mg_wordpiece **wp, const char *prefix, const char *unk,
                              size_t max_input_chars_per_word);
void mg_wordpiece_free(mg_wordpiece *wp); /* accepts NULL */

/* Adds s[0, len) with id (0 <= id <= INT32_MAX). */
mg_status mg_wordpiece_add(mg_wordpiece *wp, const char *s, size_t len, int64_t id);
mg_status mg_wordpiece_finalize(mg_wordpiece *wp);

/* Number of distinct strings; largest id + 1 (0 if empty). */
size_t mg_wordpiece_size(const mg_wordpiece *wp);
int64_t mg_wordpiece_id_end(const mg_wordpiece *wp);

/* Id of a string, -1 if absent. */
int64_t mg_wordpiece_id(const mg_wordpiece *wp, const char *s, size_t len);
/* String of an id, NULL if none (*len set otherwise). */
const char *mg_wordpiece_token(const mg_wordpiece *wp, int64_t id, size_t *len);
/* The continuing_subword_prefix. */
const char *mg_wordpiece_prefix(const mg_wordpiece *wp, size_t *len);

/* Appends the ids of one word w[0, n) (valid UTF-8, n > 0). */
mg_status mg_wordpiece_encode_word(const mg_wordpiece *wp, const char *w, size_t n,
                                   mg_ids *out);

#endif

/* added_tokens.h — finding added/special token strings inside text (private to libcommon/tok).
 *
 * Contract (HF tokenizers AddedVocabulary semantics, which also cover tiktoken's
 * allowed_special="all" split when all flags are 0):
 *   - mg_added_tokens_find() scans text[from, len) for the leftmost occurrence of any
 *     token content; among matches starting at the same position the longest wins
 *     (leftmost-longest, as HF's Aho-Corasick). single_word rejects a match with a word
 *     character (alphanumeric or '_') directly before or after it; lstrip / rstrip extend
 *     the removed span over the whitespace to its left / right.
 *   - Returns 1 with [*mstart, *mend) = the span consumed (including stripped whitespace)
 *     and *id, or 0 when there is no further match.
 *   - Immutable after creation; shared by threads.
 */
#ifndef MG_TOK_ADDED_TOKENS_H
#define MG_TOK_ADDED_TOKENS_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"

typedef struct {
    const char *content; /* UTF-8, copied at creation */
    size_t len;
    int64_t id;
    int single_word, lstrip, rstrip, normalized, special;
} mg_added_token;

typedef struct mg_added_tokens mg_added_tokens;

mg_status mg_added_tokens_create(mg_added_tokens **a, const mg_added_token *toks, size_t n);
void mg_added_tokens_free(mg_added_tokens *a);
size_t mg_added_tokens_count(const mg_added_tokens *a);
int mg_added_tokens_find(const mg_added_tokens *a, const char *text, size_t len, size_t from,
                         size_t *mstart, size_t *mend, int64_t *id);

#endif

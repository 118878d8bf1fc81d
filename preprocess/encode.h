/* preprocess/encode.h — Megatron's Encoder.encode for a batch of JSON lines
 * (docs/FORMATS.md §2), one pp_encoder per thread.
 *
 * For each line: a trailing "\r" is dropped (Megatron reads with universal newlines); an
 * empty line, invalid JSON, a missing key, a value that is neither a string nor a list of
 * strings, invalid UTF-8 or a tokenizer error makes the line invalid. For each key, the
 * value's sentences (a string is one sentence, a list its strings): each sentence with
 * tokens becomes one sequence of the document (ids = tokenize(sentence)), sentences without
 * tokens are dropped; if the document has tokens and append_eod, eod is appended to its last
 * sequence. No tokens at all = an empty document (no sequence). Results and invalid lines
 * are recorded in the batch (batch.h).
 *
 * With a sentence splitter (--split-sentences, pp_encoder_set_splitter) each string is
 * first split into sentences as Megatron's Encoder.split does (NLTK Punkt on pieces of
 * 1,000,000 code points, mg/punkt.h), and each sentence is one item as above; the items of
 * a list value are split one by one (Megatron's split fails on a list).
 */
#ifndef MG_PP_ENCODE_H
#define MG_PP_ENCODE_H

#include "batch.h"
#include "mg/punkt.h"
#include "mg/tokenizer.h"

typedef struct pp_encoder pp_encoder;

/* keys must outlive the encoder. eod is used only if append_eod. */
mg_status pp_encoder_create(pp_encoder **e, const mg_tokenizer *tk, const char *const *keys,
                            size_t n_keys, int append_eod, int skip_invalid);
void pp_encoder_free(pp_encoder *e); /* accepts NULL */

/* Splits every value into sentences with s first; the encoder takes ownership of s. */
void pp_encoder_set_splitter(pp_encoder *e, mg_punkt_splitter *s);

/* Encodes every line of b. Invalid lines are recorded in b (skipped, or b->failed); the
 * return value is an error only when encoding could not go on (out of memory). */
mg_status pp_encode_batch(pp_encoder *e, pp_batch *b);

#endif

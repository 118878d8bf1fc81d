/* hf_vocab_scan.h — tokenizer.json's model.vocab and model.merges without a JSON DOM
 * (private to libcommon/tok).
 *
 * Contract:
 *   - mg_hf_scan_model() walks the top-level object to its "model" member and that object's
 *     "vocab" (an object of string -> id) and "merges" (an array of "a b" strings or
 *     ["a", "b"] pairs), and decodes them straight into d: d->vocab / vocab_id / n_vocab,
 *     d->merge_l / merge_r / n_merges, in file order, strings NUL-terminated in one buffer
 *     the description owns. It then gives *rest: a copy of the text where those two values
 *     are replaced by the markers {"mg:scanned":0} and ["mg:scanned"] with the same number
 *     of lines and the same column after them, for jansson to parse the rest (jansson's
 *     messages keep their line:column). d->scanned_vocab / d->scanned_merges say which
 *     were taken.
 *   - It only takes a strict subset whose meaning is certain: member keys of the top-level
 *     and model objects without escapes, "model", "vocab" and "merges" each present once;
 *     vocabulary strings and merges valid UTF-8 without \u0000 or lone surrogate escapes;
 *     ids plain integers 0..INT32_MAX; no vocabulary string twice (jansson and HF keep the
 *     last); "a b" merges with exactly one space. Outside it (or a tiny one-line value
 *     with no room for the marker) nothing is taken: d is untouched, *rest is NULL, and
 *     the caller parses the whole text with jansson, which gives the same values or the
 *     exact error.
 *   - mg_hf_scan_vocab_json() does the same for a GPT-2 vocab.json (the whole text is the
 *     vocabulary object, whitespace around it allowed): d->vocab filled and
 *     d->scanned_vocab set when it is in the subset, else d untouched (jansson's turn).
 *   - Both return MG_OK, or MG_ERR_NOMEM (d then untouched).
 */
#ifndef MG_TOK_HF_VOCAB_SCAN_H
#define MG_TOK_HF_VOCAB_SCAN_H

#include <stddef.h>

#include "tok/hf_json.h"

#define MG_HF_SCAN_MARKER "mg:scanned"

mg_status mg_hf_scan_model(mg_hf_desc *d, const char *buf, size_t len, char **rest,
                           size_t *rest_len);
mg_status mg_hf_scan_vocab_json(mg_hf_desc *d, const char *buf, size_t len);

#endif

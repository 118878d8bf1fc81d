/* mg/jsonl.h — extracting string values from one JSON Lines record.
 *
 * Contract:
 *   - mg_jsonl_extract() parses one line (a complete JSON value, as Python's json.loads
 *     would accept it: surrounding whitespace allowed, NaN/Infinity literals accepted) and,
 *     for each requested key of the top-level object, returns its string value as UTF-8.
 *   - A value is a string or a list of strings (Megatron's Encoder.encode accepts both: a
 *     list holds the sentences of one document, as in --split-sentences "_ss" files). Every
 *     value is also given as items: a string value is one item (items[0] is str/len), a
 *     list value has is_list = 1, str = NULL and its n_items strings (0 for []).
 *   - A line that is not valid JSON, not an object, lacks a key, whose value is neither a
 *     string nor a list, or whose list holds a non-string, is MG_ERR_FORMAT with a message
 *     without location ("missing key \"text\"", "invalid JSON at column 17: ...",
 *     "key \"text\" is a number, expected a string", "key \"text\" item 3 is null,
 *     expected a string" with items counted from 1); the caller prefixes FILE:LINE.
 *   - Invalid UTF-8 in the line is MG_ERR_FORMAT ("invalid UTF-8 at column N"), as
 *     Python's strict utf-8 decoding fails there.
 *   - A \uD800-\uDFFF escape that is not part of a surrogate pair (Python keeps such lone
 *     surrogates) is emitted as its 3-byte generalized UTF-8 form (ED A0 80 .. ED BF BF),
 *     and mg_jsonl_value.lone_surrogates counts them; the tokenizer decides (see
 *     mg/tokenizer.h).
 *   - Values, items and their strings (duplicate keys: the last one wins, as in Python)
 *     point into the parser's buffers, valid until the next call with the same parser. No
 *     allocation per line once the buffers have grown. A parser belongs to one thread.
 */
#ifndef MG_JSONL_H
#define MG_JSONL_H

#include <stddef.h>

#include "mg/error.h"

typedef struct mg_jsonl mg_jsonl;

/* One string of a value. */
typedef struct {
    const char *str; /* UTF-8, NUL-terminated (may contain NUL bytes: use len) */
    size_t len;
    size_t lone_surrogates;
} mg_jsonl_item;

typedef struct {
    const char *str; /* a string value: UTF-8, NUL-terminated (may contain NUL bytes: use
                        len); NULL for a list value */
    size_t len;
    size_t lone_surrogates;     /* of the string, or of all the list's strings together */
    int is_list;                /* the value is a JSON array (of strings) */
    size_t n_items;             /* 1 for a string; the list's length for a list */
    const mg_jsonl_item *items; /* n_items strings (owned by the parser) */
} mg_jsonl_value;

mg_status mg_jsonl_create(mg_jsonl **p);
void mg_jsonl_free(mg_jsonl *p); /* accepts NULL */

/* keys: n key names; out: n values, filled in the same order. */
mg_status mg_jsonl_extract(mg_jsonl *p, const char *line, size_t len, const char *const *keys,
                           size_t n, mg_jsonl_value *out);

#endif

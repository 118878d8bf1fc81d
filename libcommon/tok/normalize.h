/* normalize.h — HF tokenizer.json normalizers (private to libcommon/tok).
 *
 * Contract:
 *   - A normalizer is a list of steps applied in order (HF "Sequence"; an empty list is the
 *     identity). Supported steps: NFC (needs utf8proc; without it creating one is
 *     MG_ERR_UNSUPPORTED "not built with utf8proc"); Prepend (a string before non-empty
 *     text); Replace (every non-overlapping match, leftmost first, of a literal String or
 *     of an Oniguruma Regex, as HF compiles both, becomes the content). Other HF
 *     normalizers are refused by the tokenizer.json loader.
 *   - Added (utf8proc steps; without utf8proc creating one is MG_ERR_UNSUPPORTED
 *     "... not built with utf8proc"): NFD, NFKC, NFKD (utf8proc_map; Debian's utf8proc
 *     2.8.0 implements Unicode 15.0, HF tokenizers' unicode-normalization crate 16.0,
 *     Python 3.11's unicodedata 14.0: text with characters assigned after 15.0 may
 *     normalize differently); Lowercase (HF NormalizedString::lowercase = Rust
 *     char::to_lowercase per character: utf8proc_tolower, plus the one unconditional
 *     multi-character mapping U+0130 -> "i\u0307"; no final-sigma rule); StripAccents
 *     (drops every general-category M* character, without decomposing first);
 *     BertNormalizer(clean_text, handle_chinese_chars, strip_accents, lowercase) in HF's
 *     order (clean, pad Chinese, NFD + drop Mn, lowercase; see bert_basic.h).
 *     Strip(left, right) (removes White_Space at the ends) needs no utf8proc.
 *     Fast paths: pure-ASCII text is invariant under NFD/NFKC/NFKD and StripAccents.
 *   - A normalizer owns copies of its strings and compiled regexes: mg_normalizer_free()
 *     releases them (a normalizer of NFC steps only owns nothing); mg_normalizer_copy()
 *     makes an independent copy.
 *   - mg_normalize() maps valid UTF-8 text to its normalized form. When the text is already
 *     normalized it returns the input pointer itself (no copy); otherwise the result lives
 *     in the caller's mg_norm_buf, valid until the next call with that buffer.
 *   - NFC fast path: text with no code point >= U+0300 is NFC already.
 *   - The normalizer is immutable and shared by threads; each thread owns its mg_norm_buf.
 */
#ifndef MG_TOK_NORMALIZE_H
#define MG_TOK_NORMALIZE_H

#include <stddef.h>

#include "mg/error.h"
#include "mg/pretok.h"

typedef enum {
    MG_NORM_NFC = 1,
    MG_NORM_PREPEND,
    MG_NORM_REPLACE,
    MG_NORM_NFD,
    MG_NORM_NFKC,
    MG_NORM_NFKD,
    MG_NORM_LOWERCASE,
    MG_NORM_STRIP_ACCENTS,
    MG_NORM_STRIP,
    MG_NORM_BERT,
} mg_norm_step;

#define MG_NORM_MAX_STEPS 8

/* Arguments of a Prepend / Replace step (owned by the normalizer). */
typedef struct {
    char *str;     /* Prepend: the prefix; Replace: the literal pattern (NULL for a regex) */
    size_t len;
    char *content; /* Replace: the replacement */
    size_t clen;
    char *regex;            /* Replace: the regex text, or NULL */
    mg_pretok *re; /* Replace: the regex as a splitter yielding the matches */
    int left, right;   /* Strip: which ends */
    unsigned bert;     /* BertNormalizer: MG_NORM_BERT_* flags */
} mg_norm_arg;

/* BertNormalizer options (mg_norm_arg.bert). */
#define MG_NORM_BERT_CLEAN 1u
#define MG_NORM_BERT_CHINESE 2u
#define MG_NORM_BERT_STRIP_ACCENTS 4u
#define MG_NORM_BERT_LOWERCASE 8u

typedef struct {
    mg_norm_step steps[MG_NORM_MAX_STEPS];
    mg_norm_arg args[MG_NORM_MAX_STEPS];
    size_t n;
} mg_normalizer;

typedef struct {
    char *p;
    size_t cap;
    char *q; /* second buffer: steps alternate between the two */
    size_t qcap;
    mg_pretok_scratch *scratch; /* regex Replace */
    mg_spans spans;              /* regex Replace matches */
} mg_norm_buf;

/* Appends a step; MG_ERR_UNSUPPORTED if the build cannot do it, MG_ERR_LIMIT if full. */
mg_status mg_normalizer_add(mg_normalizer *nz, mg_norm_step step);

/* Appends Prepend(str): str[0, len) goes before non-empty text. */
mg_status mg_normalizer_add_prepend(mg_normalizer *nz, const char *str, size_t len);
/* Appends Replace(pattern -> content); is_regex: pattern is an Oniguruma regex (NUL-
 * terminated), else a literal string of plen > 0 bytes. MG_ERR_UNSUPPORTED for a regex
 * without Oniguruma. */
mg_status mg_normalizer_add_replace(mg_normalizer *nz, const char *pattern, size_t plen,
                                    int is_regex, const char *content, size_t clen);
/* Appends Strip(left, right). */
mg_status mg_normalizer_add_strip(mg_normalizer *nz, int left, int right);
/* Appends BertNormalizer with the MG_NORM_BERT_* flags (needs utf8proc). */
mg_status mg_normalizer_add_bert(mg_normalizer *nz, unsigned flags);
/* The HF name of a step ("NFC", "BertNormalizer", ...). */
const char *mg_norm_step_name(mg_norm_step step);

/* Deep copy of src into *dst (dst is overwritten, not freed). */
mg_status mg_normalizer_copy(mg_normalizer *dst, const mg_normalizer *src);
void mg_normalizer_free(mg_normalizer *nz); /* frees what it owns; leaves it empty */

/* Normalizes text[0, len); the result goes to *out and *out_len (see the contract). */
mg_status mg_normalize(const mg_normalizer *nz, mg_norm_buf *buf, const char *text, size_t len,
                       const char **out, size_t *out_len);

void mg_norm_buf_free(mg_norm_buf *buf);

#endif

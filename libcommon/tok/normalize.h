/* normalize.h — HF tokenizer.json normalizers (private to libcommon/tok).
 *
 * Contract:
 *   - A normalizer is a list of steps applied in order (HF "Sequence"; an empty list is the
 *     identity). Supported steps: NFC (needs utf8proc; without it creating one is
 *     MG_ERR_UNSUPPORTED "not built with utf8proc"). Other HF normalizers are refused by
 *     the tokenizer.json loader.
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

typedef enum { MG_NORM_NFC = 1 } mg_norm_step;

#define MG_NORM_MAX_STEPS 8

typedef struct {
    mg_norm_step steps[MG_NORM_MAX_STEPS];
    size_t n;
} mg_normalizer;

typedef struct {
    char *p;
    size_t cap;
} mg_norm_buf;

/* Appends a step; MG_ERR_UNSUPPORTED if the build cannot do it, MG_ERR_LIMIT if full. */
mg_status mg_normalizer_add(mg_normalizer *nz, mg_norm_step step);

/* Normalizes text[0, len); the result goes to *out and *out_len (see the contract). */
mg_status mg_normalize(const mg_normalizer *nz, mg_norm_buf *buf, const char *text, size_t len,
                       const char **out, size_t *out_len);

void mg_norm_buf_free(mg_norm_buf *buf);

#endif

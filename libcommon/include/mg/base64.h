/* mg/base64.h — standard base64 (RFC 4648 alphabet, '=' padding) decoding.
 *
 * Contract:
 *   - mg_base64_decode() decodes in[0, len) into out, which must hold
 *     mg_base64_decoded_max(len) bytes; *out_len receives the decoded size.
 *   - Accepted input is what Python's base64.b64decode() accepts from a well-formed encoder:
 *     groups of 4 alphabet characters, the last group may end in "=" or "==". Anything
 *     else (a character outside the alphabet, a length not a multiple of 4, misplaced
 *     padding) is MG_ERR_FORMAT ("invalid base64 at character N", or "... length N is not a multiple of 4"). Unused low bits of the
 *     last group are ignored, as Python does.
 *   - An empty input decodes to zero bytes.
 */
#ifndef MG_BASE64_H
#define MG_BASE64_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"

static inline size_t mg_base64_decoded_max(size_t len) { return len / 4 * 3 + 3; }

mg_status mg_base64_decode(const char *in, size_t len, uint8_t *out, size_t *out_len);

#endif

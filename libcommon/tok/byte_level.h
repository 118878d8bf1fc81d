/* byte_level.h — the GPT-2 ByteLevel byte <-> Unicode map (private to libcommon/tok).
 *
 * Contract:
 *   - Bytes 0x21-0x7E, 0xA1-0xAC, 0xAE-0xFF map to the code point of the same value; the
 *     other 68 bytes, in ascending order, map to U+0100 + n (n = 0..67).
 *   - Byte-level vocabulary and merge strings (HF tokenizer.json, GPT-2 vocab.json) are
 *     converted back to raw bytes once at load; encoding works on raw bytes only.
 *   - Pure functions over const tables; thread-safe.
 */
#ifndef MG_TOK_BYTE_LEVEL_H
#define MG_TOK_BYTE_LEVEL_H

#include <stddef.h>
#include <stdint.h>

/* Code point of byte b in the byte-level alphabet. */
uint32_t mg_byte_level_char(uint8_t b);

/* Converts a byte-level string s[0, len) (UTF-8) to raw bytes in out (room for len bytes:
 * the output is never longer than the input). Returns 1 and sets *out_len on success, 0 if
 * s is not a byte-level string (malformed UTF-8 or a code point outside the alphabet). */
int mg_byte_level_decode(const char *s, size_t len, uint8_t *out, size_t *out_len);

/* Writes the byte-level UTF-8 form of bytes[0, len) into out (room for 2*len bytes);
 * returns the number of bytes written. */
size_t mg_byte_level_encode(const uint8_t *bytes, size_t len, char *out);

#endif

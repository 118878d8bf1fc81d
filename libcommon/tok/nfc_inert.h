/* nfc_inert.h — the code points that NFC leaves as they are whatever surrounds them, so
 * that a run of them needs no normalization (private to libcommon/tok).
 *
 * Contract: mg_nfc_inert(cp) is 1 iff, in utf8proc's Unicode data, cp has canonical
 * combining class 0, no canonical decomposition, is no Hangul syllable or conjoining jamo,
 * and is no element after the first of any code point's canonical decomposition (so never
 * the second of a canonical composition). Then NFD leaves a string of such code points
 * alone, canonical reordering has nothing to move, and composition finds no pair: NFC of
 * such a string, after any starter, is the string itself (ASCII characters are inert).
 * The table (one bit per code point, 136 KiB) is built on first use, thread-safe.
 * Without utf8proc (MG_HAVE_UTF8PROC 0) nothing is inert.
 */
#ifndef MG_TOK_NFC_INERT_H
#define MG_TOK_NFC_INERT_H

#include <stddef.h>
#include <stdint.h>

int mg_nfc_inert(uint32_t cp);

/* 1 iff s[0, n) is valid UTF-8 made of inert code points only. */
int mg_nfc_inert_run(const uint8_t *s, size_t n);

#endif

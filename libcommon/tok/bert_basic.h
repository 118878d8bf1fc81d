/* bert_basic.h — BERT's basic tokenizer as HF tokenizers implements it (BertNormalizer and
 * BertPreTokenizer), private to libcommon/tok.
 *
 * Contract (HF tokenizers 0.23 normalizers/bert.rs, pre_tokenizers/bert.rs; the semantics
 * transformers 5's BertTokenizer and Megatron HEAD's BertWordPiece types run):
 *   - whitespace: '\t', '\n', '\r' or Unicode White_Space (Rust char::is_whitespace; the
 *     mg/unicode.h table).
 *   - control: general category Cc, Cf or Co, except '\t', '\n', '\r' (Cn, Cs are not).
 *   - Chinese character: U+4E00-9FFF, 3400-4DBF, 20000-2A6DF, 2A700-2B73F, 2B740-2B81F,
 *     2B920-2CEAF, F900-FAFF, 2F800-2FA1F (HF's ranges: U+2B820-2B91F is NOT included,
 *     unlike Google's BERT and transformers' legacy Python tokenizer).
 *   - punctuation: ASCII 33-47, 58-64, 91-96, 123-126, or general category P*.
 *   - mg_bert_clean(): drops U+0000, U+FFFD and controls first (so U+000B, U+000C,
 *     U+0085, both Cc and White_Space, are dropped), then maps whitespace to ' '.
 *   - mg_bert_pad_chinese(): surrounds each Chinese character with ' '.
 *   - mg_bert_pretokenize(): splits on whitespace (removed) and isolates each punctuation
 *     character; spans relative to text, never empty.
 *   - Categories come from utf8proc (Unicode 15.0 in Debian's 2.8.0); without utf8proc
 *     (MG_HAVE_UTF8PROC 0) mg_bert_available() is 0 and the category functions must not be
 *     called (the normalizer and pre-tokenizer constructors refuse before that).
 *   - Input is valid UTF-8; everything is pure and thread-safe.
 */
#ifndef MG_TOK_BERT_BASIC_H
#define MG_TOK_BERT_BASIC_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"
#include "mg/pretok.h"

int mg_bert_available(void);

int mg_bert_is_whitespace(uint32_t cp);
int mg_bert_is_control(uint32_t cp);
int mg_bert_is_chinese(uint32_t cp);
int mg_bert_is_punct(uint32_t cp);
int mg_bert_is_mark_nonspacing(uint32_t cp); /* Mn */

/* Writes the cleaned text to out (capacity >= len); returns its length. */
size_t mg_bert_clean(const char *text, size_t len, char *out);
/* Number of Chinese characters in text (each adds 2 bytes when padded). */
size_t mg_bert_count_chinese(const char *text, size_t len);
/* Writes the padded text to out (capacity >= len + 2 * count_chinese); returns its length. */
size_t mg_bert_pad_chinese(const char *text, size_t len, char *out);

/* Appends the pieces of text[0, len) (offsets + base) to *out. */
mg_status mg_bert_pretokenize(const char *text, size_t len, uint32_t base, mg_spans *out);

#endif

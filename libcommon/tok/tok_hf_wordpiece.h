/* tok_hf_wordpiece.h — WordPiece tokenizers (BERT-style): HuggingFaceTokenizer over a
 * tokenizer.json whose model is WordPiece, and the engine behind Megatron's
 * BertWordPieceLowerCase / BertWordPieceCase (tok_bert.c). Private to libcommon/tok.
 *
 * Contract (HF tokenizers 0.23 Tokenizer::encode / decode as transformers 5 runs them):
 *   - ids = post-processor prefix + pipeline + suffix (--tokenizer-hf-no-include-special-
 *     tokens drops prefix and suffix): added tokens with normalized:false are matched in
 *     the raw text; each gap is normalized (d->norm: BertNormalizer, NFD, Lowercase, ...),
 *     searched for normalized:true added tokens; each remaining gap is pre-tokenized
 *     (BertPreTokenizer, Whitespace, WhitespaceSplit, Digits, Split, Punctuation(Isolated),
 *     chained as HF's Sequence) and each word encoded by the WordPiece model (wordpiece.h).
 *   - Added tokens get ids as tokenizers' AddedVocabulary does (a content in the vocabulary
 *     keeps its id, a new one gets the next id after the vocabulary / largest added id);
 *     vocab_size = len(tokenizer) = distinct vocabulary strings + new added tokens; eod =
 *     id of eos_token, else sep_token (Megatron's eos := sep rule).
 *   - transformers 5's BertTokenizer(Fast) class and its subclasses DistilBert, ConvBert,
 *     MobileBert, SqueezeBert (tokenizer_config.json tokenizer_class) rebuild the pipeline from the vocabulary and tokenizer_config.json: BertNormalizer(
 *     clean_text, tokenize_chinese_chars (default true), strip_accents (default null =
 *     follows lowercase), do_lower_case (default true)), BertPreTokenizer, WordPiece("##",
 *     100, unk_token), post-processor [CLS] $A [SEP], decoder WordPiece("##", cleanup);
 *     mg_hf_wordpiece_create() does the same.
 *   - decode: ids -> token strings (added tokens first), the file's decoder (decode_util.h;
 *     WordPiece joins with ' ', strips "##", applies its cleanup), then transformers'
 *     clean_up_tokenization when tokenizer_config.json's clean_up_tokenization_spaces is
 *     true (default false in transformers 5). Special tokens are kept.
 *   - Refused at load time: a WordPiece model with ByteLevel or Metaspace pre-tokenizers,
 *     Punctuation with a behavior other than Isolated, BertNormalizer/BertPreTokenizer
 *     without utf8proc (MG_ERR_UNSUPPORTED "... not built with utf8proc").
 */
#ifndef MG_TOK_HF_WORDPIECE_H
#define MG_TOK_HF_WORDPIECE_H

#include "tok/hf_json.h"

/* HuggingFaceTokenizer --tokenizer-model DIR whose tokenizer.json (parsed into d, with its
 * tokenizer_config.json) has a WordPiece model. May rewrite d (class rebuild). */
mg_status mg_hf_wordpiece_create(mg_tokenizer *tk, mg_hf_desc *d, const mg_tok_opts *o);

/* Builds the tokenizer from a WordPiece description; `kind` names it in the description
 * line. The tokenizer keeps no pointer into d. */
mg_status mg_hf_wordpiece_build(mg_tokenizer *tk, const mg_hf_desc *d, const char *kind,
                                const mg_tok_opts *o);

/* Id of s in the description's vocabulary (the later of duplicates), or -1. */
int64_t mg_hf_desc_vocab_id(const mg_hf_desc *d, const char *s);
/* Sets d->decoder to WordPiece("##", cleanup true), a JSON tree d owns (BertTokenizer). */
mg_status mg_hf_wordpiece_decoder(mg_hf_desc *d);

#endif

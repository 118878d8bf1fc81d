/* tok_hf_unigram.h — Megatron's HuggingFaceTokenizer over a Unigram tokenizer.json
 * (T5 / SentencePiece-converted files), private to libcommon/tok.
 *
 * Contract:
 *   - mg_hf_unigram_build() builds the tokenizer from a description whose model is Unigram
 *     (d->unigram set by hf_json.c; the model object is parsed here: vocab [[piece, score],
 *     ...], unk_id (null or an index), byte_fallback). Same facade semantics as mg_hf_build
 *     (tok_hf.c): added tokens, eod, vocab_size = len(tokenizer), post-processor ids.
 *   - The pipeline is HF tokenizers': raw added tokens; Precompiled (d->precompiled, the
 *     first normalizer step) then the other normalizer steps (d->norm); normalized added
 *     tokens; Split stages (incl. WhitespaceSplit); a final Metaspace; the Unigram
 *     Viterbi (mg_unigram_viterbi, f64 scores) on each piece, consecutive unk pieces fused
 *     and mapped to ids as Unigram::tokenize does (vocabulary, else <0xXX> byte pieces with
 *     byte_fallback, else unk_id).
 *   - transformers 5 T5Tokenizer(Fast) (tokenizer_config.json tokenizer_class) rebuilds the
 *     pipeline: Precompiled only as normalizer, WhitespaceSplit + Metaspace(always, split),
 *     unk id 2, no byte_fallback; the same is done here.
 *   - Decoding: ids -> pieces (added tokens first), then the file's decoder (Metaspace,
 *     Replace with a String pattern, ByteFallback, Fuse, Strip, or a Sequence of those;
 *     none = pieces joined by " "). Another decoder loads, and decoding answers
 *     MG_ERR_UNSUPPORTED "not supported yet: decoder X in FILE".
 *   - Refused at load time (MG_ERR_UNSUPPORTED "not supported yet: ... in FILE"): a
 *     ByteLevel pre-tokenizer with a Unigram model; Precompiled without utf8proc.
 */
#ifndef MG_TOK_HF_UNIGRAM_H
#define MG_TOK_HF_UNIGRAM_H

#include "tok/hf_json.h"

mg_status mg_hf_unigram_build(mg_tokenizer *tk, const mg_hf_desc *d, const mg_tok_opts *o);

#endif

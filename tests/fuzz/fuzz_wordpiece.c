/* fuzz_wordpiece.c — libFuzzer target: WordPiece tokenizers on arbitrary input.
 *
 * The first byte picks the tokenizer (BertWordPieceLowerCase-style or cased, with or
 * without the post-processor's tokens) and a max_input_chars_per_word; the rest is the
 * text (valid UTF-8 or not: mg_encode must refuse invalid text cleanly). The ids are then
 * decoded, and so is the input read as a list of 16-bit ids. Any outcome is fine except
 * a crash, a sanitizer report or a leak.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tok/hf_json.h"
#include "tok/normalize.h"
#include "tok/tok_hf_wordpiece.h"
#include "tok/tok_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const vocab[] = {
    "[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "a",  "##a", "ab", "##b", "the", "##s",
    "\xe4\xbd\xa0", "\xe5\xa5\xbd", "!", ",", "##\xc3\xa9", "e", "##", "#", "x", "##x"};

static mg_status build(mg_tokenizer *tk, int lower, int special, int64_t max_chars)
{
    mg_hf_desc d;
    mg_hf_desc_init(&d);
    size_t n = sizeof vocab / sizeof vocab[0];
    d.vocab = mg_calloc(n, sizeof *d.vocab);
    d.vocab_id = mg_calloc(n, sizeof *d.vocab_id);
    mg_status st = d.vocab && d.vocab_id ? MG_OK : MG_ERR_NOMEM;
    for (size_t i = 0; st == MG_OK && i < n; i++) {
        d.vocab[i] = (mg_hf_str){vocab[i], strlen(vocab[i])};
        d.vocab_id[i] = (int64_t)i;
    }
    d.n_vocab = n;
    d.wordpiece = 1;
    d.wp_prefix = "##";
    d.wp_max_chars = max_chars;
    d.unk_token = "[UNK]";
    d.sep_token = "[SEP]";
    d.prefix[0] = 2;
    d.suffix[0] = 3;
    d.n_prefix = d.n_suffix = 1;
    d.pre[0] = (mg_hf_pre_stage){.kind = MG_HF_PRE_BERT};
    d.n_pre = 1;
    unsigned flags = MG_NORM_BERT_CLEAN | MG_NORM_BERT_CHINESE;
    if (lower) flags |= MG_NORM_BERT_STRIP_ACCENTS | MG_NORM_BERT_LOWERCASE;
    if (st == MG_OK) st = mg_normalizer_add_bert(&d.norm, flags);
    mg_tok_opts o;
    mg_tok_opts_init(&o);
    o.hf_no_include_special = !special;
    if (st == MG_OK) st = mg_hf_wordpiece_build(tk, &d, "fuzz", &o);
    mg_hf_desc_free(&d);
    return st;
}

static void decode_bytes(const mg_tokenizer *tk, const uint8_t *data, size_t size)
{
    int64_t ids[64];
    size_t n = 0;
    for (size_t i = 0; i + 1 < size && n < 64; i += 2)
        ids[n++] = (int64_t)(data[i] | data[i + 1] << 8) % 32;
    mg_text out = {0};
    (void)mg_tokenizer_decode(tk, ids, n, &out);
    mg_text_free(&out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size == 0) return 0;
    mg_tokenizer *tk = mg_calloc(1, sizeof *tk);
    if (!tk) return 0;
    if (build(tk, data[0] & 1, (data[0] >> 1) & 1, (data[0] >> 2) % 8) != MG_OK) {
        mg_tokenizer_free(tk);
        return 0;
    }
    mg_encoder *e = NULL;
    mg_ids ids = {0};
    if (mg_encoder_create(&e, tk) == MG_OK &&
        mg_encode(e, (const char *)data + 1, size - 1, &ids) == MG_OK) {
        mg_text out = {0};
        (void)mg_tokenizer_decode(tk, ids.v, ids.n, &out);
        mg_text_free(&out);
    }
    decode_bytes(tk, data + 1, size - 1);
    mg_ids_free(&ids);
    mg_encoder_free(e);
    mg_tokenizer_free(tk);
    return 0;
}

/* fuzz_tokenizer_json.c — libFuzzer target: arbitrary bytes as a tokenizer.json.
 *
 * The input goes through the loader (mg_hf_desc_parse); when it is accepted, the tokenizer
 * is built (mg_hf_build_model: Unigram, WordPiece or BPE) and encodes a fixed sample with
 * and without the post-processor's tokens (the description is parsed anew for each, since
 * building may rewrite it). Any outcome is fine except a crash, a sanitizer report or a leak.
 * Seeds: tests/fuzz/corpus/tokenizer_json/ (small valid byte-level BPE files).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "tok/hf_json.h"
#include "tok/tok_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char sample[] = "Hello world! <s> 12345 \xc3\xa9t\xc3\xa9 e\xcc\x81  \n\n x</s>";

static void encode_sample(const mg_tokenizer *tk)
{
    mg_encoder *e = NULL;
    mg_ids ids = {0};
    if (mg_encoder_create(&e, tk) == MG_OK) (void)mg_encode(e, sample, sizeof sample - 1, &ids);
    mg_ids_free(&ids);
    mg_encoder_free(e);
}

static void build_and_encode(const uint8_t *data, size_t size, int no_special)
{
    mg_hf_desc d;
    mg_hf_desc_init(&d);
    if (mg_hf_desc_parse(&d, (const char *)data, size, "fuzz.json") == MG_OK) {
        mg_tok_opts o;
        mg_tok_opts_init(&o);
        o.hf_no_include_special = no_special;
        mg_tokenizer *tk = mg_calloc(1, sizeof *tk);
        if (tk && mg_hf_build_model(tk, &d, &o) == MG_OK) encode_sample(tk);
        mg_tokenizer_free(tk);
    }
    mg_hf_desc_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    build_and_encode(data, size, 0);
    build_and_encode(data, size, 1);
    return 0;
}

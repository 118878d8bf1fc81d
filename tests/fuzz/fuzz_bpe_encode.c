/* fuzz_bpe_encode.c — libFuzzer target: arbitrary text through a byte-level BPE encoder.
 *
 * The tokenizer is tests/fuzz/corpus/tokenizer_json/gpt2_like.json (the fuzzer runs from
 * the repository root), once as it is (the GPT-2 split) and once with Llama-3's split regex
 * (the cl100k scanner); byte 0 of the input picks one, the rest is the text, encoded from an
 * exactly sized copy so that AddressSanitizer sees any read past its ends: the scanners'
 * 64-byte windows and the word-cache keys' 8-byte loads (libcommon/tok/bpe_merge.c) read
 * near them. Any outcome is fine except a crash or a sanitizer report; the text is also
 * encoded twice, the second time from the filled caches, and both id lists must agree.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/file.h"
#include "tok/hf_json.h"
#include "tok/tok_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char seed[] = "tests/fuzz/corpus/tokenizer_json/gpt2_like.json";
static const char gpt2_pre[] =
    "\"pre_tokenizer\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, "
    "\"trim_offsets\": true, \"use_regex\": true}";
static const char llama3_pre[] =
    "\"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", "
    "\"pattern\": {\"Regex\": \"(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\\\r\\\\n\\\\p{L}\\\\p{N}]?"
    "\\\\p{L}+|\\\\p{N}{1,3}| ?[^\\\\s\\\\p{L}\\\\p{N}]+[\\\\r\\\\n]*|\\\\s*[\\\\r\\\\n]+|"
    "\\\\s+(?!\\\\S)|\\\\s+\"}, \"behavior\": \"Isolated\", \"invert\": false}, {\"type\": "
    "\"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": true, \"use_regex\": "
    "false}]}";

static mg_tokenizer *build(const char *json, size_t len)
{
    mg_hf_desc d;
    mg_hf_desc_init(&d);
    mg_tokenizer *tk = NULL;
    if (mg_hf_desc_parse(&d, json, len, seed) == MG_OK) {
        mg_tok_opts o;
        mg_tok_opts_init(&o);
        tk = mg_calloc(1, sizeof *tk);
        if (tk && mg_hf_build_model(tk, &d, &o) != MG_OK) {
            mg_tokenizer_free(tk);
            tk = NULL;
        }
    }
    mg_hf_desc_free(&d);
    return tk;
}

/* The seed as it is and with Llama-3's split; aborts if either cannot be built. */
static void load(mg_encoder *enc[2])
{
    mg_map m;
    if (mg_map_open(&m, seed) != MG_OK) {
        fprintf(stderr, "fuzz_bpe_encode: cannot read %s (run from the repository root)\n",
                seed);
        abort();
    }
    const char *text = (const char *)m.data, *at = strstr(text, gpt2_pre);
    if (!at) abort();
    size_t head = (size_t)(at - text), tail = m.size - head - strlen(gpt2_pre);
    char *llama = malloc(head + strlen(llama3_pre) + tail);
    if (!llama) abort();
    memcpy(llama, text, head);
    memcpy(llama + head, llama3_pre, strlen(llama3_pre));
    memcpy(llama + head + strlen(llama3_pre), at + strlen(gpt2_pre), tail);
    mg_tokenizer *tk[2] = {build(text, m.size), build(llama, head + strlen(llama3_pre) + tail)};
    for (int i = 0; i < 2; i++)
        if (!tk[i] || mg_encoder_create(&enc[i], tk[i]) != MG_OK) abort();
    free(llama);
    mg_map_close(&m); /* the tokenizers stay alive with their encoders until exit */
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static mg_encoder *enc[2];
    if (!enc[0]) load(enc);
    if (size < 1) return 0;
    mg_encoder *e = enc[data[0] & 1];
    char *text = malloc(size - 1 ? size - 1 : 1);
    if (!text) return 0;
    memcpy(text, data + 1, size - 1);
    mg_ids a = {0}, b = {0};
    mg_status sa = mg_encode(e, text, size - 1, &a), sb = mg_encode(e, text, size - 1, &b);
    int same = sa == sb && (sa != MG_OK || a.n == b.n);
    if (same && sa == MG_OK && a.n) same = memcmp(a.v, b.v, a.n * sizeof *a.v) == 0;
    if (!same) abort();
    mg_ids_free(&a);
    mg_ids_free(&b);
    free(text);
    return 0;
}

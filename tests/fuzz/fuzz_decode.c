/* fuzz_decode.c — libFuzzer target for the decode helpers (libcommon/tok/decode_util.c).
 *
 * The input is split at NUL bytes into tokens. Checked: the UTF-8 repairs always give
 * valid UTF-8 and keep valid input unchanged; the HF decoders (byte-level, and the
 * SentencePiece-style Replace/ByteFallback/Fuse/Strip sequence, Metaspace, WordPiece)
 * never crash, and those whose steps always produce valid UTF-8 from valid tokens do so.
 */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "tok/decode_util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const decoders[] = {
    "{\"type\":\"ByteLevel\"}",
    "{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Replace\",\"pattern\":{\"String\":"
    "\"\\u2581\"},\"content\":\" \"},{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"},"
    "{\"type\":\"Strip\",\"content\":\" \",\"start\":1,\"stop\":2}]}",
    "{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\",\"prepend_scheme\":\"first\"}",
    "{\"type\":\"WordPiece\",\"prefix\":\"##\",\"cleanup\":true}",
    "{\"type\":\"BPEDecoder\",\"suffix\":\"</w>\"}",
    "null",
};

static void check_repairs(const uint8_t *data, size_t size)
{
    for (int per_byte = 0; per_byte < 2; per_byte++) {
        mg_text t = {0};
        mg_status st = per_byte ? mg_decode_utf8_per_byte(&t, data, size)
                                : mg_decode_utf8_lossy(&t, data, size);
        if (st != MG_OK) abort();
        if (!mg_decode_utf8_valid((const uint8_t *)t.p, t.n)) abort();
        if (mg_decode_utf8_valid(data, size) && (t.n != size || (size && memcmp(t.p, data, size))))
            abort();
        mg_text_free(&t);
    }
}

static void run_decoders(const uint8_t *data, size_t size)
{
    int valid = mg_decode_utf8_valid(data, size);
    for (size_t k = 0; k < sizeof decoders / sizeof decoders[0]; k++) {
        json_t *j = json_loads(decoders[k], JSON_DECODE_ANY, NULL);
        mg_hf_decoder *dec;
        if (mg_hf_decoder_create(&dec, j, "fuzz.json") != MG_OK) abort();
        json_decref(j);
        mg_tok_strs l = {0};
        size_t start = 0;
        for (size_t i = 0; i <= size; i++) {
            if (i < size && data[i] != 0) continue;
            if (mg_tok_strs_push(&l, (const char *)data + start, i - start) != MG_OK) abort();
            start = i + 1;
        }
        mg_text out = {0};
        if (mg_hf_decoder_run(dec, &l, &out) != MG_OK) abort();
        /* ByteLevel repairs; the others keep valid tokens valid (ByteFallback too) */
        if ((k == 0 || valid) && !mg_decode_utf8_valid((const uint8_t *)out.p, out.n)) abort();
        mg_text_free(&out);
        mg_tok_strs_free(&l);
        mg_hf_decoder_free(dec);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096) return 0;
    check_repairs(data, size);
    run_decoders(data, size);
    return 0;
}

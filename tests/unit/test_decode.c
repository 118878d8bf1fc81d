/* test_decode.c — unit tests of mg_tokenizer_decode and libcommon/tok/decode_util.c: UTF-8
 * repair as Python / sentencepiece do it, the HF decoder steps, and round trips through the
 * GPT-2, NullTokenizer and SentencePiece tokenizers. (The comparison with the reference
 * libraries on large corpora is tests/interop/test_decode.py.) */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "mg/tokenizer.h"
#include "tok/decode_util.h"

/* Repairs s[0, n) with lossy (per_byte 0) or per-byte replacement; returns a static copy. */
static const char *repaired(const char *s, size_t n, int per_byte)
{
    static char buf[256];
    mg_text t = {0};
    mg_status st = per_byte ? mg_decode_utf8_per_byte(&t, (const uint8_t *)s, n)
                            : mg_decode_utf8_lossy(&t, (const uint8_t *)s, n);
    snprintf(buf, sizeof buf, "%s", st == MG_OK && t.n ? t.p : "");
    mg_text_free(&t);
    return buf;
}

#define R "\xEF\xBF\xBD"

MG_TEST(decode_utf8_lossy_maximal_subparts)
{
    MG_CHECK_EQ_STR(t, repaired("a\xE3\x81" "b", 4, 0), "a" R "b");
    MG_CHECK_EQ_STR(t, repaired("\xED\xA0\x80", 3, 0), R R R);    /* surrogate */
    MG_CHECK_EQ_STR(t, repaired("\xF0\x9F\x98", 3, 0), R);        /* cut 4-byte form */
    MG_CHECK_EQ_STR(t, repaired("\xC0\x80", 2, 0), R R);          /* overlong */
    MG_CHECK_EQ_STR(t, repaired("\xF4\x90\x80\x80", 4, 0), R R R R); /* above U+10FFFF */
    MG_CHECK_EQ_STR(t, repaired("x\xFF\xE6\x97\xA5", 5, 0), "x" R "\xE6\x97\xA5");
    MG_CHECK_EQ_STR(t, repaired("\x80\x80", 2, 0), R R);
    MG_CHECK(t, mg_decode_utf8_valid((const uint8_t *)"\xE6\x97\xA5", 3));
    MG_CHECK(t, !mg_decode_utf8_valid((const uint8_t *)"\xE6\x97", 2));
}

MG_TEST(decode_utf8_per_byte_like_sentencepiece)
{
    MG_CHECK_EQ_STR(t, repaired("a\xE3\x81" "b", 4, 1), "a" R R "b");
    MG_CHECK_EQ_STR(t, repaired("\xF0\x9F\x98", 3, 1), R R R);
    MG_CHECK_EQ_STR(t, repaired("\xEF\xBF\xBD", 3, 1), R); /* U+FFFD itself is valid */
}

/* Runs the decoder described by json over the tokens (NULL-terminated). */
static mg_status run_json(const char *json, const char *const *toks, mg_text *out)
{
    json_t *j = json_loads(json, 0, NULL);
    mg_hf_decoder *dec;
    mg_status st = mg_hf_decoder_create(&dec, j, "test.json");
    json_decref(j);
    if (st != MG_OK) return st;
    mg_tok_strs l = {0};
    for (size_t i = 0; toks[i] && st == MG_OK; i++)
        st = mg_tok_strs_push(&l, toks[i], strlen(toks[i]));
    out->n = 0;
    if (st == MG_OK) st = mg_hf_decoder_run(dec, &l, out);
    mg_tok_strs_free(&l);
    mg_hf_decoder_free(dec);
    return st;
}

static const char llama2[] =
    "{\"type\":\"Sequence\",\"decoders\":[{\"type\":\"Replace\",\"pattern\":{\"String\":"
    "\"\\u2581\"},\"content\":\" \"},{\"type\":\"ByteFallback\"},{\"type\":\"Fuse\"},"
    "{\"type\":\"Strip\",\"content\":\" \",\"start\":1,\"stop\":0}]}";

MG_TEST(decode_hf_sentencepiece_style_sequence)
{
    mg_text out = {0};
    const char *a[] = {"\xE2\x96\x81Hi", "<0xE6>", "<0x97>", "<0xA5>", "\xE2\x96\x81x", NULL};
    MG_CHECK_OK(t, run_json(llama2, a, &out));
    MG_CHECK_EQ_STR(t, out.p, "Hi\xE6\x97\xA5 x");
    /* A byte run that is not valid UTF-8 becomes one U+FFFD per byte, as a whole run. */
    const char *b[] = {"<0x41>", "<0xE6>", "<0x97>", "\xE2\x96\x81", NULL};
    MG_CHECK_OK(t, run_json(llama2, b, &out));
    MG_CHECK_EQ_STR(t, out.p, R R R " ");
    mg_text_free(&out);
}

MG_TEST(decode_hf_other_steps)
{
    mg_text out = {0};
    const char *m[] = {"\xE2\x96\x81" "a\xE2\x96\x81" "b", "\xE2\x96\x81" "c", NULL};
    MG_CHECK_OK(t, run_json("{\"type\":\"Metaspace\",\"replacement\":\"\\u2581\","
                            "\"prepend_scheme\":\"always\"}", m, &out));
    MG_CHECK_EQ_STR(t, out.p, "ab c");
    MG_CHECK_OK(t, run_json("{\"type\":\"Metaspace\",\"prepend_scheme\":\"never\"}", m, &out));
    MG_CHECK_EQ_STR(t, out.p, " a b c");
    const char *w[] = {"do", "##n", "'", "t", "go", ".", NULL};
    MG_CHECK_OK(t, run_json("{\"type\":\"WordPiece\",\"prefix\":\"##\",\"cleanup\":true}", w,
                            &out));
    MG_CHECK_EQ_STR(t, out.p, "don ' t go.");
    const char *bl[] = {"\xC4\xA0" "caf\xC3\xA9", "\xC3\xA6", "\xC2\x97", "x y", NULL};
    MG_CHECK_OK(t, run_json("{\"type\":\"ByteLevel\"}", bl, &out));
    /* é and æ are map characters (bytes E9, E6: invalid here); U+0097 and ' ' are not, so
     * those tokens keep their own UTF-8 bytes. */
    MG_CHECK_EQ_STR(t, out.p, " caf" R R "\xC2\x97" "x y");
    MG_CHECK_OK(t, run_json("null", w, &out));
    MG_CHECK_EQ_STR(t, out.p, "do ##n ' t go .");
    const char *s[] = {"  ab  ", NULL};
    MG_CHECK_OK(t, run_json("{\"type\":\"Strip\",\"content\":\" \",\"start\":1,\"stop\":5}", s,
                            &out));
    MG_CHECK_EQ_STR(t, out.p, " ab");
    MG_CHECK_ERR(t, run_json("{\"type\":\"CTC\"}", s, &out), MG_ERR_UNSUPPORTED,
                 "not supported yet: decoder CTC in test.json");
    MG_CHECK_ERR(t, run_json("{\"type\":\"Replace\",\"pattern\":{\"Regex\":\"a\"},\"content\":"
                             "\"b\"}", s, &out), MG_ERR_UNSUPPORTED, "Regex");
    mg_text_free(&out);
}

static mg_status decode_ids(const mg_tokenizer *tk, const int64_t *ids, size_t n, mg_text *out)
{
    out->n = 0;
    mg_status st = mg_tokenizer_decode(tk, ids, n, out);
    if (st == MG_OK && out->n == 0) st = mg_text_append(out, "", 0);
    return st;
}

MG_TEST(decode_gpt2_round_trip_and_split_characters)
{
    char vocab[512], merges[512];
    snprintf(vocab, sizeof vocab, "%s/gpt2/gpt2-vocab.json", mg_test_vocab_dir());
    snprintf(merges, sizeof merges, "%s/gpt2/gpt2-merges.txt", mg_test_vocab_dir());
    mg_tok_opts o;
    mg_tok_opts_init(&o);
    o.type = "GPT2BPETokenizer";
    o.vocab_file = vocab;
    o.merge_file = merges;
    mg_tokenizer *tk = NULL;
    mg_encoder *e = NULL;
    MG_CHECK_OK(t, mg_tokenizer_create(&tk, &o));
    if (!tk) return;
    MG_CHECK_OK(t, mg_encoder_create(&e, tk));
    static const char text[] = "Hello, world! \xE6\x97\xA5\xE6\x9C\xAC<|endoftext|> end";
    mg_ids ids = {0};
    mg_text out = {0};
    MG_CHECK_OK(t, mg_encode(e, text, strlen(text), &ids));
    MG_CHECK_OK(t, decode_ids(tk, ids.v, ids.n, &out));
    MG_CHECK_EQ_STR(t, out.p, text);
    ids.n = 0; /* 日 is two byte-level tokens: the first alone is a cut character */
    MG_CHECK_OK(t, mg_encode(e, "\xE6\x97\xA5", 3, &ids));
    MG_CHECK_EQ_INT(t, ids.n, 2);
    MG_CHECK_OK(t, decode_ids(tk, ids.v, 1, &out));
    MG_CHECK_EQ_STR(t, out.p, R);
    int64_t rev[] = {ids.v[1], ids.v[0]};
    MG_CHECK_OK(t, decode_ids(tk, rev, 2, &out));
    MG_CHECK(t, out.n >= 6 && memcmp(out.p, R, 3) == 0);
    int64_t bad[] = {15496, 50257};
    MG_CHECK_ERR(t, decode_ids(tk, bad, 2, &out), MG_ERR_ARG, "position 1");
    mg_ids_free(&ids);
    mg_text_free(&out);
    mg_encoder_free(e);
    mg_tokenizer_free(tk);
}

MG_TEST(decode_null_tokenizer)
{
    mg_tok_opts o;
    mg_tok_opts_init(&o);
    o.type = "NullTokenizer";
    o.vocab_size = 100;
    mg_tokenizer *tk = NULL;
    MG_CHECK_OK(t, mg_tokenizer_create(&tk, &o));
    if (!tk) return;
    int64_t ids[] = {7, 0, 99};
    mg_text out = {0};
    MG_CHECK_OK(t, decode_ids(tk, ids, 3, &out));
    MG_CHECK_EQ_STR(t, out.p, "7 0 99");
    MG_CHECK_OK(t, decode_ids(tk, ids, 0, &out));
    MG_CHECK_EQ_STR(t, out.p, "");
    mg_text_free(&out);
    mg_tokenizer_free(tk);
}

MG_TEST(decode_sentencepiece_model)
{
    char model[512];
    snprintf(model, sizeof model, "%s/sentencepiece/test_model.model", mg_test_vocab_dir());
    mg_tok_opts o;
    mg_tok_opts_init(&o);
    o.type = "SentencePieceTokenizer";
    o.model = model;
    mg_tokenizer *tk = NULL;
    mg_encoder *e = NULL;
    MG_CHECK_OK(t, mg_tokenizer_create(&tk, &o));
    if (!tk) return;
    MG_CHECK_OK(t, mg_encoder_create(&e, tk));
    static const char text[] = "I saw a girl with a telescope.";
    mg_ids ids = {0};
    mg_text out = {0};
    MG_CHECK_OK(t, mg_encode(e, text, strlen(text), &ids));
    MG_CHECK_OK(t, decode_ids(tk, ids.v, ids.n, &out));
    MG_CHECK_EQ_STR(t, out.p, text);
    int64_t special[] = {0, 1, 2}; /* <unk> <s> </s>: unk surface, controls invisible */
    MG_CHECK_OK(t, decode_ids(tk, special, 3, &out));
    MG_CHECK_EQ_STR(t, out.p, " \xE2\x81\x87 ");
    mg_ids_free(&ids);
    mg_text_free(&out);
    mg_encoder_free(e);
    mg_tokenizer_free(tk);
}

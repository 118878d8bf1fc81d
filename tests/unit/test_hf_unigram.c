/* test_hf_unigram.c — Unigram tokenizer.json (tok_hf_unigram.c) on small hand-written
 * files whose best paths are worked out by hand: Viterbi choice, Metaspace split, fused
 * unknown characters (unk id, byte fallback, no unk id), added tokens, post-processor,
 * decoders (Metaspace, the Llama-style Replace + ByteFallback + Fuse + Strip sequence,
 * none), and the load-time refusals. The comparison with HF tokenizers and transformers
 * on real models is tests/interop/test_hf_unigram.py.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "mg/tokenizer.h"

#define SP "\xe2\x96\x81" /* U+2581 */

/* Vocabulary: 0 <unk>, 1 <s>, 2 </s>, 3 ▁, 4 a, 5 b, 6 ab, 7 ▁ab, 8 c, 9 <0x78>, 10 <0x79>,
 * 11 <0xFF>. min score -10 (the byte pieces): unk scores -20. */
static const char *const VOCAB =
    "[[\"<unk>\", 0.0], [\"<s>\", 0.0], [\"</s>\", 0.0], [\"" SP "\", -2.0], [\"a\", -3.0], "
    "[\"b\", -3.0], [\"ab\", -4.0], [\"" SP "ab\", -4.5], [\"c\", -3.0], [\"<0x78>\", -10.0], "
    "[\"<0x79>\", -10.0], [\"<0xFF>\", -10.0]]";

static const char *const META =
    "{\"type\": \"Metaspace\", \"replacement\": \"" SP "\", \"prepend_scheme\": \"always\", "
    "\"split\": true}";

static mg_status make(mg_test_ctx *t, const char *unk_id, int byte_fallback, const char *decoder,
                      const char *extra, mg_tokenizer **tk)
{
    char json[4096];
    snprintf(json, sizeof json,
             "{\"version\": \"1.0\", \"added_tokens\": [{\"id\": 1, \"content\": \"<s>\", "
             "\"special\": true, \"normalized\": false}], \"normalizer\": null, "
             "\"pre_tokenizer\": %s, \"post_processor\": null, \"decoder\": %s, %s"
             "\"model\": {\"type\": \"Unigram\", \"unk_id\": %s, \"vocab\": %s, "
             "\"byte_fallback\": %s}}",
             META, decoder, extra, unk_id, VOCAB, byte_fallback ? "true" : "false");
    mg_test_write_file(t, "tokenizer.json", json, strlen(json));
    mg_tok_opts o;
    mg_tok_opts_init(&o);
    o.type = "HuggingFaceTokenizer";
    o.model = mg_test_path(t, "");
    return mg_tokenizer_create(tk, &o);
}

/* Encodes text; returns the ids as "1 2 3" (or "error: ..."). */
static const char *enc(mg_tokenizer *tk, const char *text)
{
    static char buf[1024];
    mg_encoder *e = NULL;
    mg_ids ids = {0};
    mg_status st = mg_encoder_create(&e, tk);
    if (st == MG_OK) st = mg_encode(e, text, strlen(text), &ids);
    if (st != MG_OK) snprintf(buf, sizeof buf, "error: %s", mg_last_error());
    else buf[0] = 0;
    for (size_t i = 0, o = 0; st == MG_OK && i < ids.n && o < sizeof buf - 24; i++)
        o += (size_t)snprintf(buf + o, sizeof buf - o, "%s%lld", i ? " " : "", (long long)ids.v[i]);
    mg_ids_free(&ids);
    mg_encoder_free(e);
    return buf;
}

static const char *dec(mg_tokenizer *tk, const int64_t *ids, size_t n)
{
    static char buf[1024];
    mg_text out = {0};
    if (mg_tokenizer_decode(tk, ids, n, &out) != MG_OK)
        snprintf(buf, sizeof buf, "error: %s", mg_last_error());
    else
        snprintf(buf, sizeof buf, "%s", out.n ? out.p : "");
    mg_text_free(&out);
    return buf;
}

MG_TEST(hf_unigram_viterbi_and_metaspace)
{
    mg_tokenizer *tk = NULL;
    MG_CHECK_OK(t, make(t, "0", 0, META, "", &tk));
    if (!tk) return;
    MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 12);
    MG_CHECK_EQ_STR(t, enc(tk, "ab ab"), "7 7");      /* ▁ab (-4.5) beats ▁ + ab (-6) */
    MG_CHECK_EQ_STR(t, enc(tk, "abc"), "7 8");        /* ▁ab c */
    MG_CHECK_EQ_STR(t, enc(tk, "ba"), "3 5 4");       /* ▁ b a */
    MG_CHECK_EQ_STR(t, enc(tk, "a  b"), "3 4 3 3 5"); /* ▁a ▁ ▁b: split before each ▁ */
    MG_CHECK_EQ_STR(t, enc(tk, "xy a"), "3 0 3 4");   /* x y fused into one unk */
    MG_CHECK_EQ_STR(t, enc(tk, "a<s>b"), "3 4 1 3 5"); /* added token, then ▁ prepended */
    MG_CHECK_EQ_STR(t, enc(tk, ""), "");
    mg_tokenizer_free(tk);
}

MG_TEST(hf_unigram_byte_fallback_and_no_unk)
{
    mg_tokenizer *tk = NULL;
    MG_CHECK_OK(t, make(t, "0", 1, META, "", &tk));
    if (tk) {
        MG_CHECK_EQ_STR(t, enc(tk, "xy a"), "3 9 10 3 4"); /* all bytes have pieces */
        MG_CHECK_EQ_STR(t, enc(tk, "xz"), "3 0");          /* <0x7A> missing: unk */
        mg_tokenizer_free(tk);
    }
    tk = NULL;
    MG_CHECK_OK(t, make(t, "null", 0, META, "", &tk));
    if (tk) {
        MG_CHECK_EQ_STR(t, enc(tk, "ab"), "7");
        MG_CHECK(t, strstr(enc(tk, "az"), "without an unk id") != NULL);
        mg_tokenizer_free(tk);
    }
}

MG_TEST(hf_unigram_post_processor)
{
    mg_tokenizer *tk = NULL;
    const char *post = "\"post_processor\": {\"type\": \"TemplateProcessing\", \"single\": "
                       "[{\"Sequence\": {\"id\": \"A\", \"type_id\": 0}}, {\"SpecialToken\": "
                       "{\"id\": \"</s>\", \"type_id\": 0}}], \"special_tokens\": {\"</s>\": "
                       "{\"id\": \"</s>\", \"ids\": [2], \"tokens\": [\"</s>\"]}}}, ";
    /* a later duplicate "post_processor" key: jansson keeps the last one */
    MG_CHECK_OK(t, make(t, "0", 0, META, post, &tk));
    if (!tk) return;
    MG_CHECK_EQ_STR(t, enc(tk, "ab"), "7 2");
    mg_tokenizer_free(tk);
}

MG_TEST(hf_unigram_decoders)
{
    mg_tokenizer *tk = NULL;
    const int64_t ids[] = {3, 4, 0, 3, 7, 1};
    MG_CHECK_OK(t, make(t, "0", 0, META, "", &tk));
    if (tk) {
        /* Metaspace: every ▁ of the first token dropped, the others become spaces */
        MG_CHECK_EQ_STR(t, dec(tk, ids, 6), "a<unk>  ab<s>");
        const int64_t lead[] = {7, 3, 3};
        MG_CHECK_EQ_STR(t, dec(tk, lead, 3), "ab  ");
        mg_tokenizer_free(tk);
    }
    tk = NULL;
    const char *llama = "{\"type\": \"Sequence\", \"decoders\": [{\"type\": \"Replace\", "
                        "\"pattern\": {\"String\": \"" SP "\"}, \"content\": \" \"}, {\"type\": "
                        "\"ByteFallback\"}, {\"type\": \"Fuse\"}, {\"type\": \"Strip\", "
                        "\"content\": \" \", \"start\": 1, \"stop\": 0}]}";
    MG_CHECK_OK(t, make(t, "0", 1, llama, "", &tk));
    if (tk) {
        const int64_t bytes[] = {3, 9, 10, 3, 4, 11, 8};
        MG_CHECK_EQ_STR(t, dec(tk, bytes, 7), "xy a\xef\xbf\xbd" "c");
        mg_tokenizer_free(tk);
    }
    tk = NULL;
    MG_CHECK_OK(t, make(t, "0", 0, "null", "", &tk));
    if (tk) {
        MG_CHECK_EQ_STR(t, dec(tk, ids, 3), SP " a <unk>"); /* no decoder: joined by " " */
        mg_tokenizer_free(tk);
    }
    tk = NULL;
    MG_CHECK_OK(t, make(t, "0", 0, "{\"type\": \"CTC\"}", "", &tk)); /* encoding still works */
    if (tk) {
        MG_CHECK(t, strstr(dec(tk, ids, 2), "not supported yet: decoder CTC in") != NULL);
        mg_tokenizer_free(tk);
    }
}

MG_TEST(hf_unigram_refusals)
{
    mg_tokenizer *tk = NULL;
    const char *bl = "{\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"use_regex\": true}";
    char json[2048];
    snprintf(json, sizeof json, "{\"pre_tokenizer\": %s, \"model\": {\"type\": \"Unigram\", "
             "\"unk_id\": 0, \"vocab\": %s}}", bl, VOCAB);
    mg_test_write_file(t, "tokenizer.json", json, strlen(json));
    mg_tok_opts o;
    mg_tok_opts_init(&o);
    o.type = "HuggingFaceTokenizer";
    o.model = mg_test_path(t, "");
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_UNSUPPORTED,
                 "not supported yet: pre_tokenizer ByteLevel with a Unigram model in");
    snprintf(json, sizeof json, "{\"model\": {\"type\": \"Unigram\", \"unk_id\": 99, "
             "\"vocab\": %s}}", VOCAB);
    mg_test_write_file(t, "tokenizer.json", json, strlen(json));
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_FORMAT, "unk_id is not an index");
    snprintf(json, sizeof json, "{\"model\": {\"type\": \"Unigram\", \"vocab\": [[\"a\"]]}}");
    mg_test_write_file(t, "tokenizer.json", json, strlen(json));
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_FORMAT, "not [piece, score]");
    snprintf(json, sizeof json, "{\"normalizer\": {\"type\": \"Precompiled\", "
             "\"precompiled_charsmap\": \"AAAA\"}, \"model\": {\"type\": \"BPE\", \"vocab\": "
             "{\"a\": 0}, \"merges\": []}}");
    mg_test_write_file(t, "tokenizer.json", json, strlen(json));
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_UNSUPPORTED,
                 "not supported yet: normalizer Precompiled with a non-Unigram model in");
    MG_CHECK(t, tk == NULL);
}

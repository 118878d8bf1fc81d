/* test_hf_vocab_scan.c — the tokenizer.json vocab/merges scanner (hf_vocab_scan.c) against
 * jansson.
 *
 * Every case is differential (tests/fuzz/hf_scan_oracle.h): the text as it is, and with
 * its "model" key escaped so that jansson parses everything, must give the same status,
 * message, vocabulary and merges. The real vocabularies of tests/data (build/vocab) must
 * be taken by the scanner; the edge cases check that it declines what it must.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "mg/file.h"
#include "../fuzz/hf_scan_oracle.h"
#include "tok/hf_vocab_scan.h"

/* Compares both ways (tests/fuzz/hf_scan_oracle.h); returns whether the scanner took the
 * vocabulary or merges. */
static int differential(mg_test_ctx *t, const char *text, size_t len, int line)
{
    int scanned;
    const char *diff = hf_scan_oracle_check(text, len, &scanned);
    MG_CHECK(t, diff == NULL);
    if (diff) fprintf(stderr, "  case at line %d: %s\n", line, diff);
    return scanned;
}

#define DIFF(t, text) differential((t), (text), sizeof(text) - 1, __LINE__)

MG_TEST(hf_vocab_scan_real_vocabularies)
{
    static const char *const names[] = {"llama3", "qwen3", "deepseek_v3", "llama2", "gemma3"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/hf/%s/tokenizer.json", mg_test_vocab_dir(), names[i]);
        char *buf;
        size_t len;
        MG_CHECK_OK(t, mg_read_file(path, &buf, &len));
        if (!buf) continue;
        int scanned = differential(t, buf, len, __LINE__);
        MG_CHECK(t, scanned);
        if (!scanned) fprintf(stderr, "  %s: not taken by the scanner\n", names[i]);
        free(buf);
    }
}

#define HEAD "{\"added_tokens\": [],\n \"model\":\n {\"type\": \"BPE\", \"vocab\": "
#define BYTES "\"a\": 0, \"b\": 1, \"ab\": 2                            "

MG_TEST(hf_vocab_scan_taken)
{
    /* both merge forms, escapes, members in any order, pretty-printed */
    MG_CHECK(t, DIFF(t, HEAD "{" BYTES ", \"\\u00e9\\n\\\"\\\\\\/\\ud83d\\ude00\": 3},\n"
                         "  \"merges\": [\"a b\", [\"ab\", \"\\u00e9\\n\\\"\\\\/\\ud83d\\ude00\"]]},\n"
                         " \"pre_tokenizer\": {\"type\": \"ByteLevel\"}}"));
    MG_CHECK(t, DIFF(t, "{\"model\": {\"merges\": [\"a b\"],\n  \"vocab\": {\n" BYTES "\n  },\n"
                        "  \"type\": \"BPE\"}, \"pre_tokenizer\": null}"));
    MG_CHECK(t, DIFF(t, HEAD "{" BYTES "}}}")); /* no merges */
    MG_CHECK(t, DIFF(t, HEAD "{" BYTES "}, \"merges\": []}}"));
}

MG_TEST(hf_vocab_scan_declined)
{
    /* duplicate string (jansson keeps the last id), \u0000, escaped model key inside */
    MG_CHECK(t, !DIFF(t, HEAD "{" BYTES ", \"a\": 7}, \"merges\": [\"a b\"]}}"));
    MG_CHECK(t, !DIFF(t, HEAD "{" BYTES ", \"x\\u0000\": 7}}}"));
    MG_CHECK(t, !DIFF(t, HEAD "{" BYTES "}, \"vo\\u0063ab\": {\"q\": 1}}}"));
    MG_CHECK(t, !DIFF(t, HEAD "{" BYTES "}, \"vocab\": {\"q\": 1}}}"));
    MG_CHECK(t, !DIFF(t, HEAD "{" BYTES "}}, \"model\": {\"type\": \"BPE\", \"vocab\": {}}}"));
    MG_CHECK(t, !DIFF(t, HEAD "{\"a\": 0}}}")); /* too short for the marker */
    MG_CHECK(t, !DIFF(t, HEAD "[[\"a\", 0.0]]}}"));
    MG_CHECK(t, !DIFF(t, HEAD "{" BYTES "}, \"merges\": null}}"));
}

MG_TEST(hf_vocab_scan_errors_as_jansson)
{
    /* errors inside the values: the scanner declines, jansson reports */
    static const char *const bad[] = {
        HEAD "{" BYTES ", \"c\": 1.0}}}", HEAD "{" BYTES ", \"c\": -1}}}",
        HEAD "{" BYTES ", \"c\": 01}}}", HEAD "{" BYTES ", \"c\": 2147483648}}}",
        HEAD "{" BYTES ", \"\\ud800\": 3}}}", HEAD "{" BYTES ", \"\xc3\x28\": 3}}}",
        HEAD "{" BYTES ", \"\xed\xa0\x80\": 3}}}", HEAD "{" BYTES ", \"\t\": 3}}}",
        HEAD "{" BYTES "}, \"merges\": [\"a  b\"]}}", HEAD "{" BYTES "}, \"merges\": [\"ab\"]}}",
        HEAD "{" BYTES "}, \"merges\": [[\"a\"]]}}", HEAD "{" BYTES "}, \"merges\": [\"a b\",]}}",
        HEAD "{" BYTES ",}}}", HEAD "{" BYTES "}"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mg_hf_desc d;
        mg_hf_desc_init(&d);
        MG_CHECK(t, mg_hf_desc_parse(&d, bad[i], strlen(bad[i]), "t.json") == MG_ERR_FORMAT);
        MG_CHECK(t, !d.scanned_vocab && !d.scanned_merges);
        mg_hf_desc_free(&d);
    }
    /* errors after taken values: jansson's line:column as in the whole text */
    MG_CHECK(t, DIFF(t, HEAD "{\n" BYTES ",\n \"\xc3\xa9\": 5 },\n \"merges\": [\"a b\"]}, \"x\": tru}"));
    MG_CHECK(t, DIFF(t, HEAD "{" BYTES ", \"\xc3\xa9\": 5}, \"merges\": [\"a b\"]}, \"x\": [1,]}"));
    /* unbalanced after the values: declined, jansson reports */
    DIFF(t, HEAD "{" BYTES ", \"\xc3\xa9\": 5}, \"merges\": [\"a b\"]}, \"x\": [1,}");
    DIFF(t, HEAD "{" BYTES "}, \"merges\": [\"a b\"]}, \"x\": 1");
    MG_CHECK(t, DIFF(t, HEAD "{" BYTES "}, \"merges\": [\"x y\"]}}")); /* unknown tokens: the builder's error */
}

/* GPT-2 vocab.json: the scanner's entries against jansson's, in order. */
static void check_vocab_json(mg_test_ctx *t, const char *text, size_t len, int want_scanned)
{
    mg_hf_desc d;
    mg_hf_desc_init(&d);
    MG_CHECK_OK(t, mg_hf_scan_vocab_json(&d, text, len));
    MG_CHECK_EQ_INT(t, d.scanned_vocab, want_scanned);
    json_t *root = json_loadb(text, len, JSON_ALLOW_NUL, NULL);
    if (d.scanned_vocab) {
        MG_CHECK(t, json_is_object(root) && json_object_size(root) == d.n_vocab);
        size_t i = 0;
        const char *key;
        json_t *v;
        json_object_foreach(root, key, v) {
            int same = i < d.n_vocab && d.vocab[i].len == strlen(key) &&
                       memcmp(d.vocab[i].s, key, d.vocab[i].len) == 0 &&
                       d.vocab_id[i] == json_integer_value(v);
            MG_CHECK(t, same);
            if (!same) break;
            i++;
        }
    }
    json_decref(root);
    mg_hf_desc_free(&d);
}

MG_TEST(hf_vocab_scan_gpt2_vocab_json)
{
    char path[512], *buf;
    size_t len;
    snprintf(path, sizeof path, "%s/gpt2/gpt2-vocab.json", mg_test_vocab_dir());
    MG_CHECK_OK(t, mg_read_file(path, &buf, &len));
    if (buf) check_vocab_json(t, buf, len, 1);
    free(buf);
    static const char ok[] = " {\"a\": 0, \"\\u00e9\": 1}\n";
    check_vocab_json(t, ok, sizeof ok - 1, 1);
    static const char dup[] = "{\"a\": 0, \"a\": 1}", tail[] = "{\"a\": 0} x",
                      real[] = "{\"a\": 0.5}";
    check_vocab_json(t, dup, sizeof dup - 1, 0);
    check_vocab_json(t, tail, sizeof tail - 1, 0);
    check_vocab_json(t, real, sizeof real - 1, 0);
}

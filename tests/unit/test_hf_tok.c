/* test_hf_tok.c — unit tests for the Hugging Face byte-level BPE tokenizers
 * (HuggingFaceTokenizer, GPT2BPETokenizer) and their parts: the byte-level map, the
 * added-token matcher, the NFC normalizer and the tokenizer.json loader.
 *
 * Small tokenizer.json files are built here with jansson: the 256 byte tokens (id = byte
 * value) plus a few merges, so the expected ids can be worked out by hand. The real
 * vocabularies of ../shared/vocab are checked on a few anchors computed with transformers
 * 5.23 (AutoTokenizer / GPT2TokenizerFast); tests/interop/test_hf_tokenizers.py compares
 * them on large corpora.
 */
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "mg/tokenizer.h"
#include "tok/added_tokens.h"
#include "tok/byte_level.h"
#include "tok/hf_json.h"
#include "tok/normalize.h"

/* ---- byte-level map ---- */

MG_TEST(hf_byte_level_map)
{
    MG_CHECK_EQ_INT(t, mg_byte_level_char(0x00), 0x100);
    MG_CHECK_EQ_INT(t, mg_byte_level_char(0x0A), 0x10A);
    MG_CHECK_EQ_INT(t, mg_byte_level_char(0x20), 0x120);
    MG_CHECK_EQ_INT(t, mg_byte_level_char(0x21), 0x21);
    MG_CHECK_EQ_INT(t, mg_byte_level_char(0x7F), 0x121);
    MG_CHECK_EQ_INT(t, mg_byte_level_char(0xA0), 0x142);
    MG_CHECK_EQ_INT(t, mg_byte_level_char(0xAD), 0x143);
    MG_CHECK_EQ_INT(t, mg_byte_level_char(0xFF), 0xFF);
    uint8_t all[256], back[512];
    char enc[512];
    for (int i = 0; i < 256; i++) all[i] = (uint8_t)i;
    size_t n = mg_byte_level_encode(all, 256, enc), m = 0;
    MG_CHECK(t, mg_byte_level_decode(enc, n, back, &m));
    MG_CHECK_EQ_INT(t, m, 256);
    MG_CHECK(t, memcmp(all, back, 256) == 0);
    MG_CHECK(t, !mg_byte_level_decode("\xc5\x84", 2, back, &m));     /* U+0144 */
    MG_CHECK(t, !mg_byte_level_decode("\xe2\x96\x81", 3, back, &m)); /* U+2581 */
    MG_CHECK(t, !mg_byte_level_decode(" ", 1, back, &m));            /* space is not in it */
    MG_CHECK(t, mg_byte_level_decode("\xc4\xa0hi", 4, back, &m) && m == 3 && back[0] == ' ');
}

/* ---- added tokens ---- */

static int find(const mg_added_tokens *a, const char *s, size_t from, size_t *ms, size_t *me,
                int64_t *id)
{
    return mg_added_tokens_find(a, s, strlen(s), from, ms, me, id);
}

MG_TEST(hf_added_tokens_leftmost_longest)
{
    mg_added_token toks[] = {
        {.content = "ab", .len = 2, .id = 1},
        {.content = "abc", .len = 3, .id = 2},
        {.content = "bcd", .len = 3, .id = 3},
        {.content = "<|x|>", .len = 5, .id = 4},
    };
    mg_added_tokens *a;
    MG_CHECK_OK(t, mg_added_tokens_create(&a, toks, 4));
    size_t ms, me;
    int64_t id;
    MG_CHECK(t, find(a, "xabcd", 0, &ms, &me, &id));
    MG_CHECK(t, ms == 1 && me == 4 && id == 2); /* leftmost, then longest: abc, not bcd */
    MG_CHECK(t, !find(a, "xabcd", 4, &ms, &me, &id));
    MG_CHECK(t, find(a, "<|x|<|x|>", 0, &ms, &me, &id) && ms == 4 && me == 9 && id == 4);
    MG_CHECK(t, !find(a, "<|x|", 0, &ms, &me, &id));
    MG_CHECK(t, !find(a, "", 0, &ms, &me, &id));
    MG_CHECK_EQ_INT(t, mg_added_tokens_count(a), 4);
    mg_added_tokens_free(a);
    mg_added_tokens_free(NULL);
}

MG_TEST(hf_added_tokens_flags)
{
    mg_added_token toks[] = {
        {.content = "cat", .len = 3, .id = 7, .single_word = 1},
        {.content = "<m>", .len = 3, .id = 8, .lstrip = 1, .rstrip = 1},
    };
    mg_added_tokens *a;
    MG_CHECK_OK(t, mg_added_tokens_create(&a, toks, 2));
    size_t ms, me;
    int64_t id;
    /* single_word: "concat" and "cats" are rejected, " cat." accepted */
    MG_CHECK(t, find(a, "concat cats cat.", 0, &ms, &me, &id) && ms == 12 && me == 15);
    MG_CHECK(t, !find(a, "_cat", 0, &ms, &me, &id));
    MG_CHECK(t, find(a, "\xc3\xa9" "cat cat", 0, &ms, &me, &id) && ms == 6); /* é is a letter */
    /* lstrip / rstrip swallow whitespace (Unicode White_Space), lstrip not before `from` */
    MG_CHECK(t, find(a, "x \t<m>\n y", 0, &ms, &me, &id) && ms == 1 && me == 8 && id == 8);
    MG_CHECK(t, find(a, "x  <m>", 2, &ms, &me, &id) && ms == 2 && me == 6);
    MG_CHECK(t, find(a, "x\xe3\x80\x80<m>", 0, &ms, &me, &id) && ms == 1); /* U+3000 */
    mg_added_tokens_free(a);
}

/* ---- normalizer ---- */

MG_TEST(hf_normalizer_nfc)
{
    mg_normalizer nz = {.n = 0};
    mg_norm_buf buf = {0};
    const char *out;
    size_t n;
#if MG_HAVE_UTF8PROC
    MG_CHECK_OK(t, mg_normalizer_add(&nz, MG_NORM_NFC));
    const char *ascii = "plain text\n";
    MG_CHECK_OK(t, mg_normalize(&nz, &buf, ascii, strlen(ascii), &out, &n));
    MG_CHECK(t, out == ascii && n == strlen(ascii)); /* no copy */
    const char *dec = "e\xcc\x81t\xc3\xa9"; /* e + U+0301, t, é */
    MG_CHECK_OK(t, mg_normalize(&nz, &buf, dec, strlen(dec), &out, &n));
    MG_CHECK(t, n == 5 && memcmp(out, "\xc3\xa9t\xc3\xa9", 5) == 0);
    const char *nul = "a\0e\xcc\x81";
    MG_CHECK_OK(t, mg_normalize(&nz, &buf, nul, 5, &out, &n));
    MG_CHECK(t, n == 4 && memcmp(out, "a\0\xc3\xa9", 4) == 0);
#else
    MG_CHECK_ERR(t, mg_normalizer_add(&nz, MG_NORM_NFC), MG_ERR_UNSUPPORTED, "utf8proc");
#endif
    mg_norm_buf_free(&buf);
}

/* ---- hand-made tokenizer.json ---- */

/* Byte-level form of a raw string. */
static json_t *bl_string(const char *raw)
{
    char enc[256];
    size_t n = mg_byte_level_encode((const uint8_t *)raw, strlen(raw), enc);
    return json_stringn(enc, n);
}

static void add_vocab(json_t *vocab, const char *raw, int id)
{
    json_t *s = bl_string(raw);
    json_object_set_new(vocab, json_string_value(s), json_integer(id));
    json_decref(s);
}

/* Merges of the small model: h e, l l, he ll, hell o, " " w, a b, b c. */
static const char *const merges[][2] = {{"h", "e"},   {"l", "l"},    {"he", "ll"}, {"hell", "o"},
                                         {" ", "w"},   {"a", "b"},    {"b", "c"}};

static json_t *merge_entry(int i, int pair_form)
{
    json_t *l = bl_string(merges[i][0]), *r = bl_string(merges[i][1]);
    json_t *m;
    if (pair_form) {
        m = json_pack("[OO]", l, r);
    } else {
        char buf[64];
        snprintf(buf, sizeof buf, "%s %s", json_string_value(l), json_string_value(r));
        m = json_string(buf);
    }
    json_decref(l);
    json_decref(r);
    return m;
}

/* A tokenizer.json: 256 byte tokens (id = byte), he=256 ll=257 hell=258 hello=259
 * " w"=260 ab=261 bc=262 abc=263 (reachable only whole: no merge makes it). */
static json_t *small_model(int pair_form)
{
    json_t *vocab = json_object();
    for (int b = 0; b < 256; b++) {
        uint8_t byte = (uint8_t)b;
        char enc[4];
        enc[mg_byte_level_encode(&byte, 1, enc)] = 0; /* never NUL: 0x00 maps to U+0100 */
        json_object_set_new(vocab, enc, json_integer(b));
    }
    const char *extra[] = {"he", "ll", "hell", "hello", " w", "ab", "bc", "abc"};
    for (int i = 0; i < 8; i++) add_vocab(vocab, extra[i], 256 + i);
    json_t *m = json_array();
    for (int i = 0; i < 7; i++) json_array_append_new(m, merge_entry(i, pair_form));
    json_t *model = json_pack("{s:s, s:o, s:o, s:b, s:n}", "type", "BPE", "vocab", vocab,
                              "merges", m, "ignore_merges", 0, "dropout");
    return json_pack("{s:s, s:o, s:[], s:n, s:{s:s, s:b, s:b, s:b}, s:n}", "version", "1.0",
                     "model", model, "added_tokens", "normalizer", "pre_tokenizer", "type",
                     "ByteLevel", "add_prefix_space", 0, "trim_offsets", 1, "use_regex", 1,
                     "post_processor");
}

static json_t *added(const char *content, int id, int single_word, int lstrip, int rstrip,
                     int normalized, int special)
{
    return json_pack("{s:i, s:s, s:b, s:b, s:b, s:b, s:b}", "id", id, "content", content,
                     "single_word", single_word, "lstrip", lstrip, "rstrip", rstrip,
                     "normalized", normalized, "special", special);
}

/* Writes DIR/tokenizer.json (+ tokenizer_config.json if config) under the test dir. */
static const char *write_dir(mg_test_ctx *t, const char *name, json_t *tok, json_t *config)
{
    char rel[300];
    snprintf(rel, sizeof rel, "%s", name);
    char *dir = strdup(mg_test_path(t, rel));
    char cmd[600];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", dir);
    MG_CHECK(t, system(cmd) == 0);
    snprintf(rel, sizeof rel, "%s/tokenizer.json", name);
    char *s = json_dumps(tok, JSON_COMPACT);
    mg_test_write_file(t, rel, s, strlen(s));
    free(s);
    json_decref(tok);
    if (config) {
        snprintf(rel, sizeof rel, "%s/tokenizer_config.json", name);
        s = json_dumps(config, JSON_COMPACT);
        mg_test_write_file(t, rel, s, strlen(s));
        free(s);
        json_decref(config);
    }
    static char keep[8][300];
    static int k;
    char *out = keep[k++ % 8];
    snprintf(out, 300, "%s", dir);
    free(dir);
    return out;
}

static mg_status open_hf(mg_tokenizer **tk, const char *dir, int no_special)
{
    mg_tok_opts o;
    mg_tok_opts_init(&o);
    o.type = "HuggingFaceTokenizer";
    o.model = dir;
    o.hf_no_include_special = no_special;
    return mg_tokenizer_create(tk, &o);
}

/* Encodes text and compares with the expected ids (terminated by -1). */
static void check_ids(mg_test_ctx *t, const mg_tokenizer *tk, const char *text, size_t len,
                      const int64_t *want, int line)
{
    mg_encoder *e = NULL;
    mg_ids ids = {0};
    mg_status st = mg_encoder_create(&e, tk);
    if (st == MG_OK) st = mg_encode(e, text, len, &ids);
    size_t n = 0;
    while (want[n] >= 0) n++;
    int ok = st == MG_OK && ids.n == n;
    for (size_t i = 0; ok && i < n; i++) ok = ids.v[i] == want[i];
    if (!ok) {
        char got[512] = "";
        size_t used = 0;
        for (size_t i = 0; i < ids.n && used < 400; i++)
            used += (size_t)snprintf(got + used, sizeof got - used, " %lld",
                                     (long long)ids.v[i]);
        mg_test_fail(t, __FILE__, line, "ids of \"%.60s\": got [%s] (status %d: %s)", text,
                     got, (int)st, st ? mg_last_error() : "");
    }
    mg_ids_free(&ids);
    mg_encoder_free(e);
}

#define IDS(tk, text, ...)                                                                 \
    do {                                                                                   \
        static const int64_t want_[] = {__VA_ARGS__, -1};                                  \
        check_ids(t, (tk), (text), strlen(text), want_, __LINE__);                         \
    } while (0)

MG_TEST(hf_small_merges_both_forms)
{
    for (int form = 0; form < 2; form++) {
        mg_tokenizer *tk = NULL;
        const char *dir = write_dir(t, form ? "pairs" : "strings", small_model(form), NULL);
        MG_CHECK_OK(t, open_hf(&tk, dir, 0));
        if (!tk) continue;
        IDS(tk, "hello world", 259, 260, 'o', 'r', 'l', 'd');
        IDS(tk, "abc", 261, 'c'); /* merges only: "abc" needs ab+c, which is not listed */
        IDS(tk, "hell", 258);
        MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 264);
        MG_CHECK_EQ_INT(t, mg_tokenizer_eod(tk), -1);
        mg_tokenizer_free(tk);
    }
}

MG_TEST(hf_small_ignore_merges)
{
    json_t *j = small_model(0);
    json_object_set_new(json_object_get(j, "model"), "ignore_merges", json_true());
    mg_tokenizer *tk = NULL;
    MG_CHECK_OK(t, open_hf(&tk, write_dir(t, "im", j, NULL), 0));
    if (tk) {
        IDS(tk, "abc", 263); /* the whole piece is a token */
        IDS(tk, "abcab", 261, 'c', 261);
        mg_tokenizer_free(tk);
    }
}

MG_TEST(hf_small_added_tokens_and_template)
{
    json_t *j = small_model(0);
    json_t *at = json_object_get(j, "added_tokens");
    json_array_append_new(at, added("<s>", 264, 0, 0, 0, 0, 1));
    json_array_append_new(at, added("</s>", 265, 0, 0, 0, 0, 1));
    json_array_append_new(at, added("<m>", 266, 0, 1, 1, 0, 1));
    json_array_append_new(at, added("word", 267, 1, 0, 0, 1, 0));
    json_object_set_new(j, "post_processor", json_pack(
        "{s:s, s:[{s:{s:s,s:i}}, {s:{s:s,s:i}}, {s:{s:s,s:i}}], s:{s:{s:s,s:[i],s:[s]}, "
        "s:{s:s,s:[i],s:[s]}}}", "type", "TemplateProcessing", "single",
        "SpecialToken", "id", "<s>", "type_id", 0, "Sequence", "id", "A", "type_id", 0,
        "SpecialToken", "id", "</s>", "type_id", 0, "special_tokens",
        "<s>", "id", "<s>", "ids", 264, "tokens", "<s>",
        "</s>", "id", "</s>", "ids", 265, "tokens", "</s>"));
    json_t *cfg = json_pack("{s:s, s:s, s:b}", "eos_token", "</s>", "bos_token", "<new>",
                            "add_bos_token", 1);
    const char *dir = write_dir(t, "added", j, cfg);
    mg_tokenizer *tk = NULL;
    MG_CHECK_OK(t, open_hf(&tk, dir, 0));
    if (tk) {
        IDS(tk, "hello", 264, 259, 265);
        IDS(tk, "", 264, 265);
        IDS(tk, "he <m> hell", 264, 256, 266, 258, 265); /* lstrip+rstrip eat the spaces */
        IDS(tk, "<s>he</s>", 264, 264, 256, 265, 265);
        IDS(tk, "words word.", 264, 'w', 'o', 'r', 'd', 's', ' ', 267, '.', 265);
        IDS(tk, "<new>", 264, 268, 265); /* bos_token of the config became an added token */
        MG_CHECK_EQ_INT(t, mg_tokenizer_eod(tk), 265);
        MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 264 + 4 + 1);
        mg_tokenizer_free(tk);
    }
    MG_CHECK_OK(t, open_hf(&tk, dir, 1)); /* --tokenizer-hf-no-include-special-tokens */
    if (tk) {
        IDS(tk, "<s>hello", 264, 259);
        mg_tokenizer_free(tk);
    }
}

MG_TEST(hf_small_added_ids_assigned_like_tokenizers)
{
    /* tokenizers ignores the ids written in added_tokens: a new content gets the next id
     * after the vocabulary, a content of the vocabulary keeps its vocabulary id */
    json_t *j = small_model(0);
    json_t *at = json_object_get(j, "added_tokens");
    json_array_append_new(at, added("<x>", 999, 0, 0, 0, 0, 1));
    json_array_append_new(at, added("hello", 5, 0, 0, 0, 0, 1));
    json_array_append_new(at, added("<y>", 3, 0, 0, 0, 0, 1));
    json_array_append_new(at, added("<x>", 7, 0, 0, 0, 0, 1)); /* duplicate: ignored */
    mg_tokenizer *tk = NULL;
    MG_CHECK_OK(t, open_hf(&tk, write_dir(t, "ids", j, NULL), 0));
    if (tk) {
        IDS(tk, "<x><y>hellohe", 264, 265, 259, 256);
        MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 266);
        mg_tokenizer_free(tk);
    }
}

MG_TEST(hf_small_prefix_space_and_splits)
{
    json_t *j = small_model(0);
    json_object_set_new(j, "pre_tokenizer", json_pack(
        "{s:s, s:[{s:s, s:{s:s}, s:s, s:b}, {s:s, s:b, s:b}]}", "type", "Sequence",
        "pretokenizers", "type", "Split", "pattern", "Regex", "[0-9]", "behavior",
        "Isolated", "invert", 0, "type", "ByteLevel", "add_prefix_space", 1, "use_regex", 0));
    mg_tokenizer *tk = NULL;
    MG_CHECK_OK(t, open_hf(&tk, write_dir(t, "aps", j, NULL), 0));
    if (tk) {
        /* every piece of the Split gets a space: " he" " 1" " w" */
        IDS(tk, "he1w", ' ', 256, ' ', '1', 260);
        IDS(tk, " w", 260);
        mg_tokenizer_free(tk);
    }
}

MG_TEST(hf_small_normalized_added_token_after_nfc)
{
#if MG_HAVE_UTF8PROC
    json_t *j = small_model(0);
    json_object_set_new(j, "normalizer", json_pack("{s:s, s:[{s:s}]}", "type", "Sequence",
                                                   "normalizers", "type", "NFC"));
    /* "éx" (precomposed) as a normalized added token also matches the decomposed form */
    json_array_append_new(json_object_get(j, "added_tokens"),
                          added("\xc3\xa9x", 264, 0, 0, 0, 1, 0));
    mg_tokenizer *tk = NULL;
    MG_CHECK_OK(t, open_hf(&tk, write_dir(t, "nfc", j, NULL), 0));
    if (tk) {
        IDS(tk, "he\xcc\x81x", 'h', 264);
        IDS(tk, "\xc3\xa9xhe", 264, 256);
        IDS(tk, "\xc3\xa9", 0xC3, 0xA9); /* bytes of é, not the token "é" (id 0xE9) */
        mg_tokenizer_free(tk);
    }
#endif
}

/* ---- refusals and malformed files ---- */

static void expect_fail(mg_test_ctx *t, const char *name, json_t *j, mg_status st,
                        const char *sub, int line)
{
    const char *dir = write_dir(t, name, j, NULL);
    mg_tokenizer *tk = NULL;
    mg_status got = open_hf(&tk, dir, 0);
    if (got != st || !strstr(mg_last_error(), sub) || !strstr(mg_last_error(), dir))
        mg_test_fail(t, __FILE__, line, "%s: expected %d with \"%s\" and the path, got %d: %s",
                     name, (int)st, sub, (int)got, mg_last_error());
    mg_tokenizer_free(tk);
}

MG_TEST(hf_refuses_unsupported_features)
{
    json_t *j = small_model(0);
    json_object_set_new(json_object_get(j, "model"), "byte_fallback", json_true());
    expect_fail(t, "bf", j, MG_ERR_UNSUPPORTED, "not supported yet: BPE byte_fallback", __LINE__);
    j = small_model(0);
    json_object_set_new(j, "normalizer", json_pack("{s:s}", "type", "Lowercase"));
    expect_fail(t, "lc", j, MG_ERR_UNSUPPORTED, "not supported yet: normalizer Lowercase",
                __LINE__);
    j = small_model(0);
    json_object_set_new(j, "pre_tokenizer", json_pack("{s:s, s:s}", "type", "Metaspace",
                                                      "replacement", "_"));
    expect_fail(t, "ms", j, MG_ERR_UNSUPPORTED, "not supported yet: pre_tokenizer Metaspace",
                __LINE__);
    j = small_model(0);
    json_object_set_new(j, "pre_tokenizer", json_null());
    expect_fail(t, "nopre", j, MG_ERR_UNSUPPORTED, "without ByteLevel", __LINE__);
    j = small_model(0);
    json_object_set_new(json_object_get(j, "model"), "type", json_string("Unigram"));
    expect_fail(t, "uni", j, MG_ERR_UNSUPPORTED, "not supported yet: model type Unigram",
                __LINE__);
    j = small_model(0);
    json_object_set_new(json_object_get(j, "model"), "continuing_subword_prefix",
                        json_string("##"));
    expect_fail(t, "csp", j, MG_ERR_UNSUPPORTED, "continuing_subword_prefix", __LINE__);
}

MG_TEST(hf_rejects_malformed_files)
{
    json_t *j = small_model(0);
    json_array_append_new(json_object_get(json_object_get(j, "model"), "merges"),
                          json_string("a b c"));
    expect_fail(t, "m3", j, MG_ERR_FORMAT, "model.merges[7]", __LINE__);
    j = small_model(0);
    json_array_append_new(json_object_get(json_object_get(j, "model"), "merges"),
                          json_string("x y")); /* "xy" is not a token */
    expect_fail(t, "mxy", j, MG_ERR_FORMAT, "model.merges[7]", __LINE__);
    j = small_model(0);
    json_object_set_new(json_object_get(json_object_get(j, "model"), "vocab"), "zz",
                        json_string("1"));
    expect_fail(t, "vid", j, MG_ERR_FORMAT, "model.vocab[\"zz\"]", __LINE__);
    j = small_model(0);
    json_object_del(j, "model");
    expect_fail(t, "nomodel", j, MG_ERR_FORMAT, "missing \"model\"", __LINE__);
    j = small_model(0);
    json_object_set_new(j, "pre_tokenizer", json_pack("{s:s, s:{s:s}, s:s}", "type", "Split",
                                                      "pattern", "Regex", "x", "behavior",
                                                      "Sideways"));
    expect_fail(t, "beh", j, MG_ERR_FORMAT, "Split behavior \"Sideways\"", __LINE__);
    j = small_model(0);
    json_array_append_new(json_object_get(j, "added_tokens"), json_pack("{s:s}", "content", "x"));
    expect_fail(t, "atok", j, MG_ERR_FORMAT, "added_tokens[0]", __LINE__);
    /* not JSON at all: the message has the file, line and column */
    char cmd[400];
    snprintf(cmd, sizeof cmd, "mkdir -p '%s'", mg_test_path(t, "bad"));
    MG_CHECK(t, system(cmd) == 0);
    const char *text = "{\"model\": [1,\n  2";
    mg_test_write_file(t, "bad/tokenizer.json", text, strlen(text));
    mg_tokenizer *tk = NULL;
    MG_CHECK_ERR(t, open_hf(&tk, mg_test_path(t, "bad"), 0), MG_ERR_FORMAT,
                 "tokenizer.json:2:");
    MG_CHECK_ERR(t, open_hf(&tk, mg_test_path(t, "missing"), 0), MG_ERR_ARG, "not a directory");
}

MG_TEST(hf_desc_parse_from_memory)
{
    mg_hf_desc d;
    mg_hf_desc_init(&d);
    MG_CHECK_ERR(t, mg_hf_desc_parse(&d, "[]", 2, "mem.json"), MG_ERR_FORMAT,
                 "mem.json: top level is not a JSON object");
    mg_hf_desc_free(&d);
    mg_hf_desc_init(&d);
    const char *s = "{\"model\":{\"type\":\"BPE\",\"vocab\":{\"a\":0},\"merges\":[[\"a\",\"a\"]]},"
                    "\"pre_tokenizer\":{\"type\":\"ByteLevel\"}}";
    MG_CHECK_OK(t, mg_hf_desc_parse(&d, s, strlen(s), "mem.json"));
    MG_CHECK_EQ_INT(t, d.n_vocab, 1);
    MG_CHECK_EQ_INT(t, d.n_merges, 1);
    MG_CHECK_EQ_INT(t, d.n_pre, 1);
    MG_CHECK(t, d.pre[0].add_prefix_space == 1 && d.pre[0].use_regex == 1); /* HF defaults */
    mg_hf_desc_free(&d);
}

/* ---- real vocabularies (anchors from transformers 5.23) ---- */

static mg_status open_real(mg_tokenizer **tk, const char *name)
{
    char dir[512];
    snprintf(dir, sizeof dir, "%s/hf/%s", mg_test_vocab_dir(), name);
    return open_hf(tk, dir, 0);
}

MG_TEST(hf_real_llama3)
{
    mg_tokenizer *tk = NULL;
    MG_CHECK_OK(t, open_real(&tk, "llama3"));
    if (!tk) return;
    MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 128256);
    MG_CHECK_EQ_INT(t, mg_tokenizer_eod(tk), 128001);
    IDS(tk, "Hello world <|endoftext|> <|begin_of_text|>x", 9906, 1917, 83739, 8862, 728, 428,
        91, 29, 220, 128000, 87);
    IDS(tk, " Vi\xe1\xbb\x87t", 101798); /* needs ignore_merges */
    mg_tokenizer_free(tk);
}

MG_TEST(hf_real_qwen3)
{
    mg_tokenizer *tk = NULL;
    MG_CHECK_OK(t, open_real(&tk, "qwen3"));
    if (!tk) return;
    MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 151669);
    MG_CHECK_EQ_INT(t, mg_tokenizer_eod(tk), 151645);
    IDS(tk, "Hello world <|endoftext|> <|begin_of_text|>x", 9707, 1879, 220, 151643, 82639,
        7265, 3575, 4326, 91, 29, 87);
    mg_tokenizer_free(tk);
}

MG_TEST(hf_real_deepseek_v3)
{
    mg_tokenizer *tk = NULL;
    MG_CHECK_OK(t, open_real(&tk, "deepseek_v3"));
    if (!tk) return;
    MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 128815);
    MG_CHECK_EQ_INT(t, mg_tokenizer_eod(tk), 1);
    /* transformers 5 loads it as TokenizersBackend: no BOS although add_bos_token is true */
    IDS(tk, "Hello world <|endoftext|> <|begin_of_text|>x", 19923, 2058, 818, 94, 523, 2154,
        2067, 94, 32, 818, 94, 8277, 19704, 19053, 94, 32, 90);
    mg_tokenizer_free(tk);
}

MG_TEST(hf_real_sentencepiece_style_refused)
{
    const char *names[] = {"llama2", "gemma3"};
    for (int i = 0; i < 2; i++) {
        mg_tokenizer *tk = NULL;
        char dir[512];
        snprintf(dir, sizeof dir, "%s/hf/%s", mg_test_vocab_dir(), names[i]);
        MG_CHECK_ERR(t, open_real(&tk, names[i]), MG_ERR_UNSUPPORTED, "not supported yet: ");
        MG_CHECK(t, strstr(mg_last_error(), dir) != NULL);
        mg_tokenizer_free(tk);
    }
}

MG_TEST(hf_real_gpt2)
{
    char vocab[512], merges_path[512];
    snprintf(vocab, sizeof vocab, "%s/gpt2/gpt2-vocab.json", mg_test_vocab_dir());
    snprintf(merges_path, sizeof merges_path, "%s/gpt2/gpt2-merges.txt", mg_test_vocab_dir());
    mg_tok_opts o;
    mg_tok_opts_init(&o);
    o.type = "GPT2BPETokenizer";
    o.vocab_file = vocab;
    o.merge_file = merges_path;
    mg_tokenizer *tk = NULL;
    MG_CHECK_OK(t, mg_tokenizer_create(&tk, &o));
    if (!tk) return;
    MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 50257);
    MG_CHECK_EQ_INT(t, mg_tokenizer_eod(tk), 50256);
    IDS(tk, "<|endoftext|>hi <|endoftext|> Hello<|endoftext|", 50256, 5303, 220, 50256, 18435,
        27, 91, 437, 1659, 5239, 91);
    IDS(tk, "Hello world", 15496, 995);
    mg_tokenizer_free(tk);
}

MG_TEST(hf_gpt2_merges_file_errors)
{
    char vocab[512];
    snprintf(vocab, sizeof vocab, "%s/gpt2/gpt2-vocab.json", mg_test_vocab_dir());
    const char *text = "#version: 0.2\n\xc4\xa0 t\nabc\n";
    const char *bad = mg_test_write_file(t, "merges.txt", text, strlen(text));
    mg_tok_opts o;
    mg_tok_opts_init(&o);
    o.type = "GPT2BPETokenizer";
    o.vocab_file = vocab;
    o.merge_file = bad;
    mg_tokenizer *tk = NULL;
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_FORMAT, "merges.txt:3: a merge must");
    o.merge_file = NULL;
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_ARG, "--merge-file");
}

/* test_tiktoken.c — TikTokenizer (Megatron and OpenAI layouts), NullTokenizer, the facade's
 * input checks (UTF-8, lone surrogates), base64, and 1 MB single-piece documents.
 */
#include <stdlib.h>

#include "harness.h"
#include "mg/base64.h"
#include "mg/tokenizer.h"

/* ---- helpers ---- */

static void b64_encode(const uint8_t *s, size_t n, char *out)
{
    static const char a[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t w = (uint32_t)s[i] << 16 | (i + 1 < n ? (uint32_t)s[i + 1] << 8 : 0) |
                     (i + 2 < n ? s[i + 2] : 0);
        out[o++] = a[w >> 18];
        out[o++] = a[w >> 12 & 63];
        out[o++] = i + 1 < n ? a[w >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? a[w & 63] : '=';
    }
    out[o] = 0;
}

/* Writes a Megatron JSON vocabulary: the 256 bytes, then `extra` (NULL-terminated). */
static const char *write_megatron_json(mg_test_ctx *t, const char *name,
                                       const char *const *extra)
{
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap), b64[64];
    n += (size_t)snprintf(buf + n, cap - n, "[");
    size_t rank = 0;
    for (int c = 0; c < 256; c++, rank++) {
        uint8_t byte = (uint8_t)c;
        b64_encode(&byte, 1, b64);
        n += (size_t)snprintf(buf + n, cap - n, "%s{\"rank\": %zu, \"token_bytes\": \"%s\", "
                              "\"token_str\": \"\"}", c ? ", " : "", rank, b64);
    }
    for (size_t i = 0; extra[i]; i++, rank++) {
        b64_encode((const uint8_t *)extra[i], strlen(extra[i]), b64);
        n += (size_t)snprintf(buf + n, cap - n, ", {\"rank\": %zu, \"token_bytes\": \"%s\", "
                              "\"token_str\": \"x\"}", rank, b64);
    }
    n += (size_t)snprintf(buf + n, cap - n, "]\n");
    const char *p = mg_test_write_file(t, name, buf, n);
    free(buf);
    return p;
}

static mg_tok_opts tiktoken_opts(const char *model, const char *pattern)
{
    mg_tok_opts o;
    mg_tok_opts_init(&o);
    o.type = "TikTokenizer";
    o.model = model;
    o.tiktoken_pattern = pattern;
    return o;
}

/* Encodes text[0, len) and compares with want[0, nwant). */
static void check_ids(mg_test_ctx *t, int line, const mg_tokenizer *tk, const char *text,
                      size_t len, const int64_t *want, size_t nwant)
{
    mg_encoder *e;
    mg_ids ids = {0};
    MG_CHECK_OK(t, mg_encoder_create(&e, tk));
    mg_status st = mg_encode(e, text, len, &ids);
    int same = st == MG_OK && ids.n == nwant;
    for (size_t i = 0; same && i < nwant; i++) same = ids.v[i] == want[i];
    if (!same) {
        char got[256] = "";
        size_t o = 0;
        for (size_t i = 0; i < ids.n && o < 200; i++)
            o += (size_t)snprintf(got + o, sizeof got - o, " %lld", (long long)ids.v[i]);
        mg_test_fail(t, __FILE__, line, "\"%.*s\": status %d (%s), ids%s", (int)len, text,
                     (int)st, st ? mg_last_error() : "", got);
    }
    mg_ids_free(&ids);
    mg_encoder_free(e);
}

#define CHECK_IDS(t, tk, s, ...)                                                           \
    do {                                                                                   \
        const int64_t w_[] = {__VA_ARGS__};                                                \
        check_ids((t), __LINE__, (tk), (s), sizeof(s) - 1, w_, sizeof w_ / sizeof w_[0]);  \
    } while (0)

/* Expects mg_encode to fail with st and a message containing sub. */
static void check_encode_err(mg_test_ctx *t, const mg_tokenizer *tk, const char *s, size_t n,
                             mg_status st, const char *sub)
{
    mg_encoder *e;
    mg_ids ids = {0};
    MG_CHECK_OK(t, mg_encoder_create(&e, tk));
    MG_CHECK_ERR(t, mg_encode(e, s, n, &ids), st, sub);
    mg_ids_free(&ids);
    mg_encoder_free(e);
}

static const char *const small_extra[] = {"ab", "abab", NULL};

/* ---- Megatron layout ---- */

MG_TEST(tiktoken_megatron_layout)
{
    const char *path = write_megatron_json(t, "v.json", small_extra);
    mg_tok_opts o = tiktoken_opts(path, NULL);
    o.tiktoken_num_special = 10;
    o.vocab_size = 10 + 258;
    mg_tokenizer *tk;
    MG_CHECK_OK(t, mg_tokenizer_create(&tk, &o));
    if (!tk) return;
    MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 268);
    MG_CHECK_EQ_INT(t, mg_tokenizer_eod(tk), 2);
    MG_CHECK(t, strstr(mg_tokenizer_describe(tk), "Megatron JSON") != NULL);
    CHECK_IDS(t, tk, "<unk>ab</s>abab<SPECIAL_9>x", 0, 266, 2, 267, 9, 'x' + 10);
    CHECK_IDS(t, tk, "<s><mask><pad><cls><sep><SPECIAL_7>", 1, 3, 4, 5, 6, 7);
    CHECK_IDS(t, tk, "aba", 266, 'a' + 10);
    check_ids(t, __LINE__, tk, "", 0, NULL, 0);
    mg_tokenizer_free(tk);

    o.vocab_size = 10 + 257; /* only the first 257 ranks: "abab" is gone */
    MG_CHECK_OK(t, mg_tokenizer_create(&tk, &o));
    if (tk) CHECK_IDS(t, tk, "abab", 266, 266);
    mg_tokenizer_free(tk);

    o.vocab_size = 10 + 259;
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_FORMAT,
                 "need vocab_size - num_special_tokens = 259");
}

MG_TEST(tiktoken_megatron_custom_specials)
{
    const char *path = write_megatron_json(t, "v.json", small_extra);
    const char *names[] = {"</s>", "<s>", "<unk>", "<mask>", "<pad>", "<cls>", "<sep>", "<x>"};
    mg_tok_opts o = tiktoken_opts(path, "v1");
    o.tiktoken_num_special = 9;
    o.vocab_size = 9 + 258;
    o.special_tokens = names;
    o.n_special_tokens = 8;
    mg_tokenizer *tk;
    MG_CHECK_OK(t, mg_tokenizer_create(&tk, &o));
    if (!tk) return;
    MG_CHECK_EQ_INT(t, mg_tokenizer_eod(tk), 0);
    CHECK_IDS(t, tk, "<x>ab<SPECIAL_8></s>", 7, 256 + 9, 8, 0);
    mg_tokenizer_free(tk);

    o.n_special_tokens = 6; /* lacks <sep> */
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_ARG, "must include <sep>");
    names[7] = "<s>";
    o.n_special_tokens = 8;
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_ARG, "<s> appears twice");
    o.n_special_tokens = 0;
    o.tiktoken_num_special = 5;
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_ARG, "need 7 special tokens");
    o = tiktoken_opts(path, "v3");
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_ARG, "expected --tiktoken-pattern v1");
}

MG_TEST(tiktoken_megatron_json_checks)
{
    static const struct {
        const char *json, *err;
    } cases[] = {
        {"{}", "not a JSON list"},
        {"[{\"rank\": 0, \"token_bytes\": \"AA==\"}]", "keys must be exactly"},
        {"[{\"rank\": 1, \"token_bytes\": \"AA==\", \"token_str\": \"\"}]", "rank must be 0"},
        {"[{\"rank\": 0, \"token_bytes\": \"AQ==\", \"token_str\": \"\"}]", "single bytes 0..255"},
        {"[{\"rank\": 0, \"token_bytes\": \"A\", \"token_str\": \"\"}]", "invalid base64"},
        {"[{\"rank\": 0, \"token_bytes\": 5, \"token_str\": \"\"}]", "not a string"},
        {"[1, ", "invalid JSON"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *p = mg_test_write_file(t, "bad.json", cases[i].json, strlen(cases[i].json));
        mg_tok_opts o = tiktoken_opts(p, NULL);
        mg_tokenizer *tk;
        MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_FORMAT, cases[i].err);
    }
    mg_tok_opts o = tiktoken_opts(mg_test_path(t, "missing.json"), NULL);
    mg_tokenizer *tk;
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_NOTFOUND, "missing.json");
    o.model = NULL;
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_ARG, "needs --tokenizer-model");
}

MG_TEST(tiktoken_megatron_layout_tiktoken_file)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tiktoken/r50k_base.tiktoken", mg_test_vocab_dir());
    mg_tok_opts o = tiktoken_opts(path, "v1");
    mg_tokenizer *tk;
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_FORMAT, "need vocab_size");
    o.vocab_size = 50256 + 1000;
    MG_CHECK_OK(t, mg_tokenizer_create(&tk, &o));
    if (!tk) return;
    MG_CHECK(t, strstr(mg_tokenizer_describe(tk), ".tiktoken ranks") != NULL);
    CHECK_IDS(t, tk, "hello</s>", 31373 + 1000, 2); /* r50k: "hello" = 31373 */
    mg_tokenizer_free(tk);
}

/* ---- OpenAI layout ---- */

/* Writes a .tiktoken file: the 256 bytes, "ab", "abab", with every separator and line end
 * tiktoken's bytes.split() and splitlines() accept; line 3 (byte 2) is bad_line if given. */
static const char *write_rank_file(mg_test_ctx *t, const char *bad_line)
{
    static const char *const sep[] = {" ", "\t", "  ", " \t\v\f "};
    static const char *const end[] = {"\n", "\r\n", "\r", "\n\n"};
    static const char *const extra[] = {"ab", "abab"};
    size_t cap = 1 << 15, n = 0;
    char *buf = malloc(cap), b64[16];
    for (int r = 0; r < 258; r++) {
        const char *tok = r < 256 ? (const char[]){(char)r} : extra[r - 256];
        b64_encode((const uint8_t *)tok, r < 256 ? 1 : strlen(tok), b64);
        if (r == 2 && bad_line)
            n += (size_t)snprintf(buf + n, cap - n, "%s\n", bad_line);
        else
            n += (size_t)snprintf(buf + n, cap - n, "%s%s%s%d%s", r % 5 == 0 ? " " : "", b64,
                                  sep[r % 4], r, end[r / 4 % 4]);
    }
    const char *p = mg_test_write_file(t, "ranks.tiktoken", buf, n);
    free(buf);
    return p;
}

MG_TEST(tiktoken_rank_file_lines)
{
    mg_tok_opts o = tiktoken_opts(write_rank_file(t, NULL), "v1");
    o.vocab_size = 1000 + 258;
    mg_tokenizer *tk;
    MG_CHECK_OK(t, mg_tokenizer_create(&tk, &o));
    if (!tk) return;
    CHECK_IDS(t, tk, "abab ab", 1000 + 257, 1000 + 32, 1000 + 256);
    mg_tokenizer_free(tk);
    static const struct {
        const char *line, *err;
    } cases[] = {
        {"Ag== x", ":3: invalid rank"},        {"Ag==", ":3: expected \"base64 rank\""},
        {"Ag== 2 2", ":3: expected"},          {"Ag=A 2", ":3: invalid base64 at character 3"},
        {"AgAg=A== 2", ":3: invalid base64 at character 4"},
        {"Ag\x80g 2", ":3: invalid base64 at character 2"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        o.model = write_rank_file(t, cases[i].line);
        MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_FORMAT, cases[i].err);
    }
}

/* The tokens go to the model in batches: a duplicate token is still the error reported
 * when a later line is bad too (errors come in file order). */
MG_TEST(tiktoken_rank_file_first_error)
{
    static const struct {
        const char *line5, *err;
    } cases[] = {
        {NULL, "duplicate token \"\\x01\""},
        {"Ag== x", "duplicate token \"\\x01\""}, /* not ":6: invalid rank" */
        {"BQ== 1", "duplicate token \"\\x01\""}, /* not "rank 1 appears twice" */
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        size_t cap = 1 << 13, n = 0;
        char *buf = malloc(cap), b64[16];
        for (int r = 0; r < 256; r++) {
            const char tok = (char)(r == 2 ? 1 : r); /* line 3: the bytes of rank 1 again */
            b64_encode((const uint8_t *)&tok, 1, b64);
            if (r == 5 && cases[c].line5)
                n += (size_t)snprintf(buf + n, cap - n, "%s\n", cases[c].line5);
            else
                n += (size_t)snprintf(buf + n, cap - n, "%s %d\n", b64, r);
        }
        mg_tok_opts o = tiktoken_opts(mg_test_write_file(t, "dup.tiktoken", buf, n), "v1");
        free(buf);
        o.vocab_size = 1000 + 256;
        mg_tokenizer *tk;
        MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_FORMAT, cases[c].err);
    }
}

MG_TEST(tiktoken_openai_layout)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tiktoken/cl100k_base.tiktoken", mg_test_vocab_dir());
    mg_tok_opts o = tiktoken_opts(path, "cl100k_base");
    mg_tokenizer *tk;
    MG_CHECK_OK(t, mg_tokenizer_create(&tk, &o));
    if (!tk) return;
    MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 100277);
    MG_CHECK_EQ_INT(t, mg_tokenizer_eod(tk), 100257);
    MG_CHECK(t, strstr(mg_tokenizer_describe(tk), "OpenAI cl100k_base") != NULL);
    CHECK_IDS(t, tk, "hello<|endoftext|><|fim_prefix|>", 15339, 100257, 100258);
    /* a lone surrogate becomes U+FFFD (cl100k 5809), as tiktoken.encode("\ud800") */
    CHECK_IDS(t, tk, "\xED\xA0\x80", 5809);
    CHECK_IDS(t, tk, "\xEF\xBF\xBD", 5809);
    mg_tokenizer_free(tk);

    o.vocab_size = 100000;
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_ARG, "does not match");
    o = tiktoken_opts(path, "r50k_base");
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_FORMAT, "not a r50k_base vocabulary");
    const char *sp[] = {"<x>"};
    o = tiktoken_opts(path, "cl100k_base");
    o.special_tokens = sp;
    o.n_special_tokens = 1;
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_ARG, "--tokenizer-special-tokens");
}

MG_TEST(tiktoken_surrogates_and_utf8)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tiktoken/cl100k_base.tiktoken", mg_test_vocab_dir());
    mg_tok_opts o = tiktoken_opts(path, "cl100k_base");
    mg_tokenizer *tk;
    MG_CHECK_OK(t, mg_tokenizer_create(&tk, &o));
    if (!tk) return;
    mg_encoder *e;
    MG_CHECK_OK(t, mg_encoder_create(&e, tk));
    mg_ids a = {0}, b = {0};
    /* high + low surrogate forms = U+1F600, as utf-16 surrogatepass round trip gives */
    MG_CHECK_OK(t, mg_encode(e, "x\xED\xA0\xBD\xED\xB8\x80y", 8, &a));
    MG_CHECK_OK(t, mg_encode(e, "x\xF0\x9F\x98\x80y", 6, &b));
    MG_CHECK(t, a.n == b.n && a.n > 0 && memcmp(a.v, b.v, a.n * sizeof *a.v) == 0);
    a.n = b.n = 0;
    MG_CHECK_OK(t, mg_encode(e, "\xED\xB8\x80\xED\xA0\xBD", 6, &a)); /* low then high: two U+FFFD */
    MG_CHECK_OK(t, mg_encode(e, "\xEF\xBF\xBD\xEF\xBF\xBD", 6, &b));
    MG_CHECK(t, a.n == b.n && a.n > 0 && memcmp(a.v, b.v, a.n * sizeof *a.v) == 0);
    a.n = b.n = 0; /* a surrogate pair right after a run of 3-byte characters */
    MG_CHECK_OK(t, mg_encode(e, "\xE4\xB8\xAD\xED\xA0\xBD\xED\xB8\x80", 9, &a));
    MG_CHECK_OK(t, mg_encode(e, "\xE4\xB8\xAD\xF0\x9F\x98\x80", 7, &b));
    MG_CHECK(t, a.n == b.n && a.n > 0 && memcmp(a.v, b.v, a.n * sizeof *a.v) == 0);
    static const struct {
        const char *s;
        size_t n, at;
    } bad[] = {
        {"ab\xC0\x80", 4, 2},         {"\xE0\x80\x80", 3, 0},     {"abc\xF5\x80\x80\x80", 7, 3},
        {"\xF4\x90\x80\x80", 4, 0},   {"x\xE4\xB8", 3, 1},        {"\x80", 1, 0},
        {"abcdefghij\xFF", 11, 10},   {"\xED\xA0", 2, 0},         {"\xF0\x8F\xBF\xBF", 4, 0},
        /* after a run of 3-byte characters (checked one test per character) */
        {"\xE4\xB8\xAD\xE6\x96\x87\xE4\xB8", 8, 6}, {"\xE4\xB8\xAD\xE4\x38\xAD", 6, 3},
        {"\xEF\xBC\x8C\xE0\x80\x80", 6, 3},     {"\xE4\xB8\xAD\xE4\xB8\xC0", 6, 3},
        {"abcdefghijklmnop\xC3", 17, 16},                        /* after 16 ASCII bytes */
        {"abcdefghijklmnopqrstuvw\xC3(", 25, 23},                 /* after 16 + 7 */
        {"abcdefghijklmnopqrstuvwxyz012345\xE4\xB8", 34, 32},     /* after 2 x 16 */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        char want[64];
        snprintf(want, sizeof want, "invalid UTF-8 at byte %zu", bad[i].at);
        MG_CHECK_ERR(t, mg_encode(e, bad[i].s, bad[i].n, &a), MG_ERR_FORMAT, want);
    }
    /* mg_encode_valid (the caller vouches for the text): the same ids as mg_encode */
    const char *ok = "caf\xc3\xa9 \xf0\x9f\x98\x80 \xe4\xb8\xad\xe6\x96\x87 ok";
    a.n = b.n = 0;
    MG_CHECK_OK(t, mg_encode(e, ok, strlen(ok), &a));
    MG_CHECK_OK(t, mg_encode_valid(e, ok, strlen(ok), &b));
    MG_CHECK(t, a.n == b.n && a.n > 0 && memcmp(a.v, b.v, a.n * sizeof *a.v) == 0);
    mg_ids_free(&a);
    mg_ids_free(&b);
    mg_encoder_free(e);
    mg_tokenizer_free(tk);
}

/* ---- 1 MB documents without spaces (one pre-token each: the heap merge) ---- */

typedef struct {
    uint8_t *bytes;
    size_t *off, *len, n;
} rank_table;

/* Reads a .tiktoken file into rank -> bytes (ranks are dense in the OpenAI files). */
static int load_ranks(const char *path, rank_table *rt)
{
    size_t size;
    char *d = mg_test_read_file(path, &size);
    if (!d) return 0;
    rt->bytes = malloc(size);
    rt->off = calloc(300000, sizeof *rt->off);
    rt->len = calloc(300000, sizeof *rt->len);
    size_t used = 0;
    rt->n = 0;
    for (char *line = strtok(d, "\n"); line; line = strtok(NULL, "\n")) {
        char *sp = strchr(line, ' ');
        if (!sp) continue;
        size_t rank = strtoul(sp + 1, NULL, 10), n;
        if (rank >= 300000 || mg_base64_decode(line, (size_t)(sp - line), rt->bytes + used, &n))
            continue;
        rt->off[rank] = used;
        rt->len[rank] = n;
        used += n;
        if (rank + 1 > rt->n) rt->n = rank + 1;
    }
    free(d);
    return 1;
}

static void round_trip_1mb(mg_test_ctx *t, const mg_tokenizer *tk, const rank_table *rt,
                           const char *doc, size_t n)
{
    mg_encoder *e;
    mg_ids ids = {0};
    MG_CHECK_OK(t, mg_encoder_create(&e, tk));
    MG_CHECK_OK(t, mg_encode(e, doc, n, &ids));
    size_t pos = 0, ok = ids.n > 0;
    for (size_t i = 0; ok && i < ids.n; i++) {
        size_t r = (size_t)ids.v[i];
        ok = r < rt->n && pos + rt->len[r] <= n && rt->len[r] > 0 &&
             memcmp(doc + pos, rt->bytes + rt->off[r], rt->len[r]) == 0;
        pos += ok ? rt->len[r] : 0;
    }
    MG_CHECK(t, ok && pos == n);
    if (ids.n >= n * 3 / 4)
        mg_test_fail(t, __FILE__, __LINE__, "%zu ids for %zu bytes: not merged", ids.n, n);
    mg_ids_free(&ids);
    mg_encoder_free(e);
}

MG_TEST(tiktoken_one_megabyte_piece)
{
    char path[512];
    snprintf(path, sizeof path, "%s/tiktoken/cl100k_base.tiktoken", mg_test_vocab_dir());
    rank_table rt = {0};
    MG_CHECK(t, load_ranks(path, &rt));
    mg_tok_opts o = tiktoken_opts(path, "cl100k_base");
    mg_tokenizer *tk;
    MG_CHECK_OK(t, mg_tokenizer_create(&tk, &o));
    size_t n = 1 << 20;
    char *doc = malloc(n + 4);
    uint64_t s = 88172645463325252ULL;
    size_t i = 0;
    static const char hanzi[] = "的一是不了人我在有他这中大来上国个到说们为子和你地出道也时年得就那要下"
                                "以生会自着去之过家学对可她里后小么心多天而能好都然没日于起还发成事只作当"
                                "想看文无开手十用主行方又如前所本见经头面公同三已老从动两长知民样现分将外";
    while (i + 3 <= n) { /* common ideographs, 3 bytes each, no spaces */
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        memcpy(doc + i, hanzi + 3 * (s % ((sizeof hanzi - 1) / 3)), 3);
        i += 3;
    }
    if (tk) round_trip_1mb(t, tk, &rt, doc, i);
    for (i = 0; i < n; i++) { /* lower-case letters */
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        doc[i] = (char)('a' + s % 26);
    }
    if (tk) round_trip_1mb(t, tk, &rt, doc, n);
    free(doc);
    free(rt.bytes);
    free(rt.off);
    free(rt.len);
    mg_tokenizer_free(tk);
}

/* ---- NullTokenizer ---- */

static mg_tokenizer *null_tok(mg_test_ctx *t, int64_t v, int64_t eod)
{
    mg_tok_opts o;
    mg_tok_opts_init(&o);
    o.type = "NullTokenizer";
    o.vocab_size = v;
    o.null_eod_id = eod;
    mg_tokenizer *tk = NULL;
    MG_CHECK_OK(t, mg_tokenizer_create(&tk, &o));
    return tk;
}

MG_TEST(null_tokenizer)
{
    mg_tokenizer *tk = null_tok(t, 1000, -1);
    if (!tk) return;
    MG_CHECK_EQ_INT(t, mg_tokenizer_vocab_size(tk), 1000);
    MG_CHECK_EQ_INT(t, mg_tokenizer_eod(tk), 999);
    CHECK_IDS(t, tk, "11 325 97", 11, 325, 97);
    CHECK_IDS(t, tk, "1\n", 1);
    CHECK_IDS(t, tk, "+5 -3 1_000 007 -0", 5, -3, 1000, 7, 0);
    CHECK_IDS(t, tk, "\t7\r\n\v\f 8", 7, 8);
    CHECK_IDS(t, tk, "\xEF\xBC\x91\xEF\xBC\x92", 12);               /* fullwidth 12 */
    CHECK_IDS(t, tk, "\xD9\xA3\xE3\x80\x80", 3);                    /* Arabic-Indic 3, U+3000 */
    CHECK_IDS(t, tk, "\xC2\xA0" "4\xC2\x85", 4);                    /* NBSP, NEL */
    CHECK_IDS(t, tk, "-9223372036854775808 9223372036854775807", INT64_MIN, INT64_MAX);
    static const struct {
        const char *s;
        const char *err;
    } bad[] = {
        {"", "field 1 (\"\") is not an integer"},
        {"1  2", "field 2 (\"\")"},
        {" 1", "field 1"},
        {"1 ", "field 2"},
        {"1__0", "field 1"},
        {"_1", "field 1"},
        {"1_", "field 1"},
        {"+_1", "field 1"},
        {"- 1", "field 1"},
        {"+", "field 1"},
        {"1\x1c", "field 1 (\"1\\x1c\")"},
        {"0x10", "field 1"},
        {"1.0", "field 1"},
        {"\xE2\x80\x8B" "1", "field 1"}, /* ZWSP is not whitespace */
        {"\xD9\xA3\xEF\xBC\x91x", "field 1"},
        {"5 abc", "field 2 (\"abc\")"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        check_encode_err(t, tk, bad[i].s, strlen(bad[i].s), MG_ERR_FORMAT, bad[i].err);
    check_encode_err(t, tk, "1\0002", 3, MG_ERR_FORMAT, "field 1");
    check_encode_err(t, tk, "9223372036854775808", 19, MG_ERR_LIMIT, "does not fit");
    check_encode_err(t, tk, "\xED\xA0\x80", 3, MG_ERR_FORMAT,
                     "lone surrogate U+D800 at byte 0 (Megatron's tokenizer rejects it)");
    mg_tokenizer_free(tk);
    tk = null_tok(t, 50, 7);
    if (tk) MG_CHECK_EQ_INT(t, mg_tokenizer_eod(tk), 7);
    mg_tokenizer_free(tk);
    mg_tok_opts o;
    mg_tok_opts_init(&o);
    o.type = "NullTokenizer";
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_ARG, "needs --vocab-size");
}

/* ---- facade ---- */

MG_TEST(tokenizer_facade_dispatch)
{
    mg_tok_opts o;
    mg_tok_opts_init(&o);
    MG_CHECK_EQ_INT(t, o.vocab_size, -1);
    MG_CHECK_EQ_INT(t, o.tiktoken_num_special, 1000);
    MG_CHECK_EQ_INT(t, o.null_eod_id, -1);
    mg_tokenizer *tk = (mg_tokenizer *)&o;
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_ARG, "--tokenizer-type is required");
    MG_CHECK(t, tk == NULL);
    o.type = "MultimodalTokenizer";
    MG_CHECK_ERR(t, mg_tokenizer_create(&tk, &o), MG_ERR_UNSUPPORTED,
                 "not supported yet: --tokenizer-type MultimodalTokenizer");
    mg_tokenizer_free(NULL);
    mg_encoder_free(NULL);
    mg_ids ids = {0};
    for (int i = 0; i < 1000; i++) MG_CHECK_OK(t, mg_ids_push(&ids, i));
    MG_CHECK(t, ids.n == 1000 && ids.v[999] == 999);
    mg_ids_free(&ids);
    MG_CHECK(t, ids.v == NULL && ids.n == 0);
}

/* ---- base64 ---- */

MG_TEST(base64_decode)
{
    uint8_t out[16];
    size_t n;
    MG_CHECK_OK(t, mg_base64_decode("", 0, out, &n));
    MG_CHECK_EQ_INT(t, n, 0);
    MG_CHECK_OK(t, mg_base64_decode("aGVsbG8=", 8, out, &n));
    MG_CHECK(t, n == 5 && memcmp(out, "hello", 5) == 0);
    MG_CHECK_OK(t, mg_base64_decode("QQ==", 4, out, &n));
    MG_CHECK(t, n == 1 && out[0] == 'A');
    MG_CHECK_OK(t, mg_base64_decode("QR==", 4, out, &n)); /* unused bits ignored */
    MG_CHECK(t, n == 1 && out[0] == 'A');
    MG_CHECK_OK(t, mg_base64_decode("+/+/", 4, out, &n));
    MG_CHECK(t, n == 3 && out[0] == 0xFB && out[1] == 0xFF && out[2] == 0xBF);
    MG_CHECK_ERR(t, mg_base64_decode("QQ", 2, out, &n), MG_ERR_FORMAT, "not a multiple of 4");
    MG_CHECK_ERR(t, mg_base64_decode("Q===", 4, out, &n), MG_ERR_FORMAT, "character 1");
    MG_CHECK_ERR(t, mg_base64_decode("QQ=A", 4, out, &n), MG_ERR_FORMAT, "character 3");
    MG_CHECK_ERR(t, mg_base64_decode("QQ==QQ==", 8, out, &n), MG_ERR_FORMAT, "character 2");
    MG_CHECK_ERR(t, mg_base64_decode("aG-s", 4, out, &n), MG_ERR_FORMAT, "character 2");
    /* the groups before the last take the fast path, which hands errors to the slow one */
    MG_CHECK_OK(t, mg_base64_decode("aGVsbG8hIQ==", 12, out, &n));
    MG_CHECK(t, n == 7 && memcmp(out, "hello!!", 7) == 0);
    MG_CHECK_ERR(t, mg_base64_decode("aGVs\x80G8h", 8, out, &n), MG_ERR_FORMAT, "character 4");
    MG_CHECK_ERR(t, mg_base64_decode("aGVsbG=h", 8, out, &n), MG_ERR_FORMAT, "character 7");
    MG_CHECK_ERR(t, mg_base64_decode("aG==bG8h", 8, out, &n), MG_ERR_FORMAT, "character 2");
}

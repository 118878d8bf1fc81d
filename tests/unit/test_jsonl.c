/* test_jsonl.c — unit tests for mg/jsonl.h. Expected verdicts, values and columns were
 * taken from CPython 3.11's json.loads; a generated corpus is also checked against
 * jansson through tests/fuzz/jsonl_oracle.h. */
#include <stdlib.h>

#include "harness.h"
#include "mg/jsonl.h"
#include "../fuzz/jsonl_oracle.h"

static const char *const text_key[] = {"text"};

/* Extracts "text" from line (NUL-terminated); returns the status. */
static mg_status get_text(mg_jsonl *p, const char *line, mg_jsonl_value *v)
{
    return mg_jsonl_extract(p, line, strlen(line), text_key, 1, v);
}

static int value_is(const mg_jsonl_value *v, const char *bytes, size_t len, size_t lone)
{
    return v->str && v->len == len && memcmp(v->str, bytes, len) == 0 && v->str[len] == 0 &&
           v->lone_surrogates == lone && !v->is_list && v->n_items == 1 &&
           v->items[0].str == v->str && v->items[0].len == len &&
           v->items[0].lone_surrogates == lone;
}

/* v is a list whose items are the NUL-separated strings of want (n of them, want_len bytes
 * in all), with lone lone surrogates in all. */
static int list_is(const mg_jsonl_value *v, const char *want, size_t want_len, size_t n,
                   size_t lone)
{
    if (!v->is_list || v->str || v->n_items != n || v->lone_surrogates != lone) return 0;
    size_t at = 0, sum = 0;
    for (size_t k = 0; k < n; k++) {
        const mg_jsonl_item *it = &v->items[k];
        if (at + it->len > want_len || memcmp(it->str, want + at, it->len) != 0 ||
            it->str[it->len] != 0)
            return 0;
        at += it->len + 1;
        sum += it->lone_surrogates;
    }
    return at == want_len + (n > 0) && sum == lone;
}

MG_TEST(jsonl_extracts_several_keys)
{
    mg_jsonl *p;
    MG_CHECK_OK(t, mg_jsonl_create(&p));
    const char *line = "{\"id\": 3, \"text\": \"hello world\", \"meta\": {\"src\": \"x\", "
                       "\"tags\": [1, 2.5, true, false, null]}, \"title\": \"T\"}";
    const char *keys[] = {"title", "text", "title"};
    mg_jsonl_value v[3];
    MG_CHECK_OK(t, mg_jsonl_extract(p, line, strlen(line), keys, 3, v));
    MG_CHECK(t, value_is(&v[0], "T", 1, 0));
    MG_CHECK(t, value_is(&v[1], "hello world", 11, 0));
    MG_CHECK(t, value_is(&v[2], "T", 1, 0));
    MG_CHECK_OK(t, mg_jsonl_extract(p, line, strlen(line), keys, 0, v)); /* no key: validate */
    mg_jsonl_free(p);
    mg_jsonl_free(NULL);
}

MG_TEST(jsonl_escapes_and_surrogates_as_python)
{
    mg_jsonl *p;
    MG_CHECK_OK(t, mg_jsonl_create(&p));
    static const struct {
        const char *line, *want;
        size_t len, lone;
    } cases[] = {
        {"{\"text\":\"\\\"\\\\\\/\\b\\f\\n\\r\\t\"}", "\"\\/\b\f\n\r\t", 8, 0},
        {"{\"text\":\"\\u00e9\\u20AC\\uD83D\\uDE00\"}",
         "\xC3\xA9\xE2\x82\xAC\xF0\x9F\x98\x80", 9, 0},
        {"{\"text\":\"\\ud800\"}", "\xED\xA0\x80", 3, 1},
        {"{\"text\":\"\\udc00\\ud800\"}", "\xED\xB0\x80\xED\xA0\x80", 6, 2},
        {"{\"text\":\"\\ud800\\ud800\\udc00\"}", "\xED\xA0\x80\xF0\x90\x80\x80", 7, 1},
        {"{\"text\":\"\\ud800\\u0041\"}", "\xED\xA0\x80" "A", 4, 1},
        {"{\"text\":\"\\udbff\\udfff x\"}", "\xF4\x8F\xBF\xBF x", 6, 0},
        {"{\"text\":\"\\u0000a\"}", "\0a", 2, 0},
        {"{\"text\":\"a\x7f\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80\"}",
         "a\x7f\xc3\xa9\xe4\xb8\xad\xf0\x9f\x98\x80", 11, 0},
        /* the edges of the 3-byte range: U+0800, U+D7FF, U+E000, U+FFFF, one after another */
        {"{\"text\":\"\xE0\xA0\x80\xED\x9F\xBF\xEE\x80\x80\xEF\xBF\xBF\"}",
         "\xE0\xA0\x80\xED\x9F\xBF\xEE\x80\x80\xEF\xBF\xBF", 12, 0},
        {"{\"te\\u0078t\":\"ok\"}", "ok", 2, 0},
        {"\t {\"text\" :\r\n\"a\" }\r\n", "a", 1, 0},
        {"{\"text\":\"\"}", "", 0, 0},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mg_jsonl_value v;
        MG_CHECK_OK(t, get_text(p, cases[i].line, &v));
        if (!value_is(&v, cases[i].want, cases[i].len, cases[i].lone))
            mg_test_fail(t, __FILE__, __LINE__, "case %zu: %s", i, cases[i].line);
    }
    mg_jsonl_free(p);
}

MG_TEST(jsonl_duplicate_keys_last_wins)
{
    mg_jsonl *p;
    MG_CHECK_OK(t, mg_jsonl_create(&p));
    mg_jsonl_value v;
    MG_CHECK_OK(t, get_text(p, "{\"text\":\"first\",\"text\":\"second\"}", &v));
    MG_CHECK(t, value_is(&v, "second", 6, 0));
    MG_CHECK_OK(t, get_text(p, "{\"text\":1,\"text\":\"s\"}", &v));
    MG_CHECK(t, value_is(&v, "s", 1, 0));
    MG_CHECK_OK(t, get_text(p, "{\"text\":\"\\ud800\",\"te\\u0078t\":\"b\"}", &v));
    MG_CHECK(t, value_is(&v, "b", 1, 0)); /* lone count is the last value's */
    MG_CHECK_ERR(t, get_text(p, "{\"text\":\"s\",\"text\":1}", &v), MG_ERR_FORMAT,
                 "key \"text\" is a number, expected a string");
    mg_jsonl_free(p);
}

MG_TEST(jsonl_python_literals_and_numbers)
{
    mg_jsonl *p;
    MG_CHECK_OK(t, mg_jsonl_create(&p));
    mg_jsonl_value v;
    const char *ok[] = {
        "{\"text\":\"a\", \"x\": NaN, \"y\": -Infinity, \"z\": Infinity}",
        "{\"text\":\"a\", \"x\": 1e5, \"y\": 1E+05, \"z\": -0.0e-0, \"w\": 1e400}",
        "{\"text\":\"a\", \"x\": 123456789012345678901234567890}",
        "{\"\\u0000\":1,\"text\":\"a\"}",
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) MG_CHECK_OK(t, get_text(p, ok[i], &v));
    MG_CHECK_ERR(t, get_text(p, "{\"text\":NaN}", &v), MG_ERR_FORMAT,
                 "key \"text\" is a number, expected a string");
    /* Python's int_max_str_digits: 4300 digits are fine, 4301 are not */
    size_t n = 4301 + 20;
    char *big = malloc(n + 1);
    memcpy(big, "{\"text\":\"a\",\"x\":", 16);
    memset(big + 16, '7', 4301);
    memcpy(big + 16 + 4301, "}", 2);
    MG_CHECK_ERR(t, get_text(p, big, &v), MG_ERR_FORMAT, "more than 4300 digits");
    memcpy(big + 16 + 4300, "}", 2);
    MG_CHECK_OK(t, get_text(p, big, &v));
    free(big);
    mg_jsonl_free(p);
}

MG_TEST(jsonl_error_messages_with_python_columns)
{
    static const struct {
        const char *line, *msg;
    } cases[] = {
        {"", "empty line"},
        {" \t\r", "empty line"},
        {"[1, 2]", "not a JSON object"},
        {"\"text\"", "not a JSON object"},
        {"{\"id\":1}", "missing key \"text\""},
        {"{\"text\":{}}", "key \"text\" is an object, expected a string"},
        {"{\"text\":null}", "key \"text\" is null, expected a string"},
        {"{\"text\":false}", "key \"text\" is a boolean, expected a string"},
        {"{\"text\":\"a\"}\f", "invalid JSON at column 13: extra data"},
        {"{\"text\":\"a\"} {}", "invalid JSON at column 14: extra data"},
        {"\xEF\xBB\xBF{\"text\":\"a\"}", "invalid JSON at column 1: unexpected UTF-8 BOM"},
        {"{\"text\":\"\\ud800\\x\"}", "invalid JSON at column 16: invalid \\escape"},
        {"{\"text\":\"\\ud800\\u00zz\"}", "invalid JSON at column 17: invalid \\uXXXX escape"},
        {"{\"text\":\"\\u12\"}", "invalid JSON at column 11: invalid \\uXXXX escape"},
        {"{\"text\":\"a\x1f\"}", "invalid JSON at column 11: invalid control character"},
        {"{\"text\":\"abc\\", "invalid JSON at column 9: unterminated string"},
        {"{\"text\":\"a\", \"x\": -NaN}", "invalid JSON at column 19: expecting value"},
        {"{\"text\":\"a\", \"x\": nan}", "invalid JSON at column 19: expecting value"},
        {"{\"text\":\"a\", \"x\": 01}", "invalid JSON at column 20: expecting ',' delimiter"},
        {"{\"text\":\"a\", \"x\": 1.}", "invalid JSON at column 20: expecting ',' delimiter"},
        {"{\"text\":\"a\", \"x\": 1e}", "invalid JSON at column 20: expecting ',' delimiter"},
        {"{\"text\":\"a\", \"x\": .5}", "invalid JSON at column 19: expecting value"},
        {"{\"text\":\"a\", \"x\": +1}", "invalid JSON at column 19: expecting value"},
        {"{\"text\":\"a\", \"x\": [1,]}", "invalid JSON at column 22: expecting value"},
        {"{\"text\":\"a\",}", "invalid JSON at column 13: expecting property name enclosed"},
        {"{\"text\":\"a\" \"x\":1}", "invalid JSON at column 13: expecting ',' delimiter"},
        {"{\"text\" \"a\"}", "invalid JSON at column 9: expecting ':' delimiter"},
        {"{'text':'a'}", "invalid JSON at column 2: expecting property name enclosed"},
        {"{\"text\":tru}", "invalid JSON at column 9: expecting value"},
        {"{\"text\":\"a\",\"x\":truex}", "invalid JSON at column 21: expecting ',' delimiter"},
        {"{\"text\":\"a\"", "invalid JSON at column 12: expecting ',' delimiter"},
        {"{\"text\":\"\xC3\xA9\xC3\x28\"}", "invalid UTF-8 at column 12"},
        {"{\"text\":\"\xED\xA0\x80\"}", "invalid UTF-8 at column 10"},
        {"{\"text\":\"\xC0\x80\"}", "invalid UTF-8 at column 10"},
        {"{\"text\":\"\xF4\x90\x80\x80\"}", "invalid UTF-8 at column 10"},
        {"{\"text\":\"\xE4\xB8\"}", "invalid UTF-8 at column 10"},
        {"{\"text\":\"\xE4\xB8\xAD\xE0\x9F\xBF\"}", "invalid UTF-8 at column 13"},
        {"{\"text\":\"\xE4\xB8\xAD\xED\xBF\xBF\"}", "invalid UTF-8 at column 13"},
        {"{\"text\":\"\xE4\xB8\xAD\xE4\x41\xAD\"}", "invalid UTF-8 at column 13"},
        {"{\"text\":\"\xE4\xB8\xAD\xE4\xB8\xC0\"}", "invalid UTF-8 at column 13"},
        {"{\"text\":\"\x80\"}", "invalid UTF-8 at column 10"},
        {"{\"text\":\"a\", \xFF}", "invalid UTF-8 at column 14"}, /* decoding comes first */
    };
    mg_jsonl *p;
    MG_CHECK_OK(t, mg_jsonl_create(&p));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mg_jsonl_value v;
        mg_status st = get_text(p, cases[i].line, &v);
        if (st != MG_ERR_FORMAT || strncmp(mg_last_error(), cases[i].msg, strlen(cases[i].msg)))
            mg_test_fail(t, __FILE__, __LINE__, "case %zu: got %d \"%s\", want \"%s\"", i,
                         (int)st, mg_last_error(), cases[i].msg);
    }
    mg_jsonl_value v;
    MG_CHECK_ERR(t, mg_jsonl_extract(p, "{\"text\":\"a\"}\0", 13, text_key, 1, &v),
                 MG_ERR_FORMAT, "column 13: extra data");
    mg_jsonl_free(p);
}

/* '[' * depth + inner + ']' * depth wrapped as {"text":"a","x":...} */
static char *nested(size_t depth)
{
    char *s = malloc(2 * depth + 32);
    size_t k = (size_t)sprintf(s, "{\"text\":\"a\",\"x\":");
    memset(s + k, '[', depth);
    memset(s + k + depth, ']', depth);
    strcpy(s + k + 2 * depth, "}");
    return s;
}

MG_TEST(jsonl_nesting_limit)
{
    mg_jsonl *p;
    MG_CHECK_OK(t, mg_jsonl_create(&p));
    mg_jsonl_value v;
    char *ok = nested(2047), *deep = nested(2048), *deeper = nested(100000);
    MG_CHECK_OK(t, get_text(p, ok, &v)); /* 2048 levels with the top object */
    MG_CHECK_ERR(t, get_text(p, deep, &v), MG_ERR_FORMAT, "nesting too deep");
    MG_CHECK_ERR(t, get_text(p, deeper, &v), MG_ERR_FORMAT, "nesting too deep");
    free(ok);
    free(deep);
    free(deeper);
    mg_jsonl_free(p);
}

MG_TEST(jsonl_long_values_and_buffer_reuse)
{
    mg_jsonl *p;
    MG_CHECK_OK(t, mg_jsonl_create(&p));
    size_t n = 1 << 20;
    char *line = malloc(2 * n + 64), *want = malloc(n);
    size_t k = (size_t)sprintf(line, "{\"text\": \""), w = 0;
    for (size_t i = 0; w < n - 16; i++) { /* ASCII, UTF-8 and escapes at every alignment */
        const char *piece = (i % 7 == 3) ? "\\n" : (i % 11 == 5) ? "\xE4\xB8\xAD" : "abcdefghij";
        const char *dec = (i % 7 == 3) ? "\n" : piece;
        size_t pl = strlen(piece) - (size_t)(i % 3 == 0 && i % 7 != 3 && i % 11 != 5);
        size_t dl = (i % 7 == 3) ? 1 : pl;
        memcpy(line + k, piece, pl);
        memcpy(want + w, dec, dl);
        k += pl;
        w += dl;
    }
    strcpy(line + k, "\", \"id\": 1}");
    mg_jsonl_value v;
    MG_CHECK_OK(t, get_text(p, line, &v));
    MG_CHECK(t, value_is(&v, want, w, 0));
    MG_CHECK_OK(t, get_text(p, "{\"text\":\"short\"}", &v));
    MG_CHECK(t, value_is(&v, "short", 5, 0));
    free(line);
    free(want);
    mg_jsonl_free(p);
}

/* Deterministic generator of JSON-ish lines: valid structures with random mutations. */
static uint64_t rng_next(uint64_t *s)
{
    *s ^= *s << 13;
    *s ^= *s >> 7;
    *s ^= *s << 17;
    return *s;
}

static void gen_value(uint64_t *r, char *b, size_t *k, size_t cap, int depth, int force_obj)
{
    static const char *const atoms[] = {
        "0", "-1", "1.5e3", "1E400", "-0.0", "NaN", "-Infinity", "true", "false", "null",
        "\"plain\"", "\"\\ud800\"", "\"\\ud83d\\ude00\"", "\"\\u0000\"", "\"\xC3\xA9\"",
        "\"a\\\"b\\\\c\\n\"", "\"\\udc00x\"", "12345678901234567890123", "\"\xED\xA0\x80\"",
        "\"\\uDBC0\\uDC01\""};
    uint64_t c = force_obj ? 1 : rng_next(r) % (depth > 3 ? 1 : 4);
    if (*k + 64 >= cap) c = 0;
    if (c == 0) {
        const char *atom = atoms[rng_next(r) % (sizeof atoms / sizeof atoms[0])];
        *k += (size_t)snprintf(b + *k, cap - *k, "%s", atom);
        return;
    }
    int obj = c == 1;
    b[(*k)++] = obj ? '{' : '[';
    for (uint64_t i = 0, m = rng_next(r) % 4; i < m && *k + 64 < cap; i++) {
        if (i) b[(*k)++] = ',';
        const char *key = rng_next(r) % 2 ? "text" : "id";
        if (obj) *k += (size_t)snprintf(b + *k, cap - *k, "\"%s\":", key);
        if (c == 3) /* a list of strings (atoms 10..16) */
            *k += (size_t)snprintf(b + *k, cap - *k, "%s", atoms[10 + rng_next(r) % 7]);
        else
            gen_value(r, b, k, cap, depth + 1, 0);
    }
    b[(*k)++] = obj ? '}' : ']';
}

MG_TEST(jsonl_differential_against_jansson)
{
    static const char *const keys[] = {"text", "id"};
    mg_jsonl *p;
    MG_CHECK_OK(t, mg_jsonl_create(&p));
    uint64_t r = 0x9E3779B97F4A7C15ull;
    char line[4096];
    int bad = 0;
    for (int iter = 0; iter < 20000 && bad < 5; iter++) {
        size_t k = 0;
        gen_value(&r, line, &k, sizeof line - 8, 0, rng_next(&r) % 8 != 0);
        for (uint64_t m = rng_next(&r) % 3; m > 0 && k > 0; m--) { /* byte mutations */
            size_t at = rng_next(&r) % k;
            static const char bytes[] = "{}[]\",:\\ u0e.-\x80\xE4\x01";
            line[at] = bytes[rng_next(&r) % (sizeof bytes - 1)];
        }
        mg_jsonl_value out[2];
        const char *diff = jsonl_oracle_check(p, (const uint8_t *)line, k, keys, 2, out);
        if (diff) {
            bad++;
            mg_test_fail(t, __FILE__, __LINE__, "%s on %.*s (ours: %s)", diff, (int)k, line,
                         mg_last_error());
        }
    }
    mg_jsonl_free(p);
}

/* ---- list values (Megatron's Encoder.encode accepts a list of sentences) ---------------- */

MG_TEST(jsonl_list_values)
{
    mg_jsonl *p;
    MG_CHECK_OK(t, mg_jsonl_create(&p));
    mg_jsonl_value v;
    static const struct {
        const char *line, *want; /* want: the items, NUL-separated */
        size_t want_len, n, lone;
    } cases[] = {
        {"{\"text\": [\"a\", \"\", \"b\\n\", \"\\ud800x\"]}", "a\0\0b\n\0\xED\xA0\x80x", 10, 4, 1},
        {"{\"text\":[]}", "", 0, 0, 0},
        {"{\"text\" : [ ] }", "", 0, 0, 0},
        {"{\"text\" : [ \"a\" ,\t\"b\" ] , \"id\": [1]}", "a\0b", 3, 2, 0},
        {"{\"text\":[\"\\u0000\", \"\xC3\xA9\\uD83D\\uDE00\"]}", "\0\0\xC3\xA9\xF0\x9F\x98\x80", 8,
         2, 0},
        {"{\"text\":\"s\",\"text\":[\"l\"]}", "l", 1, 1, 0},  /* the last value wins */
        {"{\"text\":[1],\"text\":[\"ok\"]}", "ok", 2, 1, 0}, /* a bad list overridden */
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        MG_CHECK_OK(t, get_text(p, cases[i].line, &v));
        if (!list_is(&v, cases[i].want, cases[i].want_len, cases[i].n, cases[i].lone))
            mg_test_fail(t, __FILE__, __LINE__, "case %zu: %s", i, cases[i].line);
    }
    MG_CHECK_OK(t, get_text(p, "{\"text\":[\"l\"],\"text\":\"s\"}", &v));
    MG_CHECK(t, value_is(&v, "s", 1, 0));
    /* a string key and a list key together, and a key requested twice */
    const char *line = "{\"title\": [\"t1\", \"t2\"], \"text\": \"body\"}";
    const char *keys[] = {"text", "title", "title"};
    mg_jsonl_value vs[3];
    MG_CHECK_OK(t, mg_jsonl_extract(p, line, strlen(line), keys, 3, vs));
    MG_CHECK(t, value_is(&vs[0], "body", 4, 0));
    MG_CHECK(t, list_is(&vs[1], "t1\0t2", 5, 2, 0));
    MG_CHECK(t, list_is(&vs[2], "t1\0t2", 5, 2, 0));
    mg_jsonl_free(p);
}

MG_TEST(jsonl_list_errors)
{
    static const struct {
        const char *line, *msg;
    } cases[] = {
        {"{\"text\":[1]}", "key \"text\" item 1 is a number, expected a string"},
        {"{\"text\":[\"a\",\"b\",null]}", "key \"text\" item 3 is null, expected a string"},
        {"{\"text\":[\"a\",[\"b\"]]}", "key \"text\" item 2 is an array, expected a string"},
        {"{\"text\":[\"a\",{}, 1]}", "key \"text\" item 2 is an object, expected a string"},
        {"{\"text\":[true]}", "key \"text\" item 1 is a boolean, expected a string"},
        {"{\"text\":[NaN]}", "key \"text\" item 1 is a number, expected a string"},
        {"{\"text\":[\"a\"],\"text\":{}}", "key \"text\" is an object, expected a string"},
        /* syntax errors come first, with Python's columns */
        {"{\"text\":[\"a\",]}", "invalid JSON at column 14: expecting value"},
        {"{\"text\":[\"a\",1,]}", "invalid JSON at column 16: expecting value"},
        {"{\"text\":[\"a\" \"b\"]}", "invalid JSON at column 14: expecting ',' delimiter"},
        {"{\"text\":[\"a\"", "invalid JSON at column 13: expecting ',' delimiter"},
        {"{\"text\":[", "invalid JSON at column 10: expecting value"},
        {"{\"text\":[1], x}", "invalid JSON at column 14: expecting property name enclosed"},
        {"{\"text\":[\"a\\x\"]}", "invalid JSON at column 12: invalid \\escape"},
        {"{\"text\": [ \"a\" , \"b\" ]", "invalid JSON at column 23: expecting ',' delimiter"},
        {"{\"text\":[\"\xC3\x28\"]}", "invalid UTF-8 at column 11"},
    };
    mg_jsonl *p;
    MG_CHECK_OK(t, mg_jsonl_create(&p));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mg_jsonl_value v;
        mg_status st = get_text(p, cases[i].line, &v);
        if (st != MG_ERR_FORMAT || strncmp(mg_last_error(), cases[i].msg, strlen(cases[i].msg)))
            mg_test_fail(t, __FILE__, __LINE__, "case %zu: got %d \"%s\", want \"%s\"", i,
                         (int)st, mg_last_error(), cases[i].msg);
    }
    /* nesting inside a requested list has the same limit: {"text":[[...]]} */
    for (size_t depth = 2047; depth <= 2048; depth++) {
        char *deep = malloc(2 * depth + 16);
        memcpy(deep, "{\"text\":", 8);
        memset(deep + 8, '[', depth);
        memset(deep + 8 + depth, ']', depth);
        strcpy(deep + 8 + 2 * depth, "}");
        mg_jsonl_value v;
        MG_CHECK_ERR(t, get_text(p, deep, &v), MG_ERR_FORMAT,
                     depth == 2047 ? "key \"text\" item 1 is an array" : "nesting too deep");
        free(deep);
    }
    mg_jsonl_free(p);
}

MG_TEST(jsonl_long_lists_and_buffer_reuse)
{
    mg_jsonl *p;
    MG_CHECK_OK(t, mg_jsonl_create(&p));
    size_t n = 5000;
    char *line = malloc(n * 40 + 64);
    size_t k = (size_t)sprintf(line, "{\"text\": [");
    for (size_t i = 0; i < n; i++)
        k += (size_t)sprintf(line + k, "%s\"sentence %zu%s\"", i ? ", " : "", i,
                             i % 3 ? "" : " \\u00e9\\n");
    strcpy(line + k, "]}");
    mg_jsonl_value v;
    MG_CHECK_OK(t, get_text(p, line, &v));
    MG_CHECK(t, v.is_list && v.n_items == n);
    int bad = 0;
    for (size_t i = 0; i < n && v.is_list && v.n_items == n; i++) {
        char want[64];
        int wl = snprintf(want, sizeof want, "sentence %zu%s", i, i % 3 ? "" : " \xC3\xA9\n");
        const mg_jsonl_item *it = &v.items[i];
        bad += it->len != (size_t)wl || memcmp(it->str, want, (size_t)wl) || it->str[wl];
    }
    MG_CHECK_EQ_INT(t, bad, 0);
    MG_CHECK_OK(t, get_text(p, "{\"text\":[\"x\"]}", &v));
    MG_CHECK(t, list_is(&v, "x", 1, 1, 0));
    MG_CHECK_OK(t, get_text(p, "{\"text\":\"short\"}", &v));
    MG_CHECK(t, value_is(&v, "short", 5, 0));
    free(line);
    mg_jsonl_free(p);
}

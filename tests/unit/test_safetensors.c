/* test_safetensors.c — unit tests for mg/safetensors.h and mg/tensor.h: writer layout and
 * bytes, round trips (scalars, empty tensors, metadata, chunked streaming), every reader
 * validation error and the writer's usage errors. */
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

#include "harness.h"
#include "mg/safetensors.h"

/* Writes u64 LE len(json) + json + data_len bytes (value i & 0xff) and returns the path. */
static const char *make_st(mg_test_ctx *t, const char *name, const char *json, size_t data_len)
{
    size_t n = strlen(json);
    uint8_t *buf = malloc(8 + n + data_len + 1);
    for (int i = 0; i < 8; i++) buf[i] = (uint8_t)((uint64_t)n >> (8 * i));
    memcpy(buf + 8, json, n);
    for (size_t i = 0; i < data_len; i++) buf[8 + n + i] = (uint8_t)i;
    const char *p = mg_test_write_file(t, name, buf, 8 + n + data_len);
    free(buf);
    return p;
}

/* Expects mg_st_open on a file with this header to fail with st and message sub. */
static void expect_bad(mg_test_ctx *t, const char *json, size_t data_len, mg_status st,
                       const char *sub)
{
    mg_st_file *f = (mg_st_file *)1;
    MG_CHECK_ERR(t, mg_st_open(&f, make_st(t, "bad.safetensors", json, data_len)), st, sub);
    MG_CHECK(t, f == NULL);
    MG_CHECK(t, strstr(mg_last_error(), "bad.safetensors") != NULL);
}

MG_TEST(tensor_dtype_names)
{
    for (int i = 0; i < MG_TD_COUNT; i++) {
        MG_CHECK_EQ_INT(t, mg_tdtype_from_name(mg_tdtype_name((mg_tdtype)i)), i);
        MG_CHECK(t, mg_tdtype_size((mg_tdtype)i) > 0);
    }
    MG_CHECK_EQ_STR(t, mg_tdtype_name(MG_TD_BF16), "BF16");
    MG_CHECK_EQ_STR(t, mg_tdtype_name(MG_TD_F8_E4M3), "F8_E4M3");
    MG_CHECK_EQ_INT(t, mg_tdtype_size(MG_TD_I64), 8);
    MG_CHECK_EQ_INT(t, mg_tdtype_size(MG_TD_BOOL), 1);
    MG_CHECK_EQ_INT(t, mg_tdtype_size(MG_TD_INVALID), 0);
    MG_CHECK_EQ_INT(t, mg_tdtype_size(MG_TD_COUNT), 0);
    MG_CHECK_EQ_STR(t, mg_tdtype_name(MG_TD_COUNT), "invalid");
    MG_CHECK_EQ_INT(t, mg_tdtype_from_name("bf16"), MG_TD_INVALID);
    MG_CHECK_EQ_INT(t, mg_tdtype_from_name("C64"), MG_TD_INVALID);
    MG_CHECK_EQ_INT(t, mg_tdtype_from_name(NULL), MG_TD_INVALID);
}

/* The layout and header bytes the Python library writes for
 * {"b": f32[2], "a": bf16 scalar, "e": i64[0,3]} with metadata {"format": "pt"}. */
MG_TEST(st_writer_exact_bytes)
{
    const char *path = mg_test_path(t, "x.safetensors");
    mg_st_writer *w;
    MG_CHECK_OK(t, mg_st_writer_create(&w, path));
    int64_t s2[] = {2}, s03[] = {0, 3};
    MG_CHECK_OK(t, mg_st_writer_meta(w, "format", "pt"));
    MG_CHECK_OK(t, mg_st_writer_declare(w, "b", MG_TD_F32, 1, s2));
    MG_CHECK_OK(t, mg_st_writer_declare(w, "a", MG_TD_BF16, 0, NULL));
    MG_CHECK_OK(t, mg_st_writer_declare(w, "e", MG_TD_I64, 2, s03));
    MG_CHECK_OK(t, mg_st_writer_begin(w));
    MG_CHECK_EQ_STR(t, mg_st_writer_order(w, 0), "e");
    MG_CHECK_EQ_STR(t, mg_st_writer_order(w, 1), "b");
    MG_CHECK_EQ_STR(t, mg_st_writer_order(w, 2), "a");
    MG_CHECK(t, mg_st_writer_order(w, 3) == NULL);
    MG_CHECK_EQ_STR(t, mg_st_writer_next(w, NULL, NULL), "b"); /* e is empty: never due */
    const float b[2] = {1.0f, 2.0f};
    const uint8_t a[2] = {0x80, 0x3f};
    MG_CHECK_OK(t, mg_st_writer_tensor(w, "b", b, sizeof b));
    MG_CHECK_OK(t, mg_st_writer_tensor(w, "e", NULL, 0));
    MG_CHECK_OK(t, mg_st_writer_tensor(w, "a", a, 2));
    MG_CHECK(t, mg_st_writer_next(w, NULL, NULL) == NULL);
    MG_CHECK_OK(t, mg_st_writer_finish(w));
    mg_st_writer_free(w);
    const char *hdr = "{\"__metadata__\":{\"format\":\"pt\"},"
                      "\"e\":{\"dtype\":\"I64\",\"shape\":[0,3],\"data_offsets\":[0,0]},"
                      "\"b\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,8]},"
                      "\"a\":{\"dtype\":\"BF16\",\"shape\":[],\"data_offsets\":[8,10]}}      ";
    size_t len;
    char *got = mg_test_read_file(path, &len);
    MG_CHECK(t, got != NULL);
    if (!got) return;
    MG_CHECK_EQ_INT(t, len, 8 + 200 + 10);
    MG_CHECK_EQ_INT(t, (uint8_t)got[0], 200);
    MG_CHECK(t, memcmp(got + 8, hdr, 200) == 0);
    MG_CHECK(t, memcmp(got + 208, b, 8) == 0 && memcmp(got + 216, a, 2) == 0);
    free(got);
}

MG_TEST(st_writer_escapes_like_serde)
{
    const char *path = mg_test_path(t, "esc.safetensors");
    mg_st_writer *w;
    MG_CHECK_OK(t, mg_st_writer_create(&w, path));
    MG_CHECK_OK(t, mg_st_writer_meta(w, "k\"\\/\x01\x1f\t\n\r\b\f", "\xc3\xa9\xe2\x82\xac\x7f"));
    MG_CHECK_OK(t, mg_st_writer_begin(w));
    MG_CHECK_OK(t, mg_st_writer_finish(w));
    mg_st_writer_free(w);
    const char *want = "{\"__metadata__\":{\"k\\\"\\\\/\\u0001\\u001f\\t\\n\\r\\b\\f\":"
                       "\"\xc3\xa9\xe2\x82\xac\x7f\"}}";
    size_t len;
    char *got = mg_test_read_file(path, &len);
    MG_CHECK(t, got && len % 8 == 0 && len >= 8 + strlen(want));
    if (!got) return;
    MG_CHECK(t, memcmp(got + 8, want, strlen(want)) == 0);
    free(got);
    mg_st_file *f;
    MG_CHECK_OK(t, mg_st_open(&f, path));
    if (!f) return;
    MG_CHECK_EQ_STR(t, mg_st_meta_get(f, "k\"\\/\x01\x1f\t\n\r\b\f"), "\xc3\xa9\xe2\x82\xac\x7f");
    MG_CHECK_EQ_INT(t, mg_st_count(f), 0);
    mg_st_close(f);
}

/* Declares a mixed set, writes it chunked (pieces span tensors; vec: each chunk as three
 * iovec pieces, one empty, by mg_st_writer_writev), reads it back. */
static void round_trip(mg_test_ctx *t, size_t chunk, int vec)
{
    const char *path = mg_test_path(t, "rt.safetensors");
    static const struct {
        const char *name;
        mg_tdtype dt;
        int ndim;
        int64_t shape[3];
    } decl[] = {
        {"model.layers.0.weight", MG_TD_F16, 2, {3, 5, 0}},
        {"scalar", MG_TD_F64, 0, {0, 0, 0}},
        {"empty", MG_TD_F32, 1, {0, 0, 0}},
        {"ids", MG_TD_I32, 1, {7, 0, 0}},
        {"mask", MG_TD_BOOL, 3, {2, 1, 3}},
        {"fp8", MG_TD_F8_E4M3, 1, {5, 0, 0}},
        {"big", MG_TD_I64, 2, {4, 4, 0}},
    };
    const size_t nd = sizeof decl / sizeof *decl;
    mg_st_writer *w;
    MG_CHECK_OK(t, mg_st_writer_create(&w, path));
    MG_CHECK_OK(t, mg_st_writer_meta(w, "format", "pt"));
    MG_CHECK_OK(t, mg_st_writer_meta(w, "second", "two"));
    for (size_t i = 0; i < nd; i++)
        MG_CHECK_OK(t, mg_st_writer_declare(w, decl[i].name, decl[i].dt, decl[i].ndim,
                                            decl[i].shape));
    MG_CHECK_OK(t, mg_st_writer_begin(w));
    /* total = 30 + 8 + 0 + 28 + 6 + 5 + 128 bytes, value = running byte index */
    uint8_t data[205];
    for (size_t i = 0; i < sizeof data; i++) data[i] = (uint8_t)(i * 7 + 1);
    for (size_t off = 0; off < sizeof data; off += chunk) {
        size_t k = sizeof data - off < chunk ? sizeof data - off : chunk;
        struct iovec v[3] = {{data + off, k / 3}, {data, 0}, {data + off + k / 3, k - k / 3}};
        if (vec) MG_CHECK_OK(t, mg_st_writer_writev(w, v, 3));
        else MG_CHECK_OK(t, mg_st_writer_write(w, data + off, k));
    }
    struct iovec one = {data, 1};
    MG_CHECK_ERR(t, mg_st_writer_writev(w, &one, 1), MG_ERR_ARG, "past the end");
    MG_CHECK_ERR(t, mg_st_writer_write(w, data, 1), MG_ERR_ARG, "past the end");
    MG_CHECK_OK(t, mg_st_writer_finish(w));
    mg_st_writer_free(w);

    mg_st_file *f;
    MG_CHECK_OK(t, mg_st_open(&f, path));
    if (!f) return;
    MG_CHECK_EQ_INT(t, mg_st_count(f), nd);
    MG_CHECK_EQ_INT(t, mg_st_header_len(f) % 8, 0);
    /* layout: I64, F64, I32, F16, F8_E4M3, BOOL; empty F32 sorts between F64 and I32 */
    static const char *order[] = {"big", "scalar", "empty", "ids", "model.layers.0.weight",
                                  "fp8", "mask"};
    uint64_t off = 0;
    for (size_t i = 0; i < nd; i++) {
        const mg_st_tensor *x = mg_st_at(f, i);
        MG_CHECK_EQ_STR(t, x->name, order[i]);
        MG_CHECK_EQ_INT(t, x->offset, off);
        MG_CHECK(t, x->nbytes == 0 || memcmp(x->data, data + off, x->nbytes) == 0);
        MG_CHECK(t, mg_st_find(f, x->name) == x);
        off += x->nbytes;
    }
    const mg_st_tensor *x;
    MG_CHECK_OK(t, mg_st_get(f, "mask", &x));
    MG_CHECK(t, x && x->ndim == 3 && x->shape[0] == 2 && x->shape[1] == 1 && x->shape[2] == 3);
    MG_CHECK(t, x && x->dtype == MG_TD_BOOL && x->numel == 6 && x->nbytes == 6);
    MG_CHECK_OK(t, mg_st_get(f, "scalar", &x));
    MG_CHECK(t, x && x->ndim == 0 && x->numel == 1 && x->nbytes == 8);
    MG_CHECK_OK(t, mg_st_get(f, "empty", &x));
    MG_CHECK(t, x && x->ndim == 1 && x->numel == 0 && x->nbytes == 0);
    MG_CHECK_ERR(t, mg_st_get(f, "nope", &x), MG_ERR_NOTFOUND, "no tensor \"nope\"");
    MG_CHECK(t, mg_st_find(f, "nope") == NULL && mg_st_find(f, "") == NULL);
    MG_CHECK_EQ_INT(t, mg_st_meta_count(f), 2);
    const char *k, *v;
    mg_st_meta_at(f, 1, &k, &v);
    MG_CHECK_EQ_STR(t, k, "second");
    MG_CHECK_EQ_STR(t, v, "two");
    MG_CHECK_EQ_STR(t, mg_st_meta_get(f, "format"), "pt");
    MG_CHECK(t, mg_st_meta_get(f, "absent") == NULL);
    mg_st_close(f);
}

MG_TEST(st_round_trip_chunked)
{
    round_trip(t, 1, 0);
    round_trip(t, 13, 0);
    round_trip(t, 4096, 0);
    round_trip(t, 13, 1);
    round_trip(t, 4096, 1);
}

MG_TEST(st_empty_file_of_tensors)
{
    const char *path = mg_test_path(t, "none.safetensors");
    mg_st_writer *w;
    MG_CHECK_OK(t, mg_st_writer_create(&w, path));
    MG_CHECK_OK(t, mg_st_writer_begin(w));
    MG_CHECK(t, mg_st_writer_next(w, NULL, NULL) == NULL);
    MG_CHECK_OK(t, mg_st_writer_finish(w));
    mg_st_writer_free(w);
    size_t len;
    char *got = mg_test_read_file(path, &len);
    MG_CHECK(t, got && len == 16 && memcmp(got + 8, "{}      ", 8) == 0);
    free(got);
    mg_st_file *f;
    MG_CHECK_OK(t, mg_st_open(&f, path));
    MG_CHECK(t, f && mg_st_count(f) == 0 && mg_st_meta_count(f) == 0);
    mg_st_close(f);
}

MG_TEST(st_reader_accepts_unsorted_header_and_ties)
{
    /* header order differs from offset order; two empty tensors share offset 4 */
    const char *json = "{\"z\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[4,6],\"x\":1},"
                       "\"e2\":{\"dtype\":\"F32\",\"shape\":[0],\"data_offsets\":[4,4]},"
                       "\"__metadata__\":null,"
                       "\"a\":{\"dtype\":\"I16\",\"shape\":[2],\"data_offsets\":[0,4]},"
                       "\"e1\":{\"dtype\":\"F32\",\"shape\":[3,0],\"data_offsets\":[4,4]}}";
    mg_st_file *f;
    MG_CHECK_OK(t, mg_st_open(&f, make_st(t, "u.safetensors", json, 6)));
    if (!f) return;
    static const char *order[] = {"a", "e2", "e1", "z"};
    for (size_t i = 0; i < 4; i++) MG_CHECK_EQ_STR(t, mg_st_at(f, i)->name, order[i]);
    const mg_st_tensor *z = mg_st_find(f, "z");
    MG_CHECK(t, z && ((const uint8_t *)z->data)[0] == 4 && ((const uint8_t *)z->data)[1] == 5);
    MG_CHECK_EQ_INT(t, mg_st_meta_count(f), 0);
    mg_st_close(f);
    /* the same bytes through the in-memory entry point */
    size_t len;
    char *buf = mg_test_read_file(mg_test_path(t, "u.safetensors"), &len);
    MG_CHECK_OK(t, mg_st_open_mem(&f, buf, len, "mem"));
    MG_CHECK(t, f && mg_st_count(f) == 4 && strcmp(mg_st_path(f), "mem") == 0);
    mg_st_close(f);
    free(buf);
}

MG_TEST(st_reader_header_errors)
{
    mg_st_file *f;
    const char *p = mg_test_write_file(t, "short.safetensors", "\x02\0\0", 3);
    MG_CHECK_ERR(t, mg_st_open(&f, p), MG_ERR_FORMAT, "too short");
    p = mg_test_write_file(t, "empty.safetensors", "", 0);
    MG_CHECK_ERR(t, mg_st_open(&f, p), MG_ERR_FORMAT, "too short");
    p = mg_test_write_file(t, "huge.safetensors", "\0\xe2\xf5\x05\0\0\0\0{}", 10);
    MG_CHECK_ERR(t, mg_st_open(&f, p), MG_ERR_FORMAT, "exceeds the limit");
    p = mg_test_write_file(t, "past.safetensors", "\x09\0\0\0\0\0\0\0{}      ", 16);
    MG_CHECK_ERR(t, mg_st_open(&f, p), MG_ERR_FORMAT, "runs past the end");
    MG_CHECK_ERR(t, mg_st_open(&f, mg_test_path(t, "missing")), MG_ERR_NOTFOUND, "missing");
    expect_bad(t, "{\"a\":", 0, MG_ERR_FORMAT, "invalid JSON");
    expect_bad(t, "[]", 0, MG_ERR_FORMAT, "not a JSON object");
    expect_bad(t, "{} x", 0, MG_ERR_FORMAT, "invalid JSON");
    p = mg_test_write_file(t, "nul.safetensors", "\x08\0\0\0\0\0\0\0{}\0     ", 16);
    MG_CHECK_ERR(t, mg_st_open(&f, p), MG_ERR_FORMAT, "invalid JSON");
    expect_bad(t, "{\"\xff\":1}", 0, MG_ERR_FORMAT, "invalid JSON");
    expect_bad(t, "{\"__metadata__\":[]}", 0, MG_ERR_FORMAT, "\"__metadata__\" is not an object");
    expect_bad(t, "{\"__metadata__\":{\"a\":1}}", 0, MG_ERR_FORMAT,
               "value of \"a\" is not a string");
    expect_bad(t, "{\"t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1]},"
               "\"t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}", 2,
               MG_ERR_FORMAT, "invalid JSON");
}

MG_TEST(st_reader_tensor_errors)
{
    expect_bad(t, "{\"t\":[]}", 0, MG_ERR_FORMAT, "tensor \"t\": entry is not an object");
    expect_bad(t, "{\"t\":{\"shape\":[],\"data_offsets\":[0,1]}}", 1, MG_ERR_FORMAT,
               "tensor \"t\": \"dtype\" missing");
    expect_bad(t, "{\"t\":{\"dtype\":\"f32\",\"shape\":[],\"data_offsets\":[0,4]}}", 4,
               MG_ERR_FORMAT, "unknown dtype \"f32\"");
    expect_bad(t, "{\"t\":{\"dtype\":\"C64\",\"shape\":[],\"data_offsets\":[0,8]}}", 8,
               MG_ERR_UNSUPPORTED, "dtype C64");
    expect_bad(t, "{\"t\":{\"dtype\":\"U8\",\"data_offsets\":[0,1]}}", 1, MG_ERR_FORMAT,
               "\"shape\" missing or not an array");
    expect_bad(t, "{\"t\":{\"dtype\":\"U8\",\"shape\":[-1],\"data_offsets\":[0,1]}}", 1,
               MG_ERR_FORMAT, "shape[0] is not a non-negative integer");
    expect_bad(t, "{\"t\":{\"dtype\":\"U8\",\"shape\":[1,1.0],\"data_offsets\":[0,1]}}", 1,
               MG_ERR_FORMAT, "shape[1] is not");
    expect_bad(t, "{\"t\":{\"dtype\":\"U8\",\"shape\":[4294967296,4294967296,0],"
               "\"data_offsets\":[0,0]}}", 0, MG_ERR_FORMAT,
               "tensor \"t\": shape product overflows");
    expect_bad(t, "{\"t\":{\"dtype\":\"I64\",\"shape\":[4611686018427387904],"
               "\"data_offsets\":[0,0]}}", 0, MG_ERR_FORMAT, "byte size overflows");
    expect_bad(t, "{\"t\":{\"dtype\":\"U8\",\"shape\":[1]}}", 1, MG_ERR_FORMAT,
               "\"data_offsets\" is not an array of 2");
    expect_bad(t, "{\"t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,1,2]}}", 1,
               MG_ERR_FORMAT, "\"data_offsets\" is not an array of 2");
    expect_bad(t, "{\"t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[0,\"1\"]}}", 1,
               MG_ERR_FORMAT, "\"data_offsets\" is not an array of 2");
    expect_bad(t, "{\"t\":{\"dtype\":\"U8\",\"shape\":[0],\"data_offsets\":[1,0]}}", 1,
               MG_ERR_FORMAT, "end before they begin");
    expect_bad(t, "{\"t\":{\"dtype\":\"F32\",\"shape\":[2],\"data_offsets\":[0,4]}}", 4,
               MG_ERR_FORMAT,
               "tensor \"t\": data_offsets hold 4 bytes but 2 elements of F32 need 8");
}

MG_TEST(st_reader_layout_errors)
{
    expect_bad(t, "{\"t\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[1,2]}}", 2,
               MG_ERR_FORMAT, "tensor \"t\": data_offsets begin at 1, expected 0");
    expect_bad(t, "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
               "\"b\":{\"dtype\":\"U8\",\"shape\":[1],\"data_offsets\":[3,4]}}", 4,
               MG_ERR_FORMAT, "tensor \"b\": data_offsets begin at 3, expected 2");
    expect_bad(t, "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]},"
               "\"b\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[1,3]}}", 3,
               MG_ERR_FORMAT, "tensor \"b\": data_offsets begin at 1, expected 2");
    expect_bad(t, "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 1,
               MG_ERR_FORMAT, "tensor \"a\": data_offsets end at 2, past the data section (1");
    expect_bad(t, "{\"a\":{\"dtype\":\"U8\",\"shape\":[2],\"data_offsets\":[0,2]}}", 3,
               MG_ERR_FORMAT, "the tensors cover 2 bytes but the data section holds 3");
    expect_bad(t, "{}", 1, MG_ERR_FORMAT, "cover 0 bytes but the data section holds 1");
}

MG_TEST(st_writer_usage_errors)
{
    const char *path = mg_test_path(t, "w.safetensors");
    mg_st_writer *w;
    int64_t s[] = {2, -1};
    MG_CHECK_OK(t, mg_st_writer_create(&w, path));
    MG_CHECK_ERR(t, mg_st_writer_write(w, "x", 1), MG_ERR_ARG, "before the header");
    MG_CHECK_ERR(t, mg_st_writer_declare(w, "__metadata__", MG_TD_U8, 0, NULL), MG_ERR_ARG,
                 "cannot name a tensor");
    MG_CHECK_ERR(t, mg_st_writer_declare(w, "n", MG_TD_U8, 2, s), MG_ERR_ARG, "negative dimension");
    MG_CHECK_ERR(t, mg_st_writer_declare(w, "n", MG_TD_INVALID, 0, NULL), MG_ERR_ARG,
                 "invalid dtype");
    MG_CHECK_ERR(t, mg_st_writer_declare(w, "n\xff", MG_TD_U8, 0, NULL), MG_ERR_ARG,
                 "not valid UTF-8");
    int64_t big[] = {INT64_MAX, 4};
    MG_CHECK_ERR(t, mg_st_writer_declare(w, "n", MG_TD_U8, 2, big), MG_ERR_LIMIT, "overflows");
    MG_CHECK_OK(t, mg_st_writer_meta(w, "format", "pt"));
    MG_CHECK_ERR(t, mg_st_writer_meta(w, "format", "np"), MG_ERR_ARG, "given twice");
    s[1] = 2;
    MG_CHECK_OK(t, mg_st_writer_declare(w, "a", MG_TD_U8, 2, s));
    MG_CHECK_OK(t, mg_st_writer_declare(w, "b", MG_TD_U8, 1, s));
    MG_CHECK_OK(t, mg_st_writer_begin(w));
    MG_CHECK_ERR(t, mg_st_writer_begin(w), MG_ERR_ARG, "after the header");
    MG_CHECK_ERR(t, mg_st_writer_declare(w, "c", MG_TD_U8, 0, NULL), MG_ERR_ARG,
                 "after the header");
    MG_CHECK_ERR(t, mg_st_writer_meta(w, "x", "y"), MG_ERR_ARG, "after the header");
    MG_CHECK_ERR(t, mg_st_writer_tensor(w, "b", "xy", 2), MG_ERR_ARG,
                 "tensor \"b\" written where tensor \"a\" is due");
    MG_CHECK_ERR(t, mg_st_writer_tensor(w, "a", "xyz", 3), MG_ERR_ARG, "3 bytes given, 4 declared");
    MG_CHECK_OK(t, mg_st_writer_write(w, "xy", 2));
    uint64_t nb = 0, rem = 0;
    MG_CHECK_EQ_STR(t, mg_st_writer_next(w, &nb, &rem), "a");
    MG_CHECK(t, nb == 4 && rem == 2);
    MG_CHECK_ERR(t, mg_st_writer_tensor(w, "a", "xyzw", 4), MG_ERR_ARG, "is due");
    MG_CHECK_ERR(t, mg_st_writer_finish(w), MG_ERR_ARG, "tensor \"a\" incomplete: 2 of 4 bytes");
    mg_st_writer_free(w); /* uncommitted: nothing under the final name */
    MG_CHECK(t, access(path, F_OK) != 0);

    MG_CHECK_OK(t, mg_st_writer_create(&w, path));
    MG_CHECK_OK(t, mg_st_writer_declare(w, "a", MG_TD_U8, 0, NULL));
    MG_CHECK_OK(t, mg_st_writer_declare(w, "a", MG_TD_F32, 0, NULL));
    MG_CHECK_ERR(t, mg_st_writer_begin(w), MG_ERR_ARG, "tensor \"a\" declared twice");
    mg_st_writer_free(w);
    MG_CHECK(t, access(path, F_OK) != 0);
    mg_st_writer_free(NULL);
    mg_st_close(NULL);
}

MG_TEST(st_index_write_exact_and_read)
{
    const char *path = mg_test_path(t, "model.safetensors.index.json");
    const char *names[] = {"lm_head.weight", "b\xc3\xa9\"\x7f", "a\xf0\x9f\x98\x80\n"};
    const char *files[] = {"model-00002-of-00002.safetensors", "model-00001-of-00002.safetensors",
                           "model-00001-of-00002.safetensors"};
    MG_CHECK_OK(t, mg_st_index_write(path, names, files, 3, 1234, 617));
    const char *want = "{\n  \"metadata\": {\n    \"total_parameters\": 617,\n"
                       "    \"total_size\": 1234\n  },\n  \"weight_map\": {\n"
                       "    \"a\\ud83d\\ude00\\n\": \"model-00001-of-00002.safetensors\",\n"
                       "    \"b\\u00e9\\\"\\u007f\": \"model-00001-of-00002.safetensors\",\n"
                       "    \"lm_head.weight\": \"model-00002-of-00002.safetensors\"\n  }\n}\n";
    size_t len;
    char *got = mg_test_read_file(path, &len);
    MG_CHECK_EQ_STR(t, got, want);
    free(got);
    mg_st_index *ix;
    MG_CHECK_OK(t, mg_st_index_open(&ix, path));
    if (!ix) return;
    MG_CHECK_EQ_INT(t, mg_st_index_count(ix), 3);
    MG_CHECK_EQ_INT(t, mg_st_index_total_size(ix), 1234);
    MG_CHECK_EQ_INT(t, mg_st_index_total_parameters(ix), 617);
    MG_CHECK_EQ_INT(t, mg_st_index_nfiles(ix), 2);
    MG_CHECK_EQ_STR(t, mg_st_index_file(ix, 0), "model-00001-of-00002.safetensors");
    MG_CHECK_EQ_STR(t, mg_st_index_file(ix, 1), "model-00002-of-00002.safetensors");
    MG_CHECK_EQ_STR(t, mg_st_index_file_of(ix, "b\xc3\xa9\"\x7f"),
                    "model-00001-of-00002.safetensors");
    MG_CHECK(t, mg_st_index_file_of(ix, "missing") == NULL);
    const char *n, *f;
    mg_st_index_at(ix, 0, &n, &f);
    MG_CHECK_EQ_STR(t, n, "a\xf0\x9f\x98\x80\n");
    mg_st_index_free(ix);
    mg_st_index_free(NULL);

    MG_CHECK_OK(t, mg_st_index_write(path, NULL, NULL, 0, 0, -1));
    got = mg_test_read_file(path, &len);
    MG_CHECK_EQ_STR(t, got, "{\n  \"metadata\": {\n    \"total_size\": 0\n  },\n"
                            "  \"weight_map\": {}\n}\n");
    free(got);
    MG_CHECK_OK(t, mg_st_index_open(&ix, path));
    MG_CHECK(t, ix && mg_st_index_count(ix) == 0 && mg_st_index_nfiles(ix) == 0 &&
                    mg_st_index_total_parameters(ix) == -1);
    mg_st_index_free(ix);
}

MG_TEST(st_index_errors)
{
    const char *names[] = {"a", "a"}, *files[] = {"x", "y"};
    const char *path = mg_test_path(t, "i.json");
    MG_CHECK_ERR(t, mg_st_index_write(path, names, files, 2, 0, -1), MG_ERR_ARG,
                 "tensor \"a\" listed twice");
    MG_CHECK(t, access(path, F_OK) != 0);
    const char *bad_utf8[] = {"\xff"};
    MG_CHECK_ERR(t, mg_st_index_write(path, bad_utf8, files, 1, 0, -1), MG_ERR_ARG,
                 "not valid UTF-8");
    MG_CHECK(t, access(path, F_OK) != 0);
    static const struct {
        const char *json, *sub;
    } cases[] = {
        {"{\"weight_map\":", "invalid JSON"},
        {"[]", "not a JSON object"},
        {"{}", "\"weight_map\" missing"},
        {"{\"weight_map\":[]}", "\"weight_map\" missing or not an object"},
        {"{\"weight_map\":{\"a\":1}}", "weight_map[\"a\"] is not a string"},
        {"{\"weight_map\":{\"a\":\"../x.safetensors\"}}", "is not a plain file name"},
        {"{\"weight_map\":{\"a\":\"..\"}}", "is not a plain file name"},
        {"{\"weight_map\":{\"a\":\"\"}}", "is not a plain file name"},
        {"{\"weight_map\":{\"a\":\"x\",\"a\":\"y\"}}", "duplicate"},
        {"{\"metadata\":[],\"weight_map\":{}}", "\"metadata\" is not an object"},
        {"{\"metadata\":{\"total_size\":-1},\"weight_map\":{}}", "total_size is not"},
        {"{\"metadata\":{\"total_parameters\":\"1\"},\"weight_map\":{}}",
         "total_parameters is not"},
    };
    mg_st_index *ix;
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        const char *p =
            mg_test_write_file(t, "bad.index.json", cases[i].json, strlen(cases[i].json));
        MG_CHECK_ERR(t, mg_st_index_open(&ix, p), MG_ERR_FORMAT, cases[i].sub);
        MG_CHECK(t, strstr(mg_last_error(), "bad.index.json") != NULL);
    }
    MG_CHECK_ERR(t, mg_st_index_open(&ix, mg_test_path(t, "nope.json")), MG_ERR_NOTFOUND,
                 "nope.json");
    const char *ok = "{\"metadata\":{\"total_size\":5,\"extra\":\"x\"},"
                     "\"weight_map\":{\"a\":\"s.safetensors\"}}";
    MG_CHECK_OK(t, mg_st_index_open(&ix, mg_test_write_file(t, "ok.json", ok, strlen(ok))));
    MG_CHECK(t, ix && mg_st_index_total_size(ix) == 5 && mg_st_index_total_parameters(ix) == -1);
    mg_st_index_free(ix);
}

MG_TEST(st_shard_name)
{
    char buf[64];
    MG_CHECK_OK(t, mg_st_shard_name(buf, sizeof buf, 1, 4));
    MG_CHECK_EQ_STR(t, buf, "model-00001-of-00004.safetensors");
    MG_CHECK_OK(t, mg_st_shard_name(buf, sizeof buf, 123456, 123456));
    MG_CHECK_EQ_STR(t, buf, "model-123456-of-123456.safetensors");
    MG_CHECK_ERR(t, mg_st_shard_name(buf, sizeof buf, 0, 4), MG_ERR_ARG, "invalid shard");
    MG_CHECK_ERR(t, mg_st_shard_name(buf, sizeof buf, 5, 4), MG_ERR_ARG, "invalid shard");
    MG_CHECK_ERR(t, mg_st_shard_name(buf, 10, 1, 4), MG_ERR_LIMIT, "longer than");
}

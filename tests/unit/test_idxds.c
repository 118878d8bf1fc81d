/* test_idxds.c — unit tests for mg/idxds.h: the worked example of docs/FORMATS.md
 * §1.5 byte for byte (plain, merged twice, multimodal), every dtype, empty documents and
 * datasets, reading back, each validation error of the reader (and the same message from
 * add_index, which validates through mg_idx_view), add_index, merge of a directory (order,
 * stray file, empty dir), dtype mismatch, free without finish, and the bounded-memory
 * writer: output with tiny spill buffers byte-identical to the in-memory path, no spill
 * for small datasets, no temporary file left after finish, free or an error. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

#include "harness.h"
#include "dataset/idxds_internal.h"
#include "mg/idxds.h"

/* .idx of the §1.8 example: uint16, docs [10 20 50256] [] [1 2 | 3 50256]. */
static const uint8_t example_idx[] = {
    0x4d, 0x4d, 0x49, 0x44, 0x49, 0x44, 0x58, 0x00, 0x00, /* magic */
    1, 0, 0, 0, 0, 0, 0, 0,                               /* version */
    8,                                                    /* dtype uint16 */
    3, 0, 0, 0, 0, 0, 0, 0,                               /* S */
    4, 0, 0, 0, 0, 0, 0, 0,                               /* D */
    3, 0, 0, 0, 2, 0, 0, 0, 2, 0, 0, 0,                   /* lengths */
    0, 0, 0, 0, 0, 0, 0, 0, 6, 0, 0, 0, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0, 0, 0, /* pointers */
    0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0,       /* doc indices 0, 1 */
    1, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0,       /* doc indices 1, 3 */
};
static const uint8_t example_bin[] = {0x0a, 0x00, 0x14, 0x00, 0x50, 0xc4, 0x01,
                                      0x00, 0x02, 0x00, 0x03, 0x00, 0x50, 0xc4};

/* Number of entries in dir other than "." and "..". */
static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

static char *read_with_suffix(const char *prefix, const char *suffix, size_t *len)
{
    char path[600];
    snprintf(path, sizeof path, "%s%s", prefix, suffix);
    return mg_test_read_file(path, len);
}

/* Checks that prefix.SUFFIX holds exactly the n bytes at want. */
static void check_file(mg_test_ctx *t, const char *prefix, const char *suffix,
                       const void *want, size_t n)
{
    size_t len = 0;
    char *got = read_with_suffix(prefix, suffix, &len);
    MG_CHECK(t, got != NULL);
    MG_CHECK_EQ_INT(t, len, n);
    if (got && len == n) MG_CHECK(t, memcmp(got, want, n) == 0);
    free(got);
}

static void write_example(mg_test_ctx *t, const char *prefix)
{
    const int64_t d1[] = {10, 20, 50256}, d3[] = {1, 2, 3, 50256};
    const int32_t l1[] = {3}, l3[] = {2, 2};
    mg_idx_writer *w;
    MG_CHECK_OK(t, mg_idx_writer_create(&w, prefix, MG_DT_UINT16));
    if (!w) return;
    MG_CHECK_OK(t, mg_idx_writer_add_document(w, d1, 3, l1, 1));
    MG_CHECK_OK(t, mg_idx_writer_add_document(w, NULL, 0, NULL, 0));
    MG_CHECK_OK(t, mg_idx_writer_add_document(w, d3, 4, l3, 2));
    MG_CHECK_EQ_INT(t, mg_idx_writer_sequences(w), 3);
    MG_CHECK_EQ_INT(t, mg_idx_writer_documents(w), 3);
    MG_CHECK_EQ_INT(t, mg_idx_writer_tokens(w), 7);
    MG_CHECK_OK(t, mg_idx_writer_finish(w));
    mg_idx_writer_free(w);
}

/* Writes a dataset file by hand: prefix.SUFFIX with the given bytes. */
static const char *put(mg_test_ctx *t, const char *name, const void *data, size_t n)
{
    return mg_test_write_file(t, name, data, n);
}

MG_TEST(idx_worked_example_bytes)
{
    const char *p = mg_test_path(t, "ex");
    write_example(t, p);
    check_file(t, p, ".idx", example_idx, sizeof example_idx);
    check_file(t, p, ".bin", example_bin, sizeof example_bin);
}

MG_TEST(idx_worked_example_reads_back)
{
    const char *p = mg_test_path(t, "ex");
    write_example(t, p);
    mg_idx d;
    MG_CHECK_OK(t, mg_idx_open(&d, p));
    MG_CHECK_EQ_INT(t, d.dtype, MG_DT_UINT16);
    MG_CHECK_EQ_INT(t, d.elem_size, 2);
    MG_CHECK_EQ_INT(t, d.n_sequences, 3);
    MG_CHECK_EQ_INT(t, d.n_doc_indices, 4);
    MG_CHECK(t, d.modes == NULL);
    MG_CHECK_EQ_INT(t, d.bin_size, 14);
    if (d.n_sequences == 3) {
        MG_CHECK_EQ_INT(t, d.pointers[2], 10);
        MG_CHECK_EQ_INT(t, d.doc_index[2], 1);
        MG_CHECK_EQ_INT(t, mg_idx_token(&d, 0, 2), 50256);
        MG_CHECK_EQ_INT(t, mg_idx_token(&d, 2, 0), 3);
        MG_CHECK_EQ_INT(t, mg_idx_token(&d, 2, 1), 50256);
    }
    mg_idx_close(&d);
    MG_CHECK(t, d.priv_ == NULL && d.lengths == NULL);
    mg_idx_close(&d); /* closing twice is harmless */
}

MG_TEST(idx_merge_twice_example)
{
    const char *src = mg_test_path(t, "ex");
    write_example(t, src);
    char out[512];
    snprintf(out, sizeof out, "%s", mg_test_path(t, "merged"));
    mg_idx_writer *w;
    MG_CHECK_OK(t, mg_idx_writer_create(&w, out, MG_DT_UINT16));
    MG_CHECK_OK(t, mg_idx_writer_add_index(w, src));
    MG_CHECK_OK(t, mg_idx_writer_add_index(w, src));
    MG_CHECK_EQ_INT(t, mg_idx_writer_tokens(w), 14);
    MG_CHECK_EQ_INT(t, mg_idx_writer_documents(w), 6);
    MG_CHECK_OK(t, mg_idx_writer_finish(w));
    mg_idx_writer_free(w);
    mg_idx d;
    MG_CHECK_OK(t, mg_idx_open(&d, out));
    const int32_t lengths[] = {3, 2, 2, 3, 2, 2};
    const int64_t ptrs[] = {0, 6, 10, 14, 20, 24}, docs[] = {0, 1, 1, 3, 4, 4, 6};
    MG_CHECK_EQ_INT(t, d.n_sequences, 6);
    MG_CHECK_EQ_INT(t, d.n_doc_indices, 7);
    if (d.n_sequences == 6 && d.n_doc_indices == 7) {
        MG_CHECK(t, memcmp(d.lengths, lengths, sizeof lengths) == 0);
        MG_CHECK(t, memcmp(d.pointers, ptrs, sizeof ptrs) == 0);
        MG_CHECK(t, memcmp(d.doc_index, docs, sizeof docs) == 0);
        MG_CHECK(t, memcmp(d.bin, example_bin, 14) == 0);
        MG_CHECK(t, memcmp(d.bin + 14, example_bin, 14) == 0);
    }
    mg_idx_close(&d);
}

/* One dtype: the values survive a round trip and the first one has the expected bytes. */
static void check_dtype(mg_test_ctx *t, mg_dtype dt, const int64_t *vals, size_t n,
                        const void *first_bytes)
{
    char name[32];
    snprintf(name, sizeof name, "dt%d", (int)dt);
    const char *p = mg_test_path(t, name);
    int32_t lengths[2] = {(int32_t)(n / 2), (int32_t)(n - n / 2)};
    mg_idx_writer *w;
    MG_CHECK_OK(t, mg_idx_writer_create(&w, p, dt));
    MG_CHECK_OK(t, mg_idx_writer_add_document(w, vals, n, lengths, 2));
    MG_CHECK_OK(t, mg_idx_writer_finish(w));
    mg_idx_writer_free(w);
    mg_idx d;
    MG_CHECK_OK(t, mg_idx_open(&d, p));
    MG_CHECK_EQ_INT(t, d.dtype, dt);
    MG_CHECK_EQ_INT(t, d.bin_size, n * mg_dtype_size((int)dt));
    if (d.bin_size == n * mg_dtype_size((int)dt)) {
        MG_CHECK(t, memcmp(d.bin, first_bytes, d.elem_size) == 0);
        for (size_t i = 0; i < n; i++) {
            uint64_t seq = i < n / 2 ? 0 : 1, j = i < n / 2 ? i : i - n / 2;
            MG_CHECK_EQ_INT(t, mg_idx_token(&d, seq, j), vals[i]);
        }
    }
    mg_idx_close(&d);
}

MG_TEST(idx_every_dtype)
{
    const int64_t u8[] = {255, 0, 7, 128}, i8[] = {-1, -128, 127, 0};
    const int64_t i16[] = {-2, INT16_MIN, INT16_MAX, 5}, u16[] = {65535, 0, 1, 50256};
    const int64_t i32[] = {-3, INT32_MIN, INT32_MAX, 100000};
    const int64_t i64[] = {-4, INT64_MIN, INT64_MAX, 1};
    const int64_t f[] = {1, -2, 16777216, 1000000};
    const uint8_t b_u8[] = {0xff}, b_i8[] = {0xff}, b_i16[] = {0xfe, 0xff};
    const uint8_t b_u16[] = {0xff, 0xff}, b_i32[] = {0xfd, 0xff, 0xff, 0xff};
    const uint8_t b_i64[] = {0xfc, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff};
    const uint8_t b_f32[] = {0x00, 0x00, 0x80, 0x3f}; /* 1.0f */
    const uint8_t b_f64[] = {0, 0, 0, 0, 0, 0, 0xf0, 0x3f}; /* 1.0 */
    check_dtype(t, MG_DT_UINT8, u8, 4, b_u8);
    check_dtype(t, MG_DT_INT8, i8, 4, b_i8);
    check_dtype(t, MG_DT_INT16, i16, 4, b_i16);
    check_dtype(t, MG_DT_UINT16, u16, 4, b_u16);
    check_dtype(t, MG_DT_INT32, i32, 4, b_i32);
    check_dtype(t, MG_DT_INT64, i64, 4, b_i64);
    check_dtype(t, MG_DT_FLOAT32, f, 4, b_f32);
    check_dtype(t, MG_DT_FLOAT64, f, 4, b_f64);
}

MG_TEST(idx_dtype_tables)
{
    MG_CHECK_EQ_INT(t, mg_dtype_for_vocab(65499), MG_DT_UINT16);
    MG_CHECK_EQ_INT(t, mg_dtype_for_vocab(65500), MG_DT_INT32);
    MG_CHECK_EQ_INT(t, mg_dtype_for_vocab(50257), MG_DT_UINT16);
    MG_CHECK_EQ_INT(t, mg_dtype_for_vocab(128256), MG_DT_INT32);
    const size_t sizes[] = {0, 1, 1, 2, 4, 8, 8, 4, 2, 0};
    for (int c = 0; c <= 9; c++) MG_CHECK_EQ_INT(t, mg_dtype_size(c), sizes[c]);
    MG_CHECK_EQ_INT(t, mg_dtype_size(-1), 0);
    MG_CHECK_EQ_STR(t, mg_dtype_name(MG_DT_UINT16), "uint16");
    MG_CHECK_EQ_STR(t, mg_dtype_name(MG_DT_FLOAT32), "float32");
    MG_CHECK_EQ_STR(t, mg_dtype_name(0), "invalid");
}

/* The range check and the packed stores at every position of a document (the 4-lane loop
 * and its tail): the extreme values of each dtype are kept, one past them is refused. */
MG_TEST(idx_token_range_edges)
{
    struct { mg_dtype dt; int64_t lo, hi; } cases[] = {
        {MG_DT_UINT8, 0, 255}, {MG_DT_INT8, -128, 127}, {MG_DT_INT16, -32768, 32767},
        {MG_DT_UINT16, 0, 65535}, {MG_DT_INT32, INT32_MIN, INT32_MAX},
    };
    for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
        const char *p = mg_test_path(t, "edges");
        mg_idx_writer *w;
        MG_CHECK_OK(t, mg_idx_writer_create(&w, p, cases[c].dt));
        int64_t toks[7];
        int32_t len[] = {7};
        for (size_t bad = 0; bad < 7; bad++) { /* one past the range at every position */
            for (size_t i = 0; i < 7; i++) toks[i] = i % 2 ? cases[c].lo : cases[c].hi;
            toks[bad] = bad % 2 ? cases[c].lo - 1 : cases[c].hi + 1;
            MG_CHECK_EQ_INT(t, mg_idx_writer_add_document(w, toks, 7, len, 1), MG_ERR_LIMIT);
        }
        for (size_t i = 0; i < 7; i++) toks[i] = i % 3 == 0 ? cases[c].lo : cases[c].hi - (int64_t)i;
        MG_CHECK_OK(t, mg_idx_writer_add_document(w, toks, 7, len, 1));
        MG_CHECK_OK(t, mg_idx_writer_finish(w));
        mg_idx_writer_free(w);
        mg_idx d;
        MG_CHECK_OK(t, mg_idx_open(&d, p));
        for (size_t i = 0; i < 7; i++) MG_CHECK_EQ_INT(t, mg_idx_token(&d, 0, i), toks[i]);
        mg_idx_close(&d);
    }
}

MG_TEST(idx_token_out_of_range)
{
    struct { mg_dtype dt; int64_t v; const char *msg; } cases[] = {
        {MG_DT_UINT16, 70000, "token id 70000 does not fit in uint16"},
        {MG_DT_UINT16, -1, "token id -1 does not fit in uint16"},
        {MG_DT_UINT8, 256, "token id 256 does not fit in uint8"},
        {MG_DT_INT8, 128, "token id 128 does not fit in int8"},
        {MG_DT_INT16, -32769, "token id -32769 does not fit in int16"},
        {MG_DT_INT32, 2147483648LL, "token id 2147483648 does not fit in int32"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *p = mg_test_path(t, "r");
        mg_idx_writer *w;
        MG_CHECK_OK(t, mg_idx_writer_create(&w, p, cases[i].dt));
        int64_t toks[] = {1, cases[i].v};
        int32_t len[] = {2};
        MG_CHECK_ERR(t, mg_idx_writer_add_document(w, toks, 2, len, 1), MG_ERR_LIMIT,
                     cases[i].msg);
        /* the rejected document left nothing behind and the writer is still usable */
        toks[1] = 2;
        MG_CHECK_OK(t, mg_idx_writer_add_document(w, toks, 2, len, 1));
        MG_CHECK_EQ_INT(t, mg_idx_writer_tokens(w), 2);
        MG_CHECK_EQ_INT(t, mg_idx_writer_documents(w), 1);
        MG_CHECK_OK(t, mg_idx_writer_finish(w));
        mg_idx_writer_free(w);
        mg_idx d;
        MG_CHECK_OK(t, mg_idx_open(&d, p));
        MG_CHECK_EQ_INT(t, d.bin_size, 2 * mg_dtype_size((int)cases[i].dt));
        mg_idx_close(&d);
    }
}

MG_TEST(idx_bad_arguments)
{
    mg_idx_writer *w = (mg_idx_writer *)1;
    MG_CHECK_ERR(t, mg_idx_writer_create(&w, mg_test_path(t, "x"), (mg_dtype)9), MG_ERR_ARG,
                 "invalid dtype code 9");
    MG_CHECK(t, w == NULL);
    MG_CHECK_EQ_INT(t, count_entries(t->dir), 0);
    MG_CHECK_OK(t, mg_idx_writer_create(&w, mg_test_path(t, "x"), MG_DT_INT32));
    const int64_t toks[] = {1, 2, 3};
    const int32_t bad_sum[] = {1, 1}, neg[] = {4, -1};
    MG_CHECK_ERR(t, mg_idx_writer_add_document(w, toks, 3, bad_sum, 2), MG_ERR_ARG,
                 "add up to 2, expected 3");
    MG_CHECK_ERR(t, mg_idx_writer_add_document(w, toks, 3, neg, 2), MG_ERR_ARG,
                 "negative sequence length -1");
    MG_CHECK_ERR(t, mg_idx_writer_add_document(w, toks, 3, NULL, 0), MG_ERR_ARG,
                 "add up to 0, expected 3");
    MG_CHECK_OK(t, mg_idx_writer_finish(w));
    MG_CHECK_ERR(t, mg_idx_writer_finish(w), MG_ERR_ARG, "already finished");
    MG_CHECK_ERR(t, mg_idx_writer_add_document(w, NULL, 0, NULL, 0), MG_ERR_ARG,
                 "already finished");
    mg_idx_writer_free(w);
    mg_idx_writer_free(NULL);
}

MG_TEST(idx_empty_documents_and_dataset)
{
    const char *p = mg_test_path(t, "empty");
    mg_idx_writer *w;
    MG_CHECK_OK(t, mg_idx_writer_create(&w, p, MG_DT_UINT16));
    MG_CHECK_OK(t, mg_idx_writer_finish(w));
    mg_idx_writer_free(w);
    uint8_t want[42] = {0x4d, 0x4d, 0x49, 0x44, 0x49, 0x44, 0x58, 0, 0, 1};
    want[17] = 8;
    want[26] = 1; /* S = 0, D = 1, doc indices [0] */
    check_file(t, p, ".idx", want, sizeof want);
    check_file(t, p, ".bin", "", 0);
    mg_idx d;
    MG_CHECK_OK(t, mg_idx_open(&d, p));
    MG_CHECK(t, d.n_sequences == 0 && d.n_doc_indices == 1 && d.bin_size == 0);
    mg_idx_close(&d);

    const char *q = mg_test_path(t, "empties");
    const int64_t one[] = {5};
    const int32_t l1[] = {1}, l0[] = {0};
    MG_CHECK_OK(t, mg_idx_writer_create(&w, q, MG_DT_INT32));
    MG_CHECK_OK(t, mg_idx_writer_add_document(w, NULL, 0, NULL, 0));
    MG_CHECK_OK(t, mg_idx_writer_add_document(w, one, 1, l1, 1));
    MG_CHECK_OK(t, mg_idx_writer_add_document(w, NULL, 0, l0, 1)); /* a zero-length sequence */
    MG_CHECK_OK(t, mg_idx_writer_add_document(w, NULL, 0, NULL, 0));
    MG_CHECK_OK(t, mg_idx_writer_finish(w));
    mg_idx_writer_free(w);
    MG_CHECK_OK(t, mg_idx_open(&d, q));
    const int64_t docs[] = {0, 0, 1, 2, 2};
    MG_CHECK(t, d.n_sequences == 2 && d.n_doc_indices == 5);
    if (d.n_doc_indices == 5) MG_CHECK(t, memcmp(d.doc_index, docs, sizeof docs) == 0);
    if (d.n_sequences == 2) MG_CHECK(t, d.pointers[1] == 4 && d.lengths[1] == 0);
    mg_idx_close(&d);
}

MG_TEST(idx_large_documents_stream)
{
    /* more tokens than the conversion buffer and the copy chunk, to cross their edges */
    size_t n = 3 * 1000 * 1000 + 7;
    int64_t *toks = malloc(n * sizeof *toks);
    MG_CHECK(t, toks != NULL);
    if (!toks) return;
    for (size_t i = 0; i < n; i++) toks[i] = (int64_t)((i * 2654435761u) % 2000000);
    int32_t lens[] = {1000, (int32_t)(n - 1000)};
    char a[512], b[512];
    snprintf(a, sizeof a, "%s", mg_test_path(t, "a"));
    snprintf(b, sizeof b, "%s", mg_test_path(t, "b"));
    mg_idx_writer *w;
    MG_CHECK_OK(t, mg_idx_writer_create(&w, a, MG_DT_INT32));
    MG_CHECK_OK(t, mg_idx_writer_add_document(w, toks, n, lens, 2));
    MG_CHECK_OK(t, mg_idx_writer_finish(w));
    mg_idx_writer_free(w);
    MG_CHECK_OK(t, mg_idx_writer_create(&w, b, MG_DT_INT32));
    MG_CHECK_OK(t, mg_idx_writer_add_index(w, a));
    MG_CHECK_OK(t, mg_idx_writer_add_index(w, a));
    MG_CHECK_OK(t, mg_idx_writer_finish(w));
    mg_idx_writer_free(w);
    mg_idx d;
    MG_CHECK_OK(t, mg_idx_open(&d, b));
    MG_CHECK_EQ_INT(t, d.bin_size, 8 * n);
    MG_CHECK_EQ_INT(t, d.n_sequences, 4);
    if (d.bin_size == 8 * n && d.n_sequences == 4) {
        size_t bad = 0;
        for (uint64_t s = 0; s < 4; s++) {
            size_t base = s % 2 ? 1000 : 0;
            for (uint64_t j = 0; j < (uint64_t)d.lengths[s]; j++)
                bad += mg_idx_token(&d, s, j) != toks[base + j];
        }
        MG_CHECK_EQ_INT(t, bad, 0);
        MG_CHECK_EQ_INT(t, d.pointers[2], 4 * n);
    }
    mg_idx_close(&d);
    free(toks);
}

/* ---- reader validation: one corruption of the example at a time --------------------- */

typedef struct {
    size_t at;       /* byte offset to overwrite in the .idx */
    uint64_t value;  /* little-endian value ... */
    size_t width;    /* ... of this many bytes (0: truncate the .idx to `at` bytes) */
    const char *msg; /* expected message fragment */
} corruption;

/* add_index(name) fails with exactly the message mg_idx_open just set. */
static void check_add_index_agrees(mg_test_ctx *t, const char *name)
{
    char want[MG_ERROR_MAX];
    snprintf(want, sizeof want, "%s", mg_last_error());
    mg_idx_writer *w;
    MG_CHECK_OK(t, mg_idx_writer_create(&w, mg_test_path(t, "agree"), MG_DT_UINT16));
    if (!w) return;
    MG_CHECK(t, mg_idx_writer_add_index(w, mg_test_path(t, name)) != MG_OK);
    MG_CHECK_EQ_STR(t, mg_last_error(), want);
    mg_idx_writer_free(w);
}

static void check_corruption(mg_test_ctx *t, const corruption *c)
{
    uint8_t idx[sizeof example_idx];
    memcpy(idx, example_idx, sizeof idx);
    size_t n = sizeof idx;
    if (c->width) memcpy(idx + c->at, &c->value, c->width);
    else n = c->at;
    put(t, "bad.idx", idx, n);
    put(t, "bad.bin", example_bin, sizeof example_bin);
    mg_idx d;
    MG_CHECK_ERR(t, mg_idx_open(&d, mg_test_path(t, "bad")), MG_ERR_FORMAT, c->msg);
    MG_CHECK(t, d.priv_ == NULL && d.bin == NULL);
    check_add_index_agrees(t, "bad");
}

MG_TEST(idx_reader_rejects_corrupt_idx)
{
    const corruption cases[] = {
        {0, 'X', 1, "bad.idx: byte 0: magic byte 0x58, expected 0x4d"},
        {8, 1, 1, "bad.idx: byte 8: magic byte 0x01, expected 0x00"},
        {9, 2, 8, "bad.idx: byte 9: version 2, expected 1"},
        {17, 0, 1, "bad.idx: byte 17: dtype code 0, expected 1..8"},
        {17, 9, 1, "bad.idx: byte 17: dtype code 9, expected 1..8"},
        {18, 2, 8, "bad.idx: byte 90: 12 bytes after the document indices, expected 0 (or 2"},
        {18, UINT64_MAX / 4, 8, "bad.idx: byte 18: sequence count"},
        {26, 0, 8, "bad.idx: byte 26: document index count 0, expected at least 1"},
        {26, 5, 8, "bad.idx: byte 26: document index count 5, expected at most 4"},
        {26, UINT64_MAX, 8, "bad.idx: byte 26: document index count 18446744073709551615"},
        {34, (uint32_t)-3, 4, "bad.idx: byte 34: length -3 of sequence 0, expected >= 0"},
        {38, 3, 4, "bad.idx: byte 62: pointer 10 of sequence 2, expected 12"},
        {54, 10, 8, "bad.idx: byte 54: pointer 10 of sequence 1, expected 6"},
        {46, 1, 8, "bad.idx: byte 46: pointer 1 of sequence 0, expected 0"},
        {70, 1, 8, "bad.idx: byte 70: first document index 1, expected 0"},
        {78, 2, 8, "bad.idx: byte 86: document index 1 (entry 2) after 2, expected non-decreasing"},
        {94, 2, 8, "bad.idx: byte 94: last document index 2, expected 3"},
        {94, 4, 8, "bad.idx: byte 94: document index 4 (entry 3), expected at most 3"},
        {78, (uint64_t)-1, 8, "bad.idx: byte 78: document index -1 (entry 1) after 0"},
        {33, 0, 0, "bad.idx: byte 33: file ends inside the header, expected at least 34"},
        {5, 0, 0, "bad.idx: byte 5: file ends inside the header"},
        {0, 0, 0, "bad.idx: byte 0: file ends inside the header"},
        {101, 0, 0, "bad.idx: byte 26: document index count 4, expected at most 3"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) check_corruption(t, &cases[i]);
}

MG_TEST(idx_reader_rejects_bad_bin)
{
    put(t, "x.idx", example_idx, sizeof example_idx);
    put(t, "x.bin", example_bin, sizeof example_bin - 2);
    mg_idx d;
    const char *p = mg_test_path(t, "x");
    MG_CHECK_ERR(t, mg_idx_open(&d, p), MG_ERR_FORMAT,
                 "x.bin: file size 12 bytes, expected 14 (the sequence lengths in");
    check_add_index_agrees(t, "x");
    put(t, "x.bin", "0123456789abcdefg", 16);
    MG_CHECK_ERR(t, mg_idx_open(&d, p), MG_ERR_FORMAT, "file size 16 bytes, expected 14");
    check_add_index_agrees(t, "x");
    remove(mg_test_path(t, "x.bin"));
    MG_CHECK_ERR(t, mg_idx_open(&d, p), MG_ERR_NOTFOUND, "x.bin");
    MG_CHECK_ERR(t, mg_idx_open(&d, mg_test_path(t, "none")), MG_ERR_NOTFOUND, "none.idx");
    MG_CHECK(t, d.priv_ == NULL);
}

/* ---- multimodal: §1.8's int32 example with modes, read and carried by add_index ---- */

static const uint8_t mm_idx[] = {
    0x4d, 0x4d, 0x49, 0x44, 0x49, 0x44, 0x58, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 4,
    2, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,        /* S = 2, D = 2 */
    3, 0, 0, 0, 2, 0, 0, 0,                                /* lengths 3, 2 */
    0, 0, 0, 0, 0, 0, 0, 0, 12, 0, 0, 0, 0, 0, 0, 0,       /* pointers 0, 12 */
    0, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0,        /* doc indices 0, 2 */
    0, 1,                                                  /* modes */
};
static const int32_t mm_bin[] = {7, 8, 9, 1, 2};

MG_TEST(idx_multimodal_read_and_carry)
{
    put(t, "mm.idx", mm_idx, sizeof mm_idx);
    put(t, "mm.bin", mm_bin, sizeof mm_bin);
    char mm[512], out[512];
    snprintf(mm, sizeof mm, "%s", mg_test_path(t, "mm"));
    snprintf(out, sizeof out, "%s", mg_test_path(t, "out"));
    mg_idx d;
    MG_CHECK_OK(t, mg_idx_open(&d, mm));
    MG_CHECK(t, d.modes != NULL);
    if (d.modes) MG_CHECK(t, d.modes[0] == 0 && d.modes[1] == 1);
    mg_idx_close(&d);
    /* a plain document first, the multimodal dataset twice, a plain document: mode 0 for
     * the plain sequences */
    mg_idx_writer *w;
    const int64_t toks[] = {5};
    const int32_t len[] = {1};
    MG_CHECK_OK(t, mg_idx_writer_create(&w, out, MG_DT_INT32));
    MG_CHECK_OK(t, mg_idx_writer_add_document(w, toks, 1, len, 1));
    MG_CHECK_OK(t, mg_idx_writer_add_index(w, mm));
    MG_CHECK_OK(t, mg_idx_writer_add_index(w, mm));
    MG_CHECK_OK(t, mg_idx_writer_add_document(w, toks, 1, len, 1));
    MG_CHECK_OK(t, mg_idx_writer_finish(w));
    mg_idx_writer_free(w);
    MG_CHECK_OK(t, mg_idx_open(&d, out));
    const int8_t modes[] = {0, 0, 1, 0, 1, 0};
    const int64_t docs[] = {0, 1, 3, 5, 6};
    MG_CHECK(t, d.n_sequences == 6 && d.n_doc_indices == 5 && d.modes != NULL);
    if (d.modes && d.n_sequences == 6 && d.n_doc_indices == 5) {
        MG_CHECK(t, memcmp(d.modes, modes, 6) == 0);
        MG_CHECK(t, memcmp(d.doc_index, docs, sizeof docs) == 0);
        MG_CHECK_EQ_INT(t, d.pointers[3], 24);
        MG_CHECK_EQ_INT(t, mg_idx_token(&d, 4, 1), 2);
    }
    mg_idx_close(&d);
    /* the output's bytes: header, arrays, then the six mode bytes */
    size_t n = 0;
    char *idx = read_with_suffix(out, ".idx", &n);
    MG_CHECK_EQ_INT(t, n, 34 + 13 * 6 + 8 * 5);
    if (idx && n == 34 + 13 * 6 + 8 * 5) MG_CHECK(t, memcmp(idx + n - 6, modes, 6) == 0);
    free(idx);
}

/* ---- add_index, merge ------------------------------------------------------------- */

MG_TEST(idx_add_index_dtype_mismatch)
{
    const char *ex = mg_test_path(t, "ex");
    write_example(t, ex);
    mg_idx_writer *w;
    MG_CHECK_OK(t, mg_idx_writer_create(&w, mg_test_path(t, "out"), MG_DT_INT32));
    MG_CHECK_ERR(t, mg_idx_writer_add_index(w, ex), MG_ERR_FORMAT,
                 "ex.idx: dtype uint16 (code 8) does not match the dtype int32 (code 4) of ");
    MG_CHECK(t, strstr(mg_last_error(), "out.idx") != NULL);
    MG_CHECK_ERR(t, mg_idx_writer_add_index(w, mg_test_path(t, "missing")), MG_ERR_NOTFOUND,
                 "missing.idx");
    MG_CHECK_OK(t, mg_idx_writer_finish(w)); /* the rejected adds changed nothing */
    mg_idx_writer_free(w);
    mg_idx d;
    MG_CHECK_OK(t, mg_idx_open(&d, mg_test_path(t, "out")));
    MG_CHECK(t, d.n_sequences == 0 && d.n_doc_indices == 1);
    mg_idx_close(&d);
}

MG_TEST(idx_free_without_finish_leaves_nothing)
{
    mg_idx_writer *w;
    const int64_t toks[] = {1, 2};
    const int32_t len[] = {2};
    MG_CHECK_OK(t, mg_idx_writer_create(&w, mg_test_path(t, "ds"), MG_DT_UINT16));
    MG_CHECK_OK(t, mg_idx_writer_add_document(w, toks, 2, len, 1));
    MG_CHECK_EQ_INT(t, count_entries(t->dir), 2); /* the two temporaries */
    mg_idx_writer_free(w);
    MG_CHECK_EQ_INT(t, count_entries(t->dir), 0);
}

static void make_dir(mg_test_ctx *t, const char *name)
{
    MG_CHECK(t, mkdir(mg_test_path(t, name), 0755) == 0);
}

MG_TEST(idx_merge_dir_sorted)
{
    make_dir(t, "in");
    const int64_t a[] = {1, 2}, b[] = {3};
    const int32_t la[] = {2}, lb[] = {1};
    const char *names[] = {"in/b", "in/a", "in/B"};
    const int64_t *toks[] = {b, a, b};
    const int32_t *lens[] = {lb, la, lb};
    for (int i = 0; i < 3; i++) {
        mg_idx_writer *w;
        MG_CHECK_OK(t, mg_idx_writer_create(&w, mg_test_path(t, names[i]), MG_DT_UINT16));
        MG_CHECK_OK(t, mg_idx_writer_add_document(w, toks[i], (size_t)lens[i][0], lens[i], 1));
        MG_CHECK_OK(t, mg_idx_writer_finish(w));
        mg_idx_writer_free(w);
    }
    char in[512], out[512];
    snprintf(in, sizeof in, "%s", mg_test_path(t, "in"));
    snprintf(out, sizeof out, "%s", mg_test_path(t, "merged"));
    MG_CHECK_OK(t, mg_idx_merge_dir(in, out));
    /* byte order: "B" < "a" < "b" */
    const uint8_t bin[] = {3, 0, 1, 0, 2, 0, 3, 0};
    check_file(t, out, ".bin", bin, sizeof bin);
    mg_idx d;
    MG_CHECK_OK(t, mg_idx_open(&d, out));
    MG_CHECK(t, d.n_sequences == 3 && d.n_doc_indices == 4 && d.dtype == MG_DT_UINT16);
    mg_idx_close(&d);
    /* a regular file with no extension only needs the .idx beside it, like Python */
    put(t, "in/a", "x", 1);
    MG_CHECK_OK(t, mg_idx_merge_dir(in, out));
    check_file(t, out, ".bin", bin, sizeof bin);
}

MG_TEST(idx_merge_dir_errors)
{
    make_dir(t, "in");
    char in[512], out[512];
    snprintf(in, sizeof in, "%s", mg_test_path(t, "in"));
    snprintf(out, sizeof out, "%s", mg_test_path(t, "merged"));
    MG_CHECK_ERR(t, mg_idx_merge_dir(in, out), MG_ERR_NOTFOUND, "no .bin/.idx datasets");
    write_example(t, mg_test_path(t, "in/ex"));
    make_dir(t, "in/sub.d"); /* directories are skipped */
    MG_CHECK_OK(t, mg_idx_merge_dir(in, out));
    check_file(t, out, ".bin", example_bin, sizeof example_bin);
    check_file(t, out, ".idx", example_idx, sizeof example_idx);
    put(t, "in/notes.txt", "hello", 5);
    MG_CHECK_ERR(t, mg_idx_merge_dir(in, out), MG_ERR_FORMAT, "in/notes.txt: no .idx file");
    MG_CHECK(t, strstr(mg_last_error(), "in/notes.idx") != NULL);
    remove(mg_test_path(t, "in/notes.txt"));
    put(t, "in/lone.idx", example_idx, sizeof example_idx);
    MG_CHECK_ERR(t, mg_idx_merge_dir(in, out), MG_ERR_FORMAT, "in/lone.idx: no .bin file");
    remove(mg_test_path(t, "in/lone.idx"));
    /* a dtype mismatch between the inputs names the offending dataset */
    mg_idx_writer *w;
    MG_CHECK_OK(t, mg_idx_writer_create(&w, mg_test_path(t, "in/fx"), MG_DT_INT32));
    MG_CHECK_OK(t, mg_idx_writer_finish(w));
    mg_idx_writer_free(w);
    MG_CHECK_ERR(t, mg_idx_merge_dir(in, out), MG_ERR_FORMAT, "in/fx.idx: dtype int32");
    MG_CHECK_ERR(t, mg_idx_merge_dir(mg_test_path(t, "nodir"), out), MG_ERR_NOTFOUND, "nodir");
}

/* ---- bounded memory: spilled index arrays ----------------------------------------- */

static uint32_t next_rand(uint64_t *state)
{
    *state = *state * 6364136223846793005ULL + 1442695040888963407ULL;
    return (uint32_t)(*state >> 33);
}

/* n_docs deterministic documents of 0..3 sequences of 0..3 tokens: empty documents and
 * zero-length sequences included. */
static void add_corpus(mg_test_ctx *t, mg_idx_writer *w, size_t n_docs, uint64_t seed)
{
    size_t failures = 0;
    for (size_t k = 0; k < n_docs; k++) {
        int32_t lens[3];
        int64_t toks[9];
        size_t n_lens = next_rand(&seed) % 4, n_toks = 0;
        for (size_t i = 0; i < n_lens; i++) {
            lens[i] = (int32_t)(next_rand(&seed) % 4);
            for (int32_t j = 0; j < lens[i]; j++) toks[n_toks++] = next_rand(&seed) % 60000;
        }
        failures += mg_idx_writer_add_document(w, toks, n_toks, lens, n_lens) != MG_OK;
    }
    MG_CHECK_EQ_INT(t, failures, 0);
}

typedef struct {
    size_t spill_bytes; /* 0: the default buffer */
    size_t n_docs;      /* per corpus slice */
    const char *src;    /* a plain dataset added between slices 1 and 2 (NULL: none) */
    const char *mm;     /* a multimodal dataset added between slices 2 and 3 (NULL: none) */
} mixed_plan;

/* Writes prefix from three corpus slices and the plan's datasets; returns the bytes spilled
 * (UINT64_MAX if the writer could not be created). */
static uint64_t write_mixed(mg_test_ctx *t, const char *prefix, const mixed_plan *plan)
{
    mg_idx_writer *w;
    MG_CHECK_OK(t, mg_idx_writer_create(&w, prefix, MG_DT_INT32));
    if (!w) return UINT64_MAX;
    if (plan->spill_bytes) mg_idx_writer_set_spill_bytes(w, plan->spill_bytes);
    add_corpus(t, w, plan->n_docs, 1);
    if (plan->src) MG_CHECK_OK(t, mg_idx_writer_add_index(w, plan->src));
    add_corpus(t, w, plan->n_docs, 2);
    if (plan->mm) MG_CHECK_OK(t, mg_idx_writer_add_index(w, plan->mm));
    add_corpus(t, w, plan->n_docs, 3);
    if (plan->src) MG_CHECK_OK(t, mg_idx_writer_add_index(w, plan->src));
    uint64_t spilled = mg_idx_writer_spilled_bytes(w);
    MG_CHECK_OK(t, mg_idx_writer_finish(w));
    mg_idx_writer_free(w);
    return spilled;
}

/* prefix a and prefix b hold the same bytes in their .SUFFIX files. */
static void check_same_file(mg_test_ctx *t, const char *a, const char *b, const char *suffix)
{
    size_t na = 0, nb = 0;
    char *x = read_with_suffix(a, suffix, &na), *y = read_with_suffix(b, suffix, &nb);
    MG_CHECK(t, x != NULL && y != NULL);
    MG_CHECK_EQ_INT(t, na, nb);
    if (x && y && na == nb) MG_CHECK(t, memcmp(x, y, na) == 0);
    free(x);
    free(y);
}

/* The plan written with tiny buffers (spilling) and with the plan's ones (not spilling)
 * gives identical, valid datasets. */
static void check_spill_identical(mg_test_ctx *t, mixed_plan plan, size_t tiny)
{
    char mem[512], spill[512];
    snprintf(mem, sizeof mem, "%s", mg_test_path(t, "mem"));
    snprintf(spill, sizeof spill, "%s", mg_test_path(t, "spill"));
    MG_CHECK_EQ_INT(t, write_mixed(t, mem, &plan), 0);
    plan.spill_bytes = tiny;
    MG_CHECK(t, write_mixed(t, spill, &plan) > 0);
    check_same_file(t, mem, spill, ".idx");
    check_same_file(t, mem, spill, ".bin");
    mg_idx d;
    MG_CHECK_OK(t, mg_idx_open(&d, spill));
    MG_CHECK(t, d.n_sequences > 3 * plan.n_docs && d.n_doc_indices > 3 * plan.n_docs);
    MG_CHECK(t, (d.modes != NULL) == (plan.mm != NULL));
    mg_idx_close(&d);
}

MG_TEST(idx_spill_byte_identical)
{
    char src[512], mm[512];
    snprintf(src, sizeof src, "%s", mg_test_path(t, "src"));
    snprintf(mm, sizeof mm, "%s", mg_test_path(t, "mm"));
    mg_idx_writer *w;
    MG_CHECK_OK(t, mg_idx_writer_create(&w, src, MG_DT_INT32));
    if (w) add_corpus(t, w, 3000, 4);
    MG_CHECK_OK(t, mg_idx_writer_finish(w));
    mg_idx_writer_free(w);
    put(t, "mm.idx", mm_idx, sizeof mm_idx);
    put(t, "mm.bin", mm_bin, sizeof mm_bin);
    /* the smallest buffer (one int64), an odd-sized one, then plain and multimodal */
    check_spill_identical(t, (mixed_plan){0, 2000, src, NULL}, 8);
    check_spill_identical(t, (mixed_plan){0, 2000, src, mm}, 8);
    check_spill_identical(t, (mixed_plan){0, 2000, src, mm}, 200);
    check_spill_identical(t, (mixed_plan){0, 1, NULL, mm}, 8);
}

MG_TEST(idx_spill_large_streams_in_chunks)
{
    /* spill files larger than the 1 MiB read-back chunk, against buffers large enough to
     * hold everything (the default 1 MiB would spill here too) */
    check_spill_identical(t, (mixed_plan){(size_t)64 << 20, 150000, NULL, NULL}, 4096);
}

MG_TEST(idx_spill_merge_of_spilled_datasets)
{
    /* add_index of a dataset with more entries than the writer's buffer */
    char a[512], b[512], c[512];
    snprintf(a, sizeof a, "%s", mg_test_path(t, "a"));
    snprintf(b, sizeof b, "%s", mg_test_path(t, "b"));
    snprintf(c, sizeof c, "%s", mg_test_path(t, "c"));
    MG_CHECK_EQ_INT(t, write_mixed(t, a, &(mixed_plan){0, 500, NULL, NULL}), 0);
    mg_idx_writer *w;
    const char *outs[] = {b, c};
    for (int k = 0; k < 2; k++) {
        MG_CHECK_OK(t, mg_idx_writer_create(&w, outs[k], MG_DT_INT32));
        if (!w) return;
        if (k) mg_idx_writer_set_spill_bytes(w, 16);
        MG_CHECK_OK(t, mg_idx_writer_add_index(w, a));
        MG_CHECK_OK(t, mg_idx_writer_add_index(w, a));
        MG_CHECK_EQ_INT(t, mg_idx_writer_spilled_bytes(w) > 0, k);
        MG_CHECK_EQ_INT(t, mg_idx_writer_documents(w), 3000);
        MG_CHECK_OK(t, mg_idx_writer_finish(w));
        mg_idx_writer_free(w);
    }
    check_same_file(t, b, c, ".idx");
    check_same_file(t, b, c, ".bin");
}

MG_TEST(idx_spill_leaves_no_temporaries)
{
    make_dir(t, "d");
    char dir[512], moved[512], p[512];
    snprintf(dir, sizeof dir, "%s", mg_test_path(t, "d"));
    snprintf(moved, sizeof moved, "%s", mg_test_path(t, "moved"));
    snprintf(p, sizeof p, "%s", mg_test_path(t, "d/ds"));
    mg_idx_writer *w;
    /* finish: only P.bin and P.idx; the spill files never show in the directory */
    MG_CHECK_OK(t, mg_idx_writer_create(&w, p, MG_DT_UINT16));
    mg_idx_writer_set_spill_bytes(w, 8);
    add_corpus(t, w, 300, 5);
    MG_CHECK(t, mg_idx_writer_spilled_bytes(w) > 0);
    MG_CHECK_EQ_INT(t, count_entries(dir), 2); /* the two output temporaries */
    MG_CHECK_OK(t, mg_idx_writer_finish(w));
    mg_idx_writer_free(w);
    MG_CHECK_EQ_INT(t, count_entries(dir), 2);
    /* free without finish: nothing */
    MG_CHECK_OK(t, mg_idx_writer_create(&w, mg_test_path(t, "d/other"), MG_DT_UINT16));
    mg_idx_writer_set_spill_bytes(w, 8);
    add_corpus(t, w, 300, 6);
    MG_CHECK(t, mg_idx_writer_spilled_bytes(w) > 0);
    mg_idx_writer_free(w);
    MG_CHECK_EQ_INT(t, count_entries(dir), 2);
    /* an error: the directory moves away, so the first spill cannot be created */
    MG_CHECK_OK(t, mg_idx_writer_create(&w, mg_test_path(t, "d/third"), MG_DT_UINT16));
    mg_idx_writer_set_spill_bytes(w, 8);
    MG_CHECK(t, rename(dir, moved) == 0);
    const int64_t tok[] = {1};
    const int32_t len[] = {1};
    MG_CHECK_ERR(t, mg_idx_writer_add_document(w, tok, 1, len, 1), MG_ERR_NOTFOUND,
                 "d/third.docs.tmp.XXXXXX: cannot create a temporary file");
    MG_CHECK_ERR(t, mg_idx_writer_finish(w), MG_ERR_ARG, "unusable after an earlier write");
    MG_CHECK(t, rename(moved, dir) == 0);
    mg_idx_writer_free(w);
    MG_CHECK_EQ_INT(t, count_entries(dir), 2);
}

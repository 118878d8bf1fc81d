/* test_gptds_cache.c — Megatron's index caches through mg_gpt_data (libcommon/dataset/gptds_cache.c,
 * gptds_desc.c): Python's float repr (values from CPython 3.11 json.dumps), files written
 * then read back (same samples), a cached index that is altered in range is used, altered
 * out of range / truncated / with another description is refused naming the file, the
 * default and the empty directory. Byte equality with megatron-core's own files is checked
 * by tests/interop/test_data_cache.py. */
#include <dirent.h>
#include <stdlib.h>

#include "dataset/gptds_internal.h"
#include "harness.h"
#include "mg/npy.h"

MG_TEST(gptds_cache_python_float_repr)
{
    static const struct {
        double v;
        const char *repr;
    } cases[] = {
        {0x1.e5e353f7ced91p-1, "0.949"}, {1.0, "1.0"}, {0.0, "0.0"}, {-0.0, "-0.0"},
        {0x1.1c37937e08000p+53, "1e+16"}, {0x1.4f8b588e368f1p-17, "1e-05"},
        {0x1.a36e2eb1c432dp-14, "0.0001"}, {0x1.3333333333334p-2, "0.30000000000000004"},
        {0x1.5555555555555p-2, "0.3333333333333333"},
        {0x1.179ec9cbd821ep-14, "6.666666666666667e-05"},
        {0x1.b69b4ba630f35p+56, "1.2345678901234568e+17"},
        {0x1.c6bf526340000p+49, "1000000000000000.0"},
        {0x1.1c37937e07fffp+53, "9999999999999998.0"}, {0x0.0000000000001p-1022, "5e-324"},
        {0x1.fffffffffffffp+1023, "1.7976931348623157e+308"}, {-0x1.4p+1, "-2.5"},
        {0x1.31674c59d3167p-2, "0.2982456140350877"}, {100.0, "100.0"},
        {0x1.0f0cf064dd592p+73, "1e+22"}, {0x1.edd2f1a9fbe77p+6, "123.456"},
        {0x1.f5c28f5c28f5cp-1, "0.98"}, {0x0.0000000000003p-1022, "1.5e-323"},
        {0x1.a36d1bd105b06p-14, "9.9999e-05"}};
    char out[32];
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mg_py_float_repr(cases[i].v, out);
        MG_CHECK_EQ_STR(t, out, cases[i].repr);
    }
    mg_py_float_repr(1.0 / 0.0, out);
    MG_CHECK_EQ_STR(t, out, "Infinity");
}

/* 40 sequences of lengths 3..12, token j of sequence s = 1000 s + j; returns the prefix. */
static const char *write_data(mg_test_ctx *t, const char *name)
{
    const char *prefix = mg_test_path(t, name);
    static char keep[4][300];
    static int next;
    char *p = keep[next++ % 4];
    snprintf(p, 300, "%s", prefix);
    mg_idx_writer *w = NULL;
    MG_CHECK_OK(t, mg_idx_writer_create(&w, p, MG_DT_INT32));
    for (int s = 0; w && s < 40; s++) {
        int64_t tok[16];
        int32_t len = 3 + (s * 7) % 10;
        for (int j = 0; j < len; j++) tok[j] = 1000 * s + j;
        MG_CHECK_OK(t, mg_idx_writer_add_document(w, tok, (size_t)len, &len, 1));
    }
    MG_CHECK_OK(t, mg_idx_writer_finish(w));
    mg_idx_writer_free(w);
    return p;
}

typedef struct {
    mg_gpt_blend blend;
    mg_gpt_cache cache;
    mg_gpt_data_config cfg;
} setup;

static void setup_init(mg_test_ctx *t, setup *s, const char *const *args, size_t n,
                       const char *dir)
{
    memset(s, 0, sizeof *s);
    MG_CHECK_OK(t, mg_gpt_blend_parse(&s->blend, args, n));
    mg_tok_opts tok;
    mg_tok_opts_init(&tok);
    tok.type = "NullTokenizer";
    tok.vocab_size = 1000;
    s->cache.dir = dir;
    MG_CHECK_OK(t, mg_gpt_cache_set_tokenizer(&s->cache, &tok));
    s->cfg.blend = &s->blend;
    s->cfg.split = "90,8,2";
    s->cfg.sizes[0] = 30, s->cfg.sizes[1] = 6, s->cfg.sizes[2] = 4;
    s->cfg.seed = 1234;
    s->cfg.seq_length = 8;
    s->cfg.add_extra_token = 1;
    s->cfg.drop_last_partial_validation = 1;
    s->cfg.surplus = 0.005;
    s->cfg.cache = &s->cache;
}

static void setup_clear(setup *s)
{
    mg_gpt_blend_clear(&s->blend);
    mg_gpt_cache_clear_tokenizer(&s->cache);
}

/* Number of files in dir whose name ends with suffix; the last one's path into found. */
static int find_files(const char *dir, const char *suffix, char *found, size_t cap)
{
    DIR *d = opendir(dir);
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t l = strlen(e->d_name), ls = strlen(suffix);
        if (l < ls || strcmp(e->d_name + l - ls, suffix) != 0) continue;
        n++;
        if (found) snprintf(found, cap, "%s/%s", dir, e->d_name);
    }
    if (d) closedir(d);
    return n;
}

/* Sample i of split k of d into out (9 tokens). */
static void sample(mg_test_ctx *t, const mg_gpt_data *d, int k, uint64_t i, int64_t *out)
{
    MG_CHECK_OK(t, mg_gpt_data_sample(d, k, i, -1, out, NULL));
}

static int same_samples(mg_test_ctx *t, const mg_gpt_data *a, const mg_gpt_data *b, int k)
{
    if (mg_gpt_data_len(a, k) != mg_gpt_data_len(b, k)) return 0;
    for (uint64_t i = 0; i < mg_gpt_data_len(a, k); i++) {
        int64_t x[9], y[9];
        sample(t, a, k, i, x);
        sample(t, b, k, i, y);
        if (memcmp(x, y, sizeof x) != 0) return 0;
    }
    return 1;
}

MG_TEST(gptds_cache_written_then_read)
{
    const char *pa = write_data(t, "a"), *pb = write_data(t, "b");
    const char *args[4] = {"0.3", pa, "0.7", pb};
    char dir[300];
    snprintf(dir, sizeof dir, "%s/c/d", t->dir);
    setup s;
    setup_init(t, &s, args, 4, dir);
    mg_gpt_data *d1 = NULL, *d2 = NULL;
    MG_CHECK_OK(t, mg_gpt_data_create(&d1, &s.cfg));
    MG_CHECK_EQ_INT(t, find_files(dir, "-description.txt", NULL, 0), 2 * 3 + 3);
    MG_CHECK_EQ_INT(t, find_files(dir, ".npy", NULL, 0), 2 * 3 * 3 + 3 * 2);
    MG_CHECK_EQ_INT(t, find_files(dir, ".tmp", NULL, 0), 0);
    MG_CHECK_OK(t, mg_gpt_data_create(&d2, &s.cfg));
    for (int k = 0; d1 && d2 && k < MG_SPLIT_COUNT; k++) MG_CHECK(t, same_samples(t, d1, d2, k));
    /* swap two blend entries: the reader must follow the file */
    char path[600];
    MG_CHECK_EQ_INT(t, find_files(dir, "-BlendedDataset-train-dataset_index.npy", path,
                                  sizeof path), 1);
    mg_npy_file f;
    MG_CHECK_OK(t, mg_npy_open(&f, path));
    int16_t *v = malloc(f.arr.count * sizeof *v);
    uint64_t n = f.arr.count;
    for (uint64_t i = 0; v && i < n; i++) v[i] = (int16_t)mg_npy_get(&f.arr, i);
    mg_npy_close(&f);
    MG_CHECK(t, v && n > 2 && v[0] != v[1]);
    int16_t tmp = v[0];
    v[0] = v[1], v[1] = tmp;
    MG_CHECK_OK(t, mg_npy_write(path, MG_NPY_I2, 1, &n, v, MG_NPY_I2));
    free(v);
    mg_gpt_data *d3 = NULL;
    MG_CHECK_OK(t, mg_gpt_data_create(&d3, &s.cfg));
    int ds1 = -1, ds3 = -1;
    int64_t x[9];
    MG_CHECK_OK(t, mg_gpt_data_sample(d1, 0, 0, -1, x, &ds1));
    MG_CHECK_OK(t, mg_gpt_data_sample(d3, 0, 0, -1, x, &ds3));
    MG_CHECK(t, ds1 != ds3);
    mg_gpt_data_free(d1);
    mg_gpt_data_free(d2);
    mg_gpt_data_free(d3);
    setup_clear(&s);
}

/* Rewrites the train shuffle index of the one-prefix cache in dir with values v[n]. */
static void rewrite_shuffle(mg_test_ctx *t, const char *dir, mg_npy_dtype dt, int64_t first)
{
    char path[600];
    MG_CHECK_EQ_INT(t, find_files(dir, "-GPTDataset-train-shuffle_index.npy", path,
                                  sizeof path), 1);
    mg_npy_file f;
    MG_CHECK_OK(t, mg_npy_open(&f, path));
    uint64_t n = f.arr.count;
    int64_t *v = malloc((n ? n : 1) * sizeof *v);
    for (uint64_t i = 0; v && i < n; i++) v[i] = mg_npy_get(&f.arr, i);
    mg_npy_close(&f);
    if (v && n) v[0] = first;
    MG_CHECK_OK(t, mg_npy_write(path, dt, 1, &n, v, MG_NPY_I8));
    free(v);
}

MG_TEST(gptds_cache_mismatch_is_refused)
{
    const char *pa = write_data(t, "a");
    const char *args[1] = {pa};
    char dir[300];
    snprintf(dir, sizeof dir, "%s/cache", t->dir);
    setup s;
    setup_init(t, &s, args, 1, dir);
    mg_gpt_data *d = NULL;
    MG_CHECK_OK(t, mg_gpt_data_create(&d, &s.cfg));
    uint64_t len = d ? mg_gpt_data_len(d, 0) : 0;
    mg_gpt_data_free(d);
    d = NULL;
    rewrite_shuffle(t, dir, MG_NPY_I8, 1); /* int64 is valid too (Megatron's large case) */
    MG_CHECK_OK(t, mg_gpt_data_create(&d, &s.cfg));
    mg_gpt_data_free(d);
    d = NULL;
    rewrite_shuffle(t, dir, MG_NPY_U4, (int64_t)len); /* out of range */
    MG_CHECK_ERR(t, mg_gpt_data_create(&d, &s.cfg), MG_ERR_FORMAT,
                 "-GPTDataset-train-shuffle_index.npy: value");
    rewrite_shuffle(t, dir, MG_NPY_I4, 0); /* a dtype Megatron never writes there */
    MG_CHECK_ERR(t, mg_gpt_data_create(&d, &s.cfg), MG_ERR_FORMAT, "Megatron writes <u4");
    rewrite_shuffle(t, dir, MG_NPY_U4, 0);
    MG_CHECK_OK(t, mg_gpt_data_create(&d, &s.cfg));
    mg_gpt_data_free(d);
    d = NULL;
    char path[600];
    MG_CHECK_EQ_INT(t, find_files(dir, "-GPTDataset-valid-description.txt", path, sizeof path),
                    1);
    mg_test_write_file(t, "x", "{}", 2);
    MG_CHECK(t, rename(mg_test_path(t, "x"), path) == 0);
    MG_CHECK_ERR(t, mg_gpt_data_create(&d, &s.cfg), MG_ERR_FORMAT,
                 "-GPTDataset-valid-description.txt: the cached description is not");
    MG_CHECK(t, remove(path) == 0); /* a missing file: that split is rebuilt and saved */
    MG_CHECK_OK(t, mg_gpt_data_create(&d, &s.cfg));
    mg_gpt_data_free(d);
    d = NULL;
    MG_CHECK_EQ_INT(t, find_files(dir, "-description.txt", NULL, 0), 3);
    MG_CHECK(t, find_files(dir, "-GPTDataset-test-document_index.npy", path, sizeof path) == 1);
    size_t n = 0;
    char *img = mg_test_read_file(path, &n);
    FILE *fp = fopen(path, "wb");
    if (fp && img) fwrite(img, 1, n - 1, fp);
    if (fp) fclose(fp);
    free(img);
    MG_CHECK_ERR(t, mg_gpt_data_create(&d, &s.cfg), MG_ERR_FORMAT,
                 "-GPTDataset-test-document_index.npy: 23 bytes of data after the header");
    setup_clear(&s);
}

MG_TEST(gptds_cache_default_and_empty_directory)
{
    const char *pa = write_data(t, "a");
    const char *args[1] = {pa};
    setup s;
    setup_init(t, &s, args, 1, NULL);
    mg_gpt_data *d = NULL;
    MG_CHECK_OK(t, mg_gpt_data_create(&d, &s.cfg));
    mg_gpt_data_free(d);
    char dir[400];
    snprintf(dir, sizeof dir, "%s/cache/GPTDataset_indices", pa);
    MG_CHECK_EQ_INT(t, find_files(dir, ".npy", NULL, 0), 9);
    setup_clear(&s);
    const char *pb = write_data(t, "b");
    const char *args2[1] = {pb};
    setup_init(t, &s, args2, 1, "");
    d = NULL;
    MG_CHECK_OK(t, mg_gpt_data_create(&d, &s.cfg));
    mg_gpt_data_free(d);
    snprintf(dir, sizeof dir, "%s/cache", pb);
    MG_CHECK(t, !mg_is_dir(dir));
    setup_clear(&s);
}

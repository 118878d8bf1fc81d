/* test_gptds.c — mg/gptds.h against the worked examples of docs/FORMATS.md §3.1,
 * §3.7 and §3.8 (computed with megatron-core's helpers.cpp and numpy). The interop test
 * tests/interop/test_gptds.py compares whole datasets with megatron-core itself.
 */
#include <stdlib.h>

#include "harness.h"
#include "mg/gptds.h"

/* Sequences of lengths [5,3,8,2,7,4,6,9,1,5], one per document, token t of sequence d =
 * 100*d + t; returns the prefix. */
static const char *write_example(mg_test_ctx *t)
{
    static const int32_t lens[10] = {5, 3, 8, 2, 7, 4, 6, 9, 1, 5};
    const char *prefix = mg_test_path(t, "ex");
    mg_idx_writer *w = NULL;
    MG_CHECK_OK(t, mg_idx_writer_create(&w, prefix, MG_DT_INT32));
    for (int d = 0; w && d < 10; d++) {
        int64_t tok[16];
        for (int i = 0; i < lens[d]; i++) tok[i] = 100 * d + i;
        MG_CHECK_OK(t, mg_idx_writer_add_document(w, tok, (size_t)lens[d], &lens[d], 1));
    }
    MG_CHECK_OK(t, mg_idx_writer_finish(w));
    mg_idx_writer_free(w);
    return prefix;
}

static void check_i32(mg_test_ctx *t, const int32_t *a, const int32_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++) MG_CHECK_EQ_INT(t, a[i], b[i]);
}

static void check_i64(mg_test_ctx *t, const int64_t *a, const int64_t *b, size_t n)
{
    for (size_t i = 0; i < n; i++) MG_CHECK_EQ_INT(t, a[i], b[i]);
}

static mg_gptds *example_ds(mg_test_ctx *t, const mg_idx *idx, int64_t num_samples)
{
    mg_gptds_config c = {1234, 4, 1, 1, NULL};
    mg_gptds *ds = NULL;
    MG_CHECK_OK(t, mg_gptds_create(&ds, idx, 0, 8, num_samples, &c));
    return ds;
}

MG_TEST(gptds_worked_example_one_epoch)
{
    mg_idx idx;
    MG_CHECK_OK(t, mg_idx_open(&idx, write_example(t)));
    mg_gptds *ds = example_ds(t, &idx, 10);
    if (!ds) return;
    static const int32_t doc[8] = {2, 1, 6, 0, 4, 5, 3, 7};
    static const int64_t si[22] = {0, 0, 0, 4, 1, 0, 2, 1, 2, 5, 3, 3,
                                   4, 2, 4, 6, 5, 3, 7, 1, 7, 5};
    static const int64_t sh[10] = {8, 5, 6, 0, 4, 3, 2, 9, 7, 1};
    size_t n;
    MG_CHECK_EQ_INT(t, mg_gptds_epochs(ds), 1);
    check_i32(t, mg_gptds_document_index(ds, &n), doc, 8);
    MG_CHECK_EQ_INT(t, n, 8);
    check_i64(t, mg_gptds_sample_index(ds, &n), si, 22);
    MG_CHECK_EQ_INT(t, n, 11);
    check_i64(t, mg_gptds_shuffle_index(ds, &n), sh, 10);
    int64_t tok[5];
    static const int64_t s0[5] = {503, 300, 301, 700, 701};
    MG_CHECK_OK(t, mg_gptds_sample(ds, 0, -1, tok));
    check_i64(t, tok, s0, 5);
    MG_CHECK_ERR(t, mg_gptds_sample(ds, 10, -1, tok), MG_ERR_ARG, "sample 10");
    mg_gptds_free(ds);
    mg_idx_close(&idx);
}

MG_TEST(gptds_worked_example_separate_final_epoch)
{
    mg_idx idx;
    MG_CHECK_OK(t, mg_idx_open(&idx, write_example(t)));
    mg_gptds *ds = example_ds(t, &idx, 13);
    static const int32_t doc13[16] = {2, 1, 6, 0, 4, 5, 3, 7, 5, 0, 3, 4, 2, 6, 1, 7};
    static const int64_t sh13[21] = {3,  9,  2,  1,  7,  5,  4,  0,  8,  6, 18,
                                     11, 19, 14, 13, 17, 16, 20, 15, 10, 12};
    size_t n;
    if (ds) {
        MG_CHECK_EQ_INT(t, mg_gptds_epochs(ds), 2);
        MG_CHECK(t, mg_gptds_separate_final_epoch(ds));
        check_i32(t, mg_gptds_document_index(ds, &n), doc13, 16);
        check_i64(t, mg_gptds_shuffle_index(ds, &n), sh13, 21);
        MG_CHECK_EQ_INT(t, n, 21);
    }
    mg_gptds_free(ds);
    ds = example_ds(t, &idx, 25);
    static const int32_t doc25[24] = {5, 3, 0, 4, 6, 2, 2, 7, 1, 1, 0, 4,
                                      5, 6, 3, 7, 5, 1, 3, 4, 0, 7, 6, 2};
    static const int64_t sh25[24] = {8, 18, 13, 1, 4,  17, 14, 11, 19, 0,  7,  3,
                                     10, 6, 2,  5, 12, 20, 15, 9,  16, 31, 23, 29};
    if (ds) {
        MG_CHECK_EQ_INT(t, mg_gptds_epochs(ds), 3);
        MG_CHECK_EQ_INT(t, mg_gptds_len(ds), 32);
        check_i32(t, mg_gptds_document_index(ds, &n), doc25, 24);
        check_i64(t, mg_gptds_shuffle_index(ds, &n), sh25, 24);
    }
    mg_gptds_free(ds);
    mg_idx_close(&idx);
}

MG_TEST(gptds_sample_index_edges)
{
    /* non-drop: float32 count (E*T - extra = 33554433, S = 2 -> 16777216 samples) */
    int32_t lens[1] = {33554434};
    int32_t doc[1] = {0};
    int64_t *p = NULL;
    size_t rows;
    MG_CHECK_OK(t, mg_gpt_build_sample_index(lens, doc, 1, 2, 1, 33554434, 0, 1, &p, &rows));
    MG_CHECK_EQ_INT(t, rows, 16777217);
    free(p);
    /* non-drop with a partial last sample: it ends at the last document's end - extra */
    int32_t l2[2] = {3, 4};
    int32_t d2[2] = {1, 0};
    MG_CHECK_OK(t, mg_gpt_build_sample_index(l2, d2, 2, 3, 1, 7, 0, 1, &p, &rows));
    MG_CHECK_EQ_INT(t, rows, 3);
    static const int64_t want[6] = {0, 0, 0, 3, 1, 2};
    if (p) check_i64(t, p, want, 6);
    free(p);
    MG_CHECK_ERR(t, mg_gpt_build_sample_index(l2, d2, 2, 0, 1, 7, 1, 1, &p, &rows), MG_ERR_ARG,
                 "must be positive");
    /* empty split: (0 - 1) / S truncates to 0 samples, as the compiled helper does */
    MG_CHECK_OK(t, mg_gpt_build_sample_index(l2, d2, 0, 4, 1, 0, 1, 1, &p, &rows));
    MG_CHECK_EQ_INT(t, rows, 1);
    free(p);
    int64_t e;
    MG_CHECK_ERR(t, mg_gpt_num_epochs(0, 5, 4, 1, &e), MG_ERR_ARG, "without tokens");
    MG_CHECK_OK(t, mg_gpt_num_epochs(44, -1, 4, 1, &e));
    MG_CHECK_EQ_INT(t, e, 1);
    MG_CHECK_OK(t, mg_gpt_num_epochs(44, 22, 4, 1, &e)); /* 89 tokens -> 3 epochs */
    MG_CHECK_EQ_INT(t, e, 3);
}

MG_TEST(gptds_split_parse)
{
    mg_split_matrix m;
    MG_CHECK_OK(t, mg_split_parse("949,50,1", &m));
    MG_CHECK(t, m.beg[0] == 0 && m.end[0] == 0.949 && m.beg[1] == 0.949 && m.end[1] == 0.999);
    MG_CHECK(t, m.beg[2] == 0.999 && m.end[2] == 1.0 && m.present[2]);
    uint64_t b, e;
    mg_split_range(&m, 2, 17, &b, &e);
    MG_CHECK(t, b == 17 && e == 17);
    MG_CHECK_OK(t, mg_split_parse("99,1,0", &m));
    MG_CHECK(t, m.present[0] && m.present[1] && !m.present[2]);
    MG_CHECK_OK(t, mg_split_parse("0.7,0.2,0.1", &m));
    MG_CHECK(t, m.end[0] == 0.7000000000000001 && m.end[1] == 0.9000000000000001);
    MG_CHECK(t, m.end[2] == 1.0000000000000002);
    MG_CHECK_OK(t, mg_split_parse("1,1,1", &m));
    static const uint64_t r[6] = {0, 333, 333, 667, 667, 1000};
    for (int k = 0; k < 3; k++) {
        mg_split_range(&m, k, 1000, &b, &e);
        MG_CHECK(t, b == r[2 * k] && e == r[2 * k + 1]);
    }
    MG_CHECK_OK(t, mg_split_parse("969, 30, 1", &m));
    MG_CHECK_OK(t, mg_split_parse("100", &m));
    MG_CHECK(t, m.present[0] && !m.present[1] && !m.present[2]);
    MG_CHECK_ERR(t, mg_split_parse("1.2.3,4", &m), MG_ERR_ARG, "not a number");
    MG_CHECK_ERR(t, mg_split_parse("1,2,3,4", &m), MG_ERR_ARG, "more than three");
    MG_CHECK_ERR(t, mg_split_parse("0,0", &m), MG_ERR_ARG, "positive");
}

MG_TEST(gptds_blend_indices)
{
    int16_t di[10];
    int64_t si[10];
    static const double w3[3] = {0.5, 0.25, 0.25};
    MG_CHECK_OK(t, mg_blend_build_indices(w3, 3, 8, di, si));
    static const int16_t d8[8] = {0, 1, 2, 0, 0, 1, 2, 0};
    static const int64_t s8[8] = {0, 0, 0, 1, 2, 1, 1, 3};
    for (int i = 0; i < 8; i++) MG_CHECK(t, di[i] == d8[i] && si[i] == s8[i]);
    static const double w2[2] = {0.3, 0.7};
    MG_CHECK_OK(t, mg_blend_build_indices(w2, 2, 10, di, si));
    static const int16_t d10[10] = {1, 0, 1, 1, 0, 1, 1, 0, 1, 1};
    static const int64_t s10[10] = {0, 0, 1, 2, 1, 3, 4, 2, 5, 6};
    for (int i = 0; i < 10; i++) MG_CHECK(t, di[i] == d10[i] && si[i] == s10[i]);
    static const int64_t sizes[3] = {3, 1, 2};
    MG_CHECK_OK(t, mg_blend_build_exhaustive(sizes, 3, di, si));
    static const int16_t de[6] = {0, 2, 1, 0, 2, 0};
    static const int64_t se[6] = {0, 0, 0, 1, 1, 2};
    for (int i = 0; i < 6; i++) MG_CHECK(t, di[i] == de[i] && si[i] == se[i]);
}

MG_TEST(gptds_blend_sizes)
{
    static const int64_t size[3] = {1000, 170, 10};
    static const int64_t target[2][3] = {{300, 51, 3}, {700, 119, 7}};
    static const int64_t buffer[2][3] = {{302, 52, 4}, {704, 120, 8}};
    static const double w[2] = {0.3, 0.7};
    for (int d = 0; d < 2; d++)
        for (int k = 0; k < 3; k++) {
            MG_CHECK_EQ_INT(t, mg_blend_dataset_size(size[k], w[d], 0.0), target[d][k]);
            MG_CHECK_EQ_INT(t, mg_blend_dataset_size(size[k], w[d], 0.005), buffer[d][k]);
        }
}

MG_TEST(gptds_blend_parse)
{
    mg_gpt_blend b;
    const char *a1[] = {"30", " /d/a ", "70", "/d/b"};
    MG_CHECK_OK(t, mg_gpt_blend_parse(&b, a1, 4));
    MG_CHECK(t, b.n == 2 && b.weights && b.weights[0] == 30.0 && b.weights[1] == 70.0);
    if (b.n == 2) MG_CHECK_EQ_STR(t, b.prefixes[0], "/d/a");
    mg_gpt_blend_clear(&b);
    const char *a2[] = {"/d/a", "/d/b"};
    MG_CHECK_OK(t, mg_gpt_blend_parse(&b, a2, 2));
    MG_CHECK(t, b.n == 2 && !b.weights);
    mg_gpt_blend_clear(&b);
    const char *a3[] = {"/d/a"};
    MG_CHECK_OK(t, mg_gpt_blend_parse(&b, a3, 1));
    MG_CHECK(t, b.n == 1 && !b.weights);
    mg_gpt_blend_clear(&b);
    const char *a4[] = {"1", "x", "y", "z"}; /* Megatron: any() stops at "y", all() of [] */
    MG_CHECK_OK(t, mg_gpt_blend_parse(&b, a4, 4));
    MG_CHECK(t, b.n == 4 && !b.weights);
    mg_gpt_blend_clear(&b);
    const char *a5[] = {"x", "y", "1", "z"};
    MG_CHECK_ERR(t, mg_gpt_blend_parse(&b, a5, 4), MG_ERR_ARG, "is a weight");
    const char *a6[] = {"0x10", "p"};
    MG_CHECK_OK(t, mg_gpt_blend_parse(&b, a6, 2));
    MG_CHECK(t, b.n == 2 && !b.weights);
    mg_gpt_blend_clear(&b);
    MG_CHECK_ERR(t, mg_gpt_blend_parse(&b, a6, 0), MG_ERR_ARG, "no dataset");
}

MG_TEST(gptds_data_single_and_blend)
{
    const char *prefix = write_example(t);
    const char *args[] = {prefix};
    mg_gpt_blend b;
    MG_CHECK_OK(t, mg_gpt_blend_parse(&b, args, 1));
    mg_gpt_data_config c = {.blend = &b, .split = "8,2,0", .sizes = {10, -1, -1}, .seed = 1234,
                            .seq_length = 4, .add_extra_token = 1,
                            .drop_last_partial_validation = 1, .surplus = 0.005};
    mg_gpt_data *d = NULL;
    MG_CHECK_OK(t, mg_gpt_data_create(&d, &c));
    if (d) {
        MG_CHECK_EQ_INT(t, mg_gpt_data_len(d, MG_SPLIT_TRAIN), 10);
        int64_t tok[5];
        int id = -1;
        static const int64_t s0[5] = {503, 300, 301, 700, 701};
        MG_CHECK_OK(t, mg_gpt_data_sample(d, MG_SPLIT_TRAIN, 0, -1, tok, &id));
        check_i64(t, tok, s0, 5);
        MG_CHECK_EQ_INT(t, id, 0);
    }
    mg_gpt_data_free(d);
    mg_gpt_blend_clear(&b);
    /* weighted single prefix: a BlendedDataset over one GPTDataset of ceil(10*1.005) = 11 */
    const char *wargs[] = {"1", prefix};
    MG_CHECK_OK(t, mg_gpt_blend_parse(&b, wargs, 2));
    c.sizes[1] = 1;
    c.sizes[2] = 0;
    d = NULL;
    MG_CHECK_OK(t, mg_gpt_data_create(&d, &c));
    if (d) {
        MG_CHECK_EQ_INT(t, mg_gpt_data_len(d, MG_SPLIT_TRAIN), 10);
        MG_CHECK_EQ_INT(t, mg_gptds_len(mg_gpt_data_dataset(d, MG_SPLIT_TRAIN, 0)), 21);
    }
    mg_gpt_data_free(d);
    c.sizes[1] = -1;
    MG_CHECK_ERR(t, mg_gpt_data_create(&d, &c), MG_ERR_ARG, "sample count");
    mg_gpt_blend_clear(&b);
}

MG_TEST(gptds_data_per_split)
{
    const char *prefix = write_example(t);
    const char *wargs[] = {"1", prefix};
    mg_gpt_blend b;
    MG_CHECK_OK(t, mg_gpt_blend_parse(&b, wargs, 2));
    /* a per-split single prefix is a plain GPTDataset even with a weight: all 10 sequences
     * (50 tokens), one epoch for 10 samples -> (50 - 1) / 4 = 12 samples */
    mg_gpt_data_config c = {.sizes = {10, -1, -1}, .seed = 1234, .seq_length = 4,
                            .add_extra_token = 1, .drop_last_partial_validation = 1,
                            .surplus = 0.005, .blend_per_split = {&b, NULL, NULL}};
    mg_gpt_data *d = NULL;
    MG_CHECK_OK(t, mg_gpt_data_create(&d, &c));
    if (d) {
        MG_CHECK_EQ_INT(t, mg_gpt_data_len(d, MG_SPLIT_TRAIN), 12);
        MG_CHECK(t, !mg_gpt_data_has_split(d, MG_SPLIT_VALID));
        MG_CHECK_EQ_INT(t, mg_gpt_data_n_datasets(d, MG_SPLIT_TRAIN), 1);
    }
    mg_gpt_data_free(d);
    c.sizes[0] = -1; /* weighted without a sample count: Megatron's builder asserts */
    MG_CHECK_ERR(t, mg_gpt_data_create(&d, &c), MG_ERR_ARG, "needs a sample count");
    c.blend_per_split[0] = NULL;
    MG_CHECK_ERR(t, mg_gpt_data_create(&d, &c), MG_ERR_ARG, "no dataset prefix");
    mg_gpt_blend_clear(&b);
}

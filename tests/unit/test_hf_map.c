/* test_hf_map.c — mg/hf_map.h: every canonical element lands on exactly one element of the
 * HF tensors of its transform (a bijection onto their shapes), the QKV row map and its
 * inverse agree, and a few positions of Llama-style GQA and GPT-2 c_attn are pinned. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "mg/hf_map.h"

/* A GQA model: 4 heads in 2 groups of kv_channels 3. */
static mg_model_desc gqa(void)
{
    mg_model_desc m;
    mg_model_init(&m);
    m.num_attention_heads = 4;
    m.num_query_groups = 2;
    m.kv_channels = 3;
    m.hidden_size = 12;
    return m;
}

/* Checks that (row, col) -> (k, off) is a bijection onto p's HF tensors. */
static void check_bijection(mg_test_ctx *t, const mg_model_desc *m, const mg_param *p, int ntensors)
{
    int64_t size[3] = {0, 0, 0}, shape[2];
    for (int k = 0; k < ntensors; k++) {
        mg_hf_shape(m, p, k, shape);
        size[k] = shape[0] * shape[1];
    }
    MG_CHECK_EQ_INT(t, size[0] + size[1] + size[2], p->rows * p->cols);
    unsigned char *seen = calloc((size_t)(p->rows * p->cols), 1);
    for (int64_t r = 0; r < p->rows; r++)
        for (int64_t c = 0; c < p->cols; c++) {
            mg_hf_elem e = mg_hf_locate(m, p, r, c);
            MG_CHECK(t, e.k >= 0 && e.k < ntensors && e.off >= 0 && e.off < size[e.k]);
            if (e.k < 0 || e.k >= ntensors || e.off < 0 || e.off >= size[e.k]) continue;
            int64_t at = e.off + (e.k > 0 ? size[0] : 0) + (e.k > 1 ? size[1] : 0);
            MG_CHECK(t, !seen[at]);
            seen[at] = 1;
            if (c + 1 < p->cols) MG_CHECK_EQ_INT(t, mg_hf_locate(m, p, r, c + 1).off, e.off + e.step);
        }
    free(seen);
}

MG_TEST(hf_map_transforms_are_bijections)
{
    mg_model_desc m = gqa();
    static const mg_param_spec specs[] = {
        {.key = "copy", .hf_xform = MG_HF_COPY, .ndim = 2},
        {.key = "transpose", .hf_xform = MG_HF_TRANSPOSE, .ndim = 2},
        {.key = "qkv", .hf_xform = MG_HF_QKV, .ndim = 2},
        {.key = "qkv.bias", .hf_xform = MG_HF_QKV, .ndim = 1},
        {.key = "c_attn", .hf_xform = MG_HF_C_ATTN, .ndim = 2},
        {.key = "c_attn.bias", .hf_xform = MG_HF_C_ATTN, .ndim = 1},
        {.key = "gate_up", .hf_xform = MG_HF_GATE_UP, .ndim = 2},
    };
    static const int ntensors[] = {1, 1, 3, 3, 1, 1, 2};
    for (size_t i = 0; i < sizeof specs / sizeof specs[0]; i++) {
        int64_t rows = specs[i].hf_xform == MG_HF_GATE_UP ? 10 : 24; /* QKV: (4 + 2 * 2) * 3 */
        mg_param p = {&specs[i], 0, rows, specs[i].ndim == 2 ? 5 : 1};
        check_bijection(t, &m, &p, ntensors[i]);
    }
}

MG_TEST(hf_map_qkv_rows)
{
    mg_model_desc m = gqa();
    static const mg_param_spec spec = {.key = "qkv", .hf_xform = MG_HF_QKV, .ndim = 2};
    mg_param p = {&spec, 0, 24, 5};
    /* group 0 = q heads 0, 1 (rows 0-5), k head 0 (6-8), v head 0 (9-11); group 1 from 12 */
    MG_CHECK_EQ_INT(t, mg_hf_qkv_row(&m, 0, 0), 0);
    MG_CHECK_EQ_INT(t, mg_hf_qkv_row(&m, 0, 4), 4);
    MG_CHECK_EQ_INT(t, mg_hf_qkv_row(&m, 0, 6), 12);
    MG_CHECK_EQ_INT(t, mg_hf_qkv_row(&m, 1, 0), 6);
    MG_CHECK_EQ_INT(t, mg_hf_qkv_row(&m, 2, 5), 23);
    MG_CHECK_EQ_INT(t, mg_hf_qkv_row(&m, 1, 3), 18);
    for (int part = 0; part < 3; part++)
        for (int64_t hr = 0; hr < (part ? 6 : 12); hr++) {
            mg_hf_elem e = mg_hf_locate(&m, &p, mg_hf_qkv_row(&m, part, hr), 2);
            MG_CHECK(t, e.k == part && e.off == hr * 5 + 2);
        }
}

MG_TEST(hf_map_c_attn_columns)
{
    mg_model_desc m = gqa();
    static const mg_param_spec spec = {.key = "c_attn", .hf_xform = MG_HF_C_ATTN, .ndim = 2};
    mg_param p = {&spec, 0, 24, 12};
    int64_t shape[2];
    MG_CHECK_EQ_INT(t, mg_hf_shape(&m, &p, 0, shape), 2);
    MG_CHECK(t, shape[0] == 12 && shape[1] == 24);
    /* canonical row 6 = k head 0 row 0 -> column 12 (after the 12 q columns); input row 1 */
    mg_hf_elem e = mg_hf_locate(&m, &p, 6, 1);
    MG_CHECK(t, e.k == 0 && e.off == 1 * 24 + 12 && e.step == 24);
    /* canonical row 21 = v head 1 row 0 -> column 12 + 6 + 3 */
    MG_CHECK_EQ_INT(t, mg_hf_locate(&m, &p, 21, 0).off, 21);
    /* canonical row 12 = q head 2 row 0 -> column 6 */
    MG_CHECK_EQ_INT(t, mg_hf_locate(&m, &p, 12, 0).off, 6);
}

/* hf_map.c — mg/hf_map.h: canonical Megatron elements to Hugging Face tensor elements (QKV
 * interleave with query groups, GPT-2 Conv1D and c_attn, SwiGLU gate/up). */
#include "mg/hf_map.h"

/* Rows per query group in the canonical QKV: the group's q heads, one k, one v. */
static int64_t group_rows(const mg_model_desc *m)
{
    return (m->num_attention_heads / m->num_query_groups + 2) * m->kv_channels;
}

/* The HF part (0 q, 1 k, 2 v) and its row holding canonical QKV row r. */
static int64_t qkv_hf_row(const mg_model_desc *m, int64_t r, int *part)
{
    int64_t d = m->kv_channels, hpg = m->num_attention_heads / m->num_query_groups;
    int64_t g = r / group_rows(m), w = r % group_rows(m);
    if (w < hpg * d) {
        *part = 0;
        return g * hpg * d + w;
    }
    *part = w < (hpg + 1) * d ? 1 : 2;
    return g * d + w - (hpg + *part - 1) * d;
}

int64_t mg_hf_qkv_row(const mg_model_desc *m, int part, int64_t hf_row)
{
    int64_t d = m->kv_channels, hpg = m->num_attention_heads / m->num_query_groups;
    int64_t head = hf_row / d, w = hf_row % d;
    if (part == 0) return (head / hpg) * group_rows(m) + (head % hpg) * d + w;
    return head * group_rows(m) + (hpg + part - 1) * d + w;
}

mg_hf_elem mg_hf_locate(const mg_model_desc *m, const mg_param *p, int64_t row, int64_t col)
{
    int64_t qd = m->num_attention_heads * m->kv_channels;
    int64_t kd = m->num_query_groups * m->kv_channels;
    mg_hf_elem e = {0, row * p->cols + col, 1};
    int part;
    switch (p->spec->hf_xform) {
    case MG_HF_COPY: break;
    case MG_HF_TRANSPOSE: e.off = col * p->rows + row, e.step = p->rows; break;
    case MG_HF_QKV: {
        int64_t hr = qkv_hf_row(m, row, &part);
        e.k = part, e.off = hr * p->cols + col;
        break;
    }
    case MG_HF_C_ATTN: {
        int64_t hr = qkv_hf_row(m, row, &part);
        int64_t c = (part == 0 ? 0 : part == 1 ? qd : qd + kd) + hr;
        if (p->spec->ndim == 2) e.off = col * p->rows + c, e.step = p->rows;
        else e.off = c;
        break;
    }
    case MG_HF_GATE_UP: {
        int64_t f = p->rows / 2;
        e.k = row >= f, e.off = (row - e.k * f) * p->cols + col;
        break;
    }
    }
    return e;
}

int mg_hf_shape(const mg_model_desc *m, const mg_param *p, int k, int64_t shape[2])
{
    shape[0] = p->rows;
    shape[1] = p->cols;
    switch (p->spec->hf_xform) {
    case MG_HF_COPY: break;
    case MG_HF_QKV:
        shape[0] = (k == 0 ? m->num_attention_heads : m->num_query_groups) * m->kv_channels;
        break;
    case MG_HF_GATE_UP: shape[0] = p->rows / 2; break;
    case MG_HF_TRANSPOSE:
    case MG_HF_C_ATTN:
        if (p->spec->ndim == 2) shape[0] = p->cols, shape[1] = p->rows;
        break;
    }
    return p->spec->ndim;
}

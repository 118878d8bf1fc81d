/* schema_layout.c — mg/schema.h: TP shard shapes and divisibility, pipeline placement
 * (even, or uneven first/last stage), and the `_extra_state` keys of each stage.
 *
 * Contract (mg/schema.h; docs/FORMATS.md §5.3-5.8): TE layers carry extra states on
 * linear_qkv, core_attention, linear_proj, linear_fc1, linear_fc2; local layers on the four
 * linears; the last stage also on output_layer (both specs, tied or not).
 */
#include "mg/schema.h"

#include <stdio.h>

void mg_schema_shard_shape(const mg_param *p, const mg_model_desc *m, int64_t tp,
                           int64_t vocab_padded, int64_t shape[2], int *ndim)
{
    (void)m;
    int64_t rows = p->rows, cols = p->cols;
    switch (p->spec->split) {
    case MG_SPLIT_VOCAB: rows = vocab_padded / tp; break;
    case MG_SPLIT_COLUMN:
    case MG_SPLIT_QKV:
    case MG_SPLIT_SWIGLU: rows /= tp; break;
    case MG_SPLIT_ROW: cols /= tp; break;
    case MG_SPLIT_REPLICATED: break;
    }
    *ndim = p->spec->ndim;
    shape[0] = rows;
    shape[1] = cols;
}

mg_status mg_schema_check_tp(const mg_model_desc *m, int64_t tp)
{
    MG_RETURN_IF(tp < 1, MG_ERR_ARG, "tensor parallel size must be >= 1");
    MG_RETURN_IF(m->num_attention_heads % tp, MG_ERR_ARG,
                 "%lld attention heads cannot be split over %lld tensor-parallel ranks",
                 (long long)m->num_attention_heads, (long long)tp);
    /* Fewer groups than ranks: Megatron-Core splits each group's rows over tp / ng ranks
     * (attention.py all-gathers them back), so the QKV rows must still divide by tp. */
    int64_t qkv_rows = (m->num_attention_heads + 2 * m->num_query_groups) * m->kv_channels;
    MG_RETURN_IF(m->num_query_groups % tp && (tp % m->num_query_groups || qkv_rows % tp),
                 MG_ERR_UNSUPPORTED,
                 "not supported yet: %lld query groups over %lld tensor-parallel ranks",
                 (long long)m->num_query_groups, (long long)tp);
    MG_RETURN_IF(m->ffn_hidden_size % tp, MG_ERR_ARG,
                 "ffn_hidden_size %lld cannot be split over %lld tensor-parallel ranks",
                 (long long)m->ffn_hidden_size, (long long)tp);
    return MG_OK;
}

int mg_schema_extra_state(const mg_model_desc *m, mg_names names, int64_t local_layers,
                          int last_stage, size_t i, char *buf, size_t cap)
{
    (void)m;
    static const char *const te[] = {"self_attention.linear_qkv", "self_attention.core_attention",
                                     "self_attention.linear_proj", "mlp.linear_fc1",
                                     "mlp.linear_fc2"};
    static const char *const local[] = {"self_attention.linear_qkv", "self_attention.linear_proj",
                                        "mlp.linear_fc1", "mlp.linear_fc2"};
    if (names == MG_NAMES_LEGACY) return 0;
    const char *const *mods = names == MG_NAMES_TE ? te : local;
    size_t per = names == MG_NAMES_TE ? 5 : 4;
    size_t nl = (size_t)local_layers * per;
    if (i < nl) {
        snprintf(buf, cap, "decoder.layers.%zu.%s._extra_state", i / per, mods[i % per]);
        return 1;
    }
    if (last_stage && i == nl) {
        snprintf(buf, cap, "output_layer._extra_state");
        return 1;
    }
    return 0;
}

static mg_status pp_uneven(int64_t L, int64_t pp, int64_t first, int64_t last, int64_t p,
                           int64_t *offset, int64_t *count)
{
    int64_t mid = pp - (first > 0) - (last > 0);
    int64_t rest = L - first - last;
    MG_RETURN_IF(rest < 0 || (mid == 0 && rest != 0) || (mid > 0 && rest % mid), MG_ERR_ARG,
                 "%lld layers cannot be placed on %lld pipeline stages with %lld first and "
                 "%lld last", (long long)L, (long long)pp, (long long)first, (long long)last);
    int64_t per = mid > 0 ? rest / mid : 0;
    MG_RETURN_IF(mid > 0 && per == 0, MG_ERR_ARG, "pipeline stages without layers");
    if (p == 0) {
        *offset = 0;
        *count = first > 0 ? first : per;
    } else {
        *offset = (first > 0 ? first : 0) + (p - (first > 0)) * per;
        *count = (p == pp - 1 && last > 0) ? last : per;
    }
    return MG_OK;
}

mg_status mg_schema_pp_layers(int64_t num_layers, int64_t pp, int64_t first, int64_t last,
                              int64_t p, int64_t *offset, int64_t *count)
{
    MG_RETURN_IF(pp < 1 || p < 0 || p >= pp, MG_ERR_ARG, "bad pipeline stage %lld of %lld",
                 (long long)p, (long long)pp);
    if (pp == 1) {
        *offset = 0;
        *count = num_layers;
        return MG_OK;
    }
    if (first > 0 || last > 0) return pp_uneven(num_layers, pp, first, last, p, offset, count);
    MG_RETURN_IF(num_layers % pp, MG_ERR_ARG,
                 "%lld layers cannot be split evenly over %lld pipeline stages",
                 (long long)num_layers, (long long)pp);
    *count = num_layers / pp;
    *offset = p * *count;
    return MG_OK;
}

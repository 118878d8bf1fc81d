/* flops.c — Megatron's num_floating_point_operations for dense GPT models (flops.h). */
#include "flops.h"

double mg_flops_per_batch(const mg_model_desc *m, int64_t batch_size)
{
    const int64_t h = m->hidden_size, L = m->num_layers, s = m->seq_length;
    const int64_t q = m->kv_channels * m->num_attention_heads;
    const int64_t kv = m->kv_channels * m->num_query_groups;
    const int64_t ffn_factor = m->swiglu ? 3 : 2;
    /* MLP (integer in Python) */
    int64_t mlp = 3 * 2 * h * (m->ffn_hidden_size * ffn_factor * L);
    /* standard_self_attn_term: float because of the "/ 2" */
    double attn = 3 * 2 * ((double)(h * (q + kv + kv)) + (double)(q * s) / 2 * 2 +
                           (double)(q * h));
    double self_attn = attn * (double)L;
    int64_t logit = 3 * 2 * h * m->padded_vocab_size * 1;
    double inner = (double)mlp + self_attn;
    inner = inner + 0; /* MTP term: no MTP layers */
    inner = inner + (double)logit;
    return (double)(batch_size * s) * inner;
}

double mg_tflops_per_gpu(double flops, double seconds, int64_t world_size)
{
    return flops / (seconds * 1e12 * (double)world_size);
}

double mg_mfu(double flops_per_second, double peak_flops_per_second)
{
    if (!(peak_flops_per_second > 0)) return -1.0;
    return flops_per_second / peak_flops_per_second;
}

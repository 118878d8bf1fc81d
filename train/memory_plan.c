/* memory_plan.c — exact parameter counts and Megatron's theoretical memory (memory_plan.h).
 * The Megatron functions keep Python's operation order so the doubles match its floats. */
#include "memory_plan.h"

static int64_t norm_params(const mg_model_desc *m) { return m->rmsnorm ? m->hidden_size : 2 * m->hidden_size; }

/* One layer's parameters; tp splits the column/row-parallel parts (tp = 1: the whole). */
static int64_t layer_params(const mg_model_desc *m, int64_t tp)
{
    const int64_t h = m->hidden_size;
    const int64_t q = m->kv_channels * m->num_attention_heads;
    const int64_t qkv = q + 2 * m->kv_channels * m->num_query_groups;
    const int64_t fc1 = m->ffn_hidden_size * (m->swiglu ? 2 : 1);
    int64_t n = 2 * norm_params(m);
    n += h * qkv / tp + ((m->add_bias_linear || m->add_qkv_bias) ? qkv / tp : 0);
    n += q * h / tp + (m->add_bias_linear ? h : 0);
    n += h * fc1 / tp + (m->add_bias_linear ? fc1 / tp : 0);
    n += m->ffn_hidden_size * h / tp + (m->add_bias_linear ? h : 0);
    return n;
}

void mg_param_count(const mg_model_desc *m, mg_param_counts *out)
{
    const int64_t h = m->hidden_size;
    out->embedding = m->padded_vocab_size * h;
    out->position = m->learned_positions ? m->max_position_embeddings * h : 0;
    out->per_layer = layer_params(m, 1);
    out->layers = out->per_layer * m->num_layers;
    out->final_norm = norm_params(m);
    out->output = m->tied_embeddings ? 0 : m->padded_vocab_size * h;
    out->total = out->embedding + out->position + out->layers + out->final_norm + out->output;
}

/* Layers of pipeline stage `stage` (m->pp_first / pp_last: uneven first/last stages). */
static int64_t stage_layers(const mg_model_desc *m, int64_t stage)
{
    int64_t pp = m->pp > 0 ? m->pp : 1, L = m->num_layers;
    if (pp == 1) return L;
    int64_t first = m->pp_first > 0 ? m->pp_first : 0, last = m->pp_last > 0 ? m->pp_last : 0;
    int64_t middle = pp - (first ? 1 : 0) - (last ? 1 : 0);
    int64_t rest = L - first - last, each = middle > 0 ? rest / middle : 0;
    if (stage == 0 && first) return first;
    if (stage == pp - 1 && last) return last;
    return each;
}

int64_t mg_param_count_rank(const mg_model_desc *m)
{
    const int64_t tp = m->tp > 0 ? m->tp : 1, pp = m->pp > 0 ? m->pp : 1;
    const int64_t h = m->hidden_size, emb = m->padded_vocab_size * h / tp;
    const int64_t layer = layer_params(m, tp);
    int64_t first = stage_layers(m, 0) * layer + emb;
    if (m->learned_positions) first += m->max_position_embeddings * h;
    int64_t last = pp == 1 ? first : stage_layers(m, pp - 1) * layer;
    last += norm_params(m) + ((pp == 1 && m->tied_embeddings) ? 0 : emb);
    int64_t best = first > last ? first : last;
    for (int64_t st = 1; st + 1 < pp; st++) {
        int64_t mid = stage_layers(m, st) * layer;
        if (mid > best) best = mid;
    }
    return best;
}

double mg_megatron_weight_optimizer_bytes(const mg_model_desc *m, const mg_mem_setup *s)
{
    const int64_t h = m->hidden_size, tp = m->tp, pp = m->pp;
    const int64_t q = m->kv_channels * m->num_attention_heads;
    const double ratio = (double)q / (double)h;
    const double gated = m->swiglu ? 3.0 / 2.0 : 1.0;
    const int64_t norm_size = m->rmsnorm ? 1 : 2;
    double self_attn = (double)(2 * h * h) *
                       ((1 + ((double)m->num_query_groups / (double)m->num_attention_heads)) *
                        ratio);
    double dense = (double)(2 * h) * (((double)m->ffn_hidden_size * gated) + (double)norm_size) +
                   self_attn;
    double embedding_size = (double)(h * m->padded_vocab_size);
    double block = dense * (double)m->num_layers + 0.0 + (double)(norm_size * h);
    double mtp = 0.0;
    double shard = ((block / (double)pp) + mtp + embedding_size) / (double)tp;
    if (!m->tied_embeddings && pp == 1) shard += embedding_size / (double)tp;
    double per_param = !s->distributed_optimizer ? 18.0
                                                 : 6 + (12 / (double)s->data_parallel_size);
    return shard * per_param;
}

/* Interleaving penalty and the 1F1B in-flight discount, shared by both activation forms. */
static double pipeline_factor(const mg_model_desc *m, const mg_mem_setup *s, double act)
{
    const double pp = (double)m->pp;
    if (s->virtual_pipeline_size > 0)
        act *= 1 + ((pp - 1) / (pp * (double)s->virtual_pipeline_size));
    if (s->virtual_pipeline_size <= 0 && m->pp > 1 && s->num_microbatches > 0) {
        double r = (double)s->num_microbatches / pp;
        act *= r < 1 ? r : 1;
    }
    return act;
}

static double activation_sp(const mg_model_desc *m, const mg_mem_setup *s)
{
    const int64_t sb = m->seq_length * s->micro_batch_size, h = m->hidden_size;
    double act = (double)(sb * h) *
                 (18 + (4 * ((double)m->ffn_hidden_size / (double)h)));
    act *= (double)m->num_layers;
    act += (double)(8 * sb * m->pp);
    act += (double)(sb * h * m->pp);
    act = pipeline_factor(m, s, act);
    if (m->pp == 1)
        act += (double)(sb * h * 4) * (1 + ((double)m->padded_vocab_size / (double)h));
    return act / (double)m->tp;
}

static double activation_no_sp(const mg_model_desc *m, const mg_mem_setup *s)
{
    const int64_t sb = m->seq_length * s->micro_batch_size, h = m->hidden_size;
    double act = (double)(sb * h) * (10 + (24 / (double)m->tp));
    act = act * (double)m->num_layers;
    act += (double)(8 * sb * m->pp);
    act += (double)(sb * h * m->pp);
    act = pipeline_factor(m, s, act);
    if (m->pp == 1) {
        double logits = (double)(sb * m->padded_vocab_size);
        logits /= (double)m->tp;
        act += (logits + (double)(sb * h)) * 2;
    }
    return act * 1.05;
}

double mg_megatron_activation_bytes(const mg_model_desc *m, const mg_mem_setup *s)
{
    return s->sequence_parallel_selective ? activation_sp(m, s) : activation_no_sp(m, s);
}

void mg_memory_plan(const mg_model_desc *m, const mg_mem_setup *s, mg_precision prec,
                    mg_mem_plan *out)
{
    out->params = mg_param_count_rank(m);
    double n = (double)out->params, dp = (double)(s->data_parallel_size > 0 ? s->data_parallel_size : 1);
    double act = mg_megatron_activation_bytes(m, s);
    if (prec == MG_PREC_FP32) {
        out->weights = 4 * n;
        out->gradients = 4 * n;
        out->optimizer = (s->distributed_optimizer ? 8 / dp : 8) * n;
        out->activations = 2 * act;
    } else {
        out->weights = 2 * n;
        out->gradients = 4 * n;
        out->optimizer = (s->distributed_optimizer ? 12 / dp : 12) * n;
        out->activations = act;
    }
    out->total = out->weights + out->gradients + out->optimizer + out->activations;
}

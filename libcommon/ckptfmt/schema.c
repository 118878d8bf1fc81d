/* schema.c — mg/schema.h: the parameter tables of the GPT-2 and Llama (Llama, Mistral,
 * Qwen2) families, their canonical shapes and names. Placement, shard shapes and extra
 * states live in schema_layout.c.
 *
 * Contract (mg/schema.h): names follow Megatron-Core's GPTModel (TE and local specs, checked
 * against megatron-core 0.16.1's state_dict), legacy Megatron (flattened), and transformers'
 * GPT2LMHeadModel / LlamaForCausalLM / Qwen2ForCausalLM state dicts.
 */
#include "mg/schema.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define L_TE "decoder.layers.%lld."
#define L_LEG "language_model.encoder.layers.%lld."
#define GPT2_H "transformer.h.%lld."
#define LLAMA_H "model.layers.%lld."

static const mg_param_spec gpt2_table[] = {
    {"word_embeddings.weight", MG_STAGE_FIRST, "embedding.word_embeddings.weight",
     "embedding.word_embeddings.weight", "language_model.embedding.word_embeddings.weight",
     {"transformer.wte.weight", NULL}, MG_SPLIT_VOCAB, MG_HF_COPY, 2, 0},
    {"position_embeddings.weight", MG_STAGE_FIRST, "embedding.position_embeddings.weight",
     "embedding.position_embeddings.weight",
     "language_model.embedding.position_embeddings.weight", {"transformer.wpe.weight", NULL},
     MG_SPLIT_REPLICATED, MG_HF_COPY, 2, MG_NEED_POS},
    {"input_norm.weight", MG_STAGE_LAYER, L_TE "self_attention.linear_qkv.layer_norm_weight",
     L_TE "input_layernorm.weight", L_LEG "input_norm.weight", {GPT2_H "ln_1.weight", NULL},
     MG_SPLIT_REPLICATED, MG_HF_COPY, 1, 0},
    {"input_norm.bias", MG_STAGE_LAYER, L_TE "self_attention.linear_qkv.layer_norm_bias",
     L_TE "input_layernorm.bias", L_LEG "input_norm.bias", {GPT2_H "ln_1.bias", NULL},
     MG_SPLIT_REPLICATED, MG_HF_COPY, 1, MG_NEED_NORMB},
    {"qkv.weight", MG_STAGE_LAYER, L_TE "self_attention.linear_qkv.weight",
     L_TE "self_attention.linear_qkv.weight", L_LEG "self_attention.query_key_value.weight",
     {GPT2_H "attn.c_attn.weight", NULL}, MG_SPLIT_QKV, MG_HF_C_ATTN, 2, 0},
    {"qkv.bias", MG_STAGE_LAYER, L_TE "self_attention.linear_qkv.bias",
     L_TE "self_attention.linear_qkv.bias", L_LEG "self_attention.query_key_value.bias",
     {GPT2_H "attn.c_attn.bias", NULL}, MG_SPLIT_QKV, MG_HF_C_ATTN, 1, MG_NEED_QKVB},
    {"proj.weight", MG_STAGE_LAYER, L_TE "self_attention.linear_proj.weight",
     L_TE "self_attention.linear_proj.weight", L_LEG "self_attention.dense.weight",
     {GPT2_H "attn.c_proj.weight", NULL}, MG_SPLIT_ROW, MG_HF_TRANSPOSE, 2, 0},
    {"proj.bias", MG_STAGE_LAYER, L_TE "self_attention.linear_proj.bias",
     L_TE "self_attention.linear_proj.bias", L_LEG "self_attention.dense.bias",
     {GPT2_H "attn.c_proj.bias", NULL}, MG_SPLIT_REPLICATED, MG_HF_COPY, 1, MG_NEED_LINB},
    {"post_norm.weight", MG_STAGE_LAYER, L_TE "mlp.linear_fc1.layer_norm_weight",
     L_TE "pre_mlp_layernorm.weight", L_LEG "post_attention_norm.weight",
     {GPT2_H "ln_2.weight", NULL}, MG_SPLIT_REPLICATED, MG_HF_COPY, 1, 0},
    {"post_norm.bias", MG_STAGE_LAYER, L_TE "mlp.linear_fc1.layer_norm_bias",
     L_TE "pre_mlp_layernorm.bias", L_LEG "post_attention_norm.bias",
     {GPT2_H "ln_2.bias", NULL}, MG_SPLIT_REPLICATED, MG_HF_COPY, 1, MG_NEED_NORMB},
    {"fc1.weight", MG_STAGE_LAYER, L_TE "mlp.linear_fc1.weight", L_TE "mlp.linear_fc1.weight",
     L_LEG "mlp.dense_h_to_4h.weight", {GPT2_H "mlp.c_fc.weight", NULL}, MG_SPLIT_COLUMN,
     MG_HF_TRANSPOSE, 2, 0},
    {"fc1.bias", MG_STAGE_LAYER, L_TE "mlp.linear_fc1.bias", L_TE "mlp.linear_fc1.bias",
     L_LEG "mlp.dense_h_to_4h.bias", {GPT2_H "mlp.c_fc.bias", NULL}, MG_SPLIT_COLUMN,
     MG_HF_COPY, 1, MG_NEED_LINB},
    {"fc2.weight", MG_STAGE_LAYER, L_TE "mlp.linear_fc2.weight", L_TE "mlp.linear_fc2.weight",
     L_LEG "mlp.dense_4h_to_h.weight", {GPT2_H "mlp.c_proj.weight", NULL}, MG_SPLIT_ROW,
     MG_HF_TRANSPOSE, 2, 0},
    {"fc2.bias", MG_STAGE_LAYER, L_TE "mlp.linear_fc2.bias", L_TE "mlp.linear_fc2.bias",
     L_LEG "mlp.dense_4h_to_h.bias", {GPT2_H "mlp.c_proj.bias", NULL}, MG_SPLIT_REPLICATED,
     MG_HF_COPY, 1, MG_NEED_LINB},
    {"final_norm.weight", MG_STAGE_LAST, "decoder.final_layernorm.weight",
     "decoder.final_layernorm.weight", "language_model.encoder.final_norm.weight",
     {"transformer.ln_f.weight", NULL}, MG_SPLIT_REPLICATED, MG_HF_COPY, 1, 0},
    {"final_norm.bias", MG_STAGE_LAST, "decoder.final_layernorm.bias",
     "decoder.final_layernorm.bias", "language_model.encoder.final_norm.bias",
     {"transformer.ln_f.bias", NULL}, MG_SPLIT_REPLICATED, MG_HF_COPY, 1, MG_NEED_NORMB},
    {"output_layer.weight", MG_STAGE_LAST, "output_layer.weight", "output_layer.weight",
     "language_model.output_layer.weight", {"lm_head.weight", NULL}, MG_SPLIT_VOCAB,
     MG_HF_COPY, 2, MG_NEED_UNTIED},
};

static const mg_param_spec llama_table[] = {
    {"word_embeddings.weight", MG_STAGE_FIRST, "embedding.word_embeddings.weight",
     "embedding.word_embeddings.weight", "language_model.embedding.word_embeddings.weight",
     {"model.embed_tokens.weight", NULL}, MG_SPLIT_VOCAB, MG_HF_COPY, 2, 0},
    {"input_norm.weight", MG_STAGE_LAYER, L_TE "self_attention.linear_qkv.layer_norm_weight",
     L_TE "input_layernorm.weight", L_LEG "input_norm.weight",
     {LLAMA_H "input_layernorm.weight", NULL}, MG_SPLIT_REPLICATED, MG_HF_COPY, 1, 0},
    {"qkv.weight", MG_STAGE_LAYER, L_TE "self_attention.linear_qkv.weight",
     L_TE "self_attention.linear_qkv.weight", L_LEG "self_attention.query_key_value.weight",
     {LLAMA_H "self_attn.%s_proj.weight", NULL}, MG_SPLIT_QKV, MG_HF_QKV, 2, 0},
    {"qkv.bias", MG_STAGE_LAYER, L_TE "self_attention.linear_qkv.bias",
     L_TE "self_attention.linear_qkv.bias", L_LEG "self_attention.query_key_value.bias",
     {LLAMA_H "self_attn.%s_proj.bias", NULL}, MG_SPLIT_QKV, MG_HF_QKV, 1, MG_NEED_QKVB},
    {"proj.weight", MG_STAGE_LAYER, L_TE "self_attention.linear_proj.weight",
     L_TE "self_attention.linear_proj.weight", L_LEG "self_attention.dense.weight",
     {LLAMA_H "self_attn.o_proj.weight", NULL}, MG_SPLIT_ROW, MG_HF_COPY, 2, 0},
    {"post_norm.weight", MG_STAGE_LAYER, L_TE "mlp.linear_fc1.layer_norm_weight",
     L_TE "pre_mlp_layernorm.weight", L_LEG "post_attention_norm.weight",
     {LLAMA_H "post_attention_layernorm.weight", NULL}, MG_SPLIT_REPLICATED, MG_HF_COPY, 1, 0},
    {"fc1.weight", MG_STAGE_LAYER, L_TE "mlp.linear_fc1.weight", L_TE "mlp.linear_fc1.weight",
     L_LEG "mlp.dense_h_to_4h.weight",
     {LLAMA_H "mlp.gate_proj.weight", LLAMA_H "mlp.up_proj.weight"}, MG_SPLIT_SWIGLU,
     MG_HF_GATE_UP, 2, 0},
    {"fc2.weight", MG_STAGE_LAYER, L_TE "mlp.linear_fc2.weight", L_TE "mlp.linear_fc2.weight",
     L_LEG "mlp.dense_4h_to_h.weight", {LLAMA_H "mlp.down_proj.weight", NULL}, MG_SPLIT_ROW,
     MG_HF_COPY, 2, 0},
    {"final_norm.weight", MG_STAGE_LAST, "decoder.final_layernorm.weight",
     "decoder.final_layernorm.weight", "language_model.encoder.final_norm.weight",
     {"model.norm.weight", NULL}, MG_SPLIT_REPLICATED, MG_HF_COPY, 1, 0},
    {"output_layer.weight", MG_STAGE_LAST, "output_layer.weight", "output_layer.weight",
     "language_model.output_layer.weight", {"lm_head.weight", NULL}, MG_SPLIT_VOCAB,
     MG_HF_COPY, 2, MG_NEED_UNTIED},
};

static unsigned model_needs(const mg_model_desc *m)
{
    unsigned need = 0;
    if (m->learned_positions) need |= MG_NEED_POS;
    if (!m->rmsnorm) need |= MG_NEED_NORMB;
    if (m->add_bias_linear) need |= MG_NEED_LINB | MG_NEED_QKVB;
    if (m->add_qkv_bias) need |= MG_NEED_QKVB;
    if (!m->tied_embeddings) need |= MG_NEED_UNTIED;
    return need;
}

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Canonical [rows, cols] of a parameter: vocab tensors V rows; QKV (nh + 2 ng) d rows;
 * fc1 F (2F with SwiGLU); proj/fc2 take nh d / F inputs; everything else H. */
static void canonical_shape(const mg_param_spec *s, const mg_model_desc *m, int64_t *rows,
                            int64_t *cols)
{
    int64_t H = m->hidden_size, F = m->ffn_hidden_size, d = m->kv_channels;
    int64_t rw = H, in = H;
    if (starts(s->key, "word_embeddings") || starts(s->key, "output_layer")) rw = m->vocab_size;
    else if (starts(s->key, "position_embeddings")) rw = m->max_position_embeddings;
    else if (starts(s->key, "qkv")) rw = (m->num_attention_heads + 2 * m->num_query_groups) * d;
    else if (starts(s->key, "fc1")) rw = m->swiglu ? 2 * F : F;
    else if (starts(s->key, "proj")) in = m->num_attention_heads * d;
    else if (starts(s->key, "fc2")) in = F;
    *rows = rw;
    *cols = s->ndim == 2 ? in : 1;
}

mg_status mg_schema_params(const mg_model_desc *m, mg_param **params, size_t *n)
{
    const mg_param_spec *tab = m->arch == MG_ARCH_GPT2 ? gpt2_table : llama_table;
    size_t ntab = m->arch == MG_ARCH_GPT2 ? sizeof gpt2_table / sizeof gpt2_table[0]
                                          : sizeof llama_table / sizeof llama_table[0];
    MG_RETURN_IF(m->vocab_size <= 0, MG_ERR_ARG, "the true vocabulary size is unknown");
    unsigned need = model_needs(m);
    mg_param *out = mg_calloc(ntab * (size_t)(m->num_layers + 1), sizeof(*out));
    if (!out) return MG_ERR_NOMEM;
    size_t k = 0;
    for (int pass = 0; pass < 3; pass++) {
        int64_t reps = pass == 1 ? m->num_layers : 1;
        for (int64_t l = 0; l < reps; l++)
            for (size_t i = 0; i < ntab; i++) {
                if ((int)tab[i].stage != pass || (tab[i].need & ~need)) continue;
                out[k].spec = &tab[i];
                out[k].layer = pass == 1 ? l : -1;
                canonical_shape(&tab[i], m, &out[k].rows, &out[k].cols);
                k++;
            }
    }
    *params = out;
    *n = k;
    return MG_OK;
}

void mg_schema_mcore_name(const mg_param *p, mg_names names, int64_t local_layer, char *buf,
                          size_t cap)
{
    const char *pat = names == MG_NAMES_TE      ? p->spec->te
                      : names == MG_NAMES_LOCAL ? p->spec->local
                                                : p->spec->legacy;
    snprintf(buf, cap, pat, (long long)local_layer);
}

int mg_schema_hf_names(const mg_param *p, const mg_model_desc *m, char bufs[3][256])
{
    (void)m;
    const mg_param_spec *s = p->spec;
    long long l = (long long)p->layer;
    if (s->hf_xform == MG_HF_QKV) {
        static const char *const qkv[3] = {"q", "k", "v"};
        for (int i = 0; i < 3; i++) snprintf(bufs[i], 256, s->hf[0], l, qkv[i]);
        return 3;
    }
    snprintf(bufs[0], 256, s->hf[0], l);
    if (s->hf_xform != MG_HF_GATE_UP) return 1;
    snprintf(bufs[1], 256, s->hf[1], l);
    return 2;
}

const char *mg_schema_split_name(mg_split s)
{
    static const char *const names[] = {"replicated", "column", "row", "vocab", "qkv", "swiglu"};
    return (unsigned)s < 6 ? names[s] : "?";
}

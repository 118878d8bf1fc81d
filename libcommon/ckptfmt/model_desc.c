/* model_desc.c — mg/model_desc.h: defaults, validation, vocabulary padding, and the Megatron
 * `args` Namespace reader/writer. config.json lives in model_desc_hf.c.
 *
 * Contract (mg/model_desc.h): args written carry every model argument Megatron's
 * load_args_from_checkpoint / check_checkpoint_args reads (docs/FORMATS.md §5.2); args read must
 * describe a dense GPT model of a supported family (MoE, virtual pipeline, rotary
 * interleaving, layernorm-1p, qk-layernorm refused as "not supported yet").
 */
#include "mg/model_desc.h"

#include <stdlib.h>
#include <string.h>

void mg_model_init(mg_model_desc *m)
{
    memset(m, 0, sizeof(*m));
    m->arch = MG_ARCH_LLAMA;
    m->make_vocab_size_divisible_by = 128;
    m->dtype = MG_TD_F32;
    m->tp = m->pp = 1;
    m->norm_epsilon = 1e-5;
    m->rotary_base = 10000.0;
}

void mg_model_free(mg_model_desc *m)
{
    if (!m) return;
    free(m->hf_config_json);
    m->hf_config_json = NULL;
}

mg_status mg_model_copy(mg_model_desc *dst, const mg_model_desc *src)
{
    *dst = *src;
    dst->hf_config_json = NULL;
    if (!src->hf_config_json) return MG_OK;
    size_t n = strlen(src->hf_config_json) + 1;
    dst->hf_config_json = mg_malloc(n);
    if (!dst->hf_config_json) return MG_ERR_NOMEM;
    memcpy(dst->hf_config_json, src->hf_config_json, n);
    return MG_OK;
}

const char *mg_arch_name(mg_arch a)
{
    static const char *const names[] = {"gpt2", "llama", "mistral", "qwen2"};
    return (unsigned)a < 4 ? names[a] : "unknown";
}

const char *mg_arch_hf_class(mg_arch a)
{
    static const char *const names[] = {"GPT2LMHeadModel", "LlamaForCausalLM",
                                        "MistralForCausalLM", "Qwen2ForCausalLM"};
    return (unsigned)a < 4 ? names[a] : "unknown";
}

int64_t mg_model_padded_vocab(const mg_model_desc *m, int64_t tp)
{
    int64_t mult = (m->make_vocab_size_divisible_by > 0 ? m->make_vocab_size_divisible_by : 1) *
                   (tp > 0 ? tp : 1);
    return (m->vocab_size + mult - 1) / mult * mult;
}

static mg_status check_pos(const char *label, const char *field, int64_t v)
{
    MG_RETURN_IF(v <= 0, MG_ERR_FORMAT, "%s: %s must be positive (got %lld)", label, field,
                 (long long)v);
    return MG_OK;
}

mg_status mg_model_check(const mg_model_desc *m, const char *label)
{
    MG_FORWARD(check_pos(label, "num_layers", m->num_layers));
    MG_FORWARD(check_pos(label, "hidden_size", m->hidden_size));
    MG_FORWARD(check_pos(label, "ffn_hidden_size", m->ffn_hidden_size));
    MG_FORWARD(check_pos(label, "num_attention_heads", m->num_attention_heads));
    MG_FORWARD(check_pos(label, "num_query_groups", m->num_query_groups));
    MG_FORWARD(check_pos(label, "kv_channels", m->kv_channels));
    MG_RETURN_IF(m->num_attention_heads % m->num_query_groups, MG_ERR_FORMAT,
                 "%s: num_attention_heads %lld is not a multiple of num_query_groups %lld",
                 label, (long long)m->num_attention_heads, (long long)m->num_query_groups);
    MG_RETURN_IF(m->learned_positions && m->max_position_embeddings <= 0, MG_ERR_FORMAT,
                 "%s: learned position embeddings need max_position_embeddings", label);
    MG_RETURN_IF(m->dtype != MG_TD_F32 && m->dtype != MG_TD_BF16 && m->dtype != MG_TD_F16,
                 MG_ERR_UNSUPPORTED, "not supported yet: parameter dtype %s",
                 mg_tdtype_name(m->dtype));
    return MG_OK;
}

/* ---- args reader ---- */

static int64_t arg_int(const mg_pk_obj *ns, const char *k, int64_t dflt)
{
    const mg_pk_obj *o = mg_pk_get(ns, k);
    if (o && (o->kind == MG_PK_INT || o->kind == MG_PK_BOOL)) return o->i;
    if (o && o->kind == MG_PK_FLOAT) return (int64_t)o->f;
    return dflt;
}

static double arg_float(const mg_pk_obj *ns, const char *k, double dflt)
{
    const mg_pk_obj *o = mg_pk_get(ns, k);
    if (o && o->kind == MG_PK_FLOAT) return o->f;
    if (o && o->kind == MG_PK_INT) return (double)o->i;
    return dflt;
}

static const char *arg_str(const mg_pk_obj *ns, const char *k)
{
    const mg_pk_obj *o = mg_pk_get(ns, k);
    return o && o->kind == MG_PK_STR ? o->str : NULL;
}

static int streq(const char *a, const char *b) { return a && b && strcmp(a, b) == 0; }

static mg_status args_refusals(const mg_pk_obj *ns, const char *label)
{
    MG_RETURN_IF(arg_int(ns, "num_experts", 0) > 0, MG_ERR_UNSUPPORTED,
                 "not supported yet: mixture of experts (%s: num_experts)", label);
    MG_RETURN_IF(arg_int(ns, "virtual_pipeline_model_parallel_size", 1) > 1, MG_ERR_UNSUPPORTED,
                 "not supported yet: virtual pipeline (%s)", label);
    MG_RETURN_IF(arg_int(ns, "expert_model_parallel_size", 1) > 1, MG_ERR_UNSUPPORTED,
                 "not supported yet: expert parallelism (%s)", label);
    MG_RETURN_IF(arg_int(ns, "rotary_interleaved", 0), MG_ERR_UNSUPPORTED,
                 "not supported yet: rotary_interleaved (%s)", label);
    MG_RETURN_IF(arg_int(ns, "apply_layernorm_1p", 0), MG_ERR_UNSUPPORTED,
                 "not supported yet: apply_layernorm_1p (%s)", label);
    MG_RETURN_IF(arg_int(ns, "qk_layernorm", 0), MG_ERR_UNSUPPORTED,
                 "not supported yet: qk_layernorm (%s)", label);
    MG_RETURN_IF(arg_str(ns, "pipeline_model_parallel_layout"), MG_ERR_UNSUPPORTED,
                 "not supported yet: pipeline_model_parallel_layout (%s)", label);
    MG_RETURN_IF(arg_int(ns, "squared_relu", 0), MG_ERR_UNSUPPORTED,
                 "not supported yet: squared_relu (%s)", label);
    static const char *const flags[] = {"multi_latent_attention", "attention_output_gate",
                                        "mtp_num_layers"};
    for (int i = 0; i < 3; i++)
        MG_RETURN_IF(arg_int(ns, flags[i], 0), MG_ERR_UNSUPPORTED,
                     "not supported yet: %s (%s)", flags[i], label);
    const char *pos = arg_str(ns, "position_embedding_type");
    MG_RETURN_IF(pos && !streq(pos, "rope") && !streq(pos, "learned_absolute"),
                 MG_ERR_UNSUPPORTED, "not supported yet: position_embedding_type %s (%s)", pos,
                 label);
    return MG_OK;
}

static mg_tdtype args_dtype(const mg_pk_obj *ns)
{
    const mg_pk_obj *o = mg_pk_get(ns, "params_dtype");
    if (o && o->kind == MG_PK_GLOBAL && streq(o->str, "torch")) {
        mg_tdtype t = mg_pk_torch_dtype(o->name);
        if (t != MG_TD_INVALID) return t;
    }
    if (arg_int(ns, "bf16", 0)) return MG_TD_BF16;
    if (arg_int(ns, "fp16", 0)) return MG_TD_F16;
    return MG_TD_F32;
}

static mg_status args_arch(mg_model_desc *m, const mg_pk_obj *ns, const char *label)
{
    const char *cfg = arg_str(ns, "hf_config_json");
    int rms = streq(arg_str(ns, "normalization"), "RMSNorm");
    if (m->swiglu && rms && !m->learned_positions) {
        m->arch = m->add_qkv_bias ? MG_ARCH_QWEN2 : MG_ARCH_LLAMA;
        if (cfg && strstr(cfg, "MistralForCausalLM")) m->arch = MG_ARCH_MISTRAL;
        MG_RETURN_IF(m->add_bias_linear, MG_ERR_UNSUPPORTED,
                     "not supported yet: linear biases with SwiGLU (%s)", label);
        return MG_OK;
    }
    if (!m->swiglu && !rms && m->learned_positions && m->add_bias_linear) {
        m->arch = MG_ARCH_GPT2;
        return MG_OK;
    }
    return mg_error_set(MG_ERR_UNSUPPORTED,
                        "not supported yet: model variant in %s (normalization %s, swiglu %d, "
                        "position embedding %s, add_bias_linear %d)",
                        label, arg_str(ns, "normalization") ? arg_str(ns, "normalization") : "?",
                        m->swiglu, arg_str(ns, "position_embedding_type")
                                       ? arg_str(ns, "position_embedding_type") : "?",
                        m->add_bias_linear);
}

static void args_shape(mg_model_desc *m, const mg_pk_obj *ns)
{
    m->num_layers = arg_int(ns, "num_layers", 0);
    m->hidden_size = arg_int(ns, "hidden_size", 0);
    m->num_attention_heads = arg_int(ns, "num_attention_heads", 0);
    m->ffn_hidden_size = arg_int(ns, "ffn_hidden_size", 4 * m->hidden_size);
    m->num_query_groups = arg_int(ns, "group_query_attention", 0)
                              ? arg_int(ns, "num_query_groups", m->num_attention_heads)
                              : m->num_attention_heads;
    int64_t nh = m->num_attention_heads > 0 ? m->num_attention_heads : 1;
    m->kv_channels = arg_int(ns, "kv_channels", m->hidden_size / nh);
    m->seq_length = arg_int(ns, "seq_length", 0);
    m->max_position_embeddings = arg_int(ns, "max_position_embeddings", m->seq_length);
    m->vocab_size = arg_int(ns, "vocab_size", 0);
    m->padded_vocab_size = arg_int(ns, "padded_vocab_size", 0);
    m->make_vocab_size_divisible_by = arg_int(ns, "make_vocab_size_divisible_by", 128);
}

static mg_status copy_str(char **dst, const char *s)
{
    free(*dst);
    *dst = NULL;
    if (!s) return MG_OK;
    size_t n = strlen(s) + 1;
    *dst = mg_malloc(n);
    if (!*dst) return MG_ERR_NOMEM;
    memcpy(*dst, s, n);
    return MG_OK;
}

mg_status mg_model_from_args(mg_model_desc *m, const mg_pk_obj *ns, const char *label)
{
    MG_RETURN_IF(!ns || ns->kind != MG_PK_NAMESPACE, MG_ERR_FORMAT,
                 "%s: 'args' is not an argparse.Namespace", label);
    MG_FORWARD(args_refusals(ns, label));
    args_shape(m, ns);
    m->rmsnorm = streq(arg_str(ns, "normalization"), "RMSNorm");
    m->norm_epsilon = arg_float(ns, "norm_epsilon", arg_float(ns, "layernorm_epsilon", 1e-5));
    m->swiglu = (int)arg_int(ns, "swiglu", 0);
    const char *pos = arg_str(ns, "position_embedding_type");
    m->learned_positions = !pos || streq(pos, "learned_absolute");
    m->rotary_base = arg_float(ns, "rotary_base", 10000.0);
    m->rope_scaling_factor =
        arg_int(ns, "use_rope_scaling", 0) ? arg_float(ns, "rope_scaling_factor", 8.0) : 0;
    m->add_bias_linear = (int)arg_int(ns, "add_bias_linear", 1);
    m->add_qkv_bias = m->add_bias_linear || arg_int(ns, "add_qkv_bias", 0);
    m->tied_embeddings = !arg_int(ns, "untie_embeddings_and_output_weights", 0);
    m->dtype = args_dtype(ns);
    m->tp = arg_int(ns, "tensor_model_parallel_size", 1);
    m->pp = arg_int(ns, "pipeline_model_parallel_size", 1);
    m->pp_first = arg_int(ns, "decoder_first_pipeline_num_layers", 0);
    m->pp_last = arg_int(ns, "decoder_last_pipeline_num_layers", 0);
    MG_FORWARD(args_arch(m, ns, label));
    MG_FORWARD(copy_str(&m->hf_config_json, arg_str(ns, "hf_config_json")));
    return mg_model_check(m, label);
}

/* ---- args writer ---- */

typedef struct {
    mg_pk_graph *g;
    mg_pk_obj *ns;
    mg_status st;
} args_w;

static void put(args_w *w, const char *k, mg_pk_obj *v)
{
    if (w->st != MG_OK) return;
    if (!v) {
        w->st = MG_ERR_NOMEM;
        return;
    }
    w->st = mg_pk_set(w->g, w->ns, k, v);
}

static void put_i(args_w *w, const char *k, int64_t v) { put(w, k, mg_pk_int(w->g, v)); }
static void put_b(args_w *w, const char *k, int v) { put(w, k, mg_pk_bool(w->g, v != 0)); }
static void put_s(args_w *w, const char *k, const char *v) { put(w, k, mg_pk_str(w->g, v)); }
static void put_n(args_w *w, const char *k) { put(w, k, mg_pk_none(w->g)); }
static void put_opt(args_w *w, const char *k, int64_t v)
{
    if (v > 0) put_i(w, k, v);
    else put_n(w, k);
}

static void args_put_shape(args_w *w, const mg_model_desc *m)
{
    put_i(w, "num_layers", m->num_layers);
    put_i(w, "encoder_num_layers", m->num_layers);
    put_i(w, "hidden_size", m->hidden_size);
    put_i(w, "ffn_hidden_size", m->ffn_hidden_size);
    put_i(w, "num_attention_heads", m->num_attention_heads);
    put_b(w, "group_query_attention", m->num_query_groups != m->num_attention_heads);
    put_i(w, "num_query_groups", m->num_query_groups);
    put_i(w, "kv_channels", m->kv_channels);
    put_i(w, "seq_length", m->seq_length > 0 ? m->seq_length : m->max_position_embeddings);
    put_i(w, "max_position_embeddings", m->max_position_embeddings);
    put_i(w, "padded_vocab_size", mg_model_padded_vocab(m, m->tp));
    put_opt(w, "vocab_size", m->vocab_size);
    put_i(w, "make_vocab_size_divisible_by", m->make_vocab_size_divisible_by);
    put_n(w, "tokenizer_type");
    put_n(w, "tokenizer_model");
}

static void args_put_variant(args_w *w, const mg_model_desc *m)
{
    put_s(w, "normalization", m->rmsnorm ? "RMSNorm" : "LayerNorm");
    put(w, "norm_epsilon", mg_pk_float(w->g, m->norm_epsilon));
    put_b(w, "apply_layernorm_1p", 0);
    put_b(w, "qk_layernorm", 0);
    put_b(w, "swiglu", m->swiglu);
    put_b(w, "squared_relu", 0);
    put_b(w, "bias_gelu_fusion", !m->swiglu && m->add_bias_linear);
    put_s(w, "position_embedding_type", m->learned_positions ? "learned_absolute" : "rope");
    put_b(w, "add_position_embedding", m->learned_positions);
    put_i(w, "rotary_base", (int64_t)m->rotary_base);
    put(w, "rotary_percent", mg_pk_float(w->g, 1.0));
    put_b(w, "rotary_interleaved", 0);
    put_b(w, "use_rope_scaling", m->rope_scaling_factor > 0);
    put(w, "rope_scaling_factor",
        mg_pk_float(w->g, m->rope_scaling_factor > 0 ? m->rope_scaling_factor : 8.0));
    put_b(w, "add_bias_linear", m->add_bias_linear);
    put_b(w, "add_qkv_bias", m->add_qkv_bias);
    put_b(w, "untie_embeddings_and_output_weights", !m->tied_embeddings);
    put_n(w, "num_experts");
}

static void args_put_parallel(args_w *w, const mg_model_desc *m)
{
    put_i(w, "tensor_model_parallel_size", m->tp);
    put_i(w, "pipeline_model_parallel_size", m->pp);
    put_n(w, "virtual_pipeline_model_parallel_size");
    put_n(w, "num_layers_per_virtual_pipeline_stage");
    put_opt(w, "decoder_first_pipeline_num_layers", m->pp_first);
    put_opt(w, "decoder_last_pipeline_num_layers", m->pp_last);
    put_b(w, "account_for_embedding_in_pipeline_split", 0);
    put_b(w, "account_for_loss_in_pipeline_split", 0);
    put_n(w, "pipeline_model_parallel_layout");
    put_i(w, "expert_model_parallel_size", 1);
    put_i(w, "expert_tensor_parallel_size", m->tp);
    put_i(w, "world_size", m->tp * m->pp);
    put_i(w, "data_parallel_size", 1);
    put_b(w, "sequence_parallel", 0);
    put_s(w, "ckpt_format", "torch");
    put_b(w, "use_dist_ckpt", 0);
    put_i(w, "consumed_train_samples", 0);
    put_i(w, "consumed_valid_samples", 0);
    put_i(w, "skipped_train_samples", 0);
}

static void args_put_dtype(args_w *w, const mg_model_desc *m)
{
    put_b(w, "bf16", m->dtype == MG_TD_BF16);
    put_b(w, "fp16", m->dtype == MG_TD_F16);
    const char *name = mg_pk_torch_dtype_name(m->dtype);
    put(w, "params_dtype", mg_pk_global(w->g, "torch", name ? name : "float32"));
}

mg_status mg_model_to_args(const mg_model_desc *m, mg_pk_graph *g, mg_pk_obj **ns)
{
    args_w w = {g, mg_pk_container(g, MG_PK_NAMESPACE), MG_OK};
    if (!w.ns) return MG_ERR_NOMEM;
    args_put_shape(&w, m);
    args_put_variant(&w, m);
    args_put_parallel(&w, m);
    args_put_dtype(&w, m);
    if (m->hf_config_json) put_s(&w, "hf_config_json", m->hf_config_json);
    if (w.st != MG_OK) return w.st;
    *ns = w.ns;
    return MG_OK;
}

/* model_desc_hf.c — mg/model_desc.h: Hugging Face config.json reader and writer.
 *
 * Contract (mg/model_desc.h): reads GPT2LMHeadModel, LlamaForCausalLM, MistralForCausalLM and
 * Qwen2ForCausalLM configs (transformers 4.x and 5.x spellings: rope_theta or
 * rope_parameters, torch_dtype or dtype); refuses other architectures, MoE, linear biases on
 * Llama, and rope scaling types other than "default" with MG_ERR_UNSUPPORTED. The writer
 * starts from the kept original config (when any) and sets every field transformers needs.
 */
#include "mg/model_desc.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

static int64_t jint(const json_t *o, const char *k, int64_t dflt)
{
    json_t *v = json_object_get(o, k);
    return json_is_integer(v) ? (int64_t)json_integer_value(v) : dflt;
}

static double jnum(const json_t *o, const char *k, double dflt)
{
    json_t *v = json_object_get(o, k);
    return json_is_number(v) ? json_number_value(v) : dflt;
}

static int jbool(const json_t *o, const char *k, int dflt)
{
    json_t *v = json_object_get(o, k);
    return json_is_boolean(v) ? json_is_true(v) : dflt;
}

static const char *jstr(const json_t *o, const char *k)
{
    return json_string_value(json_object_get(o, k));
}

static mg_status hf_arch(mg_model_desc *m, const json_t *c, const char *label)
{
    const char *arch = json_string_value(json_array_get(json_object_get(c, "architectures"), 0));
    const char *type = jstr(c, "model_type");
    static const char *const types[] = {"gpt2", "llama", "mistral", "qwen2"};
    for (int a = 0; a < 4; a++)
        if ((arch && strcmp(arch, mg_arch_hf_class((mg_arch)a)) == 0) ||
            (!arch && type && strcmp(type, types[a]) == 0)) {
            m->arch = (mg_arch)a;
            return MG_OK;
        }
    return mg_error_set(MG_ERR_UNSUPPORTED, "not supported yet: architecture %s (%s)",
                        arch ? arch : type ? type : "(none)", label);
}

static mg_tdtype hf_dtype(const json_t *c)
{
    const char *s = jstr(c, "torch_dtype");
    if (!s) s = jstr(c, "dtype");
    if (s && strcmp(s, "bfloat16") == 0) return MG_TD_BF16;
    if (s && strcmp(s, "float16") == 0) return MG_TD_F16;
    return MG_TD_F32;
}

static void hf_gpt2(mg_model_desc *m, const json_t *c)
{
    m->hidden_size = jint(c, "n_embd", 768);
    m->num_layers = jint(c, "n_layer", 12);
    m->num_attention_heads = jint(c, "n_head", 12);
    m->num_query_groups = m->num_attention_heads;
    m->ffn_hidden_size = jint(c, "n_inner", 4 * m->hidden_size);
    m->kv_channels = m->num_attention_heads ? m->hidden_size / m->num_attention_heads : 0;
    m->max_position_embeddings = jint(c, "n_positions", 1024);
    m->vocab_size = jint(c, "vocab_size", 50257);
    m->norm_epsilon = jnum(c, "layer_norm_epsilon", 1e-5);
    m->rmsnorm = m->swiglu = 0;
    m->learned_positions = 1;
    m->add_bias_linear = m->add_qkv_bias = 1;
    m->tied_embeddings = jbool(c, "tie_word_embeddings", 1);
}

static mg_status hf_rope(mg_model_desc *m, const json_t *c, const char *label)
{
    const json_t *rp = json_object_get(c, "rope_parameters");
    const json_t *rs = json_object_get(c, "rope_scaling");
    m->rotary_base = jnum(c, "rope_theta", jnum(rp, "rope_theta", 10000.0));
    const char *type = jstr(rp, "rope_type");
    const json_t *src = rp;
    if (json_is_object(rs)) {
        type = jstr(rs, "rope_type") ? jstr(rs, "rope_type") : jstr(rs, "type");
        src = rs;
    }
    m->rope_scaling_factor = 0;
    if (type && strcmp(type, "llama3") == 0) { /* Megatron --use-rope-scaling */
        m->rope_scaling_factor = jnum(src, "factor", 8.0);
        return MG_OK;
    }
    MG_RETURN_IF(type && strcmp(type, "default") != 0, MG_ERR_UNSUPPORTED,
                 "not supported yet: rope scaling type %s (%s)", type, label);
    return MG_OK;
}

static mg_status hf_llama(mg_model_desc *m, const json_t *c, const char *label)
{
    m->hidden_size = jint(c, "hidden_size", 0);
    m->num_layers = jint(c, "num_hidden_layers", 0);
    m->num_attention_heads = jint(c, "num_attention_heads", 0);
    m->num_query_groups = jint(c, "num_key_value_heads", m->num_attention_heads);
    m->ffn_hidden_size = jint(c, "intermediate_size", 0);
    int64_t nh = m->num_attention_heads > 0 ? m->num_attention_heads : 1;
    m->kv_channels = jint(c, "head_dim", m->hidden_size / nh);
    m->max_position_embeddings = jint(c, "max_position_embeddings", 2048);
    m->vocab_size = jint(c, "vocab_size", 32000);
    m->norm_epsilon = jnum(c, "rms_norm_eps", 1e-6);
    m->rmsnorm = m->swiglu = 1;
    m->learned_positions = 0;
    m->add_bias_linear = 0;
    m->add_qkv_bias = m->arch == MG_ARCH_QWEN2;
    m->tied_embeddings = jbool(c, "tie_word_embeddings", 0);
    const char *act = jstr(c, "hidden_act");
    MG_RETURN_IF(act && strcmp(act, "silu") != 0, MG_ERR_UNSUPPORTED,
                 "not supported yet: hidden_act %s (%s)", act, label);
    MG_RETURN_IF(jbool(c, "attention_bias", 0) || jbool(c, "mlp_bias", 0), MG_ERR_UNSUPPORTED,
                 "not supported yet: attention_bias/mlp_bias (%s)", label);
    return hf_rope(m, c, label);
}

static mg_status hf_refusals(const json_t *c, const char *label)
{
    static const char *const moe[] = {"num_experts", "num_local_experts", "n_routed_experts"};
    for (int i = 0; i < 3; i++)
        MG_RETURN_IF(jint(c, moe[i], 0) > 0, MG_ERR_UNSUPPORTED,
                     "not supported yet: mixture of experts (%s: %s)", label, moe[i]);
    return MG_OK;
}

mg_status mg_model_from_hf_config(mg_model_desc *m, const char *json, const char *label)
{
    json_error_t err;
    json_t *c = json_loads(json, 0, &err);
    MG_RETURN_IF(!c, MG_ERR_FORMAT, "%s:%d: %s", label, err.line, err.text);
    mg_status st = json_is_object(c) ? MG_OK
                                     : mg_error_set(MG_ERR_FORMAT, "%s: not a JSON object", label);
    if (st == MG_OK) st = hf_arch(m, c, label);
    if (st == MG_OK) st = hf_refusals(c, label);
    if (st == MG_OK) {
        if (m->arch == MG_ARCH_GPT2) hf_gpt2(m, c);
        else st = hf_llama(m, c, label);
    }
    if (st == MG_OK) {
        m->dtype = hf_dtype(c);
        m->seq_length = m->max_position_embeddings;
        m->padded_vocab_size = 0;
        free(m->hf_config_json);
        size_t n = strlen(json) + 1;
        m->hf_config_json = mg_malloc(n);
        if (!m->hf_config_json) st = MG_ERR_NOMEM;
        else memcpy(m->hf_config_json, json, n);
    }
    json_decref(c);
    return st == MG_OK ? mg_model_check(m, label) : st;
}

/* ---- writer ---- */

static void set_i(json_t *c, const char *k, int64_t v)
{
    json_object_set_new(c, k, json_integer((json_int_t)v));
}

static void set_f(json_t *c, const char *k, double v)
{
    json_t *old = json_object_get(c, k);
    if (json_is_number(old) && json_number_value(old) == v) return; /* keep its spelling */
    json_object_set_new(c, k, json_real(v));
}

static void set_s(json_t *c, const char *k, const char *v)
{
    json_object_set_new(c, k, json_string(v));
}

static void out_gpt2(json_t *c, const mg_model_desc *m)
{
    set_i(c, "n_embd", m->hidden_size);
    set_i(c, "n_layer", m->num_layers);
    set_i(c, "n_head", m->num_attention_heads);
    if (m->ffn_hidden_size == 4 * m->hidden_size) json_object_set_new(c, "n_inner", json_null());
    else set_i(c, "n_inner", m->ffn_hidden_size);
    set_i(c, "n_positions", m->max_position_embeddings);
    set_f(c, "layer_norm_epsilon", m->norm_epsilon);
    if (!json_object_get(c, "activation_function")) set_s(c, "activation_function", "gelu_new");
}

static void out_llama(json_t *c, const mg_model_desc *m)
{
    set_i(c, "hidden_size", m->hidden_size);
    set_i(c, "num_hidden_layers", m->num_layers);
    set_i(c, "num_attention_heads", m->num_attention_heads);
    set_i(c, "num_key_value_heads", m->num_query_groups);
    set_i(c, "intermediate_size", m->ffn_hidden_size);
    set_i(c, "head_dim", m->kv_channels);
    set_i(c, "max_position_embeddings", m->max_position_embeddings);
    set_f(c, "rms_norm_eps", m->norm_epsilon);
    set_s(c, "hidden_act", "silu");
    if (m->arch != MG_ARCH_QWEN2) {
        json_object_set_new(c, "attention_bias", json_false());
        if (m->arch == MG_ARCH_LLAMA) json_object_set_new(c, "mlp_bias", json_false());
    }
    json_t *rp = json_object_get(c, "rope_parameters");
    if (json_is_object(rp)) set_f(rp, "rope_theta", m->rotary_base);
    else set_f(c, "rope_theta", m->rotary_base);
    if (m->rope_scaling_factor > 0 && !json_is_object(rp) &&
        !json_is_object(json_object_get(c, "rope_scaling"))) {
        /* Megatron's --use-rope-scaling is Llama-3.1's rule with these constants */
        json_t *rs = json_object();
        set_s(rs, "rope_type", "llama3");
        set_f(rs, "factor", m->rope_scaling_factor);
        set_f(rs, "low_freq_factor", 1.0);
        set_f(rs, "high_freq_factor", 4.0);
        set_i(rs, "original_max_position_embeddings", 8192);
        json_object_set_new(c, "rope_scaling", rs);
    }
}

mg_status mg_model_to_hf_config(const mg_model_desc *m, char **out)
{
    json_t *c = m->hf_config_json ? json_loads(m->hf_config_json, 0, NULL) : NULL;
    if (!json_is_object(c)) {
        json_decref(c);
        c = json_object();
    }
    if (!c) return mg_error_set(MG_ERR_NOMEM, "config.json: out of memory");
    json_t *arch = json_array();
    json_array_append_new(arch, json_string(mg_arch_hf_class(m->arch)));
    json_object_set_new(c, "architectures", arch);
    set_s(c, "model_type", mg_arch_name(m->arch));
    set_i(c, "vocab_size", m->vocab_size);
    json_object_set_new(c, "tie_word_embeddings", json_boolean(m->tied_embeddings));
    const char *dt = mg_pk_torch_dtype_name(m->dtype);
    set_s(c, "torch_dtype", dt ? dt : "float32");
    set_s(c, "dtype", dt ? dt : "float32");
    if (m->arch == MG_ARCH_GPT2) out_gpt2(c, m);
    else out_llama(c, m);
    /* Shortest faithful floats: 15 significant digits when that reads back exactly. */
    char *s = json_dumps(c, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(15));
    json_t *back = s ? json_loads(s, 0, NULL) : NULL;
    if (s && !json_equal(back, c)) {
        free(s);
        s = json_dumps(c, JSON_INDENT(2) | JSON_SORT_KEYS | JSON_REAL_PRECISION(17));
    }
    json_decref(back);
    json_decref(c);
    if (!s) return mg_error_set(MG_ERR_NOMEM, "config.json: out of memory");
    size_t n = strlen(s);
    *out = mg_malloc(n + 2);
    if (*out) {
        memcpy(*out, s, n);
        memcpy(*out + n, "\n", 2);
    }
    free(s);
    return *out ? MG_OK : MG_ERR_NOMEM;
}

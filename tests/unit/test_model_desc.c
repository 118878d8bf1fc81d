/* test_model_desc.c — mg/model_desc.h: config.json reading for each family (transformers 4 and 5
 * spellings), refusals, and the round trips config.json -> desc -> args -> desc and
 * desc -> config.json -> desc. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "mg/model_desc.h"

static const char *llama_cfg =
    "{\"architectures\": [\"LlamaForCausalLM\"], \"model_type\": \"llama\", \"hidden_size\": 64,"
    " \"intermediate_size\": 128, \"num_hidden_layers\": 4, \"num_attention_heads\": 8,"
    " \"num_key_value_heads\": 4, \"vocab_size\": 1000, \"max_position_embeddings\": 128,"
    " \"rms_norm_eps\": 1e-06, \"rope_parameters\": {\"rope_theta\": 500000.0, \"rope_type\":"
    " \"default\"}, \"tie_word_embeddings\": false, \"dtype\": \"bfloat16\", \"bos_token_id\": 1}";

static const char *gpt2_cfg =
    "{\"architectures\": [\"GPT2LMHeadModel\"], \"model_type\": \"gpt2\", \"n_embd\": 64,"
    " \"n_layer\": 2, \"n_head\": 4, \"n_inner\": null, \"n_positions\": 128, \"vocab_size\": 1000,"
    " \"layer_norm_epsilon\": 1e-05, \"torch_dtype\": \"float32\"}";

static int same(const mg_model_desc *a, const mg_model_desc *b)
{
    return a->arch == b->arch && a->num_layers == b->num_layers &&
           a->hidden_size == b->hidden_size && a->ffn_hidden_size == b->ffn_hidden_size &&
           a->num_attention_heads == b->num_attention_heads &&
           a->num_query_groups == b->num_query_groups && a->kv_channels == b->kv_channels &&
           a->max_position_embeddings == b->max_position_embeddings &&
           a->vocab_size == b->vocab_size && a->rmsnorm == b->rmsnorm &&
           a->norm_epsilon == b->norm_epsilon && a->swiglu == b->swiglu &&
           a->learned_positions == b->learned_positions && a->rotary_base == b->rotary_base &&
           a->rope_scaling_factor == b->rope_scaling_factor &&
           a->add_bias_linear == b->add_bias_linear && a->add_qkv_bias == b->add_qkv_bias &&
           a->tied_embeddings == b->tied_embeddings && a->dtype == b->dtype;
}

MG_TEST(model_from_hf_llama)
{
    mg_model_desc m;
    mg_model_init(&m);
    MG_CHECK_OK(t, mg_model_from_hf_config(&m, llama_cfg, "config.json"));
    MG_CHECK_EQ_INT(t, m.arch, MG_ARCH_LLAMA);
    MG_CHECK_EQ_INT(t, m.num_query_groups, 4);
    MG_CHECK_EQ_INT(t, m.kv_channels, 8);
    MG_CHECK_EQ_INT(t, m.ffn_hidden_size, 128);
    MG_CHECK(t, m.rotary_base == 500000.0 && m.norm_epsilon == 1e-6);
    MG_CHECK(t, m.swiglu && m.rmsnorm && !m.learned_positions && !m.tied_embeddings);
    MG_CHECK_EQ_INT(t, m.dtype, MG_TD_BF16);
    MG_CHECK(t, m.hf_config_json && strstr(m.hf_config_json, "bos_token_id"));
    mg_model_free(&m);
}

MG_TEST(model_from_hf_gpt2_and_qwen2)
{
    mg_model_desc m;
    mg_model_init(&m);
    MG_CHECK_OK(t, mg_model_from_hf_config(&m, gpt2_cfg, "config.json"));
    MG_CHECK_EQ_INT(t, m.arch, MG_ARCH_GPT2);
    MG_CHECK_EQ_INT(t, m.ffn_hidden_size, 256);
    MG_CHECK(t, m.learned_positions && m.add_bias_linear && m.tied_embeddings && !m.rmsnorm);
    mg_model_free(&m);
    char buf[1024];
    strcpy(buf, llama_cfg);
    memcpy(strstr(buf, "LlamaForCausalLM"), "Qwen2ForCausalLM", 16);
    mg_model_init(&m);
    MG_CHECK_OK(t, mg_model_from_hf_config(&m, buf, "config.json"));
    MG_CHECK(t, m.arch == MG_ARCH_QWEN2 && m.add_qkv_bias && !m.add_bias_linear);
    mg_model_free(&m);
}

MG_TEST(model_hf_refusals)
{
    mg_model_desc m;
    mg_model_init(&m);
    MG_CHECK_ERR(t, mg_model_from_hf_config(&m, "{\"architectures\": [\"FalconForCausalLM\"]}", "c.json"),
                 MG_ERR_UNSUPPORTED, "not supported yet: architecture FalconForCausalLM");
    char buf[1024];
    snprintf(buf, sizeof buf, "%.*s, \"num_local_experts\": 8}", (int)strlen(llama_cfg) - 1, llama_cfg);
    MG_CHECK_ERR(t, mg_model_from_hf_config(&m, buf, "c.json"), MG_ERR_UNSUPPORTED, "experts");
    MG_CHECK_ERR(t, mg_model_from_hf_config(&m, "{\"architectures\": [", "c.json"), MG_ERR_FORMAT, "c.json");
    mg_model_free(&m);
}

MG_TEST(model_args_round_trip)
{
    mg_model_desc a, b;
    mg_model_init(&a);
    mg_model_init(&b);
    MG_CHECK_OK(t, mg_model_from_hf_config(&a, llama_cfg, "config.json"));
    a.tp = 2;
    a.pp = 2;
    mg_pk_graph *g = mg_pk_graph_create();
    mg_pk_obj *ns = NULL;
    MG_CHECK_OK(t, mg_model_to_args(&a, g, &ns));
    MG_CHECK_EQ_INT(t, mg_pk_get(ns, "padded_vocab_size")->i, 1024);
    MG_CHECK_EQ_INT(t, mg_pk_get(ns, "group_query_attention")->i, 1);
    MG_CHECK_EQ_STR(t, mg_pk_get(ns, "params_dtype")->name, "bfloat16");
    MG_CHECK_OK(t, mg_model_from_args(&b, ns, "args"));
    MG_CHECK(t, same(&a, &b));
    MG_CHECK(t, b.tp == 2 && b.pp == 2 && b.padded_vocab_size == 1024);
    MG_CHECK(t, b.hf_config_json && !strcmp(a.hf_config_json, b.hf_config_json));
    MG_CHECK_OK(t, mg_pk_set(g, ns, "num_experts", mg_pk_int(g, 8)));
    MG_CHECK_ERR(t, mg_model_from_args(&b, ns, "args"), MG_ERR_UNSUPPORTED, "mixture of experts");
    mg_pk_graph_free(g);
    mg_model_free(&a);
    mg_model_free(&b);
}

MG_TEST(model_hf_config_round_trip)
{
    const char *cfgs[] = {llama_cfg, gpt2_cfg};
    for (int i = 0; i < 2; i++) {
        mg_model_desc a, b;
        mg_model_init(&a);
        mg_model_init(&b);
        MG_CHECK_OK(t, mg_model_from_hf_config(&a, cfgs[i], "config.json"));
        a.dtype = MG_TD_F16;
        char *json = NULL;
        MG_CHECK_OK(t, mg_model_to_hf_config(&a, &json));
        MG_CHECK(t, json && strstr(json, "\"torch_dtype\": \"float16\""));
        MG_CHECK_OK(t, mg_model_from_hf_config(&b, json, "out.json"));
        MG_CHECK(t, same(&a, &b));
        free(json);
        mg_model_free(&a);
        mg_model_free(&b);
    }
}

MG_TEST(model_rope_scaling)
{
    char buf[1024];
    const char *tail = ", \"rope_scaling\": {\"rope_type\": \"%s\", \"factor\": 32.0}}";
    char fmt[128];
    mg_model_desc a, b;
    mg_model_init(&a);
    mg_model_init(&b);
    snprintf(fmt, sizeof fmt, tail, "llama3");
    snprintf(buf, sizeof buf, "%.*s%s", (int)strlen(llama_cfg) - 1, llama_cfg, fmt);
    MG_CHECK_OK(t, mg_model_from_hf_config(&a, buf, "c.json"));
    MG_CHECK(t, a.rope_scaling_factor == 32.0);
    mg_pk_graph *g = mg_pk_graph_create();
    mg_pk_obj *ns = NULL;
    MG_CHECK_OK(t, mg_model_to_args(&a, g, &ns));
    MG_CHECK_EQ_INT(t, mg_pk_get(ns, "use_rope_scaling")->i, 1);
    MG_CHECK_OK(t, mg_model_from_args(&b, ns, "args"));
    MG_CHECK(t, same(&a, &b));
    snprintf(fmt, sizeof fmt, tail, "yarn");
    snprintf(buf, sizeof buf, "%.*s%s", (int)strlen(llama_cfg) - 1, llama_cfg, fmt);
    MG_CHECK_ERR(t, mg_model_from_hf_config(&b, buf, "c.json"), MG_ERR_UNSUPPORTED, "rope scaling type yarn");
    mg_pk_graph_free(g);
    mg_model_free(&a);
    mg_model_free(&b);
}

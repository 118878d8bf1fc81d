/* test_schema.c — mg/schema.h: parameter lists and canonical shapes per family, names in
 * every format, shard shapes, TP divisibility, pipeline placement (spec Appendix A.3),
 * vocabulary padding (docs/FORMATS.md §5.7) and extra-state keys. */
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "mg/model_desc.h"
#include "mg/schema.h"

static void llama_desc(mg_model_desc *m)
{
    mg_model_init(m);
    m->arch = MG_ARCH_LLAMA;
    m->num_layers = 4;
    m->hidden_size = 64;
    m->ffn_hidden_size = 128;
    m->num_attention_heads = 8;
    m->num_query_groups = 4;
    m->kv_channels = 8;
    m->max_position_embeddings = 128;
    m->vocab_size = 1000;
    m->rmsnorm = m->swiglu = 1;
}

static void gpt2_desc(mg_model_desc *m)
{
    llama_desc(m);
    m->arch = MG_ARCH_GPT2;
    m->num_query_groups = 8;
    m->ffn_hidden_size = 256;
    m->rmsnorm = m->swiglu = 0;
    m->learned_positions = 1;
    m->add_bias_linear = m->add_qkv_bias = 1;
    m->tied_embeddings = 1;
}

static const mg_param *find(const mg_param *p, size_t n, const char *key, int64_t layer)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(p[i].spec->key, key) && p[i].layer == layer) return &p[i];
    return NULL;
}

MG_TEST(schema_llama_params_and_names)
{
    mg_model_desc m;
    llama_desc(&m);
    mg_param *p = NULL;
    size_t n = 0;
    MG_CHECK_OK(t, mg_schema_params(&m, &p, &n));
    MG_CHECK_EQ_INT(t, n, 1 + 4 * 6 + 2);
    MG_CHECK_EQ_STR(t, p[0].spec->key, "word_embeddings.weight");
    MG_CHECK_EQ_STR(t, p[n - 1].spec->key, "output_layer.weight");
    const mg_param *qkv = find(p, n, "qkv.weight", 2), *fc1 = find(p, n, "fc1.weight", 0);
    MG_CHECK(t, qkv && fc1 && !find(p, n, "qkv.bias", 0));
    MG_CHECK_EQ_INT(t, qkv->rows, (8 + 2 * 4) * 8);
    MG_CHECK_EQ_INT(t, qkv->cols, 64);
    MG_CHECK_EQ_INT(t, fc1->rows, 256);
    MG_CHECK_EQ_INT(t, fc1->spec->split, MG_SPLIT_SWIGLU);
    char buf[256], hf[3][256];
    mg_schema_mcore_name(qkv, MG_NAMES_TE, 1, buf, sizeof buf);
    MG_CHECK_EQ_STR(t, buf, "decoder.layers.1.self_attention.linear_qkv.weight");
    const mg_param *ln = find(p, n, "input_norm.weight", 3);
    mg_schema_mcore_name(ln, MG_NAMES_TE, 0, buf, sizeof buf);
    MG_CHECK_EQ_STR(t, buf, "decoder.layers.0.self_attention.linear_qkv.layer_norm_weight");
    mg_schema_mcore_name(ln, MG_NAMES_LOCAL, 0, buf, sizeof buf);
    MG_CHECK_EQ_STR(t, buf, "decoder.layers.0.input_layernorm.weight");
    mg_schema_mcore_name(ln, MG_NAMES_LEGACY, 5, buf, sizeof buf);
    MG_CHECK_EQ_STR(t, buf, "language_model.encoder.layers.5.input_norm.weight");
    MG_CHECK_EQ_INT(t, mg_schema_hf_names(qkv, &m, hf), 3);
    MG_CHECK_EQ_STR(t, hf[1], "model.layers.2.self_attn.k_proj.weight");
    MG_CHECK_EQ_INT(t, mg_schema_hf_names(fc1, &m, hf), 2);
    MG_CHECK_EQ_STR(t, hf[1], "model.layers.0.mlp.up_proj.weight");
    free(p);
}

MG_TEST(schema_gpt2_params_and_transforms)
{
    mg_model_desc m;
    gpt2_desc(&m);
    mg_param *p = NULL;
    size_t n = 0;
    MG_CHECK_OK(t, mg_schema_params(&m, &p, &n));
    MG_CHECK_EQ_INT(t, n, 2 + 4 * 12 + 2); /* wte, wpe; 12 per layer; ln_f w/b; tied */
    MG_CHECK(t, !find(p, n, "output_layer.weight", -1));
    const mg_param *pos = find(p, n, "position_embeddings.weight", -1);
    MG_CHECK(t, pos && pos->rows == 128 && pos->spec->split == MG_SPLIT_REPLICATED);
    const mg_param *cattn = find(p, n, "qkv.weight", 0), *fc2 = find(p, n, "fc2.weight", 1);
    MG_CHECK_EQ_INT(t, cattn->spec->hf_xform, MG_HF_C_ATTN);
    MG_CHECK_EQ_INT(t, fc2->spec->hf_xform, MG_HF_TRANSPOSE);
    MG_CHECK_EQ_INT(t, fc2->rows, 64);
    MG_CHECK_EQ_INT(t, fc2->cols, 256);
    char hf[3][256];
    MG_CHECK_EQ_INT(t, mg_schema_hf_names(cattn, &m, hf), 1);
    MG_CHECK_EQ_STR(t, hf[0], "transformer.h.0.attn.c_attn.weight");
    MG_CHECK_EQ_INT(t, find(p, n, "proj.bias", 0)->spec->split, MG_SPLIT_REPLICATED);
    MG_CHECK_EQ_INT(t, find(p, n, "fc1.bias", 0)->spec->split, MG_SPLIT_COLUMN);
    free(p);
}

MG_TEST(schema_shard_shapes)
{
    mg_model_desc m;
    llama_desc(&m);
    mg_param *p = NULL;
    size_t n = 0;
    MG_CHECK_OK(t, mg_schema_params(&m, &p, &n));
    int64_t s[2];
    int nd;
    mg_schema_shard_shape(&p[0], &m, 4, 1024, s, &nd);
    MG_CHECK(t, nd == 2 && s[0] == 256 && s[1] == 64);
    mg_schema_shard_shape(find(p, n, "proj.weight", 0), &m, 2, 1024, s, &nd);
    MG_CHECK(t, s[0] == 64 && s[1] == 32);
    mg_schema_shard_shape(find(p, n, "fc1.weight", 0), &m, 2, 1024, s, &nd);
    MG_CHECK(t, s[0] == 128 && s[1] == 64);
    mg_schema_shard_shape(find(p, n, "input_norm.weight", 0), &m, 2, 1024, s, &nd);
    MG_CHECK(t, nd == 1 && s[0] == 64);
    free(p);
}

MG_TEST(schema_tp_divisibility)
{
    mg_model_desc m;
    llama_desc(&m);
    MG_CHECK_OK(t, mg_schema_check_tp(&m, 4));
    MG_CHECK_OK(t, mg_schema_check_tp(&m, 8)); /* 4 groups over 8 ranks: mcore splits groups */
    MG_CHECK_ERR(t, mg_schema_check_tp(&m, 3), MG_ERR_ARG, "attention heads");
    m.num_query_groups = 2;
    m.num_attention_heads = 6;
    MG_CHECK_ERR(t, mg_schema_check_tp(&m, 3), MG_ERR_UNSUPPORTED, "query groups");
}

MG_TEST(schema_pipeline_placement)
{
    static const int64_t off[] = {0, 6, 14, 22}, cnt[] = {6, 8, 8, 10};
    for (int64_t p = 0; p < 4; p++) {
        int64_t o, c;
        MG_CHECK_OK(t, mg_schema_pp_layers(32, 4, 6, 10, p, &o, &c));
        MG_CHECK_EQ_INT(t, o, off[p]);
        MG_CHECK_EQ_INT(t, c, cnt[p]);
    }
    int64_t o, c;
    MG_CHECK_OK(t, mg_schema_pp_layers(8, 2, 0, 0, 1, &o, &c));
    MG_CHECK(t, o == 4 && c == 4);
    MG_CHECK_OK(t, mg_schema_pp_layers(7, 3, 3, 0, 2, &o, &c));
    MG_CHECK(t, o == 5 && c == 2);
    MG_CHECK_ERR(t, mg_schema_pp_layers(7, 2, 0, 0, 0, &o, &c), MG_ERR_ARG, "evenly");
    MG_CHECK_ERR(t, mg_schema_pp_layers(32, 4, 6, 9, 0, &o, &c), MG_ERR_ARG, "cannot be placed");
}

MG_TEST(schema_vocab_padding)
{
    static const int64_t v[] = {50257, 32000, 128256, 151936};
    static const int64_t want[4][4] = {{50304, 50432, 50688, 51200},
                                       {32000, 32000, 32256, 32768},
                                       {128256, 128256, 128512, 129024},
                                       {151936, 152064, 152064, 152576}};
    mg_model_desc m;
    llama_desc(&m);
    for (int i = 0; i < 4; i++) {
        m.vocab_size = v[i];
        for (int k = 0; k < 4; k++) MG_CHECK_EQ_INT(t, mg_model_padded_vocab(&m, 1 << k), want[i][k]);
    }
}

MG_TEST(schema_extra_state_keys)
{
    mg_model_desc m;
    llama_desc(&m);
    char buf[256];
    size_t n = 0;
    while (mg_schema_extra_state(&m, MG_NAMES_TE, 2, 1, n, buf, sizeof buf)) n++;
    MG_CHECK_EQ_INT(t, n, 2 * 5 + 1);
    MG_CHECK(t, mg_schema_extra_state(&m, MG_NAMES_TE, 2, 1, 1, buf, sizeof buf));
    MG_CHECK_EQ_STR(t, buf, "decoder.layers.0.self_attention.core_attention._extra_state");
    MG_CHECK(t, mg_schema_extra_state(&m, MG_NAMES_LOCAL, 2, 1, 8, buf, sizeof buf));
    MG_CHECK_EQ_STR(t, buf, "output_layer._extra_state");
    MG_CHECK(t, !mg_schema_extra_state(&m, MG_NAMES_LOCAL, 2, 0, 8, buf, sizeof buf));
}

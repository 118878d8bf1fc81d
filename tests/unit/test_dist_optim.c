/* test_dist_optim.c — unit tests of dist_optim.h's buffer layout (megatron-core 0.16.1's
 * _ParamAndGradBuffer with the distributed optimizer, worked out by hand for a 1-layer
 * GPT-2: parameters in reverse TE-spec order, starts padded to 64 elements, the bucket to
 * lcm(DP, 128); with PP 2 and tied embeddings the first stage's word embedding in a bucket
 * of its own) and of param_order.h.
 */
#include <stdlib.h>
#include <string.h>

#include "dist_optim.h"
#include "harness.h"
#include "param_order.h"
#include "train_cmdline.h"

#define TINY "--num-layers 1 --hidden-size 8 --num-attention-heads 2 --seq-length 4 " \
             "--max-position-embeddings 4 --micro-batch-size 1 --train-iters 1 --lr 1e-3 " \
             "--vocab-size 100"

static mg_gpt *views(mg_test_ctx *t, mg_train_opts *o, const char *cmd, const mg_gpt_layout *l)
{
    MG_CHECK_OK(t, train_cmdline_parse(o, cmd));
    MG_CHECK_OK(t, mg_train_resolve_vocab(o));
    mg_gpt_layout full = mg_gpt_layout_full(&o->model);
    mg_gpt *g = NULL;
    MG_CHECK_OK(t, mg_gpt_create_views(&g, &o->model, l ? l : &full));
    return g;
}

static int64_t start_of(const mg_gpt *g, const mg_dist_layout *l, const char *suffix)
{
    for (size_t i = 0; i < g->nt; i++) {
        size_t n = strlen(g->t[i].name), k = strlen(suffix);
        if (n >= k && strcmp(g->t[i].name + n - k, suffix) == 0) return l->start[i];
    }
    return -1;
}

MG_TEST(dist_layout_megatron_buffer)
{
    mg_train_opts o;
    mg_gpt *g = views(t, &o, TINY, NULL);
    static const struct {
        const char *name;
        int64_t start;
    } want[] = {
        {"final_layernorm.bias", 0}, {"final_layernorm.weight", 64},
        {"linear_fc2.bias", 128}, {"linear_fc2.weight", 192}, {"linear_fc1.bias", 448},
        {"linear_fc1.weight", 512}, {"linear_fc1.layer_norm_bias", 768},
        {"linear_fc1.layer_norm_weight", 832}, {"linear_qkv.bias", 896},
        {"linear_qkv.weight", 960}, {"linear_qkv.layer_norm_bias", 1152},
        {"linear_qkv.layer_norm_weight", 1216}, {"linear_proj.bias", 1280},
        {"linear_proj.weight", 1344}, {"position_embeddings.weight", 1408},
        {"word_embeddings.weight", 1472},
    };
    mg_dist_layout l;
    MG_CHECK_OK(t, mg_dist_layout_build(&l, g, 2, MG_NAMES_TE));
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        MG_CHECK_EQ_INT(t, start_of(g, &l, want[i].name), want[i].start);
    MG_CHECK_EQ_INT(t, l.nbuckets, 1);
    MG_CHECK_EQ_INT(t, l.numel, 2560); /* 1472 + 128 x 8 = 2496, padded to 128 */
    mg_dist_layout_free(&l);
    MG_CHECK_OK(t, mg_dist_layout_build(&l, g, 3, MG_NAMES_TE));
    MG_CHECK_EQ_INT(t, l.numel, 2688); /* lcm(3, 128) = 384 */
    mg_dist_layout_free(&l);
    mg_gpt_free(g);
    mg_train_opts_free(&o);
}

MG_TEST(dist_layout_shared_embedding_bucket)
{
    mg_train_opts o;
    MG_CHECK_OK(t, train_cmdline_parse(&o, TINY " --pipeline-model-parallel-size 2 "
                                              "--num-layers 2"));
    mg_train_opts_free(&o);
    mg_gpt_layout first = {1, 0, 0, 1, 1, 0}, last = {1, 0, 1, 1, 0, 1};
    mg_gpt *g = views(t, &o, TINY " --num-layers 2 --pipeline-model-parallel-size 2", &first);
    mg_dist_layout l;
    MG_CHECK_OK(t, mg_dist_layout_build(&l, g, 2, MG_NAMES_TE));
    MG_CHECK_EQ_INT(t, l.nbuckets, 2); /* the layer and position embedding, then the word one */
    int64_t word = start_of(g, &l, "word_embeddings.weight");
    MG_CHECK_EQ_INT(t, word, l.bucket[1]);
    MG_CHECK_EQ_INT(t, l.bucket[1] % 128, 0);
    MG_CHECK_EQ_INT(t, l.bucket[2] - l.bucket[1], 1024);
    mg_dist_layout_free(&l);
    mg_gpt_free(g);
    mg_train_opts_free(&o);
    /* the last stage's copy of the tied embedding: output_layer.weight in either naming,
     * last in Megatron's order, so first in the buffer, in a bucket of its own */
    g = views(t, &o, TINY " --num-layers 2 --pipeline-model-parallel-size 2", &last);
    for (int nm = MG_NAMES_TE; nm <= MG_NAMES_LOCAL; nm++) {
        mg_tname *names = mg_gpt_names(g, (mg_names)nm);
        MG_CHECK(t, names != NULL);
        size_t order[64];
        size_t n = names ? mg_gpt_param_order(g, names, -1, order, 0) : 0;
        MG_CHECK(t, n == g->nt && g->t[order[n - 1]].tied_copy);
        if (n == g->nt) MG_CHECK_EQ_STR(t, names[order[n - 1]], "output_layer.weight");
        free(names);
    }
    MG_CHECK_OK(t, mg_dist_layout_build(&l, g, 2, MG_NAMES_TE));
    MG_CHECK_EQ_INT(t, l.nbuckets, 2);
    MG_CHECK_EQ_INT(t, start_of(g, &l, "output_layer.weight"), 0);
    mg_dist_layout_free(&l);
    mg_gpt_free(g);
    mg_train_opts_free(&o);
}

/* The first tensors of Megatron's parameter order in naming nm are want[], and its decay
 * subset holds the 2-D weights only. */
static void check_order(mg_test_ctx *t, mg_names nm, const char *const *want, size_t nwant)
{
    mg_train_opts o;
    mg_gpt *g = views(t, &o, TINY, NULL);
    mg_tname *names = mg_gpt_names(g, nm);
    MG_CHECK(t, names != NULL);
    size_t order[64];
    size_t n = names ? mg_gpt_param_order(g, names, -1, order, 0) : 0;
    MG_CHECK_EQ_INT(t, n, g->nt);
    for (size_t i = 0; i < nwant && i < n; i++) MG_CHECK_EQ_STR(t, names[order[i]], want[i]);
    size_t d = names ? mg_gpt_param_order(g, names, 1, order, 0) : 0; /* the 2-D weights */
    for (size_t i = 0; i < d; i++) MG_CHECK(t, g->t[order[i]].decay);
    free(names);
    mg_gpt_free(g);
    mg_train_opts_free(&o);
}

MG_TEST(param_order_te_spec)
{
    const char *const want[] = {"embedding.word_embeddings.weight",
                                "embedding.position_embeddings.weight",
                                "decoder.layers.0.self_attention.linear_proj.weight",
                                "decoder.layers.0.self_attention.linear_proj.bias",
                                "decoder.layers.0.self_attention.linear_qkv.layer_norm_weight"};
    check_order(t, MG_NAMES_TE, want, sizeof want / sizeof *want);
}

/* The local spec: input_layernorm is a module of its own, registered before self_attention
 * (whose linear_proj comes before linear_qkv). */
MG_TEST(param_order_local_spec)
{
    const char *const want[] = {"embedding.word_embeddings.weight",
                                "embedding.position_embeddings.weight",
                                "decoder.layers.0.input_layernorm.weight",
                                "decoder.layers.0.input_layernorm.bias",
                                "decoder.layers.0.self_attention.linear_proj.weight",
                                "decoder.layers.0.self_attention.linear_proj.bias",
                                "decoder.layers.0.self_attention.linear_qkv.weight"};
    check_order(t, MG_NAMES_LOCAL, want, sizeof want / sizeof *want);
}

/* test_dist_optim.c — unit tests of dist_optim.h's buffer layout (megatron-core 0.16.1's
 * _ParamAndGradBuffer with the distributed optimizer, worked out by hand for a 1-layer
 * GPT-2: parameters in reverse TE-spec order, starts padded to 64 elements, the bucket to
 * lcm(DP, 128); with PP 2 and tied embeddings the first stage's word embedding in a bucket
 * of its own), of distrib_optim.pt read back (mg_dist_read_state) and of param_order.h.
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

/* A model of cmd at layout l (NULL: all of it), params and moments numbered i + k. */
static mg_gpt *numbered(mg_test_ctx *t, const char *cmd, const mg_gpt_layout *l,
                        mg_gpt_optim **opt)
{
    mg_train_opts o;
    MG_CHECK_OK(t, train_cmdline_parse(&o, cmd));
    MG_CHECK_OK(t, mg_train_resolve_vocab(&o));
    mg_gpt_layout full = mg_gpt_layout_full(&o.model);
    mg_gpt_opts go = {0};
    mg_gpt *g = NULL;
    MG_CHECK_OK(t, mg_gpt_create(&g, &o.model, l ? l : &full, &go));
    MG_CHECK_OK(t, mg_gpt_optim_create(opt, g));
    for (int64_t i = 0; i < g->numel; i++) {
        g->params[i] = (float)i;
        (*opt)->m[i] = (float)i + 0.25f;
        (*opt)->v[i] = (float)i + 0.5f;
    }
    mg_train_opts_free(&o);
    return g;
}

static void check_read_back(mg_test_ctx *t, const char *cmd, const mg_gpt_layout *l,
                            int64_t dp, mg_names nm)
{
    mg_gpt_optim *opt = NULL, *back = NULL;
    mg_gpt *g = numbered(t, cmd, l, &opt);
    char path[512];
    snprintf(path, sizeof path, "%s/distrib_optim.pt", t->dir);
    mg_dist_layout lay;
    MG_CHECK_OK(t, mg_dist_layout_build(&lay, g, dp, nm));
    MG_CHECK_OK(t, mg_dist_save_state(&lay, g, opt, MG_TD_F32, path));
    mg_dist_layout_free(&lay);
    float *params = calloc((size_t)g->numel, sizeof(float));
    MG_CHECK_OK(t, mg_gpt_optim_create(&back, g));
    MG_CHECK_OK(t, mg_dist_read_state(g, nm, path, params, back));
    for (size_t j = 0; j < g->nt; j++) { /* the tensors (not the alignment gaps between) */
        size_t at = (size_t)g->t[j].offset, bytes = (size_t)g->t[j].numel * sizeof(float);
        MG_CHECK(t, memcmp(params + at, g->params + at, bytes) == 0);
        MG_CHECK(t, memcmp(back->m + at, opt->m + at, bytes) == 0);
        MG_CHECK(t, memcmp(back->v + at, opt->v + at, bytes) == 0);
    }
    free(params);
    mg_gpt_optim_free(back);
    mg_gpt_optim_free(opt);
    mg_gpt_free(g);
}

/* distrib_optim.pt written for any DP reads back at DP 1's layout: the same model layout. */
MG_TEST(dist_state_reads_back_at_any_dp)
{
    check_read_back(t, TINY, NULL, 3, MG_NAMES_TE);
    check_read_back(t, TINY, NULL, 2, MG_NAMES_LOCAL);
    mg_gpt_layout first = {1, 0, 0, 1, 1, 0}; /* two buckets: the shared embedding's own */
    check_read_back(t, TINY " --num-layers 2 --pipeline-model-parallel-size 2", &first, 2,
                    MG_NAMES_TE);
}

MG_TEST(dist_state_of_another_model_is_refused)
{
    mg_gpt_optim *opt = NULL, *other_opt = NULL;
    mg_gpt *g = numbered(t, TINY, NULL, &opt);
    mg_gpt *other = numbered(t, TINY " --hidden-size 16", NULL, &other_opt);
    char path[512];
    snprintf(path, sizeof path, "%s/distrib_optim.pt", t->dir);
    mg_dist_layout lay;
    MG_CHECK_OK(t, mg_dist_layout_build(&lay, g, 2, MG_NAMES_TE));
    MG_CHECK_OK(t, mg_dist_save_state(&lay, g, opt, MG_TD_F32, path));
    mg_dist_layout_free(&lay);
    float *params = calloc((size_t)other->numel, sizeof(float));
    MG_CHECK_ERR(t, mg_dist_read_state(other, MG_NAMES_TE, path, params, other_opt),
                 MG_ERR_FORMAT, "numel_unpadded is");
    free(params);
    mg_gpt_optim_free(other_opt);
    mg_gpt_optim_free(opt);
    mg_gpt_free(other);
    mg_gpt_free(g);
}

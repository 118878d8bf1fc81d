/* test_recompute.c — activation recomputation (model.h mg_gpt_recompute, selective):
 * the arena's bytes are the plan's and follow the layout (uniform: the chunk inputs and one
 * chunk's working set; block: the first N layers share one layer's working set; selective:
 * one attention saved state for all layers), and a forward + backward gives bit-identical
 * loss and gradients to the pass without recomputation even when the working set (or the
 * shared attention state) is overwritten with NaN between the forward and the backward, so
 * the backward really re-runs the forward. Megatron's option checks are in
 * test_train_options.c; whole runs (TP x PP under mpirun, peak RSS, the device path in fp32
 * and bf16) in tests/interop/test_train_recompute.py. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "model_internal.h"
#include "options.h"
#include "train_cmdline.h"

#define CMD "--num-layers 5 --hidden-size 64 --num-attention-heads 8 --seq-length 16 " \
            "--max-position-embeddings 32 --micro-batch-size 2 --train-iters 10 --lr 1e-3 " \
            "--vocab-size 1000 "
#define LLAMA CMD "--normalization RMSNorm --swiglu --position-embedding-type rope " \
              "--untie-embeddings-and-output-weights --disable-bias-linear " \
              "--group-query-attention --num-query-groups 4 --ffn-hidden-size 160 "
#define B 2
#define T 16
#define L 5

typedef struct {
    mg_gpt_recompute method;
    int64_t layers;
    int attention;
} rc_case;

static const rc_case cases[] = {
    {MG_RECOMPUTE_UNIFORM, 1, 0}, {MG_RECOMPUTE_UNIFORM, 2, 0}, {MG_RECOMPUTE_UNIFORM, 3, 0},
    {MG_RECOMPUTE_UNIFORM, 5, 0}, {MG_RECOMPUTE_BLOCK, 1, 0},   {MG_RECOMPUTE_BLOCK, 3, 0},
    {MG_RECOMPUTE_BLOCK, 5, 0},   {MG_RECOMPUTE_NONE, 0, 1},
};

static mg_gpt *make(mg_test_ctx *t, const char *cmd)
{
    mg_train_opts o;
    MG_CHECK_OK(t, train_cmdline_parse(&o, cmd));
    MG_CHECK_OK(t, mg_train_resolve_vocab(&o));
    mg_gpt_layout full = mg_gpt_layout_full(&o.model);
    mg_gpt_opts mo = {mg_gpt_default_gelu(&o.model), o.init_method_std, (uint64_t)o.seed, 0, 0};
    mg_gpt *g = NULL;
    MG_CHECK_OK(t, mg_gpt_create(&g, &o.model, &full, &mo));
    if (g) mg_gpt_init_params(g);
    mg_train_opts_free(&o);
    return g;
}

static mg_gpt_par par_of(const rc_case *c)
{
    mg_gpt_par p;
    memset(&p, 0, sizeof p);
    p.recompute = c->method;
    p.recompute_layers = c->layers;
    p.recompute_attention = c->attention;
    return p;
}

static int64_t aligned_bytes(int64_t n) { return (n + 15) / 16 * 16 * 4; }

/* The arena's bytes from the plan without recomputation: each layer's buffers less the
 * working set's (S_layer, from uniform 1 = one layer's), each residual stream dropped. */
static int64_t expected_bytes(const rc_case *c, int64_t none, int64_t one_layer, int64_t x,
                              int64_t att)
{
    if (c->attention) return none - (L - 1) * att;
    int64_t n = c->layers < L ? c->layers : L;
    if (c->method == MG_RECOMPUTE_BLOCK) return none - (n - 1) * one_layer;
    int64_t kept_x = (L + n - 1) / n + 1, ws_x = n - 1;
    return none - (L - n) * one_layer - (L + 1 - kept_x - ws_x) * x;
}

/* Overwrites what the backward must recompute: the working set (full) or the shared
 * attention state (selective) with NaN. */
static void poison(mg_gpt_acts *a)
{
    float *from = a->rc_attn ? a->la[0].att : a->la[0].ln1;
    memset(from, 0xff, (size_t)(a->lnf - from) * sizeof(float));
}

static double pass(mg_test_ctx *t, mg_gpt *g, mg_kctx *k, const mg_gpt_par *p, int spoil)
{
    int32_t ids[B * T], tgt[B * T];
    for (int i = 0; i < B * T; i++) {
        ids[i] = (i * 37 + 11) % 1000;
        tgt[i] = (i * 53 + 7) % 1000;
    }
    mg_gpt_batch b = {ids, tgt, NULL, NULL, NULL};
    mg_gpt_acts *a = NULL;
    double loss = NAN;
    MG_CHECK_OK(t, mg_gpt_acts_create_par(&a, g, k, B, T, p));
    if (!a) return loss;
    MG_CHECK_EQ_INT(t, mg_gpt_acts_bytes(a), mg_gpt_acts_plan_bytes_par(g, k, B, T, 0, p));
    mg_gpt_zero_grads(g);
    MG_CHECK_OK(t, mg_gpt_forward(g, a, k, &b, &loss));
    if (spoil) poison(a);
    MG_CHECK_OK(t, mg_gpt_backward(g, a, k, 1.0));
    mg_gpt_acts_free(a);
    return loss;
}

static void check_model(mg_test_ctx *t, const char *cmd, mgk_backend be)
{
    mg_gpt *g = make(t, cmd);
    mg_kctx k;
    MG_CHECK_OK(t, mgk_ctx_init(&k, be, 2));
    if (!g) return;
    mg_gpt_par none = par_of(&(rc_case){MG_RECOMPUTE_NONE, 0, 0});
    mg_gpt_par u1 = par_of(&cases[0]);
    int64_t none_bytes = mg_gpt_acts_plan_bytes_par(g, &k, B, T, 0, &none);
    int64_t one_layer = (none_bytes - mg_gpt_acts_plan_bytes_par(g, &k, B, T, 0, &u1)) / (L - 1);
    mgk_attn_dims ad = {B, T, 8, g->m.num_query_groups, 8, 1.0f};
    int64_t att = aligned_bytes(mgk_attn_saved_numel(&k, &ad));
    MG_CHECK(t, one_layer > att && att > 0);
    double ref = pass(t, g, &k, &none, 0);
    float *grads = malloc((size_t)g->numel * sizeof(float));
    memcpy(grads, g->grads, (size_t)g->numel * sizeof(float));
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        mg_gpt_par p = par_of(&cases[i]);
        int64_t want = expected_bytes(&cases[i], none_bytes, one_layer,
                                      aligned_bytes(B * T * 64), att);
        MG_CHECK_EQ_INT(t, mg_gpt_acts_plan_bytes_par(g, &k, B, T, 0, &p), want);
        double loss = pass(t, g, &k, &p, 1);
        MG_CHECK(t, memcmp(&loss, &ref, sizeof loss) == 0);
        MG_CHECK(t, memcmp(grads, g->grads, (size_t)g->numel * sizeof(float)) == 0);
    }
    free(grads);
    mgk_ctx_free(&k);
    mg_gpt_free(g);
}

MG_TEST(recompute_gpt2_bitwise_and_arena)
{
    check_model(t, CMD, MGK_CPU_FAST);
    check_model(t, CMD, MGK_CPU_REF);
}

MG_TEST(recompute_llama_bitwise_and_arena)
{
    check_model(t, LLAMA, MGK_CPU_FAST);
}

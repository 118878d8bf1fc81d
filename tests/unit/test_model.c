/* test_model.c — train/model.h: parameter views (names, shapes, aligned offsets, decay
 * flags, count equal to memory_plan's), Megatron initialisation (determinism, statistics,
 * padding rows drawn or, with --mask-vocab-padding, zero, identical values under TP = 2
 * and PP stages), HF save/load round trip (also into a TP shard), the loss over the padded
 * vocabulary, forward at initialisation (loss ~ ln Vp), ref vs fast backends, gradient
 * accumulation, one optimizer step (norm, NaN skip) and the refusals. Agreement with
 * transformers: tests/interop/test_model_torch.py and test_train_step_torch.py. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "memory_plan.h"
#include "model.h"
#include "options.h"
#include "schedule.h"
#include "step.h"
#include "train_cmdline.h"

#define BASE "--num-layers 2 --hidden-size 64 --num-attention-heads 8 --seq-length 16 " \
             "--max-position-embeddings 32 --micro-batch-size 2 --train-iters 10 --lr 1e-3 " \
             "--vocab-size 1000 "
#define LLAMA BASE "--normalization RMSNorm --swiglu --position-embedding-type rope " \
              "--untie-embeddings-and-output-weights --disable-bias-linear " \
              "--group-query-attention --num-query-groups 4 --ffn-hidden-size 160 "

static mg_status parse(mg_train_opts *o, const char *cmd)
{
    mg_status st = train_cmdline_parse(o, cmd);
    return st == MG_OK ? mg_train_resolve_vocab(o) : st;
}

/* Builds and initialises a model of cmd on layout lay (NULL: full). */
static mg_gpt *make(mg_test_ctx *t, mg_train_opts *o, const char *cmd, const mg_gpt_layout *lay)
{
    MG_CHECK_OK(t, parse(o, cmd));
    mg_gpt_layout full = mg_gpt_layout_full(&o->model);
    mg_gpt_opts mo = {mg_gpt_default_gelu(&o->model), o->init_method_std, (uint64_t)o->seed,
                      o->mask_vocab_padding, 0};
    mg_gpt *g = NULL;
    MG_CHECK_OK(t, mg_gpt_create(&g, &o->model, lay ? lay : &full, &mo));
    if (g) mg_gpt_init_params(g);
    return g;
}

static const float *view(const mg_gpt *g, const char *name, const float *buf)
{
    const mg_gpt_tensor *v = mg_gpt_find(g, name);
    return v ? buf + v->offset : NULL;
}

static void check_views(mg_test_ctx *t, const mg_gpt *g)
{
    int64_t end = 0, sum = 0;
    for (size_t i = 0; i < g->nt; i++) {
        const mg_gpt_tensor *v = &g->t[i];
        MG_CHECK(t, v->offset % 16 == 0 && v->offset >= end);
        end = v->offset + v->numel;
        sum += v->numel;
        MG_CHECK(t, v->decay == (v->ndim == 2));
    }
    MG_CHECK(t, end <= g->numel);
    MG_CHECK_EQ_INT(t, sum, g->nparams);
}

MG_TEST(model_layout_gpt2)
{
    mg_train_opts o;
    mg_gpt *g = make(t, &o, BASE, NULL);
    if (!g) return;
    MG_CHECK_EQ_INT(t, g->nt, 2 + 12 * 2 + 2);
    MG_CHECK_EQ_STR(t, g->t[0].name, "embedding.word_embeddings.weight");
    MG_CHECK_EQ_INT(t, g->t[0].shape[0], 1024);
    MG_CHECK_EQ_STR(t, g->t[g->nt - 1].name, "decoder.final_layernorm.bias");
    const mg_gpt_tensor *fc2 = mg_gpt_find(g, "decoder.layers.1.mlp.linear_fc2.weight");
    MG_CHECK(t, fc2 && fc2->shape[0] == 64 && fc2->shape[1] == 256 && fc2->decay);
    MG_CHECK(t, fc2 && fc2->init == MG_INIT_SCALED);
    const mg_gpt_tensor *b = mg_gpt_find(g, "decoder.layers.0.self_attention.linear_qkv.bias");
    MG_CHECK(t, b && b->shape[0] == 192 && !b->decay && b->init == MG_INIT_ZERO);
    check_views(t, g);
    mg_param_counts pc;
    mg_param_count(&o.model, &pc);
    MG_CHECK_EQ_INT(t, g->nparams, pc.total);
    MG_CHECK(t, mg_gpt_default_gelu(&o.model) == MGK_GELU_TANH);
    mg_gpt_free(g);
    mg_train_opts_free(&o);
}

MG_TEST(model_layout_llama)
{
    mg_train_opts o;
    mg_gpt *g = make(t, &o, LLAMA, NULL);
    if (!g) return;
    MG_CHECK_EQ_INT(t, g->nt, 1 + 6 * 2 + 2);
    const mg_gpt_tensor *qkv = mg_gpt_find(g, "decoder.layers.0.self_attention.linear_qkv.weight");
    MG_CHECK(t, qkv && qkv->shape[0] == (8 + 2 * 4) * 8 && qkv->shape[1] == 64);
    const mg_gpt_tensor *fc1 = mg_gpt_find(g, "decoder.layers.1.mlp.linear_fc1.weight");
    MG_CHECK(t, fc1 && fc1->shape[0] == 320);
    const mg_gpt_tensor *out = mg_gpt_find(g, "output_layer.weight");
    MG_CHECK(t, out && out->shape[0] == 1024 && out->decay);
    check_views(t, g);
    mg_param_counts pc;
    mg_param_count(&o.model, &pc);
    MG_CHECK_EQ_INT(t, g->nparams, pc.total);
    MG_CHECK_EQ_INT(t, g->nparams, mg_param_count_rank(&o.model));
    MG_CHECK(t, mg_gpt_default_gelu(&o.model) == MGK_GELU_ERF);
    mg_gpt_free(g);
    mg_train_opts_free(&o);
}

static void moments(const float *x, int64_t n, double *mean, double *std)
{
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < n; i++) {
        s += x[i];
        s2 += (double)x[i] * x[i];
    }
    *mean = s / (double)n;
    *std = sqrt(s2 / (double)n - *mean * *mean);
}

MG_TEST(model_init_statistics)
{
    mg_train_opts o;
    mg_gpt *g = make(t, &o, BASE "--init-method-std 0.05", NULL);
    if (!g) return;
    double mean, std;
    const float *wte = view(g, "embedding.word_embeddings.weight", g->params);
    moments(wte, 1000 * 64, &mean, &std);
    MG_CHECK(t, fabs(mean) < 5 * 0.05 / sqrt(64000.0) && fabs(std / 0.05 - 1) < 0.02);
    /* the 24 padding rows are drawn like the others (Megatron's init_method fills the whole
     * padded table), not zero */
    moments(wte + 1000 * 64, 24 * 64, &mean, &std);
    MG_CHECK(t, fabs(mean) < 5 * 0.05 / sqrt(1536.0) && fabs(std / 0.05 - 1) < 0.1);
    for (int64_t r = 1000; r < 1024; r++) {
        double s = 0;
        for (int64_t c = 0; c < 64; c++) s += (double)wte[r * 64 + c] * wte[r * 64 + c];
        MG_CHECK(t, s > 0.25 * 64 * 0.05 * 0.05); /* no row is (nearly) zero */
    }
    moments(view(g, "decoder.layers.0.self_attention.linear_proj.weight", g->params), 64 * 64,
            &mean, &std);
    MG_CHECK(t, fabs(std / (0.05 / 2) - 1) < 0.08); /* std / sqrt(2 L), L = 2 */
    moments(view(g, "decoder.layers.1.mlp.linear_fc1.weight", g->params), 256 * 64, &mean, &std);
    MG_CHECK(t, fabs(std / 0.05 - 1) < 0.04);
    const float *lnw = view(g, "decoder.layers.1.mlp.linear_fc1.layer_norm_weight", g->params);
    const float *lnb = view(g, "decoder.final_layernorm.bias", g->params);
    const float *fcb = view(g, "decoder.layers.0.mlp.linear_fc2.bias", g->params);
    for (int i = 0; i < 64; i++) MG_CHECK(t, lnw[i] == 1.0f && lnb[i] == 0.0f && fcb[i] == 0.0f);
    mg_gpt_free(g);
    mg_train_opts_free(&o);
}

MG_TEST(model_init_mask_vocab_padding)
{
    mg_train_opts o1, o2;
    mg_gpt *a = make(t, &o1, LLAMA, NULL), *b = make(t, &o2, LLAMA "--mask-vocab-padding", NULL);
    if (!a || !b) return;
    static const char *const names[] = {"embedding.word_embeddings.weight", "output_layer.weight"};
    for (int i = 0; i < 2; i++) {
        const float *x = view(a, names[i], a->params), *y = view(b, names[i], b->params);
        /* the real rows are the same draws; the padding rows are zero only with the flag */
        MG_CHECK(t, memcmp(x, y, 1000 * 64 * sizeof(float)) == 0);
        int zero_a = 1, zero_b = 1;
        for (int64_t j = 1000 * 64; j < 1024 * 64; j++) {
            zero_a &= x[j] == 0.0f;
            zero_b &= y[j] == 0.0f;
        }
        MG_CHECK(t, !zero_a && zero_b);
    }
    MG_CHECK_EQ_INT(t, mg_gpt_loss_vocab(a), 1024);
    MG_CHECK_EQ_INT(t, mg_gpt_loss_vocab(b), 1000);
    mg_gpt_free(a);
    mg_gpt_free(b);
    mg_train_opts_free(&o1);
    mg_train_opts_free(&o2);
}

MG_TEST(model_init_deterministic)
{
    mg_train_opts o1, o2, o3;
    mg_gpt *a = make(t, &o1, LLAMA, NULL), *b = make(t, &o2, LLAMA, NULL);
    mg_gpt *c = make(t, &o3, LLAMA "--seed 1235", NULL);
    if (!a || !b || !c) return;
    MG_CHECK(t, memcmp(a->params, b->params, (size_t)a->numel * sizeof(float)) == 0);
    MG_CHECK(t, memcmp(a->params, c->params, (size_t)a->numel * sizeof(float)) != 0);
    /* different tensors draw different streams */
    const float *q0 = view(a, "decoder.layers.0.self_attention.linear_qkv.weight", a->params);
    const float *q1 = view(a, "decoder.layers.1.self_attention.linear_qkv.weight", a->params);
    MG_CHECK(t, q0 && q1 && q0[0] != q1[0] && q0[1] != q1[1]);
    mg_gpt_free(a);
    mg_gpt_free(b);
    mg_gpt_free(c);
    mg_train_opts_free(&o1);
    mg_train_opts_free(&o2);
    mg_train_opts_free(&o3);
}

/* Shard element (r, c) of tensor `name` on model s equals full[R][C] under the split rule. */
static int same_slice(const mg_gpt *full, const mg_gpt *s, const char *name, int64_t rank)
{
    const mg_gpt_tensor *fv = mg_gpt_find(full, name), *sv = mg_gpt_find(s, name);
    if (!fv || !sv) return 0;
    const float *fx = full->params + fv->offset, *sx = s->params + sv->offset;
    for (int64_t r = 0; r < sv->shape[0]; r++)
        for (int64_t c = 0; c < sv->shape[1]; c++) {
            int64_t R = r, C = c, fl = sv->shape[0] / 2;
            switch (sv->param.spec->split) {
            case MG_SPLIT_VOCAB:
            case MG_SPLIT_COLUMN:
            case MG_SPLIT_QKV: R = rank * sv->shape[0] + r; break;
            case MG_SPLIT_SWIGLU:
                R = r < fl ? rank * fl + r : fv->shape[0] / 2 + rank * fl + (r - fl);
                break;
            case MG_SPLIT_ROW: C = rank * sv->shape[1] + c; break;
            default: break;
            }
            if (sx[r * sv->shape[1] + c] != fx[R * fv->shape[1] + C]) return 0;
        }
    return 1;
}

MG_TEST(model_init_same_under_tp2)
{
    static const char *const names[] = {
        "embedding.word_embeddings.weight", "output_layer.weight",
        "decoder.layers.1.self_attention.linear_qkv.weight",
        "decoder.layers.0.self_attention.linear_proj.weight",
        "decoder.layers.1.mlp.linear_fc1.weight", "decoder.layers.0.mlp.linear_fc2.weight",
        "decoder.layers.0.self_attention.linear_qkv.layer_norm_weight"};
    mg_train_opts o1, o2;
    mg_gpt *full = make(t, &o1, LLAMA, NULL);
    for (int64_t rank = 0; rank < 2 && full; rank++) {
        mg_gpt_layout lay = {2, rank, 0, 2, 1, 1};
        mg_gpt *s = make(t, &o2, LLAMA, &lay);
        if (!s) break;
        MG_CHECK_EQ_INT(t, mg_gpt_find(s, names[4])->shape[0], 160);
        o2.model.tp = 2;
        MG_CHECK_EQ_INT(t, s->nparams, mg_param_count_rank(&o2.model));
        for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
            if (!same_slice(full, s, names[i], rank))
                mg_test_fail(t, __FILE__, __LINE__, "rank %lld: %s is not the TP=1 slice",
                             (long long)rank, names[i]);
        mg_gpt_free(s);
        mg_train_opts_free(&o2);
    }
    mg_gpt_free(full);
    mg_train_opts_free(&o1);
}

MG_TEST(model_init_same_on_pp_stage)
{
    mg_train_opts o1, o2;
    mg_gpt *full = make(t, &o1, BASE, NULL);
    mg_gpt_layout lay = {1, 0, 1, 1, 0, 1};
    mg_gpt *s = make(t, &o2, BASE, &lay);
    if (full && s) {
        MG_CHECK(t, !mg_gpt_find(s, "embedding.word_embeddings.weight"));
        MG_CHECK(t, !mg_gpt_find(s, "decoder.layers.1.mlp.linear_fc1.weight"));
        const mg_gpt_tensor *v = mg_gpt_find(s, "decoder.layers.0.mlp.linear_fc1.weight");
        const float *x = view(full, "decoder.layers.1.mlp.linear_fc1.weight", full->params);
        MG_CHECK(t, v && v->param.layer == 1 &&
                        memcmp(s->params + v->offset, x, (size_t)v->numel * 4) == 0);
        MG_CHECK(t, mg_gpt_find(s, "decoder.final_layernorm.weight") != NULL);
        /* the last stage's copy of the tied embeddings: same values, not in the norm */
        const mg_gpt_tensor *c = mg_gpt_find(s, "output_layer.weight");
        const mg_gpt_tensor *e = mg_gpt_find(full, "embedding.word_embeddings.weight");
        MG_CHECK(t, c && e && c->tied_copy && !mg_gpt_tensor_in_norm(s, c) &&
                        c->numel == e->numel &&
                        memcmp(s->params + c->offset, full->params + e->offset,
                               (size_t)e->numel * 4) == 0);
        MG_CHECK(t, mg_gpt_tensor_in_norm(full, e) && !e->tied_copy);
    }
    mg_gpt_free(full);
    mg_gpt_free(s);
    mg_train_opts_free(&o1);
    mg_train_opts_free(&o2);
}

/* Which tensors count in the gradient norm and which SP gradients are partial sums. */
MG_TEST(model_tp_duplicates_and_sp_tensors)
{
    mg_train_opts o;
    mg_gpt_layout lay = {2, 1, 0, 2, 1, 1};
    mg_gpt *s = make(t, &o, BASE, &lay);
    if (!s) return;
    const mg_gpt_tensor *norm = mg_gpt_find(s, "decoder.final_layernorm.weight");
    const mg_gpt_tensor *bias = mg_gpt_find(s, "decoder.layers.0.mlp.linear_fc2.bias");
    const mg_gpt_tensor *pos = mg_gpt_find(s, "embedding.position_embeddings.weight");
    const mg_gpt_tensor *qkv = mg_gpt_find(s, "decoder.layers.0.self_attention.linear_qkv.bias");
    MG_CHECK(t, norm && bias && pos && qkv);
    if (norm && bias && pos && qkv) {
        MG_CHECK(t, !mg_gpt_tensor_in_norm(s, norm) && !mg_gpt_tensor_in_norm(s, pos));
        MG_CHECK(t, mg_gpt_tensor_in_norm(s, qkv)); /* sharded: every rank counts its part */
        MG_CHECK(t, mg_gpt_tensor_sp_reduced(norm) && mg_gpt_tensor_sp_reduced(bias));
        MG_CHECK(t, !mg_gpt_tensor_sp_reduced(pos) && !mg_gpt_tensor_sp_reduced(qkv));
    }
    MG_CHECK_EQ_INT(t, mg_sched_slots(4, 0, 6), 4);
    MG_CHECK_EQ_INT(t, mg_sched_slots(4, 3, 6), 1);
    MG_CHECK_EQ_INT(t, mg_sched_slots(4, 0, 2), 2);
    mg_gpt_free(s);
    mg_train_opts_free(&o);
}

/* An HF file has no padding rows (loading leaves them zero): the round trip is exact for a
 * model whose padding is inert. */
#define LLAMA_HF LLAMA "--mask-vocab-padding "

MG_TEST(model_hf_roundtrip_and_tp_load)
{
    mg_train_opts o1, o2, o3;
    mg_gpt *a = make(t, &o1, LLAMA_HF, NULL);
    if (!a) return;
    const char *path = mg_test_path(t, "model.safetensors");
    MG_CHECK_OK(t, mg_gpt_save_hf(a, a->params, path));
    mg_gpt_layout full = mg_gpt_layout_full(&o1.model);
    mg_gpt *b = NULL;
    MG_CHECK_OK(t, mg_gpt_create(&b, &o1.model, &full, &a->opt));
    if (b) {
        MG_CHECK_OK(t, mg_gpt_load_hf(b, path));
        MG_CHECK(t, memcmp(a->params, b->params, (size_t)a->numel * sizeof(float)) == 0);
    }
    mg_gpt_layout lay = {2, 1, 0, 2, 1, 1};
    mg_gpt *init = make(t, &o2, LLAMA_HF, &lay), *loaded = make(t, &o3, LLAMA_HF, &lay);
    if (init && loaded) {
        memset(loaded->params, 0, (size_t)loaded->numel * sizeof(float));
        MG_CHECK_OK(t, mg_gpt_load_hf(loaded, path));
        MG_CHECK(t, memcmp(init->params, loaded->params, (size_t)init->numel * 4) == 0);
        MG_CHECK_ERR(t, mg_gpt_save_hf(loaded, loaded->params, path), MG_ERR_UNSUPPORTED,
                     "not supported yet");
    }
    mg_gpt_free(init);
    mg_gpt_free(loaded);
    mg_gpt_free(a);
    mg_gpt_free(b);
    mg_train_opts_free(&o1);
    mg_train_opts_free(&o2);
    mg_train_opts_free(&o3);
}

static void fill_batch(int32_t *ids, int32_t *tgt, int64_t n)
{
    uint64_t x = 88172645463325252ull;
    for (int64_t i = 0; i < n; i++) {
        x ^= x << 13, x ^= x >> 7, x ^= x << 17;
        ids[i] = (int32_t)(x % 1000);
        tgt[i] = (int32_t)((x >> 20) % 1000);
    }
}

/* Forward + backward of model g on backend be; returns the loss, grads in g->grads. */
static double run_pass(mg_test_ctx *t, mg_gpt *g, mgk_backend be, double scale, int times)
{
    mg_kctx k;
    int32_t ids[32], tgt[32];
    fill_batch(ids, tgt, 32);
    mg_gpt_batch b = {ids, tgt, NULL, NULL, NULL};
    double loss = NAN;
    MG_CHECK_OK(t, mgk_ctx_init(&k, be, 2));
    mg_gpt_acts *a = NULL;
    MG_CHECK_OK(t, mg_gpt_acts_create(&a, g, &k, 2, 16));
    if (a) MG_CHECK_EQ_INT(t, mg_gpt_acts_bytes(a), mg_gpt_acts_plan_bytes(g, &k, 2, 16));
    mg_gpt_zero_grads(g);
    for (int i = 0; a && i < times; i++) {
        MG_CHECK_OK(t, mg_gpt_forward(g, a, &k, &b, &loss));
        MG_CHECK_OK(t, mg_gpt_backward(g, a, &k, scale));
    }
    mg_gpt_acts_free(a);
    mgk_ctx_free(&k);
    return loss;
}

MG_TEST(model_forward_backends_and_accumulation)
{
    const char *cmds[2] = {BASE, LLAMA};
    for (int c = 0; c < 2; c++) {
        mg_train_opts o;
        mg_gpt *g = make(t, &o, cmds[c], NULL);
        if (!g) return;
        float *ref = malloc((size_t)g->numel * sizeof(float));
        double l_ref = run_pass(t, g, MGK_CPU_REF, 1.0, 1);
        memcpy(ref, g->grads, (size_t)g->numel * sizeof(float));
        /* small init: logits ~ N(0, 0.16^2), so the loss is ln Vp + 0.013 +- 0.03 (32 tokens;
         * the softmax runs over the 1024 padded columns) */
        MG_CHECK(t, fabs(l_ref - log(1024.0)) < 0.15);
        double l_fast = run_pass(t, g, MGK_CPU_FAST, 0.5, 2);
        MG_CHECK(t, fabs(l_fast - l_ref) <= 1e-6 * l_ref);
        double gmax = 0, emax = 0;
        for (int64_t i = 0; i < g->numel; i++) {
            gmax = fmax(gmax, fabs(ref[i]));
            emax = fmax(emax, fabs(ref[i] - g->grads[i]));
        }
        MG_CHECK(t, gmax > 0 && emax <= 1e-5 * gmax);
        free(ref);
        mg_gpt_free(g);
        mg_train_opts_free(&o);
    }
}

/* Zero output weights give zero logits: the loss is exactly ln(columns of the softmax),
 * ln 1024 over the padded vocabulary (Megatron's), ln 1000 with --mask-vocab-padding. */
MG_TEST(model_loss_over_padded_vocabulary)
{
    static const char *const cmds[2] = {LLAMA, LLAMA "--mask-vocab-padding"};
    static const double cols[2] = {1024, 1000};
    for (int c = 0; c < 2; c++) {
        mg_train_opts o;
        mg_gpt *g = make(t, &o, cmds[c], NULL);
        if (!g) return;
        const mg_gpt_tensor *out = mg_gpt_find(g, "output_layer.weight");
        memset(g->params + out->offset, 0, (size_t)out->numel * sizeof(float));
        double loss = run_pass(t, g, MGK_CPU_REF, 1.0, 1);
        MG_CHECK(t, fabs(loss - log(cols[c])) < 1e-6);
        /* the padding rows get their share of the softmax gradient, only without the mask */
        const float *d = g->grads + out->offset;
        double pad = 0;
        for (int64_t i = 1000 * 64; i < 1024 * 64; i++) pad += fabs(d[i]);
        MG_CHECK(t, c == 0 ? pad > 0 : pad == 0);
        mg_gpt_free(g);
        mg_train_opts_free(&o);
    }
}

MG_TEST(model_refusals)
{
    mg_train_opts o;
    mg_gpt *g = make(t, &o, BASE, NULL);
    if (!g) return;
    mg_kctx k;
    MG_CHECK_OK(t, mgk_ctx_init(&k, MGK_CPU_REF, 1));
    mg_gpt_acts *a = NULL;
    MG_CHECK_ERR(t, mg_gpt_acts_create(&a, g, &k, 2, 17), MG_ERR_ARG, "sequence length 16");
    MG_CHECK_OK(t, mg_gpt_acts_create(&a, g, &k, 1, 4));
    int32_t ids[4] = {1, 2, 1000, 3}, tgt[4] = {0, 0, 0, 0};
    mg_gpt_batch b = {ids, tgt, NULL, NULL, NULL};
    double loss;
    if (a) {
        MG_CHECK_ERR(t, mg_gpt_forward(g, a, &k, &b, &loss), MG_ERR_ARG, "id 1000");
        MG_CHECK_ERR(t, mg_gpt_backward(g, a, &k, 1.0), MG_ERR_ARG, "without a forward");
    }
    mg_gpt_acts_free(a);
    mg_gpt_layout lay = {2, 0, 0, 2, 1, 1};
    mg_gpt *s = NULL;
    MG_CHECK_OK(t, mg_gpt_create(&s, &o.model, &lay, &g->opt));
    if (s) MG_CHECK_ERR(t, mg_gpt_acts_create(&a, s, &k, 1, 4), MG_ERR_ARG, "without its group");
    mg_gpt_free(s);
    lay.tp = 3;
    MG_CHECK_ERR(t, mg_gpt_create(&s, &o.model, &lay, &g->opt), MG_ERR_ARG, "padded vocabulary");
    mg_gpt_free(s);
    mgk_ctx_free(&k);
    mg_gpt_free(g);
    mg_train_opts_free(&o);
}

MG_TEST(model_train_step_and_nan_skip)
{
    mg_train_opts o;
    mg_gpt *g = make(t, &o, BASE "--global-batch-size 4", NULL);
    if (!g) return;
    mg_kctx k;
    MG_CHECK_OK(t, mgk_ctx_init(&k, MGK_CPU_FAST, 2));
    mg_gpt_acts *a = NULL;
    mg_gpt_optim *opt = NULL;
    MG_CHECK_OK(t, mg_gpt_acts_create(&a, g, &k, 2, 16));
    MG_CHECK_OK(t, mg_gpt_optim_create(&opt, g));
    int32_t ids[64], tgt[64];
    fill_batch(ids, tgt, 64);
    mg_gpt_batch mb[2] = {{ids, tgt, NULL, NULL, NULL}, {ids + 32, tgt + 32, NULL, NULL, NULL}};
    mg_step_hp hp;
    mg_step_result r;
    mg_step_hp_at(&o, 1, &hp);
    MG_CHECK(t, hp.clip_grad == 1.0 && hp.weight_decay == 0.01 && hp.beta2 == 0.999);
    float *before = malloc((size_t)g->numel * sizeof(float));
    memcpy(before, g->params, (size_t)g->numel * sizeof(float));
    hp.lr = 1e-3;
    if (a && opt) {
        double l0, l1;
        MG_CHECK_OK(t, mg_gpt_forward(g, a, &k, &mb[0], &l0));
        MG_CHECK_OK(t, mg_gpt_forward(g, a, &k, &mb[1], &l1));
        MG_CHECK_OK(t, mg_gpt_train_step(g, opt, a, &k, mb, 2, &hp, &r));
        MG_CHECK(t, !r.skipped && opt->step == 1 && fabs(r.loss - (l0 + l1) / 2) < 1e-12);
        double s = 0;
        for (int64_t i = 0; i < g->numel; i++) s += (double)g->grads[i] * g->grads[i];
        MG_CHECK(t, fabs(r.grad_norm - sqrt(s)) <= 1e-9 * sqrt(s) && r.grad_norm > 0);
        MG_CHECK(t, memcmp(before, g->params, (size_t)g->numel * sizeof(float)) != 0);
        /* a NaN weight: NaN loss and norm, the update is skipped */
        g->params[mg_gpt_find(g, "decoder.final_layernorm.weight")->offset] = NAN;
        memcpy(before, g->params, (size_t)g->numel * sizeof(float));
        MG_CHECK_OK(t, mg_gpt_train_step(g, opt, a, &k, mb, 2, &hp, &r));
        MG_CHECK(t, r.skipped && opt->step == 1 && isnan(r.loss));
        MG_CHECK(t, memcmp(before, g->params, (size_t)g->numel * sizeof(float)) == 0);
    }
    free(before);
    mg_gpt_optim_free(opt);
    mg_gpt_acts_free(a);
    mgk_ctx_free(&k);
    mg_gpt_free(g);
    mg_train_opts_free(&o);
}

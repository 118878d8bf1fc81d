/* test_train_ckpt_shards.c — checkpoint.h with several model shards: the begin / write /
 * commit phases put one mp_rank_TT (PP 1) or mp_rank_TT_PPP (PP > 1) file per shard in the
 * iteration folder, and each shard loads back bit for bit (weights, moments, step). The
 * shards are written from this one process, as the writers of a TP 2 or PP 2 run would.
 * The grad scaler's state and the scheduler's step count (skipped iterations) round-trip,
 * and so does the --bf16/--fp16 layout's fp32 masters.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "checkpoint.h"
#include "harness.h"
#include "mg/file.h"
#include "train_cmdline.h"

#define TINY "--num-layers 2 --hidden-size 8 --num-attention-heads 2 --seq-length 4 " \
             "--max-position-embeddings 4 --micro-batch-size 1 --train-iters 10 --lr 1e-3 " \
             "--vocab-size 100 --save-interval 5"

static mg_gpt *model(mg_test_ctx *t, const mg_train_opts *o, const mg_gpt_layout *l, int init)
{
    mg_gpt_opts mo = {mg_gpt_default_gelu(&o->model), o->init_method_std, (uint64_t)o->seed,
                      o->mask_vocab_padding, 0};
    mg_gpt *g = NULL;
    MG_CHECK_OK(t, mg_gpt_create(&g, &o->model, l, &mo));
    if (g && init) mg_gpt_init_params(g);
    return g;
}

/* Two shards at TP 2 and at PP 2 (one layer per stage). */
static const mg_gpt_layout TP2[2] = {{2, 0, 0, 2, 1, 1}, {2, 1, 0, 2, 1, 1}};
static const mg_train_ckpt_shard TP2_SH[2] = {{0, 0, 1}, {1, 0, 1}};
static const mg_gpt_layout PP2[2] = {{1, 0, 0, 1, 1, 0}, {1, 0, 1, 1, 0, 1}};
static const mg_train_ckpt_shard PP2_SH[2] = {{0, 0, 2}, {0, 1, 2}};

/* Moments that depend on the canonical element only, as a run's do (the tensor-parallel
 * replicas and the tied embedding copy see the same gradients): torch_dist stores one copy. */
static void fill_canonical(const mg_gpt *g, float *buf, int64_t mod, float scale)
{
    for (size_t k = 0; k < g->nt; k++) {
        const mg_gpt_tensor *v = &g->t[k];
        for (int64_t r = 0; r < v->shape[0]; r++)
            for (int64_t c = 0; c < v->shape[1]; c++) {
                int64_t R, C;
                int pad;
                mg_gpt_canonical_index(g, v, r, c, &R, &C, &pad);
                int64_t h = R * 31 + C * 7 + (v->param.layer + 1) * 13 + (int64_t)strlen(v->param.spec->key);
                buf[v->offset + r * v->shape[1] + c] = (float)(h % mod) * scale;
            }
    }
}

/* Writes one shard per layout, then loads each back into a fresh model. */
static void roundtrip(mg_test_ctx *t, const char *flags, const mg_gpt_layout *lay,
                      const mg_train_ckpt_shard *sh, const char *const *names, int n)
{
    mg_train_opts o;
    MG_CHECK_OK(t, train_cmdline_parse(&o, flags));
    MG_CHECK_OK(t, mg_train_resolve_vocab(&o));
    char dir[512];
    snprintf(dir, sizeof dir, "%s/ck", t->dir);
    mg_train_ckpt_state st = {.iteration = 5, .consumed_train_samples = 5 * o.global_batch_size,
                              .flops_so_far = 1e9, .optim_loaded = 1};
    mg_gpt *g[4];
    mg_gpt_optim *opt[4];
    uint8_t *part[4] = {NULL};
    size_t len[4] = {0};
    MG_CHECK_OK(t, mg_train_ckpt_begin(dir, 5));
    for (int i = 0; i < n; i++) {
        g[i] = model(t, &o, &lay[i], 1);
        MG_CHECK_OK(t, mg_gpt_optim_create(&opt[i], g[i]));
        opt[i]->step = 5;
        if (o.ckpt_torch_dist) {
            fill_canonical(g[i], opt[i]->m, 97, 1e-3f);
            fill_canonical(g[i], opt[i]->v, 89, 1e-4f);
        }
        for (int64_t j = 0; j < g[i]->numel && !o.ckpt_torch_dist; j++) {
            opt[i]->m[j] = (float)(j % 97) * 1e-3f * (float)(i + 1);
            opt[i]->v[j] = (float)(j % 89) * 1e-4f;
        }
        MG_CHECK_OK(t, mg_train_ckpt_write(dir, &sh[i], &o, g[i], opt[i], &st, &part[i], &len[i]));
        MG_CHECK(t, !part[i] == !o.ckpt_torch_dist); /* only torch_dist has a .metadata */
    }
    if (o.ckpt_torch_dist) { /* a writer's part missing leaves tensors uncovered: refused */
        MG_CHECK_ERR(t, mg_train_ckpt_write_meta(dir, 5, (const uint8_t *const *)part, len, 1),
                     MG_ERR_FORMAT, "its chunks hold");
        MG_CHECK_OK(t, mg_train_ckpt_write_meta(dir, 5, (const uint8_t *const *)part, len, (size_t)n));
    }
    for (int i = 0; i < n; i++) free(part[i]);
    MG_CHECK_OK(t, mg_train_ckpt_commit(dir, 5));
    for (int i = 0; i < n; i++) {
        char p[700];
        snprintf(p, sizeof p, "%s/iter_0000005/%s", dir, names[i]);
        struct stat sb;
        MG_CHECK(t, stat(p, &sb) == 0 && sb.st_size > 0);
        mg_gpt *back = model(t, &o, &lay[i], 0);
        mg_gpt_optim *bo = NULL;
        MG_CHECK_OK(t, mg_gpt_optim_create(&bo, back));
        mg_train_ckpt_state got;
        MG_CHECK_OK(t, mg_train_ckpt_load_shard(dir, -1, &sh[i], back, bo, &got));
        MG_CHECK_EQ_INT(t, got.iteration, 5);
        MG_CHECK_EQ_INT(t, bo->step, 5);
        for (size_t k = 0; k < back->nt; k++) { /* the tensors (not the alignment padding) */
            int64_t off = back->t[k].offset;
            size_t bytes = (size_t)back->t[k].numel * sizeof(float);
            MG_CHECK(t, memcmp(back->params + off, g[i]->params + off, bytes) == 0);
            MG_CHECK(t, memcmp(bo->m + off, opt[i]->m + off, bytes) == 0);
            MG_CHECK(t, memcmp(bo->v + off, opt[i]->v + off, bytes) == 0);
        }
        mg_gpt_optim_free(bo);
        mg_gpt_free(back);
    }
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s/iter_0000005.tmp", dir);
    MG_CHECK(t, !mg_is_dir(tmp));
    for (int i = 0; i < n; i++) {
        mg_gpt_optim_free(opt[i]);
        mg_gpt_free(g[i]);
    }
    mg_train_opts_free(&o);
}

MG_TEST(train_ckpt_shards_tp2)
{
    const mg_gpt_layout lay[2] = {{2, 0, 0, 2, 1, 1}, {2, 1, 0, 2, 1, 1}};
    const mg_train_ckpt_shard sh[2] = {{0, 0, 1}, {1, 0, 1}};
    const char *names[2] = {"mp_rank_00/model_optim_rng.pt", "mp_rank_01/model_optim_rng.pt"};
    roundtrip(t, TINY " --tensor-model-parallel-size 2", lay, sh, names, 2);
}

/* torch_dist: each shard its data files (__R_0..2.distcp, R = pp_rank x TP + tp_rank) and
 * its part of the .metadata; each loads back its own boxes, the PP 2 last stage its tied
 * embedding copy from the first stage's chunks. */
MG_TEST(train_ckpt_shards_torch_dist_tp2_pp2)
{
    const char *names[2] = {"__0_0.distcp", "__1_2.distcp"};
    roundtrip(t, TINY " --tensor-model-parallel-size 2 --ckpt-format torch_dist", TP2, TP2_SH, names, 2);
    roundtrip(t, TINY " --pipeline-model-parallel-size 2 --ckpt-format torch_dist", PP2, PP2_SH, names, 2);
}

MG_TEST(train_ckpt_shards_pp2)
{
    const mg_gpt_layout lay[2] = {{1, 0, 0, 1, 1, 0}, {1, 0, 1, 1, 0, 1}};
    const mg_train_ckpt_shard sh[2] = {{0, 0, 2}, {0, 1, 2}};
    const char *names[2] = {"mp_rank_00_000/model_optim_rng.pt", "mp_rank_00_001/model_optim_rng.pt"};
    roundtrip(t, TINY " --pipeline-model-parallel-size 2", lay, sh, names, 2);
}

/* --bf16/--fp16: the mixed-precision layout (16-bit model tensors, the fp32 masters in the
 * optimizer's fp32_from_fp16_params) loads back the fp32 masters bit for bit (their
 * 16-bit rounding would not), at TP 2 and at PP 2 (the tied embedding copy). */
MG_TEST(train_ckpt_shards_mixed_precision)
{
    const char *tnames[2] = {"mp_rank_00/model_optim_rng.pt", "mp_rank_01/model_optim_rng.pt"};
    roundtrip(t, TINY " --tensor-model-parallel-size 2 --bf16", TP2, TP2_SH, tnames, 2);
    const char *pnames[2] = {"mp_rank_00_000/model_optim_rng.pt",
                              "mp_rank_00_001/model_optim_rng.pt"};
    roundtrip(t, TINY " --pipeline-model-parallel-size 2 --fp16", PP2, PP2_SH, pnames, 2);
}

/* Saves a shard with grad scaler state s and scheduler lag `behind`, loads it back. */
static void scaler_roundtrip(mg_test_ctx *t, const char *sub, const mg_grad_scaler *s,
                             int64_t behind, mg_train_ckpt_state *got)
{
    mg_train_opts o;
    MG_CHECK_OK(t, train_cmdline_parse(&o, TINY));
    MG_CHECK_OK(t, mg_train_resolve_vocab(&o));
    char dir[512];
    snprintf(dir, sizeof dir, "%s/%s", t->dir, sub);
    mg_train_ckpt_state st = {.iteration = 5, .consumed_train_samples = 5 * o.global_batch_size,
                              .optim_loaded = 1, .sched_behind = behind, .scaler = *s};
    const mg_gpt_layout lay = {1, 0, 0, 2, 1, 1};
    mg_gpt *g = model(t, &o, &lay, 1);
    mg_gpt_optim *opt = NULL;
    MG_CHECK_OK(t, mg_gpt_optim_create(&opt, g));
    MG_CHECK_OK(t, mg_train_ckpt_save(dir, &o, g, opt, &st));
    memset(got, 0xff, sizeof *got);
    MG_CHECK_OK(t, mg_train_ckpt_load(dir, g, opt, got));
    mg_gpt_optim_free(opt);
    mg_gpt_free(g);
    mg_train_opts_free(&o);
}

/* The optimizer's 'grad_scaler' (dynamic: scale and trackers; constant: {}; none: absent)
 * and the scheduler's num_steps short of the skipped iterations load back as saved. */
MG_TEST(train_ckpt_grad_scaler_state)
{
    mg_grad_scaler dyn, none = {.kind = MG_SCALER_NONE, .scale = 1.0f};
    MG_CHECK_OK(t, mg_grad_scaler_dynamic(&dyn, 65536.0, 1.0, 3, 2));
    mg_grad_scaler_update(&dyn, 1);
    mg_grad_scaler_update(&dyn, 1);
    mg_grad_scaler_update(&dyn, 0);
    mg_train_ckpt_state got;
    scaler_roundtrip(t, "dyn", &dyn, 2, &got);
    MG_CHECK(t, got.scaler.kind == MG_SCALER_DYNAMIC && got.scaler.scale == 32768.0f);
    MG_CHECK_EQ_INT(t, got.scaler.growth_tracker, 1);
    MG_CHECK_EQ_INT(t, got.scaler.hysteresis_tracker, 0);
    MG_CHECK_EQ_INT(t, got.sched_behind, 2);
    mg_grad_scaler constant = {.kind = MG_SCALER_CONSTANT, .scale = 8.0f};
    scaler_roundtrip(t, "const", &constant, 0, &got);
    MG_CHECK(t, got.scaler.kind == MG_SCALER_CONSTANT);
    MG_CHECK_EQ_INT(t, got.sched_behind, 0);
    scaler_roundtrip(t, "none", &none, 0, &got);
    MG_CHECK(t, got.scaler.kind == MG_SCALER_NONE);
}

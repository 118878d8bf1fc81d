/* ckpt_shards.c — writes mg-train's checkpoint of a freshly initialised model as the
 * writers of a TP x PP run would (train/checkpoint.h's begin / write per shard / commit),
 * from one process (with --ckpt-format torch_dist: every shard's data files, then the
 * .metadata of all), for tests/interop/test_dist_ckpt.py and test_train_loss_scale.py.
 *
 * Usage: ckpt_shards DIR ITERATION [--scaler-updates FLAGS] MEGATRON-FLAGS...
 *   The model and its layout (--tensor-model-parallel-size, --pipeline-model-parallel-size;
 *   layers split evenly over the stages) come from the flags; every shard holds Megatron's
 *   initialisation from --seed (layout-independent), zero moments at step 0, and the grad
 *   scaler the flags give (train/grad_scaler.h) after the updates FLAGS names ('1': an
 *   overflow, '0': a clean step; each overflow a skipped iteration, which the scheduler's
 *   num_steps leaves out). Exit 0, or 2 with a message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "train/checkpoint.h"
#include "train/grad_scaler.h"
#include "train/options.h"

static void ok(mg_status st, const char *what)
{
    if (st == MG_OK) return;
    fprintf(stderr, "ckpt_shards: error: %s: %s\n", what, mg_last_error());
    exit(2);
}

/* One shard; its part of a torch_dist .metadata (or NULL) appended to parts[*n]. */
static void write_one(const char *dir, const mg_train_opts *o, int64_t tp_rank,
                      int64_t pp_rank, const mg_train_ckpt_state *st, uint8_t **parts,
                      size_t *lens, size_t *n)
{
    const mg_model_desc *m = &o->model;
    int64_t per = m->num_layers / m->pp;
    mg_gpt_layout lay = {m->tp, tp_rank, pp_rank * per, per, pp_rank == 0,
                         pp_rank == m->pp - 1};
    mg_gpt_opts mo = {mg_gpt_default_gelu(m), o->init_method_std, (uint64_t)o->seed,
                      o->mask_vocab_padding, 0};
    mg_gpt *g = NULL;
    mg_gpt_optim *opt = NULL;
    ok(mg_gpt_create(&g, m, &lay, &mo), "model");
    mg_gpt_init_params(g);
    ok(mg_gpt_optim_create(&opt, g), "optimizer");
    mg_train_ckpt_shard sh = {tp_rank, pp_rank, m->pp};
    ok(mg_train_ckpt_write(dir, &sh, o, g, opt, st, &parts[*n], &lens[*n]), "write");
    (*n)++;
    mg_gpt_optim_free(opt);
    mg_gpt_free(g);
}

/* The scaler of the flags after the updates of `updates`; *skipped: the overflows. */
static void scaler_after(const mg_train_opts *o, const char *updates, mg_grad_scaler *s,
                         int64_t *skipped)
{
    ok(mg_grad_scaler_init(s, o), "grad scaler");
    *skipped = 0;
    for (const char *f = updates; *f; f++) {
        if (*f != '0' && *f != '1') ok(MG_ERR_ARG, "--scaler-updates: not 0 or 1");
        mg_grad_scaler_update(s, *f == '1');
        *skipped += *f == '1';
    }
}

int main(int argc, char **argv)
{
    int at = argc > 4 && !strcmp(argv[3], "--scaler-updates") ? 5 : 3;
    if (argc < at + 1) {
        fprintf(stderr, "usage: ckpt_shards DIR ITERATION [--scaler-updates FLAGS] "
                        "MEGATRON-FLAGS...\n");
        return 2;
    }
    const char *dir = argv[1];
    int64_t it = atoll(argv[2]);
    mg_train_opts o;
    ok(mg_train_parse(&o, argc - at + 1, argv + at - 1), "flags");
    ok(mg_train_resolve_vocab(&o), "vocabulary");
    mg_train_ckpt_state st = {.iteration = it, .consumed_train_samples = it * o.global_batch_size,
                              .optim_loaded = 1};
    int64_t skipped;
    scaler_after(&o, at == 5 ? argv[4] : "", &st.scaler, &skipped);
    st.sched_behind = skipped * o.global_batch_size;
    ok(mg_train_ckpt_begin(dir, it), "begin");
    size_t n = 0, shards = (size_t)(o.model.tp * o.model.pp);
    uint8_t **parts = calloc(shards, sizeof *parts);
    size_t *lens = calloc(shards, sizeof *lens);
    if (!parts || !lens) ok(MG_ERR_NOMEM, "out of memory");
    for (int64_t p = 0; p < o.model.pp; p++)
        for (int64_t r = 0; r < o.model.tp; r++) write_one(dir, &o, r, p, &st, parts, lens, &n);
    if (o.ckpt_torch_dist)
        ok(mg_train_ckpt_write_meta(dir, it, (const uint8_t *const *)parts, lens, n), "metadata");
    for (size_t i = 0; i < n; i++) free(parts[i]);
    free(parts);
    free(lens);
    ok(mg_train_ckpt_commit(dir, it), "commit");
    mg_train_opts_free(&o);
    return 0;
}

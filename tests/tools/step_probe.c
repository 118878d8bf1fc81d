/* step_probe.c — runs mg-train's training iterations (train/step.h) on fixed batches, for
 * tests/interop/test_train_step_torch.py.
 *
 * Usage: step_probe ref|fast erf|tanh|default WEIGHTS|init BATCHES OUTDIR MEGATRON-FLAGS...
 *   BATCHES is a safetensors file with "ids" and "targets" (I32 [iters, global batch, T])
 *   and optionally "loss_mask" (F32, same shape). Each iteration k (1-based) takes the
 *   k-th global batch in micro-batches of --micro-batch-size, with lr and weight decay
 *   from the scheduler of the flags. Writes OUTDIR/steps.safetensors ("loss", "grad_norm",
 *   "lr": F64 [iters]) and OUTDIR/params.safetensors (final weights, HF names).
 *   Exit status 0, or 2 with a message.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/safetensors.h"
#define PROBE_NAME "step_probe"
#include "probe_model.h"
#include "train/step.h"

typedef struct {
    int64_t iters, gbs, T;
    const int32_t *ids, *tgt;
    const float *mask;
} batches;

static const void *get(const mg_st_file *f, const char *name, mg_tdtype dt, batches *b,
                       int optional)
{
    const mg_st_tensor *t = mg_st_find(f, name);
    if (!t && optional) return NULL;
    if (!t || t->dtype != dt || t->ndim != 3 ||
        (b->iters && (t->shape[0] != b->iters || t->shape[1] != b->gbs || t->shape[2] != b->T))) {
        mg_error_set(MG_ERR_FORMAT, "%s: needs a %s tensor [iters, batch, T] like ids", name,
                     mg_tdtype_name(dt));
        die("batches");
    }
    b->iters = t->shape[0];
    b->gbs = t->shape[1];
    b->T = t->shape[2];
    void *p = malloc((size_t)t->nbytes);
    if (!p) exit(2);
    memcpy(p, t->data, (size_t)t->nbytes);
    return p;
}

static void write_steps(const char *dir, const double *v, int64_t n)
{
    static const char *const names[3] = {"loss", "grad_norm", "lr"};
    char path[4096];
    snprintf(path, sizeof path, "%s/steps.safetensors", dir);
    mg_st_writer *w = NULL;
    ok(mg_st_writer_create(&w, path), "output");
    for (int i = 0; i < 3; i++) ok(mg_st_writer_declare(w, names[i], MG_TD_F64, 1, &n), "output");
    ok(mg_st_writer_begin(w), "output");
    const char *name;
    while ((name = mg_st_writer_next(w, NULL, NULL)) != NULL) {
        int i = 0;
        while (strcmp(names[i], name) != 0) i++;
        ok(mg_st_writer_tensor(w, name, v + i * n, (size_t)n * sizeof(double)), "output");
    }
    ok(mg_st_writer_finish(w), "output");
    mg_st_writer_free(w);
}

static void train(mg_gpt *g, const mg_train_opts *o, mg_kctx *k, const batches *b,
                  const char *outdir)
{
    int64_t mbs = o->micro_batch_size, nmicro = b->gbs / mbs;
    if (nmicro * mbs != b->gbs) {
        mg_error_set(MG_ERR_ARG, "batch of %lld is not a multiple of --micro-batch-size",
                     (long long)b->gbs);
        die("batches");
    }
    mg_gpt_acts *a = NULL;
    mg_gpt_optim *opt = NULL;
    ok(mg_gpt_acts_create(&a, g, k, mbs, b->T), "activations");
    ok(mg_gpt_optim_create(&opt, g), "optimizer");
    mg_gpt_batch *micro = calloc((size_t)nmicro, sizeof(*micro));
    double *out = calloc((size_t)(3 * b->iters), sizeof(double));
    if (!micro || !out) exit(2);
    for (int64_t it = 0; it < b->iters; it++) {
        for (int64_t i = 0; i < nmicro; i++) {
            int64_t at = (it * b->gbs + i * mbs) * b->T;
            mg_gpt_batch mb = {b->ids + at, b->tgt + at, b->mask ? b->mask + at : NULL, NULL, NULL};
            micro[i] = mb;
        }
        mg_step_hp hp;
        mg_step_result r;
        mg_step_hp_at(o, it + 1, &hp);
        ok(mg_gpt_train_step(g, opt, a, k, micro, nmicro, &hp, &r), "step");
        out[it] = r.loss;
        out[b->iters + it] = r.grad_norm;
        out[2 * b->iters + it] = hp.lr;
    }
    write_steps(outdir, out, b->iters);
    char path[4096];
    snprintf(path, sizeof path, "%s/params.safetensors", outdir);
    ok(mg_gpt_save_hf(g, g->params, path), "parameters");
    free(micro);
    free(out);
    mg_gpt_optim_free(opt);
    mg_gpt_acts_free(a);
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: step_probe ref|fast erf|tanh|default WEIGHTS|init BATCHES OUTDIR "
                        "FLAGS...\n");
        return 2;
    }
    const char *bpath = argv[4];
    const char *outdir = argv[5]; /* probe_setup() reuses the argv slot, not the string */
    mg_train_opts o;
    mg_kctx k;
    mg_gpt *g = probe_setup(argc, argv, &o, &k);
    mg_st_file *f = NULL;
    ok(mg_st_open(&f, bpath), "batches");
    batches b = {0, 0, 0, NULL, NULL, NULL};
    b.ids = get(f, "ids", MG_TD_I32, &b, 0);
    b.tgt = get(f, "targets", MG_TD_I32, &b, 0);
    b.mask = get(f, "loss_mask", MG_TD_F32, &b, 1);
    mg_st_close(f);
    train(g, &o, &k, &b, outdir);
    free((void *)(uintptr_t)b.ids);
    free((void *)(uintptr_t)b.tgt);
    free((void *)(uintptr_t)b.mask);
    mg_gpt_free(g);
    mgk_ctx_free(&k);
    mg_train_opts_free(&o);
    return 0;
}

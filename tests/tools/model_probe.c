/* model_probe.c — runs mg-train's model (train/model.h) once, forward and backward, for
 * tests/interop/test_model_torch.py.
 *
 * Usage: model_probe ref|fast erf|tanh|default WEIGHTS|init INPUT OUTDIR MEGATRON-FLAGS...
 *   The model comes from Megatron's flags (parsed by mg-train's option parser; the training
 *   flags it requires, e.g. --micro-batch-size --train-iters --lr, must be given too).
 *   WEIGHTS is an HF-named safetensors file, or `init` for Megatron's initialisation with
 *   --seed / --init-method-std. INPUT is a safetensors file with "ids" and "targets" (I32,
 *   [B, T]) and optionally "loss_mask" (F32 [B, T]), "pos" and "seg" (I32 [B, T]: position
 *   ids, document segments for --reset-attention-mask).
 *   Writes OUTDIR/out.safetensors ("logits" F32 [B, T, V] over the true vocabulary, "loss"
 *   F64 [1]), OUTDIR/grads.safetensors and OUTDIR/params.safetensors (HF names).
 *   Exit status 0, or 2 with a message.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/safetensors.h"
#define PROBE_NAME "model_probe"
#include "probe_model.h"

static const void *input(const mg_st_file *f, const char *name, mg_tdtype dt, int64_t *B,
                         int64_t *T, int optional)
{
    const mg_st_tensor *t = mg_st_find(f, name);
    if (!t && optional) return NULL;
    if (!t || t->dtype != dt || t->ndim != 2) {
        mg_error_set(MG_ERR_FORMAT, "%s: needs a 2-dim %s tensor", name, mg_tdtype_name(dt));
        die("input");
    }
    if (*B && (t->shape[0] != *B || t->shape[1] != *T)) {
        mg_error_set(MG_ERR_FORMAT, "%s: shape differs from ids", name);
        die("input");
    }
    *B = t->shape[0];
    *T = t->shape[1];
    return t->data;
}

static void *copy(const void *p, int64_t n, size_t el)
{
    if (!p) return NULL;
    void *q = malloc((size_t)n * el);
    if (!q) exit(2);
    memcpy(q, p, (size_t)n * el);
    return q;
}

static void write_out(const char *dir, const mg_gpt *g, const float *logits, int64_t B,
                      int64_t T, double loss)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/out.safetensors", dir);
    int64_t V = g->m.vocab_size, Vp = g->m.padded_vocab_size, N = B * T;
    int64_t shape[3] = {B, T, V}, one = 1;
    float *lv = malloc((size_t)(N * V) * sizeof(float));
    if (!lv) exit(2);
    for (int64_t i = 0; i < N; i++) memcpy(lv + i * V, logits + i * Vp, (size_t)V * sizeof(float));
    mg_st_writer *w = NULL;
    ok(mg_st_writer_create(&w, path), "output");
    ok(mg_st_writer_declare(w, "logits", MG_TD_F32, 3, shape), "output");
    ok(mg_st_writer_declare(w, "loss", MG_TD_F64, 1, &one), "output");
    ok(mg_st_writer_begin(w), "output");
    ok(mg_st_writer_tensor(w, "loss", &loss, sizeof loss), "output");
    ok(mg_st_writer_tensor(w, "logits", lv, (size_t)(N * V) * sizeof(float)), "output");
    ok(mg_st_writer_finish(w), "output");
    mg_st_writer_free(w);
    free(lv);
}

static void read_batch(const char *path, mg_gpt_batch *b, int64_t *B, int64_t *T)
{
    mg_st_file *in = NULL;
    ok(mg_st_open(&in, path), "input");
    *B = *T = 0;
    const void *ids = input(in, "ids", MG_TD_I32, B, T, 0);
    const void *tgt = input(in, "targets", MG_TD_I32, B, T, 0);
    const void *mask = input(in, "loss_mask", MG_TD_F32, B, T, 1);
    const void *pos = input(in, "pos", MG_TD_I32, B, T, 1);
    const void *seg = input(in, "seg", MG_TD_I32, B, T, 1);
    b->ids = copy(ids, *B * *T, 4);
    b->targets = copy(tgt, *B * *T, 4);
    b->loss_mask = copy(mask, *B * *T, 4);
    b->pos = copy(pos, *B * *T, 4);
    b->seg = copy(seg, *B * *T, 4);
    mg_st_close(in);
}

static void run(mg_gpt *g, mg_kctx *k, const char *inpath, const char *outdir)
{
    int64_t B, T;
    mg_gpt_batch b;
    read_batch(inpath, &b, &B, &T);
    mg_gpt_acts *a = NULL;
    ok(mg_gpt_acts_create(&a, g, k, B, T), "activations");
    double loss = 0;
    ok(mg_gpt_forward(g, a, k, &b, &loss), "forward");
    write_out(outdir, g, mg_gpt_logits(a), B, T, loss);
    mg_gpt_zero_grads(g);
    ok(mg_gpt_backward(g, a, k, 1.0), "backward");
    char path[4096];
    snprintf(path, sizeof path, "%s/grads.safetensors", outdir);
    ok(mg_gpt_save_hf(g, g->grads, path), "gradients");
    snprintf(path, sizeof path, "%s/params.safetensors", outdir);
    ok(mg_gpt_save_hf(g, g->params, path), "parameters");
    mg_gpt_acts_free(a);
    free((void *)(uintptr_t)b.ids);
    free((void *)(uintptr_t)b.targets);
    free((void *)(uintptr_t)b.loss_mask);
    free((void *)(uintptr_t)b.pos);
    free((void *)(uintptr_t)b.seg);
}

int main(int argc, char **argv)
{
    if (argc < 6) {
        fprintf(stderr, "usage: model_probe ref|fast erf|tanh|default WEIGHTS|init INPUT OUTDIR "
                        "FLAGS...\n");
        return 2;
    }
    const char *inpath = argv[4];
    const char *outdir = argv[5]; /* probe_setup() reuses the argv slot, not the string */
    mg_train_opts o;
    mg_kctx k;
    mg_gpt *g = probe_setup(argc, argv, &o, &k);
    run(g, &k, inpath, outdir);
    mg_gpt_free(g);
    mgk_ctx_free(&k);
    mg_train_opts_free(&o);
    return 0;
}

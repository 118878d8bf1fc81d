/* mg_save.c — Megatron `torch`-format saver: one model_optim_rng.pt per (TP, PP) rank, each
 * {'args': Namespace, 'checkpoint_version': 3.0, 'iteration': N, 'model': OrderedDict}, and
 * the tracker file; the rank files are written in parallel, tensors streamed one at a time:
 * rows that lie back to back in an input file are read from that file straight into the
 * writer (mg_zip_writer_copy), rows made of plain pieces of the mapped inputs are written
 * from them (mg_zip_writer_writev; their pages dropped at the next callback, after the
 * write), the others (dtype conversion) gathered through the reader.
 *
 * Contract (ckpt.h; docs/FORMATS.md §5.1-5.2): args come from the target model (mg_model_to_args);
 * when the source is a Megatron checkpoint its other arguments are kept (tokenizer and
 * vocab_size too, when the target leaves them unknown); transformer_impl names the spec
 * the parameter names follow (the plan's: --transformer-impl or the source's).
 * `_extra_state` entries are None. With the source's moments kept (ck_source.moments) each
 * file also has the 'optimizer' of mg_optim.c, and when they are the distributed
 * optimizer's (ck_source.dist_optim) a distrib_optim.pt beside it (mg_distopt.c).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"
#include "mg/distrib_optim.h"
#include "mg/file.h"
#include "mg/torchfile.h"

static int keep_source(const char *k)
{
    return !strcmp(k, "tokenizer_type") || !strcmp(k, "tokenizer_model") ||
           !strcmp(k, "vocab_size");
}

/* Source args overridden by ours (attribute order: the source's, then our new ones). */
static mg_status merged_args(mg_pk_graph *g, const mg_pk_obj *src, mg_pk_obj *ours,
                             mg_pk_obj **out)
{
    if (!src || src->kind != MG_PK_NAMESPACE || !src->state) return *out = ours, MG_OK;
    mg_pk_obj *ns = mg_pk_container(g, MG_PK_NAMESPACE);
    if (!ns) return MG_ERR_NOMEM;
    const mg_pk_obj *d = src->state;
    for (size_t i = 0; i < d->n; i++) {
        const mg_pk_obj *k = d->items[2 * i];
        if (k->kind != MG_PK_STR) continue;
        mg_pk_obj *mine = mg_pk_get(ours, k->str), *v = d->items[2 * i + 1];
        if (mine && !(mine->kind == MG_PK_NONE && keep_source(k->str))) v = mine;
        MG_FORWARD(mg_pk_set(g, ns, k->str, v));
    }
    const mg_pk_obj *od = ours->state;
    for (size_t i = 0; i < od->n; i++) {
        const mg_pk_obj *k = od->items[2 * i];
        if (!mg_pk_get(ns, k->str)) MG_FORWARD(mg_pk_set(g, ns, k->str, od->items[2 * i + 1]));
    }
    *out = ns;
    return MG_OK;
}

typedef struct {
    const ck_plan *pl;
    const ck_source *s;
    const char *root;
    mg_pk_obj *args;
    ck_progress *prog;
    int64_t iteration;
    int threads;    /* per file (ck_threads_per_file) */
} save_ctx;

static mg_status build_root(mg_pk_graph *g, const save_ctx *x, const ck_file *f, mg_pk_obj **pk,
                            mg_pk_obj **root, float **steps)
{
    mg_pk_obj *r = mg_pk_container(g, MG_PK_DICT), *model = mg_pk_container(g, MG_PK_ODICT);
    if (!r || !model) return MG_ERR_NOMEM;
    MG_FORWARD(mg_pk_set(g, r, "args", x->args));
    MG_FORWARD(mg_pk_set(g, r, "checkpoint_version", mg_pk_float(g, 3.0)));
    MG_FORWARD(mg_pk_set(g, r, "iteration", mg_pk_int(g, x->iteration)));
    for (size_t i = 0; i < f->n; i++) {
        const ck_tensor *t = &f->t[i];
        pk[i] = t->none ? NULL : mg_pk_tensor_new(g, t->dtype, t->ndim, t->shape, NULL);
        mg_pk_obj *v = t->none ? mg_pk_none(g) : pk[i];
        mg_pk_obj *k = mg_pk_str(g, t->name);
        if (!v || !k) return MG_ERR_NOMEM;
        if (!t->moment) MG_FORWARD(mg_pk_set_obj(g, model, k, v));
    }
    MG_FORWARD(mg_pk_set(g, r, "model", model));
    *root = r;
    if (!x->s->moments) return MG_OK;
    static const char *const kept[] = {"opt_param_scheduler",
                                       "num_floating_point_operations_so_far"};
    for (int i = 0; i < 2; i++) {
        mg_pk_obj *v = mg_pk_get(x->s->root0, kept[i]);
        if (v) MG_FORWARD(mg_pk_set(g, r, kept[i], v));
    }
    mg_pk_obj *optim = NULL;
    MG_FORWARD(ck_megatron_optimizer(g, x->s, f, pk, &optim, steps));
    return mg_pk_set(g, r, "optimizer", optim);
}

static mg_status save_file(void *ctx, size_t i)
{
    const save_ctx *x = ctx;
    const ck_file *f = &x->pl->files[i];
    char path[MG_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", x->root, f->path);
    mg_pk_graph *g = mg_pk_graph_create();
    ck_stream fc;
    mg_status st = ck_stream_init(&fc, f, x->s, x->prog, x->threads);
    mg_pk_obj *root = NULL;
    float *steps = NULL;
    if (st == MG_OK) st = g ? build_root(g, x, f, fc.pk, &root, &steps) : MG_ERR_NOMEM;
    if (st == MG_OK) {
        mg_torch_save_opts so;
        ck_stream_opts(&fc, &so, "model_optim_rng");
        st = mg_torch_save(path, root, &so);
    }
    ck_stream_end(&fc);
    mg_pk_graph_free(g);
    free(steps);
    if (st == MG_OK && x->s->moments && x->s->dist_optim) {
        char *slash = strrchr(path, '/');
        snprintf(slash + 1, sizeof path - (size_t)(slash + 1 - path), "%s",
                 MG_DISTRIB_OPTIM_FILE);
        st = ck_megatron_distrib_optim(x->s, x->pl, f, x->args, path);
    }
    return st;
}

mg_status ck_megatron_args(const ck_plan *pl, const ck_source *s, mg_pk_graph *g,
                           mg_pk_obj **args)
{
    mg_pk_obj *ours = NULL;
    MG_FORWARD(mg_model_to_args(&pl->m, g, &ours));
    if (s->vocab_unknown) /* the rows kept are padded ones: V stays unknown */
        MG_FORWARD(mg_pk_set(g, ours, "vocab_size", mg_pk_none(g)));
    mg_pk_obj *impl = mg_pk_str(g, pl->names == MG_NAMES_LOCAL ? "local" : "transformer_engine");
    if (!impl) return MG_ERR_NOMEM;
    /* the spec the names follow, as Megatron's saver records it */
    MG_FORWARD(mg_pk_set(g, ours, "transformer_impl", impl));
    if (pl->dp > 0) /* the DP distrib_optim.pt's buckets are planned for (mg_distopt.c) */
        MG_FORWARD(mg_pk_set(g, ours, "data_parallel_size", mg_pk_int(g, pl->dp)));
    static const char *const progress[] = {"consumed_train_samples", "consumed_valid_samples"};
    for (int i = 0; i < 2 && s->moments && s->args; i++) { /* a training checkpoint */
        mg_pk_obj *v = mg_pk_get(s->args, progress[i]);
        if (v) MG_FORWARD(mg_pk_set(g, ours, progress[i], v));
    }
    return merged_args(g, s->args, ours, args);
}

mg_status ck_write_tracker(const char *root, const ck_opts *o)
{
    mg_megatron_iter it = ck_iteration(o);
    return mg_megatron_tracker_write(root, &it);
}

mg_status ck_write_megatron(const ck_plan *pl, const ck_source *s, const char *root,
                            const ck_opts *o, ck_progress *prog)
{
    mg_pk_graph *g = mg_pk_graph_create();
    if (!g) return MG_ERR_NOMEM;
    save_ctx x = {pl, s, root, NULL, prog, o->iteration >= 0 ? o->iteration : 0,
                  ck_threads_per_file(pl->nfiles, o->workers)};
    mg_status st = ck_megatron_args(pl, s, g, &x.args);
    for (size_t i = 0; i < pl->nfiles && st == MG_OK; i++) {
        char path[MG_PATH_MAX];
        snprintf(path, sizeof path, "%s/%s", root, pl->files[i].path);
        st = ck_mkdirs_for(path);
    }
    if (st == MG_OK) st = ck_parallel(pl->nfiles, o->workers, save_file, &x);
    if (st == MG_OK) st = ck_write_tracker(root, o);
    mg_pk_graph_free(g);
    return st;
}

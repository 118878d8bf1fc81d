/* mg_save.c — Megatron `torch`-format saver: one model_optim_rng.pt per (TP, PP) rank, each
 * {'args': Namespace, 'checkpoint_version': 3.0, 'iteration': N, 'model': OrderedDict}, and
 * the tracker file; the rank files are written in parallel, tensors streamed one at a time:
 * rows that lie back to back in an input file are read from that file straight into the
 * writer (mg_zip_writer_copy), rows made of plain pieces of the mapped inputs are written
 * from them (mg_zip_writer_writev; their pages dropped at the next callback, after the
 * write), the others (dtype conversion) gathered through the reader.
 *
 * Contract (ckpt.h; spec §1, §2.1-2.2): args come from the target model (mg_model_to_args);
 * when the source is a Megatron checkpoint its other arguments are kept (tokenizer and
 * vocab_size too, when the target leaves them unknown); transformer_impl names the spec
 * the parameter names follow (the plan's: --transformer-impl or the source's).
 * `_extra_state` entries are None.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"
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

typedef struct {
    const ck_file *f;
    mg_pk_obj **pk; /* per planned tensor (NULL for None) */
    size_t cur;     /* index of the tensor being written */
    ck_reader rd;
    ck_progress *prog;
    const ck_source *s;
    const ck_tensor *done_t; /* a tensor whose last byte the last direct piece was, or NULL:
                                released at the next call, once the writer has read it */
    struct iovec *iov;       /* CK_IOV_MAX pieces handed to the writer by gather */
    int niov;                /* of them, still to release at the next call */
} fill_ctx;

/* The planned tensor behind t (they are asked for in order: usually the current one). */
static const ck_tensor *current(fill_ctx *c, const mg_pk_tensor *t)
{
    if (!c->pk[c->cur] || c->pk[c->cur]->tensor != t) {
        size_t i = c->cur, k = 0;
        for (; k < c->f->n; k++, i = (i + 1) % c->f->n)
            if (c->pk[i] && c->pk[i]->tensor == t) break;
        MG_ASSERT(k < c->f->n);
        c->cur = i;
    }
    return &c->f->t[c->cur];
}

static void release_done(fill_ctx *c)
{
    ck_iov_release(c->iov, c->niov);
    c->niov = 0;
    if (c->done_t) ck_tensor_release(c->s, c->done_t);
    c->done_t = NULL;
}

static mg_status fill(void *ctx, const mg_pk_tensor *t, uint64_t off, void *out, size_t len)
{
    fill_ctx *c = ctx;
    release_done(c);
    const ck_tensor *ct = current(c, t);
    MG_FORWARD(ck_reader_read(&c->rd, ct, off, out, len));
    if (off + len == ck_tensor_bytes(ct)) ck_progress_add(c->prog, 1, off + len);
    return MG_OK;
}

#define DIRECT_MIN ((uint64_t)1 << 20) /* smaller contiguous pieces go through fill */

/* Whole rows from off on that lie back to back in an input file, in their own dtype. */
static size_t direct(void *ctx, const mg_pk_tensor *t, uint64_t off, size_t max, int *fd,
                     uint64_t *file_off)
{
    fill_ctx *c = ctx;
    release_done(c);
    const ck_tensor *ct = current(c, t);
    uint64_t rowb = (uint64_t)ct->gcols * mg_tdtype_size(ct->dtype);
    if (!c->s->file_of || rowb == 0 || off % rowb) return 0;
    const uint8_t *p = NULL;
    int64_t k = ck_tensor_direct_rows(c->s, ct, (int64_t)(off / rowb), (int64_t)(max / rowb), &p);
    uint64_t len = (uint64_t)k * rowb;
    if (len < DIRECT_MIN || !c->s->file_of(c->s, p, fd, file_off)) return 0;
    if (off + len == ck_tensor_bytes(ct)) {
        c->done_t = ct;
        ck_progress_add(c->prog, 1, off + len);
    }
    return (size_t)len;
}

/* Whole rows from off on (at most max bytes) as pieces of the mapped inputs (c->iov). */
static size_t gather(void *ctx, const mg_pk_tensor *t, uint64_t off, size_t max,
                     const struct iovec **iov, int *niov)
{
    fill_ctx *c = ctx;
    release_done(c);
    const ck_tensor *ct = current(c, t);
    uint64_t rowb = (uint64_t)ct->gcols * mg_tdtype_size(ct->dtype);
    if (rowb == 0 || off % rowb) return 0;
    int64_t k = ck_tensor_iov(c->s, ct, (int64_t)(off / rowb), (int64_t)(max / rowb), max,
                              c->iov, CK_IOV_MAX, &c->niov);
    uint64_t len = (uint64_t)k * rowb;
    *iov = c->iov;
    *niov = c->niov;
    if (len > 0 && off + len == ck_tensor_bytes(ct)) {
        c->done_t = ct;
        ck_progress_add(c->prog, 1, off + len);
    }
    return (size_t)len;
}

static mg_status build_root(mg_pk_graph *g, const save_ctx *x, const ck_file *f, mg_pk_obj **pk,
                            mg_pk_obj **root)
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
        MG_FORWARD(mg_pk_set_obj(g, model, k, v));
    }
    MG_FORWARD(mg_pk_set(g, r, "model", model));
    *root = r;
    return MG_OK;
}

static mg_status save_file(void *ctx, size_t i)
{
    const save_ctx *x = ctx;
    const ck_file *f = &x->pl->files[i];
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", x->root, f->path);
    mg_pk_graph *g = mg_pk_graph_create();
    fill_ctx fc = {.f = f, .prog = x->prog, .rd = {.s = x->s, .threads = x->threads}, .s = x->s};
    fc.pk = mg_calloc(f->n ? f->n : 1, sizeof(*fc.pk));
    fc.iov = mg_malloc(CK_IOV_MAX * sizeof(*fc.iov));
    mg_pk_obj *root = NULL;
    mg_status st = g && fc.pk && fc.iov ? build_root(g, x, f, fc.pk, &root) : MG_ERR_NOMEM;
    if (st == MG_OK) {
        mg_torch_save_opts so = {.archive_name = "model_optim_rng", .fill = fill,
                                 .direct = direct, .gather = gather, .ctx = &fc};
        st = mg_torch_save(path, root, &so);
        release_done(&fc);
    }
    ck_reader_free(&fc.rd);
    free(fc.iov);
    free(fc.pk);
    mg_pk_graph_free(g);
    return st;
}

mg_status ck_write_megatron(const ck_plan *pl, const ck_source *s, const char *root,
                            const ck_opts *o, ck_progress *prog)
{
    mg_pk_graph *g = mg_pk_graph_create();
    if (!g) return MG_ERR_NOMEM;
    save_ctx x = {pl, s, root, NULL, prog, o->iteration >= 0 ? o->iteration : 0,
                  ck_threads_per_file(pl->nfiles, o->workers)};
    mg_pk_obj *ours = NULL;
    mg_status st = mg_model_to_args(&pl->m, g, &ours);
    if (st == MG_OK && s->vocab_unknown) /* the rows kept are padded ones: V stays unknown */
        st = mg_pk_set(g, ours, "vocab_size", mg_pk_none(g));
    mg_pk_obj *impl = mg_pk_str(g, pl->names == MG_NAMES_LOCAL ? "local" : "transformer_engine");
    if (st == MG_OK) /* the spec the names follow, as Megatron's saver records it */
        st = impl ? mg_pk_set(g, ours, "transformer_impl", impl) : MG_ERR_NOMEM;
    if (st == MG_OK) st = merged_args(g, s->args, ours, &x.args);
    for (size_t i = 0; i < pl->nfiles && st == MG_OK; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", root, pl->files[i].path);
        st = ck_mkdirs_for(path);
    }
    if (st == MG_OK) st = ck_parallel(pl->nfiles, o->workers, save_file, &x);
    if (st == MG_OK) {
        char path[4096], text[32];
        snprintf(path, sizeof path, "%s/latest_checkpointed_iteration.txt", root);
        if (o->iteration >= 0) snprintf(text, sizeof text, "%lld", (long long)o->iteration);
        else snprintf(text, sizeof text, "release");
        st = ck_write_small(path, text, strlen(text));
    }
    mg_pk_graph_free(g);
    return st;
}

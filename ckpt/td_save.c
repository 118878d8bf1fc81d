/* td_save.c — Megatron `torch_dist` saver (--saver megatron --ckpt-format torch_dist): the
 * plan (every parameter's global tensor under its stacked TE-named key, one chunk per layer
 * or per tensor, spread over a few data files by size) and the writer (the data files in
 * parallel, each chunk a torch.save archive streamed from the sources; then .metadata,
 * common.pt, metadata.json, the tracker).
 *
 * Contract (ckpt.h; docs/FORMATS.md §5.10): keys and global shapes are those megatron-core's GPTModel
 * asks for (homogeneous layers: stacked `decoder.layers.X` with the layer axis first; the
 * layer norms under linear_qkv/linear_fc1 names whatever the spec; vocabulary tensors padded
 * with zero rows), plus the `_extra_state/shard_L_N` byte objects of the four linears of
 * every layer, each torch.save([None]) as megatron-core writes them for the local spec.
 * Items start at 64-byte offsets of their file. common.pt holds args (ck_megatron_args),
 * checkpoint_version 3.0 and the iteration, which every Megatron version reads; no RNG,
 * scheduler or optimizer state is written. All of it goes into the output's temporary
 * folder (main.c), so a failed run leaves nothing.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ckpt.h"
#include "mg/dcp.h"
#include "mg/file.h"
#include "mg/mcore_dist.h"

#define MAX_FILES 8

static size_t file_count(const ck_opts *o, size_t nparams)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    size_t n = o->workers > 0 ? (size_t)o->workers : cpus > 0 ? (size_t)cpus : 1;
    if (n > MAX_FILES) n = MAX_FILES;
    return n > nparams ? (nparams ? nparams : 1) : n;
}

static int64_t item_index(const mg_dcp_meta *m, const char *key)
{
    for (size_t i = m->nitems; i-- > 0;) /* a stacked key was added for the layer before */
        if (!strcmp(m->items[i].key, key)) return (int64_t)i;
    return -1;
}

/* The item of key (created with the global shape when new). */
static mg_status item_for(mg_dcp_meta *m, const char *key, mg_tdtype dt, int nd,
                          const int64_t *size, size_t *index)
{
    int64_t i = item_index(m, key);
    if (i < 0) {
        if (!mg_dcp_add_tensor(m, key, dt, nd, size)) return MG_ERR_NOMEM;
        i = (int64_t)m->nitems - 1;
    }
    *index = (size_t)i;
    return MG_OK;
}

static ck_file *lightest(ck_plan *pl)
{
    ck_file *f = &pl->files[0];
    for (size_t i = 1; i < pl->nfiles; i++)
        if (pl->files[i].bytes < f->bytes) f = &pl->files[i];
    return f;
}

/* Parameter pi as one chunk: its layer of the stacked key, or the whole tensor. */
static mg_status plan_param(ck_plan *pl, mg_dcp_meta *m, const ck_source *s, size_t pi)
{
    const mg_param *p = &s->params[pi];
    int stacked = p->layer >= 0, nd = 0;
    int64_t rows = p->spec->split == MG_SPLIT_VOCAB ? pl->m.padded_vocab_size : p->rows;
    int64_t size[3], off[3] = {0, 0, 0}, len[3];
    char key[512];
    mg_mcore_dist_key(p, MG_NAMES_TE, stacked, key, sizeof key);
    if (stacked) size[nd++] = pl->m.num_layers;
    size[nd++] = rows;
    if (p->spec->ndim == 2) size[nd++] = p->cols;
    memcpy(len, size, sizeof len);
    if (stacked) off[0] = p->layer, len[0] = 1;
    size_t item;
    MG_FORWARD(item_for(m, key, pl->m.dtype, nd, size, &item));
    if (!mg_dcp_add_chunk(&m->items[item], off, len)) return MG_ERR_NOMEM;
    ck_file *f = lightest(pl);
    ck_tensor *t = ck_add_tensor(f, key, pl->m.dtype, nd, rows, p->cols);
    if (!t) return MG_ERR_NOMEM;
    t->item = item;
    t->chunk = m->items[item].nchunks - 1;
    m->items[item].chunks[t->chunk].file = (uint32_t)(f - pl->files);
    f->bytes += ck_tensor_bytes(t); /* balances the files (ck_sum_plan recounts) */
    MG_FORWARD(ck_add_run(t, 0, p->rows, pi, 0, 0, p->cols));
    return ck_add_run(t, p->rows, rows - p->rows, CK_ZERO, 0, 0, p->cols);
}

/* The `_extra_state` byte objects, all in the first data file. */
static mg_status plan_extra_states(const ck_plan *pl, mg_dcp_meta *m)
{
    char key[512];
    for (size_t i = 0; mg_mcore_dist_extra_state(pl->m.num_layers, i, key, sizeof key); i++) {
        mg_dcp_item *it = mg_dcp_add_bytes(m, key);
        mg_dcp_chunk *c = it ? mg_dcp_add_chunk(it, NULL, NULL) : NULL;
        if (!c) return MG_ERR_NOMEM;
        c->file = 0;
    }
    return MG_OK;
}

static mg_status plan_files(ck_plan *pl, mg_dcp_meta *m, size_t n)
{
    pl->nfiles = n;
    pl->files = mg_calloc(n, sizeof(ck_file));
    if (!pl->files) return MG_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) {
        char name[64], path[128];
        snprintf(name, sizeof name, "__0_%zu.distcp", i);
        snprintf(path, sizeof path, "%s/%s", pl->iterdir, name);
        if (!(pl->files[i].path = ck_dupstr(path)) || mg_dcp_file_index(m, name) != (int64_t)i)
            return MG_ERR_NOMEM;
    }
    return MG_OK;
}

static void free_meta(void *m)
{
    mg_dcp_meta_free(m);
}

mg_status ck_plan_torch_dist(ck_plan *pl, const ck_source *s, const ck_opts *o)
{
    memset(pl, 0, sizeof(*pl));
    MG_FORWARD(ck_plan_target(&pl->m, s, o));
    pl->names = ck_target_names(s, o); /* recorded in args; the keys are TE names whatever the spec */
    mg_megatron_iter it = ck_iteration(o);
    mg_megatron_iter_name(&it, pl->iterdir);
    mg_dcp_meta *m = mg_dcp_meta_create();
    if (!m) return MG_ERR_NOMEM;
    pl->fmt = m;
    pl->fmt_free = free_meta;
    MG_FORWARD(plan_files(pl, m, file_count(o, s->nparams)));
    for (size_t i = 0; i < s->nparams; i++) MG_FORWARD(plan_param(pl, m, s, i));
    MG_FORWARD(plan_extra_states(pl, m));
    ck_sum_plan(pl);
    return MG_OK;
}

/* ---- writing ---- */

static mg_status write_chunks(mg_dcp_meta *m, const ck_file *f, ck_stream *st, mg_out *out,
                              mg_pk_graph *g)
{
    for (size_t i = 0; i < f->n; i++) {
        const mg_dcp_item *it = &m->items[f->t[i].item];
        st->pk[i] = mg_pk_tensor_new(g, f->t[i].dtype, it->ndim, it->chunks[f->t[i].chunk].len, NULL);
        if (!st->pk[i]) return MG_ERR_NOMEM;
    }
    mg_torch_save_opts so;
    ck_stream_opts(st, &so, "archive");
    for (size_t i = 0; i < f->n; i++)
        MG_FORWARD(mg_dcp_write_item(out, st->pk[i], &so, &m->items[f->t[i].item].chunks[f->t[i].chunk]));
    return MG_OK;
}

static mg_status save_file(void *ctx, size_t i)
{
    const ck_write_ctx *x = ctx;
    const ck_file *f = &x->pl->files[i];
    mg_dcp_meta *m = x->pl->fmt;
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", x->root, f->path);
    mg_pk_graph *g = mg_pk_graph_create();
    mg_out *out = NULL;
    ck_stream st;
    mg_status rc = ck_stream_init(&st, f, x->s, x->prog, x->threads);
    if (rc == MG_OK) rc = g ? mg_out_create(&out, path) : MG_ERR_NOMEM;
    if (rc == MG_OK) rc = mg_mcore_dist_write_extra_states(m, (uint32_t)i, out);
    if (rc == MG_OK) rc = write_chunks(m, f, &st, out, g);
    ck_stream_end(&st);
    if (rc == MG_OK) rc = mg_out_commit(out);
    mg_out_free(out);
    mg_pk_graph_free(g);
    return rc;
}

/* common.pt: {'args', 'checkpoint_version', 'iteration'}. */
static mg_status write_common(const ck_plan *pl, const ck_source *s, const ck_opts *o,
                              const char *dir)
{
    mg_pk_graph *g = mg_pk_graph_create();
    if (!g) return MG_ERR_NOMEM;
    mg_pk_obj *args = NULL, *root = mg_pk_container(g, MG_PK_DICT);
    mg_status st = root ? ck_megatron_args(pl, s, g, &args) : MG_ERR_NOMEM;
    if (st == MG_OK) st = mg_pk_set(g, root, "args", args);
    if (st == MG_OK) st = mg_pk_set(g, root, "checkpoint_version", mg_pk_float(g, 3.0));
    if (st == MG_OK) st = mg_pk_set(g, root, "iteration", mg_pk_int(g, o->iteration >= 0 ? o->iteration : 0));
    char path[4200];
    snprintf(path, sizeof path, "%s/common.pt", dir);
    if (st == MG_OK) st = mg_torch_save(path, root, NULL);
    mg_pk_graph_free(g);
    return st;
}

mg_status ck_write_torch_dist(const ck_plan *pl, const ck_source *s, const char *root,
                              const ck_opts *o, ck_progress *prog)
{
    char dir[4096], probe[4200];
    snprintf(dir, sizeof dir, "%s/%s", root, pl->iterdir);
    snprintf(probe, sizeof probe, "%s/x", dir);
    MG_FORWARD(ck_mkdirs_for(probe));
    ck_write_ctx x = {pl, s, root, prog, ck_threads_per_file(pl->nfiles, o->workers)};
    MG_FORWARD(ck_parallel(pl->nfiles, o->workers, save_file, &x));
    snprintf(probe, sizeof probe, "%s/.metadata", dir);
    MG_FORWARD(mg_dcp_write_meta(pl->fmt, probe));
    MG_FORWARD(write_common(pl, s, o, dir));
    snprintf(probe, sizeof probe, "%s/metadata.json", dir);
    MG_FORWARD(ck_write_small(probe, mg_mcore_dist_json, strlen(mg_mcore_dist_json)));
    return ck_write_tracker(root, o);
}

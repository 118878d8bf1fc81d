/* plan_hf.c — the Hugging Face output plan: every HF tensor as runs of canonical rows (q/k/v
 * rows picked out of the interleaved QKV, gate/up halves of fc1, GPT-2 Conv1D tensors as
 * transposes, the fused c_attn as [Q | K | V] columns), split into safetensors shards.
 *
 * Contract (ckpt.h): vocabulary tensors hold exactly the true vocabulary; a tied output layer
 * is not written; shards hold at most --max-shard-size bytes (at least one tensor each).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"
#include "mg/grow.h"
#include "mg/hf_map.h"
#include "mg/safetensors.h"


/* The rows of HF part `which` (0 q, 1 k, 2 v), head by head, at rows out0.. of t. */
static mg_status hf_qkv_runs(ck_tensor *t, const ck_plan *pl, size_t pi, int which,
                             int64_t out0, int64_t cols)
{
    const mg_model_desc *m = &pl->m;
    int64_t d = m->kv_channels;
    int64_t heads = which == 0 ? m->num_attention_heads : m->num_query_groups;
    for (int64_t h = 0; h < heads; h++)
        MG_FORWARD(ck_add_run(t, out0 + h * d, d, pi, mg_hf_qkv_row(m, which, h * d), 0, cols));
    return MG_OK;
}

static mg_status plan_hf_param(ck_file *f, const ck_plan *pl, const ck_source *s, size_t pi)
{
    const mg_param *p = &s->params[pi];
    char names[3][256];
    int n = mg_schema_hf_names(p, &pl->m, names), nd = p->spec->ndim;
    int64_t nhd = pl->m.num_attention_heads * pl->m.kv_channels;
    int64_t ngd = pl->m.num_query_groups * pl->m.kv_channels;
    mg_tdtype dt = pl->m.dtype;
    ck_tensor *t;
    switch (p->spec->hf_xform) {
    case MG_HF_COPY:
    case MG_HF_TRANSPOSE:
        if (!(t = ck_add_tensor(f, names[0], dt, nd, p->rows, p->cols))) return MG_ERR_NOMEM;
        if (p->spec->hf_xform == MG_HF_TRANSPOSE) {
            t->transpose = 1;
            t->shape[0] = p->cols;
            t->shape[1] = p->rows;
        }
        return ck_add_run(t, 0, p->rows, pi, 0, 0, p->cols);
    case MG_HF_QKV:
        for (int k = 0; k < n; k++) {
            if (!(t = ck_add_tensor(f, names[k], dt, nd, k ? ngd : nhd, p->cols))) return MG_ERR_NOMEM;
            MG_FORWARD(hf_qkv_runs(t, pl, pi, k, 0, p->cols));
        }
        return MG_OK;
    case MG_HF_C_ATTN:
        if (!(t = ck_add_tensor(f, names[0], dt, nd, p->rows, p->cols))) return MG_ERR_NOMEM;
        if (nd == 2) {
            t->transpose = 1;
            t->shape[0] = p->cols;
            t->shape[1] = p->rows;
        }
        MG_FORWARD(hf_qkv_runs(t, pl, pi, 0, 0, p->cols));
        MG_FORWARD(hf_qkv_runs(t, pl, pi, 1, nhd, p->cols));
        return hf_qkv_runs(t, pl, pi, 2, nhd + ngd, p->cols);
    case MG_HF_GATE_UP:
        for (int k = 0; k < 2; k++) {
            if (!(t = ck_add_tensor(f, names[k], dt, nd, p->rows / 2, p->cols))) return MG_ERR_NOMEM;
            MG_FORWARD(ck_add_run(t, 0, p->rows / 2, pi, k * (p->rows / 2), 0, p->cols));
        }
        return MG_OK;
    }
    return MG_OK;
}

/* Splits the single planned list into shards of at most max bytes (at least one tensor). */
static mg_status hf_shard(ck_plan *pl, ck_file *all, uint64_t max)
{
    size_t nf = 0;
    uint64_t cur = 0;
    ck_file *files = mg_calloc(all->n ? all->n : 1, sizeof(ck_file));
    if (!files) return MG_ERR_NOMEM;
    for (size_t i = 0; i < all->n; i++) {
        uint64_t b = ck_tensor_bytes(&all->t[i]);
        if (nf == 0 || (max > 0 && cur + b > max && files[nf - 1].n > 0)) nf++, cur = 0;
        ck_file *f = &files[nf - 1];
        MG_FORWARD(MG_GROW(f->t, f->cap, f->n + 1, 16)); /* files leak only on failure */
        f->t[f->n++] = all->t[i];
        cur += b;
    }
    free(all->t);
    pl->files = files;
    pl->nfiles = nf;
    for (size_t i = 0; i < nf; i++) {
        char name[64];
        if (nf == 1) snprintf(name, sizeof name, "model.safetensors");
        else MG_FORWARD(mg_st_shard_name(name, sizeof name, (int)i + 1, (int)nf));
        if (!(files[i].path = ck_dupstr(name))) return MG_ERR_NOMEM;
    }
    return MG_OK;
}

mg_status ck_plan_hf(ck_plan *pl, const ck_source *s, const ck_opts *o)
{
    memset(pl, 0, sizeof(*pl));
    MG_RETURN_IF(s->vocab_unknown, MG_ERR_ARG,
                 "the true vocabulary size is unknown (the checkpoint's args.vocab_size is "
                 "None): pass --true-vocab-size");
    ck_opts one = *o;
    one.tp = one.pp = 1;
    one.pp_first = one.pp_last = 0;
    MG_FORWARD(ck_plan_target(&pl->m, s, &one));
    ck_file all = {0};
    mg_status st = MG_OK;
    for (size_t i = 0; i < s->nparams && st == MG_OK; i++) st = plan_hf_param(&all, pl, s, i);
    if (st == MG_OK) st = hf_shard(pl, &all, o->max_shard);
    if (st != MG_OK) return st;
    ck_sum_plan(pl);
    return MG_OK;
}


/* mg_moments.c — the Adam moments of a Megatron `torch`-format source (mg_load_internal.h):
 * each rank file's moments bound like its parameters' shards, at CK_MOMENT(s, pi, 1 or 2).
 *
 * Contract (ckpt.h, docs/FORMATS.md §5.2): torch's optimizer state dict {'state': {i: ...},
 * 'param_groups'} is indexed group after group (each group's decay class, 'params' checked
 * to number the rank's parameters 0, 1, ...) in megatron-core's order of the stage's
 * parameters (mg/megatron_param_order.h), every moment checked like its parameter's shard
 * and every step count equal; a distrib_optim.pt beside the rank file instead gives the
 * moments at megatron-core's buffer offsets (mg/dist_buffer.h) of the same parameters, its
 * fp32 master weights equal to the model's, the step count from the param groups. The last
 * stage's tied embedding copy has moments that are the embedding's (not bound). A --bf16/
 * --fp16 run's state (Float16OptimizerWithFloat16Params: torch's dict under 'optimizer')
 * also gives each parameter's fp32 master from fp32_from_fp16_params at CK_MOMENT(s, pi, 3),
 * checked like a moment. Legacy
 * names are refused. Errors name the file and the tensor.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/dist_buffer.h"
#include "mg/distrib_optim.h"
#include "mg/megatron_param_order.h"
#include "mg_load_internal.h"

/* One rank file's parameters in schema order, named in the source's naming: the schema
 * parameters of its stage, then the last stage's tied embedding copy (index nparams), as
 * mg-train's model lists them; the optimizer state follows their Megatron order. */
typedef struct {
    const ck_source *s;
    size_t *pi;
    char (*name)[160];
    size_t n;
} stage_list;

static const char *stage_name(const void *ctx, size_t i)
{
    return ((const stage_list *)ctx)->name[i];
}

static int stage_decay(const void *ctx, size_t i)
{
    const stage_list *l = ctx;
    return l->pi[i] == l->s->nparams || l->s->params[l->pi[i]].spec->ndim == 2;
}

static mg_status stage_params(const ck_source *s, int64_t stage, stage_list *l)
{
    l->s = s;
    l->n = 0;
    l->pi = mg_calloc(s->nparams + 1, sizeof *l->pi);
    l->name = mg_calloc(s->nparams + 1, sizeof *l->name);
    if (!l->pi || !l->name) return MG_ERR_NOMEM;
    for (size_t i = 0; i < s->nparams; i++) {
        int64_t q = 0, local = 0;
        MG_FORWARD(ck_mg_stage_of(s, &s->params[i], &q, &local));
        if (q != stage) continue;
        mg_schema_mcore_name(&s->params[i], s->names, local, l->name[l->n], sizeof l->name[0]);
        l->pi[l->n++] = i;
    }
    if (stage == s->pp - 1 && s->pp > 1 && s->m.tied_embeddings) {
        snprintf(l->name[l->n], sizeof l->name[0], "output_layer.weight");
        l->pi[l->n++] = s->nparams;
    }
    return MG_OK;
}

/* The moments of state entry e (index i, of parameter pi named name) on TP rank r, and its
 * fp32 master (a --bf16/--fp16 run's; NULL otherwise). */
static mg_status bind_entry(ck_source *s, mg_impl *h, const rank_file *rf, const mg_pk_obj *e,
                            const mg_pk_obj *master, int64_t i, size_t pi, const char *name,
                            int64_t r)
{
    static const char *const keys[] = {"exp_avg", "exp_avg_sq"};
    MG_RETURN_IF(!e || (e->kind != MG_PK_DICT && e->kind != MG_PK_ODICT), MG_ERR_FORMAT,
                 "%s: optimizer state of %s (index %lld) is missing", rf->rel, name, (long long)i);
    double step = mg_pk_number(mg_pk_get(e, "step"));
    MG_RETURN_IF(step < 0 || (s->optim_step >= 0 && step != s->optim_step), MG_ERR_FORMAT,
                 "%s: optimizer state of %s (index %lld): step %g, expected %g", rf->rel, name,
                 (long long)i, step, s->optim_step);
    s->optim_step = step;
    if (pi == s->nparams) return MG_OK; /* the tied copy's moments: the embedding's */
    for (int k = 0; k < 2; k++) {
        char what[256];
        snprintf(what, sizeof what, "optimizer.state.%lld.%s (%s of %s)", (long long)i, keys[k],
                 keys[k], name);
        const mg_pk_obj *obj = mg_pk_get(e, keys[k]);
        MG_RETURN_IF(!obj, MG_ERR_FORMAT, "%s: %s is missing", rf->rel, what);
        entry x = {what, obj, 1};
        MG_FORWARD(ck_mg_check_shard(s, h, &s->params[pi], rf, &x,
                               &h->sh[CK_MOMENT(s, pi, k + 1) * (size_t)s->tp + (size_t)r]));
    }
    if (!master) return MG_OK;
    char what[256];
    snprintf(what, sizeof what, "optimizer.fp32_from_fp16_params (index %lld: master of %s)",
             (long long)i, name);
    entry x = {what, master, 1};
    return ck_mg_check_shard(s, h, &s->params[pi], rf, &x,
                             &h->sh[CK_MOMENT(s, pi, 3) * (size_t)s->tp + (size_t)r]);
}

/* Master i of fp32_from_fp16_params (one list per param group, each as long as its group's
 * 'params'), or NULL with the error set. */
static const mg_pk_obj *master_at(const rank_file *rf, const mg_pk_obj *masters,
                                  const mg_pk_obj *groups, size_t i)
{
    size_t at = i;
    int ok = masters && masters->kind == MG_PK_LIST && masters->n == groups->n;
    for (size_t g = 0; ok && g < masters->n; g++) {
        const mg_pk_obj *m = masters->items[g];
        ok = m->kind == MG_PK_LIST && m->n == mg_pk_len(mg_pk_get(groups->items[g], "params"));
        if (ok && at < m->n) return m->items[at];
        if (ok) at -= m->n;
    }
    mg_error_set(MG_ERR_FORMAT, "%s: optimizer fp32_from_fp16_params is not one list per param "
                 "group as long as the group's params (master %zu)", rf->rel, i);
    return NULL;
}

/* The param groups' 'params' must number the n parameters 0, 1, ... group after group, as
 * torch's state_dict does (the order ck_groups_order assumes). */
static mg_status same_group_params(const rank_file *rf, const mg_pk_obj *groups, size_t n)
{
    int64_t k = 0;
    for (size_t i = 0; i < groups->n; i++) {
        const mg_pk_obj *ps = mg_pk_get(groups->items[i], "params");
        MG_RETURN_IF(!ps || ps->kind != MG_PK_LIST, MG_ERR_FORMAT, "%s: optimizer param group "
                     "%zu has no 'params' list", rf->rel, i);
        for (size_t j = 0; j < ps->n; j++, k++)
            MG_RETURN_IF(ps->items[j]->kind != MG_PK_INT || ps->items[j]->i != k, MG_ERR_FORMAT,
                         "%s: optimizer param group %zu: params[%zu] is not %lld (torch numbers "
                         "the parameters group after group)", rf->rel, i, j, (long long)k);
    }
    MG_RETURN_IF((size_t)k != n, MG_ERR_FORMAT, "%s: the optimizer param groups list %lld "
                 "parameters, the stage has %zu", rf->rel, (long long)k, n);
    return MG_OK;
}

static mg_status bind_rank_moments(ck_source *s, mg_impl *h, int64_t stage, int64_t r,
                                   const stage_list *l, size_t *order)
{
    const rank_file *rf = &h->files[stage * s->tp + r];
    const mg_pk_obj *opt = mg_pk_get(mg_torch_root(rf->f), "optimizer");
    const mg_pk_obj *masters = s->masters ? mg_pk_get(opt, "fp32_from_fp16_params") : NULL;
    const mg_pk_obj *torch = s->masters ? mg_pk_get(opt, "optimizer") : opt;
    const mg_pk_obj *state = mg_pk_get(torch, "state"), *groups = mg_pk_get(torch, "param_groups");
    mg_param_list pl = {stage_name, stage_decay, l, l->n};
    MG_FORWARD(ck_groups_order(groups, &pl, order, rf->rel));
    MG_FORWARD(same_group_params(rf, groups, l->n));
    MG_RETURN_IF(mg_pk_len(state) != l->n, MG_ERR_FORMAT, "%s: optimizer state for %zu "
                 "tensors, the stage has %zu parameters", rf->rel, mg_pk_len(state), l->n);
    for (size_t i = 0; i < l->n; i++) {
        const mg_pk_obj *master = masters ? master_at(rf, masters, groups, i) : NULL;
        if (masters && !master) return MG_ERR_FORMAT;
        MG_FORWARD(bind_entry(s, h, rf, mg_pk_get_index(state, (int64_t)i), master, (int64_t)i,
                              l->pi[order[i]], l->name[order[i]], r));
    }
    return MG_OK;
}

/* The step count of the distributed optimizer's param groups (all equal). */
static mg_status dist_step(ck_source *s, const rank_file *rf)
{
    const mg_pk_obj *opt = mg_pk_get(mg_torch_root(rf->f), "optimizer");
    const mg_pk_obj *groups = mg_pk_get(mg_pk_get(opt, "optimizer"), "param_groups");
    for (size_t i = 0; groups && groups->kind == MG_PK_LIST && i < groups->n; i++) {
        double step = mg_pk_number(mg_pk_get(groups->items[i], "step"));
        MG_RETURN_IF(step < 0 || (s->optim_step >= 0 && step != s->optim_step), MG_ERR_FORMAT,
                     "%s: optimizer param group %zu: step %g, expected %g", rf->rel, i, step,
                     s->optim_step);
        s->optim_step = step;
    }
    MG_RETURN_IF(s->optim_step < 0, MG_ERR_FORMAT, "%s: optimizer step count missing", rf->rel);
    return MG_OK;
}

/* Parameter j of l in distrib_optim.pt w at coalesced offset at: its fp32 master weights
 * must be the model's (fp32 training; a master copy that differs would be lost), its
 * moments become the source's. */
static mg_status bind_dist_param(ck_source *s, mg_impl *h, const rank_file *rf,
                                 const stage_list *l, size_t j, int64_t r,
                                 const mg_distrib_optim_world *w, int64_t at)
{
    size_t pi = l->pi[j];
    if (pi == s->nparams) return MG_OK; /* the tied copy: the embedding's moments */
    const shard *x = &h->sh[pi * (size_t)s->tp + (size_t)r];
    int64_t shape[2];
    int nd;
    mg_schema_shard_shape(&s->params[pi], &s->m, s->tp, h->vp_s, shape, &nd);
    size_t bytes = (size_t)(shape[0] * (nd == 2 ? shape[1] : 1)) * 4;
    MG_RETURN_IF(x->dtype != MG_TD_F32, MG_ERR_UNSUPPORTED, "not supported yet: %s: the "
                 "distributed optimizer's fp32 master weights of a %s model", rf->rel,
                 mg_tdtype_name(x->dtype));
    MG_RETURN_IF(memcmp(w->t[0] + at * 4, x->p, bytes) != 0, MG_ERR_FORMAT, "%s: "
                 "distrib_optim.pt: the master weights of %s differ from the model's", rf->rel,
                 l->name[j]);
    for (int k = 1; k <= 2; k++)
        h->sh[CK_MOMENT(s, pi, k) * (size_t)s->tp + (size_t)r] =
            (shard){w->t[k] + at * 4, MG_TD_F32, x->rowlen};
    return MG_OK;
}

mg_status ck_args_bucket_size(const mg_pk_obj *args, int64_t stage, int64_t numel,
                              const char *where, int64_t *out)
{
    const mg_pk_obj *ov = args ? mg_pk_get(args, "overlap_grad_reduce") : NULL;
    const mg_pk_obj *bs = args ? mg_pk_get(args, "ddp_bucket_size") : NULL;
    const mg_pk_obj *dp = args ? mg_pk_get(args, "data_parallel_size") : NULL;
    int overlap = ov && ov->kind == MG_PK_BOOL && ov->i;
    int64_t size = bs && bs->kind == MG_PK_INT ? bs->i : 0;
    int known = dp && dp->kind == MG_PK_INT && dp->i >= 1;
    /* below 40,000,000 elements every default bucket size gives one bucket */
    MG_RETURN_IF(overlap && size <= 0 && stage == 0 && !known && numel >= 40000000,
                 MG_ERR_UNSUPPORTED, "not supported yet: %s: overlap_grad_reduce without "
                 "ddp_bucket_size and without data_parallel_size in the args: the DDP bucket "
                 "size (max(40000000, 1000000 x DP)) of its %lld elements cannot be "
                 "determined", where, (long long)numel);
    *out = mg_ddp_bucket_size_of(overlap, size, known ? dp->i : 1, stage);
    return MG_OK;
}

/* The moments of rank (stage, r) from its distrib_optim.pt: megatron-core's buffer layout
 * of the stage's parameters in the writing run's DDP buckets (mg/dist_buffer.h; coalesced
 * offsets do not depend on DP). */
static mg_status bind_rank_dist(ck_source *s, mg_impl *h, int64_t stage, int64_t r,
                                const stage_list *l, size_t *order)
{
    const rank_file *rf = &h->files[stage * s->tp + r];
    mg_distrib_optim_world w;
    MG_FORWARD(mg_distrib_optim_read(rf->rel, mg_torch_root(rf->dopt), &w));
    MG_FORWARD(dist_step(s, rf));
    mg_param_list pl = {stage_name, stage_decay, l, l->n};
    mg_megatron_param_order(&pl, -1, order, 0);
    int64_t *numel = mg_calloc(l->n + 1, sizeof *numel);
    unsigned char *own = mg_calloc(l->n + 1, 1);
    mg_dist_layout lay = {0};
    mg_status st = numel && own ? MG_OK : MG_ERR_NOMEM;
    int shared = s->m.tied_embeddings && s->pp > 1;
    for (size_t j = 0; st == MG_OK && j < l->n; j++) {
        size_t pi = l->pi[j] == s->nparams ? 0 : l->pi[j];
        int64_t shape[2];
        int nd;
        mg_schema_shard_shape(&s->params[pi], &s->m, s->tp, h->vp_s, shape, &nd);
        numel[j] = shape[0] * (nd == 2 ? shape[1] : 1);
        own[j] = (unsigned char)(shared && (l->pi[j] == s->nparams || (stage == 0 && pi == 0)));
    }
    const mg_pk_obj *args = mg_pk_get(mg_torch_root(rf->f), "args");
    mg_bucket_cfg cfg = {1, 0, 1};
    int64_t total = 0;
    for (size_t j = 0; st == MG_OK && j < l->n; j++) total += numel[j];
    if (st == MG_OK) st = ck_args_bucket_size(args, stage, total, rf->rel, &cfg.bucket_size);
    if (st == MG_OK) st = mg_grad_buffer_plan(&lay, l->n, order, numel, own, &cfg);
    if (st == MG_OK && mg_dist_coalesced_numel(&lay) != w.n)
        st = mg_error_set(MG_ERR_FORMAT, "%s beside %s: numel_unpadded is %lld, the stage's "
                          "buffer %lld", MG_DISTRIB_OPTIM_FILE, rf->rel, (long long)w.n,
                          (long long)mg_dist_coalesced_numel(&lay));
    for (size_t j = 0; st == MG_OK && j < l->n; j++)
        st = bind_dist_param(s, h, rf, l, j, r, &w, mg_dist_coalesced_start(&lay, j));
    mg_dist_layout_free(&lay);
    free(numel);
    free(own);
    return st;
}

/* Every rank file's moments, by Megatron's optimizer order of its stage's parameters. */
mg_status ck_mg_bind_moments(ck_source *s, mg_impl *h)
{
    MG_RETURN_IF(s->names == MG_NAMES_LEGACY, MG_ERR_UNSUPPORTED, "not supported yet: "
                 "converting the optimizer state of a checkpoint with legacy (pre-Megatron-Core) "
                 "names (%s); pass --drop-optimizer-state to drop it", h->files[0].rel);
    mg_status st = MG_OK;
    for (int64_t q = 0; q < s->pp && st == MG_OK; q++) {
        stage_list l = {0};
        size_t *order = mg_calloc(s->nparams + 1, sizeof *order);
        st = order ? stage_params(s, q, &l) : MG_ERR_NOMEM;
        for (int64_t r = 0; r < s->tp && st == MG_OK; r++)
            st = h->files[q * s->tp + r].dopt ? bind_rank_dist(s, h, q, r, &l, order)
                                              : bind_rank_moments(s, h, q, r, &l, order);
        free(order);
        free(l.pi);
        free(l.name);
    }
    return st;
}

/* mg_optim.c — the optimizer state of one Megatron output rank file when the source's Adam
 * moments are kept (ck_source.moments): torch's optimizer state dict as Megatron's
 * FP32Optimizer and mg-train write it, {'state': {i: {'step', 'exp_avg', 'exp_avg_sq'}},
 * 'param_groups': [...]}, i numbering the file's parameters in megatron-core's optimizer
 * order (mg/megatron_param_order.h: the decay group, then the no-decay group), and the
 * source's 'grad_scaler' beside them when it has one (MixedPrecisionOptimizer's and
 * DistributedOptimizer's state dicts; replicated, rank 0's). With the source's fp32 masters
 * (a --bf16/--fp16 run's, ck_source.masters) the output is Float16OptimizerWithFloat16Params'
 * form: {'optimizer': that dict, 'grad_scaler', 'fp32_from_fp16_params': the planned master
 * tensors per group, in state order}. When the source's moments are the distributed
 * optimizer's (ck_source.dist_optim) the output is DistributedOptimizer.state_dict():
 * {'optimizer': {'param_groups'}} (the groups without 'params'), 'grad_scaler' beside it
 * when the source has one; its masters and moments are in distrib_optim.pt (mg_distopt.c).
 *
 * Contract (ckpt.h): the groups are the source's (rank 0's), in its order, each key kept but
 * 'params', which lists the target's indices of its decay class (wd_mult, else
 * weight_decay, non-zero: the 2-D tensors); the step count is the source's; the moments
 * are the planned moment tensors of f (pk[i] is f->t[i]'s pickled tensor). steps receives
 * the malloc'd step values the tensors point at (one per state entry, each its own torch
 * storage), to be freed after the save.
 */
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"
#include "mg/megatron_param_order.h"

static const char *param_name(const void *ctx, size_t i)
{
    const ck_file_params *x = ctx;
    return x->f->t[x->t[i]].name;
}

static int param_decay(const void *ctx, size_t i)
{
    const ck_file_params *x = ctx;
    return x->f->t[x->t[i]].ndim == 2;
}

mg_status ck_file_params_init(ck_file_params *x, const ck_file *f)
{
    x->f = f;
    x->n = 0;
    x->t = mg_calloc(f->n + 1, sizeof *x->t);
    if (!x->t) return MG_ERR_NOMEM;
    for (size_t i = 0; i < f->n; i++)
        if (!f->t[i].none && !f->t[i].moment) x->t[x->n++] = i;
    x->list = (mg_param_list){param_name, param_decay, x, x->n};
    return MG_OK;
}

int ck_group_decay(const mg_pk_obj *grp)
{
    if (grp->kind != MG_PK_DICT && grp->kind != MG_PK_ODICT) return -1;
    double w = mg_pk_number(mg_pk_get(grp, "wd_mult"));
    if (w < 0) w = mg_pk_number(mg_pk_get(grp, "weight_decay"));
    return w < 0 ? -1 : w != 0;
}

mg_status ck_groups_order(const mg_pk_obj *groups, const mg_param_list *l, size_t *order,
                          const char *where)
{
    size_t k = 0;
    int seen[2] = {0, 0};
    for (size_t i = 0; i < groups->n; i++) {
        int decay = ck_group_decay(groups->items[i]);
        MG_RETURN_IF(decay < 0 || seen[decay]++, MG_ERR_UNSUPPORTED, "not supported yet: %s: "
                     "optimizer param group %zu: only one weight-decay and one no-decay group "
                     "(with wd_mult or weight_decay) can be resharded", where, i);
        k = mg_megatron_param_order(l, decay, order, k);
    }
    MG_RETURN_IF(k != l->n, MG_ERR_UNSUPPORTED, "not supported yet: %s: the optimizer param "
                 "groups cover %zu of %zu parameters", where, k, l->n);
    return MG_OK;
}

/* Source group grp with 'params' [first, end), or none when !with_params
 * (DistributedOptimizer.state_dict() deletes them). */
static mg_status copy_group(mg_pk_graph *g, const mg_pk_obj *grp, size_t first, size_t end,
                            int with_params, mg_pk_obj **out)
{
    mg_pk_obj *d = mg_pk_container(g, MG_PK_DICT), *params = mg_pk_container(g, MG_PK_LIST);
    if (!d || !params) return MG_ERR_NOMEM;
    for (size_t i = 0; i < grp->n; i++) {
        mg_pk_obj *k = grp->items[2 * i];
        if (k->kind == MG_PK_STR && strcmp(k->str, "params") == 0) continue;
        MG_FORWARD(mg_pk_set_obj(g, d, k, grp->items[2 * i + 1]));
    }
    *out = d;
    if (!with_params) return MG_OK;
    for (size_t i = first; i < end; i++) {
        mg_pk_obj *x = mg_pk_int(g, (int64_t)i);
        if (!x) return MG_ERR_NOMEM;
        MG_FORWARD(mg_pk_append(g, params, x));
    }
    return mg_pk_set(g, d, "params", params);
}

/* The groups (with_params: torch's, listing their parameters; else DistributedOptimizer's),
 * and the file's parameter tensors in state order into order. */
static mg_status build_groups(mg_pk_graph *g, const ck_source *s, const ck_file_params *x,
                              int with_params, size_t *order, mg_pk_obj *groups)
{
    const mg_pk_obj *src = s->optim_groups;
    MG_FORWARD(ck_groups_order(src, &x->list, order, x->f->path));
    for (size_t i = 0, k = 0; i < src->n; i++) {
        size_t first = k;
        while (k < x->n && param_decay(x, order[k]) == ck_group_decay(src->items[i])) k++;
        mg_pk_obj *out = NULL;
        MG_FORWARD(copy_group(g, src->items[i], first, k, with_params, &out));
        MG_FORWARD(mg_pk_append(g, groups, out));
    }
    return MG_OK;
}

/* The moment tensors of f->t[j] (pk of exp_avg, exp_avg_sq and the fp32 master, NULL
 * without masters). */
static void moments_of(const ck_file *f, mg_pk_obj **pk, size_t j, mg_pk_obj **m)
{
    m[0] = m[1] = m[2] = NULL;
    for (size_t i = 0; i < f->n; i++)
        if (f->t[i].moment && f->t[i].of == j) m[f->t[i].moment - 1] = pk[i];
}

static mg_status build_state(mg_pk_graph *g, const ck_source *s, const ck_file_params *x,
                             mg_pk_obj **pk, const size_t *order, float *steps,
                             mg_pk_obj *state)
{
    for (size_t i = 0; i < x->n; i++) {
        mg_pk_obj *m[3];
        moments_of(x->f, pk, x->t[order[i]], m);
        MG_ASSERT(m[0] && m[1]);
        steps[i] = (float)s->optim_step;
        mg_pk_obj *e = mg_pk_container(g, MG_PK_DICT), *k = mg_pk_int(g, (int64_t)i);
        mg_pk_obj *st = mg_pk_tensor_new(g, MG_TD_F32, 0, NULL, steps + i);
        if (!e || !k || !st) return MG_ERR_NOMEM;
        MG_FORWARD(mg_pk_set(g, e, "step", st));
        MG_FORWARD(mg_pk_set(g, e, "exp_avg", m[0]));
        MG_FORWARD(mg_pk_set(g, e, "exp_avg_sq", m[1]));
        MG_FORWARD(mg_pk_set_obj(g, state, k, e));
    }
    return MG_OK;
}

/* Float16OptimizerWithFloat16Params.state_dict() around torch's dict d: {'optimizer': d,
 * 'grad_scaler', 'fp32_from_fp16_params': per group, the masters in state order}. */
static mg_status nest_mixed(mg_pk_graph *g, const ck_source *s, const ck_file_params *x,
                            mg_pk_obj **pk, const size_t *order, mg_pk_obj *d, mg_pk_obj **out)
{
    const mg_pk_obj *groups = mg_pk_get(d, "param_groups");
    mg_pk_obj *r = *out = mg_pk_container(g, MG_PK_DICT);
    mg_pk_obj *masters = mg_pk_container(g, MG_PK_LIST);
    if (!r || !masters) return MG_ERR_NOMEM;
    for (size_t gi = 0, i = 0; gi < groups->n; gi++) {
        mg_pk_obj *list = mg_pk_container(g, MG_PK_LIST);
        if (!list) return MG_ERR_NOMEM;
        for (size_t n = mg_pk_len(mg_pk_get(groups->items[gi], "params")); n > 0; n--, i++) {
            mg_pk_obj *m[3];
            moments_of(x->f, pk, x->t[order[i]], m);
            MG_ASSERT(m[2]);
            MG_FORWARD(mg_pk_append(g, list, m[2]));
        }
        MG_FORWARD(mg_pk_append(g, masters, list));
    }
    MG_FORWARD(mg_pk_set(g, r, "optimizer", d));
    if (s->optim_scaler) MG_FORWARD(mg_pk_set(g, r, "grad_scaler", s->optim_scaler));
    return mg_pk_set(g, r, "fp32_from_fp16_params", masters);
}

/* DistributedOptimizer.state_dict()'s {'optimizer': {'param_groups'}} added to d (torch's
 * state dict of the full moments, as mg-train writes both); the masters and the moments'
 * shards go to distrib_optim.pt (mg_distopt.c). */
static mg_status add_dist_optimizer(mg_pk_graph *g, const ck_source *s,
                                    const ck_file_params *x, size_t *order, mg_pk_obj *d)
{
    mg_pk_obj *inner = mg_pk_container(g, MG_PK_DICT), *groups = mg_pk_container(g, MG_PK_LIST);
    if (!inner || !groups) return MG_ERR_NOMEM;
    MG_FORWARD(build_groups(g, s, x, 0, order, groups));
    MG_FORWARD(mg_pk_set(g, inner, "param_groups", groups));
    return mg_pk_set(g, d, "optimizer", inner);
}

mg_status ck_megatron_optimizer(mg_pk_graph *g, const ck_source *s, const ck_file *f,
                                mg_pk_obj **pk, mg_pk_obj **out, float **steps)
{
    ck_file_params x;
    mg_status st = ck_file_params_init(&x, f);
    size_t *order = mg_calloc(f->n + 1, sizeof *order);
    *steps = mg_calloc(f->n + 1, sizeof **steps);
    mg_pk_obj *d = mg_pk_container(g, MG_PK_DICT), *state = mg_pk_container(g, MG_PK_DICT);
    mg_pk_obj *groups = mg_pk_container(g, MG_PK_LIST);
    if (st == MG_OK && !(order && *steps && d && state && groups)) st = MG_ERR_NOMEM;
    if (st == MG_OK) st = build_groups(g, s, &x, 1, order, groups);
    if (st == MG_OK) st = build_state(g, s, &x, pk, order, *steps, state);
    if (st == MG_OK) st = mg_pk_set(g, d, "state", state);
    if (st == MG_OK) st = mg_pk_set(g, d, "param_groups", groups);
    if (st == MG_OK && s->dist_optim) st = add_dist_optimizer(g, s, &x, order, d);
    *out = d;
    if (st == MG_OK && s->masters) st = nest_mixed(g, s, &x, pk, order, d, out);
    else if (st == MG_OK && s->optim_scaler)
        st = mg_pk_set(g, d, "grad_scaler", s->optim_scaler);
    free(x.t);
    free(order);
    return st;
}

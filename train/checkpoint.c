/* checkpoint.c — checkpoint.h: Megatron `torch`-format save and load for mg-train. */
#include "checkpoint.h"
#include "checkpoint_internal.h"
#include "ckpt_head.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "mg/distrib_optim.h"
#include "mg/dtype_convert.h"
#include "mg/file.h"
#include "mg/megatron_layout.h"
#include "mg/mcore_dist.h"
#include "mg/torchfile.h"
#include "dist_optim.h"
#include "param_order.h"

/* ---- save ---- */

/* The optimizer's parameter order (Megatron's _get_param_groups): the decay tensors, then
 * the others, each in Megatron's parameter order for the naming's spec (param_order.h).
 * Returns the number of decay tensors. */
size_t mg_train_ckpt_param_order(const mg_gpt *g, const mg_tname *names, size_t *order)
{
    size_t ndecay = mg_gpt_param_order(g, names, 1, order, 0);
    mg_gpt_param_order(g, names, 0, order, ndecay);
    return ndecay;
}

/* View t of a buffer of dtype's values laid out as params (same offsets). */
static mg_pk_obj *tensor_as(mg_pk_graph *pg, const mg_gpt_tensor *t, mg_tdtype dtype,
                            const void *buf)
{
    int64_t shape[2] = {t->shape[0], t->shape[1]};
    const uint8_t *at = (const uint8_t *)buf + (size_t)t->offset * mg_tdtype_size(dtype);
    return mg_pk_tensor_new(pg, dtype, t->ndim, shape, at);
}

static mg_pk_obj *tensor_of(mg_pk_graph *pg, const mg_gpt_tensor *t, const float *buf)
{
    return tensor_as(pg, t, MG_TD_F32, buf);
}

int mg_train_ckpt_mixed_optim(const mg_train_opts *o)
{
    return (o->bf16 || o->fp16) && !o->use_distributed_optimizer;
}

static mg_status put_int(mg_pk_graph *pg, mg_pk_obj *m, const char *k, int64_t v)
{
    mg_pk_obj *x = mg_pk_int(pg, v);
    return x ? mg_pk_set(pg, m, k, x) : MG_ERR_NOMEM;
}

static mg_status put_float(mg_pk_graph *pg, mg_pk_obj *m, const char *k, double v)
{
    mg_pk_obj *x = mg_pk_float(pg, v);
    return x ? mg_pk_set(pg, m, k, x) : MG_ERR_NOMEM;
}

static mg_status put_str(mg_pk_graph *pg, mg_pk_obj *m, const char *k, const char *v)
{
    mg_pk_obj *x = mg_pk_str(pg, v);
    return x ? mg_pk_set(pg, m, k, x) : MG_ERR_NOMEM;
}

static mg_status put_bool(mg_pk_graph *pg, mg_pk_obj *m, const char *k, int v)
{
    mg_pk_obj *x = mg_pk_bool(pg, v);
    return x ? mg_pk_set(pg, m, k, x) : MG_ERR_NOMEM;
}

static mg_status build_args(mg_pk_graph *pg, const mg_train_opts *o,
                            const mg_train_ckpt_state *st, mg_pk_obj **ns)
{
    MG_FORWARD(mg_model_to_args(&o->model, pg, ns));
    MG_FORWARD(put_str(pg, *ns, "transformer_impl",
                       o->local_spec ? "local" : "transformer_engine"));
    MG_FORWARD(put_bool(pg, *ns, "sequence_parallel", o->sequence_parallel));
    /* the DDP buckets, which distrib_optim.pt's layout follows (grad_buckets.h) */
    MG_FORWARD(put_bool(pg, *ns, "overlap_grad_reduce", o->overlap_grad_reduce));
    MG_FORWARD(o->ddp_bucket_size > 0 ? put_int(pg, *ns, "ddp_bucket_size", o->ddp_bucket_size)
                                      : mg_pk_set(pg, *ns, "ddp_bucket_size", mg_pk_none(pg)));
    MG_FORWARD(put_int(pg, *ns, "data_parallel_size", o->data_parallel_size));
    MG_FORWARD(put_int(pg, *ns, "iteration", st->iteration));
    MG_FORWARD(put_int(pg, *ns, "consumed_train_samples", st->consumed_train_samples));
    MG_FORWARD(put_int(pg, *ns, "consumed_valid_samples", st->consumed_valid_samples));
    MG_FORWARD(put_int(pg, *ns, "train_iters", o->train_iters));
    MG_FORWARD(put_int(pg, *ns, "global_batch_size", o->global_batch_size));
    MG_FORWARD(put_int(pg, *ns, "micro_batch_size", o->micro_batch_size));
    MG_FORWARD(put_int(pg, *ns, "seed", o->seed));
    MG_FORWARD(put_float(pg, *ns, "lr", o->lr));
    MG_FORWARD(put_float(pg, *ns, "min_lr", o->min_lr));
    /* read by Megatron's --use-checkpoint-args (its defaults are 0.1) and, with --vocab-file,
     * compared by check_checkpoint_args (tokenizer_type) */
    MG_FORWARD(put_float(pg, *ns, "hidden_dropout", o->hidden_dropout));
    MG_FORWARD(put_float(pg, *ns, "attention_dropout", o->attention_dropout));
    if (o->tok.model) MG_FORWARD(put_str(pg, *ns, "tokenizer_model", o->tok.model));
    return o->tok.type ? put_str(pg, *ns, "tokenizer_type", o->tok.type) : MG_OK;
}

/* The model's state dict: the fp32 parameters, or with --bf16/--fp16 (b->half) Float16Module's
 * 16-bit weights, the masters rounded to nearest-even as the run's own 16-bit copy is. */
static mg_status build_model(mg_pk_graph *pg, const mg_train_opts *o, const mg_gpt *g,
                             const mg_train_save_bufs *b, mg_pk_obj **model)
{
    mg_tdtype dt = b->half ? o->model.dtype : MG_TD_F32;
    const void *buf = g->params;
    if (b->half) {
        MG_FORWARD(mg_dtype_convert(b->half, dt, g->params, MG_TD_F32, (size_t)g->numel));
        buf = b->half;
    }
    *model = mg_pk_container(pg, MG_PK_ODICT);
    if (!*model) return MG_ERR_NOMEM;
    const mg_tname *names = b->names;
    for (size_t i = 0; i < g->nt; i++) {
        mg_pk_obj *t = tensor_as(pg, &g->t[i], dt, buf);
        if (!t) return MG_ERR_NOMEM;
        MG_FORWARD(mg_pk_set(pg, *model, names[i], t));
    }
    return MG_OK;
}

/* The keys megatron.core.optimizer._get_param_groups gives each group; FP32Optimizer.
 * load_state_dict matches the saved groups to its own by (wd_mult, lr_mult,
 * is_expert_parallel, is_decoupled_lr), and OptimizerParamScheduler multiplies the weight
 * decay by wd_mult (0 for the no-decay group). */
static mg_status put_megatron_group_keys(mg_pk_graph *pg, const mg_train_opts *o, mg_pk_obj *d,
                                         int decay)
{
    MG_FORWARD(put_bool(pg, d, "is_expert_parallel", 0));
    MG_FORWARD(put_bool(pg, d, "default_config", 1));
    MG_FORWARD(put_float(pg, d, "wd_mult", decay ? 1.0 : 0.0));
    MG_FORWARD(put_float(pg, d, "lr_mult", 1.0));
    MG_FORWARD(put_bool(pg, d, "is_decoupled_lr", 0));
    MG_FORWARD(put_float(pg, d, "max_lr", o->lr));
    return put_float(pg, d, "min_lr", o->min_lr);
}

/* One param group: torch.optim.AdamW's keys, Megatron's, and the step count and
 * bias_correction that Apex's and TransformerEngine's FusedAdam keep per group; 'params'
 * [first, end) unless end < first (DistributedOptimizer.state_dict()'s groups have none). */
static mg_status build_group(mg_pk_graph *pg, const mg_train_opts *o, int decay, int64_t step,
                             size_t first, size_t end, mg_pk_obj **grp)
{
    mg_pk_obj *d = mg_pk_container(pg, MG_PK_DICT), *betas = mg_pk_container(pg, MG_PK_TUPLE);
    mg_pk_obj *params = mg_pk_container(pg, MG_PK_LIST);
    mg_pk_obj *b1 = mg_pk_float(pg, o->adam_beta1), *b2 = mg_pk_float(pg, o->adam_beta2);
    if (!d || !betas || !params || !b1 || !b2) return MG_ERR_NOMEM;
    MG_FORWARD(mg_pk_append(pg, betas, b1));
    MG_FORWARD(mg_pk_append(pg, betas, b2));
    MG_FORWARD(put_float(pg, d, "lr", o->lr));
    MG_FORWARD(mg_pk_set(pg, d, "betas", betas));
    MG_FORWARD(put_float(pg, d, "eps", o->adam_eps));
    MG_FORWARD(put_float(pg, d, "weight_decay", decay ? o->weight_decay : 0.0));
    MG_FORWARD(put_megatron_group_keys(pg, o, d, decay));
    MG_FORWARD(put_bool(pg, d, "bias_correction", 1));
    MG_FORWARD(put_int(pg, d, "step", step));
    for (size_t i = first; i < end; i++) {
        mg_pk_obj *x = mg_pk_int(pg, (int64_t)i);
        if (!x) return MG_ERR_NOMEM;
        MG_FORWARD(mg_pk_append(pg, params, x));
    }
    if (end >= first) MG_FORWARD(mg_pk_set(pg, d, "params", params));
    *grp = d;
    return MG_OK;
}

static mg_status build_state(mg_pk_graph *pg, const mg_gpt *g, const mg_gpt_optim *opt,
                             const size_t *order, const float *step, mg_pk_obj *state)
{
    for (size_t i = 0; i < g->nt; i++) {
        const mg_gpt_tensor *t = &g->t[order[i]];
        mg_pk_obj *e = mg_pk_container(pg, MG_PK_DICT), *k = mg_pk_int(pg, (int64_t)i);
        mg_pk_obj *s = mg_pk_tensor_new(pg, MG_TD_F32, 0, NULL, step + i); /* own storage */
        mg_pk_obj *m = tensor_of(pg, t, opt->m), *v = tensor_of(pg, t, opt->v);
        if (!e || !k || !s || !m || !v) return MG_ERR_NOMEM;
        MG_FORWARD(mg_pk_set(pg, e, "step", s));
        MG_FORWARD(mg_pk_set(pg, e, "exp_avg", m));
        MG_FORWARD(mg_pk_set(pg, e, "exp_avg_sq", v));
        MG_FORWARD(mg_pk_set_obj(pg, state, k, e));
    }
    return MG_OK;
}

/* With --use-distributed-optimizer, DistributedOptimizer.state_dict()'s
 * {'optimizer': {'param_groups': [...]}} beside torch's keys, so that megatron-core's
 * DistributedOptimizer.load_state_dict finds its groups (it reads no other key; torch's
 * load_state_dict reads 'state' and 'param_groups' only). */
static mg_status put_dist_groups(mg_pk_graph *pg, const mg_train_opts *o, int64_t step,
                                 mg_pk_obj *d)
{
    mg_pk_obj *inner = mg_pk_container(pg, MG_PK_DICT), *groups = mg_pk_container(pg, MG_PK_LIST);
    if (!inner || !groups) return MG_ERR_NOMEM;
    for (int decay = 1; decay >= 0; decay--) {
        mg_pk_obj *grp = NULL;
        MG_FORWARD(build_group(pg, o, decay, step, 1, 0, &grp));
        MG_FORWARD(mg_pk_append(pg, groups, grp));
    }
    MG_FORWARD(mg_pk_set(pg, inner, "param_groups", groups));
    return mg_pk_set(pg, d, "optimizer", inner);
}

/* Megatron's grad_scaler.state_dict() in the optimizer's dict (MixedPrecisionOptimizer and
 * DistributedOptimizer.state_dict): the dynamic scaler's scale (a float32 tensor [1] over
 * s->scale, which outlives the save) and trackers, the constant scaler's empty dict. */
static mg_status put_grad_scaler(mg_pk_graph *pg, const mg_grad_scaler *s, mg_pk_obj *od)
{
    if (s->kind == MG_SCALER_NONE) return MG_OK;
    mg_pk_obj *d = mg_pk_container(pg, MG_PK_DICT);
    if (!d) return MG_ERR_NOMEM;
    if (s->kind == MG_SCALER_DYNAMIC) {
        const int64_t one = 1;
        mg_pk_obj *scale = mg_pk_tensor_new(pg, MG_TD_F32, 1, &one, &s->scale);
        if (!scale) return MG_ERR_NOMEM;
        MG_FORWARD(mg_pk_set(pg, d, "scale", scale));
        MG_FORWARD(put_int(pg, d, "growth_tracker", s->growth_tracker));
        MG_FORWARD(put_int(pg, d, "hysteresis_tracker", s->hysteresis_tracker));
    }
    return mg_pk_set(pg, od, "grad_scaler", d);
}

/* torch.optim.AdamW's state_dict(): {'state', 'param_groups' (decay, no-decay)}. */
static mg_status build_adamw(mg_pk_graph *pg, const mg_train_opts *o, const mg_gpt *g,
                             const mg_gpt_optim *opt, const size_t *order, size_t ndecay,
                             const float *step, mg_pk_obj **out)
{
    mg_pk_obj *d = mg_pk_container(pg, MG_PK_DICT), *state = mg_pk_container(pg, MG_PK_DICT);
    mg_pk_obj *groups = mg_pk_container(pg, MG_PK_LIST), *g0 = NULL, *g1 = NULL;
    if (!d || !state || !groups) return MG_ERR_NOMEM;
    MG_FORWARD(build_state(pg, g, opt, order, step, state));
    MG_FORWARD(build_group(pg, o, 1, opt->step, 0, ndecay, &g0));
    MG_FORWARD(build_group(pg, o, 0, opt->step, ndecay, g->nt, &g1));
    MG_FORWARD(mg_pk_append(pg, groups, g0));
    MG_FORWARD(mg_pk_append(pg, groups, g1));
    MG_FORWARD(mg_pk_set(pg, d, "state", state));
    MG_FORWARD(mg_pk_set(pg, d, "param_groups", groups));
    *out = d;
    return MG_OK;
}

/* Float16OptimizerWithFloat16Params' fp32_from_fp16_params: per param group, the fp32
 * masters in the group's parameter order. */
static mg_status build_masters(mg_pk_graph *pg, const mg_gpt *g, const size_t *order,
                               size_t ndecay, mg_pk_obj **out)
{
    mg_pk_obj *groups = *out = mg_pk_container(pg, MG_PK_LIST);
    const size_t bounds[3] = {0, ndecay, g->nt};
    if (!groups) return MG_ERR_NOMEM;
    for (int k = 0; k < 2; k++) {
        mg_pk_obj *grp = mg_pk_container(pg, MG_PK_LIST);
        if (!grp) return MG_ERR_NOMEM;
        for (size_t i = bounds[k]; i < bounds[k + 1]; i++) {
            mg_pk_obj *t = tensor_of(pg, &g->t[order[i]], g->params);
            if (!t) return MG_ERR_NOMEM;
            MG_FORWARD(mg_pk_append(pg, grp, t));
        }
        MG_FORWARD(mg_pk_append(pg, groups, grp));
    }
    return MG_OK;
}

/* The optimizer's state dict: FP32Optimizer's (torch's AdamW dict, 'grad_scaler' beside its
 * keys), DistributedOptimizer's (the same with its groups), or with --bf16/--fp16
 * Float16OptimizerWithFloat16Params.state_dict(): {'optimizer': AdamW's, 'grad_scaler'
 * (when the run has a scaler), 'fp32_from_fp16_params'}. */
static mg_status build_optim(mg_pk_graph *pg, const mg_train_opts *o, const mg_gpt *g,
                             const mg_gpt_optim *opt, const mg_train_ckpt_state *st,
                             const mg_tname *names, size_t *order, const float *step,
                             mg_pk_obj **out)
{
    size_t ndecay = mg_train_ckpt_param_order(g, names, order);
    mg_pk_obj *adamw = NULL, *d = NULL, *masters = NULL;
    MG_FORWARD(build_adamw(pg, o, g, opt, order, ndecay, step, &adamw));
    if (!mg_train_ckpt_mixed_optim(o)) {
        if (o->use_distributed_optimizer) MG_FORWARD(put_dist_groups(pg, o, opt->step, adamw));
        MG_FORWARD(put_grad_scaler(pg, &st->scaler, adamw));
        *out = adamw;
        return MG_OK;
    }
    d = *out = mg_pk_container(pg, MG_PK_DICT);
    if (!d) return MG_ERR_NOMEM;
    MG_FORWARD(mg_pk_set(pg, d, "optimizer", adamw));
    MG_FORWARD(put_grad_scaler(pg, &st->scaler, d));
    MG_FORWARD(build_masters(pg, g, order, ndecay, &masters));
    return mg_pk_set(pg, d, "fp32_from_fp16_params", masters);
}

/* Megatron's OptimizerParamScheduler.state_dict() (steps in samples). */
static mg_status build_sched(mg_pk_graph *pg, const mg_train_opts *o,
                             const mg_train_ckpt_state *st, mg_pk_obj **out)
{
    const mg_lr_sched *s = &o->sched;
    mg_pk_obj *d = *out = mg_pk_container(pg, MG_PK_DICT);
    if (!d) return MG_ERR_NOMEM;
    MG_FORWARD(put_float(pg, d, "max_lr", s->max_lr));
    MG_FORWARD(put_float(pg, d, "lr_warmup_steps", s->warmup_steps));
    MG_FORWARD(put_int(pg, d, "num_steps", st->consumed_train_samples - st->sched_behind));
    MG_FORWARD(put_str(pg, d, "lr_decay_style", mg_lr_style_name(s->style)));
    MG_FORWARD(put_float(pg, d, "lr_decay_steps", s->decay_steps));
    MG_FORWARD(put_float(pg, d, "min_lr", s->min_lr));
    MG_FORWARD(put_float(pg, d, "start_wd", s->start_wd));
    MG_FORWARD(put_float(pg, d, "end_wd", s->end_wd));
    MG_FORWARD(put_str(pg, d, "wd_incr_style", mg_wd_style_name(s->wd_style)));
    return put_float(pg, d, "wd_incr_steps", s->wd_incr_steps);
}

mg_status mg_train_save_bufs_init(mg_train_save_bufs *b, const mg_train_opts *o,
                                  const mg_gpt *g, const mg_gpt_optim *opt)
{
    size_t n = g->nt ? g->nt : 1;
    b->order = mg_calloc(n, sizeof(size_t));
    b->steps = mg_calloc(n, sizeof(float));
    b->names = mg_gpt_names(g, o->local_spec ? MG_NAMES_LOCAL : MG_NAMES_TE);
    b->half = o->model.dtype != MG_TD_F32 ? mg_calloc((size_t)g->numel + 1, sizeof(uint16_t))
                                          : NULL;
    for (size_t i = 0; b->steps && i < g->nt; i++) b->steps[i] = (float)opt->step;
    if (b->order && b->steps && b->names && (b->half || o->model.dtype == MG_TD_F32))
        return MG_OK;
    mg_train_save_bufs_free(b);
    return MG_ERR_NOMEM;
}

void mg_train_save_bufs_free(mg_train_save_bufs *b)
{
    free(b->order);
    free(b->steps);
    free(b->names);
    free(b->half);
    memset(b, 0, sizeof *b);
}

mg_status mg_train_ckpt_build_root(mg_pk_graph *pg, const mg_train_opts *o, const mg_gpt *g,
                                   const mg_gpt_optim *opt, const mg_train_ckpt_state *st,
                                   mg_train_save_bufs *b, mg_pk_obj **root)
{
    mg_pk_obj *r = *root = mg_pk_container(pg, MG_PK_DICT), *x = NULL;
    if (!r) return MG_ERR_NOMEM;
    MG_FORWARD(build_args(pg, o, st, &x));
    MG_FORWARD(mg_pk_set(pg, r, "args", x));
    MG_FORWARD(put_float(pg, r, "checkpoint_version", 3.0));
    MG_FORWARD(put_int(pg, r, "iteration", st->iteration));
    MG_FORWARD(build_model(pg, o, g, b, &x));
    MG_FORWARD(mg_pk_set(pg, r, "model", x));
    MG_FORWARD(build_optim(pg, o, g, opt, st, b->names, b->order, b->steps, &x));
    MG_FORWARD(mg_pk_set(pg, r, "optimizer", x));
    MG_FORWARD(build_sched(pg, o, st, &x));
    MG_FORWARD(mg_pk_set(pg, r, "opt_param_scheduler", x));
    return put_float(pg, r, "num_floating_point_operations_so_far", st->flops_so_far);
}

static mg_status make_dir(const char *path)
{
    if (mkdir(path, 0777) == 0 || (errno == EEXIST && mg_is_dir(path))) return MG_OK;
    return mg_error_errno(errno, "cannot create the directory %s", path);
}

/* The shard's folder name (mg/megatron_layout.h: mp_rank_TT, mp_rank_TT_PPP with PP > 1). */
static void shard_name(const mg_train_ckpt_shard *sh, char *name)
{
    mg_megatron_rank_name(sh->tp_rank, sh->pp_rank, sh->pp > 1, name);
}

/* Removes what saves wrote in DIR: the rank file and distrib_optim.pt of every rank folder,
 * the folders, the torch_dist files, and DIR itself. */
static void remove_iter_dir(const char *dir)
{
    static const char *const files[] = {MG_MEGATRON_RANK_FILE, MG_DISTRIB_OPTIM_FILE};
    const size_t np = strlen(MG_MEGATRON_RANK_PREFIX);
    char p[MG_PATH_MAX + 512]; /* room beyond a tmp folder and a dirent name */
    DIR *d = opendir(dir);
    struct dirent *e;
    while (d && (e = readdir(d)) != NULL) {
        if (strncmp(e->d_name, MG_MEGATRON_RANK_PREFIX, np) != 0) continue;
        for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
            snprintf(p, sizeof p, "%s/%s/%s", dir, e->d_name, files[i]);
            unlink(p);
        }
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        rmdir(p);
    }
    if (d) closedir(d);
    mg_train_ckpt_remove_dist(dir);
    rmdir(dir);
}

static mg_status write_shard(const char *tmp, const mg_train_ckpt_shard *sh,
                             const mg_train_opts *o, const mg_gpt *g, const mg_gpt_optim *opt,
                             const mg_train_ckpt_state *st)
{
    char p[MG_PATH_MAX + 128], name[MG_MEGATRON_NAME_MAX]; /* room beyond a tmp folder */
    shard_name(sh, name);
    snprintf(p, sizeof p, "%s/%s", tmp, name);
    MG_FORWARD(make_dir(p));
    snprintf(p, sizeof p, "%s/%s/" MG_MEGATRON_RANK_FILE, tmp, name);
    mg_pk_graph *pg = mg_pk_graph_create();
    mg_train_save_bufs b;
    mg_pk_obj *root = NULL;
    mg_status s = mg_train_save_bufs_init(&b, o, g, opt);
    if (s == MG_OK && !pg) s = MG_ERR_NOMEM;
    if (s == MG_OK) s = mg_train_ckpt_build_root(pg, o, g, opt, st, &b, &root);
    mg_torch_save_opts so = {.archive_name = "model_optim_rng"};
    if (s == MG_OK) s = mg_torch_save(p, root, &so);
    mg_train_save_bufs_free(&b);
    mg_pk_graph_free(pg);
    return s;
}

/* DIR/iter_N and the folder the shards are written to before it is put in place: one name
 * for every writer (DIR/iter_N.tmp). */
static mg_status iter_paths(const char *dir, int64_t iteration, char *final, char *tmp)
{
    char name[MG_MEGATRON_NAME_MAX];
    MG_RETURN_IF(strlen(dir) > MG_PATH_MAX - 96, MG_ERR_ARG, "--save: directory name too long");
    mg_megatron_iter_name(&(mg_megatron_iter){iteration, 0}, name);
    snprintf(final, MG_PATH_MAX, "%s/%s", dir, name);
    snprintf(tmp, MG_PATH_MAX, "%s.tmp", final);
    return MG_OK;
}

mg_status mg_train_ckpt_begin(const char *dir, int64_t iteration)
{
    char final[MG_PATH_MAX], tmp[MG_PATH_MAX];
    MG_FORWARD(iter_paths(dir, iteration, final, tmp));
    MG_FORWARD(make_dir(dir));
    remove_iter_dir(tmp); /* a crashed save's leftovers */
    return make_dir(tmp);
}

mg_status mg_train_ckpt_write(const char *dir, const mg_train_ckpt_shard *sh,
                              const mg_train_opts *o, const mg_gpt *g, const mg_gpt_optim *opt,
                              const mg_train_ckpt_state *st, uint8_t **part, size_t *part_len)
{
    char final[MG_PATH_MAX], tmp[MG_PATH_MAX];
    *part = NULL, *part_len = 0;
    MG_FORWARD(iter_paths(dir, st->iteration, final, tmp));
    return o->ckpt_torch_dist ? mg_train_ckpt_write_dist(tmp, sh, o, g, opt, st, part, part_len)
                              : write_shard(tmp, sh, o, g, opt, st);
}

mg_status mg_train_ckpt_write_meta(const char *dir, int64_t iteration,
                                   const uint8_t *const *parts, const size_t *lens, size_t n)
{
    char final[MG_PATH_MAX], tmp[MG_PATH_MAX];
    MG_FORWARD(iter_paths(dir, iteration, final, tmp));
    return mg_train_ckpt_write_dist_meta(tmp, parts, lens, n);
}

mg_status mg_train_ckpt_shard_file(char *buf, size_t n, const char *dir, int64_t iteration,
                                   const mg_train_ckpt_shard *sh, const char *file)
{
    char final[MG_PATH_MAX], tmp[MG_PATH_MAX], name[MG_MEGATRON_NAME_MAX];
    MG_FORWARD(iter_paths(dir, iteration, final, tmp));
    shard_name(sh, name);
    MG_RETURN_IF((size_t)snprintf(buf, n, "%s/%s/%s", tmp, name, file) >= n, MG_ERR_LIMIT,
                 "%s/%s/%s: path too long", tmp, name, file);
    return MG_OK;
}

static mg_status write_tracker(const char *dir, int64_t iteration)
{
    mg_megatron_iter it = {iteration, 0};
    return mg_megatron_tracker_write(dir, &it);
}

mg_status mg_train_ckpt_commit(const char *dir, int64_t iteration)
{
    char final[MG_PATH_MAX], tmp[MG_PATH_MAX], old[MG_PATH_MAX + 32];
    MG_FORWARD(iter_paths(dir, iteration, final, tmp));
    snprintf(old, sizeof old, "%s.old.%ld", final, (long)getpid());
    int had_old = mg_is_dir(final) && rename(final, old) == 0;
    if (rename(tmp, final) != 0) {
        mg_status s = mg_error_errno(errno, "cannot rename %s to %s", tmp, final);
        remove_iter_dir(tmp);
        return s;
    }
    if (had_old) remove_iter_dir(old);
    return write_tracker(dir, iteration);
}

mg_status mg_train_ckpt_save(const char *dir, const mg_train_opts *o, const mg_gpt *g,
                             const mg_gpt_optim *opt, const mg_train_ckpt_state *st)
{
    const mg_train_ckpt_shard one = {0, 0, 1};
    char final[MG_PATH_MAX], tmp[MG_PATH_MAX];
    MG_FORWARD(iter_paths(dir, st->iteration, final, tmp));
    MG_FORWARD(mg_train_ckpt_begin(dir, st->iteration));
    uint8_t *part = NULL;
    size_t len = 0;
    mg_status s = mg_train_ckpt_write(dir, &one, o, g, opt, st, &part, &len);
    if (s == MG_OK && part)
        s = mg_train_ckpt_write_meta(dir, st->iteration, (const uint8_t *const *)&part, &len, 1);
    free(part);
    if (s != MG_OK) {
        remove_iter_dir(tmp);
        return s;
    }
    return mg_train_ckpt_commit(dir, st->iteration);
}

/* ---- load ---- */

static int contiguous(const mg_pk_tensor *t)
{
    int64_t s = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->size[d] != 1 && t->stride[d] != s) return 0;
        s *= t->size[d];
    }
    return 1;
}

static void shape_str(char *buf, size_t n, int ndim, const int64_t *size)
{
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int d = 0; d < ndim && k < n; d++)
        k += (size_t)snprintf(buf + k, n - k, d ? ", %lld" : "%lld", (long long)size[d]);
    if (k < n) snprintf(buf + k, n - k, "]");
}

/* Copies tensor obj (named name in the file path) into dst after checking it against t. */
static mg_status copy_tensor(const char *path, const char *what, const mg_gpt_tensor *t,
                             const char *name, const mg_pk_obj *obj, float *dst)
{
    MG_RETURN_IF(!obj, MG_ERR_FORMAT, "%s: %s '%s' is missing", path, what, name);
    MG_RETURN_IF(obj->kind != MG_PK_TENSOR, MG_ERR_FORMAT, "%s: %s '%s' is a %s, not a tensor",
                 path, what, name, mg_pk_kind_name(obj->kind));
    const mg_pk_tensor *x = obj->tensor;
    int64_t want[2] = {t->shape[0], t->shape[1]};
    int same = x->ndim == t->ndim;
    for (int d = 0; same && d < t->ndim; d++) same = x->size[d] == want[d];
    if (!same) {
        char a[128], b[128];
        shape_str(a, sizeof a, x->ndim, x->size);
        shape_str(b, sizeof b, t->ndim, want);
        return mg_error_set(MG_ERR_FORMAT, "%s: %s '%s' has shape %s, the model needs %s", path,
                            what, name, a, b);
    }
    MG_RETURN_IF(x->dtype != MG_TD_F32 && x->dtype != MG_TD_BF16 && x->dtype != MG_TD_F16 &&
                     x->dtype != MG_TD_F64,
                 MG_ERR_FORMAT, "%s: %s '%s' is %s, not a floating-point tensor", path, what,
                 name, mg_tdtype_name(x->dtype));
    MG_RETURN_IF(!contiguous(x) || !x->data || x->offset < 0 ||
                     x->offset + t->numel > x->storage_numel,
                 MG_ERR_FORMAT, "%s: %s '%s': not a contiguous tensor inside its storage", path,
                 what, name);
    const uint8_t *src = x->data + (size_t)x->offset * mg_tdtype_size(x->dtype);
    return mg_dtype_convert(dst + t->offset, MG_TD_F32, src, x->dtype, (size_t)t->numel);
}

/* The naming of a file's model dict: the local spec's when a norm is there under its
 * local name and not under its TE name (a model without such norms has one naming). */
static mg_names file_naming(const mg_pk_obj *model, const mg_tname *te, const mg_tname *local,
                            size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (strcmp(te[i], local[i]) && !mg_pk_get(model, te[i]) && mg_pk_get(model, local[i]))
            return MG_NAMES_LOCAL;
    return MG_NAMES_TE;
}

static int has_name(const mg_tname *names, size_t n, const char *name)
{
    for (size_t i = 0; i < n; i++)
        if (!strcmp(names[i], name)) return 1;
    return 0;
}

static mg_status load_model(const char *path, mg_gpt *g, const mg_pk_obj *model,
                            const mg_tname *names)
{
    for (size_t i = 0; i < g->nt; i++)
        MG_FORWARD(copy_tensor(path, "tensor", &g->t[i], names[i], mg_pk_get(model, names[i]),
                               g->params));
    for (size_t i = 0; i < model->n; i++) {
        const mg_pk_obj *k = model->items[2 * i], *v = model->items[2 * i + 1];
        if (k->kind != MG_PK_STR || v->kind == MG_PK_NONE) continue; /* _extra_state */
        MG_RETURN_IF(!has_name(names, g->nt, k->str), MG_ERR_FORMAT,
                     "%s: tensor '%s' is not a parameter of this model", path, k->str);
    }
    return MG_OK;
}

/* Megatron's groups (and mg-train's since it writes Megatron's parameter order) carry
 * wd_mult; older mg-train files ordered the moments differently (linear_qkv before
 * linear_proj), which same-shaped tensors would not reveal. */
static mg_status check_group_keys(const char *path, const mg_pk_obj *groups)
{
    int ok = groups && groups->kind == MG_PK_LIST && groups->n > 0;
    for (size_t i = 0; ok && i < groups->n; i++)
        ok = (groups->items[i]->kind == MG_PK_DICT || groups->items[i]->kind == MG_PK_ODICT) &&
             mg_pk_get(groups->items[i], "wd_mult");
    MG_RETURN_IF(!ok, MG_ERR_FORMAT,
                 "%s: optimizer param_groups without Megatron's wd_mult (written by an older "
                 "mg-train, whose parameter order differs): pass --no-load-optim", path);
    return MG_OK;
}

/* The step count of Megatron's param groups (all equal where present). */
static mg_status groups_step(const char *path, const mg_pk_obj *groups, double *step)
{
    *step = -1;
    for (size_t i = 0; i < groups->n; i++) {
        double s = mg_pk_number(mg_pk_get(groups->items[i], "step"));
        MG_RETURN_IF(s >= 0 && *step >= 0 && s != *step, MG_ERR_FORMAT,
                     "%s: the optimizer param groups disagree on the step count (%g, %g)",
                     path, *step, s);
        if (s >= 0) *step = s;
    }
    MG_RETURN_IF(*step < 0, MG_ERR_FORMAT, "%s: optimizer step count missing", path);
    return MG_OK;
}

/* megatron-core's DistributedOptimizer.state_dict() (`torch` format, --use-distributed-
 * optimizer): od = {'optimizer': {'param_groups': [...]} without 'state', each group with
 * the step count and without 'params'; 'grad_scaler' with fp16}. The fp32 master weights
 * and the moments are in distrib_optim.pt beside path (dist_optim.h). */
static mg_status load_dist_optim(const char *path, mg_gpt *g, mg_gpt_optim *opt,
                                 const mg_pk_obj *inner, mg_names nm)
{
    const mg_pk_obj *groups = mg_pk_get(inner, "param_groups");
    MG_FORWARD(check_group_keys(path, groups));
    double step;
    MG_FORWARD(groups_step(path, groups, &step));
    char dpath[MG_PATH_MAX];
    const char *slash = strrchr(path, '/');
    int dirlen = slash ? (int)(slash - path) : 1;
    MG_RETURN_IF((size_t)snprintf(dpath, sizeof dpath, "%.*s/%s", dirlen, slash ? path : ".",
                                  MG_DISTRIB_OPTIM_FILE) >= sizeof dpath,
                 MG_ERR_LIMIT, "%s: path too long", path);
    struct stat sb;
    MG_RETURN_IF(stat(dpath, &sb) != 0, MG_ERR_FORMAT,
                 "%s: the distributed optimizer's state belongs in %s, which is missing (pass "
                 "--no-load-optim or --finetune to start a new optimizer)", path, dpath);
    MG_FORWARD(mg_dist_read_state(g, nm, dpath, g->params, opt));
    opt->step = (int64_t)step;
    return MG_OK;
}

/* The value of a float32 tensor of one element (the dynamic scaler's scale). */
static mg_status scale_value(const char *path, const mg_pk_obj *x, float *v)
{
    const mg_pk_tensor *t = x && x->kind == MG_PK_TENSOR ? x->tensor : NULL;
    MG_RETURN_IF(!t || t->dtype != MG_TD_F32 || mg_pk_tensor_numel(t) != 1 || !t->data ||
                     t->offset < 0 || t->offset >= t->storage_numel,
                 MG_ERR_FORMAT, "%s: optimizer grad_scaler 'scale' is not a float32 tensor of "
                 "one element", path);
    memcpy(v, t->data + (size_t)t->offset * sizeof(float), sizeof(float));
    return MG_OK;
}

/* Megatron's 'grad_scaler' of the optimizer dict od into *s (see put_grad_scaler). */
static mg_status read_grad_scaler(const char *path, const mg_pk_obj *od, mg_grad_scaler *s)
{
    memset(s, 0, sizeof *s);
    s->kind = MG_SCALER_NONE;
    const mg_pk_obj *d = od ? mg_pk_get(od, "grad_scaler") : NULL;
    if (!d || d->kind == MG_PK_NONE) return MG_OK;
    MG_RETURN_IF(d->kind != MG_PK_DICT && d->kind != MG_PK_ODICT, MG_ERR_FORMAT,
                 "%s: optimizer grad_scaler is a %s, not a dict", path, mg_pk_kind_name(d->kind));
    s->kind = MG_SCALER_CONSTANT;
    const mg_pk_obj *scale = mg_pk_get(d, "scale");
    if (!scale) return MG_OK;
    const mg_pk_obj *gt = mg_pk_get(d, "growth_tracker"), *ht = mg_pk_get(d, "hysteresis_tracker");
    MG_RETURN_IF(!gt || gt->kind != MG_PK_INT || !ht || ht->kind != MG_PK_INT, MG_ERR_FORMAT,
                 "%s: optimizer grad_scaler without integer growth_tracker and "
                 "hysteresis_tracker", path);
    MG_FORWARD(scale_value(path, scale, &s->scale));
    s->kind = MG_SCALER_DYNAMIC;
    s->growth_tracker = gt->i;
    s->hysteresis_tracker = ht->i;
    return MG_OK;
}

/* torch.optim.AdamW's state_dict d ({'state', 'param_groups'}) into opt's moments and step
 * count, in the optimizer's parameter order of names. */
static mg_status load_adamw(const char *path, const mg_gpt *g, mg_gpt_optim *opt,
                            const mg_pk_obj *d, const mg_tname *names)
{
    const mg_pk_obj *state = mg_pk_get(d, "state");
    MG_RETURN_IF(!state || state->kind != MG_PK_DICT, MG_ERR_FORMAT,
                 "%s: no optimizer state (pass --no-load-optim or --finetune to start a new "
                 "optimizer)", path);
    MG_FORWARD(check_group_keys(path, mg_pk_get(d, "param_groups")));
    size_t *order = mg_calloc(g->nt ? g->nt : 1, sizeof *order);
    if (!order) return MG_ERR_NOMEM;
    mg_train_ckpt_param_order(g, names, order);
    mg_status s = MG_OK;
    double step = -1;
    for (size_t i = 0; s == MG_OK && i < g->nt; i++) {
        const mg_gpt_tensor *t = &g->t[order[i]];
        const char *name = names[order[i]];
        const mg_pk_obj *e = mg_pk_get_index(state, (int64_t)i);
        if (!e || (e->kind != MG_PK_DICT && e->kind != MG_PK_ODICT)) {
            s = mg_error_set(MG_ERR_FORMAT, "%s: optimizer state of '%s' (index %zu) is missing",
                             path, name, i);
            break;
        }
        s = copy_tensor(path, "optimizer exp_avg of", t, name, mg_pk_get(e, "exp_avg"), opt->m);
        if (s == MG_OK)
            s = copy_tensor(path, "optimizer exp_avg_sq of", t, name, mg_pk_get(e, "exp_avg_sq"),
                            opt->v);
        if (s == MG_OK) step = mg_pk_number(mg_pk_get(e, "step"));
    }
    free(order);
    MG_FORWARD(s);
    MG_RETURN_IF(g->nt && step < 0, MG_ERR_FORMAT, "%s: optimizer step count missing", path);
    opt->step = (int64_t)step;
    return MG_OK;
}

/* fp32_from_fp16_params (build_masters' layout) into g->params. */
static mg_status load_masters(const char *path, mg_gpt *g, const mg_pk_obj *masters,
                              const mg_tname *names)
{
    MG_RETURN_IF(masters->kind != MG_PK_LIST || masters->n != 2, MG_ERR_FORMAT,
                 "%s: optimizer fp32_from_fp16_params is not a list of two param groups "
                 "(decay, no-decay)", path);
    size_t *order = mg_calloc(g->nt ? g->nt : 1, sizeof *order);
    if (!order) return MG_ERR_NOMEM;
    size_t ndecay = mg_train_ckpt_param_order(g, names, order);
    const size_t bounds[3] = {0, ndecay, g->nt};
    mg_status s = MG_OK;
    for (size_t k = 0; s == MG_OK && k < 2; k++) {
        const mg_pk_obj *grp = masters->items[k];
        size_t want = bounds[k + 1] - bounds[k];
        if (grp->kind != MG_PK_LIST || grp->n != want) {
            s = mg_error_set(MG_ERR_FORMAT, "%s: optimizer fp32_from_fp16_params group %zu "
                             "holds %zu tensors, the model's has %zu", path, k,
                             grp->kind == MG_PK_LIST ? grp->n : 0, want);
            break;
        }
        for (size_t i = 0; s == MG_OK && i < want; i++) {
            size_t at = order[bounds[k] + i];
            s = copy_tensor(path, "optimizer fp32_from_fp16_params master of", &g->t[at],
                            names[at], grp->items[i], g->params);
        }
    }
    free(order);
    return s;
}

/* Float16OptimizerWithFloat16Params.state_dict() (build_optim): the moments from its
 * 'optimizer', the fp32 masters (replacing the 16-bit model tensors' values). */
static mg_status load_mixed_optim(const char *path, mg_gpt *g, mg_gpt_optim *opt,
                                  const mg_pk_obj *od, const mg_pk_obj *masters,
                                  const mg_tname *names)
{
    const mg_pk_obj *inner = mg_pk_get(od, "optimizer");
    MG_RETURN_IF(!inner || (inner->kind != MG_PK_DICT && inner->kind != MG_PK_ODICT),
                 MG_ERR_FORMAT, "%s: the mixed-precision optimizer state (fp32_from_fp16_params) "
                 "has no 'optimizer' dict", path);
    MG_FORWARD(load_adamw(path, g, opt, inner, names));
    return load_masters(path, g, masters, names);
}

int mg_train_ckpt_optim_is_mixed(const mg_pk_obj *od)
{
    return od && (od->kind == MG_PK_DICT || od->kind == MG_PK_ODICT) &&
           mg_pk_get(od, "fp32_from_fp16_params") != NULL;
}

/* A True bool args.NAME. */
static int arg_true(const mg_pk_obj *args, const char *name)
{
    const mg_pk_obj *x = args ? mg_pk_get(args, name) : NULL;
    return x && x->kind == MG_PK_BOOL && x->i;
}

/* half: the file's model tensors are a --bf16/--fp16 run's 16-bit weights (args.bf16 or
 * args.fp16), so the fp32 masters are only in the optimizer state. */
static mg_status load_optim(const char *path, mg_gpt *g, mg_gpt_optim *opt, const mg_pk_obj *od,
                            const mg_tname *names, mg_names nm, int half,
                            mg_grad_scaler *scaler)
{
    MG_RETURN_IF(od && od->kind == MG_PK_LIST, MG_ERR_UNSUPPORTED,
                 "not supported yet: %s: the state of several chained optimizers "
                 "(megatron-core's ChainedOptimizer: virtual pipeline or expert parameters)",
                 path);
    if (od && (od->kind == MG_PK_DICT || od->kind == MG_PK_ODICT))
        MG_FORWARD(read_grad_scaler(path, od, scaler));
    if (mg_train_ckpt_optim_is_mixed(od))
        return load_mixed_optim(path, g, opt, od, mg_pk_get(od, "fp32_from_fp16_params"), names);
    /* megatron-core's DistributedOptimizer.state_dict(), alone (megatron-core's file) or
     * beside torch's full moments (mg-train's: without distrib_optim.pt the moments load
     * from 'state', but a 16-bit run's masters are in distrib_optim.pt only) */
    const mg_pk_obj *state = od ? mg_pk_get(od, "state") : NULL;
    const mg_pk_obj *inner = od && (!state || half) ? mg_pk_get(od, "optimizer") : NULL;
    if (inner && (inner->kind == MG_PK_DICT || inner->kind == MG_PK_ODICT) &&
        !mg_pk_get(inner, "state"))
        return load_dist_optim(path, g, opt, inner, nm);
    MG_RETURN_IF(!od || (od->kind != MG_PK_DICT && od->kind != MG_PK_ODICT), MG_ERR_FORMAT,
                 "%s: no optimizer state (pass --no-load-optim or --finetune to start a new "
                 "optimizer)", path);
    return load_adamw(path, g, opt, od, names);
}

static int64_t int_of(const mg_pk_obj *x, int64_t dflt)
{
    return x && x->kind == MG_PK_INT ? x->i : dflt;
}

/* args' integers keys[i] (where present) must equal mine[i]. */
static mg_status check_ints(const char *path, const mg_pk_obj *args, const char *const *keys,
                            const int64_t *mine, size_t n)
{
    MG_RETURN_IF(!args || args->kind != MG_PK_NAMESPACE, MG_ERR_FORMAT,
                 "%s: no 'args' Namespace", path);
    for (size_t i = 0; i < n; i++) {
        const mg_pk_obj *v = mg_pk_get(args, keys[i]);
        if (!v || v->kind != MG_PK_INT || mine[i] <= 0) continue;
        MG_RETURN_IF(v->i != mine[i], MG_ERR_FORMAT,
                     "%s: the checkpoint has %s %lld, the model %lld", path, keys[i],
                     (long long)v->i, (long long)mine[i]);
    }
    return MG_OK;
}

/* The parallel layout (Megatron's check_checkpoint_args), before the tensors whose shapes
 * it changes, so that a mismatch is named as such. */
static mg_status check_layout_args(const char *path, const mg_gpt *g, const mg_pk_obj *args)
{
    static const char *const keys[] = {"tensor_model_parallel_size",
                                       "pipeline_model_parallel_size"};
    const int64_t mine[] = {g->m.tp, g->m.pp};
    return check_ints(path, args, keys, mine, 2);
}

/* The model arguments the tensors' shapes do not pin down (heads, groups) and the rest. */
static mg_status check_args(const char *path, const mg_gpt *g, const mg_pk_obj *args)
{
    static const char *const keys[] = {"num_layers", "hidden_size", "num_attention_heads",
                                       "num_query_groups", "kv_channels", "ffn_hidden_size",
                                       "padded_vocab_size"};
    const mg_model_desc *m = &g->m;
    const int64_t mine[] = {m->num_layers, m->hidden_size, m->num_attention_heads,
                            m->num_query_groups, m->kv_channels, m->ffn_hidden_size,
                            m->padded_vocab_size};
    return check_ints(path, args, keys, mine, sizeof mine / sizeof *mine);
}

/* The scheduler's num_steps (samples), or -1 where the file has none. */
static double sched_num_steps(const mg_pk_obj *sched)
{
    if (!sched || (sched->kind != MG_PK_DICT && sched->kind != MG_PK_ODICT)) return -1;
    return mg_pk_number(mg_pk_get(sched, "num_steps"));
}

static mg_status load_state(const char *path, const mg_pk_obj *root, int release, mg_gpt *g,
                            mg_gpt_optim *opt, mg_train_ckpt_state *st, const mg_tname *names,
                            mg_names nm)
{
    const mg_pk_obj *args = mg_pk_get(root, "args");
    MG_FORWARD(check_layout_args(path, g, args));
    MG_FORWARD(load_model(path, g, mg_pk_get(root, "model"), names));
    MG_FORWARD(check_args(path, g, args));
    st->iteration = release ? 0 : int_of(mg_pk_get(root, "iteration"), 0);
    st->consumed_train_samples = int_of(args ? mg_pk_get(args, "consumed_train_samples") : NULL, 0);
    st->consumed_valid_samples = int_of(args ? mg_pk_get(args, "consumed_valid_samples") : NULL, 0);
    double f = mg_pk_number(mg_pk_get(root, "num_floating_point_operations_so_far"));
    st->flops_so_far = f > 0 ? f : 0;
    if (opt)
        MG_FORWARD(load_optim(path, g, opt, mg_pk_get(root, "optimizer"), names, nm,
                              arg_true(args, "bf16") || arg_true(args, "fp16"), &st->scaler));
    double num_steps = sched_num_steps(mg_pk_get(root, "opt_param_scheduler"));
    if (num_steps >= 0) st->sched_behind = st->consumed_train_samples - (int64_t)num_steps;
    st->optim_loaded = opt != NULL;
    return MG_OK;
}

/* Reads the model (and optimizer) under the file's naming: the optimizer state follows the
 * parameter order of that naming's spec. */
mg_status mg_train_ckpt_load_root(const char *path, const mg_pk_obj *root, int release,
                                  mg_gpt *g, mg_gpt_optim *opt, mg_train_ckpt_state *st)
{
    MG_RETURN_IF(root->kind != MG_PK_DICT && root->kind != MG_PK_ODICT, MG_ERR_FORMAT,
                 "%s: the pickled object is a %s, not a dict", path, mg_pk_kind_name(root->kind));
    const mg_pk_obj *model = mg_pk_get(root, "model");
    MG_RETURN_IF(!model || (model->kind != MG_PK_DICT && model->kind != MG_PK_ODICT),
                 MG_ERR_FORMAT, "%s: no 'model' state dict", path);
    mg_tname *te = mg_gpt_names(g, MG_NAMES_TE), *local = mg_gpt_names(g, MG_NAMES_LOCAL);
    mg_status s = MG_ERR_NOMEM;
    if (te && local) {
        int is_local = file_naming(model, te, local, g->nt) == MG_NAMES_LOCAL;
        s = load_state(path, root, release, g, opt, st, is_local ? local : te,
                       is_local ? MG_NAMES_LOCAL : MG_NAMES_TE);
    }
    free(te);
    free(local);
    return s;
}

mg_status mg_train_ckpt_load(const char *dir, mg_gpt *g, mg_gpt_optim *opt,
                             mg_train_ckpt_state *st)
{
    const mg_train_ckpt_shard one = {0, 0, 1};
    return mg_train_ckpt_load_shard(dir, -1, &one, g, opt, st);
}

mg_status mg_train_ckpt_load_shard(const char *dir, int64_t step, const mg_train_ckpt_shard *sh,
                                   mg_gpt *g, mg_gpt_optim *opt, mg_train_ckpt_state *st)
{
    mg_megatron_iter it;
    char path[MG_PATH_MAX], rel[MG_PATH_MAX], name[MG_MEGATRON_NAME_MAX];
    memset(st, 0, sizeof *st);
    MG_FORWARD(mg_train_ckpt_iter(dir, step, &it));
    mg_megatron_iter_name(&it, name);
    int release = it.release;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    if (mg_mcore_dist_is(path)) { /* as Megatron tells the formats apart */
        return mg_train_ckpt_load_dist(path, release, g, release ? NULL : opt, st);
    }
    MG_FORWARD(mg_megatron_rank_file(&it, sh->tp_rank, sh->pp_rank, sh->pp > 1, rel, sizeof rel));
    MG_RETURN_IF((size_t)snprintf(path, sizeof path, "%s/%s", dir, rel) >= sizeof path,
                 MG_ERR_LIMIT, "--load: %s/%s: path too long", dir, rel);
    mg_torch_file *f = NULL;
    MG_FORWARD(mg_torch_open(&f, path));
    mg_status s = mg_train_ckpt_load_root(path, mg_torch_root(f), release, g,
                                          release ? NULL : opt, st);
    mg_torch_close(f);
    return s;
}

/* step.c — step.h: gradient accumulation, global norm + clipping, AdamW.
 *
 * Contract (step.h). The per-tensor sums of squares are added in tensor order in double,
 * so the norm does not depend on the thread count; the collectives (comm.h) come after all
 * the micro-batches: the model-parallel partial gradients (grad_sync.h), gradients over the
 * data-parallel group (with sched->buckets: both bucket by bucket, grad_buckets.h), the
 * loss over the data-parallel group and from the last stage, then the norm's sum of squares
 * over the model-parallel group.
 */
#include "step.h"

#include <math.h>
#include <stdlib.h>

#include "grad_buckets.h"
#include "grad_sync.h"

mg_status mg_gpt_optim_create_on(mg_gpt_optim **out, const mg_gpt *g, mgk_backend mem)
{
    *out = NULL;
    mg_gpt_optim *o = mg_calloc(1, sizeof(*o));
    if (!o) return MG_ERR_NOMEM;
    o->numel = g->numel;
    o->mem = mem;
    o->m = mgk_alloc(mem, 2 * (size_t)g->numel * sizeof(float));
    if (!o->m) {
        mg_gpt_optim_free(o);
        return MG_ERR_NOMEM;
    }
    o->v = o->m + g->numel;
    *out = o;
    return MG_OK;
}

mg_status mg_gpt_optim_create(mg_gpt_optim **out, const mg_gpt *g)
{
    return mg_gpt_optim_create_on(out, g, MGK_CPU_FAST);
}

void mg_gpt_optim_free(mg_gpt_optim *o)
{
    if (!o) return;
    mgk_free(o->mem, o->m);
    free(o);
}

void mg_step_hp_at(const mg_train_opts *opts, int64_t iteration, mg_step_hp *hp)
{
    mg_step_hp_of(opts, (double)(iteration - 1) * (double)opts->global_batch_size, hp);
}

void mg_step_hp_of(const mg_train_opts *opts, double samples, mg_step_hp *hp)
{
    hp->lr = mg_lr_at(&opts->sched, samples);
    hp->weight_decay = mg_wd_at(&opts->sched, samples);
    hp->beta1 = opts->adam_beta1;
    hp->beta2 = opts->adam_beta2;
    hp->eps = opts->adam_eps;
    hp->clip_grad = opts->clip_grad;
    hp->loss_scale = 1.0;
}

void mg_unscale_grads(const mg_kctx *k, float *grads, int64_t n, double loss_scale)
{
    float inv = (float)(1.0 / loss_scale);
    if (inv != 1.0f) mgk_scale(k, grads, n, inv);
}

mg_status mg_gpt_grad_norm(const mg_gpt *g, const mg_kctx *k, mg_comm *comm, double *norm)
{
    double s = 0;
    for (size_t i = 0; i < g->nt; i++)
        if (mg_gpt_tensor_in_norm(g, &g->t[i]))
            s += mgk_sumsq(k, g->grads + g->t[i].offset, g->t[i].numel);
    MG_FORWARD(mg_comm_allreduce_sum_f64(mg_comm_group(comm, MG_COMM_MODEL), &s, 1));
    *norm = sqrt(s);
    return MG_OK;
}

/* Data-parallel gradient average as megatron-core's DDP (average_in_collective False):
 * each replica scales by 1 / DP, then the replicas are summed. */
static mg_status reduce_grads(mg_gpt *g, const mg_kctx *k, mg_comm *comm)
{
    mg_comm *dp = mg_comm_group(comm, MG_COMM_DATA);
    if (mg_comm_size(dp) > 1) mgk_scale(k, g->grads, g->numel, 1.0f / (float)mg_comm_size(dp));
    return mg_comm_allreduce_sum_f32(dp, g->grads, g->numel);
}

static void adamw_all(mg_gpt *g, mg_gpt_optim *o, const mg_kctx *k, const mg_step_hp *hp,
                      double scale)
{
    mgk_adamw_hp a = {hp->lr, hp->beta1, hp->beta2, hp->eps, hp->weight_decay, o->step, scale};
    for (size_t i = 0; i < g->nt; i++) {
        const mg_gpt_tensor *t = &g->t[i];
        if (g->params16) /* --bf16/--fp16: the fp32 masters, then their 16-bit copy */
            mgk_adamw_h16(k, g->params + t->offset, g->params16 + t->offset, o->m + t->offset,
                          o->v + t->offset, g->grads + t->offset, t->numel, &a, t->decay);
        else
            mgk_adamw(k, g->params + t->offset, o->m + t->offset, o->v + t->offset,
                      g->grads + t->offset, t->numel, &a, t->decay);
    }
}

mg_status mg_gpt_train_step(mg_gpt *g, mg_gpt_optim *o, mg_gpt_acts *a, const mg_kctx *k,
                            const mg_gpt_batch *micro, int64_t nmicro, const mg_step_hp *hp,
                            mg_step_result *res)
{
    mg_comm *comm = NULL;
    MG_FORWARD(mg_comm_create_single(&comm));
    mg_sched sched = {&a, 1, 0, NULL};
    mg_status st = mg_gpt_train_step_comm(g, o, &sched, k, comm, micro, nmicro, hp, res);
    mg_comm_free(comm);
    return st;
}

double mg_clip_coeff(double clip_grad, double grad_norm)
{
    double coeff = clip_grad > 0 ? clip_grad / (grad_norm + 1.0e-6) : 1.0;
    return coeff < 1.0 ? coeff : 1.0;
}

/* Megatron's lm loss: summed over the data-parallel replicas on the last stage, then
 * broadcast from it to the other stages. */
static mg_status reduce_loss(mg_comm *comm, double lsum[2])
{
    mg_comm *pp = mg_comm_group(comm, MG_COMM_PIPELINE);
    MG_FORWARD(mg_comm_allreduce_sum_f64(mg_comm_group(comm, MG_COMM_DATA), lsum, 2));
    return mg_comm_broadcast(pp, lsum, 2 * (int64_t)sizeof(double), mg_comm_size(pp) - 1);
}

mg_status mg_gpt_accumulate(mg_gpt *g, const mg_sched *sched, const mg_kctx *k, mg_comm *comm,
                            const mg_gpt_batch *micro, int64_t nmicro, double loss_scale,
                            double *loss)
{
    MG_RETURN_IF(nmicro < 1, MG_ERR_ARG, "train step: no micro-batch");
    double lsum[2] = {0, 0}; /* masked token loss sum, token count (last stage) */
    mgk_zero(k, g->grads, g->numel);
    if (sched->buckets) mg_grad_buckets_begin(sched->buckets, g, k);
    MG_FORWARD(mg_sched_train(g, k, comm, sched, micro, nmicro, loss_scale / (double)nmicro,
                              lsum));
    if (sched->buckets) MG_FORWARD(mg_grad_buckets_finish(sched->buckets));
    else MG_FORWARD(mg_gpt_sync_grads(g, comm, sched->sequence_parallel));
    MG_FORWARD(reduce_loss(comm, lsum));
    *loss = lsum[1] > 0 ? lsum[0] / lsum[1] : 0.0;
    return MG_OK;
}

mg_status mg_gpt_train_step_comm(mg_gpt *g, mg_gpt_optim *o, const mg_sched *sched,
                                 const mg_kctx *k, mg_comm *comm, const mg_gpt_batch *micro,
                                 int64_t nmicro, const mg_step_hp *hp, mg_step_result *res)
{
    MG_RETURN_IF(o->numel != g->numel, MG_ERR_ARG, "train step: optimizer of another model");
    MG_FORWARD(mg_gpt_accumulate(g, sched, k, comm, micro, nmicro, hp->loss_scale, &res->loss));
    if (!sched->buckets) MG_FORWARD(reduce_grads(g, k, comm)); /* else reduced by bucket */
    mg_unscale_grads(k, g->grads, g->numel, hp->loss_scale);
    MG_FORWARD(mg_gpt_grad_norm(g, k, comm, &res->grad_norm));
    res->skipped = !isfinite(res->grad_norm);
    if (res->skipped) return MG_OK;
    o->step++;
    adamw_all(g, o, k, hp, mg_clip_coeff(hp->clip_grad, res->grad_norm));
    return MG_OK;
}

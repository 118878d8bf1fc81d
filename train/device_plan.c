/* device_plan.c — device_plan.h: the device memory of one --device cuda process. */
#include "device_plan.h"

#include <string.h>

#include "acts_plan.h"
#include "dist_optim.h"
#include "grad_buckets.h"
#include "kernels.h"
#include "mg/schema.h"
#include "model.h"
#include "schedule.h"

/* The arenas as forward.c plans them on the CUDA backend (only its backend field is read),
 * with the run's sequence parallelism and recomputation. */
static mg_status plan_acts(const mg_train_opts *o, const mg_gpt *g, int64_t stage,
                           mg_device_plan *p)
{
    mg_kctx k;
    memset(&k, 0, sizeof k);
    k.backend = MGK_CUDA;
    int64_t B = o->micro_batch_size, T = o->model.seq_length, tp = o->model.tp;
    mgk_attn_dims ad = {B, T, g->m.num_attention_heads / tp, g->m.num_query_groups / tp,
                        g->m.kv_channels, 1.0f};
    mg_gpt_par par = mg_train_model_par(o, NULL);
    p->arena = mg_gpt_acts_plan_bytes_par(g, &k, B, T, o->bf16 || o->fp16, &par);
    int64_t nmicro = o->global_batch_size / (o->micro_batch_size * o->data_parallel_size);
    p->nslots = mg_sched_slots(o->model.pp, stage, nmicro);
    p->inputs = nmicro * 5 * B * T * 4; /* device.c: ids, targets, pos, seg, mask */
    p->workspaces = mgk_ctx_device_bytes(MGK_CUDA) + 4 * mgk_attn_scratch_numel(&k, &ad);
    return MG_OK;
}

/* The part of the model of tensor rank tp_rank on pipeline stage `stage` (loop.c's). */
static mg_status layout_at(const mg_model_desc *m, int64_t tp_rank, int64_t stage,
                           mg_gpt_layout *lay)
{
    MG_RETURN_IF(tp_rank < 0 || tp_rank >= m->tp || stage < 0 || stage >= m->pp, MG_ERR_ARG,
                 "device plan: tensor rank %lld of %lld, stage %lld of %lld",
                 (long long)tp_rank, (long long)m->tp, (long long)stage, (long long)m->pp);
    *lay = mg_gpt_layout_full(m);
    lay->tp = m->tp;
    lay->tp_rank = tp_rank;
    lay->first_stage = stage == 0;
    lay->last_stage = stage == m->pp - 1;
    return mg_schema_pp_layers(m->num_layers, m->pp, m->pp_first, m->pp_last, stage,
                               &lay->layer_first, &lay->layers);
}

/* The distributed optimizer's state (dist_optim.h): the moments of the shard, the packed
 * buffer, the reduced gradients of the shard and with --bf16 / --fp16 the 16-bit parameter
 * buffer. */
static mg_status plan_dist(const mg_train_opts *o, const mg_gpt *g, mg_device_plan *p)
{
    mg_dist_layout l;
    MG_FORWARD(mg_dist_layout_build(&l, g, o->data_parallel_size,
                                    o->local_spec ? MG_NAMES_LOCAL : MG_NAMES_TE));
    int64_t shard = l.numel / l.dp;
    p->moments = 2 * (shard ? shard : 1) * 4;
    p->dist_buffers = ((l.numel ? l.numel : 1) + (shard ? shard : 1)) * 4;
    if (o->bf16 || o->fp16) p->dist_buffers += (l.numel ? l.numel : 1) * 2;
    mg_dist_layout_free(&l);
    return MG_OK;
}

/* --overlap-grad-reduce with plain data parallelism: grad_buckets.c's staging buffer. */
static mg_status plan_buckets(const mg_train_opts *o, const mg_gpt *g, mg_device_plan *p)
{
    mg_dist_layout l;
    MG_FORWARD(mg_grad_layout_build(&l, g, o->data_parallel_size,
                                    o->local_spec ? MG_NAMES_LOCAL : MG_NAMES_TE, 0));
    p->bucket_buffer = (l.numel + 1) * 4;
    mg_dist_layout_free(&l);
    return MG_OK;
}

mg_status mg_device_plan_of(const mg_train_opts *o, int64_t tp_rank, int64_t stage,
                            mg_device_plan *p)
{
    memset(p, 0, sizeof *p);
    MG_RETURN_IF(mgk_cuda_built() == MGK_CUDA_NONE, MG_ERR_UNSUPPORTED,
                 "this mg-train was built without CUDA: no device plan");
    mg_gpt *g = NULL;
    mg_gpt_layout lay;
    MG_FORWARD(layout_at(&o->model, tp_rank, stage, &lay));
    MG_FORWARD(mg_gpt_create_views(&g, &o->model, &lay));
    g->opt.ddp_bucket_size = mg_ddp_bucket_size(o, stage);
    int64_t numel = g->numel;
    p->params = p->grads = numel * 4;
    p->params16 = o->bf16 || o->fp16 ? numel * 2 : 0;
    p->moments = 2 * numel * 4;
    mg_status st = o->use_distributed_optimizer ? plan_dist(o, g, p)
                   : o->overlap_grad_reduce ? plan_buckets(o, g, p) : MG_OK;
    if (st == MG_OK) st = plan_acts(o, g, stage, p);
    mg_gpt_free(g);
    MG_FORWARD(st);
    p->allocated = p->params + p->grads + p->params16 + p->moments + p->dist_buffers +
                   p->bucket_buffer + p->nslots * p->arena + p->inputs;
    p->total = p->allocated + p->workspaces;
    return MG_OK;
}

/* device_plan.c — device_plan.h: the device memory of a single-process --device cuda run. */
#include "device_plan.h"

#include <string.h>

#include "acts_plan.h"
#include "kernels.h"
#include "model.h"
#include "schedule.h"

/* The arenas as forward.c plans them on the CUDA backend (only its backend field is read),
 * with the run's recomputation. */
static mg_status plan_acts(const mg_train_opts *o, const mg_gpt *g, mg_device_plan *p)
{
    mg_kctx k;
    memset(&k, 0, sizeof k);
    k.backend = MGK_CUDA;
    int64_t B = o->micro_batch_size, T = o->model.seq_length;
    mgk_attn_dims ad = {B, T, g->m.num_attention_heads, g->m.num_query_groups,
                        g->m.kv_channels, 1.0f};
    mg_gpt_par par = mg_train_model_par(o, NULL);
    p->arena = mg_gpt_acts_plan_bytes_par(g, &k, B, T, o->bf16, &par);
    int64_t nmicro = o->global_batch_size / o->micro_batch_size;
    p->nslots = mg_sched_slots(1, 0, nmicro);
    p->inputs = nmicro * 5 * B * T * 4; /* device.c: ids, targets, pos, seg, mask */
    p->workspaces = mgk_ctx_device_bytes(MGK_CUDA) + 4 * mgk_attn_scratch_numel(&k, &ad);
    return MG_OK;
}

mg_status mg_device_plan_of(const mg_train_opts *o, mg_device_plan *p)
{
    memset(p, 0, sizeof *p);
    MG_RETURN_IF(mgk_cuda_built() == MGK_CUDA_NONE, MG_ERR_UNSUPPORTED,
                 "this mg-train was built without CUDA: no device plan");
    MG_RETURN_IF(o->model.tp != 1 || o->model.pp != 1 || o->data_parallel_size != 1,
                 MG_ERR_UNSUPPORTED, "not supported yet: --device cuda with several processes "
                 "(the device plan is for one)");
    mg_gpt *g = NULL;
    mg_gpt_layout lay = mg_gpt_layout_full(&o->model);
    MG_FORWARD(mg_gpt_create_views(&g, &o->model, &lay));
    int64_t numel = g->numel;
    p->params = p->grads = numel * 4;
    p->params16 = o->bf16 ? numel * 2 : 0;
    p->moments = 2 * numel * 4;
    mg_status st = plan_acts(o, g, p);
    mg_gpt_free(g);
    MG_FORWARD(st);
    p->allocated = p->params + p->grads + p->params16 + p->moments + p->nslots * p->arena +
                   p->inputs;
    p->total = p->allocated + p->workspaces;
    return MG_OK;
}

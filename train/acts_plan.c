/* acts_plan.c — acts_plan.h: the model's arena settings from the options and their plan. */
#include "acts_plan.h"

#include <string.h>

#include "mg/schema.h"
#include "schedule.h"

mg_gpt_par mg_train_model_par(const mg_train_opts *o, struct mg_comm *tp)
{
    mg_gpt_par par;
    memset(&par, 0, sizeof par);
    par.tp = tp;
    par.sequence_parallel = o->sequence_parallel;
    par.recompute_attention = o->recompute_granularity == MG_RC_SELECTIVE;
    if (o->recompute_granularity == MG_RC_FULL) {
        par.recompute = o->recompute_method == MG_RC_BLOCK ? MG_RECOMPUTE_BLOCK
                                                           : MG_RECOMPUTE_UNIFORM;
        par.recompute_layers = o->recompute_num_layers;
    }
    return par;
}

mg_status mg_train_acts_plan(const mg_train_opts *o, mgk_backend backend, int64_t stage,
                             int recompute, mg_acts_stage_plan *p)
{
    const mg_model_desc *m = &o->model;
    mg_gpt_layout lay = {m->tp, 0, 0, 0, stage == 0, stage == m->pp - 1};
    MG_FORWARD(mg_schema_pp_layers(m->num_layers, m->pp, m->pp_first, m->pp_last, stage,
                                   &lay.layer_first, &lay.layers));
    mg_gpt *g = NULL;
    MG_FORWARD(mg_gpt_create_views(&g, m, &lay));
    mg_kctx k;
    memset(&k, 0, sizeof k);
    k.backend = backend;
    mg_gpt_par par = mg_train_model_par(o, NULL);
    if (!recompute) {
        par.recompute = MG_RECOMPUTE_NONE;
        par.recompute_attention = 0;
    }
    int64_t nmicro = o->global_batch_size / (o->micro_batch_size * o->data_parallel_size);
    p->layers = lay.layers;
    p->arena = mg_gpt_acts_plan_bytes_par(g, &k, o->micro_batch_size, m->seq_length,
                                          o->bf16 || o->fp16, &par);
    p->nslots = mg_sched_slots(m->pp, stage, nmicro);
    mg_gpt_free(g);
    return MG_OK;
}

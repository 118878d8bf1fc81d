/* grad_sync.c — grad_sync.h: sequence-parallel and tied-embedding gradient sums. */
#include "grad_sync.h"

#include <string.h>

/* sel: NULL or one flag per tensor (0: leave it). */
static int selected(const mg_gpt *g, const mg_gpt_tensor *t, const unsigned char *sel)
{
    return !sel || sel[t - g->t];
}

static mg_status sync_sp(mg_gpt *g, mg_comm *tp, const unsigned char *sel)
{
    for (size_t i = 0; i < g->nt; i++) {
        const mg_gpt_tensor *t = &g->t[i];
        if (mg_gpt_tensor_sp_reduced(t) && selected(g, t, sel))
            MG_FORWARD(mg_comm_allreduce_sum_f32(tp, g->grads + t->offset, t->numel));
    }
    return MG_OK;
}

/* The stage's share of the tied weight: the embeddings (first) or their copy (last). */
static const mg_gpt_tensor *tied_tensor(const mg_gpt *g)
{
    for (size_t i = 0; i < g->nt; i++) {
        const mg_gpt_tensor *t = &g->t[i];
        if (t->tied_copy || (g->lay.first_stage &&
                             strcmp(t->param.spec->key, "word_embeddings.weight") == 0))
            return t;
    }
    return NULL;
}

const mg_gpt_tensor *mg_gpt_tied_synced(const mg_gpt *g, mg_comm *world)
{
    mg_comm *pp = mg_comm_group(world, MG_COMM_PIPELINE);
    if (!g->m.tied_embeddings || mg_comm_size(pp) == 1) return NULL;
    if (!g->lay.first_stage && !g->lay.last_stage) return NULL;
    const mg_gpt_tensor *t = tied_tensor(g);
    MG_ASSERT(t != NULL);
    return t;
}

static mg_status sync_tied(mg_gpt *g, mg_comm *world, const unsigned char *sel)
{
    const mg_gpt_tensor *t = mg_gpt_tied_synced(g, world);
    if (!t || !selected(g, t, sel)) return MG_OK;
    return mg_comm_allreduce_sum_f32(mg_comm_group(world, MG_COMM_EMBEDDING),
                                     g->grads + t->offset, t->numel);
}

mg_status mg_gpt_sync_grads_of(mg_gpt *g, mg_comm *world, int sequence_parallel,
                               const unsigned char *sel)
{
    if (sequence_parallel && g->lay.tp > 1)
        MG_FORWARD(sync_sp(g, mg_comm_group(world, MG_COMM_TENSOR), sel));
    return sync_tied(g, world, sel);
}

mg_status mg_gpt_sync_grads(mg_gpt *g, mg_comm *world, int sequence_parallel)
{
    return mg_gpt_sync_grads_of(g, world, sequence_parallel, NULL);
}

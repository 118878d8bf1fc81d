/* grad_sync.c — grad_sync.h: sequence-parallel and tied-embedding gradient sums. */
#include "grad_sync.h"

#include <stdlib.h>
#include <string.h>

static mg_status sync_sp(mg_gpt *g, mg_comm *tp)
{
    for (size_t i = 0; i < g->nt; i++) {
        const mg_gpt_tensor *t = &g->t[i];
        if (mg_gpt_tensor_sp_reduced(t))
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

static mg_status sync_tied(mg_gpt *g, const mg_kctx *k, mg_comm *pp)
{
    int64_t P = mg_comm_size(pp), stage = mg_comm_rank(pp);
    if (!g->m.tied_embeddings || P == 1 || (stage != 0 && stage != P - 1)) return MG_OK;
    const mg_gpt_tensor *t = tied_tensor(g);
    MG_ASSERT(t != NULL);
    float *mine = g->grads + t->offset, *other = mg_malloc((size_t)t->numel * sizeof(float));
    if (!other) return MG_ERR_NOMEM;
    int64_t bytes = t->numel * (int64_t)sizeof(float), peer = stage == 0 ? P - 1 : 0;
    mg_status st;
    if (stage == 0) {
        st = mg_comm_send(pp, mine, bytes, peer);
        if (st == MG_OK) st = mg_comm_recv(pp, other, bytes, peer);
    } else {
        st = mg_comm_recv(pp, other, bytes, peer);
        if (st == MG_OK) st = mg_comm_send(pp, mine, bytes, peer);
    }
    if (st == MG_OK) mgk_add(k, mine, mine, other, t->numel); /* a + b == b + a exactly */
    free(other);
    return st;
}

mg_status mg_gpt_sync_grads(mg_gpt *g, const mg_kctx *k, mg_comm *world, int sequence_parallel)
{
    if (sequence_parallel && g->lay.tp > 1)
        MG_FORWARD(sync_sp(g, mg_comm_group(world, MG_COMM_TENSOR)));
    return sync_tied(g, k, mg_comm_group(world, MG_COMM_PIPELINE));
}

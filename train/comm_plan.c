/* comm_plan.c — comm_plan.h: the step's communication from the options. */
#include "comm_plan.h"

#include "dist_optim.h"
#include "model.h"

static void add(mg_comm_plan *p, int64_t group_size, mg_comm_kind g, mg_comm_op op,
                int64_t calls, int64_t bytes, int exact, const char *what)
{
    if (group_size <= 1 || calls == 0 || p->n == MG_COMM_PLAN_MAX) return;
    mg_comm_plan_row r = {g, op, calls, bytes, exact, what};
    p->rows[p->n++] = r;
}

/* Rank 0's model shard: tensor rank 0, the first pipeline stage (layers split evenly). */
static mg_gpt_layout rank0_layout(const mg_model_desc *m)
{
    mg_gpt_layout l = {m->tp, 0, 0, m->num_layers / m->pp, 1, m->pp == 1};
    return l;
}

static mg_status data_parallel(const mg_train_opts *o, const mg_gpt *g, mg_comm_plan *p)
{
    int64_t dp = o->data_parallel_size, mp = o->model.tp * o->model.pp;
    add(p, dp, MG_COMM_DATA, MG_COMM_OP_ALLREDUCE, 1, 16, 1, "lm loss sum and token count");
    if (!o->use_distributed_optimizer) {
        add(p, dp, MG_COMM_DATA, MG_COMM_OP_ALLREDUCE, 1, g->numel * 4, 1,
            "gradients (the whole buffer)");
    } else {
        mg_dist_layout l;
        MG_FORWARD(mg_dist_layout_build(&l, g, dp));
        for (int64_t b = 0; b < l.nbuckets; b++) {
            int64_t bytes = (l.bucket[b + 1] - l.bucket[b]) * 4;
            add(p, dp, MG_COMM_DATA, MG_COMM_OP_REDUCE_SCATTER, 1, bytes, 1,
                "gradients (a bucket of the distributed optimizer's buffer)");
            add(p, dp, MG_COMM_DATA, MG_COMM_OP_ALLGATHER, 1, bytes, 1,
                "parameters (a bucket of the distributed optimizer's buffer)");
        }
        mg_dist_layout_free(&l);
        add(p, dp, MG_COMM_DATA, MG_COMM_OP_ALLREDUCE, 1, 8, 1,
            "gradient norm: sum of squares of the shards");
    }
    add(p, mp, MG_COMM_MODEL, MG_COMM_OP_ALLREDUCE, 1, 8, 1, "gradient norm: sum of squares");
    return MG_OK;
}

static void model_parallel(const mg_train_opts *o, const mg_gpt *g, mg_comm_plan *p)
{
    const mg_model_desc *m = &o->model;
    int64_t nmicro = o->global_batch_size / (o->micro_batch_size * o->data_parallel_size);
    int64_t act = o->micro_batch_size * m->seq_length * m->hidden_size * 4;
    add(p, m->tp, MG_COMM_TENSOR, MG_COMM_OP_ALLREDUCE, 4 * g->lay.layers * nmicro, act, 0,
        "tensor parallelism: 2 forward + 2 backward all-reduces per layer");
    int64_t p2p = act;
    if (!g->lay.last_stage)
        add(p, m->pp, MG_COMM_PIPELINE, MG_COMM_OP_SEND, nmicro, p2p, 0,
            "pipeline: activations to the next stage");
    if (!g->lay.last_stage)
        add(p, m->pp, MG_COMM_PIPELINE, MG_COMM_OP_RECV, nmicro, p2p, 0,
            "pipeline: their gradients back");
    if (m->tied_embeddings && m->pp > 1) {
        const mg_gpt_tensor *e = mg_gpt_find(g, "embedding.word_embeddings.weight");
        add(p, 2, MG_COMM_EMBEDDING, MG_COMM_OP_ALLREDUCE, 1, e ? e->numel * 4 : 0, 0,
            "tied embeddings: the word-embedding gradient, first and last stage");
    }
}

mg_status mg_comm_plan_step(const mg_train_opts *o, mg_comm_plan *p)
{
    p->n = 0;
    mg_gpt_layout lay = rank0_layout(&o->model);
    mg_gpt *g = NULL;
    MG_FORWARD(mg_gpt_create_views(&g, &o->model, &lay));
    model_parallel(o, g, p);
    mg_status st = data_parallel(o, g, p);
    mg_gpt_free(g);
    return st;
}

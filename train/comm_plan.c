/* comm_plan.c — comm_plan.h: the step's communication from the options. */
#include "comm_plan.h"

#include "dist_optim.h"
#include "grad_buckets.h"
#include "mg/schema.h"
#include "model.h"

static void add(mg_comm_plan *p, int64_t group_size, mg_comm_kind g, mg_comm_op op,
                int64_t calls, int64_t bytes, int exact, const char *what)
{
    if (group_size <= 1 || calls == 0 || p->n == MG_COMM_PLAN_MAX) return;
    mg_comm_plan_row r = {g, op, calls, bytes, exact, what};
    p->rows[p->n++] = r;
}

/* Rank 0's model shard: tensor rank 0, the first pipeline stage (Megatron's placement). */
static mg_status rank0_layout(const mg_model_desc *m, mg_gpt_layout *l)
{
    mg_gpt_layout r = {m->tp, 0, 0, 0, 1, m->pp == 1};
    *l = r;
    return mg_schema_pp_layers(m->num_layers, m->pp, m->pp_first, m->pp_last, 0,
                               &l->layer_first, &l->layers);
}

/* Bytes of an activation or parameter value: --bf16 / --fp16 move the activations (the
 * tensor-parallel sums and gathers, the pipeline messages) and the distributed optimizer's
 * parameter all-gather in 16 bits, as Megatron does. */
static int64_t act_bytes(const mg_train_opts *o)
{
    return o->bf16 || o->fp16 ? 2 : 4;
}

/* One row per run of buckets of equal size (b0 .. b1 - 1), elem_bytes a value. */
static void add_buckets(mg_comm_plan *p, int64_t dp, mg_comm_op op, const mg_dist_layout *l,
                        int64_t elem_bytes, const char *what)
{
    for (int64_t b0 = 0, b1; b0 < l->nbuckets; b0 = b1) {
        int64_t n = l->bucket[b0 + 1] - l->bucket[b0];
        for (b1 = b0 + 1; b1 < l->nbuckets && l->bucket[b1 + 1] - l->bucket[b1] == n; b1++) {}
        add(p, dp, MG_COMM_DATA, op, b1 - b0, n * elem_bytes, 1, what);
    }
}

static mg_status data_parallel(const mg_train_opts *o, const mg_gpt *g, mg_comm_plan *p)
{
    int64_t dp = o->data_parallel_size, mp = o->model.tp * o->model.pp;
    int dist = o->use_distributed_optimizer;
    add(p, dp, MG_COMM_DATA, MG_COMM_OP_ALLREDUCE, 1, 16, 1, "lm loss sum and token count");
    if (!dist && !o->overlap_grad_reduce) {
        add(p, dp, MG_COMM_DATA, MG_COMM_OP_ALLREDUCE, 1, g->numel * 4, 1,
            "gradients (the whole buffer)");
    } else {
        mg_dist_layout l;
        MG_FORWARD(mg_grad_layout_build(&l, g, dp, o->local_spec ? MG_NAMES_LOCAL : MG_NAMES_TE,
                                        dist));
        if (!dist)
            add_buckets(p, dp, MG_COMM_OP_ALLREDUCE, &l, 4,
                        "gradients (a bucket of the --overlap-grad-reduce buffer)");
        else {
            add_buckets(p, dp, MG_COMM_OP_REDUCE_SCATTER, &l, 4,
                        "gradients (a bucket of the distributed optimizer's buffer)");
            add_buckets(p, dp, MG_COMM_OP_ALLGATHER, &l, act_bytes(o),
                        "parameters (a bucket of the distributed optimizer's buffer)");
        }
        mg_dist_layout_free(&l);
    }
    if (dist) add(p, dp, MG_COMM_DATA, MG_COMM_OP_ALLREDUCE, 1, 8, 1,
                  "gradient norm: sum of squares of the shards");
    add(p, mp, MG_COMM_MODEL, MG_COMM_OP_ALLREDUCE, 1, 8, 1, "gradient norm: sum of squares");
    return MG_OK;
}

/* Tensor parallelism, as the model passes do it (model.h): per micro-batch and layer the
 * row-parallel outputs' sums and the column-parallel input gradients' sums (all-reduces,
 * or under SP the all-gather before and the reduce-scatter after each TP region, forward
 * and backward); the word embedding's sum (and its gradient's all-gather under SP); on the
 * last stage the output layer's input (gradient) and the cross-entropy's row maxima
 * (all-gather) and sums (all-reduce); under SP the norm and row-parallel bias gradients. */
static void tensor_parallel(const mg_train_opts *o, const mg_gpt *g, int64_t nmicro,
                            mg_comm_plan *p)
{
    const mg_model_desc *m = &o->model;
    int64_t tp = m->tp, N = o->micro_batch_size * m->seq_length;
    int64_t act = N * m->hidden_size * act_bytes(o);
    int64_t layers = g->lay.layers * nmicro, first = g->lay.first_stage * nmicro;
    int64_t last = g->lay.last_stage * nmicro;
    if (!o->sequence_parallel) {
        add(p, tp, MG_COMM_TENSOR, MG_COMM_OP_ALLREDUCE, 4 * layers, act, 1,
            "tensor parallelism: 2 forward + 2 backward all-reduces per layer");
        add(p, tp, MG_COMM_TENSOR, MG_COMM_OP_ALLREDUCE, first + last, act, 1,
            "tensor parallelism: word embedding sum, output layer input gradient");
    } else {
        add(p, tp, MG_COMM_TENSOR, MG_COMM_OP_ALLGATHER, 4 * layers + first + last, act, 1,
            "sequence parallelism: all-gathers (2 forward + 2 backward per layer, embedding "
            "gradient, final norm)");
        add(p, tp, MG_COMM_TENSOR, MG_COMM_OP_REDUCE_SCATTER, 4 * layers + first + last, act, 1,
            "sequence parallelism: reduce-scatters (2 forward + 2 backward per layer, word "
            "embedding, output layer input gradient)");
        int64_t n = 0;
        for (size_t i = 0; i < g->nt; i++) n += mg_gpt_tensor_sp_reduced(&g->t[i]);
        add(p, tp, MG_COMM_TENSOR, MG_COMM_OP_ALLREDUCE, n, m->hidden_size * 4, 1,
            "sequence parallelism: norm and row-parallel bias gradients");
    }
    add(p, tp, MG_COMM_TENSOR, MG_COMM_OP_ALLGATHER, last, tp * N * 4, 1,
        "vocabulary-parallel cross-entropy: row maxima");
    add(p, tp, MG_COMM_TENSOR, MG_COMM_OP_ALLREDUCE, last, 2 * N * 4, 1,
        "vocabulary-parallel cross-entropy: sums of exp and target logits");
}

/* Pipeline parallelism on the first stage (schedule.h): each micro-batch's activation sent,
 * its gradient received; the lm loss broadcast from the last stage; with tied embeddings
 * the word-embedding gradient summed with the last stage's copy. */
static void pipeline_parallel(const mg_train_opts *o, const mg_gpt *g, int64_t nmicro,
                              mg_comm_plan *p)
{
    const mg_model_desc *m = &o->model;
    int64_t rows = o->micro_batch_size * m->seq_length / (o->sequence_parallel ? m->tp : 1);
    int64_t act = rows * m->hidden_size * act_bytes(o);
    add(p, m->pp, MG_COMM_PIPELINE, MG_COMM_OP_SEND, nmicro, act, 1,
        "pipeline: activations to the next stage");
    add(p, m->pp, MG_COMM_PIPELINE, MG_COMM_OP_RECV, nmicro, act, 1,
        "pipeline: their gradients back");
    add(p, m->pp, MG_COMM_PIPELINE, MG_COMM_OP_BROADCAST, 1, 16, 1,
        "pipeline: lm loss sum and token count from the last stage");
    if (m->tied_embeddings && m->pp > 1) {
        const mg_gpt_tensor *e = mg_gpt_find(g, "embedding.word_embeddings.weight");
        add(p, 2, MG_COMM_EMBEDDING, MG_COMM_OP_ALLREDUCE, 1, e ? e->numel * 4 : 0, 1,
            "tied embeddings: the word-embedding gradient, first and last stage");
    }
}

mg_status mg_comm_plan_step(const mg_train_opts *o, mg_comm_plan *p)
{
    p->n = 0;
    mg_gpt_layout lay;
    MG_FORWARD(rank0_layout(&o->model, &lay));
    mg_gpt *g = NULL;
    MG_FORWARD(mg_gpt_create_views(&g, &o->model, &lay));
    g->opt.ddp_bucket_size = mg_ddp_bucket_size(o, 0);
    int64_t nmicro = o->global_batch_size / (o->micro_batch_size * o->data_parallel_size);
    tensor_parallel(o, g, nmicro, p);
    pipeline_parallel(o, g, nmicro, p);
    mg_status st = data_parallel(o, g, p);
    mg_gpt_free(g);
    return st;
}

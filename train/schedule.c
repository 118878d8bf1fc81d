/* schedule.c — schedule.h: 1F1B without interleaving, and the forward-only pass. */
#include "schedule.h"

#include "grad_buckets.h"

typedef struct {
    const mg_gpt *g;
    mg_gpt *gw;               /* the model whose gradients backward adds to (training) */
    const mg_kctx *k;
    mg_comm *pp;
    const mg_sched *s;
    const mg_gpt_batch *micro;
    int64_t stage, P, bytes, nmicro;
    int first, last;
    double grad_scale, *lsum;
} run;

int64_t mg_sched_slots(int64_t pp, int64_t stage, int64_t nmicro)
{
    int64_t n = pp - stage;
    return n < nmicro ? n : nmicro;
}

static mg_gpt_acts *slot(const run *r, int64_t i)
{
    return r->s->slots[i % r->s->nslots];
}

/* Sends `out` to and receives `in` from stage `peer`, the even stage of the pair first. */
static mg_status exchange(const run *r, const float *out, float *in, int64_t peer)
{
    if (r->stage % 2 == 0) {
        MG_FORWARD(mg_comm_send(r->pp, out, r->bytes, peer));
        return mg_comm_recv(r->pp, in, r->bytes, peer);
    }
    MG_FORWARD(mg_comm_recv(r->pp, in, r->bytes, peer));
    return mg_comm_send(r->pp, out, r->bytes, peer);
}

static mg_status recv_forward(const run *r, int64_t i)
{
    if (r->first) return MG_OK;
    return mg_comm_recv(r->pp, mg_gpt_stage_input(slot(r, i)), r->bytes, r->stage - 1);
}

static mg_status send_forward(const run *r, int64_t i)
{
    if (r->last) return MG_OK;
    return mg_comm_send(r->pp, mg_gpt_stage_output(slot(r, i)), r->bytes, r->stage + 1);
}

static mg_status recv_backward(const run *r, int64_t i)
{
    if (r->last) return MG_OK;
    return mg_comm_recv(r->pp, mg_gpt_stage_dout(slot(r, i)), r->bytes, r->stage + 1);
}

static mg_status send_backward(const run *r, int64_t i)
{
    if (r->first) return MG_OK;
    return mg_comm_send(r->pp, mg_gpt_stage_din(slot(r, i)), r->bytes, r->stage - 1);
}

/* Output of micro-batch f out, gradient of micro-batch b in (send_forward_recv_backward). */
static mg_status send_forward_recv_backward(const run *r, int64_t f, int64_t b)
{
    if (r->last) return MG_OK;
    return exchange(r, mg_gpt_stage_output(slot(r, f)), mg_gpt_stage_dout(slot(r, b)),
                    r->stage + 1);
}

/* Input gradient of micro-batch b out, input of micro-batch f in. */
static mg_status send_backward_recv_forward(const run *r, int64_t b, int64_t f)
{
    if (r->first) return MG_OK;
    return exchange(r, mg_gpt_stage_din(slot(r, b)), mg_gpt_stage_input(slot(r, f)),
                    r->stage - 1);
}

static mg_status forward(const run *r, int64_t i)
{
    double loss;
    mg_gpt_acts *a = slot(r, i);
    MG_FORWARD(mg_gpt_forward(r->g, a, r->k, &r->micro[i], &loss));
    if (r->last) {
        r->lsum[0] += loss * mg_gpt_loss_denom(a);
        r->lsum[1] += mg_gpt_loss_denom(a);
    }
    return MG_OK;
}

static mg_status backward(const run *r, int64_t i)
{
    int report = r->s->buckets && i == r->nmicro - 1;
    if (report) mg_grad_buckets_arm(r->s->buckets, r->gw);
    mg_status st = mg_gpt_backward(r->gw, slot(r, i), r->k, r->grad_scale);
    r->gw->grads_ready = NULL;
    return st;
}

static mg_status start(run *r, const mg_gpt *g, const mg_kctx *k, mg_comm *world, const mg_sched *s,
                       const mg_gpt_batch *micro, int64_t nmicro)
{
    r->g = g;
    r->k = k;
    r->pp = mg_comm_group(world, MG_COMM_PIPELINE);
    r->s = s;
    r->micro = micro;
    r->nmicro = nmicro;
    r->stage = mg_comm_rank(r->pp);
    r->P = mg_comm_size(r->pp);
    r->first = r->stage == 0;
    r->last = r->stage == r->P - 1;
    r->bytes = mg_gpt_stage_bytes(s->slots[0]);
    MG_RETURN_IF(r->first != g->lay.first_stage || r->last != g->lay.last_stage, MG_ERR_ARG,
                 "schedule: stage %lld of %lld runs a model built for another stage",
                 (long long)r->stage, (long long)r->P);
    MG_RETURN_IF(s->nslots < mg_sched_slots(r->P, r->stage, nmicro), MG_ERR_ARG,
                 "schedule: stage %lld needs %lld activation arenas, %lld given",
                 (long long)r->stage, (long long)mg_sched_slots(r->P, r->stage, nmicro),
                 (long long)s->nslots);
    return MG_OK;
}

/* The steady 1F1B phase: micro-batches f = warmup + j forward, j backward. */
static mg_status steady(const run *r, int64_t warmup, int64_t remaining)
{
    if (remaining > 0) MG_FORWARD(recv_forward(r, warmup));
    for (int64_t j = 0; j < remaining; j++) {
        int64_t f = warmup + j;
        MG_FORWARD(forward(r, f));
        MG_FORWARD(send_forward_recv_backward(r, f, j));
        MG_FORWARD(backward(r, j));
        if (j == remaining - 1) MG_FORWARD(send_backward(r, j));
        else MG_FORWARD(send_backward_recv_forward(r, j, f + 1));
    }
    return MG_OK;
}

mg_status mg_sched_train(mg_gpt *g, const mg_kctx *k, mg_comm *world, const mg_sched *s,
                         const mg_gpt_batch *micro, int64_t nmicro, double grad_scale,
                         double lsum[2])
{
    run r = {0};
    MG_FORWARD(start(&r, g, k, world, s, micro, nmicro));
    r.gw = g;
    r.grad_scale = grad_scale;
    r.lsum = lsum;
    int64_t warmup = r.P - r.stage - 1 < nmicro ? r.P - r.stage - 1 : nmicro;
    for (int64_t i = 0; i < warmup; i++) {
        MG_FORWARD(recv_forward(&r, i));
        MG_FORWARD(forward(&r, i));
        MG_FORWARD(send_forward(&r, i));
    }
    MG_FORWARD(steady(&r, warmup, nmicro - warmup));
    for (int64_t b = nmicro - warmup; b < nmicro; b++) {
        MG_FORWARD(recv_backward(&r, b));
        MG_FORWARD(backward(&r, b));
        MG_FORWARD(send_backward(&r, b));
    }
    return MG_OK;
}

mg_status mg_sched_eval(const mg_gpt *g, const mg_kctx *k, mg_comm *world, const mg_sched *s,
                        const mg_gpt_batch *micro, int64_t nmicro, double acc[2])
{
    run r = {0};
    MG_FORWARD(start(&r, g, k, world, s, micro, nmicro));
    r.lsum = acc;
    for (int64_t i = 0; i < nmicro; i++) {
        MG_FORWARD(recv_forward(&r, i));
        MG_FORWARD(forward(&r, i));
        MG_FORWARD(send_forward(&r, i));
    }
    return MG_OK;
}

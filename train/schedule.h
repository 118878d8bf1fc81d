/* schedule.h — the forward and backward passes of one iteration over its micro-batches on
 * this rank's pipeline stage: Megatron-Core's 1F1B schedule without interleaving
 * (pipeline_parallel/schedules.py forward_backward_pipelining_without_interleaving), and the
 * forward-only pass of evaluation.
 *
 * Contract:
 *   - mg_sched holds the activation arenas of the micro-batches in flight: stage r of P
 *     keeps at most min(P - r, M) of M (warm-up forwards + 1); micro-batch i uses slot
 *     i mod nslots (a slot is free again when its backward is done, as 1F1B finishes the
 *     backwards in order). mg_sched_slots() gives that number.
 *   - mg_sched_train(): warm-up min(P - r - 1, M) forwards (receive the input from stage
 *     r - 1, forward, send the output to r + 1), then M - warm-up steady steps (forward one,
 *     exchange its output for the gradient of the oldest one with r + 1, backward the oldest,
 *     exchange its input gradient for the next input with r - 1), then the cool-down
 *     backwards. Each backward adds grad_scale * d(loss)/d(params) into g->grads. On the
 *     last stage lsum[0] += the micro-batch's masked token-loss sum and lsum[1] += its token
 *     count; elsewhere lsum is untouched. With P = 1 it is forward, backward per micro-batch
 *     in order (the single-process loop). With s->buckets, the last micro-batch's backward
 *     reports its progress to them (model.h grads_ready), as megatron-core's DDP starts a
 *     bucket's reduction only in the last micro-batch (is_last_microbatch).
 *   - Transfers go through comm.h on the pipeline group of `world` (rank = stage), one
 *     message per activation or gradient of mg_gpt_stage_numel() floats. A paired exchange
 *     (send one way, receive the other, as Megatron's send_forward_recv_backward) is ordered
 *     so that it cannot deadlock with blocking transfers: the even stage of the pair sends
 *     first, the odd one receives first.
 *   - mg_sched_eval(): forward only, micro-batch by micro-batch (receive, forward, send);
 *     acc as lsum (last stage).
 *   - Every rank of the pipeline (and tensor-parallel) group calls these together with the
 *     same micro-batches.
 */
#ifndef MG_TRAIN_SCHEDULE_H
#define MG_TRAIN_SCHEDULE_H

#include <stdint.h>

#include "comm.h"
#include "model.h"

struct mg_grad_buckets;

typedef struct {
    mg_gpt_acts **slots; /* nslots arenas of this model and micro-batch shape (not owned) */
    int64_t nslots;
    int sequence_parallel; /* the arenas were made with it (the step's gradient sums) */
    /* --overlap-grad-reduce: the gradient buckets, reduced as the last micro-batch's backward
     * completes them (grad_buckets.h; the schedule sets g->grads_ready for that backward
     * only); NULL: the step reduces all gradients after the schedule */
    struct mg_grad_buckets *buckets;
} mg_sched;

/* Arenas stage `stage` of `pp` needs for nmicro micro-batches. */
int64_t mg_sched_slots(int64_t pp, int64_t stage, int64_t nmicro);

mg_status mg_sched_train(mg_gpt *g, const mg_kctx *k, mg_comm *world, const mg_sched *s,
                         const mg_gpt_batch *micro, int64_t nmicro, double grad_scale,
                         double lsum[2]);
mg_status mg_sched_eval(const mg_gpt *g, const mg_kctx *k, mg_comm *world, const mg_sched *s,
                        const mg_gpt_batch *micro, int64_t nmicro, double acc[2]);

#endif

/* grad_buckets.h — --overlap-grad-reduce: megatron-core's DistributedDataParallel buckets
 * (megatron-core 0.16.1 _ParamAndGradBuffer / _ParamAndGradBucketGroup), each reduced over
 * the data-parallel group as soon as the last micro-batch's backward has made all of its
 * gradients final, instead of one reduction after the backward pass.
 *
 * Contract:
 *   - mg_ddp_bucket_size(): the bucket size (elements) of pipeline stage `stage`, as
 *     megatron-core's DDP sets it: without --overlap-grad-reduce none (0: one bucket);
 *     else --ddp-bucket-size, default max(40000000, 1000000 x DP); none on the stages after
 *     the first. It goes into the model's g->opt.ddp_bucket_size, which every layout of the
 *     gradient buffer reads (dist_optim.h).
 *   - The buckets: the plain data-parallel buffer (no padding) or, with the distributed
 *     optimizer o, o's layout (dist_optim.h). A tensor's level: its global layer, INT64_MAX
 *     for the output head (final norm, output layer), -1 for the embeddings; a bucket is
 *     complete when the backward's progress (model.h grads_ready) is at or below the lowest
 *     level of its tensors. Buckets are launched in order (the reversed parameter order is
 *     the backward's order), each: its sequence-parallel gradient sums (grad_sync.h, over
 *     the tensor group, whose ranks run the same backward together), then bucket by bucket
 *     the data-parallel sum: scaled by 1 / DP and all-reduced (through a staging buffer in
 *     the buffer layout) or, with o, reduce-scattered into o's shard (mg_dist_reduce_bucket).
 *     Every gradient gets the same operations in the same order as the step without
 *     overlap (model-parallel sums, then 1 / DP, then the data-parallel sum in rank order),
 *     so the results are the same bits.
 *   - A bucket holding the tied embedding's gradient of a pipeline run (grad_sync.h
 *     mg_gpt_tied_synced) and the buckets after it wait for mg_grad_buckets_finish(): the
 *     embedding group joins two stages whose backwards do not run together.
 *   - Each bucket's data-parallel collective follows mg_comm_async_follow() on the
 *     data-parallel group, and mg_grad_buckets_finish() ends with mg_comm_async_join()
 *     (comm.h). --device cuda (NCCL): the collective is enqueued on the group's
 *     communication stream once an event recorded on the compute stream after the bucket's
 *     gradients (and its staging copy and 1 / DP scaling) says they are there, and the host
 *     goes on with the backward; the join makes the compute stream wait for an event of the
 *     communication stream, so the unpacking and the optimizer step see the sums. CPU (MPI
 *     backend): follow and join do nothing and each collective is a blocking call from the
 *     backward (not a nonblocking MPI one): bucketed in megatron-core's order, but not
 *     concurrent with the rest of the backward.
 *   - Use: mg_grad_buckets_begin() before the schedule, mg_grad_buckets_arm() (the schedule)
 *     before the last micro-batch's backward, mg_grad_buckets_finish() after the schedule;
 *     then every gradient is reduced (g->grads, unpacked from the staging buffer, or o's
 *     shard with o->grads_reduced set).
 */
#ifndef MG_TRAIN_GRAD_BUCKETS_H
#define MG_TRAIN_GRAD_BUCKETS_H

#include <stdint.h>

#include "comm.h"
#include "dist_optim.h"
#include "model.h"
#include "options.h"

int64_t mg_ddp_bucket_size(const mg_train_opts *o, int64_t stage);

typedef struct mg_grad_buckets mg_grad_buckets;

/* For g (its g->opt.ddp_bucket_size) on world; o: the distributed optimizer or NULL. */
mg_status mg_grad_buckets_create(mg_grad_buckets **b, const mg_gpt *g, mg_comm *world,
                                 mg_names nm, int sequence_parallel, mg_dist_optim *o);
void mg_grad_buckets_free(mg_grad_buckets *b); /* accepts NULL */
int64_t mg_grad_buckets_count(const mg_grad_buckets *b);

void mg_grad_buckets_begin(mg_grad_buckets *b, mg_gpt *g, const mg_kctx *k);
void mg_grad_buckets_arm(mg_grad_buckets *b, mg_gpt *g);
mg_status mg_grad_buckets_finish(mg_grad_buckets *b);

#endif

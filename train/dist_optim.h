/* dist_optim.h — megatron-core's DistributedOptimizer (--use-distributed-optimizer) for
 * mg-train's model: fp32 Adam state sharded over the data-parallel group, gradients
 * reduce-scattered and parameters all-gathered.
 *
 * Contract:
 *   - Layout (mg_dist_layout, mg/dist_buffer.h): megatron-core 0.16.1's _ParamAndGradBuffer with
 *     use_distributed_optimizer and the stage's bucket size g->opt.ddp_bucket_size (0, without
 *     --overlap-grad-reduce: bucket_size None, one bucket; grad_buckets.h mg_ddp_bucket_size):
 *     the rank's parameters in REVERSE order of megatron-core's parameters
 *     (param_order.h: the registration order of the layer spec of the naming nm, i.e. of
 *     --transformer-impl; reversed ≈ backward order), each
 *     starting at a multiple of 64 elements, the bucket's end padded to a multiple of
 *     lcm(DP, 128), a bucket closed once it reaches the bucket size. A shared embedding (tied embeddings with PP > 1: the word embedding of
 *     the first stage, the output layer of the last) gets a bucket of its own, as
 *     _does_param_require_new_bucket. Data-parallel rank r owns the r-th of DP equal slices
 *     of every bucket (its "shard"); padding belongs to no parameter.
 *   - State: the fp32 Adam moments of the shard only (numel / DP floats each, bucket after
 *     bucket) and the step count. In fp32 training the model's parameters are the master
 *     weights: each rank updates the elements of its shard and the all-gather gives every
 *     rank the whole updated parameters. With 16-bit parameters (--bf16 / --fp16:
 *     g->params16) g->params are the fp32 masters, of which each rank updates its shard's
 *     elements only (megatron-core's shard of main params), AdamW writes their 16-bit
 *     rounding into this rank's slices of a 16-bit buffer of the same layout (megatron-core's
 *     param buffer in the model's dtype) and that buffer is all-gathered, bucket by bucket,
 *     into g->params16; mg_dist_gather_masters() completes the masters for a checkpoint.
 *     The gradients stay fp32 in either precision (mg-train accumulates them in fp32: for
 *     --bf16 megatron-core's accumulate_allreduce_grads_in_fp32, which Megatron forces; for
 *     --fp16 Megatron's default reduces them in fp16, mg-train in fp32).
 *   - mg_dist_step(): after the micro-batches (gradients accumulated in g->grads, loss
 *     summed over DP: mg_gpt_accumulate), the gradients scaled by 1 / DP are packed into the
 *     buffer and reduce-scattered bucket by bucket over DP (sum in rank order: the same bits
 *     as the all-reduce of the plain data-parallel step; mg_dist_reduce_bucket does one
 *     bucket, which --overlap-grad-reduce calls from the backward: grads_reduced is then set
 *     and the step does not reduce again); the gradient norm is the sum of
 *     squares of the shard's elements (unscaled first by hp->loss_scale as step.h's
 *     mg_unscale_grads; a non-finite sum skips the step: found_inf) of the tensors that count in the norm on this rank
 *     (mg_gpt_tensor_in_norm: a tensor replicated over TP on tensor rank 0 only, never the
 *     last stage's tied copy; the padding not at all), summed over the data-parallel group
 *     and then the model-parallel group — the plain step's norm up to the summation order; clipping and AdamW (step.h semantics) on the shard;
 *     the updated parameters all-gathered bucket by bucket. Communication per step: one
 *     reduce-scatter of numel floats and one all-gather of numel parameters (floats, or 16-bit
 *     values) per bucket over DP.
 *   - Checkpoints keep the model layout (checkpoint.h): mg_dist_gather_moments() assembles
 *     the full moments on every DP rank (an all-gather per bucket of m and of v);
 *     mg_dist_load_moments() takes this rank's shard from full moments (no communication).
 *   - mg_dist_save_state() writes megatron-core's distrib_optim.pt of the shard (torch
 *     format, DistributedOptimizer.save_parameter_state / get_parameter_state_dp_zero):
 *     {'buckets_coalesced': True, 0: {(param dtype, torch.float32): {'param': fp32[N],
 *     'exp_avg': fp32[N], 'exp_avg_sq': fp32[N], 'numel_unpadded': N}}}, each tensor the
 *     buckets of the buffer one after the other, each cut at its numel_unpadded (N their
 *     sum), from full parameters (the fp32 masters) and moments in the model layout. The key
 *     is megatron-core's (buffer.param_dtype, buffer.grad_dtype), which its loader matches:
 *     the model's dtype (torch.bfloat16 / torch.float16 with --bf16 / --fp16, else
 *     torch.float32) and fp32 gradients.
 *   - mg_dist_read_state() reads such a file back (megatron-core's own, written by DP rank 0
 *     of any data-parallel size: the coalesced tensors do not depend on it, buckets starting
 *     at multiples of 128) into full parameters (the fp32 master weights) and full moments in
 *     the model layout, for the parameter order of the naming the checkpoint's model dict
 *     uses. Checked: the file's structure (mg/distrib_optim.h) and numel_unpadded equal to
 *     the model's buffer (MG_ERR_FORMAT naming the file).
 */
#ifndef MG_TRAIN_DIST_OPTIM_H
#define MG_TRAIN_DIST_OPTIM_H

#include <stdint.h>

#include "comm.h"
#include "mg/dist_buffer.h"
#include "model.h"
#include "step.h"

/* The layout of g's tensors for a data-parallel size dp and the parameter order of the
 * naming nm (the layer spec of --transformer-impl). */
mg_status mg_dist_layout_build(mg_dist_layout *l, const mg_gpt *g, int64_t dp, mg_names nm);
/* The same, or (distributed 0) the plain data-parallel buffer: no padding, no
 * shared-embedding split (mg/dist_buffer.h mg_grad_buffer_plan). */
mg_status mg_grad_layout_build(mg_dist_layout *l, const mg_gpt *g, int64_t dp, mg_names nm,
                               int distributed);
/* The tensors of bucket b between buf (layout l) and model (model layout), in k's memory:
 * into buf, or (to_model) back into model. */
void mg_grad_bucket_copy(const mg_dist_layout *l, const mg_gpt *g, const mg_kctx *k,
                         int64_t b, float *buf, float *model, int to_model);

typedef struct {
    mg_dist_layout lay;
    int64_t dp_rank, shard;  /* shard: numel / DP, this rank's slices of all buckets */
    float *buf;              /* numel: packed gradients, then the gathered parameters */
    float *gshard;           /* shard: the reduced gradients of this rank's slices */
    float *m, *v;            /* shard: Adam moments */
    mgk_h16 *buf16;          /* numel, with 16-bit parameters (g->params16): their buffer */
    int64_t step;
    int grads_reduced;       /* every bucket reduce-scattered already (grad_buckets.h) */
    mgk_backend mem;         /* where buf, gshard, m and v live (kernels.h mgk_alloc) */
} mg_dist_optim;

/* The state in the memory of backend mem (the device's with --device cuda: the step then
 * runs on the device model's parameters and gradients and a context of that backend). */
mg_status mg_dist_optim_create(mg_dist_optim **o, const mg_gpt *g, mg_comm *world,
                               mg_names nm, mgk_backend mem);
/* --bf16 / --fp16: the 16-bit parameter buffer (numel values in o's memory), after which
 * mg_dist_step takes a model with params16 (see the contract). */
mg_status mg_dist_optim_use_params16(mg_dist_optim *o);
void mg_dist_optim_free(mg_dist_optim *o); /* accepts NULL */

/* Bucket b of g->grads scaled by 1 / DP and reduce-scattered into this rank's gshard;
 * async: on dp's communication stream after mg_comm_async_follow (comm.h: complete only
 * after mg_comm_async_join). */
mg_status mg_dist_reduce_bucket(mg_dist_optim *o, const mg_gpt *g, const mg_kctx *k,
                                mg_comm *dp, int64_t b, int async);
/* The optimizer half of a training step (see the contract); res->grad_norm, ->skipped. */
mg_status mg_dist_step(mg_dist_optim *o, mg_gpt *g, const mg_kctx *k, mg_comm *world,
                       const mg_step_hp *hp, mg_step_result *res);

/* With 16-bit parameters: g->params (the fp32 masters, of which each rank updates its shard
 * only) <- every rank's shard, an all-gather per bucket over DP (before a checkpoint); a
 * no-op in fp32 training, whose step gathers them. */
mg_status mg_dist_gather_masters(mg_dist_optim *o, mg_gpt *g, const mg_kctx *k,
                                 mg_comm *world);
/* full (host, model layout, g->numel) <- the moments of every shard. */
mg_status mg_dist_gather_moments(const mg_dist_optim *o, const mg_gpt *g, mg_comm *world,
                                 mg_gpt_optim *full);
/* This rank's shard <- full moments (host, model layout). */
mg_status mg_dist_load_moments(mg_dist_optim *o, const mg_gpt *g, const mg_gpt_optim *full);
/* distrib_optim.pt at path from g's parameters and full moments (see the contract);
 * param_dtype: the model's (MG_TD_F32, MG_TD_BF16 or MG_TD_F16). */
mg_status mg_dist_save_state(const mg_dist_layout *l, const mg_gpt *g, const mg_gpt_optim *full,
                             mg_tdtype param_dtype, const char *path);

/* params (g->numel, model layout) and full's moments <- distrib_optim.pt at path (see the
 * contract; full->step untouched: the step count is in model_optim_rng.pt). */
mg_status mg_dist_read_state(const mg_gpt *g, mg_names nm, const char *path, float *params,
                             mg_gpt_optim *full);

#endif

/* step.h — one training iteration of mg-train's model: gradient accumulation over
 * micro-batches, the global gradient norm with clipping, and AdamW (Megatron's semantics).
 *
 * Contract:
 *   - mg_gpt_train_step(): zeroes the gradients, runs forward + backward on each of the
 *     nmicro micro-batches with gradient scale hp->loss_scale / nmicro (Megatron divides
 *     each micro-batch's masked-mean loss by the number of micro-batches and multiplies it
 *     by the grad scaler's scale, grad_scaler.h; 1 without a scaler), unscales the reduced
 *     gradients by float(1 / scale) (nothing when the scale is 1), computes the global
 *     L2 norm of the gradients (double sums of squares, thread-count independent), clips
 *     them by clip_coeff = clip_grad / (norm + 1e-6) when that is < 1 (clip_grad 0: no
 *     clipping), and applies one AdamW step (torch.optim.AdamW semantics, decoupled weight
 *     decay on 2-D weights only: not on biases and norms, as Megatron).
 *   - The reported loss is Megatron's "lm loss": the sum of masked token losses over all
 *     micro-batches divided by the number of unmasked tokens.
 *   - A NaN/Inf gradient norm skips the update (res->skipped = 1): no parameter, moment or
 *     step-count change. With a grad scaler this is Megatron's found_inf (the unscaled
 *     gradients hold an inf or NaN, reduced with MAX over the model-parallel group): the
 *     sum of squares is accumulated in double, where squares of finite floats cannot
 *     overflow, so it is non-finite exactly when a gradient is, and the model-parallel sum
 *     carries a non-finite part to every rank. The caller updates the scaler with it and
 *     does not step the lr scheduler (Megatron's train_step).
 *   - mg_step_hp_at(): lr and weight decay of iteration `iteration` (1-based) from the
 *     parsed options' scheduler, evaluated at (iteration - 1) * global batch size samples
 *     (Megatron's scheduler steps after the optimizer), loss scale 1; mg_step_hp_of():
 *     the same at the scheduler's step count `samples` (fewer when iterations were
 *     skipped).
 *   - The optimizer state (m, v) has the model's buffer layout.
 *   - Collectives go through comm.h on the groups of the world communicator passed to
 *     mg_gpt_train_step_comm(): the micro-batches run through the pipeline schedule
 *     (schedule.h: 1F1B over the pipeline group, tensor-parallel collectives inside the
 *     model); then the sequence-parallel and tied-embedding partial gradients are
 *     completed (grad_sync.h), the loss numerator and token count summed over the data-
 *     parallel group on the last stage and broadcast from it over the pipeline group
 *     (every rank reports Megatron's lm loss: mg_gpt_accumulate), the gradients scaled by
 *     1 / DP and summed over the data-parallel group (megatron-core's DDP order), and the
 *     gradient sum of squares
 *     summed over the model-parallel group (tensor x pipeline) counting each parameter
 *     once: replicated tensors on tensor-parallel rank 0 only, not the tied copy (data-
 *     parallel replicas hold the same reduced gradients, so they are not added again).
 *     With the single-process communicator these are no-ops and the results are
 *     bit-identical to the plain loop. mg_gpt_train_step() is the same step on one arena
 *     and a single-process communicator of its own.
 */
#ifndef MG_TRAIN_STEP_H
#define MG_TRAIN_STEP_H

#include <stdint.h>

#include "comm.h"
#include "model.h"
#include "options.h"
#include "schedule.h"

typedef struct {
    float *m, *v;      /* Adam moments, g->numel floats each; v = m + numel */
    int64_t numel;
    mgk_backend mem;   /* their memory (host or device) */
    int64_t step;      /* optimizer steps taken */
} mg_gpt_optim;

typedef struct {
    double lr, weight_decay, beta1, beta2, eps, clip_grad;
    double loss_scale; /* the grad scaler's scale (a float; 1: none) */
} mg_step_hp;

typedef struct {
    double loss;       /* Megatron's lm loss of the iteration */
    double grad_norm;  /* before clipping */
    int skipped;
} mg_step_result;

mg_status mg_gpt_optim_create(mg_gpt_optim **o, const mg_gpt *g);
/* The same in the memory of backend mem (device.h); m and v are one allocation (v = m +
 * numel), as on the host. */
mg_status mg_gpt_optim_create_on(mg_gpt_optim **o, const mg_gpt *g, mgk_backend mem);
void mg_gpt_optim_free(mg_gpt_optim *o); /* accepts NULL */

void mg_step_hp_at(const mg_train_opts *opts, int64_t iteration, mg_step_hp *hp);
void mg_step_hp_of(const mg_train_opts *opts, double samples, mg_step_hp *hp);
/* Megatron's _unscale_main_grads: grads[0, n) *= float(1 / double(loss_scale)); nothing
 * when loss_scale is 1. */
void mg_unscale_grads(const mg_kctx *k, float *grads, int64_t n, double loss_scale);

/* Global L2 norm of g->grads (sqrt of the sum of per-tensor sums of squares, summed over
 * the model-parallel group of comm's world). */
mg_status mg_gpt_grad_norm(const mg_gpt *g, const mg_kctx *k, mg_comm *comm, double *norm);

mg_status mg_gpt_train_step(mg_gpt *g, mg_gpt_optim *o, mg_gpt_acts *a, const mg_kctx *k,
                            const mg_gpt_batch *micro, int64_t nmicro, const mg_step_hp *hp,
                            mg_step_result *res);
/* Megatron's clip coefficient: clip_grad / (norm + 1e-6), at most 1 (clip_grad 0: 1). */
double mg_clip_coeff(double clip_grad, double grad_norm);
/* The first half of a step: zeroed gradients, the micro-batches through the schedule
 * (backward scale loss_scale / nmicro), the model-parallel gradient sums (grad_sync.h) and
 * the lm loss (data-parallel sum on the last stage, broadcast over the pipeline) into
 * *loss. */
mg_status mg_gpt_accumulate(mg_gpt *g, const mg_sched *sched, const mg_kctx *k, mg_comm *comm,
                            const mg_gpt_batch *micro, int64_t nmicro, double loss_scale,
                            double *loss);
/* The step with its collectives on comm's groups and the arenas of sched (see the
 * contract). */
mg_status mg_gpt_train_step_comm(mg_gpt *g, mg_gpt_optim *o, const mg_sched *sched,
                                 const mg_kctx *k, mg_comm *comm, const mg_gpt_batch *micro,
                                 int64_t nmicro, const mg_step_hp *hp, mg_step_result *res);

#endif

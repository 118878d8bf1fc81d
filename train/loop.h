/* loop.h — mg-train's training loop (fp32, CPU kernels, data-parallel over comm.h).
 *
 * Contract:
 *   - mg_train_run(): builds the datasets (batch.h), the model (Megatron's initialisation
 *     from --seed), the Adam state and the kernel context (fast CPU backend), measures the
 *     gemm peak once, then runs iterations 1..train_iters: iteration k takes training
 *     samples [(k-1) x gbs, k x gbs) in gbs / (mbs x DP) micro-batches per data-parallel
 *     rank (each its MegatronPretrainingSampler slice),
 *     with lr and weight decay from the scheduler (step.h), and logs it (log.h) with lr
 *     after the scheduler's step as Megatron. With --eval-interval N the validation split
 *     is evaluated every N iterations; after the last iteration the validation and the test
 *     splits are evaluated (Megatron's do_valid / do_test: when the split has samples and
 *     --eval-iters > 0), so an interval that divides --train-iters evaluates the validation
 *     split twice at the end, as Megatron does. Each evaluation takes --eval-iters global
 *     batches, continuing through the split cyclically. A run stopped early (below) is
 *     not evaluated.
 *   - A NaN/Inf lm loss stops the run with MG_ERR_FORMAT naming the iteration.
 *   - It stops cleanly after the current iteration at --exit-interval, after
 *     --exit-duration-in-mins, or (with --exit-signal-handler) on SIGTERM/SIGINT/SIGUSR1
 *     received by any rank (all ranks stop at the same iteration and save); the reason
 *     goes to stderr and the status is MG_OK.
 *   - Log lines go to out (stdout in the tool), progress notes to stderr.
 *   - mg_train_dump_samples(): the first o->dump_samples training samples as JSON lines
 *     {"sample": i, "dataset": d, "tokens": [...], "labels": [...], "loss_mask": [...],
 *     "position_ids": [...], "segments": [...]} (micro-batch rows, batch.h rules).
 *   - The vocabulary must be resolved (mg_train_resolve_vocab) before either call.
 */
#ifndef MG_TRAIN_LOOP_H
#define MG_TRAIN_LOOP_H

#include <stdio.h>

#include "comm.h"
#include "mg/error.h"
#include "options.h"

/* comm: the world of this launch (mg_comm_create), with o's tensor and pipeline sizes. */
mg_status mg_train_run(const mg_train_opts *o, mg_comm *comm, FILE *out);
mg_status mg_train_dump_samples(const mg_train_opts *o, FILE *out);

#endif

/* device_plan.h — the device memory of one `mg-train --device cuda` process (one GPU), group
 * by group as device.h allocates it, for --dry-run and for the run's own check.
 *
 * Contract:
 *   - mg_device_plan_of(): the bytes of every device allocation of the process that holds
 *     tensor-parallel rank tp_rank of pipeline stage `stage` in the layout of opts (TP x PP x
 *     DP; the data-parallel ranks of a model shard allocate the same): its parameters and
 *     gradients (fp32, with the model's alignment padding), the 16-bit weight copy (--bf16, --fp16),
 *     the Adam moments (--use-distributed-optimizer: the data-parallel shard's, with the
 *     optimizer's packed buffer and reduced-gradient shard, dist_optim.h), each activation
 *     arena (forward.c's plan for the rank's heads, vocabulary shard and sequence-parallel
 *     rows, with the run's recomputation, acts_plan.h, and its default positions; one per
 *     micro-batch the stage keeps in flight, schedule.h) and the micro-batch inputs. These
 *     are exactly the bytes the run allocates through kernels.h mgk_alloc (the run prints
 *     both).
 *     workspaces: the kernel context's own device buffers (kernels.h mgk_ctx_device_bytes) and
 *     the attention backward's scratch. The CUDA runtime's context (hundreds of MiB on a
 *     GPU) and NCCL's buffers are not counted. MG_ERR_ARG for a rank outside the layout.
 *   - Needs a build with the CUDA backend (real or emulated): the attention's saved state is
 *     the CUDA kernels'; MG_ERR_UNSUPPORTED otherwise.
 *   - Library code: never prints or exits.
 */
#ifndef MG_TRAIN_DEVICE_PLAN_H
#define MG_TRAIN_DEVICE_PLAN_H

#include <stdint.h>

#include "options.h"

typedef struct {
    int64_t params, grads, params16, moments; /* bytes (moments: of the shard with the
                                               * distributed optimizer) */
    int64_t dist_buffers;                     /* dist. optimizer: buffer + shard (+ 16-bit) */
    int64_t bucket_buffer;                    /* --overlap-grad-reduce without it: the
                                               * buckets' staging buffer (grad_buckets.h) */
    int64_t arena, nslots, inputs;            /* one arena's bytes, arenas, input bytes */
    int64_t allocated;                        /* the sum of the above (mgk_alloc) */
    int64_t workspaces;                       /* kernel context + attention scratch */
    int64_t total;                            /* allocated + workspaces */
} mg_device_plan;

mg_status mg_device_plan_of(const mg_train_opts *o, int64_t tp_rank, int64_t stage,
                            mg_device_plan *p);

#endif

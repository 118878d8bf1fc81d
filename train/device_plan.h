/* device_plan.h — the device memory of one `mg-train --device cuda` process (one GPU), group
 * by group as device.h allocates it, for --dry-run and for the run's own check.
 *
 * Contract:
 *   - mg_device_plan_of(): the bytes of every device allocation of a single-process run of
 *     opts (tp = pp = dp = 1, the only device layout so far: MG_ERR_UNSUPPORTED otherwise):
 *     parameters and gradients (fp32, with the model's alignment padding), the bf16 weight
 *     copy (--bf16), the Adam moments, each activation arena (forward.c's plan with the
 *     run's recomputation, acts_plan.h, and its default positions; one per micro-batch in
 *     flight) and the micro-batch inputs. These are
 *     exactly the bytes the run allocates through kernels.h mgk_alloc (the run prints both).
 *     workspaces: the kernel context's own device buffers (kernels.h mgk_ctx_device_bytes) and
 *     the attention backward's scratch. The CUDA runtime's context (hundreds of MiB on a
 *     GPU) is not counted.
 *   - Needs a build with the CUDA backend (real or emulated): the attention's saved state is
 *     the CUDA kernels'; MG_ERR_UNSUPPORTED otherwise.
 *   - Library code: never prints or exits.
 */
#ifndef MG_TRAIN_DEVICE_PLAN_H
#define MG_TRAIN_DEVICE_PLAN_H

#include <stdint.h>

#include "options.h"

typedef struct {
    int64_t params, grads, params16, moments; /* bytes */
    int64_t arena, nslots, inputs;            /* one arena's bytes, arenas, input bytes */
    int64_t allocated;                        /* the sum of the above (mgk_alloc) */
    int64_t workspaces;                       /* kernel context + attention scratch */
    int64_t total;                            /* allocated + workspaces */
} mg_device_plan;

mg_status mg_device_plan_of(const mg_train_opts *o, mg_device_plan *p);

#endif

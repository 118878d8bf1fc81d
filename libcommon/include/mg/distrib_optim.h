/* mg/distrib_optim.h — megatron-core's distrib_optim.pt (--use-distributed-optimizer,
 * `torch` checkpoint format): the file mg-train writes and reads (train/dist_optim.h) and
 * mg-convert recognises.
 *
 * Contract (megatron/core/optimizer/distrib_optimizer.py: save_parameter_state,
 * get_parameter_state_dp_zero, load_parameter_state_from_dp_zero; docs/FORMATS.md §5.2):
 *   - The file is torch.save of {'buckets_coalesced': True, 0: {(param dtype, grad dtype):
 *     {'param': fp32[N], 'exp_avg': fp32[N], 'exp_avg_sq': fp32[N], 'numel_unpadded': N}}}:
 *     the fp32 master weights and Adam moments of the model shard's one gradient buffer, its
 *     buckets one after the other, each cut at its numel_unpadded.
 *   - mg_distrib_optim_read() checks root (path names it in messages) and points w's
 *     tensors at their bytes (little-endian fp32, N each, inside the file's storage; not
 *     necessarily 4-byte aligned: copy them with memcpy). MG_ERR_FORMAT for a root of another
 *     shape (the buffer key not a 2-tuple, a missing or non-fp32 or non-1-D tensor, a size
 *     other than numel_unpadded, a tensor not contiguous inside its storage);
 *     MG_ERR_UNSUPPORTED for megatron-core's format before 2024 (no buckets_coalesced) and
 *     for more than one gradient buffer (expert or mixed-dtype parameters).
 *   - mg_distrib_optim_save() writes that file at path (torch.save, archive
 *     "distrib_optim") from the three coalesced world tensors world[0..2] (param, exp_avg,
 *     exp_avg_sq: n fp32 each, read during the call), keyed (param_dtype, torch.float32)
 *     as megatron-core's loader matches its buffer (mg-train's and mg-convert's writer).
 */
#ifndef MG_DISTRIB_OPTIM_H
#define MG_DISTRIB_OPTIM_H

#include <stdint.h>

#include "mg/error.h"
#include "mg/pickle.h"

#define MG_DISTRIB_OPTIM_FILE "distrib_optim.pt" /* beside each model_optim_rng.pt */

/* The keys of the world tensors, in the order of mg_distrib_optim_world.t[]. */
extern const char *const mg_distrib_optim_keys[3]; /* "param", "exp_avg", "exp_avg_sq" */

typedef struct {
    int64_t n;            /* numel_unpadded: elements of each tensor */
    const uint8_t *t[3];  /* param, exp_avg, exp_avg_sq: n fp32 each */
} mg_distrib_optim_world;

mg_status mg_distrib_optim_read(const char *path, const mg_pk_obj *root,
                                 mg_distrib_optim_world *w);
mg_status mg_distrib_optim_save(const char *path, mg_tdtype param_dtype, int64_t n,
                                float *const world[3]);

#endif

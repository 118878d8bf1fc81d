/* mg/mcore_dist.h — Megatron-Core's `torch_dist` conventions for a GPTModel, shared by
 * mg-convert and mg-train: which folder is a torch_dist checkpoint, the keys of a parameter
 * and of the `_extra_state` objects, metadata.json.
 *
 * Contract (docs/FORMATS.md §5.10):
 *   - A folder holds torch_dist when it has metadata.json naming "sharded_backend":
 *     "torch_dist" (what Megatron's dist_checkpointing.check_is_distributed_checkpoint and
 *     load look at).
 *   - Keys are Megatron-Core names without the "model." prefix and with global layer
 *     numbers; homogeneous models stack every layer's tensor of one name into one key with
 *     the layer as first axis ("decoder.layers.mlp.linear_fc2.weight", [L, H, F]); per-layer
 *     keys ("decoder.layers.3.mlp.linear_fc2.weight") are the other form. Layer norms use
 *     the TE names (linear_qkv.layer_norm_weight) whatever the spec; readers accept local
 *     names too.
 *   - The extra states megatron-core saves for every layer: linear_qkv, linear_proj,
 *     linear_fc1, linear_fc2, as byte objects "decoder.layers.M._extra_state/shard_l_L".
 */
#ifndef MG_MCORE_DIST_H
#define MG_MCORE_DIST_H

#include <stddef.h>

#include "mg/dcp.h"
#include "mg/error.h"
#include "mg/schema.h"

/* metadata.json as megatron-core 0.16 writes it. */
extern const char mg_mcore_dist_json[];

/* 1 when DIR/metadata.json exists (a torch_dist folder, or one of another backend). */
int mg_mcore_dist_is(const char *dir);
/* DIR/metadata.json must name torch_dist: MG_ERR_UNSUPPORTED for another backend,
 * MG_ERR_FORMAT when it names none. */
mg_status mg_mcore_dist_check(const char *dir);

/* The key of p (global layer) under `names`; stacked: the layer number left out. */
void mg_mcore_dist_key(const mg_param *p, mg_names names, int stacked, char *buf, size_t cap);
/* The item holding p in m: stacked or per-layer, TE or local names (*stacked says which);
 * NULL when none (name then holds the stacked TE key). */
const mg_dcp_item *mg_mcore_dist_find(const mg_dcp_meta *m, const mg_param *p, int *stacked,
                                      char *name, size_t cap);
/* The common state of the torch_dist folder dir (d opened on it): common.pt, else the
 * byte object common_state/shard_0_1 (torch.save([common])); *root is the dict, inside *f
 * (caller closes). */
mg_status mg_mcore_dist_common(const char *dir, const mg_dcp_dir *d, mg_torch_file **f,
                               mg_pk_obj **root);
/* Writes torch.save([None]), megatron-core's extra state of a local-spec linear, for every
 * byte object of m stored in data file `file`, into out (mg_dcp_write_item). */
mg_status mg_mcore_dist_write_extra_states(mg_dcp_meta *m, uint32_t file, mg_out *out);
/* The i-th extra-state key of a model of `layers` layers into buf; 0 when i is past them. */
int mg_mcore_dist_extra_state(int64_t layers, size_t i, char *buf, size_t cap);

#endif /* MG_MCORE_DIST_H */

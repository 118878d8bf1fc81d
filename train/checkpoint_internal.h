/* checkpoint_internal.h — mg-train checkpoint pieces shared by the `torch` format
 * (checkpoint.c) and the `torch_dist` format (checkpoint_dist.c); not for other modules.
 *
 * Contract: the torch_dist checkpoint holds what the torch file holds (checkpoint.h), split
 * as Megatron splits it: the model tensors and the optimizer moments as sharded tensors
 * (mg/mcore_dist.h keys; moments under "optimizer.state.exp_avg.KEY" / "exp_avg_sq.KEY"
 * with the parameter's global shape, as megatron-core's optim_state_to_sharding_state names
 * them), everything else in common.pt. Loading rebuilds the torch file's root dict and runs
 * the same checks (mg_train_ckpt_load_root).
 */
#ifndef MG_TRAIN_CHECKPOINT_INTERNAL_H
#define MG_TRAIN_CHECKPOINT_INTERNAL_H

#include "checkpoint.h"
#include "mg/pickle.h"
#include "mg/schema.h"
#include "param_order.h" /* the names of a naming (mg_gpt_names) and the parameter order */

typedef struct {
    size_t *order;
    float *steps; /* one per tensor: tensors sharing a pointer share a storage in the file */
    mg_tname *names; /* in the naming of --transformer-impl */
    uint16_t *half;  /* --bf16/--fp16: the 16-bit model tensors (laid out as params), else NULL */
} mg_train_save_bufs;

/* Allocates b for a save of g and opt under o (MG_ERR_NOMEM with nothing held); frees it. */
mg_status mg_train_save_bufs_init(mg_train_save_bufs *b, const mg_train_opts *o,
                                  const mg_gpt *g, const mg_gpt_optim *opt);
void mg_train_save_bufs_free(mg_train_save_bufs *b);

/* The torch file's root dict (checkpoint.h) in pg; tensors point at g's and opt's buffers. */
mg_status mg_train_ckpt_build_root(mg_pk_graph *pg, const mg_train_opts *o, const mg_gpt *g,
                                   const mg_gpt_optim *opt, const mg_train_ckpt_state *st,
                                   mg_train_save_bufs *b, mg_pk_obj **root);
/* Checks root (a torch file's root dict, path names it) and loads it into g, opt, st, in
 * the naming its model dict uses (either spec's). */
mg_status mg_train_ckpt_load_root(const char *path, const mg_pk_obj *root, int release,
                                  mg_gpt *g, mg_gpt_optim *opt, mg_train_ckpt_state *st);
/* The optimizer's parameter order for the naming of names (indices into g->t): the decay
 * tensors, then the others, each in param_order.h's order; returns the decay tensors' count. */
size_t mg_train_ckpt_param_order(const mg_gpt *g, const mg_tname *names, size_t *order);

/* checkpoint_dist.c: writes the shard sh's torch_dist data files into the folder dir (made
 * when missing; writer 0, tensor and pipeline rank 0, also common.pt and metadata.json) and
 * hands back its part of the .metadata (mg_dcp_meta_pack); writes dir/.metadata from every
 * writer's part (NULL parts skipped); loads this rank's shards of the torch_dist folder
 * iterpath (written at the same tensor and pipeline sizes: common.pt's args say so);
 * removes what writes left in dir. */
mg_status mg_train_ckpt_write_dist(const char *dir, const mg_train_ckpt_shard *sh,
                                   const mg_train_opts *o, const mg_gpt *g,
                                   const mg_gpt_optim *opt, const mg_train_ckpt_state *st,
                                   uint8_t **part, size_t *part_len);
mg_status mg_train_ckpt_write_dist_meta(const char *dir, const uint8_t *const *parts,
                                        const size_t *lens, size_t n);
mg_status mg_train_ckpt_load_dist(const char *iterpath, int release, mg_gpt *g,
                                  mg_gpt_optim *opt, mg_train_ckpt_state *st);
void mg_train_ckpt_remove_dist(const char *dir);

#endif

/* checkpoint.h — mg-train's Megatron `torch`-format checkpoints (--save / --load).
 *
 * Contract (facts: docs/FORMATS.md §5.1-§5.3):
 *   - Layout (mg/megatron_layout.h): DIR/iter_%07d/mp_rank_TT[_PPP]/model_optim_rng.pt (one
 *     file per model shard: tensor rank TT, pipeline rank PPP when PP > 1, Megatron's
 *     get_checkpoint_name) and the tracker DIR/latest_checkpointed_iteration.txt
 *     ("<iteration>", no newline). A save writes the iteration folder under a temporary name
 *     (DIR/iter_%07d.tmp), renames it into place (replacing an older folder of the same
 *     iteration) and writes the tracker last (atomic rename), so a crash never leaves a
 *     tracker pointing at a partial folder. With several writers (one per model shard): one
 *     rank calls mg_train_ckpt_begin(), then every writer mg_train_ckpt_write() its shard,
 *     then one rank mg_train_ckpt_commit() — the caller puts a barrier between the phases.
 *     mg_train_ckpt_save() is the three for the single shard mp_rank_00. A writer may add
 *     files of its own to its shard folder (mg_train_ckpt_shard_file: the distributed
 *     optimizer's distrib_optim.pt); a commit or clean-up removes them with the folder.
 *     With --ckpt-format torch_dist (checkpoint_internal.h) the iteration folder holds the
 *     torch_dist files instead: each writer its data files, writer 0 (tensor and pipeline
 *     rank 0) common.pt and metadata.json, and the committing rank the .metadata of every
 *     writer's part (mg_train_ckpt_write hands it back; mg_train_ckpt_write_meta), at any
 *     TP x PP; fp32 only (--bf16/--fp16: "not supported yet" on save).
 *   - The file: {'args': Namespace (mg_model_to_args + transformer_impl
 *     "transformer_engine" or "local" (--transformer-impl), sequence_parallel, iteration,
 *     consumed_train_samples, consumed_valid_samples, train_iters, global/micro batch size,
 *     seed, lr), 'checkpoint_version': 3.0, 'iteration', 'model': OrderedDict of fp32
 *     tensors of this shard (--bf16/--fp16: Float16Module's 16-bit ones, the masters rounded
 *     to nearest-even as the run's weight copy is; args bf16/fp16 and params_dtype say
 *     which) (layer numbers local to its stage) under the model's
 *     Megatron-Core names of that spec (TE: the norms fused as
 *     linear_qkv.layer_norm_weight / linear_fc1.layer_norm_weight; local: input_layernorm /
 *     pre_mlp_layernorm), 'optimizer': torch.optim.AdamW state_dict ({'state': {i: {'step',
 *     'exp_avg', 'exp_avg_sq'}, each step its own storage}, 'param_groups': [decay group,
 *     no-decay group], each with AdamW's keys, Megatron's (wd_mult, lr_mult,
 *     is_expert_parallel, is_decoupled_lr, max_lr, min_lr, default_config), bias_correction
 *     and step; parameter indices: the decay tensors, then the others, each in Megatron's
 *     parameter order of that spec (a layer's linear_proj before its linear_qkv; the local
 *     spec's input_layernorm before both)),
 *     'opt_param_scheduler' (Megatron's OptimizerParamScheduler.state_dict, steps in
 *     samples: num_steps leaves out the skipped iterations' samples),
 *     'num_floating_point_operations_so_far'}; with --bf16/--fp16 and without the
 *     distributed optimizer (mg_train_ckpt_mixed_optim), 'optimizer' is megatron-core's
 *     Float16OptimizerWithFloat16Params.state_dict() instead: {'optimizer': that AdamW
 *     state_dict, 'grad_scaler' (below, when the run has a scaler), 'fp32_from_fp16_params':
 *     [[the fp32 masters of the decay group], [those of the no-decay group]], each in its
 *     group's parameter order}; with a grad scaler (grad_scaler.h) the
 *     optimizer dict also holds 'grad_scaler' where megatron-core's MixedPrecisionOptimizer
 *     and DistributedOptimizer state dicts hold it: {'scale': float32 tensor [1],
 *     'growth_tracker', 'hysteresis_tracker'} for the dynamic scaler, {} for the constant
 *     one (torch_dist: in common.pt's optimizer dict); with --use-distributed-optimizer
 *     'optimizer' also holds DistributedOptimizer.state_dict()'s {'optimizer':
 *     {'param_groups': the same groups without 'params'}}, which megatron-core's
 *     DistributedOptimizer.load_state_dict reads (torch's reads the other keys), and
 *     distrib_optim.pt lies beside the file (dist_optim.h); args also carry hidden_dropout,
 *     attention_dropout, tokenizer_type and tokenizer_model. There is no 'rng_state':
 *     mg-train draws no random numbers after the seeded initialisation (dropout 0); Megatron
 *     itself then needs --no-load-rng (or --finetune) to load the file.
 *   - Load first checks args' tensor_model_parallel_size and pipeline_model_parallel_size
 *     (where present) against the model's (a `torch` checkpoint loads at its own layout, as
 *     Megatron's check_checkpoint_args; mg-convert reshards it). It reads either naming (the
 *     local spec's when a norm is found only under its local name) and the optimizer state
 *     in that spec's order. It checks every model tensor: present, floating-point (F32;
 *     BF16, F16 and F64 are converted to fp32, e.g. mg-convert --target-dtype bf16),
 *     contiguous, same shape; an extra tensor is refused too (MG_ERR_FORMAT naming the file,
 *     the tensor and the mismatch); then args' num_layers, hidden_size, heads, query groups,
 *     kv_channels, FFN size and padded vocabulary, where present, must equal the model's.
 *     With optim != NULL the moments and step count are restored (same checks), and the
 *     optimizer's 'grad_scaler' is read into st->scaler (a dynamic one's scale: a float32
 *     tensor of one element, integer trackers); the mixed-precision state dict (with
 *     'fp32_from_fp16_params', from mg-train or megatron-core) gives the moments from its
 *     'optimizer' and the fp32 masters, which replace the 16-bit model tensors' values
 *     (which class of state a run may load is ckpt_preflight.h's check); where the
 *     file's 'optimizer' is megatron-core's DistributedOptimizer.state_dict() (param groups
 *     only, the step count in each) -- or mg-train's, with torch's full moments beside them,
 *     from a --bf16/--fp16 run (args.bf16 or args.fp16: 16-bit model tensors) --, from
 *     distrib_optim.pt beside it (dist_optim.h: the fp32 master weights replace the file's
 *     model tensors, written at any DP size); param
 *     groups without wd_mult (files of older mg-train versions, whose parameter order
 *     differed) are refused with a pointer to --no-load-optim.
 */
#ifndef MG_TRAIN_CHECKPOINT_H
#define MG_TRAIN_CHECKPOINT_H

#include <stdint.h>

#include "grad_scaler.h"
#include "mg/error.h"
#include "mg/pickle.h"
#include "model.h"
#include "options.h"
#include "step.h"

typedef struct {
    int64_t iteration;
    int64_t consumed_train_samples, consumed_valid_samples;
    double flops_so_far;
    int optim_loaded;             /* the moments were restored (not for 'release') */
    /* samples of the skipped iterations: the lr scheduler's num_steps is
     * consumed_train_samples minus this (Megatron steps it after successful updates only) */
    int64_t sched_behind;
    /* save: the run's grad scaler (written when it has one); load: the file's 'grad_scaler'
     * (kind none when absent, constant for an empty dict; with the optimizer only) */
    mg_grad_scaler scaler;
} mg_train_ckpt_state;

typedef struct {
    int64_t tp_rank, pp_rank, pp;  /* this model shard and the pipeline size */
} mg_train_ckpt_shard;

/* The run's optimizer is megatron-core's Float16OptimizerWithFloat16Params (--bf16/--fp16
 * without --use-distributed-optimizer): its state dict is the mixed-precision one. */
int mg_train_ckpt_mixed_optim(const mg_train_opts *o);

/* The optimizer state dict od (a file's 'optimizer') is the mixed-precision one. */
int mg_train_ckpt_optim_is_mixed(const mg_pk_obj *od);

mg_status mg_train_ckpt_save(const char *dir, const mg_train_opts *o, const mg_gpt *g,
                             const mg_gpt_optim *opt, const mg_train_ckpt_state *st);
/* The phases of a save with several writers (see the contract). */
mg_status mg_train_ckpt_begin(const char *dir, int64_t iteration);
/* With --ckpt-format torch_dist the writer's part of the .metadata comes back in *part
 * (malloc'd, *part_len bytes; the caller frees it; NULL for the torch format); the
 * committing rank hands every writer's part (in any order) to mg_train_ckpt_write_meta
 * before mg_train_ckpt_commit. */
mg_status mg_train_ckpt_write(const char *dir, const mg_train_ckpt_shard *sh,
                              const mg_train_opts *o, const mg_gpt *g, const mg_gpt_optim *opt,
                              const mg_train_ckpt_state *st, uint8_t **part, size_t *part_len);
mg_status mg_train_ckpt_write_meta(const char *dir, int64_t iteration,
                                   const uint8_t *const *parts, const size_t *lens, size_t n);
mg_status mg_train_ckpt_commit(const char *dir, int64_t iteration);
/* Where a writer puts another file of its shard before the commit (distrib_optim.pt). */
mg_status mg_train_ckpt_shard_file(char *buf, size_t n, const char *dir, int64_t iteration,
                                   const mg_train_ckpt_shard *sh, const char *file);

/* Reads DIR's latest checkpoint (load_shard: iteration step, -1 the tracker's; a Hugging Face
 * folder or a missing iteration named as ckpt_head.h names them) into g (and opt when not
 * NULL) and *st: mp_rank_00, or the shard sh's file. */
mg_status mg_train_ckpt_load(const char *dir, mg_gpt *g, mg_gpt_optim *opt,
                             mg_train_ckpt_state *st);
mg_status mg_train_ckpt_load_shard(const char *dir, int64_t step, const mg_train_ckpt_shard *sh,
                                   mg_gpt *g, mg_gpt_optim *opt, mg_train_ckpt_state *st);

#endif

/* ckpt_preflight.h — mg-train's checks of a --load against the flags, before any dataset
 * or model is built, and Megatron's --use-checkpoint-args (ckpt_head.h reads the
 * checkpoint).
 *
 * Contract:
 *   - mg_train_use_ckpt_args (before validation, options.c): the architecture comes from
 *     the checkpoint's args as Megatron's load_args_from_checkpoint takes it: sizes the
 *     command line did not give (num_layers, hidden_size, ffn_hidden_size, heads,
 *     kv_channels, seq_length, max_position_embeddings), and always the variants
 *     (normalization and its epsilon, swiglu, position embedding, rotary base, biases, tied
 *     embeddings, query groups, vocabulary divisor); the vocabulary size when
 *     --vocab-size is not given and the tokenizer is none or NullTokenizer. The parallel
 *     layout stays the flags' (Megatron takes it only with
 *     --use-mp-args-from-checkpoint-args). MG_ERR_ARG without --load or when the
 *     checkpoint has no args.
 *   - mg_train_ckpt_preflight (after the vocabulary is known): MG_ERR_ARG when
 *       - the checkpoint is `torch` at another TP x PP than the run: both layouts and the
 *         mg-convert command that reshards it;
 *       - a model flag contradicts the checkpoint's args: every such flag, each as
 *         "KEY CKPT_VALUE, --FLAG FLAG_VALUE" (the sizes, the variants, the padded
 *         vocabulary, and max_position_embeddings with learned positions);
 *       - when the scheduler state is loaded (not --finetune, --no-load-optim, release)
 *         and neither --override-opt_param-scheduler nor
 *         --use-checkpoint-opt_param-scheduler is given: any of max_lr, min_lr,
 *         lr_warmup_steps, lr_decay_steps, lr_decay_style, start_wd, end_wd,
 *         wd_incr_steps, wd_incr_style differs from the flags' (Megatron's
 *         OptimizerParamScheduler.load_state_dict), every difference named. With
 *         --use-checkpoint-opt_param-scheduler, o->sched takes the checkpoint's values.
 *       - when the optimizer state is loaded (not --finetune, --no-load-optim, release):
         the checkpoint's optimizer state is megatron-core's Float16OptimizerWithFloat16Params'
         (a --bf16/--fp16 run's) and the run's is FP32Optimizer's, or the reverse (Megatron's
         load_state_dict raises KeyError and load_checkpoint stops advising
         --no-load-optim); MG_ERR_UNSUPPORTED for a torch_dist checkpoint's optimizer state
         in a --bf16/--fp16 run (its fp32_param masters: not supported yet).
     plus ckpt_head.h's errors (a Hugging Face folder, a missing iteration or rank file).
 */
#ifndef MG_TRAIN_CKPT_PREFLIGHT_H
#define MG_TRAIN_CKPT_PREFLIGHT_H

#include "options.h"

mg_status mg_train_use_ckpt_args(mg_train_opts *o);
mg_status mg_train_ckpt_preflight(mg_train_opts *o);

#endif

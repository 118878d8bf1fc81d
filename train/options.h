/* options.h — mg-train's command line: Megatron's flag names (pretrain_gpt.py /
 * megatron/training/arguments.py, megatron-core 0.16.1), parsed and validated as
 * validate_args() does, with its derived values.
 *
 * Contract:
 *   - mg_train_parse() fills opts from argv (argv[0] skipped). Flags are exact (Megatron's
 *     parser has allow_abbrev=False), "--flag value" or "--flag=value"; the last occurrence
 *     wins; --data-path takes every following word up to the next flag. It never prints and
 *     never exits: a bad flag or combination is MG_ERR_ARG, a recognised flag or value this
 *     build does not implement is MG_ERR_UNSUPPORTED ("not supported yet: ..."), both with
 *     the message in mg_last_error(). --help / --version / --list-flags stop validation
 *     (opts->help ...).
 *   - Derived values (as validate_args / get_optimizer_param_scheduler): ffn_hidden_size 4h
 *     (SwiGLU: int(4h*2/3/64)*64), kv_channels h/heads, num_query_groups = heads without
 *     --group-query-attention, the data-parallel size DP = world size / (TP x PP) with the
 *     world size of the launch (comm_launch.h: mpirun, srun, torchrun's WORLD_SIZE; 1
 *     otherwise), global batch size = micro batch size x DP by default and a
 *     multiple of it, train_iters = train_samples / global batch size, the scheduler in
 *     samples (warmup from --lr-warmup-fraction x decay samples), weight decay start/end for
 *     the constant style, split "969, 30, 1" when --data-path comes without --split.
 *   - The vocabulary: --tokenizer-type (+ its files) gives Megatron's tokenizer.vocab_size
 *     (mg_tokenizer_vocab_size; read in mg_train_resolve_vocab); otherwise --vocab-size is
 *     the vocabulary. padded_vocab_size = ceil(V / (make_vocab_size_divisible_by x TP)) x
 *     that (Megatron's _vocab_size_with_padding).
 *   - Strings in opts point into argv (owned by the caller); data_path and special_tokens
 *     are malloc'd and released by mg_train_opts_free, with model.hf_config_json.
 */
#ifndef MG_TRAIN_OPTIONS_H
#define MG_TRAIN_OPTIONS_H

#include <stddef.h>
#include <stdint.h>

#include "lr_schedule.h"
#include "mg/model_desc.h"
#include "mg/tokenizer.h"

#define MG_TRAIN_MAX_IGNORED 64

/* --recompute-granularity and --recompute-method (MG_RC_*_NONE: not given). */
typedef enum { MG_RC_NONE = 0, MG_RC_FULL, MG_RC_SELECTIVE } mg_train_recompute;
typedef enum { MG_RC_METHOD_NONE = 0, MG_RC_UNIFORM, MG_RC_BLOCK } mg_train_recompute_method;

/* --device: where the model runs (device.h). */
typedef enum { MG_DEVICE_AUTO = 0, MG_DEVICE_CPU, MG_DEVICE_CUDA } mg_train_device;

typedef struct {
    /* model (flag list 1); model.seq_length, model.padded_vocab_size derived */
    mg_model_desc model;
    int group_query_attention;
    int sequence_parallel;         /* --sequence-parallel (off when TP = 1, as Megatron) */
    double init_method_std;        /* --init-method-std, 0.02 */
    double hidden_dropout, attention_dropout; /* only 0 is implemented */
    int local_spec;                /* --transformer-impl local: checkpoint names of the local
                                    * spec (input_layernorm, pre_mlp_layernorm); default
                                    * transformer_engine (TE's fused norm names) */
    int mask_vocab_padding;        /* --mask-vocab-padding (mg-train's own): padding columns
                                    * out of the softmax, padding rows start at zero */
    mg_tok_opts tok;               /* --tokenizer-type and its files, --vocab-size, the
                                    * --tiktoken-*, --tokenizer-* and --null-tokenizer-* flags */
    const char **special_tokens;   /* --tokenizer-special-tokens (tok.special_tokens) */
    size_t n_special_tokens;
    /* training (list 3) */
    int64_t micro_batch_size, global_batch_size, data_parallel_size;
    int64_t world_size;            /* from the launch (comm_launch.h); DP = world / (TP x PP) */
    int use_distributed_optimizer; /* --use-distributed-optimizer */
    int overlap_grad_reduce;       /* --overlap-grad-reduce: bucketed reduction from the
                                    * backward (grad_buckets.h) */
    int64_t ddp_bucket_size;       /* --ddp-bucket-size (elements; 0: not given) */
    double distributed_timeout_minutes; /* --distributed-timeout-minutes, 10 (Megatron: an
                                           int; fractions accepted here, for tests) */
    int64_t train_iters, train_samples; /* 0 = not given; train_iters derived */
    double lr, min_lr, lr_warmup_init, lr_warmup_fraction; /* fraction < 0: not given */
    int64_t lr_warmup_iters, lr_warmup_samples, lr_decay_iters, lr_decay_samples;
    int64_t lr_wsd_decay_iters, lr_wsd_decay_samples;      /* -1 = not given */
    mg_lr_style lr_decay_style;
    mg_wsd_style lr_wsd_decay_style;
    double weight_decay, start_weight_decay, end_weight_decay; /* start/end < 0: not given */
    mg_wd_style weight_decay_incr_style;
    double adam_beta1, adam_beta2, adam_eps, clip_grad;
    int64_t seed;
    int bf16, fp16;
    /* fp16 loss scaling (Megatron's DynamicGradScaler; loss_scale > 0: a constant scale) */
    double loss_scale, initial_loss_scale, min_loss_scale; /* 0 (none), 2^32, 1 */
    int64_t loss_scale_window, hysteresis;                 /* 1000, 2 */
    mg_train_device device;       /* --device cuda|cpu|auto (auto) */
    /* activation recomputation (options_recompute.c): granularity and method as given, or
     * selective by --recompute-activations; num_layers 0 = not given */
    mg_train_recompute recompute_granularity;
    mg_train_recompute_method recompute_method;
    int64_t recompute_num_layers;
    int recompute_activations;
    /* data (list 4) */
    const char **data_path;
    size_t n_data_path;
    const char *split, *data_cache_path;
    int eod_mask_loss, reset_position_ids, reset_attention_mask, mock_data;
    int64_t eval_interval, eval_iters;  /* eval_interval 0 = no evaluation */
    /* checkpoints (list 5) */
    const char *save, *load;
    int64_t save_interval, exit_interval, exit_duration_in_mins; /* 0 = not given */
    int no_load_optim, no_load_rng, finetune, exit_signal_handler;
    int ckpt_torch_dist;          /* --ckpt-format torch_dist (default torch) */
    int64_t ckpt_step;            /* --ckpt-step N: the iteration to load; -1 the tracker's */
    int use_checkpoint_args;      /* --use-checkpoint-args: the model from --load's args */
    int override_sched;           /* --override-opt_param-scheduler: the flags' schedule */
    int use_ckpt_sched;           /* --use-checkpoint-opt_param-scheduler: the checkpoint's */
    /* logging (list 6) */
    int64_t log_interval;
    const char *log_file;
    int log_throughput;
    const char *tensorboard_dir;  /* --tensorboard-dir: TensorBoard event files */
    int64_t tensorboard_log_interval; /* --tensorboard-log-interval (1) */
    int tensorboard_loss_scale;   /* off: --no-log-loss-scale-to-tensorboard */
    double peak_tflops;           /* --peak-tflops: MFU's peak per rank; NAN = measured */
    /* planning (list 7) and the tool */
    int dry_run, help, version, list_flags; /* list_flags: --list-flags */
    int64_t dump_samples;           /* --dump-samples N: print N training samples, exit */
    int openai_gelu, no_bias_gelu_fusion; /* --openai-gelu, --no-bias-gelu-fusion */
    mg_lr_sched sched;              /* derived, in samples */
    const char *pos_type_;          /* --position-embedding-type as given (internal) */
    /* Megatron's flags without an effect here, or refused (options_megatron.h) */
    const char *ignored_flags[MG_TRAIN_MAX_IGNORED];
    size_t n_ignored_flags;
    char refused_flags[1024];
} mg_train_opts;

/* Parses and validates argv (see the contract). Reads no file except, with
 * --use-checkpoint-args, the --load checkpoint's args (ckpt_preflight.h): the vocabulary
 * size comes from mg_train_resolve_vocab() afterwards. */
mg_status mg_train_parse(mg_train_opts *o, int argc, char **argv);

/* Sets model.vocab_size (from the tokenizer when --tokenizer-type is given, else
 * --vocab-size) and model.padded_vocab_size; MG_ERR_ARG when neither is given. */
mg_status mg_train_resolve_vocab(mg_train_opts *o);

/* Prints --list-flags (mg_cli_list_flags): every flag of the table. */
void mg_train_list_flags(void);

void mg_train_opts_free(mg_train_opts *o);

#endif

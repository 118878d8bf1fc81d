/* options.c — argv -> mg_train_opts: the flag table, defaults and value parsing
 * (options.h); the words are scanned by mg/argv.h. Validation and derived values are in
 * options_validate.c. Megatron's parser has allow_abbrev=False, so only exact names (or
 * "--name=value") are accepted. */
#include "options.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt_preflight.h"
#include "comm_launch.h"
#include "mg/argv.h"
#include "mg/cli.h"
#include "options_internal.h"
#include "options_megatron.h"

enum kind { K_ON, K_OFF, K_I64, K_F64, K_INT_F64, K_STR, K_LIST, K_CHOICE };

typedef int (*choice_fn)(mg_train_opts *o, const char *v);

struct flag {
    const char *name;
    enum kind kind;
    size_t off;        /* field in mg_train_opts */
    int64_t min;       /* K_I64 / K_INT_F64: smallest accepted value */
    choice_fn choice;  /* K_CHOICE: returns 0, or -1 for an invalid choice */
    const char *choices;
};

#define F(field) offsetof(mg_train_opts, field)

static int ch_norm(mg_train_opts *o, const char *v)
{
    if (strcmp(v, "LayerNorm") && strcmp(v, "RMSNorm")) return -1;
    o->model.rmsnorm = strcmp(v, "RMSNorm") == 0;
    return 0;
}

static int ch_pos(mg_train_opts *o, const char *v)
{
    static const char *const ok[] = {"learned_absolute", "rope", "mrope", "relative", "none"};
    for (int i = 0; i < 5; i++)
        if (strcmp(v, ok[i]) == 0) {
            o->model.learned_positions = i == 0;
            o->pos_type_ = ok[i];
            return 0;
        }
    return -1;
}

static int ch_tiktoken(mg_train_opts *o, const char *v)
{
    if (!mg_tiktoken_pattern_known(v)) return -1;
    o->tok.tiktoken_pattern = v;
    return 0;
}

static int ch_device(mg_train_opts *o, const char *v)
{
    static const char *const ok[] = {"auto", "cpu", "cuda"};
    for (int i = 0; i < 3; i++)
        if (strcmp(v, ok[i]) == 0) {
            o->device = (mg_train_device)i;
            return 0;
        }
    return -1;
}

static int ch_ckpt(mg_train_opts *o, const char *v)
{
    if (strcmp(v, "torch") && strcmp(v, "torch_dist")) return -1;
    o->ckpt_torch_dist = strcmp(v, "torch_dist") == 0;
    return 0;
}

static int ch_impl(mg_train_opts *o, const char *v)
{
    if (strcmp(v, "transformer_engine") && strcmp(v, "local")) return -1;
    o->local_spec = strcmp(v, "local") == 0;
    return 0;
}

static int ch_lr(mg_train_opts *o, const char *v) { return mg_lr_style_parse(v, &o->lr_decay_style); }
static int ch_wsd(mg_train_opts *o, const char *v) { return mg_wsd_style_parse(v, &o->lr_wsd_decay_style); }
static int ch_wd(mg_train_opts *o, const char *v) { return mg_wd_style_parse(v, &o->weight_decay_incr_style); }

static const struct flag flags[] = {
    /* model */
    {"--num-layers", K_I64, F(model.num_layers), 1, NULL, NULL},
    {"--hidden-size", K_I64, F(model.hidden_size), 1, NULL, NULL},
    {"--ffn-hidden-size", K_I64, F(model.ffn_hidden_size), 1, NULL, NULL},
    {"--num-attention-heads", K_I64, F(model.num_attention_heads), 1, NULL, NULL},
    {"--kv-channels", K_I64, F(model.kv_channels), 1, NULL, NULL},
    {"--group-query-attention", K_ON, F(group_query_attention), 0, NULL, NULL},
    {"--num-query-groups", K_I64, F(model.num_query_groups), 1, NULL, NULL},
    {"--seq-length", K_I64, F(model.seq_length), 1, NULL, NULL},
    {"--max-position-embeddings", K_I64, F(model.max_position_embeddings), 1, NULL, NULL},
    {"--normalization", K_CHOICE, 0, 0, ch_norm, "LayerNorm, RMSNorm"},
    {"--norm-epsilon", K_F64, F(model.norm_epsilon), 0, NULL, NULL},
    {"--swiglu", K_ON, F(model.swiglu), 0, NULL, NULL},
    {"--position-embedding-type", K_CHOICE, 0, 0, ch_pos,
     "learned_absolute, rope, mrope, relative, none"},
    {"--rotary-base", K_INT_F64, F(model.rotary_base), 1, NULL, NULL},
    {"--untie-embeddings-and-output-weights", K_OFF, F(model.tied_embeddings), 0, NULL, NULL},
    {"--disable-bias-linear", K_OFF, F(model.add_bias_linear), 0, NULL, NULL},
    {"--add-qkv-bias", K_ON, F(model.add_qkv_bias), 0, NULL, NULL},
    {"--openai-gelu", K_ON, F(openai_gelu), 0, NULL, NULL},
    {"--no-bias-gelu-fusion", K_ON, F(no_bias_gelu_fusion), 0, NULL, NULL},
    {"--init-method-std", K_F64, F(init_method_std), 0, NULL, NULL},
    {"--hidden-dropout", K_F64, F(hidden_dropout), 0, NULL, NULL},
    {"--attention-dropout", K_F64, F(attention_dropout), 0, NULL, NULL},
    {"--transformer-impl", K_CHOICE, 0, 0, ch_impl, "local, transformer_engine"},
    {"--mask-vocab-padding", K_ON, F(mask_vocab_padding), 0, NULL, NULL},
    {"--make-vocab-size-divisible-by", K_I64, F(model.make_vocab_size_divisible_by), 1, NULL, NULL},
    {"--vocab-size", K_I64, F(tok.vocab_size), 1, NULL, NULL},
    {"--tokenizer-type", K_STR, F(tok.type), 0, NULL, NULL},
    {"--vocab-file", K_STR, F(tok.vocab_file), 0, NULL, NULL},
    {"--merge-file", K_STR, F(tok.merge_file), 0, NULL, NULL},
    {"--tokenizer-model", K_STR, F(tok.model), 0, NULL, NULL},
    {"--tiktoken-pattern", K_CHOICE, 0, 0, ch_tiktoken,
     "v1, v2, r50k_base, p50k_base, p50k_edit, cl100k_base, o200k_base"},
    {"--tiktoken-num-special-tokens", K_I64, F(tok.tiktoken_num_special), 0, NULL, NULL},
    {"--tokenizer-special-tokens", K_LIST, F(special_tokens), 0, NULL, NULL},
    {"--tokenizer-hf-no-include-special-tokens", K_ON, F(tok.hf_no_include_special), 0, NULL,
     NULL},
    {"--null-tokenizer-eod-id", K_I64, F(tok.null_eod_id), 0, NULL, NULL},
    {"--tensor-model-parallel-size", K_I64, F(model.tp), 1, NULL, NULL},
    {"--pipeline-model-parallel-size", K_I64, F(model.pp), 1, NULL, NULL},
    {"--decoder-first-pipeline-num-layers", K_I64, F(model.pp_first), 1, NULL, NULL},
    {"--decoder-last-pipeline-num-layers", K_I64, F(model.pp_last), 1, NULL, NULL},
    {"--sequence-parallel", K_ON, F(sequence_parallel), 0, NULL, NULL},
    {"--use-distributed-optimizer", K_ON, F(use_distributed_optimizer), 0, NULL, NULL},
    {"--overlap-grad-reduce", K_ON, F(overlap_grad_reduce), 0, NULL, NULL},
    {"--ddp-bucket-size", K_I64, F(ddp_bucket_size), 1, NULL, NULL},
    {"--distributed-timeout-minutes", K_F64, F(distributed_timeout_minutes), 0, NULL, NULL},
    /* training */
    {"--micro-batch-size", K_I64, F(micro_batch_size), 1, NULL, NULL},
    {"--global-batch-size", K_I64, F(global_batch_size), 1, NULL, NULL},
    {"--train-iters", K_I64, F(train_iters), 1, NULL, NULL},
    {"--train-samples", K_I64, F(train_samples), 1, NULL, NULL},
    {"--lr", K_F64, F(lr), 0, NULL, NULL},
    {"--min-lr", K_F64, F(min_lr), 0, NULL, NULL},
    {"--lr-decay-style", K_CHOICE, 0, 0, ch_lr,
     "constant, linear, cosine, inverse-square-root, WSD"},
    {"--lr-wsd-decay-style", K_CHOICE, 0, 0, ch_wsd, "exponential, linear, cosine, minus_sqrt"},
    {"--lr-decay-iters", K_I64, F(lr_decay_iters), 1, NULL, NULL},
    {"--lr-decay-samples", K_I64, F(lr_decay_samples), 1, NULL, NULL},
    {"--lr-wsd-decay-iters", K_I64, F(lr_wsd_decay_iters), 0, NULL, NULL},
    {"--lr-wsd-decay-samples", K_I64, F(lr_wsd_decay_samples), 0, NULL, NULL},
    {"--lr-warmup-iters", K_I64, F(lr_warmup_iters), 0, NULL, NULL},
    {"--lr-warmup-samples", K_I64, F(lr_warmup_samples), 0, NULL, NULL},
    {"--lr-warmup-fraction", K_F64, F(lr_warmup_fraction), 0, NULL, NULL},
    {"--lr-warmup-init", K_F64, F(lr_warmup_init), 0, NULL, NULL},
    {"--weight-decay", K_F64, F(weight_decay), 0, NULL, NULL},
    {"--start-weight-decay", K_F64, F(start_weight_decay), 0, NULL, NULL},
    {"--end-weight-decay", K_F64, F(end_weight_decay), 0, NULL, NULL},
    {"--weight-decay-incr-style", K_CHOICE, 0, 0, ch_wd, "constant, linear, cosine"},
    {"--adam-beta1", K_F64, F(adam_beta1), 0, NULL, NULL},
    {"--adam-beta2", K_F64, F(adam_beta2), 0, NULL, NULL},
    {"--adam-eps", K_F64, F(adam_eps), 0, NULL, NULL},
    {"--clip-grad", K_F64, F(clip_grad), 0, NULL, NULL},
    {"--seed", K_I64, F(seed), 0, NULL, NULL},
    {"--bf16", K_ON, F(bf16), 0, NULL, NULL},
    {"--fp16", K_ON, F(fp16), 0, NULL, NULL},
    {"--loss-scale", K_F64, F(loss_scale), 0, NULL, NULL},
    {"--initial-loss-scale", K_F64, F(initial_loss_scale), 0, NULL, NULL},
    {"--min-loss-scale", K_F64, F(min_loss_scale), 0, NULL, NULL},
    {"--loss-scale-window", K_I64, F(loss_scale_window), 1, NULL, NULL},
    {"--hysteresis", K_I64, F(hysteresis), 1, NULL, NULL},
    {"--device", K_CHOICE, 0, 0, ch_device, "auto, cpu, cuda"},
    {"--recompute-granularity", K_CHOICE, 0, 0, mg_train_choose_recompute, "full, selective"},
    {"--recompute-method", K_CHOICE, 0, 0, mg_train_choose_recompute_method, "uniform, block"},
    {"--recompute-num-layers", K_I64, F(recompute_num_layers), 1, NULL, NULL},
    {"--recompute-activations", K_ON, F(recompute_activations), 0, NULL, NULL},
    /* data */
    {"--data-path", K_LIST, F(data_path), 0, NULL, NULL},
    {"--split", K_STR, F(split), 0, NULL, NULL},
    {"--data-cache-path", K_STR, F(data_cache_path), 0, NULL, NULL},
    {"--eod-mask-loss", K_ON, F(eod_mask_loss), 0, NULL, NULL},
    {"--reset-position-ids", K_ON, F(reset_position_ids), 0, NULL, NULL},
    {"--reset-attention-mask", K_ON, F(reset_attention_mask), 0, NULL, NULL},
    {"--mock-data", K_ON, F(mock_data), 0, NULL, NULL},
    {"--eval-interval", K_I64, F(eval_interval), 1, NULL, NULL},
    {"--eval-iters", K_I64, F(eval_iters), 0, NULL, NULL},
    /* checkpoints */
    {"--save", K_STR, F(save), 0, NULL, NULL},
    {"--load", K_STR, F(load), 0, NULL, NULL},
    {"--save-interval", K_I64, F(save_interval), 1, NULL, NULL},
    {"--ckpt-format", K_CHOICE, 0, 0, ch_ckpt, "torch, torch_dist"},
    {"--no-load-optim", K_ON, F(no_load_optim), 0, NULL, NULL},
    {"--no-load-rng", K_ON, F(no_load_rng), 0, NULL, NULL},
    {"--finetune", K_ON, F(finetune), 0, NULL, NULL},
    {"--ckpt-step", K_I64, F(ckpt_step), 0, NULL, NULL},
    {"--use-checkpoint-args", K_ON, F(use_checkpoint_args), 0, NULL, NULL},
    {"--override-opt_param-scheduler", K_ON, F(override_sched), 0, NULL, NULL},
    {"--use-checkpoint-opt_param-scheduler", K_ON, F(use_ckpt_sched), 0, NULL, NULL},
    {"--exit-signal-handler", K_ON, F(exit_signal_handler), 0, NULL, NULL},
    {"--exit-interval", K_I64, F(exit_interval), 1, NULL, NULL},
    {"--exit-duration-in-mins", K_I64, F(exit_duration_in_mins), 1, NULL, NULL},
    /* logging */
    {"--log-interval", K_I64, F(log_interval), 1, NULL, NULL},
    {"--log-file", K_STR, F(log_file), 0, NULL, NULL},
    {"--log-throughput", K_ON, F(log_throughput), 0, NULL, NULL},
    {"--peak-tflops", K_F64, F(peak_tflops), 0, NULL, NULL},
    {"--tensorboard-dir", K_STR, F(tensorboard_dir), 0, NULL, NULL},
    {"--tensorboard-log-interval", K_I64, F(tensorboard_log_interval), 1, NULL, NULL},
    {"--no-log-loss-scale-to-tensorboard", K_OFF, F(tensorboard_loss_scale), 0, NULL, NULL},
    /* the tool */
    {"--dry-run", K_ON, F(dry_run), 0, NULL, NULL},
    {"--dump-samples", K_I64, F(dump_samples), 1, NULL, NULL},
    {"--help", K_ON, F(help), 0, NULL, NULL},
    {"-h", K_ON, F(help), 0, NULL, NULL},
    {"--version", K_ON, F(version), 0, NULL, NULL},
    {"--list-flags", K_ON, F(list_flags), 0, NULL, NULL},
};
#define N_FLAGS (sizeof flags / sizeof flags[0])

static void set_defaults(mg_train_opts *o)
{
    memset(o, 0, sizeof *o);
    mg_model_init(&o->model);
    o->model.arch = MG_ARCH_GPT2;
    o->model.learned_positions = 1;
    o->model.add_bias_linear = 1;
    o->model.tied_embeddings = 1;
    o->model.num_query_groups = 1; /* argparse default of --num-query-groups */
    o->pos_type_ = "learned_absolute";
    mg_tok_opts_init(&o->tok);
    o->init_method_std = 0.02;
    o->data_parallel_size = 1;
    o->world_size = 1;
    o->distributed_timeout_minutes = 10;
    o->lr = NAN;
    o->lr_warmup_fraction = -1;
    o->lr_wsd_decay_iters = o->lr_wsd_decay_samples = -1;
    o->lr_decay_style = MG_LR_LINEAR;
    o->lr_wsd_decay_style = MG_WSD_EXPONENTIAL;
    o->weight_decay = 0.01;
    o->start_weight_decay = o->end_weight_decay = -1;
    o->weight_decay_incr_style = MG_WD_CONSTANT;
    o->adam_beta1 = 0.9;
    o->adam_beta2 = 0.999;
    o->adam_eps = 1e-8;
    o->clip_grad = 1.0;
    o->seed = 1234;
    o->initial_loss_scale = 4294967296.0; /* 2**32 */
    o->min_loss_scale = 1.0;
    o->loss_scale_window = 1000;
    o->hysteresis = 2;
    o->eval_iters = 100;
    o->log_interval = 100;
    o->ckpt_step = -1;
    o->peak_tflops = NAN; /* measured */
    o->tensorboard_log_interval = 1;
    o->tensorboard_loss_scale = 1;
}

static mg_status parse_f64(const struct flag *f, const char *v, double *out)
{
    char *end = NULL;
    double x = strtod(v, &end);
    MG_RETURN_IF(!*v || *end, MG_ERR_ARG, "argument %s: invalid float value: '%s'", f->name, v);
    *out = x;
    return MG_OK;
}

static mg_status parse_i64(const struct flag *f, const char *v, int64_t *out)
{
    return mg_argv_int(f->name, v, f->min, INT64_MAX, out);
}

/* The count of list flag f's array (--data-path, --tokenizer-special-tokens). */
static size_t *list_count(mg_train_opts *o, const struct flag *f)
{
    return f->off == F(data_path) ? &o->n_data_path : &o->n_special_tokens;
}

static mg_status push_list(mg_train_opts *o, const struct flag *f, const char *v)
{
    const char ***arr = (const char ***)(void *)((char *)o + f->off);
    size_t *n = list_count(o, f);
    const char **a = mg_realloc(*arr, (*n + 1) * sizeof *a);
    if (!a) return MG_ERR_NOMEM;
    a[(*n)++] = v;
    *arr = a;
    return MG_OK;
}

static mg_status set_value(mg_train_opts *o, const struct flag *f, const char *v)
{
    char *field = (char *)o + f->off;
    int64_t i = 0;
    switch (f->kind) {
    case K_I64: return parse_i64(f, v, (int64_t *)(void *)field);
    case K_F64: return parse_f64(f, v, (double *)(void *)field);
    case K_INT_F64:
        MG_FORWARD(parse_i64(f, v, &i));
        *(double *)(void *)field = (double)i;
        return MG_OK;
    case K_STR: *(const char **)(void *)field = v; return MG_OK;
    case K_LIST: return push_list(o, f, v);
    case K_CHOICE:
        MG_RETURN_IF(f->choice(o, v) != 0, MG_ERR_ARG,
                     "argument %s: invalid choice: '%s' (choose from %s)", f->name, v,
                     f->choices);
        return MG_OK;
    default: return MG_OK;
    }
}

/* Flags whose value is a file or path prefix, or a directory (shell completion). */
static const char *const file_flags[] = {"--vocab-file", "--merge-file", "--tokenizer-model",
                                         "--data-path", "--log-file", NULL};
static const char *const dir_flags[] = {"--data-cache-path", "--save", "--load",
                                        "--tensorboard-dir", "--wandb-save-dir", NULL};

/* The scanner's table: Megatron's parser has allow_abbrev=False (exact names only). */
static void argv_table(mg_argv_flag *t, mg_argv_spec *spec)
{
    for (size_t i = 0; i < N_FLAGS; i++) {
        enum kind k = flags[i].kind;
        mg_argv_nargs n = k == K_ON || k == K_OFF ? MG_ARGV_SWITCH
                          : k != K_LIST          ? MG_ARGV_ONE
                          : flags[i].off == F(data_path) ? MG_ARGV_ANY /* nargs='*' */
                                                         : MG_ARGV_LIST;
        t[i] = (mg_argv_flag){flags[i].name, n};
    }
    size_t nm = mg_train_megatron_count();
    for (size_t i = 0; i < nm; i++) t[N_FLAGS + i] = mg_train_megatron_flag(i);
    *spec = (mg_argv_spec){t, N_FLAGS + nm, 0, 0, -1, file_flags, dir_flags};
}


/* Applies flag a->id with its values. */
static mg_status take(mg_train_opts *o, const mg_argv *a)
{
    if ((size_t)a->id >= N_FLAGS) { /* options_megatron.h */
        mg_train_megatron_take(o, (size_t)a->id - N_FLAGS, a->values, a->nvalues);
        return MG_OK;
    }
    const struct flag *f = &flags[a->id];
    if (f->kind == K_ON || f->kind == K_OFF) {
        *(int *)(void *)((char *)o + f->off) = f->kind == K_ON;
        return MG_OK;
    }
    if (f->kind == K_LIST) *list_count(o, f) = 0; /* a repeated nargs='*'/'+' flag replaces */
    for (size_t k = 0; k < a->nvalues; k++) MG_FORWARD(set_value(o, f, a->values[k]));
    return MG_OK;
}

mg_status mg_train_parse(mg_train_opts *o, int argc, char **argv)
{
    set_defaults(o);
    mg_comm_launch l; /* the world size, as Megatron's WORLD_SIZE */
    MG_FORWARD(mg_comm_launch_detect(&l));
    o->world_size = l.world_size;
    mg_argv_flag table[N_FLAGS + MG_TRAIN_MEGATRON_MAX];
    mg_argv_spec spec;
    argv_table(table, &spec);
    mg_argv a;
    mg_argv_init(&a, &spec, argc, argv);
    for (mg_argv_event ev; (ev = mg_argv_next(&a)) != MG_ARGV_END;)
        MG_FORWARD(ev == MG_ARGV_FLAG ? take(o, &a) : mg_argv_error(&a, ev) /* argparse's words */);
    if (o->help || o->version || o->list_flags) return MG_OK;
    o->tok.special_tokens = o->special_tokens;
    o->tok.n_special_tokens = o->n_special_tokens;
    MG_FORWARD(mg_train_megatron_check(o));
    if (o->use_checkpoint_args) MG_FORWARD(mg_train_use_ckpt_args(o));
    MG_FORWARD(mg_train_megatron_conditions(o));
    return mg_train_validate(o);
}

void mg_train_list_flags(void)
{
    mg_argv_flag table[N_FLAGS + MG_TRAIN_MEGATRON_MAX];
    mg_argv_spec spec;
    argv_table(table, &spec);
    mg_cli_list_flags(&spec);
}

mg_status mg_train_resolve_vocab(mg_train_opts *o)
{
    if (o->tok.type) {
        mg_tokenizer *tk = NULL;
        MG_FORWARD(mg_tokenizer_create(&tk, &o->tok));
        o->model.vocab_size = mg_tokenizer_vocab_size(tk);
        mg_tokenizer_free(tk);
    } else {
        MG_RETURN_IF(o->tok.vocab_size <= 0, MG_ERR_ARG,
                     "the vocabulary size is unknown: give --vocab-size, or --tokenizer-type "
                     "with its files");
        o->model.vocab_size = o->tok.vocab_size;
    }
    o->model.padded_vocab_size = mg_model_padded_vocab(&o->model, o->model.tp);
    return MG_OK;
}

void mg_train_opts_free(mg_train_opts *o)
{
    if (!o) return;
    free(o->data_path);
    free(o->special_tokens);
    mg_model_free(&o->model);
    o->data_path = o->special_tokens = NULL;
    o->n_data_path = o->n_special_tokens = 0;
    o->tok.special_tokens = NULL;
    o->tok.n_special_tokens = 0;
}

/* options_megatron.c — options_megatron.h: Megatron's flags accepted without effect, or
 * refused together. */
#include "options_megatron.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* no_op: the value at which a valued flag changes nothing (NULL: any value); why: for a
 * refused flag, what mg-train lacks (NULL: the flag is ignored). */
static const struct {
    const char *name;
    mg_argv_nargs nargs;
    const char *no_op;
    const char *why;
} table[] = {
    /* implementation choices: the same result with mg-train's kernels */
    {"--use-mcore-models", MG_ARGV_SWITCH, NULL, NULL},
    {"--use-flash-attn", MG_ARGV_SWITCH, NULL, NULL},
    {"--attention-softmax-in-fp32", MG_ARGV_SWITCH, NULL, NULL},
    {"--no-masked-softmax-fusion", MG_ARGV_SWITCH, NULL, NULL},
    {"--no-bias-swiglu-fusion", MG_ARGV_SWITCH, NULL, NULL},
    {"--no-bias-dropout-fusion", MG_ARGV_SWITCH, NULL, NULL},
    {"--no-rope-fusion", MG_ARGV_SWITCH, NULL, NULL},
    {"--no-gradient-accumulation-fusion", MG_ARGV_SWITCH, NULL, NULL},
    {"--no-persist-layer-norm", MG_ARGV_SWITCH, NULL, NULL},
    {"--cross-entropy-loss-fusion", MG_ARGV_SWITCH, NULL, NULL},
    {"--no-async-tensor-model-parallel-allreduce", MG_ARGV_SWITCH, NULL, NULL},
    /* the all-gather's schedule only: the parameters are the same bits either way */
    {"--overlap-param-gather", MG_ARGV_SWITCH, NULL, NULL},
    {"--distributed-backend", MG_ARGV_ONE, "nccl|gloo", "another backend"},
    {"--optimizer", MG_ARGV_ONE, "adam", "another optimizer than AdamW"},
    {"--num-workers", MG_ARGV_ONE, NULL, NULL},
    {"--no-create-attention-mask-in-dataloader", MG_ARGV_SWITCH, NULL, NULL},
    {"--empty-unused-memory-level", MG_ARGV_ONE, NULL, NULL},
    {"--manual-gc", MG_ARGV_SWITCH, NULL, NULL},
    {"--manual-gc-interval", MG_ARGV_ONE, NULL, NULL},
    {"--async-save", MG_ARGV_SWITCH, NULL, NULL},
    {"--attention-backend", MG_ARGV_ONE, NULL, NULL},
    {"--exit-on-missing-checkpoint", MG_ARGV_SWITCH, NULL, NULL}, /* a missing --load stops */
    {"--ckpt-fully-parallel-save", MG_ARGV_SWITCH, NULL, NULL},
    {"--ckpt-fully-parallel-load", MG_ARGV_SWITCH, NULL, NULL},
    /* loggers mg-train does not write to */
    {"--timing-log-level", MG_ARGV_ONE, NULL, NULL},
    {"--log-num-zeros-in-grad", MG_ARGV_SWITCH, NULL, NULL},
    {"--log-params-norm", MG_ARGV_SWITCH, NULL, NULL},
    {"--log-world-size-to-tensorboard", MG_ARGV_SWITCH, NULL, NULL},
    {"--timing-log-option", MG_ARGV_ONE, NULL, NULL},
    {"--log-timers-to-tensorboard", MG_ARGV_SWITCH, NULL, NULL},
    {"--log-validation-ppl-to-tensorboard", MG_ARGV_SWITCH, NULL, NULL},
    {"--log-memory-to-tensorboard", MG_ARGV_SWITCH, NULL, NULL},
    {"--tensorboard-queue-size", MG_ARGV_ONE, NULL, NULL},
    {"--wandb-project", MG_ARGV_ONE, NULL, NULL},
    {"--wandb-exp-name", MG_ARGV_ONE, NULL, NULL},
    {"--wandb-save-dir", MG_ARGV_ONE, NULL, NULL},
    {"--wandb-entity", MG_ARGV_ONE, NULL, NULL},
    /* defaults named */
    {"--context-parallel-size", MG_ARGV_ONE, "1", "context parallelism"},
    {"--expert-model-parallel-size", MG_ARGV_ONE, "1", "expert parallelism"},
    {"--rotary-percent", MG_ARGV_ONE, "1|1.0", "partial rotary embeddings"},
    /* meanings mg-train cannot honour */
    {"--num-experts", MG_ARGV_ONE, NULL, "mixture of experts"},
    {"--moe-router-topk", MG_ARGV_ONE, NULL, "mixture of experts"},
    {"--fp8-format", MG_ARGV_ONE, NULL, "FP8 training"},
    {"--fp8-recipe", MG_ARGV_ONE, NULL, "FP8 training"},
    {"--use-legacy-models", MG_ARGV_SWITCH, NULL, "the legacy model classes"},
    {"--multi-latent-attention", MG_ARGV_SWITCH, NULL, "multi-latent attention"},
    {"--mtp-num-layers", MG_ARGV_ONE, NULL, "multi-token prediction"},
    {"--virtual-pipeline-model-parallel-size", MG_ARGV_ONE, NULL, "the interleaved pipeline"},
    {"--num-layers-per-virtual-pipeline-stage", MG_ARGV_ONE, NULL, "the interleaved pipeline"},
    {"--qk-layernorm", MG_ARGV_SWITCH, NULL, "query/key normalization"},
    {"--apply-layernorm-1p", MG_ARGV_SWITCH, NULL, "zero-centered layer norm"},
    {"--rotary-interleaved", MG_ARGV_SWITCH, NULL, "interleaved rotary embeddings"},
    {"--squared-relu", MG_ARGV_SWITCH, NULL, "squared ReLU"},
    {"--use-torch-fsdp2", MG_ARGV_SWITCH, NULL, "FSDP2"},
    {"--spec", MG_ARGV_LIST, NULL, "custom layer specs"},
    {"--yaml-cfg", MG_ARGV_ONE, NULL, "YAML configurations"},
};

_Static_assert(sizeof table / sizeof *table <= MG_TRAIN_MEGATRON_MAX, "MG_TRAIN_MEGATRON_MAX");

size_t mg_train_megatron_count(void) { return sizeof table / sizeof *table; }

mg_argv_flag mg_train_megatron_flag(size_t i)
{
    return (mg_argv_flag){table[i].name, table[i].nargs};
}

/* 1 when v is one of the '|'-separated words of list. */
static int one_of(const char *v, const char *list)
{
    size_t n = strlen(v);
    for (const char *p = list; p; p = strchr(p, '|'), p = p ? p + 1 : NULL)
        if (!strncmp(p, v, n) && (p[n] == '|' || p[n] == 0)) return 1;
    return 0;
}

static void add_ignored(mg_train_opts *o, const char *name)
{
    for (size_t k = 0; k < o->n_ignored_flags; k++)
        if (o->ignored_flags[k] == name) return;
    if (o->n_ignored_flags < MG_TRAIN_MAX_IGNORED) o->ignored_flags[o->n_ignored_flags++] = name;
}

static void add_refused(mg_train_opts *o, size_t i, const char *const *values, size_t n)
{
    char *buf = o->refused_flags;
    size_t cap = sizeof o->refused_flags, at = strlen(buf);
    if (at < cap)
        at += (size_t)snprintf(buf + at, cap - at, "%s%s", at ? "; " : "", table[i].name);
    for (size_t k = 0; k < n && at < cap; k++)
        at += (size_t)snprintf(buf + at, cap - at, " %s", values[k]);
    if (at < cap) snprintf(buf + at, cap - at, " (%s)", table[i].why);
}

void mg_train_megatron_take(mg_train_opts *o, size_t i, const char *const *values, size_t n)
{
    int ignored = table[i].no_op ? n == 1 && one_of(values[0], table[i].no_op) : !table[i].why;
    if (ignored) add_ignored(o, table[i].name);
    else add_refused(o, i, values, n);
}

static int was_given(const mg_train_opts *o, const char *name)
{
    for (size_t k = 0; k < o->n_ignored_flags; k++)
        if (!strcmp(o->ignored_flags[k], name)) return 1;
    return 0;
}

mg_status mg_train_megatron_check(const mg_train_opts *o)
{
    MG_RETURN_IF(o->refused_flags[0], MG_ERR_UNSUPPORTED, "not supported yet: Megatron flags "
                 "whose meaning mg-train cannot honour: %s", o->refused_flags);
    return MG_OK;
}

mg_status mg_train_megatron_conditions(const mg_train_opts *o)
{
    int opg = was_given(o, "--overlap-param-gather");
    MG_RETURN_IF(opg && !o->use_distributed_optimizer, MG_ERR_ARG,
                 "--overlap-param-gather only supported with distributed optimizer");
    MG_RETURN_IF(opg && !o->overlap_grad_reduce, MG_ERR_ARG,
                 "Must use --overlap-param-gather with --overlap-grad-reduce");
    return MG_OK;
}

void mg_train_megatron_note(const mg_train_opts *o, char *buf, size_t n)
{
    size_t at = 0;
    buf[0] = 0;
    for (size_t k = 0; k < o->n_ignored_flags && at < n; k++)
        at += (size_t)snprintf(buf + at, n - at, "%s%s",
                               k ? ", " : "ignored (no effect on this backend): ",
                               o->ignored_flags[k]);
}

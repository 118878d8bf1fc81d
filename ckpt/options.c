/* options.c — mg-convert flags (Megatron tools/checkpoint/convert.py spelling), one table
 * scanned by mg/argv.h. Accepts "--flag value" and "--flag=value"; a bad flag or value is a
 * usage error (exit 2).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"
#include "mg/argv.h"
#include "mg/cli.h"

static void defaults(ck_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->saver = CK_MEGATRON;
    o->tp = o->pp = 1;
    o->dtype = MG_TD_INVALID;
    o->te = -1;
    o->iteration = -1;
    o->max_shard = 5000000000ull;
}

static int64_t num(const char *flag, const char *v, int64_t min, int64_t max)
{
    int64_t x;
    if (mg_argv_int(flag, v, min, max, &x) != MG_OK) mg_usage_error("%s", mg_last_error());
    return x;
}

static uint64_t size_arg(const char *flag, const char *v)
{
    char *end = NULL;
    double x = strtod(v, &end);
    double mult = 1;
    if (end && (!strcmp(end, "GB") || !strcmp(end, "G"))) mult = 1e9;
    else if (end && (!strcmp(end, "MB") || !strcmp(end, "M"))) mult = 1e6;
    else if (end && (!strcmp(end, "KB") || !strcmp(end, "K"))) mult = 1e3;
    else if (end && !strcmp(end, "GiB")) mult = 1073741824.0;
    else if (end && !strcmp(end, "MiB")) mult = 1048576.0;
    else if (!end || *end) mg_usage_error("%s: expected a size like 5GB or 1000000, got '%s'", flag, v);
    if (!(x > 0)) mg_usage_error("%s: the size must be positive", flag);
    return (uint64_t)(x * mult);
}

static int choice(const char *flag, const char *v, const char *const *names, int n)
{
    int i;
    if (mg_argv_choice(flag, v, names, (size_t)n, &i) != MG_OK)
        mg_usage_error("%s", mg_last_error());
    return i;
}

static mg_tdtype dtype_arg(const char *v)
{
    static const char *const names[] = {"fp32", "bf16", "fp16", "float32", "bfloat16", "float16"};
    static const mg_tdtype types[] = {MG_TD_F32, MG_TD_BF16, MG_TD_F16};
    return types[choice("--target-dtype", v, names, 6) % 3];
}

enum {
    C_LOAD_DIR, C_SAVE_DIR, C_INSPECT, C_TOKENIZER_DIR, C_LOADER, C_SAVER, C_TP, C_PP,
    C_PP_FIRST, C_PP_LAST, C_DP, C_DTYPE, C_DIVISIBLE, C_TRUE_VOCAB, C_IMPL, C_CKPT_FORMAT,
    C_ITERATION,
    C_MAX_SHARD, C_WORKERS, C_DROP_OPTIM, C_VERIFY, C_QUIET, C_HELP, C_VERSION, C_LIST_FLAGS,
    C_SUMMARY, C_COUNT
};

/* convert.py's flags: exact names; a value is the next word whatever it looks like. */
static const mg_argv_flag flags[C_COUNT] = {
    [C_LOAD_DIR] = {"--load-dir", MG_ARGV_ONE},
    [C_SAVE_DIR] = {"--save-dir", MG_ARGV_ONE},
    [C_INSPECT] = {"--inspect", MG_ARGV_ONE},
    [C_TOKENIZER_DIR] = {"--tokenizer-dir", MG_ARGV_ONE},
    [C_LOADER] = {"--loader", MG_ARGV_ONE},
    [C_SAVER] = {"--saver", MG_ARGV_ONE},
    [C_TP] = {"--target-tensor-parallel-size", MG_ARGV_ONE},
    [C_PP] = {"--target-pipeline-parallel-size", MG_ARGV_ONE},
    [C_PP_FIRST] = {"--decoder-first-pipeline-num-layers", MG_ARGV_ONE},
    [C_PP_LAST] = {"--decoder-last-pipeline-num-layers", MG_ARGV_ONE},
    [C_DP] = {"--target-data-parallel-size", MG_ARGV_ONE},
    [C_DTYPE] = {"--target-dtype", MG_ARGV_ONE},
    [C_DIVISIBLE] = {"--make-vocab-size-divisible-by", MG_ARGV_ONE},
    [C_TRUE_VOCAB] = {"--true-vocab-size", MG_ARGV_ONE},
    [C_IMPL] = {"--transformer-impl", MG_ARGV_ONE},
    [C_CKPT_FORMAT] = {"--ckpt-format", MG_ARGV_ONE},
    [C_ITERATION] = {"--iteration", MG_ARGV_ONE},
    [C_MAX_SHARD] = {"--max-shard-size", MG_ARGV_ONE},
    [C_WORKERS] = {"--workers", MG_ARGV_ONE},
    [C_DROP_OPTIM] = {"--drop-optimizer-state", MG_ARGV_SWITCH},
    [C_VERIFY] = {"--verify", MG_ARGV_SWITCH},
    [C_QUIET] = {"--quiet", MG_ARGV_SWITCH},
    [C_HELP] = {"--help", MG_ARGV_SWITCH},
    [C_VERSION] = {"--version", MG_ARGV_SWITCH},
    [C_LIST_FLAGS] = {"--list-flags", MG_ARGV_SWITCH},
    [C_SUMMARY] = {"--summary", MG_ARGV_SWITCH},
};

/* Flags whose value is a directory (shell completion). */
static const char *const dir_flags[] = {"--load-dir", "--save-dir", "--inspect",
                                        "--tokenizer-dir", NULL};

static const mg_argv_spec spec = {flags, C_COUNT, 0, 1, C_HELP, NULL, dir_flags};

static void set_value(ck_opts *o, int id, const char *v)
{
    static const char *const loaders[] = {"auto", "hf", "megatron", "core", "mcore"};
    static const char *const savers[] = {"megatron", "hf", "core", "mcore"};
    static const char *const impls[] = {"transformer_engine", "local"};
    static const char *const formats[] = {"torch", "torch_dist"};
    const char *f = flags[id].name;
    switch (id) {
    case C_LOAD_DIR: o->load_dir = v; break;
    case C_SAVE_DIR: o->save_dir = v; break;
    case C_INSPECT: o->inspect_dir = v; break;
    case C_TOKENIZER_DIR: o->tokenizer_dir = v; break;
    case C_LOADER: o->loader = choice(f, v, loaders, 5) > 2 ? CK_MEGATRON : choice(f, v, loaders, 5); break;
    case C_SAVER: o->saver = choice(f, v, savers, 4) == 1 ? CK_HF : CK_MEGATRON; break;
    case C_TP: o->tp = num(f, v, 1, 4096); break;
    case C_PP: o->pp = num(f, v, 1, 4096); break;
    case C_PP_FIRST: o->pp_first = num(f, v, 1, 1 << 20); break;
    case C_PP_LAST: o->pp_last = num(f, v, 1, 1 << 20); break;
    case C_DP: o->dp = num(f, v, 1, 1 << 20); break;
    case C_DTYPE: o->dtype = dtype_arg(v); break;
    case C_DIVISIBLE: o->divisible_by = num(f, v, 1, 1 << 20); break;
    case C_TRUE_VOCAB: o->true_vocab = num(f, v, 1, INT64_C(1) << 40); break;
    case C_IMPL: o->te = choice(f, v, impls, 2) == 0; break;
    case C_CKPT_FORMAT: o->torch_dist = choice(f, v, formats, 2) == 1; break;
    case C_ITERATION: o->iteration = num(f, v, 0, INT64_C(1) << 40); break;
    case C_MAX_SHARD: o->max_shard = size_arg(f, v); break;
    case C_WORKERS: o->workers = (int)num(f, v, 1, 1024); break;
    }
}

static void set_switch(ck_opts *o, int id)
{
    switch (id) {
    case C_DROP_OPTIM: o->drop_optim = 1; break;
    case C_VERIFY: o->verify = 1; break;
    case C_QUIET: o->quiet = 1; break;
    case C_HELP: o->help = 1; break;
    case C_VERSION: o->version = 1; break;
    case C_SUMMARY: o->summary = 1; break;
    }
}

static void check(const ck_opts *o)
{
    if (o->help || o->version) return;
    if (o->summary && !o->inspect_dir) mg_usage_error("--summary needs --inspect DIR");
    if (o->inspect_dir) {
        if (o->load_dir || o->save_dir) mg_usage_error("--inspect takes no --load-dir/--save-dir");
        return;
    }
    if (!o->load_dir) mg_usage_error("--load-dir is required");
    if (!o->save_dir) mg_usage_error("--save-dir is required");
    if (o->saver == CK_HF && (o->tp != 1 || o->pp != 1))
        mg_usage_error("--saver hf writes one unsplit model: --target-tensor/pipeline-parallel-size must be 1");
    if (o->dp && (o->saver == CK_HF || o->torch_dist))
        mg_usage_error("--target-data-parallel-size is for Megatron torch output (distrib_optim.pt)");
    if (o->saver == CK_HF && o->torch_dist)
        mg_usage_error("--ckpt-format torch_dist is a Megatron format: it needs --saver megatron");
    if ((o->pp_first || o->pp_last) && o->pp < 2)
        mg_usage_error("uneven pipeline stages need --target-pipeline-parallel-size > 1");
}

void ck_parse_options(ck_opts *o, int argc, char **argv)
{
    defaults(o);
    int list_flags = 0;
    mg_argv a;
    mg_argv_init(&a, &spec, argc, argv);
    for (mg_argv_event ev; (ev = mg_argv_next(&a)) != MG_ARGV_END;) {
        if (ev == MG_ARGV_POSITIONAL && a.word[0] != '-')
            mg_usage_error("unexpected argument '%s'", a.word);
        if (ev != MG_ARGV_FLAG) mg_usage_error("%s", (mg_argv_error(&a, ev), mg_last_error()));
        if (a.id == C_LIST_FLAGS) list_flags = 1;
        else if (flags[a.id].nargs == MG_ARGV_SWITCH) set_switch(o, a.id);
        else set_value(o, a.id, a.values[0]);
    }
    if (list_flags) {
        mg_cli_list_flags(&spec);
        exit(MG_EXIT_OK);
    }
    check(o);
}

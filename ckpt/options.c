/* options.c — mg-convert flags (Megatron tools/checkpoint/convert.py spelling). Accepts
 * "--flag value" and "--flag=value"; a bad flag or value is a usage error (exit 2).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"
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
    if (mg_parse_i64(v, min, max, &x) != 0)
        mg_usage_error("%s: expected an integer in [%lld, %lld], got '%s'", flag, (long long)min,
                       (long long)max, v);
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
    for (int i = 0; i < n; i++)
        if (!strcmp(v, names[i])) return i;
    mg_usage_error("%s: invalid choice '%s'", flag, v);
}

static mg_tdtype dtype_arg(const char *v)
{
    static const char *const names[] = {"fp32", "bf16", "fp16", "float32", "bfloat16", "float16"};
    static const mg_tdtype types[] = {MG_TD_F32, MG_TD_BF16, MG_TD_F16};
    return types[choice("--target-dtype", v, names, 6) % 3];
}

/* Flags with a value: returns 1 if handled. */
static int with_value(ck_opts *o, const char *f, const char *v)
{
    static const char *const loaders[] = {"auto", "hf", "megatron", "core", "mcore"};
    static const char *const savers[] = {"megatron", "hf", "core", "mcore"};
    static const char *const impls[] = {"transformer_engine", "local"};
    if (!strcmp(f, "--load-dir")) o->load_dir = v;
    else if (!strcmp(f, "--save-dir")) o->save_dir = v;
    else if (!strcmp(f, "--inspect")) o->inspect_dir = v;
    else if (!strcmp(f, "--tokenizer-dir")) o->tokenizer_dir = v;
    else if (!strcmp(f, "--loader")) o->loader = choice(f, v, loaders, 5) > 2 ? CK_MEGATRON : choice(f, v, loaders, 5);
    else if (!strcmp(f, "--saver")) o->saver = choice(f, v, savers, 4) == 1 ? CK_HF : CK_MEGATRON;
    else if (!strcmp(f, "--target-tensor-parallel-size")) o->tp = num(f, v, 1, 4096);
    else if (!strcmp(f, "--target-pipeline-parallel-size")) o->pp = num(f, v, 1, 4096);
    else if (!strcmp(f, "--decoder-first-pipeline-num-layers")) o->pp_first = num(f, v, 1, 1 << 20);
    else if (!strcmp(f, "--decoder-last-pipeline-num-layers")) o->pp_last = num(f, v, 1, 1 << 20);
    else if (!strcmp(f, "--target-dtype")) o->dtype = dtype_arg(v);
    else if (!strcmp(f, "--make-vocab-size-divisible-by")) o->divisible_by = num(f, v, 1, 1 << 20);
    else if (!strcmp(f, "--true-vocab-size")) o->true_vocab = num(f, v, 1, INT64_C(1) << 40);
    else if (!strcmp(f, "--transformer-impl")) o->te = choice(f, v, impls, 2) == 0;
    else if (!strcmp(f, "--iteration")) o->iteration = num(f, v, 0, INT64_C(1) << 40);
    else if (!strcmp(f, "--max-shard-size")) o->max_shard = size_arg(f, v);
    else if (!strcmp(f, "--workers")) o->workers = (int)num(f, v, 1, 1024);
    else return 0;
    return 1;
}

static int boolean(ck_opts *o, const char *f)
{
    if (!strcmp(f, "--drop-optimizer-state")) o->drop_optim = 1;
    else if (!strcmp(f, "--verify")) o->verify = 1;
    else if (!strcmp(f, "--quiet")) o->quiet = 1;
    else if (!strcmp(f, "--help") || !strcmp(f, "-h")) o->help = 1;
    else if (!strcmp(f, "--version")) o->version = 1;
    else return 0;
    return 1;
}

static void check(const ck_opts *o)
{
    if (o->help || o->version) return;
    if (o->inspect_dir) {
        if (o->load_dir || o->save_dir) mg_usage_error("--inspect takes no --load-dir/--save-dir");
        return;
    }
    if (!o->load_dir) mg_usage_error("--load-dir is required");
    if (!o->save_dir) mg_usage_error("--save-dir is required");
    if (o->saver == CK_HF && (o->tp != 1 || o->pp != 1))
        mg_usage_error("--saver hf writes one unsplit model: --target-tensor/pipeline-parallel-size must be 1");
    if ((o->pp_first || o->pp_last) && o->pp < 2)
        mg_usage_error("uneven pipeline stages need --target-pipeline-parallel-size > 1");
}

void ck_parse_options(ck_opts *o, int argc, char **argv)
{
    defaults(o);
    for (int i = 1; i < argc; i++) {
        char flag[128];
        const char *a = argv[i], *eq = strchr(a, '=');
        const char *val = NULL;
        if (strncmp(a, "--", 2) == 0 && eq && (size_t)(eq - a) < sizeof flag) {
            memcpy(flag, a, (size_t)(eq - a));
            flag[eq - a] = 0;
            val = eq + 1;
        } else {
            snprintf(flag, sizeof flag, "%s", a);
        }
        if (!val && boolean(o, flag)) continue;
        if (!val && i + 1 < argc && with_value(o, flag, argv[i + 1])) {
            i++;
            continue;
        }
        if (val && with_value(o, flag, val)) continue;
        if (a[0] == '-') mg_usage_error("unknown or incomplete option '%s'", a);
        mg_usage_error("unexpected argument '%s'", a);
    }
    check(o);
}

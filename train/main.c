/* main.c — mg-train: Megatron-style GPT pretraining (issue 5): the command line, --dry-run
 * (the plan: parameters, memory per rank, FLOPs per iteration), --dump-samples N (the first
 * N training samples as JSON lines) and training (loop.h: log lines on stdout, progress on
 * stderr) with Megatron `torch`-format checkpoints (--save/--load, checkpoint.h).
 * Exit status: 0 done, 1 runtime failure (including a NaN/Inf loss), 2 usage error or
 * unsupported feature.
 */
#include <stdio.h>
#include <stdlib.h>

#include "dry_run.h"
#include "help.h"
#include "loop.h"
#include "mg/cli.h"
#include "options.h"

static void die_parse(mg_status st)
{
    if (st == MG_ERR_ARG) mg_usage_error("%s", mg_last_error());
    mg_die_status(st);
}

static int dry_run(mg_train_opts *o)
{
    char *text = NULL;
    mg_status st = mg_train_resolve_vocab(o);
    if (st == MG_OK) st = mg_train_dry_run_report(o, &text);
    if (st != MG_OK) {
        mg_train_opts_free(o);
        die_parse(st);
    }
    fputs(text, stdout);
    free(text);
    mg_train_opts_free(o);
    return MG_EXIT_OK;
}

static int train(mg_train_opts *o)
{
    mg_status st = mg_train_resolve_vocab(o);
    if (st != MG_OK) {
        mg_train_opts_free(o);
        die_parse(st);
    }
    if (o->dump_samples > 0) st = mg_train_dump_samples(o, stdout);
    else st = mg_train_run(o, stdout);
    mg_train_opts_free(o);
    if (st == MG_ERR_ARG) mg_usage_error("%s", mg_last_error());
    if (st != MG_OK) mg_die_status(st);
    return MG_EXIT_OK;
}

int main(int argc, char **argv)
{
    mg_cli_init("mg-train");
    mg_train_opts o;
    mg_status st = mg_train_parse(&o, argc, argv);
    if (st != MG_OK) {
        mg_train_opts_free(&o);
        die_parse(st);
    }
    if (o.help) {
        fputs(mg_train_help_text(), stdout);
        mg_train_opts_free(&o);
        return MG_EXIT_OK;
    }
    if (o.list_flags) {
        mg_train_list_flags();
        mg_train_opts_free(&o);
        return MG_EXIT_OK;
    }
    if (o.version) {
        mg_cli_print_version();
        mg_train_opts_free(&o);
        return MG_EXIT_OK;
    }
    if (o.dry_run) return dry_run(&o);
    if (o.bf16 || o.fp16) {
        fprintf(stderr, "%s: not supported on CPU: %s\n", mg_cli_prog(),
                o.bf16 ? "--bf16" : "--fp16");
        mg_train_opts_free(&o);
        return MG_EXIT_USAGE;
    }
    return train(&o);
}

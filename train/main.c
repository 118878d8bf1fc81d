/* main.c — mg-train: Megatron-style GPT pretraining (issue 5): the command line, --dry-run
 * (the plan: parameters, memory per rank, FLOPs per iteration), --dump-samples N (the first
 * N training samples as JSON lines) and training (loop.h: log lines on stdout, progress on
 * stderr) with Megatron `torch`-format checkpoints (--save/--load, checkpoint.h).
 * Under mpirun / srun every rank runs this main; the world (comm.h) is made after the
 * options, and a failure on any rank prints its message and ends the whole job.
 * Exit status: 0 done, 1 runtime failure (including a NaN/Inf loss), 2 usage error or
 * unsupported feature.
 */
#include <stdio.h>
#include <stdlib.h>

#include "ckpt_preflight.h"
#include "comm.h"
#include "comm_launch.h"
#include "data_preflight.h"
#include "device.h"
#include "dry_run.h"
#include "help.h"
#include "launch_check.h"
#include "loop.h"
#include "mg/cli.h"
#include "options.h"
#include "options_megatron.h"
#include "rank_check.h"

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

/* The world of this launch; with several ranks the messages name this one. Several
 * processes on GPUs talk over NCCL (device buffers), on the device each one takes
 * (device.h: LOCAL_RANK mod the visible devices); on the CPU over MPI. */
static mg_status make_world(const mg_train_opts *o, mg_comm **world)
{
    static char prog[64];
    mg_comm_launch l;
    MG_FORWARD(mg_comm_launch_detect(&l));
    int nccl = l.world_size > 1 && !mg_device_is_cpu(o) && mgk_cuda_devices() > 0;
    mg_comm_config cfg = {o->model.tp, o->model.pp,
                          60.0 * o->distributed_timeout_minutes,
                          nccl ? MG_COMM_BACKEND_NCCL : MG_COMM_BACKEND_AUTO,
                          nccl ? (int)(l.local_rank % mgk_cuda_devices()) : -1};
    MG_FORWARD(mg_comm_create(world, &cfg));
    if (mg_comm_size(*world) > 1) {
        snprintf(prog, sizeof prog, "mg-train (rank %lld of %lld)",
                 (long long)mg_comm_rank(*world), (long long)mg_comm_size(*world));
        mg_cli_init(prog);
    }
    return MG_OK;
}

/* A failure on one rank of several ends the whole job (comm.h): the message first. */
static void die_run(mg_status st, mg_comm *world)
{
    if (world && mg_comm_size(world) > 1) {
        const char *msg = mg_last_error();
        fprintf(stderr, "%s: error: %s\n", mg_cli_prog(), *msg ? msg : mg_strerror(st));
        fflush(stderr);
        mg_comm_abort(world, mg_exit_code(st));
    }
    mg_comm_free(world);
    if (st == MG_ERR_ARG) mg_usage_error("%s", mg_last_error());
    mg_die_status(st);
}

static int train(mg_train_opts *o, int argc, char **argv)
{
    mg_status st = o->dump_samples > 0 ? MG_OK : mg_train_check_launch(o);
    if (st == MG_OK) st = mg_train_data_preflight(o);
    if (st == MG_OK) st = mg_train_resolve_vocab(o);
    if (st == MG_OK) st = mg_train_ckpt_preflight(o); /* before any dataset is built */
    if (st != MG_OK) {
        mg_train_opts_free(o);
        die_parse(st);
    }
    if (o->dump_samples > 0) {
        st = mg_train_dump_samples(o, stdout);
        mg_train_opts_free(o);
        if (st != MG_OK) die_run(st, NULL);
        return MG_EXIT_OK;
    }
    mg_comm *world = NULL;
    st = make_world(o, &world);
    if (st == MG_OK) st = mg_train_check_ranks(world, o, argc, argv);
    if (st == MG_OK) st = mg_train_run(o, world, stdout);
    mg_train_opts_free(o);
    if (st != MG_OK) die_run(st, world);
    mg_comm_free(world);
    return MG_EXIT_OK;
}

/* Megatron's flags taken without effect, named once (by the first rank of a launch). */
static void note_ignored(const mg_train_opts *o)
{
    char text[2048];
    mg_comm_launch l;
    mg_train_megatron_note(o, text, sizeof text);
    if (text[0] && mg_comm_launch_detect(&l) == MG_OK && l.rank == 0) mg_note("%s", text);
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
    note_ignored(&o);
    if (o.dry_run) return dry_run(&o);
    if ((o.bf16 || o.fp16) && mg_device_is_cpu(&o)) {
        fprintf(stderr, "%s: not supported on CPU: %s\n", mg_cli_prog(),
                o.bf16 ? "--bf16" : "--fp16");
        mg_train_opts_free(&o);
        return MG_EXIT_USAGE;
    }
    if (o.fp16) {
        fprintf(stderr, "%s: not supported yet: --fp16 on --device cuda (the CUDA kernels have "
                "no fp16 variants; --bf16 is supported)\n", mg_cli_prog());
        mg_train_opts_free(&o);
        return MG_EXIT_USAGE;
    }
    return train(&o, argc, argv);
}

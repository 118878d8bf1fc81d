/* comm_launch.c — comm_launch.h: the launch read from the environment. */
#include "comm_launch.h"

#include <stdlib.h>

#include "mg/cli.h"

static const char *real_env(const char *name, void *ctx)
{
    (void)ctx;
    return getenv(name);
}

static mg_status read_int(mg_comm_env_fn env, void *ctx, const char *name, int64_t min,
                          int64_t dflt, int64_t *out)
{
    const char *v = env(name, ctx);
    if (!v || !*v) {
        *out = dflt;
        return MG_OK;
    }
    MG_RETURN_IF(mg_parse_i64(v, min, INT32_MAX, out) != 0, MG_ERR_ARG,
                 "environment variable %s=%s: expected an integer >= %lld", name, v,
                 (long long)min);
    return MG_OK;
}

/* The launchers whose ranks come from MPI: their size, rank and local-rank variables. */
static const struct {
    const char *launcher, *size, *rank, *local;
} mpi_launchers[] = {
    {"mpirun", "OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK"},
    {"srun", "SLURM_STEP_NUM_TASKS", "SLURM_PROCID", "SLURM_LOCALID"},
    {"PMI", "PMI_SIZE", "PMI_RANK", "MPI_LOCALRANKID"},
};

static mg_status read_ranks(mg_comm_launch *l, mg_comm_env_fn env, void *ctx,
                            const char *size, const char *rank, const char *local)
{
    MG_FORWARD(read_int(env, ctx, size, 1, 1, &l->world_size));
    MG_FORWARD(read_int(env, ctx, rank, 0, 0, &l->rank));
    MG_FORWARD(read_int(env, ctx, local, 0, 0, &l->local_rank));
    MG_RETURN_IF(l->rank >= l->world_size, MG_ERR_ARG,
                 "environment variable %s=%lld is not below %s=%lld", rank, (long long)l->rank,
                 size, (long long)l->world_size);
    return MG_OK;
}

/* torchrun's environment: WORLD_SIZE, RANK, LOCAL_RANK and where rank 0 listens. */
static mg_status read_torchrun(mg_comm_launch *l, mg_comm_env_fn env, void *ctx)
{
    l->kind = MG_LAUNCH_ENV;
    l->launcher = "torchrun environment";
    MG_FORWARD(read_ranks(l, env, ctx, "WORLD_SIZE", "RANK", "LOCAL_RANK"));
    const char *addr = env("MASTER_ADDR", ctx);
    l->master_addr = addr && *addr ? addr : "127.0.0.1";
    int64_t port;
    MG_FORWARD(read_int(env, ctx, "MASTER_PORT", 1, 29500, &port));
    MG_RETURN_IF(port > 65535, MG_ERR_ARG, "environment variable MASTER_PORT=%lld: not a port",
                 (long long)port);
    l->master_port = (int)port;
    return MG_OK;
}

mg_status mg_comm_launch_from(mg_comm_launch *l, mg_comm_env_fn env, void *ctx)
{
    l->kind = MG_LAUNCH_SINGLE;
    l->launcher = "none";
    l->world_size = 1;
    l->rank = l->local_rank = 0;
    l->master_addr = NULL;
    l->master_port = 0;
    /* torchrun started by srun or mpirun: its processes inherit the outer launcher's
     * variables (one task per node), but their ranks are torchrun's */
    if (env("WORLD_SIZE", ctx) && env("TORCHELASTIC_RUN_ID", ctx))
        return read_torchrun(l, env, ctx);
    for (size_t i = 0; i < sizeof mpi_launchers / sizeof mpi_launchers[0]; i++) {
        if (!env(mpi_launchers[i].size, ctx)) continue;
        l->kind = MG_LAUNCH_MPI;
        l->launcher = mpi_launchers[i].launcher;
        return read_ranks(l, env, ctx, mpi_launchers[i].size, mpi_launchers[i].rank,
                          mpi_launchers[i].local);
    }
    if (!env("WORLD_SIZE", ctx)) return MG_OK;
    return read_torchrun(l, env, ctx);
}

mg_status mg_comm_launch_detect(mg_comm_launch *l)
{
    return mg_comm_launch_from(l, real_env, NULL);
}

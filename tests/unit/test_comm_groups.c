/* test_comm_groups.c — unit tests of comm_groups.h (megatron-core 0.16.1's default rank
 * order tp-cp-ep-dp-pp, groups listed as its RankGenerator.get_ranks lists them) and of
 * comm_launch.h (the launch read from an environment table) and of comm_tcp.h (the TCP
 * bootstrap, with forked ranks).
 */
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "comm_groups.h"
#include "comm_launch.h"
#include "comm_tcp.h"
#include "harness.h"

/* Rank `rank`'s group of kind k must be `want` (n ranks) with rank at position idx. */
static void check_group(mg_test_ctx *t, const mg_comm_grid *g, mg_comm_kind k, int64_t rank,
                        const int64_t *want, int64_t n)
{
    int64_t ranks[64], idx = -1;
    int64_t got = mg_comm_grid_group(g, k, rank, ranks, &idx);
    MG_CHECK_EQ_INT(t, got, n);
    for (int64_t i = 0; i < n && i < got; i++) MG_CHECK_EQ_INT(t, ranks[i], want[i]);
    MG_CHECK(t, idx >= 0 && idx < got && ranks[idx] == rank);
}

/* TP 2, PP 2, world 8 (DP 2), as parallel_state with order tp-cp-ep-dp-pp:
 * tp [[0,1],[2,3],[4,5],[6,7]], dp [[0,2],[1,3],[4,6],[5,7]], pp [[0,4],[1,5],[2,6],[3,7]],
 * tp-pp (model) [[0,1,4,5],[2,3,6,7]], embedding = pp's first and last. */
MG_TEST(comm_groups_megatron_order)
{
    mg_comm_grid g;
    MG_CHECK_OK(t, mg_comm_grid_init(&g, 8, 2, 2));
    MG_CHECK_EQ_INT(t, g.dp, 2);
    check_group(t, &g, MG_COMM_TENSOR, 3, (const int64_t[]){2, 3}, 2);
    check_group(t, &g, MG_COMM_DATA, 5, (const int64_t[]){5, 7}, 2);
    check_group(t, &g, MG_COMM_DATA, 0, (const int64_t[]){0, 2}, 2);
    check_group(t, &g, MG_COMM_PIPELINE, 2, (const int64_t[]){2, 6}, 2);
    check_group(t, &g, MG_COMM_MODEL, 6, (const int64_t[]){2, 3, 6, 7}, 4);
    check_group(t, &g, MG_COMM_EMBEDDING, 7, (const int64_t[]){3, 7}, 2);
    check_group(t, &g, MG_COMM_WORLD, 4, (const int64_t[]){0, 1, 2, 3, 4, 5, 6, 7}, 8);
    MG_CHECK_EQ_INT(t, mg_comm_grid_tp_rank(&g, 5), 1);
    MG_CHECK_EQ_INT(t, mg_comm_grid_dp_rank(&g, 5), 0);
    MG_CHECK_EQ_INT(t, mg_comm_grid_pp_rank(&g, 5), 1);
    MG_CHECK_EQ_INT(t, mg_comm_grid_dp_rank(&g, 6), 1);
}

/* PP 4 (TP 1, DP 2, world 8): pipeline groups [0,2,4,6] and [1,3,5,7]; the embedding group
 * of the first and last stage is [0,6]; middle stages are alone. */
MG_TEST(comm_groups_embedding)
{
    mg_comm_grid g;
    MG_CHECK_OK(t, mg_comm_grid_init(&g, 8, 1, 4));
    check_group(t, &g, MG_COMM_PIPELINE, 3, (const int64_t[]){1, 3, 5, 7}, 4);
    check_group(t, &g, MG_COMM_EMBEDDING, 0, (const int64_t[]){0, 6}, 2);
    check_group(t, &g, MG_COMM_EMBEDDING, 6, (const int64_t[]){0, 6}, 2);
    check_group(t, &g, MG_COMM_EMBEDDING, 2, (const int64_t[]){2}, 1);
    MG_CHECK(t, !mg_comm_grid_in_embedding(&g, 4) && mg_comm_grid_in_embedding(&g, 7));
    MG_CHECK_OK(t, mg_comm_grid_init(&g, 2, 1, 1)); /* PP 1: [rank] */
    check_group(t, &g, MG_COMM_EMBEDDING, 1, (const int64_t[]){1}, 1);
    check_group(t, &g, MG_COMM_DATA, 1, (const int64_t[]){0, 1}, 2);
    MG_CHECK_ERR(t, mg_comm_grid_init(&g, 6, 4, 1), MG_ERR_ARG, "not divisible");
}

typedef struct {
    const char *const *kv; /* name, value, ..., NULL */
} env_table;

static const char *table_env(const char *name, void *ctx)
{
    const env_table *e = ctx;
    for (const char *const *p = e->kv; *p; p += 2)
        if (strcmp(p[0], name) == 0) return p[1];
    return NULL;
}

static mg_status launch(mg_comm_launch *l, const char *const *kv)
{
    env_table e = {kv};
    return mg_comm_launch_from(l, table_env, &e);
}

MG_TEST(comm_launch_env)
{
    mg_comm_launch l;
    MG_CHECK_OK(t, launch(&l, (const char *const[]){NULL}));
    MG_CHECK(t, l.kind == MG_LAUNCH_SINGLE && l.world_size == 1 && l.rank == 0);
    MG_CHECK_OK(t, launch(&l, (const char *const[]){"OMPI_COMM_WORLD_SIZE", "4",
                                                    "OMPI_COMM_WORLD_RANK", "3",
                                                    "OMPI_COMM_WORLD_LOCAL_RANK", "1",
                                                    "WORLD_SIZE", "9", NULL}));
    MG_CHECK(t, l.kind == MG_LAUNCH_MPI && l.world_size == 4 && l.rank == 3 &&
                    l.local_rank == 1);
    MG_CHECK_EQ_STR(t, l.launcher, "mpirun");
    /* a Slurm batch script (no job step) is one process */
    MG_CHECK_OK(t, launch(&l, (const char *const[]){"SLURM_PROCID", "0", "SLURM_NTASKS",
                                                    "8", NULL}));
    MG_CHECK(t, l.kind == MG_LAUNCH_SINGLE);
    MG_CHECK_OK(t, launch(&l, (const char *const[]){"SLURM_STEP_NUM_TASKS", "8",
                                                    "SLURM_PROCID", "5", NULL}));
    MG_CHECK(t, l.kind == MG_LAUNCH_MPI && l.world_size == 8 && l.rank == 5);
    MG_CHECK_OK(t, launch(&l, (const char *const[]){"WORLD_SIZE", "2", "RANK", "1",
                                                    "LOCAL_RANK", "1", "MASTER_ADDR",
                                                    "node7", NULL}));
    MG_CHECK(t, l.kind == MG_LAUNCH_ENV && l.world_size == 2 && l.rank == 1 &&
                    l.master_port == 29500);
    MG_CHECK_EQ_STR(t, l.master_addr, "node7");
    /* torchrun inside an srun step of 2 nodes: torchrun's ranks, not Slurm's */
    MG_CHECK_OK(t, launch(&l, (const char *const[]){"SLURM_STEP_NUM_TASKS", "2",
                                                    "SLURM_PROCID", "1", "SLURM_LOCALID", "0",
                                                    "WORLD_SIZE", "8", "RANK", "6",
                                                    "LOCAL_RANK", "2", "TORCHELASTIC_RUN_ID",
                                                    "job1", NULL}));
    MG_CHECK(t, l.kind == MG_LAUNCH_ENV && l.world_size == 8 && l.rank == 6 &&
                    l.local_rank == 2);
    MG_CHECK_EQ_STR(t, l.launcher, "torchrun environment");
    MG_CHECK_ERR(t, launch(&l, (const char *const[]){"WORLD_SIZE", "2", "RANK", "2", NULL}),
                 MG_ERR_ARG, "RANK=2 is not below WORLD_SIZE=2");
    MG_CHECK_ERR(t, launch(&l, (const char *const[]){"WORLD_SIZE", "two", NULL}), MG_ERR_ARG,
                 "WORLD_SIZE=two");
    MG_CHECK_ERR(t, launch(&l, (const char *const[]){"WORLD_SIZE", "1", "MASTER_PORT",
                                                     "70000", NULL}),
                 MG_ERR_ARG, "MASTER_PORT");
}

/* comm_tcp.h: rank 0 (this process) serves 128 bytes to two forked ranks on localhost. */
MG_TEST(comm_tcp_bcast)
{
    int port = 20000 + (int)(getpid() % 20000);
    unsigned char blob[128];
    for (int i = 0; i < 128; i++) blob[i] = (unsigned char)(i * 7 + 3);
    pid_t kids[2];
    for (int r = 1; r <= 2; r++) {
        kids[r - 1] = fork();
        if (kids[r - 1] == 0) {
            unsigned char got[128] = {0};
            mg_status st = mg_comm_tcp_bcast("127.0.0.1", port, r, 3, got, sizeof got, 20);
            _exit(st == MG_OK && memcmp(got, blob, sizeof got) == 0 ? 0 : 1);
        }
    }
    MG_CHECK_OK(t, mg_comm_tcp_bcast("127.0.0.1", port, 0, 3, blob, sizeof blob, 20));
    for (int i = 0; i < 2; i++) {
        int status = -1;
        waitpid(kids[i], &status, 0);
        MG_CHECK(t, WIFEXITED(status) && WEXITSTATUS(status) == 0);
    }
    /* nobody listening: a rank gives up at the deadline, naming MASTER_ADDR / MASTER_PORT */
    unsigned char got[4];
    MG_CHECK_ERR(t, mg_comm_tcp_bcast("127.0.0.1", port + 1, 1, 2, got, 4, 0.2), MG_ERR_IO,
                 "timed out connecting to rank 0 at 127.0.0.1");
}

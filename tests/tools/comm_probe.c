/* comm_probe.c — exercises train/comm.h on the world of its launch, for
 * tests/interop/test_dist_comm.py (run under mpirun).
 *
 * Usage: comm_probe TP PP TIMEOUT_S [ops|stall]
 *   ops    prints "group WORLD-RANK KIND RANK SIZE WORLD-RANKS..." for each group of this
 *          rank (one line each: the ranks' lines interleave), then
 *          runs every operation on every group with odd counts and values whose float sums
 *          depend on the order, and checks each result exactly against the same operation
 *          done here in rank order; prints "ops ok" or the first mismatch (exit 1), then
 *          "count KIND OP CALLS BYTES" for the non-zero counters.
 *   stall  the last world rank sleeps (a stuck rank) while the others all-reduce on the
 *          world: their error (rank, group, operation, the peer) is printed and the job
 *          ends through mg_comm_abort.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mg/cli.h"
#include "train/comm.h"

static uint32_t mix(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return (uint32_t)(x >> 33);
}

/* Rank r's value at i: spans magnitudes, so that the order of a sum shows in its bits. */
static float val(int64_t r, int64_t i)
{
    uint32_t h = mix((uint64_t)r * 1000003u + (uint64_t)i);
    return (float)((double)(h % 2000003) * ((h >> 21) % 3 == 0 ? 1e3 : 1e-3) - 1000.0);
}

static int fails;

static void expect(int ok, const char *group, const char *what, int64_t i)
{
    if (ok || fails++) return;
    printf("MISMATCH %s %s at %lld\n", group, what, (long long)i);
}

static void die(mg_comm *w)
{
    fprintf(stderr, "comm_probe: error: %s\n", mg_last_error());
    fflush(stderr);
    mg_comm_abort(w, 1);
    exit(1);
}

#define OK(w, x)                                                                           \
    do {                                                                                  \
        mg_status st_ = (x);                                                              \
        if (st_ != MG_OK) die((w));                                                  \
    } while (0)

static void ops(mg_comm *w, mg_comm *g)
{
    const char *name = mg_comm_name(g);
    int64_t p = mg_comm_size(g), me = mg_comm_rank(g), n = 1001 + 7 * p;
    float *buf = malloc((size_t)(n * p) * sizeof(float));
    float *want = malloc((size_t)(n * p) * sizeof(float));
    double d[3];
    /* all-reduce: ((x0 + x1) + x2) ... with x_r the values of group rank r's world rank */
    for (int64_t i = 0; i < n; i++) {
        buf[i] = val(mg_comm_world_rank(g, me), i);
        want[i] = val(mg_comm_world_rank(g, 0), i);
        for (int64_t r = 1; r < p; r++) want[i] += val(mg_comm_world_rank(g, r), i);
    }
    OK(w, mg_comm_allreduce_sum_f32(g, buf, n));
    for (int64_t i = 0; i < n; i++) expect(buf[i] == want[i], name, "all-reduce f32", i);
    for (int i = 0; i < 3; i++) d[i] = 0.1 * (double)(mg_comm_world_rank(g, me) + 1) + i;
    OK(w, mg_comm_allreduce_sum_f64(g, d, 3));
    for (int i = 0; i < 3; i++) {
        double s = 0.1 * (double)(mg_comm_world_rank(g, 0) + 1) + i;
        for (int64_t r = 1; r < p; r++) s += 0.1 * (double)(mg_comm_world_rank(g, r) + 1) + i;
        expect(d[i] == s, name, "all-reduce f64", i);
    }
    /* reduce-scatter of p blocks of m, in place on this rank's block */
    int64_t m = n / p;
    for (int64_t i = 0; i < m * p; i++) buf[i] = val(mg_comm_world_rank(g, me), i);
    OK(w, mg_comm_reduce_scatter_sum_f32(g, buf + me * m, buf, m));
    for (int64_t i = 0; i < m; i++) {
        float s = val(mg_comm_world_rank(g, 0), me * m + i);
        for (int64_t r = 1; r < p; r++) s += val(mg_comm_world_rank(g, r), me * m + i);
        expect(buf[me * m + i] == s, name, "reduce-scatter", i);
    }
    /* all-gather of m floats per rank */
    float *mine = malloc((size_t)m * sizeof(float));
    for (int64_t i = 0; i < m; i++) mine[i] = val(mg_comm_world_rank(g, me), i);
    OK(w, mg_comm_allgather_f32(g, buf, mine, m));
    for (int64_t i = 0; i < m * p; i++)
        expect(buf[i] == val(mg_comm_world_rank(g, i / m), i % m), name, "all-gather", i);
    /* broadcast from the last rank; a ring of messages: send to the next, recv from the
     * previous (the even ranks send first) */
    char text[32], got[32];
    snprintf(text, sizeof text, "from world rank %lld", (long long)mg_comm_world_rank(g, me));
    memcpy(got, text, sizeof got);
    OK(w, mg_comm_broadcast(g, got, sizeof got, p - 1));
    snprintf(text, sizeof text, "from world rank %lld", (long long)mg_comm_world_rank(g, p - 1));
    expect(strcmp(got, text) == 0, name, "broadcast", 0);
    int64_t next = (me + 1) % p, prev = (me + p - 1) % p, out = mg_comm_world_rank(g, me), in = -1;
    if (me % 2 == 0) {
        OK(w, mg_comm_send(g, &out, sizeof out, next));
        OK(w, mg_comm_recv(g, &in, sizeof in, prev));
    } else {
        OK(w, mg_comm_recv(g, &in, sizeof in, prev));
        OK(w, mg_comm_send(g, &out, sizeof out, next));
    }
    expect(in == mg_comm_world_rank(g, prev), name, "send/recv", 0);
    OK(w, mg_comm_barrier(g));
    free(mine);
    free(buf);
    free(want);
}

static void print_groups(mg_comm *w)
{
    for (int k = 0; k < MG_COMM_NGROUPS; k++) {
        mg_comm *g = mg_comm_group(w, (mg_comm_kind)k);
        printf("group %lld %s %lld %lld", (long long)mg_comm_rank(w), mg_comm_name(g),
               (long long)mg_comm_rank(g), (long long)mg_comm_size(g));
        for (int64_t r = 0; r < mg_comm_size(g); r++)
            printf(" %lld", (long long)mg_comm_world_rank(g, r));
        printf("\n");
    }
}

static void print_counts(mg_comm *w)
{
    for (int k = 0; k < MG_COMM_NGROUPS; k++) {
        mg_comm *g = mg_comm_group(w, (mg_comm_kind)k);
        for (int op = 0; op < MG_COMM_NOPS; op++) {
            int64_t calls, bytes;
            mg_comm_counts(g, (mg_comm_op)op, &calls, &bytes);
            if (calls)
                printf("count %s %s %lld %lld\n", mg_comm_name(g), mg_comm_op_name((mg_comm_op)op),
                       (long long)calls, (long long)bytes);
        }
    }
}

int main(int argc, char **argv)
{
    mg_cli_init("comm_probe");
    if (argc < 4) {
        fprintf(stderr, "usage: comm_probe TP PP TIMEOUT_S [ops|stall]\n");
        return 2;
    }
    mg_comm_config cfg = {atoll(argv[1]), atoll(argv[2]), atof(argv[3]), MG_COMM_BACKEND_AUTO,
                          -1};
    const char *mode = argc > 4 ? argv[4] : "ops";
    mg_comm *w = NULL;
    OK(NULL, mg_comm_create(&w, &cfg));
    if (strcmp(mode, "stall") == 0) {
        if (mg_comm_rank(w) == mg_comm_size(w) - 1) sleep(3600);
        float x = 1;
        OK(w, mg_comm_allreduce_sum_f32(w, &x, 1));
        return 0;
    }
    print_groups(w);
    for (int k = 0; k < MG_COMM_NGROUPS; k++) ops(w, mg_comm_group(w, (mg_comm_kind)k));
    printf(fails ? "ops FAILED\n" : "ops ok\n");
    print_counts(w);
    fflush(stdout);
    mg_comm_free(w);
    return fails ? 1 : 0;
}

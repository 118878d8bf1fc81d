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
 * Built twice: as comm_probe (the launch's backend: MPI under mpirun, host buffers) and, with
 * -DMG_PROBE_DEVICE=1 against the NCCL host shim (mk/nccl_emu.mk), as comm_probe_nccl: the
 * NCCL backend on device buffers (every operation's data copied to cudaMalloc blocks and
 * back), bootstrapped over MPI under mpirun or over TCP from torchrun's variables, every rank
 * on the one emulated device 0; with MG_PROBE_HOST=1 in the environment it hands the host
 * arrays themselves to the NCCL backend, which stages them through a device buffer (comm.h).
 * Its stall mode hangs (the shim has no timeouts) until the
 * stalled rank ends. The stalled rank prints "stalling" first.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mg/cli.h"
#include "train/comm.h"

#ifdef MG_PROBE_DEVICE
#include <cuda_runtime.h>
#define PROBE_BACKEND MG_COMM_BACKEND_NCCL
#define PROBE_DEVICE 0
#else
#define PROBE_BACKEND MG_COMM_BACKEND_AUTO
#define PROBE_DEVICE (-1)
#endif

/* The buffer to hand to the communicator for host memory h of `bytes` bytes: h itself, or
 * (MG_PROBE_DEVICE) a device copy; dev_out copies it back into h (if back) and frees it. */
#ifdef MG_PROBE_DEVICE
static int host_buffers(void)
{
    const char *e = getenv("MG_PROBE_HOST");
    return e && strcmp(e, "1") == 0;
}
#endif

static void *dev_in(void *h, size_t bytes)
{
#ifdef MG_PROBE_DEVICE
    void *d = NULL;
    if (host_buffers()) return h;
    if (cudaMalloc(&d, bytes ? bytes : 1) != cudaSuccess ||
        cudaMemcpy(d, h, bytes, cudaMemcpyHostToDevice) != cudaSuccess) {
        fprintf(stderr, "comm_probe: error: cudaMalloc/cudaMemcpy of %zu bytes failed\n", bytes);
        exit(1);
    }
    return d;
#else
    (void)bytes;
    return h;
#endif
}

static void dev_out(void *h, void *d, size_t bytes, int back)
{
#ifdef MG_PROBE_DEVICE
    if (d == h) return;
    if (back && cudaMemcpy(h, d, bytes, cudaMemcpyDeviceToHost) != cudaSuccess) {
        fprintf(stderr, "comm_probe: error: cudaMemcpy of %zu bytes failed\n", bytes);
        exit(1);
    }
    cudaFree(d);
#else
    (void)h, (void)d, (void)bytes, (void)back;
#endif
}

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

/* FNV-1a over every result of a group's operations on this rank, printed as "digest WORLD-RANK
 * GROUP HEX": the two builds' digests must be equal (the same bits from both backends). */
static uint64_t digest;

static void absorb(const void *p, size_t bytes)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < bytes; i++) digest = (digest ^ b[i]) * 0x100000001b3ULL;
}

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

/* comm.h's operations on host arrays, through dev_in / dev_out. */
static mg_status allreduce_f32(mg_comm *g, float *buf, int64_t n)
{
    float *d = dev_in(buf, (size_t)n * sizeof *buf);
    mg_status st = mg_comm_allreduce_sum_f32(g, d, n);
    dev_out(buf, d, (size_t)n * sizeof *buf, 1);
    return st;
}

static mg_status allreduce_f64(mg_comm *g, double *buf, int64_t n)
{
    double *d = dev_in(buf, (size_t)n * sizeof *buf);
    mg_status st = mg_comm_allreduce_sum_f64(g, d, n);
    dev_out(buf, d, (size_t)n * sizeof *buf, 1);
    return st;
}

/* In place: rank me's block of the p x m floats of buf receives the sum. */
static mg_status reduce_scatter_in_place(mg_comm *g, float *buf, int64_t m)
{
    int64_t p = mg_comm_size(g), me = mg_comm_rank(g);
    float *d = dev_in(buf, (size_t)(p * m) * sizeof *buf);
    mg_status st = mg_comm_reduce_scatter_sum_f32(g, d + me * m, d, m);
    dev_out(buf, d, (size_t)(p * m) * sizeof *buf, 1);
    return st;
}

static mg_status allgather(mg_comm *g, float *recv, float *send, int64_t m)
{
    size_t bytes = (size_t)m * sizeof *send;
    float *dr = dev_in(recv, bytes * (size_t)mg_comm_size(g)), *ds = dev_in(send, bytes);
    mg_status st = mg_comm_allgather_f32(g, dr, ds, m);
    dev_out(send, ds, bytes, 0);
    dev_out(recv, dr, bytes * (size_t)mg_comm_size(g), 1);
    return st;
}

static mg_status broadcast(mg_comm *g, void *buf, int64_t bytes, int64_t root)
{
    void *d = dev_in(buf, (size_t)bytes);
    mg_status st = mg_comm_broadcast(g, d, bytes, root);
    dev_out(buf, d, (size_t)bytes, 1);
    return st;
}

/* A send (send != 0) or a receive of bytes of buf with peer. */
static mg_status p2p(mg_comm *g, void *buf, int64_t bytes, int64_t peer, int send)
{
    void *d = dev_in(buf, (size_t)bytes);
    mg_status st = send ? mg_comm_send(g, d, bytes, peer) : mg_comm_recv(g, d, bytes, peer);
    dev_out(buf, d, (size_t)bytes, !send);
    return st;
}

static void ops(mg_comm *w, mg_comm *g)
{
    const char *name = mg_comm_name(g);
    int64_t p = mg_comm_size(g), me = mg_comm_rank(g), n = 1001 + 7 * p;
    float *buf = malloc((size_t)(n * p) * sizeof(float));
    float *want = malloc((size_t)(n * p) * sizeof(float));
    double d[3];
    digest = 0xcbf29ce484222325ULL;
    /* all-reduce: ((x0 + x1) + x2) ... with x_r the values of group rank r's world rank */
    for (int64_t i = 0; i < n; i++) {
        buf[i] = val(mg_comm_world_rank(g, me), i);
        want[i] = val(mg_comm_world_rank(g, 0), i);
        for (int64_t r = 1; r < p; r++) want[i] += val(mg_comm_world_rank(g, r), i);
    }
    OK(w, allreduce_f32(g, buf, n));
    for (int64_t i = 0; i < n; i++) expect(buf[i] == want[i], name, "all-reduce f32", i);
    absorb(buf, (size_t)n * sizeof *buf);
    for (int i = 0; i < 3; i++) d[i] = 0.1 * (double)(mg_comm_world_rank(g, me) + 1) + i;
    OK(w, allreduce_f64(g, d, 3));
    absorb(d, sizeof d);
    for (int i = 0; i < 3; i++) {
        double s = 0.1 * (double)(mg_comm_world_rank(g, 0) + 1) + i;
        for (int64_t r = 1; r < p; r++) s += 0.1 * (double)(mg_comm_world_rank(g, r) + 1) + i;
        expect(d[i] == s, name, "all-reduce f64", i);
    }
    /* reduce-scatter of p blocks of m, in place on this rank's block */
    int64_t m = n / p;
    for (int64_t i = 0; i < m * p; i++) buf[i] = val(mg_comm_world_rank(g, me), i);
    OK(w, reduce_scatter_in_place(g, buf, m));
    absorb(buf + me * m, (size_t)m * sizeof *buf);
    for (int64_t i = 0; i < m; i++) {
        float s = val(mg_comm_world_rank(g, 0), me * m + i);
        for (int64_t r = 1; r < p; r++) s += val(mg_comm_world_rank(g, r), me * m + i);
        expect(buf[me * m + i] == s, name, "reduce-scatter", i);
    }
    /* all-gather of m floats per rank */
    float *mine = malloc((size_t)m * sizeof(float));
    for (int64_t i = 0; i < m; i++) mine[i] = val(mg_comm_world_rank(g, me), i);
    OK(w, allgather(g, buf, mine, m));
    absorb(buf, (size_t)(m * p) * sizeof *buf);
    for (int64_t i = 0; i < m * p; i++)
        expect(buf[i] == val(mg_comm_world_rank(g, i / m), i % m), name, "all-gather", i);
    /* broadcast from the last rank; a ring of messages: send to the next, recv from the
     * previous (the even ranks send first) */
    char text[32] = {0}, got[32]; /* the digest takes all 32 bytes: none uninitialized */
    snprintf(text, sizeof text, "from world rank %lld", (long long)mg_comm_world_rank(g, me));
    memcpy(got, text, sizeof got);
    OK(w, broadcast(g, got, sizeof got, p - 1));
    absorb(got, sizeof got);
    snprintf(text, sizeof text, "from world rank %lld", (long long)mg_comm_world_rank(g, p - 1));
    expect(strcmp(got, text) == 0, name, "broadcast", 0);
    int64_t next = (me + 1) % p, prev = (me + p - 1) % p, out = mg_comm_world_rank(g, me), in = -1;
    if (me % 2 == 0) {
        OK(w, p2p(g, &out, sizeof out, next, 1));
        OK(w, p2p(g, &in, sizeof in, prev, 0));
    } else {
        OK(w, p2p(g, &in, sizeof in, prev, 0));
        OK(w, p2p(g, &out, sizeof out, next, 1));
    }
    expect(in == mg_comm_world_rank(g, prev), name, "send/recv", 0);
    absorb(&in, sizeof in);
    printf("digest %lld %s %016llx\n", (long long)mg_comm_rank(w), name,
           (unsigned long long)digest);
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
    mg_comm_config cfg = {atoll(argv[1]), atoll(argv[2]), atof(argv[3]), PROBE_BACKEND,
                          PROBE_DEVICE};
    const char *mode = argc > 4 ? argv[4] : "ops";
    mg_comm *w = NULL;
    OK(NULL, mg_comm_create(&w, &cfg));
    if (strcmp(mode, "stall") == 0) {
        if (mg_comm_rank(w) == mg_comm_size(w) - 1) {
            printf("stalling\n");
            fflush(stdout);
            sleep(3600);
        }
        float x = 1;
        OK(w, allreduce_f32(w, &x, 1));
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

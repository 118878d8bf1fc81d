/* comm_mpi.c — the MPI backend (comm_internal.h): CPU buffers, ranks from mpirun / srun.
 *
 * Every collective is built from non-blocking point-to-point messages on the group's own
 * MPI communicator (MPI_Comm_split of MPI_COMM_WORLD), and completion is polled against
 * the world's deadline: MPI has no timeouts, and this way a timeout can name the peers
 * whose messages never came. Errors are returned (MPI_ERRORS_RETURN), not fatal.
 *   - all-reduce: the buffer is cut into size blocks (block b = [b n / size, (b+1) n /
 *     size)); rank b receives block b from every rank, adds the contributions in rank
 *     order (((x0 + x1) + x2) ...), and sends the sum back to everyone: a reduce-scatter
 *     and an all-gather, each rank sending (size - 1) / size of the buffer per phase (as a
 *     ring), and every rank holding the same bits.
 *   - reduce-scatter: the first phase with blocks of n; all-gather: the second phase;
 *     broadcast: the root sends to every rank; barrier: an empty message to every rank.
 * Messages from different operations of a group never mix: each operation completes
 * before the next starts, and collectives and point-to-point messages use distinct tags.
 */
#include "comm_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if MG_HAVE_MPI

#include <mpi.h>

enum { TAG_COLL = 11, TAG_BARRIER = 12, TAG_P2P = 13 };

typedef struct {
    MPI_Comm comm;
    int own_comm;            /* a split of the world's: freed with the group */
    int finalize;            /* the world of a process that called MPI_Init */
    MPI_Request *req;        /* 2 x size */
    int *peer;               /* the group rank each request talks to */
    int nreq;
    void *scratch;
    size_t scratch_bytes;
} mpi_group;

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static mpi_group *G(mg_comm *c) { return c->impl; }

static mg_status scratch(mg_comm *c, size_t bytes, void **out)
{
    mpi_group *g = G(c);
    if (bytes > g->scratch_bytes) {
        void *p = mg_realloc(g->scratch, bytes);
        if (!p) return MG_ERR_NOMEM;
        g->scratch = p;
        g->scratch_bytes = bytes;
    }
    *out = g->scratch;
    return MG_OK;
}

/* "rank 1 (world rank 3), rank 2 (world rank 5)": the peers of requests not complete. */
static void pending_peers(mg_comm *c, char *buf, size_t n)
{
    mpi_group *g = G(c);
    size_t used = 0;
    buf[0] = 0;
    for (int i = 0; i < g->nreq && used + 64 < n; i++) {
        int flag = 1;
        if (g->req[i] != MPI_REQUEST_NULL) MPI_Test(&g->req[i], &flag, MPI_STATUS_IGNORE);
        if (flag) continue;
        char one[64];
        comm_peer_str(c, g->peer[i], one, sizeof one);
        if (strstr(buf, one)) continue;
        used += (size_t)snprintf(buf + used, n - used, "%s%s", used ? ", " : "", one);
    }
    if (!used) snprintf(buf, n, "(none pending)");
}

static mg_status fail(mg_comm *c, const char *op, const char *what)
{
    char peers[512], me[64];
    pending_peers(c, peers, sizeof peers);
    comm_peer_str(c, c->rank, me, sizeof me);
    return mg_error_set(MG_ERR_IO, "%s on the %s group (%lld ranks) %s on %s of %lld; waiting "
                        "for %s", op, mg_comm_name(c), (long long)c->size, what, me,
                        (long long)c->world->size, peers);
}

/* Waits for the group's posted requests, polling against the world's timeout. */
static mg_status wait_all(mg_comm *c, const char *op)
{
    mpi_group *g = G(c);
    double timeout = c->world->timeout_s, deadline = now_s() + timeout;
    long nap_ns = 0;
    for (;;) {
        int done = 0;
        int rc = MPI_Testall(g->nreq, g->req, &done, MPI_STATUSES_IGNORE);
        if (rc != MPI_SUCCESS) {
            char err[MPI_MAX_ERROR_STRING + 32] = "failed: ";
            int len = 0;
            MPI_Error_string(rc, err + 8, &len);
            return fail(c, op, err);
        }
        if (done) {
            g->nreq = 0;
            return MG_OK;
        }
        if (timeout > 0 && now_s() > deadline) {
            char what[96];
            snprintf(what, sizeof what, "timed out after %g s (--distributed-timeout-minutes)",
                     timeout);
            return fail(c, op, what);
        }
        /* give the core to the other ranks of an oversubscribed machine */
        nap_ns = nap_ns ? (nap_ns < 1000000 ? nap_ns * 2 : nap_ns) : 1000;
        struct timespec ts = {0, nap_ns};
        nanosleep(&ts, NULL);
    }
}

static mg_status post(mg_comm *c, const char *op, int rc, int peer)
{
    mpi_group *g = G(c);
    g->peer[g->nreq++] = peer;
    if (rc == MPI_SUCCESS) return MG_OK;
    char err[MPI_MAX_ERROR_STRING + 32] = "failed: ";
    int len = 0;
    MPI_Error_string(rc, err + 8, &len);
    return fail(c, op, err);
}

static mg_status isend(mg_comm *c, const char *op, const void *buf, int64_t count,
                       MPI_Datatype t, int peer, int tag)
{
    mpi_group *g = G(c);
    MG_RETURN_IF(count > INT32_MAX, MG_ERR_LIMIT, "%s on the %s group: %lld elements in one "
                 "message (MPI's limit is 2^31 - 1)", op, mg_comm_name(c), (long long)count);
    int rc = MPI_Isend(buf, (int)count, t, peer, tag, g->comm, &g->req[g->nreq]);
    return post(c, op, rc, peer);
}

static mg_status irecv(mg_comm *c, const char *op, void *buf, int64_t count, MPI_Datatype t,
                       int peer, int tag)
{
    mpi_group *g = G(c);
    MG_RETURN_IF(count > INT32_MAX, MG_ERR_LIMIT, "%s on the %s group: %lld elements in one "
                 "message (MPI's limit is 2^31 - 1)", op, mg_comm_name(c), (long long)count);
    int rc = MPI_Irecv(buf, (int)count, t, peer, tag, g->comm, &g->req[g->nreq]);
    return post(c, op, rc, peer);
}

static int64_t block_off(int64_t n, int64_t p, int64_t b) { return b * n / p; }

/* dst[i] = sum over ranks r in order of src_r[i], where src_me = own and the others come
 * from slots (rank r's block at slot index r - (r > me)). */
#define SUM_IN_RANK_ORDER(T, dst, own, slots, len, p, me, stride)                          \
    do {                                                                                  \
        T tmp_[1024];                                                                     \
        for (int64_t i0 = 0; i0 < (len); i0 += 1024) {                                    \
            int64_t m_ = (len) - i0 < 1024 ? (len) - i0 : 1024;                           \
            for (int64_t r = 0; r < (p); r++) {                                           \
                const T *s_ = r == (me) ? (own) + i0                                      \
                                        : (slots) + (r - (r > (me))) * (stride) + i0;     \
                if (r == 0) memcpy(tmp_, s_, (size_t)m_ * sizeof(T));                     \
                else                                                                      \
                    for (int64_t i = 0; i < m_; i++) tmp_[i] += s_[i];                    \
            }                                                                             \
            memcpy((dst) + i0, tmp_, (size_t)m_ * sizeof(T));                             \
        }                                                                                 \
    } while (0)

/* Phase 1: every rank r sends block r of `send` (blocks at off(r), len(r) elements); this
 * rank's block, summed in rank order, lands in dst. */
static mg_status reduce_blocks(mg_comm *c, const char *op, const void *send, void *dst,
                               int64_t blocks_n, comm_dtype t)
{
    int p = (int)c->size, me = (int)c->rank;
    size_t esz = t == COMM_F32 ? sizeof(float) : sizeof(double);
    MPI_Datatype mt = t == COMM_F32 ? MPI_FLOAT : MPI_DOUBLE;
    int64_t mylen = block_off(blocks_n, p, me + 1) - block_off(blocks_n, p, me);
    int64_t stride = blocks_n / p + 1;
    void *slots;
    MG_FORWARD(scratch(c, (size_t)(p - 1) * (size_t)stride * esz, &slots));
    for (int r = 0; r < p; r++) {
        if (r == me) continue;
        char *slot = (char *)slots + (size_t)(r - (r > me)) * (size_t)stride * esz;
        MG_FORWARD(irecv(c, op, slot, mylen, mt, r, TAG_COLL));
    }
    for (int r = 0; r < p; r++) {
        if (r == me) continue;
        int64_t o = block_off(blocks_n, p, r), len = block_off(blocks_n, p, r + 1) - o;
        MG_FORWARD(isend(c, op, (const char *)send + (size_t)o * esz, len, mt, r, TAG_COLL));
    }
    MG_FORWARD(wait_all(c, op));
    const char *own = (const char *)send + (size_t)block_off(blocks_n, p, me) * esz;
    if (t == COMM_F32)
        SUM_IN_RANK_ORDER(float, (float *)dst, (const float *)own, (const float *)slots, mylen,
                          p, me, stride);
    else
        SUM_IN_RANK_ORDER(double, (double *)dst, (const double *)own, (const double *)slots,
                          mylen, p, me, stride);
    return MG_OK;
}

/* Phase 2: block r of buf (off(r), len(r) elements) from rank r to everyone. */
static mg_status gather_blocks(mg_comm *c, const char *op, void *buf, int64_t n, size_t esz,
                               MPI_Datatype mt)
{
    int p = (int)c->size, me = (int)c->rank;
    for (int r = 0; r < p; r++) {
        if (r == me) continue;
        int64_t o = block_off(n, p, r), len = block_off(n, p, r + 1) - o;
        MG_FORWARD(irecv(c, op, (char *)buf + (size_t)o * esz, len, mt, r, TAG_COLL));
    }
    int64_t o = block_off(n, p, me), len = block_off(n, p, me + 1) - o;
    for (int r = 0; r < p; r++)
        if (r != me) MG_FORWARD(isend(c, op, (char *)buf + (size_t)o * esz, len, mt, r, TAG_COLL));
    return wait_all(c, op);
}

static mg_status m_allreduce(mg_comm *c, void *buf, int64_t n, comm_dtype t)
{
    MG_RETURN_IF(t == COMM_BF16 || t == COMM_F16, MG_ERR_UNSUPPORTED, "not supported yet: a "
                 "%s all-reduce on the MPI backend (CPU buffers are fp32; 16-bit runs on the "
                 "NCCL backend)", t == COMM_BF16 ? "bf16" : "fp16");
    size_t esz = t == COMM_F32 ? sizeof(float) : sizeof(double);
    char *mine = (char *)buf + (size_t)block_off(n, c->size, c->rank) * esz;
    MG_FORWARD(reduce_blocks(c, "all-reduce", buf, mine, n, t));
    return gather_blocks(c, "all-reduce", buf, n, esz, t == COMM_F32 ? MPI_FLOAT : MPI_DOUBLE);
}

static mg_status m_reduce_scatter(mg_comm *c, void *recv, const void *send, int64_t n,
                                  comm_dtype t)
{
    MG_RETURN_IF(t != COMM_F32, MG_ERR_UNSUPPORTED, "not supported yet: a 16-bit "
                 "reduce-scatter on the MPI backend (CPU buffers are fp32; 16-bit runs on the "
                 "NCCL backend)");
    return reduce_blocks(c, "reduce-scatter", send, recv, n * c->size, COMM_F32);
}

static mg_status m_allgather(mg_comm *c, void *recv, const void *send, int64_t bytes)
{
    char *mine = (char *)recv + (size_t)(c->rank * bytes);
    if (send != mine) memmove(mine, send, (size_t)bytes);
    return gather_blocks(c, "all-gather", recv, bytes * c->size, 1, MPI_BYTE);
}

static mg_status m_broadcast(mg_comm *c, void *buf, int64_t bytes, int64_t root)
{
    if (c->rank != root) {
        MG_FORWARD(irecv(c, "broadcast", buf, bytes, MPI_BYTE, (int)root, TAG_COLL));
        return wait_all(c, "broadcast");
    }
    for (int r = 0; r < (int)c->size; r++)
        if (r != root) MG_FORWARD(isend(c, "broadcast", buf, bytes, MPI_BYTE, r, TAG_COLL));
    return wait_all(c, "broadcast");
}

static mg_status m_barrier(mg_comm *c)
{
    static char none[1];
    for (int r = 0; r < (int)c->size; r++) {
        if (r == c->rank) continue;
        MG_FORWARD(irecv(c, "barrier", none, 0, MPI_BYTE, r, TAG_BARRIER));
        MG_FORWARD(isend(c, "barrier", none, 0, MPI_BYTE, r, TAG_BARRIER));
    }
    return wait_all(c, "barrier");
}

static mg_status m_send(mg_comm *c, const void *buf, int64_t bytes, int64_t peer)
{
    MG_FORWARD(isend(c, "send", buf, bytes, MPI_BYTE, (int)peer, TAG_P2P));
    return wait_all(c, "send");
}

static mg_status m_recv(mg_comm *c, void *buf, int64_t bytes, int64_t peer)
{
    MG_FORWARD(irecv(c, "recv", buf, bytes, MPI_BYTE, (int)peer, TAG_P2P));
    return wait_all(c, "recv");
}

static mpi_group *new_group(int64_t size)
{
    mpi_group *g = mg_calloc(1, sizeof *g);
    if (!g) return NULL;
    g->comm = MPI_COMM_NULL;
    g->req = mg_calloc((size_t)(2 * size), sizeof *g->req);
    g->peer = mg_calloc((size_t)(2 * size), sizeof *g->peer);
    if (g->req && g->peer) return g;
    free(g->req);
    free(g->peer);
    free(g);
    return NULL;
}

static mg_status m_make_group(mg_comm *c)
{
    mpi_group *w = G(c->world), *g = new_group(c->size);
    if (!g) return MG_ERR_NOMEM;
    c->impl = g;
    /* every rank splits once per kind, in the same order (comm.c); color: the group's first
     * world rank, key: the rank in the group */
    int rc = MPI_Comm_split(w->comm, (int)c->world_ranks[0], (int)c->rank, &g->comm);
    MG_RETURN_IF(rc != MPI_SUCCESS, MG_ERR_IO, "MPI_Comm_split for the %s group failed",
                 mg_comm_name(c));
    g->own_comm = 1;
    MPI_Comm_set_errhandler(g->comm, MPI_ERRORS_RETURN);
    int size = 0;
    MPI_Comm_size(g->comm, &size);
    MG_ASSERT(size == c->size);
    return MG_OK;
}

static void m_free_group(mg_comm *c)
{
    mpi_group *g = G(c);
    if (!g) return;
    if (g->own_comm) MPI_Comm_free(&g->comm);
    if (g->finalize) MPI_Finalize();
    free(g->req);
    free(g->peer);
    free(g->scratch);
    free(g);
    c->impl = NULL;
}

static void m_abort(mg_comm *world, int code)
{
    if (world->size > 1) MPI_Abort(MPI_COMM_WORLD, code);
}

static const comm_backend mpi_backend = {
    "mpi", m_allreduce, m_allgather, m_reduce_scatter, m_broadcast, m_barrier,
    m_send, m_recv, m_make_group, m_free_group, m_abort, NULL, NULL};

mg_status comm_mpi_create(mg_comm **out, const mg_comm_launch *l, const mg_comm_config *cfg)
{
    *out = NULL;
    int inited = 0, provided = 0, size = 0, rank = 0;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided) != MPI_SUCCESS)
        return mg_error_set(MG_ERR_IO, "MPI_Init failed (launched by %s)", l->launcher);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    mpi_group *w = new_group(size);
    if (!w) return MG_ERR_NOMEM;
    w->comm = MPI_COMM_WORLD;
    w->finalize = !inited;
    if (l->kind == MG_LAUNCH_MPI && (l->world_size != size || l->rank != rank)) {
        mg_comm tmp = {.impl = w};
        m_free_group(&tmp);
        return mg_error_set(MG_ERR_ARG, "%s says rank %lld of %lld, MPI says rank %d of %d",
                            l->launcher, (long long)l->rank, (long long)l->world_size, rank,
                            size);
    }
    return comm_world_build(out, &mpi_backend, w, size, rank, cfg);
}

#else /* !MG_HAVE_MPI */

mg_status comm_mpi_create(mg_comm **out, const mg_comm_launch *l, const mg_comm_config *cfg)
{
    *out = NULL;
    if (l->world_size > 1)
        return mg_error_set(MG_ERR_UNSUPPORTED,
                            "not supported yet: launched by %s as rank %lld of %lld, but this "
                            "mg-train was built without MPI (install libopenmpi-dev, "
                            "scripts/setup.sh --system, and rebuild)",
                            l->launcher, (long long)l->rank, (long long)l->world_size);
    mg_comm_config one = *cfg;
    one.tp = one.pp = 1;
    return comm_world_build(out, &mg_comm_single_backend, NULL, 1, 0, &one);
}

#endif

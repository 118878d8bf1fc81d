/* comm_nccl.c — the NCCL backend (comm_internal.h): device buffers (CUDA pointers).
 *
 * Bootstrap: rank 0 makes the NCCL unique id and hands it to the others, over MPI when the
 * launch is MPI's (mpirun / srun, in a build with MPI) or over TCP from torchrun's
 * MASTER_ADDR / MASTER_PORT (comm_tcp.h). The device is cfg->device, else LOCAL_RANK.
 * Communicators are non-blocking (ncclConfig_t.blocking = 0): every call is enqueued on the
 * group's stream and completion is polled (cudaStreamQuery, ncclCommGetAsyncError) against
 * the world's deadline; a timeout aborts the communicator (ncclCommAbort) and names the
 * rank, group and operation (NCCL does not say which peer is missing). Groups are
 * ncclCommSplit of the world with the same color / key as the MPI backend. NCCL's own
 * reduction order: every rank gets the same bits, not necessarily in rank order.
 * Streams: the world's stream when mg_comm_set_stream gave one (the compute stream, so a
 * collective follows the kernels that wrote its buffer), else the group's own. Host buffers
 * (cudaPointerGetAttributes: not device or managed memory) go through the group's staging
 * buffer: copied in on the same stream, the call made on it, copied out.
 * Overlap (mg_comm_async_follow / _join): the group's own stream waits for an event of the
 * world's stream, the calls go on it without a host wait, and the join makes the world's
 * stream wait for an event of the group's.
 * Abort: MPI_Abort under MPI, else exit (torchrun ends the other ranks).
 */
#include "comm_internal.h"

#if MG_HAVE_NCCL

#include <cuda_runtime.h>
#include <nccl.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#include "comm_tcp.h"

#if MG_HAVE_MPI
#include <mpi.h>
#endif

typedef struct {
    ncclComm_t comm;
    cudaStream_t stream;
    float *one;        /* a device float for the barrier */
    void *stage;       /* device copy of host buffers, stage_bytes long (grown on demand) */
    size_t stage_bytes;
    cudaEvent_t ready, done; /* mg_comm_async_follow / _join (made on first use) */
    int mpi_finalize;  /* world: MPI was initialised here for the bootstrap */
} nccl_group;

static nccl_group *G(mg_comm *c) { return c->impl; }

static cudaStream_t stream_of(mg_comm *c)
{
    if (c->async) return G(c)->stream;
    return c->world->stream ? (cudaStream_t)c->world->stream : G(c)->stream;
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static mg_status fail(mg_comm *c, const char *op, const char *what)
{
    char me[64];
    comm_peer_str(c, c->rank, me, sizeof me);
    return mg_error_set(MG_ERR_IO, "%s on the %s group (%lld ranks, NCCL) %s on %s of %lld", op,
                        mg_comm_name(c), (long long)c->size, what, me,
                        (long long)c->world->size);
}

static mg_status nccl_ok(mg_comm *c, const char *op, ncclResult_t r)
{
    if (r == ncclSuccess || r == ncclInProgress) return MG_OK;
    char what[256];
    snprintf(what, sizeof what, "failed: %s", ncclGetErrorString(r));
    return fail(c, op, what);
}

/* Polls the group's stream and communicator until the enqueued work is done. */
static mg_status wait_stream(mg_comm *c, const char *op)
{
    nccl_group *g = G(c);
    double timeout = c->world->timeout_s, deadline = now_s() + timeout;
    for (;;) {
        cudaError_t e = cudaStreamQuery(stream_of(c));
        if (e == cudaSuccess) return MG_OK;
        if (e != cudaErrorNotReady) {
            char what[256];
            snprintf(what, sizeof what, "failed: CUDA %s", cudaGetErrorString(e));
            return fail(c, op, what);
        }
        ncclResult_t async = ncclSuccess;
        ncclCommGetAsyncError(g->comm, &async);
        MG_FORWARD(nccl_ok(c, op, async));
        if (timeout > 0 && now_s() > deadline) {
            ncclCommAbort(g->comm);
            g->comm = NULL;
            char what[96];
            snprintf(what, sizeof what,
                     "timed out after %g s (--distributed-timeout-minutes)", timeout);
            return fail(c, op, what);
        }
        struct timespec ts = {0, 50 * 1000};
        nanosleep(&ts, NULL);
    }
}

/* Waits for a non-blocking communicator call (init, split) to finish. */
static mg_status wait_comm(mg_comm *c, ncclComm_t comm, const char *op, double deadline)
{
    for (;;) {
        ncclResult_t r = ncclInProgress;
        ncclCommGetAsyncError(comm, &r);
        if (r == ncclSuccess) return MG_OK;
        MG_FORWARD(nccl_ok(c, op, r));
        if (now_s() > deadline) {
            ncclCommAbort(comm);
            return fail(c, op, "timed out (--distributed-timeout-minutes)");
        }
        struct timespec ts = {0, 1000 * 1000};
        nanosleep(&ts, NULL);
    }
}

static ncclDataType_t nccl_type(comm_dtype t)
{
    switch (t) {
    case COMM_F32: return ncclFloat;
    case COMM_F64: return ncclDouble;
    case COMM_F16: return ncclHalf;
    default: return ncclBfloat16;
    }
}

static size_t elem_size(comm_dtype t)
{
    return t == COMM_F32 ? sizeof(float) : t == COMM_F64 ? sizeof(double) : sizeof(uint16_t);
}

/* Whether p is the device's memory (NCCL reaches nothing else). */
static int on_device(const void *p)
{
    struct cudaPointerAttributes a;
    if (cudaPointerGetAttributes(&a, p) != cudaSuccess) {
        cudaGetLastError(); /* runtimes before CUDA 11 refuse an unregistered host pointer */
        return 0;
    }
    return a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged;
}

/* The group's staging buffer, at least `bytes` long (the previous call is complete). */
static mg_status stage_of(mg_comm *c, const char *op, size_t bytes, unsigned char **out)
{
    nccl_group *g = G(c);
    if (g->stage_bytes < bytes) {
        cudaFree(g->stage);
        g->stage = NULL;
        g->stage_bytes = 0;
        if (cudaMalloc(&g->stage, bytes) != cudaSuccess)
            return fail(c, op, "failed: cudaMalloc of the staging buffer for host memory");
        g->stage_bytes = bytes;
    }
    *out = g->stage;
    return MG_OK;
}

/* A staging copy (either direction) on the call's stream. */
static mg_status copy(mg_comm *c, const char *op, void *dst, const void *src, size_t bytes)
{
    cudaError_t e = cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDefault, stream_of(c));
    if (e == cudaSuccess) return MG_OK;
    char what[256];
    snprintf(what, sizeof what, "failed: staging copy of host memory: CUDA %s",
             cudaGetErrorString(e));
    return fail(c, op, what);
}

/* Enqueues the call, copies the staged result out (when out), waits for completion. */
static mg_status finish(mg_comm *c, const char *op, ncclResult_t r, void *out,
                        const void *staged, size_t bytes)
{
    MG_FORWARD(nccl_ok(c, op, r));
    if (c->async) /* enqueued on the group's stream; mg_comm_async_join orders what follows */
        return out ? mg_error_set(MG_ERR_ARG, "%s on the %s group: a host buffer between "
                                  "mg_comm_async_follow and _join", op, mg_comm_name(c))
                   : MG_OK;
    if (out) MG_FORWARD(copy(c, op, out, staged, bytes));
    return wait_stream(c, op);
}

/* In-place calls (all-reduce, broadcast): buf itself, or buf copied into the staging buffer. */
static mg_status in_place(mg_comm *c, const char *op, void *buf, size_t bytes,
                          unsigned char **dev)
{
    if (on_device(buf)) {
        *dev = buf;
        return MG_OK;
    }
    MG_FORWARD(stage_of(c, op, bytes, dev));
    return copy(c, op, *dev, buf, bytes);
}

static mg_status n_allreduce(mg_comm *c, void *buf, int64_t n, comm_dtype t)
{
    size_t bytes = (size_t)n * elem_size(t);
    unsigned char *d;
    MG_FORWARD(in_place(c, "all-reduce", buf, bytes, &d));
    return finish(c, "all-reduce", ncclAllReduce(d, d, (size_t)n, nccl_type(t), ncclSum,
                                                 G(c)->comm, stream_of(c)),
                  (void *)d == buf ? NULL : buf, d, bytes);
}

static mg_status n_allgather(mg_comm *c, void *recv, const void *send, int64_t bytes)
{
    size_t n = (size_t)bytes, all = n * (size_t)c->size;
    unsigned char *d = recv;
    if (!on_device(recv) || !on_device(send)) { /* gathered in place in the staging buffer */
        MG_FORWARD(stage_of(c, "all-gather", all, &d));
        MG_FORWARD(copy(c, "all-gather", d + (size_t)c->rank * n, send, n));
        send = d + (size_t)c->rank * n;
    }
    return finish(c, "all-gather", ncclAllGather(send, d, n, ncclUint8, G(c)->comm,
                                                 stream_of(c)),
                  (void *)d == recv ? NULL : recv, d, all);
}

static mg_status n_reduce_scatter(mg_comm *c, void *recv, const void *send, int64_t n,
                                  comm_dtype t)
{
    size_t bytes = (size_t)n * elem_size(t);
    unsigned char *d = recv;
    if (!on_device(recv) || !on_device(send)) { /* reduced in place in the staging buffer */
        unsigned char *s;
        MG_FORWARD(stage_of(c, "reduce-scatter", bytes * (size_t)c->size, &s));
        MG_FORWARD(copy(c, "reduce-scatter", s, send, bytes * (size_t)c->size));
        send = s;
        d = s + (size_t)c->rank * bytes;
    }
    return finish(c, "reduce-scatter", ncclReduceScatter(send, d, (size_t)n, nccl_type(t),
                                                         ncclSum, G(c)->comm, stream_of(c)),
                  (void *)d == recv ? NULL : recv, d, bytes);
}

static mg_status n_broadcast(mg_comm *c, void *buf, int64_t bytes, int64_t root)
{
    unsigned char *d;
    MG_FORWARD(in_place(c, "broadcast", buf, (size_t)bytes, &d));
    return finish(c, "broadcast", ncclBroadcast(d, d, (size_t)bytes, ncclUint8, (int)root,
                                                G(c)->comm, stream_of(c)),
                  (void *)d == buf ? NULL : buf, d, (size_t)bytes);
}

static mg_status n_barrier(mg_comm *c)
{
    nccl_group *g = G(c);
    if (!g->one && cudaMalloc((void **)&g->one, sizeof(float)) != cudaSuccess)
        return fail(c, "barrier", "failed: cudaMalloc");
    return finish(c, "barrier", ncclAllReduce(g->one, g->one, 1, ncclFloat, ncclSum, g->comm,
                                              stream_of(c)),
                  NULL, NULL, 0);
}

static mg_status n_send(mg_comm *c, const void *buf, int64_t bytes, int64_t peer)
{
    const void *d = buf;
    if (!on_device(buf)) {
        unsigned char *s;
        MG_FORWARD(stage_of(c, "send", (size_t)bytes, &s));
        MG_FORWARD(copy(c, "send", s, buf, (size_t)bytes));
        d = s;
    }
    return finish(c, "send", ncclSend(d, (size_t)bytes, ncclUint8, (int)peer, G(c)->comm,
                                      stream_of(c)),
                  NULL, NULL, 0);
}

static mg_status n_recv(mg_comm *c, void *buf, int64_t bytes, int64_t peer)
{
    unsigned char *d = buf;
    if (!on_device(buf)) MG_FORWARD(stage_of(c, "recv", (size_t)bytes, &d));
    return finish(c, "recv", ncclRecv(d, (size_t)bytes, ncclUint8, (int)peer, G(c)->comm,
                                      stream_of(c)),
                  (void *)d == buf ? NULL : buf, d, (size_t)bytes);
}

static mg_status cuda_ok(mg_comm *c, const char *op, cudaError_t e)
{
    if (e == cudaSuccess) return MG_OK;
    char what[256];
    snprintf(what, sizeof what, "failed: CUDA %s", cudaGetErrorString(e));
    return fail(c, op, what);
}

/* The group's stream waits for the world's stream up to now. */
static mg_status n_async_follow(mg_comm *c)
{
    nccl_group *g = G(c);
    if (!c->world->stream) return MG_OK; /* the calls are on the group's stream already */
    if (!g->ready) MG_FORWARD(cuda_ok(c, "async follow", cudaEventCreate(&g->ready)));
    MG_FORWARD(cuda_ok(c, "async follow",
                       cudaEventRecord(g->ready, (cudaStream_t)c->world->stream)));
    return cuda_ok(c, "async follow", cudaStreamWaitEvent(g->stream, g->ready, 0));
}

/* The world's stream waits for the group's collectives (no world stream: the host does). */
static mg_status n_async_join(mg_comm *c)
{
    nccl_group *g = G(c);
    if (!c->world->stream) return wait_stream(c, "async join");
    if (!g->done) MG_FORWARD(cuda_ok(c, "async join", cudaEventCreate(&g->done)));
    MG_FORWARD(cuda_ok(c, "async join", cudaEventRecord(g->done, g->stream)));
    return cuda_ok(c, "async join",
                   cudaStreamWaitEvent((cudaStream_t)c->world->stream, g->done, 0));
}

static ncclConfig_t nonblocking(void)
{
    ncclConfig_t cfg = NCCL_CONFIG_INITIALIZER;
    cfg.blocking = 0;
    return cfg;
}

static double deadline_of(const mg_comm *w)
{
    return now_s() + (w->timeout_s > 0 ? w->timeout_s : 1e9);
}

static mg_status n_make_group(mg_comm *c)
{
    nccl_group *w = G(c->world), *g = mg_calloc(1, sizeof *g);
    if (!g) return MG_ERR_NOMEM;
    c->impl = g;
    if (cudaStreamCreateWithFlags(&g->stream, cudaStreamNonBlocking) != cudaSuccess)
        return fail(c, "split", "failed: cudaStreamCreate");
    ncclConfig_t cfg = nonblocking();
    MG_FORWARD(nccl_ok(c, "split", ncclCommSplit(w->comm, (int)c->world_ranks[0], (int)c->rank,
                                                 &g->comm, &cfg)));
    return wait_comm(c, g->comm, "split", deadline_of(c->world));
}

static void n_free_group(mg_comm *c)
{
    nccl_group *g = G(c);
    if (!g) return;
    if (g->comm) ncclCommDestroy(g->comm);
    if (g->stream) cudaStreamDestroy(g->stream);
    if (g->one) cudaFree(g->one);
    if (g->stage) cudaFree(g->stage);
    if (g->ready) cudaEventDestroy(g->ready);
    if (g->done) cudaEventDestroy(g->done);
#if MG_HAVE_MPI
    if (g->mpi_finalize) MPI_Finalize();
#endif
    free(g);
    c->impl = NULL;
}

static void n_abort(mg_comm *world, int code)
{
    for (int i = MG_COMM_NGROUPS - 1; i >= 0; i--) {
        nccl_group *g = G(world->groups[i]);
        if (g && g->comm) ncclCommAbort(g->comm);
        if (g) g->comm = NULL;
    }
#if MG_HAVE_MPI
    int inited = 0;
    MPI_Initialized(&inited);
    if (inited) MPI_Abort(MPI_COMM_WORLD, code);
#endif
    _exit(code);
}

static const comm_backend nccl_backend = {
    "nccl", n_allreduce, n_allgather, n_reduce_scatter, n_broadcast, n_barrier,
    n_send, n_recv, n_make_group, n_free_group, n_abort, n_async_follow, n_async_join};

/* Rank 0's unique id to every rank: over MPI for an MPI launch, else TCP. */
static mg_status share_id(const mg_comm_launch *l, double timeout, ncclUniqueId *id,
                          int *mpi_finalize)
{
    *mpi_finalize = 0;
    if (l->kind == MG_LAUNCH_MPI) {
#if MG_HAVE_MPI
        int inited = 0;
        MPI_Initialized(&inited);
        if (!inited && MPI_Init(NULL, NULL) != MPI_SUCCESS)
            return mg_error_set(MG_ERR_IO, "MPI_Init failed (launched by %s)", l->launcher);
        *mpi_finalize = !inited;
        MG_RETURN_IF(MPI_Bcast(id, sizeof *id, MPI_BYTE, 0, MPI_COMM_WORLD) != MPI_SUCCESS,
                     MG_ERR_IO, "MPI_Bcast of the NCCL unique id failed");
        return MG_OK;
#else
        return mg_error_set(MG_ERR_UNSUPPORTED, "not supported yet: an NCCL bootstrap under %s "
                            "in a build without MPI: use torchrun's environment (WORLD_SIZE, "
                            "RANK, MASTER_ADDR, MASTER_PORT)", l->launcher);
#endif
    }
    return mg_comm_tcp_bcast(l->master_addr ? l->master_addr : "127.0.0.1",
                             l->master_port ? l->master_port : 29500, l->rank, l->world_size,
                             id, sizeof *id, timeout);
}

mg_status comm_nccl_create(mg_comm **out, const mg_comm_launch *l, const mg_comm_config *cfg)
{
    *out = NULL;
    int device = cfg->device >= 0 ? cfg->device : (int)l->local_rank;
    cudaError_t ce = cudaSetDevice(device);
    MG_RETURN_IF(ce != cudaSuccess, MG_ERR_IO, "NCCL backend: cannot use CUDA device %d: %s",
                 device, cudaGetErrorString(ce));
    ncclUniqueId id;
    if (l->rank == 0 && ncclGetUniqueId(&id) != ncclSuccess)
        return mg_error_set(MG_ERR_IO, "ncclGetUniqueId failed");
    nccl_group *w = mg_calloc(1, sizeof *w);
    if (!w) return MG_ERR_NOMEM;
    mg_status st = share_id(l, cfg->timeout_s, &id, &w->mpi_finalize);
    if (st == MG_OK && cudaStreamCreateWithFlags(&w->stream, cudaStreamNonBlocking) != cudaSuccess)
        st = mg_error_set(MG_ERR_IO, "NCCL backend: cudaStreamCreate failed");
    ncclConfig_t nc = nonblocking();
    if (st == MG_OK) {
        ncclResult_t r = ncclCommInitRankConfig(&w->comm, (int)l->world_size, id, (int)l->rank,
                                                &nc);
        if (r != ncclSuccess && r != ncclInProgress)
            st = mg_error_set(MG_ERR_IO, "ncclCommInitRank: %s", ncclGetErrorString(r));
    }
    if (st == MG_OK) {
        mg_comm tmp = {.kind = MG_COMM_WORLD, .size = l->world_size, .rank = l->rank,
                       .impl = w};
        tmp.world = &tmp;
        tmp.timeout_s = cfg->timeout_s;
        st = wait_comm(&tmp, w->comm, "init", deadline_of(&tmp));
        if (st != MG_OK) w->comm = NULL;
    }
    if (st != MG_OK) {
        mg_comm tmp = {.impl = w};
        n_free_group(&tmp);
        return st;
    }
    return comm_world_build(out, &nccl_backend, w, l->world_size, l->rank, cfg);
}

#else /* !MG_HAVE_NCCL */

mg_status comm_nccl_create(mg_comm **out, const mg_comm_launch *l, const mg_comm_config *cfg)
{
    (void)l, (void)cfg;
    *out = NULL;
    return mg_error_set(MG_ERR_UNSUPPORTED, "not supported yet: the NCCL backend: this "
                        "mg-train was built without NCCL (nccl.h and libnccl)");
}

#endif

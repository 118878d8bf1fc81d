/* comm.c — comm.h's front end: the world and its groups, argument checks, the volume
 * counters, and the dispatch to the backend (comm_internal.h).
 *
 * Contract (comm.h). The arguments are checked here, identically for every backend, so
 * that misuse fails the same way in one process as in many; empty transfers (n = 0) are
 * counted and return without reaching the backend, and so do collectives on one rank
 * (copies) and messages to self (a FIFO per group, as comm.h says).
 */
#include "comm_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const kind_names[MG_COMM_NGROUPS] = {"world", "tensor", "pipeline",
                                                        "data",  "model",  "embedding"};
static const char *const op_names[MG_COMM_NOPS] = {
    "all-reduce", "all-gather", "reduce-scatter", "broadcast", "barrier", "send", "recv"};

typedef struct comm_msg {
    struct comm_msg *next;
    int64_t bytes;
    unsigned char data[];
} comm_msg;

static void drop_messages(mg_comm *c)
{
    while (c->head) {
        comm_msg *m = c->head;
        c->head = m->next;
        free(m);
    }
    c->tail = NULL;
}

static void free_group(mg_comm *g)
{
    if (!g) return;
    drop_messages(g);
    if (g->be && g->be->free_group) g->be->free_group(g);
    free(g->world_ranks);
    free(g);
}

void mg_comm_free(mg_comm *c)
{
    if (!c) return;
    MG_ASSERT(c->world == c);
    for (int i = 1; i < MG_COMM_NGROUPS; i++) free_group(c->groups[i]);
    free_group(c);
}

/* Group g of kind k on the world's grid: its ranks, then the backend's state. */
static mg_status make_group(mg_comm *w, mg_comm *g, mg_comm_kind k)
{
    int64_t *ranks = mg_calloc((size_t)w->grid.world, sizeof *ranks);
    if (!ranks) return MG_ERR_NOMEM;
    g->kind = k;
    g->world = w;
    g->be = w->be;
    g->world_ranks = ranks;
    g->size = mg_comm_grid_group(&w->grid, k, w->rank, ranks, &g->rank);
    return g->be->make_group(g);
}

mg_status comm_world_build(mg_comm **out, const comm_backend *be, void *impl, int64_t size,
                           int64_t rank, const mg_comm_config *cfg)
{
    *out = NULL;
    mg_comm *w = mg_calloc(1, sizeof *w);
    if (!w) {
        mg_comm tmp = {.be = be, .impl = impl};
        be->free_group(&tmp);
        return MG_ERR_NOMEM;
    }
    w->kind = MG_COMM_WORLD;
    w->size = size;
    w->rank = rank;
    w->world = w;
    w->be = be;
    w->impl = impl;
    w->groups[MG_COMM_WORLD] = w;
    w->timeout_s = cfg->timeout_s;
    mg_status st = mg_comm_grid_init(&w->grid, size, cfg->tp > 0 ? cfg->tp : 1,
                                     cfg->pp > 0 ? cfg->pp : 1);
    if (st == MG_OK) {
        w->world_ranks = mg_calloc((size_t)size, sizeof *w->world_ranks);
        st = w->world_ranks ? MG_OK : MG_ERR_NOMEM;
        for (int64_t i = 0; st == MG_OK && i < size; i++) w->world_ranks[i] = i;
    }
    for (int i = 1; st == MG_OK && i < MG_COMM_NGROUPS; i++) {
        w->groups[i] = mg_calloc(1, sizeof *w->groups[i]);
        st = w->groups[i] ? make_group(w, w->groups[i], (mg_comm_kind)i) : MG_ERR_NOMEM;
    }
    if (st != MG_OK) {
        mg_comm_free(w);
        return st;
    }
    *out = w;
    return MG_OK;
}

mg_status mg_comm_create_single(mg_comm **out)
{
    mg_comm_config cfg = {1, 1, 0, MG_COMM_BACKEND_SINGLE, -1};
    return comm_world_build(out, &mg_comm_single_backend, NULL, 1, 0, &cfg);
}

mg_status mg_comm_create(mg_comm **out, const mg_comm_config *cfg)
{
    *out = NULL;
    mg_comm_launch l;
    MG_FORWARD(mg_comm_launch_detect(&l));
    mg_comm_backend be = cfg->backend;
    if (be == MG_COMM_BACKEND_AUTO)
        be = l.kind == MG_LAUNCH_MPI ? MG_COMM_BACKEND_MPI : MG_COMM_BACKEND_SINGLE;
    if (be == MG_COMM_BACKEND_NCCL) return comm_nccl_create(out, &l, cfg);
    if (be == MG_COMM_BACKEND_MPI) return comm_mpi_create(out, &l, cfg);
    MG_RETURN_IF(l.world_size > 1, MG_ERR_UNSUPPORTED,
                 "not supported yet: a %s launch of %lld ranks with CPU buffers: the CPU "
                 "trainer communicates over MPI, launch it with mpirun or srun (the "
                 "environment launch bootstraps the NCCL backend, for device buffers)",
                 l.launcher, (long long)l.world_size);
    mg_comm_config one = *cfg;
    one.tp = one.pp = 1;
    return comm_world_build(out, &mg_comm_single_backend, NULL, 1, 0, &one);
}

void mg_comm_set_stream(mg_comm *world, void *stream)
{
    MG_ASSERT(world->world == world);
    world->stream = stream;
}

mg_status mg_comm_async_follow(mg_comm *c)
{
    if (c->size == 1 || !c->be->async_follow) return MG_OK;
    MG_FORWARD(c->be->async_follow(c));
    c->async = 1;
    return MG_OK;
}

mg_status mg_comm_async_join(mg_comm *c)
{
    if (!c->async) return MG_OK;
    c->async = 0;
    return c->be->async_join(c);
}

void mg_comm_abort(mg_comm *world, int code)
{
    if (world && world->be->abort) world->be->abort(world->world, code);
}

int64_t mg_comm_size(const mg_comm *c) { return c->size; }
int64_t mg_comm_rank(const mg_comm *c) { return c->rank; }
const char *mg_comm_name(const mg_comm *c) { return mg_comm_kind_name(c->kind); }
const char *mg_comm_backend_name(const mg_comm *c) { return c->be->name; }
const char *mg_comm_op_name(mg_comm_op op) { return op_names[op]; }
const char *mg_comm_kind_name(mg_comm_kind kind) { return kind_names[kind]; }

int64_t mg_comm_world_rank(const mg_comm *c, int64_t r)
{
    MG_ASSERT(r >= 0 && r < c->size);
    return c->world_ranks[r];
}

void comm_peer_str(const mg_comm *c, int64_t r, char *buf, size_t n)
{
    if (c->kind == MG_COMM_WORLD) snprintf(buf, n, "rank %lld", (long long)r);
    else
        snprintf(buf, n, "rank %lld (world rank %lld)", (long long)r,
                 (long long)c->world_ranks[r]);
}

mg_comm *mg_comm_group(mg_comm *c, mg_comm_kind kind)
{
    MG_ASSERT((int)kind >= 0 && kind < MG_COMM_NGROUPS);
    return c->world->groups[kind];
}

mg_status mg_comm_group_by_name(mg_comm *c, const char *name, mg_comm **group)
{
    *group = NULL;
    for (int i = 0; i < MG_COMM_NGROUPS; i++) {
        if (name && strcmp(name, kind_names[i]) == 0) {
            *group = mg_comm_group(c, (mg_comm_kind)i);
            return MG_OK;
        }
    }
    return mg_error_set(MG_ERR_ARG,
                        "communicator: unknown group \"%s\" (world, tensor, pipeline, data, "
                        "model, embedding)", name ? name : "(null)");
}

void mg_comm_counts(const mg_comm *c, mg_comm_op op, int64_t *calls, int64_t *bytes)
{
    *calls = c->count[op].calls;
    *bytes = c->count[op].bytes;
}

void mg_comm_reset_counts(mg_comm *c)
{
    for (int i = 0; i < MG_COMM_NGROUPS; i++)
        memset(c->world->groups[i]->count, 0, sizeof c->world->groups[i]->count);
}

static void count(mg_comm *c, mg_comm_op op, int64_t bytes)
{
    if (c->size == 1) return; /* nothing moves */
    c->count[op].calls++;
    c->count[op].bytes += bytes;
}

static mg_status check_count(const mg_comm *c, const char *op, const void *buf, int64_t n)
{
    MG_RETURN_IF(n < 0, MG_ERR_ARG, "%s on the %s group: negative count %lld", op,
                 mg_comm_name(c), (long long)n);
    MG_RETURN_IF(n > 0 && !buf, MG_ERR_ARG, "%s on the %s group: NULL buffer", op,
                 mg_comm_name(c));
    return MG_OK;
}

static mg_status allreduce(mg_comm *c, void *buf, int64_t n, comm_dtype t, size_t elem)
{
    MG_FORWARD(check_count(c, "all-reduce", buf, n));
    count(c, MG_COMM_OP_ALLREDUCE, n * (int64_t)elem);
    if (n == 0 || c->size == 1) return MG_OK;
    return c->be->allreduce(c, buf, n, t);
}

mg_status mg_comm_allreduce_sum_f32(mg_comm *c, float *buf, int64_t n)
{
    return allreduce(c, buf, n, COMM_F32, sizeof(float));
}

mg_status mg_comm_allreduce_sum_f64(mg_comm *c, double *buf, int64_t n)
{
    return allreduce(c, buf, n, COMM_F64, sizeof(double));
}

mg_status mg_comm_allreduce_sum_bf16(mg_comm *c, uint16_t *buf, int64_t n)
{
    return allreduce(c, buf, n, COMM_BF16, sizeof(uint16_t));
}

mg_status mg_comm_allreduce_sum_f16(mg_comm *c, uint16_t *buf, int64_t n)
{
    return allreduce(c, buf, n, COMM_F16, sizeof(uint16_t));
}

/* n elements of elem bytes from every rank (one rank: a copy unless in place). */
static mg_status allgather(mg_comm *c, void *recv, const void *send, int64_t n, size_t elem)
{
    MG_FORWARD(check_count(c, "all-gather", recv, n));
    MG_FORWARD(check_count(c, "all-gather", send, n));
    int64_t bytes = n * (int64_t)elem;
    count(c, MG_COMM_OP_ALLGATHER, c->size * bytes);
    if (n == 0) return MG_OK;
    if (c->size == 1) {
        if (recv != send) memmove(recv, send, (size_t)bytes);
        return MG_OK;
    }
    return c->be->allgather(c, recv, send, bytes);
}

mg_status mg_comm_allgather_f32(mg_comm *c, float *recv, const float *send, int64_t n)
{
    return allgather(c, recv, send, n, sizeof(float));
}

mg_status mg_comm_allgather_bf16(mg_comm *c, uint16_t *recv, const uint16_t *send, int64_t n)
{
    return allgather(c, recv, send, n, sizeof(uint16_t));
}

static mg_status reduce_scatter(mg_comm *c, void *recv, const void *send, int64_t n,
                                comm_dtype t, size_t elem)
{
    MG_FORWARD(check_count(c, "reduce-scatter", recv, n));
    MG_FORWARD(check_count(c, "reduce-scatter", send, n));
    count(c, MG_COMM_OP_REDUCE_SCATTER, c->size * n * (int64_t)elem);
    if (n == 0) return MG_OK;
    if (c->size == 1) {
        if (recv != send) memmove(recv, send, (size_t)n * elem);
        return MG_OK;
    }
    return c->be->reduce_scatter(c, recv, send, n, t);
}

mg_status mg_comm_reduce_scatter_sum_f32(mg_comm *c, float *recv, const float *send,
                                         int64_t n)
{
    return reduce_scatter(c, recv, send, n, COMM_F32, sizeof(float));
}

mg_status mg_comm_reduce_scatter_sum_bf16(mg_comm *c, uint16_t *recv, const uint16_t *send,
                                          int64_t n)
{
    return reduce_scatter(c, recv, send, n, COMM_BF16, sizeof(uint16_t));
}

mg_status mg_comm_reduce_scatter_sum_f16(mg_comm *c, uint16_t *recv, const uint16_t *send,
                                         int64_t n)
{
    return reduce_scatter(c, recv, send, n, COMM_F16, sizeof(uint16_t));
}

mg_status mg_comm_broadcast(mg_comm *c, void *buf, int64_t bytes, int64_t root)
{
    MG_FORWARD(check_count(c, "broadcast", buf, bytes));
    MG_RETURN_IF(root < 0 || root >= c->size, MG_ERR_ARG,
                 "broadcast on the %s group: no rank %lld (size %lld)", mg_comm_name(c),
                 (long long)root, (long long)c->size);
    count(c, MG_COMM_OP_BROADCAST, bytes);
    if (bytes == 0 || c->size == 1) return MG_OK;
    return c->be->broadcast(c, buf, bytes, root);
}

mg_status mg_comm_barrier(mg_comm *c)
{
    count(c, MG_COMM_OP_BARRIER, 0);
    if (c->size == 1) return MG_OK;
    return c->be->barrier(c);
}

static mg_status check_peer(const mg_comm *c, const char *op, int64_t peer)
{
    MG_RETURN_IF(peer < 0 || peer >= c->size, MG_ERR_ARG,
                 "%s on the %s group: no peer %lld (size %lld)", op, mg_comm_name(c),
                 (long long)peer, (long long)c->size);
    return MG_OK;
}

mg_status mg_comm_send(mg_comm *c, const void *buf, int64_t bytes, int64_t peer)
{
    MG_FORWARD(check_count(c, "send", buf, bytes));
    MG_FORWARD(check_peer(c, "send", peer));
    count(c, MG_COMM_OP_SEND, bytes);
    if (peer != c->rank) return c->be->send(c, buf, bytes, peer);
    comm_msg *m = mg_malloc(sizeof *m + (size_t)bytes); /* to self: queued */
    if (!m) return MG_ERR_NOMEM;
    m->next = NULL;
    m->bytes = bytes;
    if (bytes > 0) memcpy(m->data, buf, (size_t)bytes);
    if (c->tail) c->tail->next = m;
    else c->head = m;
    c->tail = m;
    return MG_OK;
}

mg_status mg_comm_recv(mg_comm *c, void *buf, int64_t bytes, int64_t peer)
{
    MG_FORWARD(check_count(c, "recv", buf, bytes));
    MG_FORWARD(check_peer(c, "recv", peer));
    count(c, MG_COMM_OP_RECV, bytes);
    if (peer != c->rank) return c->be->recv(c, buf, bytes, peer);
    comm_msg *m = c->head;
    MG_RETURN_IF(!m, MG_ERR_ARG, "recv on the %s group from rank %lld: no message sent",
                 mg_comm_name(c), (long long)peer);
    MG_RETURN_IF(m->bytes != bytes, MG_ERR_ARG,
                 "recv on the %s group from rank %lld: %lld bytes expected, %lld sent",
                 mg_comm_name(c), (long long)peer, (long long)bytes, (long long)m->bytes);
    if (bytes > 0) memcpy(buf, m->data, (size_t)bytes);
    c->head = m->next;
    if (!c->head) c->tail = NULL;
    free(m);
    return MG_OK;
}

/* comm_single.c — the single-process backend (comm_internal.h). comm.c answers every call
 * on a group of one rank itself (sums are the buffer, gathers copies, messages to self
 * queued), so nothing reaches these functions: they exist to complete the table and fail
 * loudly if the front end ever changes that. */
#include "comm_internal.h"

static mg_status unreachable(const mg_comm *c, const char *op)
{
    return mg_error_set(MG_ERR_ARG, "%s on the %s group reached the single-process backend "
                        "with %lld ranks", op, mg_comm_name(c), (long long)mg_comm_size(c));
}

static mg_status s_allreduce(mg_comm *c, void *buf, int64_t n, comm_dtype t)
{
    (void)buf, (void)n, (void)t;
    return unreachable(c, "all-reduce");
}

static mg_status s_allgather(mg_comm *c, void *recv, const void *send, int64_t bytes)
{
    (void)recv, (void)send, (void)bytes;
    return unreachable(c, "all-gather");
}

static mg_status s_reduce_scatter(mg_comm *c, void *recv, const void *send, int64_t n,
                                  comm_dtype t)
{
    (void)recv, (void)send, (void)n, (void)t;
    return unreachable(c, "reduce-scatter");
}

static mg_status s_broadcast(mg_comm *c, void *buf, int64_t bytes, int64_t root)
{
    (void)buf, (void)bytes, (void)root;
    return unreachable(c, "broadcast");
}

static mg_status s_barrier(mg_comm *c) { return unreachable(c, "barrier"); }

static mg_status s_send(mg_comm *c, const void *buf, int64_t bytes, int64_t peer)
{
    (void)buf, (void)bytes, (void)peer;
    return unreachable(c, "send");
}

static mg_status s_recv(mg_comm *c, void *buf, int64_t bytes, int64_t peer)
{
    (void)buf, (void)bytes, (void)peer;
    return unreachable(c, "recv");
}

static mg_status s_make_group(mg_comm *g)
{
    (void)g;
    return MG_OK;
}

static void s_free_group(mg_comm *g) { (void)g; }

const comm_backend mg_comm_single_backend = {
    "single", s_allreduce, s_allgather, s_reduce_scatter, s_broadcast, s_barrier,
    s_send, s_recv, s_make_group, s_free_group, NULL, NULL, NULL};

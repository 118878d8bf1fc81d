/* comm.c — comm.h: the single-process communicator (size 1, rank 0).
 *
 * Contract (comm.h). With one rank a sum over the group is the buffer itself, all-gather
 * and reduce-scatter are copies (skipped when in place), broadcast from root 0 leaves the
 * buffer unchanged and the barrier returns at once. The arguments are checked exactly as a
 * multi-rank implementation must check them, so that misuse fails here first. Messages to
 * self wait in a FIFO owned by the communicator they were sent on.
 */
#include "comm.h"

#include <stdlib.h>
#include <string.h>

typedef struct comm_msg {
    struct comm_msg *next;
    int64_t bytes;
    unsigned char data[];
} comm_msg;

struct mg_comm {
    mg_comm_kind kind;
    int64_t size, rank;
    mg_comm *world;                    /* the world this group belongs to (itself) */
    mg_comm *groups[MG_COMM_NGROUPS];  /* world only; groups[MG_COMM_WORLD] = world */
    comm_msg *head, *tail;             /* messages sent to self, oldest first */
};

static const char *const kind_names[MG_COMM_NGROUPS] = {"world", "tensor", "pipeline",
                                                        "data", "model"};

static void drop_messages(mg_comm *c)
{
    while (c->head) {
        comm_msg *m = c->head;
        c->head = m->next;
        free(m);
    }
    c->tail = NULL;
}

mg_status mg_comm_create_single(mg_comm **out)
{
    *out = NULL;
    mg_comm *w = mg_calloc(1, sizeof *w);
    if (!w) return MG_ERR_NOMEM;
    w->kind = MG_COMM_WORLD;
    w->size = 1;
    w->world = w;
    w->groups[MG_COMM_WORLD] = w;
    for (int i = 1; i < MG_COMM_NGROUPS; i++) {
        mg_comm *g = mg_calloc(1, sizeof *g);
        if (!g) {
            mg_comm_free(w);
            return MG_ERR_NOMEM;
        }
        g->kind = (mg_comm_kind)i;
        g->size = 1;
        g->world = w;
        w->groups[i] = g;
    }
    *out = w;
    return MG_OK;
}

void mg_comm_free(mg_comm *c)
{
    if (!c) return;
    MG_ASSERT(c->world == c);
    for (int i = 1; i < MG_COMM_NGROUPS; i++) {
        if (!c->groups[i]) continue;
        drop_messages(c->groups[i]);
        free(c->groups[i]);
    }
    drop_messages(c);
    free(c);
}

int64_t mg_comm_size(const mg_comm *c) { return c->size; }
int64_t mg_comm_rank(const mg_comm *c) { return c->rank; }
const char *mg_comm_name(const mg_comm *c) { return kind_names[c->kind]; }

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
                        "model)", name ? name : "(null)");
}

static mg_status check_count(const mg_comm *c, const char *op, const void *buf, int64_t n)
{
    MG_RETURN_IF(n < 0, MG_ERR_ARG, "%s on the %s group: negative count %lld", op,
                 mg_comm_name(c), (long long)n);
    MG_RETURN_IF(n > 0 && !buf, MG_ERR_ARG, "%s on the %s group: NULL buffer", op,
                 mg_comm_name(c));
    return MG_OK;
}

mg_status mg_comm_allreduce_sum_f32(mg_comm *c, float *buf, int64_t n)
{
    return check_count(c, "all-reduce", buf, n);
}

mg_status mg_comm_allreduce_sum_f64(mg_comm *c, double *buf, int64_t n)
{
    return check_count(c, "all-reduce", buf, n);
}

/* One rank: recv = send (n floats), skipped when they are the same memory. */
static void copy_floats(float *dst, const float *src, int64_t n)
{
    if (n > 0 && dst != src) memmove(dst, src, (size_t)n * sizeof *dst);
}

mg_status mg_comm_allgather_f32(mg_comm *c, float *recv, const float *send, int64_t n)
{
    MG_FORWARD(check_count(c, "all-gather", recv, n));
    MG_FORWARD(check_count(c, "all-gather", send, n));
    copy_floats(recv + c->rank * n, send, n);
    return MG_OK;
}

mg_status mg_comm_reduce_scatter_sum_f32(mg_comm *c, float *recv, const float *send,
                                         int64_t n)
{
    MG_FORWARD(check_count(c, "reduce-scatter", recv, n));
    MG_FORWARD(check_count(c, "reduce-scatter", send, n));
    copy_floats(recv, send + c->rank * n, n);
    return MG_OK;
}

mg_status mg_comm_broadcast(mg_comm *c, void *buf, int64_t bytes, int64_t root)
{
    MG_FORWARD(check_count(c, "broadcast", buf, bytes));
    MG_RETURN_IF(root < 0 || root >= c->size, MG_ERR_ARG,
                 "broadcast on the %s group: no rank %lld (size %lld)", mg_comm_name(c),
                 (long long)root, (long long)c->size);
    return MG_OK;
}

mg_status mg_comm_barrier(mg_comm *c)
{
    (void)c;
    return MG_OK;
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
    comm_msg *m = mg_malloc(sizeof *m + (size_t)bytes);
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

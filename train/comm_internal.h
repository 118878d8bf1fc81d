/* comm_internal.h — what the communicator's front end (comm.c: argument checks, counters,
 * groups) shares with its backends (comm_single.c, comm_mpi.c, comm_nccl.c). Not a public
 * interface.
 *
 * A backend receives calls whose arguments comm.c has checked (counts >= 0, buffers
 * present, root and peer in range), on groups of more than one rank, that are not empty
 * (n > 0) unless the operation synchronises (barrier), and whose peer is another rank
 * (comm.c queues messages to self). Its errors name the operation and the group.
 */
#ifndef MG_TRAIN_COMM_INTERNAL_H
#define MG_TRAIN_COMM_INTERNAL_H

#include "comm.h"
#include "comm_groups.h"
#include "comm_launch.h"

typedef enum { COMM_F32, COMM_F64, COMM_BF16, COMM_F16 } comm_dtype;

typedef struct comm_backend {
    const char *name;
    mg_status (*allreduce)(mg_comm *c, void *buf, int64_t n, comm_dtype t);
    /* recv gets rank r's `bytes` bytes at r x bytes; send may be recv + rank x bytes */
    mg_status (*allgather)(mg_comm *c, void *recv, const void *send, int64_t bytes);
    /* n elements of type t (fp32, bf16 or fp16) to each rank */
    mg_status (*reduce_scatter)(mg_comm *c, void *recv, const void *send, int64_t n,
                                comm_dtype t);
    mg_status (*broadcast)(mg_comm *c, void *buf, int64_t bytes, int64_t root);
    mg_status (*barrier)(mg_comm *c);
    mg_status (*send)(mg_comm *c, const void *buf, int64_t bytes, int64_t peer);
    mg_status (*recv)(mg_comm *c, void *buf, int64_t bytes, int64_t peer);
    /* The backend state of group g (g->world_ranks set; the world's made first). */
    mg_status (*make_group)(mg_comm *g);
    void (*free_group)(mg_comm *g);    /* every group, the world last */
    void (*abort)(mg_comm *world, int code);
    /* comm.h mg_comm_async_follow / _join; NULL: the backend's calls complete on return */
    mg_status (*async_follow)(mg_comm *c);
    mg_status (*async_join)(mg_comm *c);
} comm_backend;

typedef struct {
    int64_t calls, bytes;
} comm_count;

struct mg_comm {
    mg_comm_kind kind;
    int64_t size, rank;
    int64_t *world_ranks;              /* size entries: world rank of each group rank */
    mg_comm *world;                    /* the world this group belongs to (itself) */
    mg_comm *groups[MG_COMM_NGROUPS];  /* world only; groups[MG_COMM_WORLD] = world */
    const comm_backend *be;
    void *impl;                        /* the backend's state of this group */
    comm_count count[MG_COMM_NOPS];
    mg_comm_grid grid;                 /* world only */
    double timeout_s;                  /* world only: per operation, <= 0 none */
    void *stream;                      /* world only: mg_comm_set_stream's (nccl) */
    int async;                         /* between mg_comm_async_follow and _join */
    struct comm_msg *head, *tail;      /* messages sent to self, oldest first */
};

/* Allocates a world of `size` ranks (this one `rank`) for backend be with impl, builds its
 * groups on the grid (be->make_group for each) and returns it in *out; on failure frees
 * what it made (impl included, through be->free_group). */
mg_status comm_world_build(mg_comm **out, const comm_backend *be, void *impl, int64_t size,
                           int64_t rank, const mg_comm_config *cfg);

/* The backends' constructors (comm_single.c, comm_mpi.c, comm_nccl.c). The MPI and NCCL
 * ones answer MG_ERR_UNSUPPORTED in a build without the library. */
extern const comm_backend mg_comm_single_backend;
mg_status comm_mpi_create(mg_comm **out, const mg_comm_launch *l, const mg_comm_config *cfg);
mg_status comm_nccl_create(mg_comm **out, const mg_comm_launch *l, const mg_comm_config *cfg);

/* "rank 1 (world rank 3)": a group rank as error messages name it. */
void comm_peer_str(const mg_comm *c, int64_t r, char *buf, size_t n);

#endif

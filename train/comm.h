/* comm.h — mg-train's one communication interface: every collective and point-to-point
 * transfer of the trainer goes through these functions.
 *
 * Contract:
 *   - mg_comm is an opaque communicator: a group of `size` ranks of which this process is
 *     `rank`. mg_comm_create_single() builds the single-process world (size 1, rank 0);
 *     later MPI / NCCL implementations slot in behind the same functions (a backend field
 *     selects them), so trainer code never calls MPI or NCCL directly.
 *   - Sub-groups: a world owns its tensor-, pipeline- and data-parallel groups and the
 *     model-parallel group (tensor x pipeline), each itself an mg_comm (all of size 1 in a
 *     single process). mg_comm_group() returns them by kind, mg_comm_group_by_name() by
 *     name ("world", "tensor", "pipeline", "data", "model"). Groups belong to the world:
 *     never free them; they are valid until mg_comm_free(world).
 *   - Buffers belong to the caller; no call keeps a pointer after it returns. Counts are
 *     element counts (int64_t, >= 0); n = 0 is a valid no-op. Reductions are sums, done in
 *     place: on return every rank's buffer holds the sum over the group's ranks, added in
 *     rank order (so every rank gets bit-identical values).
 *   - all-gather: recv (size * n floats) receives rank r's n floats of send at r * n; send
 *     may be recv + rank * n (in place). reduce-scatter: send holds size * n floats; recv
 *     (n floats) receives the sum over ranks of block `rank`; recv may be send + rank * n.
 *     broadcast: root's bytes are copied to every rank's buf.
 *   - Every rank of a group must call the group's collectives in the same order with the
 *     same counts (and root); a mismatch is a deadlock or an error, not detected here.
 *   - send/recv (pipeline stages) move `bytes` bytes to / from rank `peer` of the group;
 *     a message is matched by order. A peer that is not a rank of the group is MG_ERR_ARG
 *     ("no peer"); in a single process the only peer is the rank itself: a send to self is
 *     queued (copied) and a later recv from self takes the oldest queued message, whose
 *     size must equal `bytes` (MG_ERR_ARG otherwise, or when nothing is queued, which
 *     would deadlock on a real transport).
 *   - Thread safety: one communicator (with its groups) is used by one thread at a time.
 *   - Library code: never prints or exits; errors are mg_status with mg_error_set().
 */
#ifndef MG_TRAIN_COMM_H
#define MG_TRAIN_COMM_H

#include <stdint.h>

#include "mg/error.h"

typedef struct mg_comm mg_comm;

typedef enum {
    MG_COMM_WORLD = 0,
    MG_COMM_TENSOR = 1,    /* tensor-parallel group */
    MG_COMM_PIPELINE = 2,  /* pipeline-parallel group (the stages of one model replica) */
    MG_COMM_DATA = 3,      /* data-parallel group (replicas of one model shard) */
    MG_COMM_MODEL = 4,     /* model-parallel group: tensor x pipeline */
    MG_COMM_NGROUPS = 5
} mg_comm_kind;

/* The single-process world: size 1, rank 0, every sub-group of size 1. */
mg_status mg_comm_create_single(mg_comm **c);
/* Frees a world and its groups; accepts NULL. Must not be called on a sub-group. */
void mg_comm_free(mg_comm *c);

int64_t mg_comm_size(const mg_comm *c);
int64_t mg_comm_rank(const mg_comm *c);
const char *mg_comm_name(const mg_comm *c);

/* The group `kind` of the world that c belongs to (c itself for its own kind). */
mg_comm *mg_comm_group(mg_comm *c, mg_comm_kind kind);
/* By name; MG_ERR_ARG naming the unknown group. */
mg_status mg_comm_group_by_name(mg_comm *c, const char *name, mg_comm **group);

/* In-place sums over the group's ranks. */
mg_status mg_comm_allreduce_sum_f32(mg_comm *c, float *buf, int64_t n);
mg_status mg_comm_allreduce_sum_f64(mg_comm *c, double *buf, int64_t n);
mg_status mg_comm_allgather_f32(mg_comm *c, float *recv, const float *send, int64_t n);
mg_status mg_comm_reduce_scatter_sum_f32(mg_comm *c, float *recv, const float *send,
                                         int64_t n);
mg_status mg_comm_broadcast(mg_comm *c, void *buf, int64_t bytes, int64_t root);
mg_status mg_comm_barrier(mg_comm *c);

mg_status mg_comm_send(mg_comm *c, const void *buf, int64_t bytes, int64_t peer);
mg_status mg_comm_recv(mg_comm *c, void *buf, int64_t bytes, int64_t peer);

#endif

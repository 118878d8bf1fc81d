/* comm.h — mg-train's one communication interface: every collective and point-to-point
 * transfer of the trainer goes through these functions.
 *
 * Contract:
 *   - mg_comm is an opaque communicator: a group of `size` ranks of which this process is
 *     `rank`. Backends behind the same functions (trainer code never calls MPI or NCCL):
 *       single  mg_comm_create_single(): the one-process world (size 1, rank 0);
 *       mpi     CPU buffers, ranks from mpirun / srun (comm_mpi.c, built where MPI is);
 *       nccl    device buffers (comm_nccl.c, built where NCCL is), bootstrapped over MPI or
 *               from torchrun's RANK / WORLD_SIZE / LOCAL_RANK / MASTER_ADDR / MASTER_PORT
 *               with the NCCL unique id sent over TCP (comm_tcp.h). Host buffers (memory
 *               that is not the device's: the loss, norms, flags) are copied through a
 *               device buffer of the group, so every call takes either kind. Work is
 *               enqueued on the stream of mg_comm_set_stream (else the group's own) and
 *               every call returns when it is complete.
 *     mg_comm_create() picks the backend from the launch (comm_launch.h) and cfg.
 *   - Sub-groups: a world owns its tensor-, pipeline- and data-parallel groups, the
 *     model-parallel group (tensor x pipeline) and the embedding group (first and last
 *     pipeline stage, for tied embeddings), each itself an mg_comm, built in megatron-core's
 *     default rank order tp-cp-ep-dp-pp (comm_groups.h). mg_comm_group() returns them by
 *     kind, mg_comm_group_by_name() by name ("world", "tensor", "pipeline", "data",
 *     "model", "embedding"). Groups belong to the world: never free them; they are valid
 *     until mg_comm_free(world).
 *   - Buffers belong to the caller; no call keeps a pointer after it returns. Counts are
 *     element counts (int64_t, >= 0); n = 0 is a valid no-op. Reductions are sums, done in
 *     place: on return every rank's buffer holds the sum over the group's ranks, added in
 *     rank order (so every rank gets bit-identical values). (nccl: NCCL's own order; every
 *     rank still gets the same bits, which NCCL's ring and tree algorithms guarantee.)
 *   - all-gather: recv (size * n elements) receives rank r's n elements of send at r * n; send
 *     may be recv + rank * n (in place). reduce-scatter: send holds size * n elements; recv
 *     (n elements) receives the sum over ranks of block `rank`; recv may be send + rank * n.
 *     broadcast: root's bytes are copied to every rank's buf.
 *   - Every rank of a group must call the group's collectives in the same order with the
 *     same counts (and root); a mismatch is a deadlock or an error, not detected here.
 *   - send/recv (pipeline stages) move `bytes` bytes to / from rank `peer` of the group;
 *     a message is matched by order. A peer that is not a rank of the group is MG_ERR_ARG
 *     ("no peer"); in a single process the only peer is the rank itself: a send to self is
 *     queued (copied) and a later recv from self takes the oldest queued message, whose
 *     size must equal `bytes` (MG_ERR_ARG otherwise, or when nothing is queued, which
 *     would deadlock on a real transport).
 *   - Failures: with a timeout (cfg.timeout_s > 0, --distributed-timeout-minutes) an
 *     operation not complete by then fails with MG_ERR_IO naming this rank, the group, the
 *     operation and the peers it still waits for (group and world ranks); a peer that is
 *     gone (transport error) fails the same way at once. After such an error the world is
 *     unusable: the tool prints the message and calls mg_comm_abort(), which ends every
 *     rank of the job (MPI_Abort) with that exit status.
 *   - Volume: every group of more than one rank counts, per operation, the calls and the
 *     bytes of their payload (nccl-tests' "size"): all-reduce n x element size, all-gather
 *     and reduce-scatter the whole size x n buffer, broadcast and send/recv their bytes,
 *     barrier 0. Calls on a group of one rank move nothing and are not counted.
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
    MG_COMM_EMBEDDING = 5, /* first and last pipeline stage (a middle stage: itself alone) */
    MG_COMM_NGROUPS = 6
} mg_comm_kind;

typedef enum {
    MG_COMM_BACKEND_AUTO = 0, /* mpi when launched by mpirun/srun, else single */
    MG_COMM_BACKEND_SINGLE,
    MG_COMM_BACKEND_MPI,
    MG_COMM_BACKEND_NCCL
} mg_comm_backend;

typedef struct {
    int64_t tp, pp;            /* tensor and pipeline sizes; data = world / (tp x pp) */
    double timeout_s;          /* per operation; <= 0 waits forever */
    mg_comm_backend backend;
    int device;                /* nccl: the CUDA device (-1: LOCAL_RANK) */
} mg_comm_config;

/* The single-process world: size 1, rank 0, every sub-group of size 1. */
mg_status mg_comm_create_single(mg_comm **c);
/* The world of this launch (comm_launch.h) with its groups. A multi-rank launch without the
 * backend it needs is MG_ERR_UNSUPPORTED naming the launcher and what to install; a world
 * size that tp x pp does not divide is MG_ERR_ARG. */
mg_status mg_comm_create(mg_comm **world, const mg_comm_config *cfg);
/* After a failed collective: ends the whole job with exit status `code` (MPI_Abort; never
 * returns with more than one rank). With one rank it returns and the caller exits. */
void mg_comm_abort(mg_comm *world, int code);
/* nccl: the CUDA stream (a cudaStream_t) every group of the world enqueues its work on from
 * now on, so that it follows the kernels queued there before (the trainer's compute
 * stream, kernels.h mgk_stream_handle); NULL: each group's own stream. The caller keeps the
 * stream alive while the world uses it. Other backends ignore it. */
void mg_comm_set_stream(mg_comm *world, void *stream);
/* Overlap (--overlap-grad-reduce, grad_buckets.h). nccl: mg_comm_async_follow(c) records an
 * event on the world's stream (mg_comm_set_stream's) and makes c's own (communication)
 * stream wait for it; c's collectives from then until mg_comm_async_join(c) are enqueued on
 * c's own stream and return as soon as they are enqueued (device buffers only: a host
 * buffer is MG_ERR_ARG), so they run concurrently with what the world's stream does next.
 * mg_comm_async_join(c) records an event on c's stream and makes the world's stream wait
 * for it: work queued there afterwards sees the collectives' results. Neither waits on the
 * host; the buffers must stay untouched until the join. Other backends (their calls are
 * complete on return) and groups of one rank: both do nothing. */
mg_status mg_comm_async_follow(mg_comm *c);
mg_status mg_comm_async_join(mg_comm *c);
/* Frees a world and its groups; accepts NULL. Must not be called on a sub-group. */
void mg_comm_free(mg_comm *c);

int64_t mg_comm_size(const mg_comm *c);
int64_t mg_comm_rank(const mg_comm *c);
const char *mg_comm_name(const mg_comm *c);
const char *mg_comm_backend_name(const mg_comm *c);
/* The world rank of rank r of the group. */
int64_t mg_comm_world_rank(const mg_comm *c, int64_t r);

/* The group `kind` of the world that c belongs to (c itself for its own kind). */
mg_comm *mg_comm_group(mg_comm *c, mg_comm_kind kind);
/* By name; MG_ERR_ARG naming the unknown group. */
mg_status mg_comm_group_by_name(mg_comm *c, const char *name, mg_comm **group);

/* In-place sums over the group's ranks. */
mg_status mg_comm_allreduce_sum_f32(mg_comm *c, float *buf, int64_t n);
mg_status mg_comm_allreduce_sum_f64(mg_comm *c, double *buf, int64_t n);
mg_status mg_comm_allgather_f32(mg_comm *c, float *recv, const float *send, int64_t n);
/* 16-bit activations (bit patterns, kernels.h mgk_h16), as Megatron's --bf16 / --fp16 move
 * them: the sum accumulates in fp32 and is rounded once to nearest-even (nccl: NCCL's bf16 /
 * fp16 sum, which on a GPU rounds after each step of its ring or tree; an fp16 sum beyond
 * 65504 is inf); the all-gather moves the bits. The mpi backend (CPU buffers, fp32 training)
 * has no 16-bit sum: MG_ERR_UNSUPPORTED. */
mg_status mg_comm_allreduce_sum_bf16(mg_comm *c, uint16_t *buf, int64_t n);
mg_status mg_comm_allreduce_sum_f16(mg_comm *c, uint16_t *buf, int64_t n);
mg_status mg_comm_allgather_bf16(mg_comm *c, uint16_t *recv, const uint16_t *send, int64_t n);
mg_status mg_comm_reduce_scatter_sum_f32(mg_comm *c, float *recv, const float *send,
                                         int64_t n);
/* The 16-bit reduce-scatters (--sequence-parallel with --bf16 / --fp16): the sums of the
 * 16-bit all-reduces above, block `rank` of them; MG_ERR_UNSUPPORTED on the mpi backend. */
mg_status mg_comm_reduce_scatter_sum_bf16(mg_comm *c, uint16_t *recv, const uint16_t *send,
                                          int64_t n);
mg_status mg_comm_reduce_scatter_sum_f16(mg_comm *c, uint16_t *recv, const uint16_t *send,
                                         int64_t n);
mg_status mg_comm_broadcast(mg_comm *c, void *buf, int64_t bytes, int64_t root);
mg_status mg_comm_barrier(mg_comm *c);

mg_status mg_comm_send(mg_comm *c, const void *buf, int64_t bytes, int64_t peer);
mg_status mg_comm_recv(mg_comm *c, void *buf, int64_t bytes, int64_t peer);

typedef enum {
    MG_COMM_OP_ALLREDUCE = 0,
    MG_COMM_OP_ALLGATHER,
    MG_COMM_OP_REDUCE_SCATTER,
    MG_COMM_OP_BROADCAST,
    MG_COMM_OP_BARRIER,
    MG_COMM_OP_SEND,
    MG_COMM_OP_RECV,
    MG_COMM_NOPS
} mg_comm_op;

const char *mg_comm_op_name(mg_comm_op op); /* "all-reduce", "all-gather", ... */
const char *mg_comm_kind_name(mg_comm_kind kind); /* "world", "tensor", ... */
/* Calls and payload bytes of `op` on group c since the world was made or last reset. */
void mg_comm_counts(const mg_comm *c, mg_comm_op op, int64_t *calls, int64_t *bytes);
/* Zeroes the counters of every group of c's world. */
void mg_comm_reset_counts(mg_comm *c);

#endif

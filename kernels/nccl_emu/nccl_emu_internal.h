/* nccl_emu_internal.h — what the files of the NCCL host shim share (not for callers, who
 * include NVIDIA's nccl.h).
 *
 *   nccl_comm.cc   unique ids, communicators (init, split, destroy, abort), errors
 *   nccl_coll.cc   collectives and send/recv on host memory, groups
 *   nccl_reduce.cc the element types and reduction operators
 *   nccl_net.cc    the transport the collectives post to: MPI or sockets
 *   nccl_sock.cc   the socket transport's messages (posted sends and receives, progress)
 *   nccl_boot.cc   the socket transport's setup: the root's listener named in the unique id,
 *                  the mesh of connections, communicator splits
 *
 * A communicator is an MPI communicator whose rank i is NCCL rank i (when the caller has
 * initialised MPI: an mpirun launch), or a list of the socket world's ranks (any other
 * launch, e.g. torchrun's). Every call completes before it returns (the emulated device's
 * streams are synchronous), so a communicator never has work in flight between calls, except
 * the send/recv of an open group.
 */
#ifndef MGK_NCCL_EMU_INTERNAL_H
#define MGK_NCCL_EMU_INTERNAL_H

#include <mpi.h>
#include <stddef.h>

#include <vector>

#include "cuda_emu/emu_internal.h"
#include <nccl.h>

namespace mgk_nccl {
struct sock_group;
struct sock_op;
}

struct ncclComm {
    MPI_Comm mpi;                 /* MPI_COMM_NULL on the socket transport */
    mgk_nccl::sock_group *sock;   /* the socket transport's members, else NULL */
    int rank, nranks;
    int device;
    bool blocking;       /* ncclConfig_t.blocking (default 1) */
    ncclResult_t state;  /* ncclInProgress after a non-blocking init or split, until polled */
    std::vector<unsigned char> scratch;
};

namespace mgk_nccl {

/* Prints "mgk-emu: CALL: message (NCCL's name of r)" on stderr, keeps the message for
 * ncclGetLastError and returns r. */
ncclResult_t fail(ncclResult_t r, const char *call, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* ncclInvalidArgument unless comm is a live communicator (its init or split complete). */
ncclResult_t check_comm(const char *call, ncclComm_t comm);
/* The MPI error r of CALL as an NCCL error (ncclSystemError). */
ncclResult_t mpi_fail(int r, const char *call);

/* One posted send or receive of either transport. */
struct request {
    MPI_Request mpi;
    sock_op *op;
};

/* Posts a send (send) or a receive of bytes of buf with communicator rank peer, under tag,
 * and appends it to reqs; net_wait completes (and clears) reqs. */
ncclResult_t net_post(const char *call, ncclComm_t c, bool send, const void *buf, size_t bytes,
                      int peer, int tag, std::vector<request> *reqs);
ncclResult_t net_wait(const char *call, std::vector<request> *reqs);

/* The socket transport (nccl_sock.cc): one world of connected processes per process. */
struct sock_group {
    unsigned long long ctx;   /* tells this communicator's messages from the others' */
    std::vector<int> world;   /* communicator rank -> socket world rank */
    unsigned long long splits; /* ncclCommSplit calls on this communicator so far */
};
/* Adopts fds (one connected socket per world rank, -1 for me) as the socket world. */
void sock_adopt(int rank, const std::vector<int> &fds);
/* My rank in the socket world; -1 when there is none. */
int sock_world_rank(void);
sock_op *sock_post(bool send, int world_peer, unsigned long long ctx, int tag, void *buf,
                   size_t bytes);
ncclResult_t sock_wait(const char *call, sock_op *const *ops, size_t n);
/* Closes the world's connections (after the last socket communicator is gone). */
void sock_close_world(void);

/* nccl_boot.cc: the unique id's listener (ncclGetUniqueId), the socket world of an init,
 * and a split of a socket communicator (collective over parent). */
ncclResult_t boot_make_id(ncclUniqueId *id);
ncclResult_t boot_world(const char *call, const ncclUniqueId *id, int nranks, int rank,
                        sock_group **out);
/* Closes the listener of id if this process made it (an init that did not need it). */
void boot_forget_id(const ncclUniqueId *id);
ncclResult_t boot_split(const char *call, ncclComm_t parent, int color, int key,
                        sock_group **out);

/* Bytes of one element; 0 for a type the shim does not serve. */
size_t type_size(ncclDataType_t t);
const char *type_name(ncclDataType_t t);
/* dst[i] = op over the ranks, in rank order, of src[r][i] (n elements each): floating types
 * accumulate in fp32 (fp16, bf16, fp32) or fp64 and are rounded once at the end; integers
 * wrap as on the GPU. ncclAvg multiplies each input by 1 / nranks before summing (floating
 * types) or divides the sum (integers), as NCCL's ncclAvg does. dst may be one of the src. */
void reduce(void *dst, const void *const *src, int nranks, size_t n, ncclDataType_t t,
            ncclRedOp_t op);
/* ncclInvalidArgument unless t and op are served (the fp8 types and ncclRedOpCreate*'s
 * operators are not). */
ncclResult_t check_type_op(const char *call, ncclDataType_t t, ncclRedOp_t op, bool reduces);

} /* namespace mgk_nccl */

#endif

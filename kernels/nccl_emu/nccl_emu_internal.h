/* nccl_emu_internal.h — what the files of the NCCL host shim share (not for callers, who
 * include NVIDIA's nccl.h).
 *
 *   nccl_comm.cc   unique ids, communicators over MPI (init, split, destroy, abort), errors
 *   nccl_coll.cc   collectives and send/recv on host memory, groups
 *   nccl_reduce.cc the element types and reduction operators
 *
 * A communicator is an MPI communicator whose rank i is NCCL rank i. Every call completes
 * before it returns (the emulated device's streams are synchronous), so a communicator never
 * has work in flight between calls, except the send/recv of an open group.
 */
#ifndef MGK_NCCL_EMU_INTERNAL_H
#define MGK_NCCL_EMU_INTERNAL_H

#include <mpi.h>
#include <stddef.h>

#include <vector>

#include "cuda_emu/emu_internal.h"
#include <nccl.h>

struct ncclComm {
    MPI_Comm mpi;
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

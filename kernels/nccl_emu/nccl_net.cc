/* nccl_net.cc — the transport under the collectives (nccl_emu_internal.h): a communicator's
 * sends and receives go to MPI (MPI_Isend / MPI_Irecv on its MPI communicator) or to the
 * socket world (nccl_sock.cc, with its context and the member's socket rank).
 * Messages are limited to 2^31 - 1 bytes (MPI's int counts; the caller checks).
 */
#include "nccl_emu/nccl_emu_internal.h"

namespace mgk_nccl {

ncclResult_t net_post(const char *call, ncclComm_t c, bool send, const void *buf, size_t bytes,
                      int peer, int tag, std::vector<request> *reqs)
{
    request q = {MPI_REQUEST_NULL, nullptr};
    if (c->sock) {
        q.op = sock_post(send, c->sock->world[(size_t)peer], c->sock->ctx, tag,
                         const_cast<void *>(buf), bytes);
    } else {
        int rc = send ? MPI_Isend(buf, (int)bytes, MPI_BYTE, peer, tag, c->mpi, &q.mpi)
                      : MPI_Irecv(const_cast<void *>(buf), (int)bytes, MPI_BYTE, peer, tag,
                                  c->mpi, &q.mpi);
        if (rc != MPI_SUCCESS) return mpi_fail(rc, call);
    }
    reqs->push_back(q);
    return ncclSuccess;
}

ncclResult_t net_wait(const char *call, std::vector<request> *reqs)
{
    std::vector<MPI_Request> mpi;
    std::vector<sock_op *> ops;
    for (const request &q : *reqs) {
        if (q.op) ops.push_back(q.op);
        else mpi.push_back(q.mpi);
    }
    reqs->clear();
    ncclResult_t r = ops.empty() ? ncclSuccess : sock_wait(call, ops.data(), ops.size());
    int rc = mpi.empty() ? MPI_SUCCESS
                         : MPI_Waitall((int)mpi.size(), mpi.data(), MPI_STATUSES_IGNORE);
    if (r != ncclSuccess) return r;
    return rc == MPI_SUCCESS ? ncclSuccess : mpi_fail(rc, call);
}

} /* namespace mgk_nccl */

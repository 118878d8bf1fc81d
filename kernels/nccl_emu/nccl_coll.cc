/* nccl_coll.cc — NCCL's collectives, send/recv and groups on the host, over the transport
 * of nccl_net.cc (nccl_emu_internal.h).
 *
 * Contract:
 *   - The arguments are checked as NCCL checks them: a live communicator, a served type and
 *     operator, a known stream, buffers inside cudaMalloc blocks of the emulated device
 *     (NCCL refuses host pointers it cannot reach; here a host buffer is an error too), a
 *     root or peer in range. Messages are limited to 2^31 - 1 bytes (MPI's int counts).
 *   - Every collective completes before it returns (the streams are synchronous), except in
 *     the late streams mode (MGK_EMU_STREAMS=late) on a created stream outside a group: an
 *     all-reduce or reduce-scatter is then queued on the stream like a copy and runs when
 *     the stream's work must be seen (cudaStreamQuery / Synchronize, a wait on an event
 *     recorded after it, a launch on the stream), so work on another stream that reads its
 *     result without waiting for its event reads the old contents; a failure it meets then
 *     is the communicator's asynchronous error (ncclCommGetAsyncError). In place
 *     where NCCL allows it (recvbuff == sendbuff; reduce-scatter recvbuff == sendbuff + rank
 *     x recvcount; all-gather sendbuff == recvbuff + rank x sendcount).
 *   - All-reduce: the buffer is cut into nranks blocks (block b = [b n / nranks, (b+1) n /
 *     nranks)); rank b gets block b of every rank, reduces in rank order (nccl_reduce.cc)
 *     and sends the result to every rank: every rank holds the same bits, and for fp32 and
 *     fp64 sums the same bits as comm_mpi.c. Reduce-scatter: the first phase with blocks of
 *     recvcount; all-gather: the second; broadcast: the root sends to every rank.
 *   - ncclSend / ncclRecv match by order between a pair of ranks, as NCCL's. Outside a group
 *     each completes before returning (a blocking pair must be ordered by the caller, as on
 *     a GPU, or it deadlocks); inside ncclGroupStart / ncclGroupEnd they are posted at once
 *     and ncclGroupEnd waits for all of them, so a group's sends and receives may pair in
 *     any order. Collectives inside a group run when called.
 */
#include "nccl_emu/nccl_emu_internal.h"

#include <limits.h>
#include <string.h>

#include <utility>

using namespace mgk_nccl;

enum { TAG_COLL = 21, TAG_P2P = 22 };

static int g_group_depth;
static std::vector<request> g_group_reqs;

/* The common checks of every data call. */
static ncclResult_t check_call(const char *call, ncclComm_t comm, ncclDataType_t t,
                               ncclRedOp_t op, bool reduces, cudaStream_t stream)
{
    ncclResult_t r = check_comm(call, comm);
    if (r == ncclSuccess) r = check_type_op(call, t, op, reduces);
    if (r == ncclSuccess && !mgk_emu::stream_valid(stream))
        r = fail(ncclInvalidArgument, call, "unknown stream");
    /* the call runs now, so the stream's earlier work (copies queued in the late streams
     * mode) runs first, as it would on a GPU */
    if (r == ncclSuccess) mgk_emu::stream_catch_up(stream);
    return r;
}

static ncclResult_t check_buf(const char *call, const char *name, const void *p, size_t bytes)
{
    if (bytes == 0) return ncclSuccess;
    if (bytes > (size_t)INT_MAX)
        return fail(ncclInvalidArgument, call, "%zu bytes in one message: the emulated NCCL "
                    "sends at most 2^31 - 1", bytes);
    if (!p || !mgk_emu::device_range(p, bytes))
        return fail(ncclInvalidArgument, call, "%s %p (%zu bytes) is not device memory (not "
                    "inside one cudaMalloc block)", name, p, bytes);
    return ncclSuccess;
}

/* A collective's transfer: now, or queued on a late stream outside a group (see above). */
static ncclResult_t run_on(cudaStream_t stream, ncclComm_t comm,
                           std::function<ncclResult_t()> f)
{
    if (g_group_depth == 0 && mgk_emu::stream_queue(stream, [comm, f]() {
            ncclResult_t q = f();
            if (q != ncclSuccess) comm->state = q;
        }))
        return ncclSuccess;
    return f();
}

static size_t block_off(size_t n, int p, int b) { return (size_t)b * n / (size_t)p; }

/* Phase 1: rank b receives block b (off(b), len(b) elements of `send` on every rank) and
 * reduces the contributions in rank order into dst. uniform: blocks of n / nranks. */
static ncclResult_t reduce_blocks(const char *call, ncclComm_t c, const void *send, void *dst,
                                  size_t n, ncclDataType_t t, ncclRedOp_t op)
{
    int p = c->nranks, me = c->rank;
    size_t esz = type_size(t), mylen = block_off(n, p, me + 1) - block_off(n, p, me);
    c->scratch.resize((size_t)p * mylen * esz + 1);
    std::vector<const void *> src((size_t)p);
    std::vector<request> reqs;
    ncclResult_t r = ncclSuccess;
    for (int q = 0; q < p && r == ncclSuccess; q++) {
        unsigned char *slot = c->scratch.data() + (size_t)q * mylen * esz;
        src[(size_t)q] = q == me ? (const void *)((const char *)send + block_off(n, p, me) * esz)
                                 : (const void *)slot;
        if (q != me) r = net_post(call, c, false, slot, mylen * esz, q, TAG_COLL, &reqs);
    }
    for (int q = 0; q < p && r == ncclSuccess; q++) {
        size_t o = block_off(n, p, q), len = block_off(n, p, q + 1) - o;
        if (q != me)
            r = net_post(call, c, true, (const char *)send + o * esz, len * esz, q, TAG_COLL,
                         &reqs);
    }
    ncclResult_t w = net_wait(call, &reqs);
    if (r != ncclSuccess) return r;
    if (w != ncclSuccess) return w;
    reduce(dst, src.data(), p, mylen, t, op);
    return ncclSuccess;
}

/* Phase 2: block q of buf (off(q), len(q) elements) from rank q to every rank. */
static ncclResult_t gather_blocks(const char *call, ncclComm_t c, void *buf, size_t n, size_t esz)
{
    int p = c->nranks, me = c->rank;
    std::vector<request> reqs;
    ncclResult_t r = ncclSuccess;
    size_t mo = block_off(n, p, me), mlen = block_off(n, p, me + 1) - mo;
    for (int q = 0; q < p && r == ncclSuccess; q++) {
        if (q == me) continue;
        size_t o = block_off(n, p, q), len = block_off(n, p, q + 1) - o;
        r = net_post(call, c, false, (char *)buf + o * esz, len * esz, q, TAG_COLL, &reqs);
        if (r == ncclSuccess)
            r = net_post(call, c, true, (char *)buf + mo * esz, mlen * esz, q, TAG_COLL, &reqs);
    }
    ncclResult_t w = net_wait(call, &reqs);
    return r != ncclSuccess ? r : w;
}

ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
                           ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm, cudaStream_t stream)
{
    const char *call = "ncclAllReduce";
    ncclResult_t r = check_call(call, comm, t, op, true, stream);
    size_t bytes = count * type_size(t);
    if (r == ncclSuccess) r = check_buf(call, "sendbuff", sendbuff, bytes);
    if (r == ncclSuccess) r = check_buf(call, "recvbuff", recvbuff, bytes);
    if (r != ncclSuccess || count == 0) return r;
    return run_on(stream, comm, [=]() {
        size_t o = block_off(count, comm->nranks, comm->rank) * type_size(t);
        ncclResult_t q = reduce_blocks(call, comm, sendbuff, (char *)recvbuff + o, count, t, op);
        return q != ncclSuccess ? q : gather_blocks(call, comm, recvbuff, count, type_size(t));
    });
}

ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
                               ncclDataType_t t, ncclRedOp_t op, ncclComm_t comm,
                               cudaStream_t stream)
{
    const char *call = "ncclReduceScatter";
    ncclResult_t r = check_call(call, comm, t, op, true, stream);
    size_t bytes = recvcount * type_size(t);
    if (r == ncclSuccess) r = check_buf(call, "sendbuff", sendbuff, bytes * (size_t)comm->nranks);
    if (r == ncclSuccess) r = check_buf(call, "recvbuff", recvbuff, bytes);
    if (r != ncclSuccess || recvcount == 0) return r;
    return run_on(stream, comm, [=]() {
        return reduce_blocks(call, comm, sendbuff, recvbuff, recvcount * (size_t)comm->nranks,
                             t, op);
    });
}

ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
                           ncclDataType_t t, ncclComm_t comm, cudaStream_t stream)
{
    const char *call = "ncclAllGather";
    ncclResult_t r = check_call(call, comm, t, ncclSum, false, stream);
    size_t bytes = sendcount * type_size(t);
    if (r == ncclSuccess) r = check_buf(call, "sendbuff", sendbuff, bytes);
    if (r == ncclSuccess) r = check_buf(call, "recvbuff", recvbuff, bytes * (size_t)comm->nranks);
    if (r != ncclSuccess || sendcount == 0) return r;
    char *mine = (char *)recvbuff + (size_t)comm->rank * bytes;
    if (mine != sendbuff) memmove(mine, sendbuff, bytes);
    return gather_blocks(call, comm, recvbuff, bytes * (size_t)comm->nranks, 1);
}

ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count, ncclDataType_t t,
                           int root, ncclComm_t comm, cudaStream_t stream)
{
    const char *call = "ncclBroadcast";
    ncclResult_t r = check_call(call, comm, t, ncclSum, false, stream);
    size_t bytes = count * type_size(t);
    if (r == ncclSuccess && (root < 0 || root >= comm->nranks))
        r = fail(ncclInvalidArgument, call, "root %d of %d ranks", root, comm->nranks);
    if (r == ncclSuccess && comm->rank == root) r = check_buf(call, "sendbuff", sendbuff, bytes);
    if (r == ncclSuccess) r = check_buf(call, "recvbuff", recvbuff, bytes);
    if (r != ncclSuccess || count == 0) return r;
    std::vector<request> reqs;
    if (comm->rank != root) {
        r = net_post(call, comm, false, recvbuff, bytes, root, TAG_COLL, &reqs);
    } else {
        if (recvbuff != sendbuff) memmove(recvbuff, sendbuff, bytes);
        for (int q = 0; q < comm->nranks && r == ncclSuccess; q++)
            if (q != root) r = net_post(call, comm, true, recvbuff, bytes, q, TAG_COLL, &reqs);
    }
    ncclResult_t w = net_wait(call, &reqs);
    return r != ncclSuccess ? r : w;
}

static ncclResult_t p2p(const char *call, bool send, const void *buf, size_t count, ncclDataType_t t,
                        int peer, ncclComm_t comm, cudaStream_t stream)
{
    ncclResult_t r = check_call(call, comm, t, ncclSum, false, stream);
    size_t bytes = count * type_size(t);
    if (r == ncclSuccess && (peer < 0 || peer >= comm->nranks))
        r = fail(ncclInvalidArgument, call, "peer %d of %d ranks", peer, comm->nranks);
    if (r == ncclSuccess) r = check_buf(call, send ? "sendbuff" : "recvbuff", buf, bytes);
    if (r != ncclSuccess) return r;
    if (g_group_depth > 0)
        return net_post(call, comm, send, buf, bytes, peer, TAG_P2P, &g_group_reqs);
    std::vector<request> reqs;
    r = net_post(call, comm, send, buf, bytes, peer, TAG_P2P, &reqs);
    ncclResult_t w = net_wait(call, &reqs);
    return r != ncclSuccess ? r : w;
}

ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t t, int peer,
                      ncclComm_t comm, cudaStream_t stream)
{
    return p2p("ncclSend", true, sendbuff, count, t, peer, comm, stream);
}

ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t t, int peer, ncclComm_t comm,
                      cudaStream_t stream)
{
    return p2p("ncclRecv", false, recvbuff, count, t, peer, comm, stream);
}

ncclResult_t ncclGroupStart(void)
{
    g_group_depth++;
    return ncclSuccess;
}

ncclResult_t ncclGroupEnd(void)
{
    if (g_group_depth == 0)
        return fail(ncclInvalidUsage, "ncclGroupEnd", "no ncclGroupStart to end");
    if (--g_group_depth > 0) return ncclSuccess;
    return net_wait("ncclGroupEnd", &g_group_reqs);
}

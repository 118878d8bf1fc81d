/* nccl_comm.cc — NCCL's communicator calls on the host (nccl_emu_internal.h), for the
 * emulation build: NVIDIA's nccl.h declares them, this file defines them.
 *
 * Contract:
 *   - ncclGetUniqueId makes a random id (a magic, the pid, the clock, a counter) that also
 *     names a socket this process listens on (nccl_boot.cc): hand it to the other ranks as
 *     with NCCL (comm_nccl.c does, over MPI or TCP).
 *   - ncclCommInitRank(Config) is collective over the ranks that pass the same id. When the
 *     caller has initialised MPI (an mpirun launch), the communicator is MPI's: nranks must
 *     equal MPI's world size (NCCL ranks may be any permutation of MPI's), every rank must
 *     pass the same id (else ncclInvalidArgument, so a bootstrap that fails to deliver it is
 *     caught) and a distinct rank in [0, nranks). Otherwise (torchrun's launch, any other)
 *     the ranks meet at the id's socket and connect to each other (nccl_boot.cc): processes
 *     of one host, one such world per process.
 *   - ncclCommSplit: MPI_Comm_split of the parent, or nccl_boot.cc's split over sockets
 *     (NCCL_SPLIT_NOCOLOR: no communicator); a NULL config inherits the parent's blocking mode.
 *   - Non-blocking communicators (config.blocking = 0): init and split return ncclInProgress
 *     and the first ncclCommGetAsyncError reports ncclInProgress once, then ncclSuccess, so a
 *     caller's polling loop runs; using the communicator before that is ncclInvalidUsage.
 *   - Every error is printed on stderr ("mgk-emu: CALL: why") and kept for ncclGetLastError.
 *   - A peer that never calls hangs the call (no timeouts inside the transports); a peer
 *     that ends fails the socket transport's calls (ncclRemoteError), and mpirun ends an MPI
 *     job when a process dies.
 */
#include "nccl_emu/nccl_emu_internal.h"

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static const char ID_MAGIC[16] = "mgk-emu-ncclid1";

static int g_live_sock;     /* socket communicators not destroyed */
static char g_last_error[512];

namespace mgk_nccl {

ncclResult_t fail(ncclResult_t r, const char *call, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    snprintf(g_last_error, sizeof g_last_error, "%s: %s", call, msg);
    fprintf(stderr, "mgk-emu: %s (%s)\n", g_last_error, ncclGetErrorString(r));
    return r;
}

ncclResult_t mpi_fail(int r, const char *call)
{
    char msg[MPI_MAX_ERROR_STRING] = "";
    int len = 0;
    MPI_Error_string(r, msg, &len);
    return fail(ncclSystemError, call, "MPI failed: %s", msg);
}

ncclResult_t check_comm(const char *call, ncclComm_t comm)
{
    if (!comm) return fail(ncclInvalidArgument, call, "NULL communicator");
    if (comm->state == ncclInProgress)
        return fail(ncclInvalidUsage, call, "the communicator is still being created: poll "
                    "ncclCommGetAsyncError until it reports ncclSuccess first");
    return ncclSuccess;
}

} /* namespace mgk_nccl */

using namespace mgk_nccl;

const char *ncclGetErrorString(ncclResult_t r)
{
    switch (r) {
    case ncclSuccess: return "no error";
    case ncclUnhandledCudaError: return "unhandled cuda error";
    case ncclSystemError: return "unhandled system error";
    case ncclInternalError: return "internal error";
    case ncclInvalidArgument: return "invalid argument";
    case ncclInvalidUsage: return "invalid usage";
    case ncclRemoteError: return "remote process exited or there was a network error";
    case ncclInProgress: return "NCCL operation in progress";
    default: return "unknown result code";
    }
}

const char *ncclGetLastError(ncclComm_t comm)
{
    (void)comm;
    return g_last_error;
}

ncclResult_t ncclGetVersion(int *version)
{
    if (!version) return fail(ncclInvalidArgument, "ncclGetVersion", "NULL version");
    *version = NCCL_VERSION_CODE;
    return ncclSuccess;
}

ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
    static uint64_t counter;
    if (!id) return fail(ncclInvalidArgument, "ncclGetUniqueId", "NULL id");
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    uint64_t parts[3] = {(uint64_t)getpid(), (uint64_t)ts.tv_sec * 1000000000u +
                         (uint64_t)ts.tv_nsec, ++counter};
    memset(id, 0, sizeof *id);
    memcpy(id->internal, ID_MAGIC, sizeof ID_MAGIC);
    memcpy(id->internal + sizeof ID_MAGIC, parts, sizeof parts);
    return boot_make_id(id);
}

/* The caller initialised MPI (and did not finalise it): the communicators are MPI's. */
static bool mpi_launch(void)
{
    int inited = 0, finalized = 0;
    MPI_Initialized(&inited);
    MPI_Finalized(&finalized);
    return inited && !finalized;
}

/* Every rank passed the same id and a distinct rank in [0, nranks). */
static ncclResult_t check_clique(const char *call, const ncclUniqueId *id, int nranks, int rank)
{
    int world = 0, me = 0;
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    MPI_Comm_rank(MPI_COMM_WORLD, &me);
    if (nranks != world)
        return fail(ncclInvalidUsage, call, "nranks %d, but %d MPI processes: the emulated "
                    "NCCL's communicators span MPI_COMM_WORLD (launch one process per rank "
                    "under mpirun)", nranks, world);
    struct entry {
        ncclUniqueId id;
        int rank;
    } mine, *all = new entry[(size_t)world];
    memset(&mine, 0, sizeof mine);
    mine.id = *id;
    mine.rank = rank;
    int rc = MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE,
                           MPI_COMM_WORLD);
    ncclResult_t r = rc == MPI_SUCCESS ? ncclSuccess : mpi_fail(rc, call);
    std::vector<int> seen((size_t)world, -1);
    for (int p = 0; r == ncclSuccess && p < world; p++) {
        if (memcmp(&all[p].id, id, sizeof *id) != 0)
            r = fail(ncclInvalidArgument, call, "MPI process %d passed another unique id than "
                     "MPI process %d (rank %d): the id did not reach every rank", p, me, rank);
        else if (all[p].rank < 0 || all[p].rank >= nranks)
            r = fail(ncclInvalidArgument, call, "MPI process %d passed rank %d of %d", p,
                     all[p].rank, nranks);
        else if (seen[(size_t)all[p].rank] >= 0)
            r = fail(ncclInvalidArgument, call, "MPI processes %d and %d both passed rank %d",
                     seen[(size_t)all[p].rank], p, all[p].rank);
        else
            seen[(size_t)all[p].rank] = p;
    }
    delete[] all;
    return r;
}

static ncclResult_t check_config(const char *call, const ncclConfig_t *cfg, bool *blocking)
{
    if (!cfg) return ncclSuccess;
    if (cfg->magic != 0xcafebeef || cfg->size < offsetof(ncclConfig_t, cgaClusterSize))
        return fail(ncclInvalidArgument, call, "config not set from NCCL_CONFIG_INITIALIZER");
    if (cfg->blocking != NCCL_CONFIG_UNDEF_INT) *blocking = cfg->blocking != 0;
    return ncclSuccess;
}

/* A communicator on MPI's mpi or on the socket group sock (one of them). */
static ncclResult_t made(ncclComm_t *out, MPI_Comm mpi, sock_group *sock, bool blocking)
{
    ncclComm *c = new ncclComm();
    c->mpi = mpi;
    c->sock = sock;
    if (sock) {
        c->nranks = (int)sock->world.size();
        for (int i = 0; i < c->nranks; i++)
            if (sock->world[(size_t)i] == sock_world_rank()) c->rank = i;
        g_live_sock++;
    } else {
        MPI_Comm_rank(mpi, &c->rank);
        MPI_Comm_size(mpi, &c->nranks);
        MPI_Comm_set_errhandler(mpi, MPI_ERRORS_RETURN);
    }
    cudaGetDevice(&c->device);
    c->blocking = blocking;
    c->state = blocking ? ncclSuccess : ncclInProgress;
    *out = c;
    return c->state;
}

static ncclResult_t init_mpi(const char *call, ncclComm_t *comm, int nranks,
                             const ncclUniqueId *id, int rank, bool blocking)
{
    boot_forget_id(id);
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    ncclResult_t r = check_clique(call, id, nranks, rank);
    if (r != ncclSuccess) return r;
    MPI_Comm mpi;
    int rc = MPI_Comm_split(MPI_COMM_WORLD, 0, rank, &mpi);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, call);
    return made(comm, mpi, nullptr, blocking);
}

ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
                                    ncclConfig_t *config)
{
    const char *call = "ncclCommInitRank";
    if (!comm) return fail(ncclInvalidArgument, call, "NULL communicator pointer");
    *comm = NULL;
    bool blocking = true;
    ncclResult_t r = check_config(call, config, &blocking);
    if (r != ncclSuccess) return r;
    if (memcmp(id.internal, ID_MAGIC, sizeof ID_MAGIC) != 0)
        return fail(ncclInvalidArgument, call, "not an id from ncclGetUniqueId");
    if (mpi_launch()) return init_mpi(call, comm, nranks, &id, rank, blocking);
    sock_group *g = nullptr;
    if ((r = boot_world(call, &id, nranks, rank, &g)) != ncclSuccess) return r;
    return made(comm, MPI_COMM_NULL, g, blocking);
}

ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
    return ncclCommInitRankConfig(comm, nranks, id, rank, NULL);
}

ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
                           ncclConfig_t *config)
{
    const char *call = "ncclCommSplit";
    ncclResult_t r = check_comm(call, comm);
    if (r != ncclSuccess) return r;
    if (!newcomm) return fail(ncclInvalidArgument, call, "NULL communicator pointer");
    *newcomm = NULL;
    if (color < 0 && color != NCCL_SPLIT_NOCOLOR)
        return fail(ncclInvalidArgument, call, "color %d (>= 0 or NCCL_SPLIT_NOCOLOR)", color);
    bool blocking = comm->blocking;
    if ((r = check_config(call, config, &blocking)) != ncclSuccess) return r;
    if (comm->sock) {
        sock_group *g = nullptr;
        if ((r = boot_split(call, comm, color, key, &g)) != ncclSuccess || !g) return r;
        return made(newcomm, MPI_COMM_NULL, g, blocking);
    }
    MPI_Comm mpi;
    int rc = MPI_Comm_split(comm->mpi, color == NCCL_SPLIT_NOCOLOR ? MPI_UNDEFINED : color, key,
                            &mpi);
    if (rc != MPI_SUCCESS) return mpi_fail(rc, call);
    if (mpi == MPI_COMM_NULL) return ncclSuccess;
    return made(newcomm, mpi, nullptr, blocking);
}

ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *async)
{
    if (!comm || !async) return fail(ncclInvalidArgument, "ncclCommGetAsyncError", "NULL argument");
    *async = comm->state;
    if (comm->state == ncclInProgress) comm->state = ncclSuccess; /* done at the next poll */
    return ncclSuccess;
}

ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
    ncclResult_t r = check_comm("ncclCommCount", comm);
    if (r == ncclSuccess && count) *count = comm->nranks;
    return r;
}

ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
    ncclResult_t r = check_comm("ncclCommUserRank", comm);
    if (r == ncclSuccess && rank) *rank = comm->rank;
    return r;
}

ncclResult_t ncclCommCuDevice(const ncclComm_t comm, int *device)
{
    ncclResult_t r = check_comm("ncclCommCuDevice", comm);
    if (r == ncclSuccess && device) *device = comm->device;
    return r;
}

/* Frees comm and its MPI communicator (free_mpi, unless MPI is finalised) or socket group;
 * the socket world's connections close with its last communicator. */
static ncclResult_t release(ncclComm_t comm, bool free_mpi)
{
    if (!comm) return ncclSuccess;
    if (comm->sock) {
        delete comm->sock;
        if (--g_live_sock == 0) sock_close_world();
    } else if (free_mpi && mpi_launch()) {
        MPI_Comm_free(&comm->mpi);
    }
    delete comm;
    return ncclSuccess;
}

ncclResult_t ncclCommDestroy(ncclComm_t comm) { return release(comm, true); }

/* Another rank may be gone: nothing collective, MPI's communicator is left to MPI_Abort. */
ncclResult_t ncclCommAbort(ncclComm_t comm) { return release(comm, false); }

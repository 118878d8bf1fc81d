/* nccl_boot.cc — the socket transport's setup (nccl_emu_internal.h), NCCL's bootstrap on
 * one host: the unique id names a listening socket, the ranks meet there and connect to
 * each other.
 *
 * Contract:
 *   - boot_make_id: the process that makes an id listens on 127.0.0.1 (a port the kernel
 *     picks) and writes that port into the id: it becomes the root of the init with that id
 *     and must take part in it. The transport joins processes of one host (the emulated
 *     device is one host's).
 *   - boot_world: every rank listens on a port of its own and tells the root (rank, nranks,
 *     port); the root checks that nranks agree and the ranks are distinct and in range,
 *     answers every rank with the verdict and the table of ports; then rank i connects to
 *     every rank below it and accepts the ranks above it. A rank that never comes hangs
 *     the others (NCCL's bootstrap waits too).
 *   - boot_split: the members of parent exchange (color, key) over the transport; the new
 *     communicator lists the members of my color ordered by (key, parent rank); its context
 *     is derived from the parent's, the split's number and the color, the same on every
 *     member.
 */
#include "nccl_emu/nccl_emu_internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>

namespace mgk_nccl {

enum { ID_PORT_OFFSET = 64, TAG_SPLIT = 23 };

static int g_root_fd = -1;        /* the listener of the id this process made */
static ncclUniqueId g_root_id;

struct hello {
    int rank, nranks, port;
};

static ncclResult_t sys_fail(const char *call, const char *what)
{
    return fail(ncclSystemError, call, "%s: %s", what, strerror(errno));
}

/* A socket listening on 127.0.0.1 at a port the kernel picks. */
static ncclResult_t listen_local(const char *call, int *fd, int *port)
{
    sockaddr_in a = {};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof a;
    *fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (*fd < 0) return sys_fail(call, "socket");
    if (bind(*fd, (sockaddr *)&a, sizeof a) != 0 || listen(*fd, 1024) != 0 ||
        getsockname(*fd, (sockaddr *)&a, &len) != 0) {
        close(*fd);
        return sys_fail(call, "listening on 127.0.0.1");
    }
    *port = ntohs(a.sin_port);
    return ncclSuccess;
}

static ncclResult_t connect_local(const char *call, int port, int *fd)
{
    sockaddr_in a = {};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    a.sin_port = htons((uint16_t)port);
    *fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (*fd < 0) return sys_fail(call, "socket");
    if (connect(*fd, (sockaddr *)&a, sizeof a) == 0) return ncclSuccess;
    close(*fd);
    return fail(ncclSystemError, call, "connecting to 127.0.0.1:%d: %s (the emulated NCCL "
                "joins processes of one host)", port, strerror(errno));
}

static bool io_all(int fd, void *buf, size_t n, bool wr)
{
    for (char *p = (char *)buf; n;) {
        ssize_t r = wr ? send(fd, p, n, MSG_NOSIGNAL) : recv(fd, p, n, 0);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) return false;
        p += r;
        n -= (size_t)r;
    }
    return true;
}

static ncclResult_t xfer(const char *call, int fd, void *buf, size_t n, bool wr)
{
    if (io_all(fd, buf, n, wr)) return ncclSuccess;
    return fail(ncclRemoteError, call, "the bootstrap connection closed (a rank ended)");
}

ncclResult_t boot_make_id(ncclUniqueId *id)
{
    int port = 0;
    if (g_root_fd >= 0) close(g_root_fd);
    ncclResult_t r = listen_local("ncclGetUniqueId", &g_root_fd, &port);
    if (r != ncclSuccess) return r;
    memcpy(id->internal + ID_PORT_OFFSET, &port, sizeof port);
    g_root_id = *id;
    return ncclSuccess;
}

void boot_forget_id(const ncclUniqueId *id)
{
    if (g_root_fd < 0 || memcmp(id, &g_root_id, sizeof *id) != 0) return;
    close(g_root_fd);
    g_root_fd = -1;
}

/* The root: every other rank's hello, checked; the verdict and the ports to everyone. */
static ncclResult_t gather_ports(const char *call, const hello &me, std::vector<int> *ports)
{
    std::vector<int> fds;
    ncclResult_t r = ncclSuccess, verdict = ncclSuccess;
    ports->assign((size_t)me.nranks, -1);
    (*ports)[(size_t)me.rank] = me.port;
    for (int i = 1; i < me.nranks && r == ncclSuccess; i++) {
        hello h;
        int fd = accept4(g_root_fd, nullptr, nullptr, SOCK_CLOEXEC);
        if (fd < 0) r = sys_fail(call, "accept");
        else fds.push_back(fd);
        if (r == ncclSuccess) r = xfer(call, fd, &h, sizeof h, false);
        if (r != ncclSuccess || verdict != ncclSuccess) continue;
        if (h.nranks != me.nranks)
            verdict = fail(ncclInvalidArgument, call, "rank %d passed nranks %d, rank %d "
                           "passed %d", h.rank, h.nranks, me.rank, me.nranks);
        else if (h.rank < 0 || h.rank >= me.nranks || (*ports)[(size_t)h.rank] >= 0)
            verdict = fail(ncclInvalidArgument, call, "rank %d passed twice or out of range "
                           "[0, %d)", h.rank, me.nranks);
        else
            (*ports)[(size_t)h.rank] = h.port;
    }
    for (int fd : fds) {
        if (r == ncclSuccess) r = xfer(call, fd, &verdict, sizeof verdict, true);
        if (r == ncclSuccess) r = xfer(call, fd, ports->data(), ports->size() * sizeof(int), true);
        close(fd);
    }
    return r != ncclSuccess ? r : verdict;
}

static ncclResult_t ask_root(const char *call, const ncclUniqueId *id, const hello &me,
                             std::vector<int> *ports)
{
    int port = 0, fd = -1;
    memcpy(&port, id->internal + ID_PORT_OFFSET, sizeof port);
    ncclResult_t r = connect_local(call, port, &fd), verdict = ncclSuccess;
    if (r != ncclSuccess) return r;
    ports->assign((size_t)me.nranks, -1);
    r = xfer(call, fd, const_cast<hello *>(&me), sizeof me, true);
    if (r == ncclSuccess) r = xfer(call, fd, &verdict, sizeof verdict, false);
    if (r == ncclSuccess) r = xfer(call, fd, ports->data(), ports->size() * sizeof(int), false);
    close(fd);
    if (r == ncclSuccess && verdict != ncclSuccess)
        r = fail(verdict, call, "the root refused the ranks' arguments (see its message)");
    return r;
}

/* Rank me connects to every rank below and accepts every rank above (listener lfd). */
static ncclResult_t mesh(const char *call, int me, int lfd, const std::vector<int> &ports,
                         std::vector<int> *fds)
{
    ncclResult_t r = ncclSuccess;
    int n = (int)ports.size(), one = 1;
    fds->assign((size_t)n, -1);
    for (int j = 0; j < me && r == ncclSuccess; j++) {
        r = connect_local(call, ports[(size_t)j], &(*fds)[(size_t)j]);
        if (r == ncclSuccess) r = xfer(call, (*fds)[(size_t)j], &me, sizeof me, true);
    }
    for (int k = me + 1; k < n && r == ncclSuccess; k++) {
        int fd = accept4(lfd, nullptr, nullptr, SOCK_CLOEXEC), who = -1;
        if (fd < 0) return sys_fail(call, "accept");
        r = xfer(call, fd, &who, sizeof who, false);
        if (r == ncclSuccess && (who <= me || who >= n || (*fds)[(size_t)who] >= 0))
            r = fail(ncclInternalError, call, "a connection from rank %d to rank %d", who, me);
        if (r == ncclSuccess) (*fds)[(size_t)who] = fd;
        else close(fd);
    }
    for (int fd : *fds)
        if (fd >= 0) setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return r;
}

static unsigned long long mix(unsigned long long x)
{
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

ncclResult_t boot_world(const char *call, const ncclUniqueId *id, int nranks, int rank,
                        sock_group **out)
{
    if (sock_world_rank() >= 0)
        return fail(ncclInvalidUsage, call, "one socket world per process: destroy the "
                    "communicators of the last ncclCommInitRank first (or split them)");
    if (rank < 0 || rank >= nranks)
        return fail(ncclInvalidArgument, call, "rank %d of %d", rank, nranks);
    hello me = {rank, nranks, 0};
    int lfd = -1;
    std::vector<int> ports, fds;
    ncclResult_t r = listen_local(call, &lfd, &me.port);
    if (r != ncclSuccess) return r;
    bool root = g_root_fd >= 0 && memcmp(id, &g_root_id, sizeof *id) == 0;
    r = root ? gather_ports(call, me, &ports) : ask_root(call, id, me, &ports);
    if (root) boot_forget_id(id);
    if (r == ncclSuccess) r = mesh(call, rank, lfd, ports, &fds);
    close(lfd);
    if (r != ncclSuccess) {
        for (int fd : fds)
            if (fd >= 0) close(fd);
        return r;
    }
    sock_adopt(rank, fds);
    sock_group *g = new sock_group();
    g->ctx = 0xcbf29ce484222325ULL;
    for (size_t i = 0; i < sizeof id->internal; i++)
        g->ctx = mix(g->ctx ^ (unsigned char)id->internal[i]);
    for (int i = 0; i < nranks; i++) g->world.push_back(i);
    *out = g;
    return ncclSuccess;
}

ncclResult_t boot_split(const char *call, ncclComm_t parent, int color, int key,
                        sock_group **out)
{
    int p = parent->nranks, me = parent->rank;
    std::vector<int> all((size_t)(2 * p));
    all[(size_t)(2 * me)] = color;
    all[(size_t)(2 * me + 1)] = key;
    std::vector<request> reqs;
    ncclResult_t r = ncclSuccess;
    for (int q = 0; q < p && r == ncclSuccess; q++) {
        if (q == me) continue;
        r = net_post(call, parent, false, &all[(size_t)(2 * q)], 2 * sizeof(int), q, TAG_SPLIT,
                     &reqs);
        if (r == ncclSuccess)
            r = net_post(call, parent, true, &all[(size_t)(2 * me)], 2 * sizeof(int), q,
                         TAG_SPLIT, &reqs);
    }
    ncclResult_t w = net_wait(call, &reqs);
    if (r != ncclSuccess || w != ncclSuccess) return r != ncclSuccess ? r : w;
    unsigned long long split = parent->sock->splits++;
    *out = nullptr;
    if (color == NCCL_SPLIT_NOCOLOR) return ncclSuccess;
    std::vector<std::pair<int, int>> members; /* (key, parent rank) */
    for (int q = 0; q < p; q++)
        if (all[(size_t)(2 * q)] == color) members.push_back({all[(size_t)(2 * q + 1)], q});
    std::sort(members.begin(), members.end());
    sock_group *g = new sock_group();
    g->ctx = mix(mix(parent->sock->ctx ^ split) ^ (unsigned long long)(unsigned)color);
    for (const auto &m : members) g->world.push_back(parent->sock->world[(size_t)m.second]);
    *out = g;
    return ncclSuccess;
}

} /* namespace mgk_nccl */

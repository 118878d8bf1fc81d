/* nccl_sock.cc — the socket transport's messages (nccl_emu_internal.h): posted sends and
 * receives between the processes of one socket world, one connected stream socket per pair.
 *
 * Contract:
 *   - A message is a header (communicator context, tag, byte count) and its bytes. Messages
 *     between a pair of ranks arrive in the order they were sent; a receive takes the first
 *     arrived message of its peer, context and tag (MPI's and NCCL's pairing by order).
 *     A message that arrives before its receive is posted waits in memory (a rank may run
 *     ahead into its next call on another communicator).
 *   - A message to oneself is copied when its send is posted.
 *   - A receive of another size than the message's is ncclInvalidUsage; a peer whose
 *     connection closes (its process ended) fails every operation still waiting for it with
 *     ncclRemoteError, naming the socket world's rank.
 *   - sock_wait makes progress on every connection until the given operations are done; it
 *     blocks in poll() (no timeouts: a peer that never calls hangs the call, as on a GPU).
 */
#include "nccl_emu/nccl_emu_internal.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <deque>
#include <list>

namespace mgk_nccl {

struct header {
    unsigned long long ctx;
    unsigned long long bytes;
    int tag, pad;
};

struct sock_op {
    bool send, done;
    int peer;
    header h;
    char *buf;
    size_t sent;          /* header and payload bytes written (sends) */
    ncclResult_t err;
};

struct message {
    int peer;
    header h;
    std::vector<char> data;
};

struct peer_link {
    int fd = -1;
    bool closed = false;
    std::deque<sock_op *> out;  /* sends in the order posted */
    header in_h;
    size_t in_got = 0;          /* header and payload bytes read of the arriving message */
    message *in = nullptr;
};

static int g_rank = -1;
static std::vector<peer_link> g_peers;
static std::list<sock_op *> g_recvs;     /* posted, not matched yet, in posting order */
static std::list<message *> g_arrived;   /* complete, not received yet, in arrival order */

void sock_adopt(int rank, const std::vector<int> &fds)
{
    g_rank = rank;
    g_peers.assign(fds.size(), peer_link());
    for (size_t i = 0; i < fds.size(); i++) g_peers[i].fd = fds[i];
}

int sock_world_rank(void) { return g_rank; }

void sock_close_world(void)
{
    for (peer_link &p : g_peers)
        if (p.fd >= 0) close(p.fd);
    for (peer_link &p : g_peers) delete p.in;
    for (message *m : g_arrived) delete m;
    g_peers.clear();
    g_arrived.clear();
    g_recvs.clear();
    g_rank = -1;
}

static bool same(const header &a, const header &b) { return a.ctx == b.ctx && a.tag == b.tag; }

/* Receives in posting order take the first arrived message of their peer, context and tag. */
static void match(void)
{
    for (auto r = g_recvs.begin(); r != g_recvs.end();) {
        sock_op *op = *r;
        auto m = g_arrived.begin();
        while (m != g_arrived.end() && ((*m)->peer != op->peer || !same((*m)->h, op->h))) ++m;
        if (m == g_arrived.end()) {
            ++r;
            continue;
        }
        if ((*m)->h.bytes != op->h.bytes)
            op->err = fail(ncclInvalidUsage, "ncclRecv", "a receive of %llu bytes from socket "
                           "rank %d met a message of %llu bytes", op->h.bytes, op->peer,
                           (*m)->h.bytes);
        else if (op->h.bytes)
            memcpy(op->buf, (*m)->data.data(), (size_t)op->h.bytes);
        op->done = true;
        delete *m;
        g_arrived.erase(m);
        r = g_recvs.erase(r);
    }
}

sock_op *sock_post(bool send, int world_peer, unsigned long long ctx, int tag, void *buf,
                   size_t bytes)
{
    sock_op *op = new sock_op();
    op->send = send;
    op->peer = world_peer;
    op->h.ctx = ctx;
    op->h.tag = tag;
    op->h.bytes = bytes;
    op->buf = (char *)buf;
    op->err = ncclSuccess;
    if (!send) {
        g_recvs.push_back(op);
    } else if (world_peer == g_rank) {
        message *m = new message();
        m->peer = g_rank;
        m->h = op->h;
        m->data.assign((char *)buf, (char *)buf + bytes);
        g_arrived.push_back(m);
        op->done = true;
    } else {
        g_peers[(size_t)world_peer].out.push_back(op);
    }
    match();
    return op;
}

/* Writes what the socket takes of p's queued sends; false on a failed connection. */
static bool pump_out(peer_link *p)
{
    while (!p->out.empty()) {
        sock_op *op = p->out.front();
        size_t total = sizeof op->h + (size_t)op->h.bytes;
        const char *src = op->sent < sizeof op->h ? (const char *)&op->h + op->sent
                                                  : op->buf + (op->sent - sizeof op->h);
        size_t len = op->sent < sizeof op->h ? sizeof op->h - op->sent : total - op->sent;
        ssize_t w = send(p->fd, src, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        op->sent += (size_t)w;
        if (op->sent < total) continue;
        op->done = true;
        p->out.pop_front();
    }
    return true;
}

/* Reads what has arrived from peer q; false on a closed or failed connection. */
static bool pump_in(int q)
{
    peer_link *p = &g_peers[(size_t)q];
    for (;;) {
        bool in_header = p->in_got < sizeof p->in_h;
        char *dst = in_header ? (char *)&p->in_h + p->in_got
                              : p->in->data.data() + (p->in_got - sizeof p->in_h);
        size_t len = in_header ? sizeof p->in_h - p->in_got
                               : sizeof p->in_h + (size_t)p->in_h.bytes - p->in_got;
        ssize_t r = len ? recv(p->fd, dst, len, MSG_DONTWAIT) : 0;
        if (len && r == 0) return false;
        if (r < 0) return errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
        p->in_got += (size_t)r;
        if (in_header && p->in_got == sizeof p->in_h) {
            p->in = new message();
            p->in->peer = q;
            p->in->h = p->in_h;
            p->in->data.resize((size_t)p->in_h.bytes);
        }
        if (p->in_got >= sizeof p->in_h && p->in_got == sizeof p->in_h + (size_t)p->in_h.bytes) {
            g_arrived.push_back(p->in);
            p->in = nullptr;
            p->in_got = 0;
        }
    }
}

static void progress(void)
{
    for (size_t q = 0; q < g_peers.size(); q++) {
        peer_link *p = &g_peers[q];
        if (p->fd < 0 || p->closed) continue;
        if (!pump_out(p) || !pump_in((int)q)) p->closed = true;
    }
    match();
}

/* Blocks until some connection can be read, or written by a queued send. */
static void wait_io(void)
{
    std::vector<pollfd> fds;
    for (peer_link &p : g_peers)
        if (p.fd >= 0 && !p.closed)
            fds.push_back({p.fd, (short)(POLLIN | (p.out.empty() ? 0 : POLLOUT)), 0});
    if (!fds.empty()) poll(fds.data(), (nfds_t)fds.size(), -1);
}

/* ncclSuccess when every op is done, ncclInProgress while some wait on live peers. */
static ncclResult_t state(const char *call, sock_op *const *ops, size_t n)
{
    ncclResult_t r = ncclSuccess;
    for (size_t i = 0; i < n; i++) {
        if (ops[i]->err != ncclSuccess) return ops[i]->err;
        if (ops[i]->done) continue;
        if (g_peers[(size_t)ops[i]->peer].closed)
            return fail(ncclRemoteError, call, "socket rank %d closed its connection (its "
                        "process ended) before a %s of %llu bytes", ops[i]->peer,
                        ops[i]->send ? "send" : "receive", ops[i]->h.bytes);
        r = ncclInProgress;
    }
    return r;
}

/* After a failed wait: the unfinished receives are withdrawn; a link with an unfinished send
 * is given up (its message may be half written, and its buffer is the caller's again). */
static void withdraw(sock_op *op)
{
    if (!op->send) {
        g_recvs.remove(op);
        return;
    }
    peer_link *p = &g_peers[(size_t)op->peer];
    if (!p->closed) shutdown(p->fd, SHUT_RDWR);
    p->closed = true;
    for (sock_op *q : p->out) { /* no longer queued: failed, freed by their own waits */
        q->done = true;
        if (q->err == ncclSuccess) q->err = ncclRemoteError;
    }
    p->out.clear();
}

ncclResult_t sock_wait(const char *call, sock_op *const *ops, size_t n)
{
    ncclResult_t r;
    for (progress(); (r = state(call, ops, n)) == ncclInProgress; progress()) wait_io();
    for (size_t i = 0; i < n; i++)
        if (!ops[i]->done) withdraw(ops[i]);
    for (size_t i = 0; i < n; i++) delete ops[i];
    return r;
}

} /* namespace mgk_nccl */

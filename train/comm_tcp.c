/* comm_tcp.c — comm_tcp.h: rank 0 serves a blob to the others over TCP. */
#include "comm_tcp.h"

#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int ms_left(double deadline)
{
    double left = deadline - now_s();
    return left <= 0 ? 0 : (int)(left * 1000) + 1;
}

/* Waits until fd is ready for `events`; 0 ready, -1 timed out or failed. */
static int wait_fd(int fd, short events, double deadline)
{
    struct pollfd p = {fd, events, 0};
    for (;;) {
        int ms = ms_left(deadline);
        if (ms == 0) return -1;
        int r = poll(&p, 1, ms);
        if (r > 0) return 0;
        if (r < 0 && errno != EINTR) return -1;
    }
}

static mg_status resolve(const char *addr, int port, int passive, struct addrinfo **out)
{
    char service[16];
    snprintf(service, sizeof service, "%d", port);
    struct addrinfo hints;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = passive ? AI_PASSIVE : 0;
    int r = getaddrinfo(addr, service, &hints, out);
    MG_RETURN_IF(r != 0, MG_ERR_IO, "TCP bootstrap: cannot resolve %s:%d: %s", addr, port,
                 gai_strerror(r));
    return MG_OK;
}

static mg_status send_all(int fd, const void *buf, size_t n, double deadline, const char *who)
{
    const char *p = buf;
    while (n > 0) {
        MG_RETURN_IF(wait_fd(fd, POLLOUT, deadline) != 0, MG_ERR_IO,
                     "TCP bootstrap: timed out sending to %s", who);
        ssize_t w = send(fd, p, n, MSG_NOSIGNAL);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) return mg_error_errno(errno, "TCP bootstrap: sending to %s", who);
        p += w;
        n -= (size_t)w;
    }
    return MG_OK;
}

static mg_status recv_all(int fd, void *buf, size_t n, double deadline, const char *who)
{
    char *p = buf;
    while (n > 0) {
        MG_RETURN_IF(wait_fd(fd, POLLIN, deadline) != 0, MG_ERR_IO,
                     "TCP bootstrap: timed out waiting for the data from %s", who);
        ssize_t r = recv(fd, p, n, 0);
        if (r < 0 && errno == EINTR) continue;
        MG_RETURN_IF(r == 0, MG_ERR_IO, "TCP bootstrap: %s closed the connection early", who);
        if (r < 0) return mg_error_errno(errno, "TCP bootstrap: receiving from %s", who);
        p += r;
        n -= (size_t)r;
    }
    return MG_OK;
}

static mg_status serve(const char *addr, int port, int64_t size, const void *buf, size_t bytes,
                       double deadline)
{
    struct addrinfo *ai = NULL;
    MG_FORWARD(resolve(addr, port, 1, &ai));
    int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol), one = 1;
    mg_status st = MG_OK;
    if (fd < 0) st = mg_error_errno(errno, "TCP bootstrap: socket");
    if (st == MG_OK) setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (st == MG_OK && (bind(fd, ai->ai_addr, ai->ai_addrlen) != 0 || listen(fd, 128) != 0))
        st = mg_error_errno(errno, "TCP bootstrap: rank 0 cannot listen on %s:%d", addr, port);
    freeaddrinfo(ai);
    for (int64_t served = 1; st == MG_OK && served < size; served++) {
        if (wait_fd(fd, POLLIN, deadline) != 0) {
            st = mg_error_set(MG_ERR_IO, "TCP bootstrap: rank 0 timed out on %s:%d after %lld "
                              "of %lld ranks connected", addr, port, (long long)served,
                              (long long)size);
            break;
        }
        int c = accept(fd, NULL, NULL);
        if (c < 0) {
            if (errno == EINTR) served--;
            else st = mg_error_errno(errno, "TCP bootstrap: accept on %s:%d", addr, port);
            continue;
        }
        st = send_all(c, buf, bytes, deadline, "a rank");
        close(c);
    }
    if (fd >= 0) close(fd);
    return st;
}

/* One connection attempt: 0 connected (fd in *out), -1 refused or failed (retry). */
static int try_connect(const struct addrinfo *ai, double deadline, int *out)
{
    int fd = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
    if (fd < 0) return -1;
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) == 0) {
        *out = fd;
        return 0;
    }
    (void)deadline;
    close(fd);
    return -1;
}

static mg_status fetch(const char *addr, int port, int64_t rank, void *buf, size_t bytes,
                       double deadline)
{
    struct addrinfo *ai = NULL;
    MG_FORWARD(resolve(addr, port, 0, &ai));
    int fd = -1;
    while (try_connect(ai, deadline, &fd) != 0) {
        if (ms_left(deadline) == 0) {
            freeaddrinfo(ai);
            return mg_error_set(MG_ERR_IO, "TCP bootstrap: rank %lld timed out connecting to "
                                "rank 0 at %s:%d (MASTER_ADDR / MASTER_PORT)", (long long)rank,
                                addr, port);
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    freeaddrinfo(ai);
    char who[96];
    snprintf(who, sizeof who, "rank 0 at %s:%d", addr, port);
    mg_status st = recv_all(fd, buf, bytes, deadline, who);
    close(fd);
    return st;
}

mg_status mg_comm_tcp_bcast(const char *addr, int port, int64_t rank, int64_t size, void *buf,
                            size_t bytes, double timeout_s)
{
    double deadline = now_s() + (timeout_s > 0 ? timeout_s : 600);
    if (size <= 1) return MG_OK;
    if (rank == 0) return serve(addr, port, size, buf, bytes, deadline);
    return fetch(addr, port, rank, buf, bytes, deadline);
}

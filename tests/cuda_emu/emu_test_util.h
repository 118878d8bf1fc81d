/* emu_test_util.h — helpers shared by the emulator's self-tests (tests/cuda_emu, .cu files).
 *
 *   EMU_OK(t, call)            checks that a CUDA runtime call returned cudaSuccess
 *   emu_expect_death(t, fn, s) runs fn in a child process and checks that it dies (a signal,
 *                              or ASan's exit) with a report containing s on stderr (the
 *                              checks can fail)
 *   emu_order_scope            sets a thread order for its lifetime, then restores the
 *                              runner's
 *   emu_stderr_muted           silences stderr for its lifetime (expected error messages)
 */
#ifndef MGK_EMU_TEST_UTIL_H
#define MGK_EMU_TEST_UTIL_H

#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "cuda/cuda_portable.h"
#include "harness.h"

#define EMU_OK(t, call)                                                                        \
    do {                                                                                       \
        cudaError_t emu_e_ = (call);                                                           \
        if (emu_e_ != cudaSuccess)                                                             \
            mg_test_fail((t), __FILE__, __LINE__, "%s: %s", #call, cudaGetErrorString(emu_e_)); \
    } while (0)

/* Runs fn in a child whose stderr is captured; returns the child's stderr (static buffer) and
 * its wait status in *status. */
static inline const char *emu_run_child(void (*fn)(void), int *status)
{
    static char out[16384];
    int fds[2];
    out[0] = 0;
    if (pipe(fds) != 0) return out;
    fflush(stdout);
    fflush(stderr);
    pid_t pid = fork();
    if (pid == 0) {
        close(fds[0]);
        dup2(fds[1], 2);
        fn();
        _exit(0);
    }
    close(fds[1]);
    size_t len = 0;
    ssize_t r;
    while ((r = read(fds[0], out + len, sizeof out - 1 - len)) > 0) len += (size_t)r;
    out[len] = 0;
    close(fds[0]);
    waitpid(pid, status, 0);
    return out;
}

static inline void emu_expect_death_at(mg_test_ctx *t, const char *file, int line,
                                       void (*fn)(void), const char *expect)
{
    int status = 0;
    const char *err = emu_run_child(fn, &status);
    /* abort() from the emulator, SIGSEGV after a stack overflow report, exit status 1 from
     * AddressSanitizer's own reports; a child that returns exits 0 */
    bool died = WIFSIGNALED(status) || (WIFEXITED(status) && WEXITSTATUS(status) != 0);
    if (!died || !strstr(err, expect))
        mg_test_fail(t, file, line, "expected a death reporting \"%s\", got %s %d and stderr:\n%s",
                     expect, WIFSIGNALED(status) ? "signal" : "exit status",
                     WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status), err);
}
#define emu_expect_death(t, fn, expect) emu_expect_death_at((t), __FILE__, __LINE__, (fn), (expect))

struct emu_order_scope {
    char saved[40];
    emu_order_scope(mgk_emu_order o, uint64_t seed)
    {
        snprintf(saved, sizeof saved, "%s", mgk_emu_order_name());
        mgk_emu_set_order(o, seed);
    }
    ~emu_order_scope()
    {
        mgk_emu_order o;
        uint64_t seed;
        if (mgk_emu_parse_order(saved, &o, &seed) == 0) mgk_emu_set_order(o, seed);
    }
};

struct emu_stderr_muted {
    int saved;
    emu_stderr_muted() : saved(dup(2))
    {
        fflush(stderr);
        int null = open("/dev/null", O_WRONLY);
        if (null >= 0) dup2(null, 2), close(null);
    }
    ~emu_stderr_muted()
    {
        fflush(stderr);
        if (saved >= 0) dup2(saved, 2), close(saved);
    }
};

/* Device buffer of n T, filled from host (if given). */
template <typename T> static inline T *emu_device(mg_test_ctx *t, size_t n, const T *host = nullptr)
{
    T *d = nullptr;
    EMU_OK(t, cudaMalloc((void **)&d, n * sizeof(T)));
    if (host) EMU_OK(t, cudaMemcpy(d, host, n * sizeof(T), cudaMemcpyHostToDevice));
    return d;
}

#endif

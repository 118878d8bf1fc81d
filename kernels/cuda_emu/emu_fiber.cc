/* emu_fiber.cc — worker fibers for the emulated threads of a block.
 *
 * Contract: a fiber is a stack from mmap (MGK_EMU_STACK_KB, default 256 KiB, 1 MiB under
 * AddressSanitizer) with a PROT_NONE guard page below it, entered the first time through
 * makecontext/setcontext and afterwards only through _setjmp/_longjmp (no signal-mask
 * syscall per switch). Fibers are pooled and never freed: a worker that finished its threads
 * parks in the pool and is reused by the next block or launch. Every switch is announced to
 * AddressSanitizer (__sanitizer_start/finish_switch_fiber). Outside ASan builds, a fault in a
 * guard page (a kernel's stack overflow) is reported as such before the process dies, unless
 * the program handles SIGSEGV itself.
 */
#undef _FORTIFY_SOURCE /* __longjmp_chk refuses jumps to another stack */
#include "cuda_emu/emu_internal.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <string.h>
#include <unistd.h>

#include <vector>

#ifdef MGK_EMU_ASAN
#include <sanitizer/common_interface_defs.h>
#endif

namespace mgk_emu {

static fiber g_main = {};
static fiber *g_current = &g_main; /* the fiber running now */
static fiber *g_free;              /* parked workers */
static fiber *g_switch_from;       /* the fiber a switch left (its stack bounds for ASan) */
static jmp_buf g_creator;          /* where a new fiber returns after its first entry */

fiber *fiber_main(void) { return &g_main; }

void fiber_launch_begin(void)
{
    g_main.stack_lo = nullptr; /* ASan learns this thread's stack at the first switch */
    g_main.stack_size = 0;
    g_current = &g_main;
}

/* Before leaving `from` for `to`: tells ASan which stack comes next. */
static void leaving(fiber *from, fiber *to)
{
    g_switch_from = from;
#ifdef MGK_EMU_ASAN
    __sanitizer_start_switch_fiber(&from->fake_stack, to->stack_lo, to->stack_size);
#else
    (void)to;
#endif
}

/* After arriving on a fiber: tells ASan, and learns the launching thread's stack bounds
 * from the first switch away from it. */
static void arrived(void *fake)
{
#ifdef MGK_EMU_ASAN
    const void *lo = nullptr;
    size_t size = 0;
    __sanitizer_finish_switch_fiber(fake, &lo, &size);
    if (g_switch_from == &g_main && !g_main.stack_lo) {
        g_main.stack_lo = (char *)(uintptr_t)lo;
        g_main.stack_size = size;
    }
#else
    (void)fake;
#endif
}

void fiber_switch(fiber *from, fiber *to)
{
    if (from == to) return;
    g_switches++;
    g_current = to;
    leaving(from, to);
    if (!_setjmp(from->jb)) _longjmp(to->jb, 1);
    arrived(from->fake_stack);
}

/* First code on a new stack: saves the fiber's context, returns to its creator, and runs the
 * scheduler's worker loop when first switched to. */
static void trampoline(void)
{
    fiber *self = g_current;
    fiber *creator = g_switch_from;
    arrived(nullptr);
    leaving(self, creator);
    g_current = creator;
    if (!_setjmp(self->jb)) _longjmp(g_creator, 1);
    arrived(self->fake_stack);
    sched_worker(self);
}

static std::vector<char *> g_stacks; /* stack_lo of every fiber: guard page just below */

/* SIGSEGV on an alternate stack: names a fiber stack overflow, then lets the fault kill. */
static void on_segv(int sig, siginfo_t *si, void *uctx)
{
    (void)sig, (void)uctx;
    const char *a = (const char *)si->si_addr;
    long page = sysconf(_SC_PAGESIZE);
    for (char *lo : g_stacks)
        if (a >= lo - page && a < lo) {
            char msg[320];
            int n = snprintf(msg, sizeof msg, "mgk-emu: error: fiber stack overflow in kernel %s "
                             "(thread (%u,%u,%u)): %zu KiB per thread, raise MGK_EMU_STACK_KB\n",
                             g_launch.d ? g_launch.d->name : "?", g_ids.thread_idx.x,
                             g_ids.thread_idx.y, g_ids.thread_idx.z, cfg().stack_bytes / 1024);
            if (n > 0 && write(2, msg, (size_t)n) < 0) break;
            break;
        }
    /* SA_RESETHAND: returning re-runs the faulting access under the default action */
}

static void overflow_reporter_install(void)
{
#ifndef MGK_EMU_ASAN
    static bool done;
    struct sigaction old;
    if (done || sigaction(SIGSEGV, nullptr, &old) != 0 || old.sa_handler != SIG_DFL) return;
    done = true;
    static char alt[64 * 1024];
    stack_t ss = {};
    ss.ss_sp = alt;
    ss.ss_size = sizeof alt;
    if (sigaltstack(&ss, nullptr) != 0) return;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_segv;
    sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
    sigaction(SIGSEGV, &sa, nullptr);
#endif
}

static char *stack_alloc(size_t size)
{
    long page = sysconf(_SC_PAGESIZE);
    char *base = (char *)mmap(nullptr, size + (size_t)page, PROT_READ | PROT_WRITE,
                              MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
    if (base == MAP_FAILED) {
        fprintf(stderr, "mgk-emu: error: cannot map a %zu-byte fiber stack\n", size);
        abort();
    }
    if (mprotect(base, (size_t)page, PROT_NONE) != 0) abort(); /* guard page below */
    return base + page;
}

/* A new fiber, entered once (makecontext + swapcontext: the only signal-mask syscall of its
 * life) so that its jmp_buf holds the start of trampoline's worker loop. */
static fiber *fiber_create(void)
{
    fiber *f = new fiber();
    f->stack_size = cfg().stack_bytes;
    f->stack_lo = stack_alloc(f->stack_size);
    f->thread = -1;
    overflow_reporter_install();
    g_stacks.push_back(f->stack_lo);
    ucontext_t uc, back;
    if (getcontext(&uc) != 0) abort();
    /* Stack tops 260 KiB apart would all fall into the same L1 cache sets: each fiber's top
     * is moved down by a different multiple of 64 bytes (up to 32 KiB) */
    size_t color = (g_stacks.size() % 512) * 64;
    uc.uc_stack.ss_sp = f->stack_lo;
    uc.uc_stack.ss_size = f->stack_size - color;
    uc.uc_link = nullptr;
    makecontext(&uc, trampoline, 0);
    fiber *cur = g_current;
    g_current = f;
    leaving(cur, f);
    if (!_setjmp(g_creator)) {
        if (swapcontext(&back, &uc) != 0) abort();
    }
    arrived(cur->fake_stack);
    return f;
}

fiber *fiber_acquire(void)
{
    fiber *f = g_free;
    if (!f) return fiber_create();
    g_free = f->next_free;
    f->next_free = nullptr;
    return f;
}

void fiber_release(fiber *f)
{
    f->thread = -1;
    f->next_free = g_free;
    g_free = f;
}

} /* namespace mgk_emu */

/* emu_fiber.cc — worker fibers for the emulated threads of a block.
 *
 * Contract: a fiber is a stack from mmap (MGK_EMU_STACK_KB, default 256 KiB, 1 MiB under
 * AddressSanitizer) with a PROT_NONE guard page below it, entered the first time through
 * makecontext/setcontext and afterwards only through _setjmp/_longjmp (no signal-mask
 * syscall per switch). Fibers are pooled and never freed: a worker that finished its threads
 * parks in the pool and is reused by the next block or launch. Every switch is announced to
 * AddressSanitizer (__sanitizer_start/finish_switch_fiber).
 */
#undef _FORTIFY_SOURCE /* __longjmp_chk refuses jumps to another stack */
#include "cuda_emu/emu_internal.h"

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

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
    ucontext_t uc, back;
    if (getcontext(&uc) != 0) abort();
    uc.uc_stack.ss_sp = f->stack_lo;
    uc.uc_stack.ss_size = f->stack_size;
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

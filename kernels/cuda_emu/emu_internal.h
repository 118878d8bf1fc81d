/* emu_internal.h — the CUDA emulator's modules and what they share (not for kernels).
 *
 *   emu_fiber.cc   fibers: mmap'd stacks with a guard page, makecontext for the first entry,
 *                  _setjmp/_longjmp for every switch, AddressSanitizer annotations
 *   emu_sched.cc   one block: threads, barriers, warp operations, the strict checks
 *   emu_smem.cc    shared memory of a launch: exact-size heap blocks, NaN poison, canaries
 *   emu_launch.cc  a launch: configuration checks, the grid in the selected order
 *   emu_config.cc  modes (order, strict), the seeded generator, fatal reports, the digest
 *   cudart_emu.cc  CUDA runtime calls; cublaslt_desc.cc, cublaslt_matmul.cc (cublaslt_emu.h)
 *                  cuBLASLt on the CPU GEMM
 */
#ifndef MGK_EMU_INTERNAL_H
#define MGK_EMU_INTERNAL_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>

#include <functional>

#include "cuda_emu/cuda_emu.h"

#if defined(__SANITIZE_ADDRESS__)
#define MGK_EMU_ASAN 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define MGK_EMU_ASAN 1
#endif
#endif

namespace mgk_emu {

/* ---- fibers ----------------------------------------------------------------------------- */

struct fiber {
    jmp_buf jb;
    char *stack_lo; /* usable stack (NULL for the launching thread's own stack) */
    size_t stack_size;
    void *fake_stack; /* AddressSanitizer's fake stack while switched away */
    int thread;       /* index of the block thread it runs, -1 when free */
    fiber *next_free;
};

/* The launching thread's own context (switch back to it when a block is done). */
fiber *fiber_main(void);
/* At the start of a launch: the launching thread may differ from the last one's. */
void fiber_launch_begin(void);
/* A free worker fiber; a new one starts in sched_worker(self) when first switched to, a
 * reused one returns from the fiber_switch that parked it. */
fiber *fiber_acquire(void);
void fiber_release(fiber *f);
/* Saves from's context and continues to's; returns when someone switches back to from. */
void fiber_switch(fiber *from, fiber *to);
/* The body of every worker fiber (emu_sched.cc); never returns. */
[[noreturn]] void sched_worker(fiber *self);

/* ---- the running launch and block ------------------------------------------------------- */

struct launch_state {
    const launch_desc *d;
    uint64_t serial;      /* 1, 2, ... per launch */
    unsigned nthreads;    /* threads per block */
    size_t smem_limit;    /* bytes of static + dynamic shared memory allowed */
    bool in_block;
};
extern launch_state g_launch;

/* Runs the block g_ids.block_idx of the current launch to completion (emu_sched.cc). */
void sched_run_block(void);
/* The thread currently running ("block (x,y,z) thread (x,y,z)" in reports), -1 outside. */
int sched_current_thread(void);

/* Shared memory (emu_smem.cc). */
void smem_launch_begin(void);
void smem_block_begin(void);
void smem_block_end(void); /* checks the canaries */
void smem_launch_end(void);

/* ---- modes, randomness, reports (emu_config.cc) ----------------------------------------- */

struct config {
    mgk_emu_order order;
    uint64_t seed;
    bool strict;
    size_t stack_bytes;
};
/* The modes, read from the environment at the first call. */
const config &cfg(void);
/* Next value of the seeded generator (random order). */
uint64_t rng_next(void);
/* Shuffles perm[0..n) (random order) or fills it forward / reversed. */
void order_fill(int *perm, int n);

/* Prints "mgk-emu: error: FILE:LINE: MESSAGE (kernel K launched at F:L, block, thread)" and
 * aborts. */
[[noreturn]] void fatal(site at, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Same report for a strict-mode check; in relaxed mode only prints a warning once per site. */
void strict_violation(site at, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

void digest_add(const void *p, size_t n);
extern uint64_t g_switches;
extern uint64_t g_launches;

/* ---- runtime (cudart_emu.cc) ------------------------------------------------------------ */

/* Nonzero when [p, p + n) lies inside one cudaMalloc block. */
int device_range(const void *p, size_t n);
/* Nonzero for the default stream and streams from cudaStreamCreate. */
int stream_valid(cudaStream_t s);
/* Before work runs on s now (a launch, a cuBLASLt call): in streams mode "late" the copies
 * and memsets s still holds (for the default stream: those of every stream) run first. */
void stream_catch_up(cudaStream_t s);
/* In streams mode "late" on a created stream: queues f there, to run when the stream's
 * work must be seen (as its copies and memsets; the NCCL shim's collectives issued outside
 * a group), and returns true. Otherwise returns false and f is not run. */
bool stream_queue(cudaStream_t s, std::function<void()> f);
/* Records a launch error for cudaGetLastError. */
void set_last_error(cudaError_t e);
/* The dynamic shared memory limit set with cudaFuncSetAttribute (48 KiB by default). */
size_t func_max_dynamic_smem(const void *func);

} /* namespace mgk_emu */

#endif

/* emu_launch.cc — one kernel launch: its configuration, then its grid block by block.
 *
 * Contract:
 *   - A configuration a GPU would refuse (block over 1024 threads or its per-dimension limits,
 *     an empty or too large grid, dynamic shared memory over the kernel's limit, an unknown
 *     stream) runs nothing and sets the error cudaGetLastError returns, as on a GPU; the
 *     emulator also prints it.
 *   - Blocks run one at a time on the calling thread, in the selected order (forward,
 *     reverse, or a seeded random bijection of the block index), under a process-wide lock
 *     (host threads launching at the same time take turns).
 *   - A launch from inside a kernel (dynamic parallelism) is fatal.
 */
#include "cuda_emu/emu_internal.h"

#include <stdio.h>

#include <mutex>

namespace mgk_emu {

ids g_ids;
launch_state g_launch;
static std::mutex g_lock;
static uint64_t g_serial;
static thread_local bool t_launching; /* this host thread is inside launch() */

static const size_t DEFAULT_SMEM = 48 * 1024;
static const size_t OPTIN_SMEM = 227 * 1024; /* cc 9.0 sharedMemPerBlockOptin */

static bool fail(const launch_desc *d, cudaError_t e, const char *why)
{
    fprintf(stderr, "mgk-emu: %s:%d: launch of %s refused: %s (%s)\n", d->at.file, d->at.line,
            d->name, why, cudaGetErrorString(e));
    set_last_error(e);
    return false;
}

/* Checks d as a GPU would; sets *limit to the shared memory bytes the kernel may use. */
static bool config_ok(const launch_desc *d, size_t *limit)
{
    const dim3 b = d->block, g = d->grid;
    if (b.x < 1 || b.y < 1 || b.z < 1 || b.x > 1024 || b.y > 1024 || b.z > 64 ||
        (uint64_t)b.x * b.y * b.z > 1024)
        return fail(d, cudaErrorInvalidConfiguration, "block dimensions");
    if (g.x < 1 || g.y < 1 || g.z < 1 || g.x > 2147483647u || g.y > 65535 || g.z > 65535)
        return fail(d, cudaErrorInvalidConfiguration, "grid dimensions");
    size_t max_dyn = func_max_dynamic_smem(d->func);
    if (d->smem > max_dyn)
        return fail(d, cudaErrorInvalidValue,
                    "dynamic shared memory over the kernel's limit (cudaFuncSetAttribute "
                    "MaxDynamicSharedMemorySize)");
    if (!stream_valid(d->stream)) return fail(d, cudaErrorInvalidResourceHandle, "stream");
    stream_catch_up(d->stream);
    *limit = max_dyn > DEFAULT_SMEM ? OPTIN_SMEM : DEFAULT_SMEM;
    return true;
}

static uint64_t gcd(uint64_t a, uint64_t b)
{
    while (b) {
        uint64_t t = a % b;
        a = b;
        b = t;
    }
    return a;
}

/* Block i of the order: i, reversed, or a*i + c mod n with a coprime to n. */
struct block_order {
    uint64_t n, a, c;
    mgk_emu_order o;
    explicit block_order(uint64_t count) : n(count), a(1), c(0), o(cfg().order)
    {
        if (o != MGK_EMU_RANDOM || n < 2) return;
        do a = 1 + rng_next() % (n - 1);
        while (gcd(a, n) != 1);
        c = rng_next() % n;
    }
    uint64_t at(uint64_t i) const
    {
        if (o == MGK_EMU_REV) return n - 1 - i;
        if (o == MGK_EMU_RANDOM) return (uint64_t)(((unsigned __int128)a * i + c) % n);
        return i;
    }
};

static void run_grid(void)
{
    const dim3 g = g_ids.grid_dim;
    uint64_t n = (uint64_t)g.x * g.y * g.z;
    block_order order(n);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t b = order.at(i);
        g_ids.block_idx = make_uint3((unsigned)(b % g.x), (unsigned)(b / g.x % g.y),
                                     (unsigned)(b / ((uint64_t)g.x * g.y)));
        smem_block_begin();
        sched_run_block();
        smem_block_end();
    }
}

void launch(const launch_desc *d)
{
    if (t_launching)
        fatal(d->at, "kernel %s launched from inside a kernel (dynamic parallelism is not "
                     "emulated)", d->name);
    size_t limit = 0;
    if (!config_ok(d, &limit)) return;
    std::lock_guard<std::mutex> hold(g_lock);
    t_launching = true;
    fiber_launch_begin();
    g_launch = launch_state{d, ++g_serial, d->block.x * d->block.y * d->block.z, limit, false};
    g_launches++;
    g_ids.grid_dim = d->grid;
    g_ids.block_dim = d->block;
    smem_launch_begin();
    run_grid();
    smem_launch_end();
    g_launch.d = nullptr;
    t_launching = false;
}

void check_kernel_pointer(const launch_desc *d, int index, const void *p)
{
    if (p && !device_range(p, 0))
        strict_violation(d->at, "argument %d of kernel %s (%p) is neither NULL nor inside a "
                         "cudaMalloc block", index + 1, d->name, p);
}

} /* namespace mgk_emu */

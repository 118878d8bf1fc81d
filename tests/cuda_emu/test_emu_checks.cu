/* test_emu_checks.cu — the checks a GPU does not give: each faulty kernel must be caught.
 * Fatal reports are expected from a child process (emu_expect_death), so the checks are
 * shown to fail when they should. */
#include <math.h>

#include <vector>

#include "emu_test_util.h"

#if defined(__SANITIZE_ADDRESS__)
#define EMU_TEST_ASAN 1
#endif

/* ---- a missing __syncthreads(): caught by running the thread orders --------------------- */

/* out[t] = x[t + 1] through shared memory, without the barrier between write and read. */
static __global__ void missing_sync_kernel(const float *x, float *out)
{
    MGK_SHARED(float, s, 64);
    s[threadIdx.x] = x[threadIdx.x];
    out[threadIdx.x] = s[(threadIdx.x + 1) % 64]; /* needs __syncthreads() before */
}

static __global__ void with_sync_kernel(const float *x, float *out)
{
    MGK_SHARED(float, s, 64);
    s[threadIdx.x] = x[threadIdx.x];
    __syncthreads();
    out[threadIdx.x] = s[(threadIdx.x + 1) % 64];
}

/* Runs kernel k under order o and returns the digest of what came back to the host. */
static uint64_t run_in_order(mg_test_ctx *t, void (*k)(const float *, float *), mgk_emu_order o,
                             std::vector<float> *out)
{
    emu_order_scope scope(o, 3);
    std::vector<float> x(64);
    for (int i = 0; i < 64; i++) x[i] = (float)i;
    float *dx = emu_device<float>(t, 64, x.data()), *dout = emu_device<float>(t, 64);
    mgk_emu_results_reset();
    MGK_LAUNCH(k, 1, 64, 0, 0, dx, dout);
    out->resize(64);
    cudaMemcpy(out->data(), dout, 64 * sizeof(float), cudaMemcpyDeviceToHost);
    cudaFree(dx);
    cudaFree(dout);
    return mgk_emu_results_digest();
}

MG_TEST(emu_check_missing_syncthreads)
{
    std::vector<float> fwd, rev, rnd, ok_fwd, ok_rev;
    uint64_t dfwd = run_in_order(t, missing_sync_kernel, MGK_EMU_FWD, &fwd);
    uint64_t drev = run_in_order(t, missing_sync_kernel, MGK_EMU_REV, &rev);
    run_in_order(t, missing_sync_kernel, MGK_EMU_RANDOM, &rnd);
    MG_CHECK(t, dfwd != drev); /* what the runner compares */
    MG_CHECK(t, isnan(fwd[0]));    /* thread 0 read the poison: thread 1 had not written */
    MG_CHECK(t, rev[0] == 1.0f);   /* in reverse order it had */
    MG_CHECK(t, fwd[63] == 0.0f);  /* thread 63 reads thread 0's slot: written in fwd order */
    MG_CHECK(t, isnan(rev[63]));   /* and not yet in reverse order */
    uint64_t gfwd = run_in_order(t, with_sync_kernel, MGK_EMU_FWD, &ok_fwd);
    uint64_t grev = run_in_order(t, with_sync_kernel, MGK_EMU_REV, &ok_rev);
    MG_CHECK(t, gfwd == grev);
    for (int i = 0; i < 64; i++) MG_CHECK_EQ_INT(t, ok_fwd[i], (i + 1) % 64);
}

/* ---- barriers --------------------------------------------------------------------------- */

static __global__ void divergent_barrier_kernel(int *x)
{
    if (threadIdx.x % 2) {
        x[threadIdx.x] = 1;
        __syncthreads();
    } else {
        x[threadIdx.x] = 2;
        __syncthreads();
    }
}

static int *child_buffer(size_t n)
{
    int *d = nullptr;
    if (cudaMalloc((void **)&d, n * sizeof(int)) != cudaSuccess) abort();
    return d;
}

static void divergent_barrier_child(void) { MGK_LAUNCH(divergent_barrier_kernel, 1, 32, 0, 0, child_buffer(32)); }

MG_TEST(emu_check_divergent_barrier)
{
    emu_expect_death(t, divergent_barrier_child, "divergent __syncthreads(): other threads wait at");
}

/* Threads >= 16 return before the barrier (forbidden by the contract). */
static __global__ void early_return_kernel(int *runs)
{
    atomicAdd(&runs[threadIdx.x], 1);
    if (threadIdx.x >= 16) return;
    __syncthreads();
    atomicAdd(&runs[threadIdx.x], 1);
}

static void early_return_child(void) { MGK_LAUNCH(early_return_kernel, 1, 32, 0, 0, child_buffer(32)); }

MG_TEST(emu_check_early_return_before_barrier)
{
    emu_expect_death(t, early_return_child, "exited");
    /* Relaxed mode: reported as a warning, the barrier counts the live threads, and no
     * thread runs twice (each returned thread ran once, the others twice through the body). */
    emu_stderr_muted quiet;
    mgk_emu_set_strict(0);
    int *runs = emu_device<int>(t, 32);
    cudaMemset(runs, 0, 32 * sizeof(int));
    MGK_LAUNCH(early_return_kernel, 1, 32, 0, 0, runs);
    mgk_emu_set_strict(1);
    std::vector<int> h(32);
    cudaMemcpy(h.data(), runs, 32 * sizeof(int), cudaMemcpyDeviceToHost);
    for (int i = 0; i < 32; i++) MG_CHECK_EQ_INT(t, h[i], i < 16 ? 2 : 1);
    cudaFree(runs);
}

/* Thread 0 waits at a barrier the others never reach. */
static __global__ void exit_while_waiting_kernel(int *x)
{
    if (threadIdx.x == 0) __syncthreads();
    x[threadIdx.x] = 1;
}

static void exit_while_waiting_child(void)
{
    emu_order_scope fwd(MGK_EMU_FWD, 0); /* thread 0 first: it waits, then the others exit */
    MGK_LAUNCH(exit_while_waiting_kernel, 1, 32, 0, 0, child_buffer(32));
}

MG_TEST(emu_check_exit_while_others_wait)
{
    emu_expect_death(t, exit_while_waiting_child, "exited while 1 threads wait at this __syncthreads()");
}

/* ---- warp operations -------------------------------------------------------------------- */

static __global__ void mask_mismatch_kernel(int *x)
{
    unsigned lane = threadIdx.x % 32;
    unsigned mask = lane < 16 ? 0xffffffffu : 0xfffffffeu; /* neither group can complete */
    x[threadIdx.x] = __shfl_sync(mask, (int)lane, 0);
}

static void mask_mismatch_child(void) { MGK_LAUNCH(mask_mismatch_kernel, 1, 32, 0, 0, child_buffer(32)); }

/* Lane 31 leaves the full-mask shuffle out. */
static __global__ void lane_missing_kernel(int *x)
{
    int v = (int)threadIdx.x;
    if (threadIdx.x < 31) v = __shfl_xor_sync(0xffffffffu, v, 1);
    x[threadIdx.x] = v;
}

static void lane_missing_child(void) { MGK_LAUNCH(lane_missing_kernel, 1, 32, 0, 0, child_buffer(32)); }

/* Relaxed mode: as on a GPU, lanes that exited no longer count for a full-mask operation. */
static __global__ void exited_lane_kernel(int *x, unsigned *ballots)
{
    if (threadIdx.x == 31) return;
    int v = __shfl_xor_sync(0xffffffffu, (int)threadIdx.x * 10, 1);
    __syncwarp();
    unsigned b = __ballot_sync(0xffffffffu, threadIdx.x % 2 == 0);
    x[threadIdx.x] = v;
    ballots[threadIdx.x] = b;
}

MG_TEST(emu_relaxed_exited_lanes)
{
    int *d = emu_device<int>(t, 32);
    unsigned *db = emu_device<unsigned>(t, 32);
    std::vector<int> h(32);
    std::vector<unsigned> hb(32);
    for (mgk_emu_order o : {MGK_EMU_FWD, MGK_EMU_REV}) {
        emu_order_scope scope(o, 0);
        {
            emu_stderr_muted quiet;
            mgk_emu_set_strict(0);
            MGK_LAUNCH(exited_lane_kernel, 1, 32, 0, 0, d, db);
            mgk_emu_set_strict(1);
        }
        cudaMemcpy(h.data(), d, 32 * sizeof(int), cudaMemcpyDeviceToHost);
        cudaMemcpy(hb.data(), db, 32 * sizeof(unsigned), cudaMemcpyDeviceToHost);
        for (int i = 0; i < 30; i++) MG_CHECK_EQ_INT(t, h[i], (i ^ 1) * 10);
        for (int i = 0; i < 31; i++) MG_CHECK_EQ_INT(t, hb[i], 0x55555555u & 0x7fffffffu);
    }
    cudaFree(d);
    cudaFree(db);
}

/* Lanes 0-15 shuffle down among themselves: lane 15 reads lane 16, outside the mask. */
static __global__ void outside_mask_kernel(int *x)
{
    int v = (int)threadIdx.x;
    if (threadIdx.x < 16) v = __shfl_down_sync(0x0000ffffu, v, 1);
    x[threadIdx.x] = v;
}

static void outside_mask_child(void) { MGK_LAUNCH(outside_mask_kernel, 1, 32, 0, 0, child_buffer(32)); }

static __global__ void partial_warp_kernel(int *x)
{
    x[threadIdx.x] = __shfl_xor_sync(0xffffffffu, (int)threadIdx.x, 1);
}

static void partial_warp_child(void) { MGK_LAUNCH(partial_warp_kernel, 1, 40, 0, 0, child_buffer(40)); }

MG_TEST(emu_check_warp_masks)
{
    emu_expect_death(t, mask_mismatch_child, "warp operation mask mismatch");
    emu_expect_death(t, lane_missing_child, "exited");
    emu_expect_death(t, outside_mask_child, "lane 15 reads lane 16, which is not in the mask");
    emu_expect_death(t, partial_warp_child, "names lanes that do not exist");
}

/* ---- shared memory ---------------------------------------------------------------------- */

static __global__ void dyn_overflow_kernel(float *x)
{
    MGK_DYN_SHARED(float, s);
    s[threadIdx.x] = x[threadIdx.x]; /* 17 threads, 16 floats declared */
    __syncthreads();
    x[threadIdx.x] = s[0];
}

static void dyn_overflow_child(void)
{
    float *d = nullptr;
    cudaMalloc((void **)&d, 17 * sizeof(float));
    MGK_LAUNCH(dyn_overflow_kernel, 1, 17, 16 * sizeof(float), 0, d);
}

static __global__ void static_overflow_kernel(float *x)
{
    MGK_SHARED(float, s, 8);
    s[threadIdx.x] = 1.0f; /* 9 threads, 8 floats */
    x[threadIdx.x] = 0.0f;
}

static void static_overflow_child(void)
{
    float *d = nullptr;
    cudaMalloc((void **)&d, 9 * sizeof(float));
    MGK_LAUNCH(static_overflow_kernel, 1, 9, 0, 0, d);
}

static __global__ void big_static_kernel(float *x)
{
    MGK_SHARED(float, s, 13000); /* 52000 bytes > 48 KiB */
    s[threadIdx.x] = 0;
    x[threadIdx.x] = s[threadIdx.x];
}

static void big_static_child(void)
{
    float *d = nullptr;
    cudaMalloc((void **)&d, 32 * sizeof(float));
    MGK_LAUNCH(big_static_kernel, 1, 32, 0, 0, d);
}

#ifdef EMU_TEST_ASAN
static const char OVERFLOW_REPORT[] = "heap-buffer-overflow";
#else
static const char OVERFLOW_REPORT[] = "shared memory written 0 byte(s) beyond the";
#endif

MG_TEST(emu_check_shared_memory_bounds)
{
    emu_expect_death(t, dyn_overflow_child, OVERFLOW_REPORT);
    emu_expect_death(t, static_overflow_child, OVERFLOW_REPORT);
    emu_expect_death(t, big_static_child, "static shared memory of 52000 bytes exceeds the 49152-byte limit");
}

/* Dynamic shared memory over 48 KiB needs cudaFuncSetAttribute, as on a GPU. */
static __global__ void big_dyn_kernel(float *x)
{
    MGK_DYN_SHARED(float, s);
    s[threadIdx.x * 400] = (float)threadIdx.x;
    __syncthreads();
    x[threadIdx.x] = s[((threadIdx.x + 1) % 32) * 400];
}

MG_TEST(emu_check_dynamic_shared_limit)
{
    const size_t bytes = 32 * 400 * sizeof(float); /* 51200 */
    float *d = emu_device<float>(t, 32);
    {
        emu_stderr_muted quiet;
        MGK_LAUNCH(big_dyn_kernel, 1, 32, bytes, 0, d);
    }
    MG_CHECK_EQ_INT(t, cudaGetLastError(), cudaErrorInvalidValue);
    EMU_OK(t, cudaFuncSetAttribute((const void *)big_dyn_kernel,
                                   cudaFuncAttributeMaxDynamicSharedMemorySize, (int)bytes));
    MGK_LAUNCH(big_dyn_kernel, 1, 32, bytes, 0, d);
    EMU_OK(t, cudaGetLastError());
    std::vector<float> h(32);
    cudaMemcpy(h.data(), d, 32 * sizeof(float), cudaMemcpyDeviceToHost);
    for (int i = 0; i < 32; i++) MG_CHECK_EQ_INT(t, h[i], (i + 1) % 32);
    EMU_OK(t, cudaFuncSetAttribute((const void *)big_dyn_kernel,
                                   cudaFuncAttributeMaxDynamicSharedMemorySize, 48 * 1024));
    cudaFree(d);
}

/* ---- kernel arguments ------------------------------------------------------------------- */

static __global__ void touch_kernel(int *x) { x[threadIdx.x] = 1; }

static void host_pointer_child(void)
{
    static int host[32];
    MGK_LAUNCH(touch_kernel, 1, 32, 0, 0, host);
}

MG_TEST(emu_check_host_pointer_argument)
{
    emu_expect_death(t, host_pointer_child, "argument 1 of kernel touch_kernel");
}

/* ---- fiber stacks ----------------------------------------------------------------------- */

static __device__ int deep(int n)
{
    volatile char pad[1024];
    pad[0] = (char)n;
    return n > 0 ? deep(n - 1) + pad[0] : 0;
}

/* 2000 frames of over 1 KiB: beyond a 256 KiB fiber stack, into its guard page. */
static __global__ void deep_kernel(int *x)
{
    __syncthreads(); /* runs on a fiber of its own */
    x[threadIdx.x] = deep(2000 + (int)threadIdx.x);
}

static void stack_overflow_child(void) { MGK_LAUNCH(deep_kernel, 1, 32, 0, 0, child_buffer(32)); }

MG_TEST(emu_check_fiber_stack_overflow)
{
#ifdef EMU_TEST_ASAN
    emu_expect_death(t, stack_overflow_child, "AddressSanitizer");
#else
    emu_expect_death(t, stack_overflow_child, "fiber stack overflow in kernel deep_kernel");
#endif
}

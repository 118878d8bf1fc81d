/* test_emu_cudart.cu — the runtime shim: memory, copies, streams, events, errors, the device,
 * launch configuration errors; and the runner's own order check, run as a child. */
#include <stdlib.h>

#include <vector>

#include "emu_test_util.h"

MG_TEST(emu_cudart_memory)
{
    emu_stderr_muted quiet; /* the refusals below print their reasons */
    int *d = nullptr;
    EMU_OK(t, cudaMalloc((void **)&d, 10 * sizeof(int)));
    MG_CHECK(t, ((uintptr_t)d & 255) == 0);
    int fresh = 0;
    EMU_OK(t, cudaMemcpy(&fresh, d, sizeof fresh, cudaMemcpyDeviceToHost));
    MG_CHECK_EQ_INT(t, fresh, -1); /* uninitialised device memory is 0xff bytes */
    EMU_OK(t, cudaMemset(d, 0, 10 * sizeof(int)));
    int h[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10}, back[10] = {0};
    EMU_OK(t, cudaMemcpy(d + 2, h, 8 * sizeof(int), cudaMemcpyHostToDevice));
    EMU_OK(t, cudaMemcpy(back, d, sizeof back, cudaMemcpyDefault));
    MG_CHECK(t, back[0] == 0 && back[1] == 0 && back[2] == 1 && back[9] == 8);
    /* out of the block: refused, remembered for cudaGetLastError */
    MG_CHECK_EQ_INT(t, cudaMemcpy(d + 3, h, 8 * sizeof(int), cudaMemcpyHostToDevice), cudaErrorInvalidValue);
    MG_CHECK_EQ_INT(t, cudaPeekAtLastError(), cudaErrorInvalidValue);
    MG_CHECK_EQ_INT(t, cudaGetLastError(), cudaErrorInvalidValue);
    MG_CHECK_EQ_INT(t, cudaGetLastError(), cudaSuccess);
    MG_CHECK_EQ_INT(t, cudaMemcpy(h, back, sizeof h, cudaMemcpyDeviceToHost), cudaErrorInvalidValue);
    MG_CHECK_EQ_INT(t, cudaMemset(h, 0, sizeof h), cudaErrorInvalidValue);
    MG_CHECK_EQ_INT(t, cudaFree(h), cudaErrorInvalidValue);
    cudaGetLastError();
    int *e = nullptr;
    EMU_OK(t, cudaMalloc((void **)&e, 10 * sizeof(int)));
    EMU_OK(t, cudaMemcpy(e, d, 10 * sizeof(int), cudaMemcpyDeviceToDevice));
    EMU_OK(t, cudaMemcpy(back, e, sizeof back, cudaMemcpyDeviceToHost));
    MG_CHECK_EQ_INT(t, back[9], 8);
    EMU_OK(t, cudaFree(d));
    EMU_OK(t, cudaFree(e));
    EMU_OK(t, cudaFree(nullptr));
}

MG_TEST(emu_cudart_streams_events)
{
    emu_stderr_muted quiet; /* the refusals below print their reasons */
    cudaStream_t s;
    cudaEvent_t a, b;
    EMU_OK(t, cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
    EMU_OK(t, cudaEventCreate(&a));
    EMU_OK(t, cudaEventCreate(&b));
    float *d = emu_device<float>(t, 4), h[4] = {1, 2, 3, 4}, back[4];
    EMU_OK(t, cudaEventRecord(a, s));
    EMU_OK(t, cudaMemcpyAsync(d, h, sizeof h, cudaMemcpyHostToDevice, s));
    EMU_OK(t, cudaMemsetAsync(d, 0, sizeof(float), s));
    EMU_OK(t, cudaMemcpyAsync(back, d, sizeof back, cudaMemcpyDeviceToHost, s));
    EMU_OK(t, cudaEventRecord(b, s));
    EMU_OK(t, cudaEventSynchronize(b));
    EMU_OK(t, cudaStreamSynchronize(s));
    EMU_OK(t, cudaDeviceSynchronize());
    MG_CHECK(t, back[0] == 0 && back[3] == 4);
    float ms = -1;
    EMU_OK(t, cudaEventElapsedTime(&ms, a, b));
    MG_CHECK(t, ms >= 0);
    cudaEvent_t never;
    EMU_OK(t, cudaEventCreate(&never));
    MG_CHECK_EQ_INT(t, cudaEventElapsedTime(&ms, a, never), cudaErrorInvalidResourceHandle);
    cudaGetLastError();
    EMU_OK(t, cudaEventDestroy(never));
    EMU_OK(t, cudaEventDestroy(a));
    EMU_OK(t, cudaEventDestroy(b));
    EMU_OK(t, cudaStreamDestroy(s));
    MG_CHECK_EQ_INT(t, cudaStreamSynchronize(s), cudaErrorInvalidResourceHandle);
    cudaGetLastError();
    cudaFree(d);
}

MG_TEST(emu_cudart_device)
{
    emu_stderr_muted quiet; /* the refusals below print their reasons */
    int n = 0, dev = -1, v = 0;
    EMU_OK(t, cudaGetDeviceCount(&n));
    MG_CHECK_EQ_INT(t, n, 1);
    EMU_OK(t, cudaSetDevice(0));
    EMU_OK(t, cudaGetDevice(&dev));
    MG_CHECK_EQ_INT(t, dev, 0);
    MG_CHECK_EQ_INT(t, cudaSetDevice(1), cudaErrorInvalidDevice);
    cudaGetLastError();
    cudaDeviceProp p;
    EMU_OK(t, cudaGetDeviceProperties(&p, 0));
    MG_CHECK(t, p.major == 9 && p.minor == 0 && p.warpSize == 32 && p.maxThreadsPerBlock == 1024);
    MG_CHECK(t, strstr(p.name, "emulated") != nullptr);
    EMU_OK(t, cudaDeviceGetAttribute(&v, cudaDevAttrMaxSharedMemoryPerBlockOptin, 0));
    MG_CHECK_EQ_INT(t, v, 232448);
    EMU_OK(t, cudaDeviceGetAttribute(&v, cudaDevAttrWarpSize, 0));
    MG_CHECK_EQ_INT(t, v, warpSize);
    MG_CHECK_EQ_INT(t, cudaDeviceGetAttribute(&v, cudaDevAttrClockRate, 0), cudaErrorInvalidValue);
    cudaGetLastError();
    MG_CHECK(t, strcmp(cudaGetErrorString(cudaErrorInvalidConfiguration), "invalid configuration argument") == 0);
}

static __global__ void fill_kernel(int *x, int v) { x[blockIdx.x * blockDim.x + threadIdx.x] = v; }

MG_TEST(emu_cudart_launch_configuration)
{
    emu_stderr_muted quiet; /* the refusals below print their reasons */
    int *d = emu_device<int>(t, 2048);
    MGK_LAUNCH(fill_kernel, 1, 1025, 0, 0, d, 1);
    MG_CHECK_EQ_INT(t, cudaGetLastError(), cudaErrorInvalidConfiguration);
    MGK_LAUNCH(fill_kernel, 0, 32, 0, 0, d, 1);
    MG_CHECK_EQ_INT(t, cudaGetLastError(), cudaErrorInvalidConfiguration);
    MGK_LAUNCH(fill_kernel, dim3(1, 1, 1), dim3(1, 1, 65), 0, 0, d, 1);
    MG_CHECK_EQ_INT(t, cudaGetLastError(), cudaErrorInvalidConfiguration);
    cudaStream_t s;
    EMU_OK(t, cudaStreamCreate(&s));
    MGK_LAUNCH(fill_kernel, 2, 1024, 0, s, d, 7);
    EMU_OK(t, cudaGetLastError());
    EMU_OK(t, cudaStreamDestroy(s));
    MGK_LAUNCH(fill_kernel, 2, 1024, 0, s, d, 8); /* destroyed stream */
    MG_CHECK_EQ_INT(t, cudaGetLastError(), cudaErrorInvalidResourceHandle);
    std::vector<int> h(2048);
    cudaMemcpy(h.data(), d, h.size() * sizeof(int), cudaMemcpyDeviceToHost);
    for (int v : h) MG_CHECK_EQ_INT(t, v, 7);
    cudaFree(d);
}

/* ---- the runner's order check ----------------------------------------------------------- */

/* out[t] = x[t + 1] through shared memory; the barrier only when `sync`. */
static __global__ void neighbour_kernel(const int *x, int *out, int sync)
{
    MGK_SHARED(int, s, 64);
    s[threadIdx.x] = x[threadIdx.x];
    if (sync) __syncthreads();
    out[threadIdx.x] = s[(threadIdx.x + 1) % 64];
}

/* With the barrier it must give x[t + 1]. Under MGK_EMU_RACE_DEMO=1 (set only by
 * emu_runner_catches_races for its child) it runs without the barrier and checks nothing:
 * the runner must then fail it by comparing the thread orders. */
MG_TEST(emu_runner_race_demo)
{
    int race = getenv("MGK_EMU_RACE_DEMO") && strcmp(getenv("MGK_EMU_RACE_DEMO"), "1") == 0;
    std::vector<int> x(64), out(64);
    for (int i = 0; i < 64; i++) x[i] = 3 * i;
    int *dx = emu_device<int>(t, 64, x.data()), *dout = emu_device<int>(t, 64);
    MGK_LAUNCH(neighbour_kernel, 1, 64, 0, 0, dx, dout, race ? 0 : 1);
    cudaMemcpy(out.data(), dout, 64 * sizeof(int), cudaMemcpyDeviceToHost);
    for (int i = 0; i < 64 && !race; i++) MG_CHECK_EQ_INT(t, out[i], 3 * ((i + 1) % 64));
    cudaFree(dx);
    cudaFree(dout);
}

static void race_demo_child(void)
{
    setenv("MGK_EMU_RACE_DEMO", "1", 1);
    setenv("MGK_EMU_ORDERS", "fwd rev random:1", 1);
    char self[] = "/proc/self/exe", name[] = "emu_runner_race_demo";
    char *argv[] = {self, name, nullptr};
    dup2(2, 1); /* the runner's FAIL lines and summary go to stdout */
    execv(self, argv);
    _exit(127);
}

MG_TEST(emu_runner_catches_races)
{
    int status = 0;
    const char *out = emu_run_child(race_demo_child, &status);
    MG_CHECK(t, WIFEXITED(status) && WEXITSTATUS(status) == 1);
    MG_CHECK(t, strstr(out, "results copied to the host differ between thread orders fwd and rev") != nullptr);
    MG_CHECK(t, strstr(out, "0 passed, 1 failed") != nullptr);
}

/* test_emu_streams.cu — streams mode "late" (emu_control.h): an upload on a copy stream that
 * a kernel on the compute stream reads without waiting for its event shows the old contents;
 * with cudaStreamWaitEvent it shows the new ones; a stream's own order, a synchronisation and
 * the default stream's copies see everything issued before them. */
#include <vector>

#include "cuda_emu/emu_control.h"
#include "emu_test_util.h"

static __global__ void copy_kernel(int *out, const int *in, int n)
{
    int i = (int)(blockIdx.x * blockDim.x + threadIdx.x);
    if (i < n) out[i] = in[i];
}

/* Streams mode "late" for the scope's lifetime, then issue order again. */
struct late_scope {
    late_scope() { mgk_emu_set_late_streams(1); }
    ~late_scope() { mgk_emu_set_late_streams(0); }
};

static std::vector<int> read_back(mg_test_ctx *t, const int *d, int n)
{
    std::vector<int> h((size_t)n);
    EMU_OK(t, cudaMemcpy(h.data(), d, (size_t)n * sizeof(int), cudaMemcpyDeviceToHost));
    return h;
}

MG_TEST(emu_late_streams_expose_a_missing_wait)
{
    late_scope late;
    const int n = 8;
    std::vector<int> zero((size_t)n, 0), host((size_t)n);
    for (int i = 0; i < n; i++) host[(size_t)i] = i + 1;
    int *in = emu_device<int>(t, n, zero.data()), *out = emu_device<int>(t, n, zero.data());
    cudaStream_t copy, compute;
    cudaEvent_t copied;
    EMU_OK(t, cudaStreamCreate(&copy));
    EMU_OK(t, cudaStreamCreate(&compute));
    EMU_OK(t, cudaEventCreate(&copied));
    EMU_OK(t, cudaMemcpyAsync(in, host.data(), n * sizeof(int), cudaMemcpyHostToDevice, copy));
    EMU_OK(t, cudaEventRecord(copied, copy));
    MGK_LAUNCH(copy_kernel, 1, 32, 0, compute, out, in, n); /* no wait: the old contents */
    EMU_OK(t, cudaStreamSynchronize(compute));
    EMU_OK(t, cudaMemcpyAsync(in, zero.data(), n * sizeof(int), cudaMemcpyHostToDevice, copy));
    MG_CHECK(t, read_back(t, out, n) == zero);
    /* the wait orders the upload (and nothing issued after the event) before the kernel */
    EMU_OK(t, cudaMemcpyAsync(in, host.data(), n * sizeof(int), cudaMemcpyHostToDevice, copy));
    EMU_OK(t, cudaEventRecord(copied, copy));
    EMU_OK(t, cudaMemsetAsync(in, 0, n * sizeof(int), copy)); /* after the event */
    EMU_OK(t, cudaStreamWaitEvent(compute, copied, 0));
    MGK_LAUNCH(copy_kernel, 1, 32, 0, compute, out, in, n);
    EMU_OK(t, cudaStreamSynchronize(compute));
    MG_CHECK(t, read_back(t, out, n) == host);
    MG_CHECK(t, read_back(t, in, n) == zero); /* the default stream waited for the memset */
    /* a host buffer changed before its copy ran is copied as changed */
    std::vector<int> staging = host;
    EMU_OK(t, cudaMemcpyAsync(in, staging.data(), n * sizeof(int), cudaMemcpyHostToDevice, copy));
    staging[0] = 100;
    EMU_OK(t, cudaStreamSynchronize(copy));
    MG_CHECK_EQ_INT(t, read_back(t, in, n)[0], 100);
    EMU_OK(t, cudaEventDestroy(copied));
    EMU_OK(t, cudaStreamDestroy(copy));
    EMU_OK(t, cudaStreamDestroy(compute));
    EMU_OK(t, cudaFree(in));
    EMU_OK(t, cudaFree(out));
}

MG_TEST(emu_issue_order_streams_run_at_once)
{
    const int n = 4;
    std::vector<int> zero((size_t)n, 0), host = {1, 2, 3, 4};
    int *in = emu_device<int>(t, n, zero.data()), *out = emu_device<int>(t, n, zero.data());
    cudaStream_t copy, compute;
    EMU_OK(t, cudaStreamCreate(&copy));
    EMU_OK(t, cudaStreamCreate(&compute));
    EMU_OK(t, cudaMemcpyAsync(in, host.data(), n * sizeof(int), cudaMemcpyHostToDevice, copy));
    MGK_LAUNCH(copy_kernel, 1, 32, 0, compute, out, in, n);
    MG_CHECK(t, read_back(t, out, n) == host);
    EMU_OK(t, cudaStreamDestroy(copy));
    EMU_OK(t, cudaStreamDestroy(compute));
    EMU_OK(t, cudaFree(in));
    EMU_OK(t, cudaFree(out));
}

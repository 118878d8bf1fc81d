/* runtime.cu — the MGK_CUDA context (stream, cuBLASLt handle, workspaces), device memory,
 * synchronisation, timing and device queries of kernels_cuda.h, and the error check every
 * launcher uses. Host code only.
 */
#include "cuda_portable.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda_common.cuh"

#define LT_WS_BYTES ((size_t)32 << 20) /* cuBLASLt workspace, as llm.c */
#define WS_BYTES ((size_t)32 << 20)    /* the kernels' own workspace */

void mgk_cuda_check_at(cudaError_t e, const char *expr, const char *file, int line)
{
    if (e == cudaSuccess) return;
    char msg[512];
    snprintf(msg, sizeof msg, "%s: CUDA error %d: %s", expr, (int)e, cudaGetErrorString(e));
    mg_assert_fail(msg, file, line);
}

void *mgk_cuda_ws(const mg_kctx *k, size_t bytes)
{
    MG_ASSERT(bytes <= k->cuda->ws_bytes);
    return k->cuda->ws;
}

static mg_status cuda_status(cudaError_t e, const char *what)
{
    if (e == cudaSuccess) return MG_OK;
    mg_status st = e == cudaErrorMemoryAllocation ? MG_ERR_NOMEM : MG_ERR_IO;
    return mg_error_set(st, "cuda: %s: %s", what, cudaGetErrorString(e));
}

static mg_status state_init(struct mgk_cuda_state *s)
{
    MG_FORWARD(cuda_status(cudaStreamCreate(&s->stream), "cannot create a stream"));
    MG_FORWARD(cuda_status(cudaStreamCreate(&s->copy_stream), "cannot create a stream"));
    MG_FORWARD(cuda_status(cudaEventCreate(&s->copied), "cannot create an event"));
    MG_FORWARD(cuda_status(cudaMalloc(&s->ws, WS_BYTES), "cannot allocate the workspace"));
    s->ws_bytes = WS_BYTES;
    MG_FORWARD(cuda_status(cudaMalloc(&s->lt_ws, LT_WS_BYTES),
                           "cannot allocate the cuBLASLt workspace"));
    s->lt_ws_bytes = LT_WS_BYTES;
    if (cublasLtCreate(&s->lt) != CUBLAS_STATUS_SUCCESS)
        return mg_error_set(MG_ERR_IO, "cuda: cannot create a cuBLASLt handle");
    return MG_OK;
}

mg_status mgk_cuda_ctx_init(mg_kctx *k)
{
    int n = mgk_cuda_device_count();
    MG_RETURN_IF(n < 1, MG_ERR_UNSUPPORTED, "cuda: no CUDA device");
    struct mgk_cuda_state *s = (struct mgk_cuda_state *)calloc(1, sizeof *s);
    MG_RETURN_IF(!s, MG_ERR_NOMEM, "cuda: cannot allocate the context");
    k->cuda = s;
    mg_status st = state_init(s);
    if (st != MG_OK) mgk_cuda_ctx_free(k);
    return st;
}

size_t mgk_cuda_ctx_bytes(void)
{
    return WS_BYTES + LT_WS_BYTES;
}

mg_status mgk_cuda_ctx_reserve(mg_kctx *k, int64_t numel)
{
    void *p = NULL;
    MG_FORWARD(cuda_status(cudaMalloc(&p, (size_t)numel * sizeof(float)),
                           "cannot allocate the scratch"));
    if (k->scratch) MGK_CUDA_CHECK(cudaFree(k->scratch)); /* cudaFree waits for its users */
    k->scratch = (float *)p;
    k->scratch_numel = numel;
    return MG_OK;
}

void mgk_cuda_ctx_free(mg_kctx *k)
{
    struct mgk_cuda_state *s = k->cuda;
    if (k->scratch) cudaFree(k->scratch);
    k->scratch = NULL;
    k->scratch_numel = 0;
    if (!s) return;
    if (s->stream) cudaStreamSynchronize(s->stream);
    if (s->lt) cublasLtDestroy(s->lt);
    if (s->lt_ws) cudaFree(s->lt_ws);
    if (s->ws) cudaFree(s->ws);
    if (s->stream) cudaStreamDestroy(s->stream);
    if (s->copy_stream) cudaStreamSynchronize(s->copy_stream);
    if (s->copied) cudaEventDestroy(s->copied);
    if (s->copy_stream) cudaStreamDestroy(s->copy_stream);
    free(s);
    k->cuda = NULL;
}

void *mgk_cuda_alloc(size_t bytes)
{
    void *p = NULL;
    if (cuda_status(cudaMalloc(&p, bytes), "cannot allocate device memory") != MG_OK) return NULL;
    return p;
}

void mgk_cuda_free(void *p)
{
    if (p) MGK_CUDA_CHECK(cudaFree(p));
}

mg_status mgk_cuda_upload(void *dst, const void *src, size_t bytes)
{
    return cuda_status(cudaMemcpy(dst, src, bytes, cudaMemcpyHostToDevice), "upload");
}

mg_status mgk_cuda_download(void *dst, const void *src, size_t bytes)
{
    return cuda_status(cudaMemcpy(dst, src, bytes, cudaMemcpyDeviceToHost), "download");
}

mg_status mgk_cuda_clear(void *dst, size_t bytes)
{
    return cuda_status(cudaMemset(dst, 0, bytes), "memset");
}

void *mgk_cuda_host_alloc(size_t bytes)
{
    void *p = NULL;
    if (cuda_status(cudaMallocHost(&p, bytes), "cannot allocate pinned host memory") != MG_OK)
        return NULL;
    memset(p, 0, bytes);
    return p;
}

void mgk_cuda_host_free(void *p)
{
    if (p) MGK_CUDA_CHECK(cudaFreeHost(p));
}

/* The copy stream queues the upload after the previous ones; the compute stream waits for
 * it before anything queued later. */
mg_status mgk_cuda_upload_async(const mg_kctx *k, void *dst, const void *src, size_t bytes)
{
    struct mgk_cuda_state *s = k->cuda;
    MG_FORWARD(cuda_status(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyHostToDevice,
                                           s->copy_stream), "upload"));
    MG_FORWARD(cuda_status(cudaEventRecord(s->copied, s->copy_stream), "event"));
    return cuda_status(cudaStreamWaitEvent(s->stream, s->copied, 0), "stream wait");
}

mg_status mgk_cuda_event_record(const mg_kctx *k, void **ev)
{
    cudaEvent_t e;
    MG_FORWARD(cuda_status(cudaEventCreate(&e), "event"));
    *ev = e;
    return cuda_status(cudaEventRecord(e, mgk_stream(k)), "event record");
}

mg_status mgk_cuda_event_elapsed(const void *a, const void *b, double *ms)
{
    float t = 0.0f;
    cudaEvent_t ea = (cudaEvent_t)(uintptr_t)a, eb = (cudaEvent_t)(uintptr_t)b;
    MG_FORWARD(cuda_status(cudaEventSynchronize(eb), "kernel failed"));
    MG_FORWARD(cuda_status(cudaEventElapsedTime(&t, ea, eb), "elapsed time"));
    *ms = (double)t;
    return MG_OK;
}

void mgk_cuda_event_free(void *ev)
{
    if (ev) cudaEventDestroy((cudaEvent_t)ev);
}

mg_status mgk_cuda_set_device(int ordinal)
{
    return cuda_status(cudaSetDevice(ordinal), "cannot select the device");
}

void *mgk_cuda_stream_handle(const mg_kctx *k) { return (void *)mgk_stream(k); }

mg_status mgk_cuda_sync(const mg_kctx *k)
{
    MG_FORWARD(cuda_status(cudaStreamSynchronize(k->cuda->copy_stream), "upload failed"));
    return cuda_status(cudaStreamSynchronize(mgk_stream(k)), "kernel failed");
}

mg_status mgk_cuda_time(const mg_kctx *k, void (*fn)(void *arg), void *arg, int reps, double *ms)
{
    cudaEvent_t a, b;
    MG_FORWARD(cuda_status(cudaEventCreate(&a), "event"));
    MG_FORWARD(cuda_status(cudaEventCreate(&b), "event"));
    MGK_CUDA_CHECK(cudaEventRecord(a, mgk_stream(k)));
    for (int i = 0; i < reps; i++) fn(arg);
    MGK_CUDA_CHECK(cudaEventRecord(b, mgk_stream(k)));
    mg_status st = cuda_status(cudaEventSynchronize(b), "kernel failed");
    float total = 0.0f;
    if (st == MG_OK) st = cuda_status(cudaEventElapsedTime(&total, a, b), "elapsed time");
    cudaEventDestroy(a);
    cudaEventDestroy(b);
    *ms = (double)total / (reps > 0 ? reps : 1);
    return st;
}

int mgk_cuda_device_count(void)
{
    int n = 0;
    if (cudaGetDeviceCount(&n) != cudaSuccess) {
        cudaGetLastError(); /* clear the sticky "no device" error */
        return 0;
    }
    return n;
}

mg_status mgk_cuda_device_memory(size_t *bytes)
{
    int dev = 0;
    cudaDeviceProp p;
    MG_FORWARD(cuda_status(cudaGetDevice(&dev), "no current device"));
    MG_FORWARD(cuda_status(cudaGetDeviceProperties(&p, dev), "device properties"));
    *bytes = p.totalGlobalMem;
    return MG_OK;
}

mg_status mgk_cuda_device_info(char *name, size_t name_len, int *cc_major, int *cc_minor,
                               int *num_sms)
{
    int dev = 0;
    cudaDeviceProp p;
    MG_FORWARD(cuda_status(cudaGetDevice(&dev), "no current device"));
    MG_FORWARD(cuda_status(cudaGetDeviceProperties(&p, dev), "device properties"));
    snprintf(name, name_len, "%s", p.name);
    *cc_major = p.major;
    *cc_minor = p.minor;
    *num_sms = p.multiProcessorCount;
    return MG_OK;
}

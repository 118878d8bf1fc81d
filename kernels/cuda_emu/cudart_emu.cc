/* cudart_emu.cc — the CUDA runtime calls of cuda_portable.h's contract, on host memory, with
 * NVIDIA's own declarations (cuda_runtime_api.h).
 *
 * Contract:
 *   - Device memory is host memory from posix_memalign (256-byte aligned, exact size, so
 *     AddressSanitizer sees overflows), filled with 0xff bytes (NaN) as a GPU leaves it
 *     uninitialised. Every block is registered: copies and memsets outside a block, frees of
 *     unknown pointers and kernel pointer arguments outside all blocks are errors. Outside
 *     ASan builds, freed blocks of 1 MiB or more (up to 256 MiB in all) are kept for the next
 *     cudaMalloc of the same size: refilling them costs no page faults.
 *   - Streams and events are synchronous: work is done when the call returns; an event
 *     records the host clock. Errors are returned and kept for cudaGetLastError /
 *     cudaPeekAtLastError (per host thread).
 *   - One emulated device: "mgk-emu (emulated cc 9.0 on CPU)", warpSize 32, H100-like limits.
 *   - Device-to-host copies feed the result digest (emu_control.h).
 *   - Anything outside the contract's list is not defined here: a program that needs it does
 *     not link.
 */
#include "cuda_emu/emu_internal.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <set>
#include <vector>

extern "C" const int warpSize = 32;

struct CUstream_st {
    unsigned flags;
    /* streams mode "late": the copies and memsets issued on the stream and not run yet,
     * issued and run counting them (the queue holds numbers done..issued-1) */
    std::deque<std::function<void()>> pending;
    uint64_t issued, done;
};
struct CUevent_st {
    bool recorded;
    double ms;
    cudaStream_t stream; /* "late": the stream recorded on and its count then */
    uint64_t seq;
};

namespace mgk_emu {

static std::mutex g_mem_lock;
static std::map<uintptr_t, size_t> g_blocks; /* device memory: base -> bytes */
static std::set<const void *> g_streams, g_events;
static std::map<const void *, int> g_func_smem; /* kernel -> MaxDynamicSharedMemorySize */
static thread_local cudaError_t g_last = cudaSuccess;

static std::multimap<size_t, void *> g_spare; /* freed large blocks by size */
static size_t g_spare_bytes;
#ifdef MGK_EMU_ASAN
static const size_t SPARE_MIN = SIZE_MAX, SPARE_MAX = 0; /* ASan must see every free */
#else
static const size_t SPARE_MIN = (size_t)1 << 20, SPARE_MAX = (size_t)256 << 20;
#endif
static const size_t DEFAULT_DYN_SMEM = 48 * 1024;
static const int OPTIN_SMEM = 232448;

static cudaError_t ret(cudaError_t e)
{
    if (e != cudaSuccess) g_last = e;
    return e;
}

static cudaError_t misuse(cudaError_t e, const char *call, const char *why)
{
    fprintf(stderr, "mgk-emu: %s: %s (%s)\n", call, why, cudaGetErrorString(e));
    return ret(e);
}

void set_last_error(cudaError_t e) { ret(e); }

int device_range(const void *p, size_t n)
{
    std::lock_guard<std::mutex> hold(g_mem_lock);
    uintptr_t a = (uintptr_t)p;
    auto it = g_blocks.upper_bound(a);
    if (it == g_blocks.begin()) return 0;
    --it;
    return a - it->first <= it->second && n <= it->second - (a - it->first);
}

int stream_valid(cudaStream_t s)
{
    if (s == nullptr || s == cudaStreamLegacy || s == cudaStreamPerThread) return 1;
    std::lock_guard<std::mutex> hold(g_mem_lock);
    return g_streams.count(s) != 0;
}

size_t func_max_dynamic_smem(const void *func)
{
    std::lock_guard<std::mutex> hold(g_mem_lock);
    auto it = g_func_smem.find(func);
    return it == g_func_smem.end() ? DEFAULT_DYN_SMEM : (size_t)it->second;
}

/* ---- streams mode (emu_control.h mgk_emu_set_late_streams) ------------------------------- */

static int g_late = -1; /* -1: MGK_EMU_STREAMS not read yet */

static bool late_streams(void)
{
    if (g_late < 0) {
        const char *s = getenv("MGK_EMU_STREAMS");
        if (s && strcmp(s, "late") != 0 && strcmp(s, "issue") != 0) {
            fprintf(stderr, "mgk-emu: error: MGK_EMU_STREAMS=%s: expected issue or late\n", s);
            abort();
        }
        g_late = s && strcmp(s, "late") == 0;
    }
    return g_late == 1;
}

/* A stream whose copies wait ("late" mode; the default streams never do). */
static bool deferred(cudaStream_t s)
{
    return late_streams() && s && s != cudaStreamLegacy && s != cudaStreamPerThread;
}

/* Runs the stream's queued work up to number seq (exclusive), in issue order. */
static void run_until(cudaStream_t s, uint64_t seq)
{
    while (s->done < seq) {
        std::function<void()> f = std::move(s->pending.front());
        s->pending.pop_front();
        s->done++;
        f();
    }
}

/* What a device-wide synchronisation (or the legacy default stream) waits for. */
static void catch_up_all(void)
{
    if (!late_streams()) return;
    std::vector<cudaStream_t> all;
    {
        std::lock_guard<std::mutex> hold(g_mem_lock);
        for (const void *p : g_streams) all.push_back((cudaStream_t)const_cast<void *>(p));
    }
    for (cudaStream_t s : all) run_until(s, s->issued);
}

void stream_catch_up(cudaStream_t s)
{
    if (deferred(s)) run_until(s, s->issued);
    else catch_up_all();
}

/* Runs f now, or queues it on a deferred stream. */
static void issue(cudaStream_t s, std::function<void()> f)
{
    if (!deferred(s)) return f();
    s->pending.push_back(std::move(f));
    s->issued++;
}

bool stream_queue(cudaStream_t s, std::function<void()> f)
{
    if (!deferred(s)) return false;
    issue(s, std::move(f));
    return true;
}

static double now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Checks a copy's ranges for its kind; Default infers the kind from the registry. */
static cudaError_t copy_kind(const char *call, void *dst, const void *src, size_t n,
                             cudaMemcpyKind *kind)
{
    bool dd = device_range(dst, n), sd = device_range(src, n);
    if (*kind == cudaMemcpyDefault)
        *kind = sd ? (dd ? cudaMemcpyDeviceToDevice : cudaMemcpyDeviceToHost)
                   : (dd ? cudaMemcpyHostToDevice : cudaMemcpyHostToHost);
    bool need_dst = *kind == cudaMemcpyHostToDevice || *kind == cudaMemcpyDeviceToDevice;
    bool need_src = *kind == cudaMemcpyDeviceToHost || *kind == cudaMemcpyDeviceToDevice;
    if (*kind < cudaMemcpyHostToHost || *kind > cudaMemcpyDeviceToDevice)
        return misuse(cudaErrorInvalidMemcpyDirection, call, "unknown copy kind");
    if ((need_dst && !dd) || (need_src && !sd))
        return misuse(cudaErrorInvalidValue, call,
                      "device range outside every cudaMalloc block (wrong size or pointer?)");
    return cudaSuccess;
}

} /* namespace mgk_emu */

using namespace mgk_emu;

extern "C" void mgk_emu_set_late_streams(int on)
{
    if (g_late == 1) catch_up_all();
    g_late = on ? 1 : 0;
}

/* ---- memory ----------------------------------------------------------------------------- */

/* A kept block of exactly `size` bytes, or NULL. Call with g_mem_lock held. */
static void *spare_take(size_t size)
{
    auto it = g_spare.find(size);
    if (it == g_spare.end()) return nullptr;
    void *m = it->second;
    g_spare.erase(it);
    g_spare_bytes -= size;
    return m;
}

cudaError_t cudaMalloc(void **p, size_t size)
{
    if (!p) return misuse(cudaErrorInvalidValue, "cudaMalloc", "NULL result pointer");
    *p = nullptr;
    if (size == 0) return cudaSuccess;
    void *m;
    {
        std::lock_guard<std::mutex> hold(g_mem_lock);
        m = spare_take(size);
    }
    if (!m && (posix_memalign(&m, 256, size) != 0 || !m)) return ret(cudaErrorMemoryAllocation);
    memset(m, 0xff, size);
    std::lock_guard<std::mutex> hold(g_mem_lock);
    g_blocks[(uintptr_t)m] = size;
    *p = m;
    return cudaSuccess;
}

cudaError_t cudaFree(void *p)
{
    if (!p) return cudaSuccess;
    catch_up_all(); /* cudaFree synchronises the device */
    {
        std::lock_guard<std::mutex> hold(g_mem_lock);
        auto it = g_blocks.find((uintptr_t)p);
        if (it == g_blocks.end()) {
            fprintf(stderr, "mgk-emu: cudaFree(%p): not a cudaMalloc block\n", p);
            return ret(cudaErrorInvalidValue);
        }
        size_t size = it->second;
        g_blocks.erase(it);
        if (size >= SPARE_MIN && g_spare_bytes + size <= SPARE_MAX) {
            g_spare.emplace(size, p);
            g_spare_bytes += size;
            return cudaSuccess;
        }
    }
    free(p);
    return cudaSuccess;
}

/* A copy checked by copy_kind, on stream (the legacy default stream: now, after the work
 * every other stream still holds, as the default stream waits for blocking streams). */
static cudaError_t copy_on(const char *call, void *dst, const void *src, size_t count,
                           enum cudaMemcpyKind kind, cudaStream_t stream)
{
    if (count == 0) return cudaSuccess;
    cudaError_t e = copy_kind(call, dst, src, count, &kind);
    if (e != cudaSuccess) return e;
    if (!deferred(stream)) catch_up_all();
    issue(stream, [=] {
        memcpy(dst, src, count);
        if (kind == cudaMemcpyDeviceToHost) digest_add(dst, count);
    });
    return cudaSuccess;
}

cudaError_t cudaMemcpy(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind)
{
    return copy_on("cudaMemcpy", dst, src, count, kind, nullptr);
}

cudaError_t cudaMemcpyAsync(void *dst, const void *src, size_t count, enum cudaMemcpyKind kind,
                            cudaStream_t stream)
{
    if (!stream_valid(stream))
        return misuse(cudaErrorInvalidResourceHandle, "cudaMemcpyAsync", "unknown stream");
    return copy_on("cudaMemcpyAsync", dst, src, count, kind, stream);
}

static cudaError_t memset_on(const char *call, void *p, int value, size_t count,
                             cudaStream_t stream)
{
    if (count == 0) return cudaSuccess;
    if (!device_range(p, count))
        return misuse(cudaErrorInvalidValue, call, "range outside every cudaMalloc block");
    if (!deferred(stream)) catch_up_all();
    issue(stream, [=] { memset(p, value, count); });
    return cudaSuccess;
}

cudaError_t cudaMemset(void *p, int value, size_t count)
{
    return memset_on("cudaMemset", p, value, count, nullptr);
}

cudaError_t cudaMemsetAsync(void *p, int value, size_t count, cudaStream_t stream)
{
    if (!stream_valid(stream))
        return misuse(cudaErrorInvalidResourceHandle, "cudaMemsetAsync", "unknown stream");
    return memset_on("cudaMemsetAsync", p, value, count, stream);
}

/* Pinned host memory is ordinary host memory here (never in the device registry, so a
 * kernel given a pinned pointer is caught in strict mode, as device memory is expected). */
/* Device memory is what the registry holds; anything else is unregistered host memory
 * (pinned blocks included: they are ordinary host memory here). */
cudaError_t cudaPointerGetAttributes(struct cudaPointerAttributes *a, const void *p)
{
    if (!a) return misuse(cudaErrorInvalidValue, "cudaPointerGetAttributes", "NULL attributes");
    bool dev = p && device_range(p, 1);
    memset(a, 0, sizeof *a);
    a->type = dev ? cudaMemoryTypeDevice : cudaMemoryTypeUnregistered;
    a->device = 0;
    a->devicePointer = dev ? const_cast<void *>(p) : nullptr;
    a->hostPointer = dev ? nullptr : const_cast<void *>(p);
    return cudaSuccess;
}

cudaError_t cudaMallocHost(void **p, size_t size)
{
    if (!p) return misuse(cudaErrorInvalidValue, "cudaMallocHost", "NULL result pointer");
    *p = nullptr;
    if (size == 0) return cudaSuccess;
    if (posix_memalign(p, 256, size) != 0 || !*p) return ret(cudaErrorMemoryAllocation);
    return cudaSuccess;
}

cudaError_t cudaFreeHost(void *p)
{
    catch_up_all();
    free(p);
    return cudaSuccess;
}

/* ---- streams and events ----------------------------------------------------------------- */

cudaError_t cudaStreamCreateWithFlags(cudaStream_t *s, unsigned int flags)
{
    if (!s) return misuse(cudaErrorInvalidValue, "cudaStreamCreate", "NULL result pointer");
    *s = new CUstream_st{flags, {}, 0, 0};
    std::lock_guard<std::mutex> hold(g_mem_lock);
    g_streams.insert(*s);
    return cudaSuccess;
}

cudaError_t cudaStreamCreate(cudaStream_t *s) { return cudaStreamCreateWithFlags(s, 0); }

cudaError_t cudaStreamDestroy(cudaStream_t s)
{
    if (stream_valid(s)) stream_catch_up(s);
    {
        std::lock_guard<std::mutex> hold(g_mem_lock);
        if (!g_streams.erase(s))
            return misuse(cudaErrorInvalidResourceHandle, "cudaStreamDestroy", "unknown stream");
    }
    delete s;
    return cudaSuccess;
}

cudaError_t cudaStreamSynchronize(cudaStream_t s)
{
    if (!stream_valid(s))
        return misuse(cudaErrorInvalidResourceHandle, "cudaStreamSynchronize", "unknown stream");
    stream_catch_up(s);
    return cudaSuccess;
}

/* A stream's deferred work (MGK_EMU_STREAMS=late) runs when the stream is asked about:
 * a known stream is then complete. */
cudaError_t cudaStreamQuery(cudaStream_t s)
{
    if (!stream_valid(s))
        return misuse(cudaErrorInvalidResourceHandle, "cudaStreamQuery", "unknown stream");
    stream_catch_up(s);
    return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize(void)
{
    catch_up_all();
    return cudaSuccess;
}

static bool event_known(cudaEvent_t e)
{
    std::lock_guard<std::mutex> hold(g_mem_lock);
    return g_events.count(e) != 0;
}

cudaError_t cudaEventCreate(cudaEvent_t *e)
{
    if (!e) return misuse(cudaErrorInvalidValue, "cudaEventCreate", "NULL result pointer");
    *e = new CUevent_st{false, 0.0, nullptr, 0};
    std::lock_guard<std::mutex> hold(g_mem_lock);
    g_events.insert(*e);
    return cudaSuccess;
}

cudaError_t cudaEventDestroy(cudaEvent_t e)
{
    {
        std::lock_guard<std::mutex> hold(g_mem_lock);
        if (!g_events.erase(e))
            return misuse(cudaErrorInvalidResourceHandle, "cudaEventDestroy", "unknown event");
    }
    delete e;
    return cudaSuccess;
}

cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s)
{
    if (!event_known(e) || !stream_valid(s))
        return misuse(cudaErrorInvalidResourceHandle, "cudaEventRecord", "unknown event or stream");
    e->recorded = true;
    e->ms = now_ms();
    e->stream = deferred(s) ? s : nullptr;
    e->seq = deferred(s) ? s->issued : 0;
    return cudaSuccess;
}

/* Everything before the event's record must have run: in "late" mode that is when its
 * stream's queue runs up to the record (work issued on s afterwards runs after it). */
static void reach(cudaEvent_t e)
{
    if (e->stream && stream_valid(e->stream)) run_until(e->stream, e->seq);
}

cudaError_t cudaStreamWaitEvent(cudaStream_t s, cudaEvent_t e, unsigned int flags)
{
    if (!event_known(e) || !stream_valid(s) || flags != 0)
        return misuse(cudaErrorInvalidResourceHandle, "cudaStreamWaitEvent",
                      "unknown event or stream, or flags");
    reach(e); /* s's own queue keeps its order: work issued on s later runs after it */
    return cudaSuccess;
}

cudaError_t cudaEventSynchronize(cudaEvent_t e)
{
    if (!event_known(e))
        return misuse(cudaErrorInvalidResourceHandle, "cudaEventSynchronize", "unknown event");
    reach(e);
    return cudaSuccess;
}

cudaError_t cudaEventElapsedTime(float *ms, cudaEvent_t start, cudaEvent_t end)
{
    if (!ms) return misuse(cudaErrorInvalidValue, "cudaEventElapsedTime", "NULL result pointer");
    if (!event_known(start) || !event_known(end) || !start->recorded || !end->recorded)
        return misuse(cudaErrorInvalidResourceHandle, "cudaEventElapsedTime",
                      "event unknown or not recorded");
    *ms = (float)(end->ms - start->ms);
    return cudaSuccess;
}

/* ---- errors ----------------------------------------------------------------------------- */

cudaError_t cudaGetLastError(void)
{
    cudaError_t e = g_last;
    g_last = cudaSuccess;
    return e;
}

cudaError_t cudaPeekAtLastError(void) { return g_last; }

const char *cudaGetErrorString(cudaError_t e)
{
    switch (e) {
    case cudaSuccess: return "no error";
    case cudaErrorInvalidValue: return "invalid argument";
    case cudaErrorMemoryAllocation: return "out of memory";
    case cudaErrorInvalidConfiguration: return "invalid configuration argument";
    case cudaErrorInvalidMemcpyDirection: return "invalid copy direction for memcpy";
    case cudaErrorInvalidDevice: return "invalid device ordinal";
    case cudaErrorInvalidResourceHandle: return "invalid resource handle";
    case cudaErrorNotSupported: return "operation not supported";
    default: return "unrecognized error code (not used by the emulator)";
    }
}

/* ---- the device ------------------------------------------------------------------------- */

cudaError_t cudaGetDeviceCount(int *n)
{
    if (!n) return misuse(cudaErrorInvalidValue, "cudaGetDeviceCount", "NULL result pointer");
    *n = 1;
    return cudaSuccess;
}

cudaError_t cudaGetDevice(int *d)
{
    if (!d) return misuse(cudaErrorInvalidValue, "cudaGetDevice", "NULL result pointer");
    *d = 0;
    return cudaSuccess;
}

cudaError_t cudaSetDevice(int d)
{
    return d == 0 ? cudaSuccess : misuse(cudaErrorInvalidDevice, "cudaSetDevice", "one device");
}

cudaError_t cudaGetDeviceProperties(struct cudaDeviceProp *p, int d)
{
    if (!p || d != 0) return misuse(cudaErrorInvalidDevice, "cudaGetDeviceProperties", "device 0");
    memset(p, 0, sizeof *p);
    snprintf(p->name, sizeof p->name, "mgk-emu (emulated cc 9.0 on CPU)");
    p->totalGlobalMem = (size_t)80 << 30;
    p->sharedMemPerBlock = 48 * 1024;
    p->sharedMemPerBlockOptin = OPTIN_SMEM;
    p->sharedMemPerMultiprocessor = 233472;
    p->regsPerBlock = 65536;
    p->regsPerMultiprocessor = 65536;
    p->warpSize = 32;
    p->maxThreadsPerBlock = 1024;
    p->maxThreadsDim[0] = 1024, p->maxThreadsDim[1] = 1024, p->maxThreadsDim[2] = 64;
    p->maxGridSize[0] = 2147483647, p->maxGridSize[1] = 65535, p->maxGridSize[2] = 65535;
    p->totalConstMem = 65536;
    p->major = 9;
    p->minor = 0;
    p->multiProcessorCount = 132;
    p->maxThreadsPerMultiProcessor = 2048;
    p->l2CacheSize = 50 * 1024 * 1024;
    p->memoryBusWidth = 5120;
    return cudaSuccess;
}

static bool device_attribute(enum cudaDeviceAttr a, int *v)
{
    switch (a) {
    case cudaDevAttrMaxThreadsPerBlock: *v = 1024; return true;
    case cudaDevAttrMaxBlockDimX: *v = 1024; return true;
    case cudaDevAttrMaxBlockDimY: *v = 1024; return true;
    case cudaDevAttrMaxBlockDimZ: *v = 64; return true;
    case cudaDevAttrMaxGridDimX: *v = 2147483647; return true;
    case cudaDevAttrMaxGridDimY: *v = 65535; return true;
    case cudaDevAttrMaxGridDimZ: *v = 65535; return true;
    case cudaDevAttrMaxSharedMemoryPerBlock: *v = 48 * 1024; return true;
    case cudaDevAttrMaxSharedMemoryPerBlockOptin: *v = OPTIN_SMEM; return true;
    case cudaDevAttrMaxSharedMemoryPerMultiprocessor: *v = 233472; return true;
    case cudaDevAttrWarpSize: *v = 32; return true;
    case cudaDevAttrMultiProcessorCount: *v = 132; return true;
    case cudaDevAttrComputeCapabilityMajor: *v = 9; return true;
    case cudaDevAttrComputeCapabilityMinor: *v = 0; return true;
    case cudaDevAttrMaxThreadsPerMultiProcessor: *v = 2048; return true;
    case cudaDevAttrMaxRegistersPerBlock: *v = 65536; return true;
    case cudaDevAttrL2CacheSize: *v = 50 * 1024 * 1024; return true;
    default: return false;
    }
}

cudaError_t cudaDeviceGetAttribute(int *value, enum cudaDeviceAttr attr, int device)
{
    if (!value || device != 0)
        return misuse(cudaErrorInvalidValue, "cudaDeviceGetAttribute", "device 0");
    if (!device_attribute(attr, value)) {
        fprintf(stderr, "mgk-emu: cudaDeviceGetAttribute: attribute %d is not emulated "
                        "(add it to cudart_emu.cc)\n", (int)attr);
        return ret(cudaErrorInvalidValue);
    }
    return cudaSuccess;
}

cudaError_t cudaFuncSetAttribute(const void *func, enum cudaFuncAttribute attr, int value)
{
    if (attr == cudaFuncAttributePreferredSharedMemoryCarveout) return cudaSuccess;
    if (attr != cudaFuncAttributeMaxDynamicSharedMemorySize) {
        fprintf(stderr, "mgk-emu: cudaFuncSetAttribute: attribute %d is not emulated\n", (int)attr);
        return ret(cudaErrorInvalidValue);
    }
    if (!func || value < 0 || value > OPTIN_SMEM)
        return misuse(cudaErrorInvalidValue, "cudaFuncSetAttribute",
                      "MaxDynamicSharedMemorySize outside [0, 232448]");
    std::lock_guard<std::mutex> hold(g_mem_lock);
    g_func_smem[func] = value;
    return cudaSuccess;
}

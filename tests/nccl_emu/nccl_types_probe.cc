/* nccl_types_probe.cc — the NCCL host shim's calls that mg-train's backend does not make
 * yet, on every rank of an mpirun job (tests/interop/test_nccl_emu.py):
 *   - all-reduce, reduce-scatter and all-gather of bf16 and fp16: the sum of the ranks'
 *     values accumulated in fp32 and rounded once (so equal to the fp32 sum rounded to the
 *     type) and within half a unit in the last place (plus fp32's error) of the exact sum;
 *   - ncclAvg and ncclMax on fp32, ncclSum of int64 and ncclProd of int32;
 *   - a group whose receives are posted before the matching sends (a ring);
 *   - a host pointer and an unknown stream refused with ncclInvalidArgument.
 * Prints "types ok" (or the first mismatches) and exits 0 / 1.
 */
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>
#include <math.h>
#include <mpi.h>
#include <nccl.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <vector>

static int g_fails, g_rank, g_size;

static void expect(bool ok, const char *what, size_t i)
{
    if (ok) return;
    if (g_fails++ < 5) printf("rank %d: MISMATCH %s at %zu\n", g_rank, what, i);
}

static void must(ncclResult_t r, const char *what)
{
    if (r == ncclSuccess) return;
    fprintf(stderr, "nccl_types_probe: error: %s: %s\n", what, ncclGetErrorString(r));
    MPI_Abort(MPI_COMM_WORLD, 1);
}

/* Rank r's value at i: mixed signs and magnitudes. */
static double val(int r, size_t i)
{
    uint64_t h = ((uint64_t)r * 1000003u + i) * 0x9e3779b97f4a7c15ULL;
    double scale = (h >> 20) % 3 == 0 ? 64 : 0.015625;
    return (double)((int64_t)(h >> 40) - (1 << 23)) / 65536.0 * scale;
}

template <typename T> static T to(float x);
template <> __nv_bfloat16 to(float x) { return __float2bfloat16_rn(x); }
template <> __half to(float x) { return __float2half_rn(x); }
static float from(__nv_bfloat16 x) { return __bfloat162float(x); }
static float from(__half x) { return __half2float(x); }

/* A device copy of host, and back. */
template <typename T> static T *dev(const std::vector<T> &host)
{
    T *d = nullptr;
    cudaMalloc((void **)&d, host.size() * sizeof(T) + 1);
    cudaMemcpy(d, host.data(), host.size() * sizeof(T), cudaMemcpyHostToDevice);
    return d;
}

template <typename T> static std::vector<T> back(const T *d, size_t n)
{
    std::vector<T> h(n);
    cudaMemcpy(h.data(), d, n * sizeof(T), cudaMemcpyDeviceToHost);
    return h;
}

/* Rank r's contribution to element i, already of the type (bf: bf16, else fp16). */
static double val_t(int r, size_t i, bool bf)
{
    float x = (float)val(r, i);
    return bf ? from(to<__nv_bfloat16>(x)) : from(to<__half>(x));
}

template <typename T>
static void half_types(ncclComm_t comm, cudaStream_t s, ncclDataType_t t, double ulp,
                       const char *name)
{
    const size_t n = 1001 + 7 * (size_t)g_size, m = n / (size_t)g_size;
    bool bf = t == ncclBfloat16;
    std::vector<T> h(n);
    for (size_t i = 0; i < n; i++) h[i] = to<T>((float)val_t(g_rank, i, bf));
    T *d = dev(h), *g = dev(std::vector<T>(m * (size_t)g_size));
    must(ncclAllReduce(d, d, n, t, ncclSum, comm, s), name);
    std::vector<T> got = back(d, n);
    for (size_t i = 0; i < n; i++) {
        float f = (float)val_t(0, i, bf);
        double exact = val_t(0, i, bf), mass = fabs(exact);
        for (int r = 1; r < g_size; r++) {
            f += (float)val_t(r, i, bf);
            exact += val_t(r, i, bf);
            mass += fabs(val_t(r, i, bf));
        }
        expect(from(got[i]) == from(to<T>(f)), name, i);
        /* T's rounding, fp32's accumulation, fp16's subnormal spacing */
        double tol = ulp / 2 * fabs(exact) + ldexp(mass, -22) + ldexp(1.0, -24);
        expect(fabs((double)from(got[i]) - exact) <= tol, name, i);
    }
    cudaMemcpy(d, h.data(), n * sizeof(T), cudaMemcpyHostToDevice);
    must(ncclReduceScatter(d, g, m, t, ncclSum, comm, s), name);
    std::vector<T> mine = back(g, m);
    for (size_t i = 0; i < m; i++)
        expect(from(mine[i]) == from(got[(size_t)g_rank * m + i]), "reduce-scatter", i);
    must(ncclAllGather(g, d, m, t, comm, s), name);
    std::vector<T> all = back(d, m * (size_t)g_size);
    for (size_t i = 0; i < m * (size_t)g_size; i++)
        expect(from(all[i]) == from(got[i]), "all-gather", i);
    cudaFree(d);
    cudaFree(g);
}

/* ncclAvg and ncclMax of fp32, ncclSum of int64, ncclProd of int32. */
static void other_ops(ncclComm_t comm, cudaStream_t s)
{
    const size_t n = 257;
    std::vector<float> h(n);
    for (size_t i = 0; i < n; i++) h[i] = (float)val(g_rank, i);
    float *d = dev(h);
    must(ncclAllReduce(d, d, n, ncclFloat, ncclAvg, comm, s), "avg");
    std::vector<float> avg = back(d, n);
    cudaMemcpy(d, h.data(), n * sizeof(float), cudaMemcpyHostToDevice);
    must(ncclAllReduce(d, d, n, ncclFloat, ncclMax, comm, s), "max");
    std::vector<float> mx = back(d, n);
    for (size_t i = 0; i < n; i++) {
        float a = (float)val(0, i) * (1.0f / (float)g_size), m = (float)val(0, i);
        for (int r = 1; r < g_size; r++) {
            a += (float)val(r, i) * (1.0f / (float)g_size);
            m = fmaxf(m, (float)val(r, i));
        }
        expect(avg[i] == a, "avg", i);
        expect(mx[i] == m, "max", i);
    }
    std::vector<int64_t> big(n, (int64_t)1 << 40);
    std::vector<int32_t> two(n, g_rank + 2);
    int64_t *db = dev(big);
    int32_t *dt = dev(two);
    must(ncclAllReduce(db, db, n, ncclInt64, ncclSum, comm, s), "int64 sum");
    must(ncclAllReduce(dt, dt, n, ncclInt32, ncclProd, comm, s), "int32 prod");
    int32_t prod = 1;
    for (int r = 0; r < g_size; r++) prod *= r + 2;
    std::vector<int64_t> sb = back(db, n);
    std::vector<int32_t> pt = back(dt, n);
    for (size_t i = 0; i < n; i++) {
        expect(sb[i] == ((int64_t)g_size << 40), "int64 sum", i);
        expect(pt[i] == prod, "int32 prod", i);
    }
    cudaFree(d);
    cudaFree(db);
    cudaFree(dt);
}

/* A ring inside a group: every rank posts its receive before its send. */
static void ring(ncclComm_t comm, cudaStream_t s)
{
    std::vector<int32_t> mine(33, g_rank), none(33, -1);
    int32_t *out = dev(mine), *in = dev(none);
    must(ncclGroupStart(), "group start");
    must(ncclRecv(in, 33, ncclInt32, (g_rank + g_size - 1) % g_size, comm, s), "recv");
    must(ncclSend(out, 33, ncclInt32, (g_rank + 1) % g_size, comm, s), "send");
    must(ncclGroupEnd(), "group end");
    std::vector<int32_t> got = back(in, 33);
    for (size_t i = 0; i < 33; i++) expect(got[i] == (g_rank + g_size - 1) % g_size, "ring", i);
    cudaFree(out);
    cudaFree(in);
}

static void refusals(ncclComm_t comm, cudaStream_t s)
{
    float host[4] = {0, 0, 0, 0}, *d = dev(std::vector<float>(4));
    expect(ncclAllReduce(host, host, 4, ncclFloat, ncclSum, comm, s) == ncclInvalidArgument,
           "host pointer refused", 0);
    expect(ncclAllReduce(d, d, 4, ncclFloat, ncclSum, comm, (cudaStream_t)host) ==
               ncclInvalidArgument, "unknown stream refused", 0);
    cudaFree(d);
}

int main(void)
{
    MPI_Init(nullptr, nullptr);
    MPI_Comm_rank(MPI_COMM_WORLD, &g_rank);
    MPI_Comm_size(MPI_COMM_WORLD, &g_size);
    ncclUniqueId id;
    if (g_rank == 0) must(ncclGetUniqueId(&id), "ncclGetUniqueId");
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
    ncclComm_t comm;
    cudaStream_t s;
    cudaStreamCreate(&s);
    must(ncclCommInitRank(&comm, g_size, id, g_rank), "ncclCommInitRank");
    half_types<__nv_bfloat16>(comm, s, ncclBfloat16, 1.0 / 128, "bf16 all-reduce");
    half_types<__half>(comm, s, ncclFloat16, 1.0 / 1024, "fp16 all-reduce");
    other_ops(comm, s);
    ring(comm, s);
    refusals(comm, s);
    must(ncclCommDestroy(comm), "ncclCommDestroy");
    cudaStreamDestroy(s);
    printf(g_fails ? "types FAILED\n" : "types ok\n");
    MPI_Finalize();
    return g_fails ? 1 : 0;
}

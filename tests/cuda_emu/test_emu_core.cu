/* test_emu_core.cu — launches, ids, barriers, shared memory and atomics on the emulator. */
#include <algorithm>
#include <vector>

#include "emu_test_util.h"

/* out[g] = packed ids of the thread with global linear index g. */
static __global__ void ids_kernel(unsigned *out)
{
    unsigned tpb = blockDim.x * blockDim.y * blockDim.z;
    unsigned b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
    unsigned t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
    out[(size_t)b * tpb + t] = (threadIdx.x << 24) | (threadIdx.y << 16) | (threadIdx.z << 12) |
                               (blockIdx.x << 8) | (blockIdx.y << 4) | blockIdx.z;
}

MG_TEST(emu_launch_ids)
{
    dim3 grid(3, 2, 2), block(5, 3, 2);
    size_t n = 3 * 2 * 2 * 5 * 3 * 2;
    unsigned *d = emu_device<unsigned>(t, n);
    MGK_LAUNCH(ids_kernel, grid, block, 0, 0, d);
    EMU_OK(t, cudaGetLastError());
    std::vector<unsigned> h(n);
    EMU_OK(t, cudaMemcpy(h.data(), d, n * sizeof(unsigned), cudaMemcpyDeviceToHost));
    size_t i = 0;
    for (unsigned bz = 0; bz < 2; bz++)
        for (unsigned by = 0; by < 2; by++)
            for (unsigned bx = 0; bx < 3; bx++)
                for (unsigned tz = 0; tz < 2; tz++)
                    for (unsigned ty = 0; ty < 3; ty++)
                        for (unsigned tx = 0; tx < 5; tx++, i++)
                            MG_CHECK_EQ_INT(t, h[i], (tx << 24) | (ty << 16) | (tz << 12) |
                                                         (bx << 8) | (by << 4) | bz);
    EMU_OK(t, cudaFree(d));
}

/* Each block reverses its 128-element slice through static shared memory. */
static __global__ void reverse_kernel(float *x)
{
    MGK_SHARED(float, tile, 128);
    size_t base = (size_t)blockIdx.x * 128;
    tile[threadIdx.x] = x[base + threadIdx.x];
    __syncthreads();
    x[base + threadIdx.x] = tile[127 - threadIdx.x];
}

MG_TEST(emu_barrier_static_shared)
{
    const int nb = 4;
    std::vector<float> h(nb * 128);
    for (size_t i = 0; i < h.size(); i++) h[i] = (float)i;
    float *d = emu_device<float>(t, h.size(), h.data());
    MGK_LAUNCH(reverse_kernel, nb, 128, 0, 0, d);
    EMU_OK(t, cudaMemcpy(h.data(), d, h.size() * sizeof(float), cudaMemcpyDeviceToHost));
    for (int b = 0; b < nb; b++)
        for (int i = 0; i < 128; i++) MG_CHECK_EQ_INT(t, h[b * 128 + i], b * 128 + 127 - i);
    EMU_OK(t, cudaFree(d));
}

/* Tree sum of each block's slice in dynamic shared memory: barriers inside a loop. */
static __global__ void tree_sum_kernel(const int *x, int *out, int n)
{
    MGK_DYN_SHARED(int, s);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    s[threadIdx.x] = i < n ? x[i] : 0;
    __syncthreads();
    for (unsigned stride = blockDim.x / 2; stride > 0; stride /= 2) {
        if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
        __syncthreads();
    }
    if (threadIdx.x == 0) out[blockIdx.x] = s[0];
}

MG_TEST(emu_dynamic_shared_tree_sum)
{
    const int n = 1000, bs = 256, nb = (n + bs - 1) / bs;
    std::vector<int> h(n);
    for (int i = 0; i < n; i++) h[i] = i * 7 % 13 - 6;
    int *dx = emu_device<int>(t, n, h.data());
    int *dout = emu_device<int>(t, nb);
    MGK_LAUNCH(tree_sum_kernel, nb, bs, bs * sizeof(int), 0, dx, dout, n);
    EMU_OK(t, cudaGetLastError());
    std::vector<int> got(nb);
    EMU_OK(t, cudaMemcpy(got.data(), dout, nb * sizeof(int), cudaMemcpyDeviceToHost));
    for (int b = 0; b < nb; b++) {
        int want = 0;
        for (int i = b * bs; i < n && i < (b + 1) * bs; i++) want += h[i];
        MG_CHECK_EQ_INT(t, got[b], want);
    }
    cudaFree(dx);
    cudaFree(dout);
}

/* Counts how often each thread body runs, around two barriers. */
static __global__ void count_runs_kernel(int *runs, int *total)
{
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&runs[g], 1);
    __syncthreads();
    atomicAdd(total, 1);
    __syncthreads();
}

MG_TEST(emu_threads_run_once)
{
    const int nb = 3, bs = 96;
    int *runs = emu_device<int>(t, nb * bs), *total = emu_device<int>(t, 1);
    EMU_OK(t, cudaMemset(runs, 0, nb * bs * sizeof(int)));
    EMU_OK(t, cudaMemset(total, 0, sizeof(int)));
    MGK_LAUNCH(count_runs_kernel, nb, bs, 0, 0, runs, total);
    std::vector<int> h(nb * bs);
    int tot = 0;
    EMU_OK(t, cudaMemcpy(h.data(), runs, h.size() * sizeof(int), cudaMemcpyDeviceToHost));
    EMU_OK(t, cudaMemcpy(&tot, total, sizeof(int), cudaMemcpyDeviceToHost));
    for (int v : h) MG_CHECK_EQ_INT(t, v, 1);
    MG_CHECK_EQ_INT(t, tot, nb * bs);
    cudaFree(runs);
    cudaFree(total);
}

static __global__ void atomics_kernel(int *i, unsigned *u, unsigned long long *ull, float *f)
{
    int g = blockIdx.x * blockDim.x + threadIdx.x;
    atomicAdd(&i[0], 1);
    atomicMax(&i[1], g);
    atomicMin(&i[2], -g);
    atomicAdd(&u[0], 2u);
    atomicMax(&u[1], (unsigned)g * 3);
    atomicMin(&u[2], (unsigned)g + 5);
    atomicAdd(&ull[0], 1ull << 33);
    if (g == 17) atomicExch(&i[3], 42);
    if (g == 3) atomicCAS(&u[3], 5u, 9u); /* fails: u[3] is 0 */
    if (g == 4) atomicCAS(&u[3], 0u, 11u);
    if (g == 5) atomicCAS(&ull[1], 0ull, 77ull);
    atomicAdd(&f[0], 0.5f);
}

MG_TEST(emu_atomics)
{
    int *i = emu_device<int>(t, 4);
    unsigned *u = emu_device<unsigned>(t, 4);
    unsigned long long *ull = emu_device<unsigned long long>(t, 2);
    float *f = emu_device<float>(t, 1);
    int hi[4] = {0, -1, 0, 0};
    unsigned hu[4] = {0, 0, 1000, 0};
    unsigned long long hl[2] = {0, 0};
    float hf = 0;
    cudaMemcpy(i, hi, sizeof hi, cudaMemcpyHostToDevice);
    cudaMemcpy(u, hu, sizeof hu, cudaMemcpyHostToDevice);
    cudaMemcpy(ull, hl, sizeof hl, cudaMemcpyHostToDevice);
    cudaMemcpy(f, &hf, sizeof hf, cudaMemcpyHostToDevice);
    MGK_LAUNCH(atomics_kernel, 2, 64, 0, 0, i, u, ull, f);
    cudaMemcpy(hi, i, sizeof hi, cudaMemcpyDeviceToHost);
    cudaMemcpy(hu, u, sizeof hu, cudaMemcpyDeviceToHost);
    cudaMemcpy(hl, ull, sizeof hl, cudaMemcpyDeviceToHost);
    cudaMemcpy(&hf, f, sizeof hf, cudaMemcpyDeviceToHost);
    MG_CHECK_EQ_INT(t, hi[0], 128);
    MG_CHECK_EQ_INT(t, hi[1], 127);
    MG_CHECK_EQ_INT(t, hi[2], -127);
    MG_CHECK_EQ_INT(t, hi[3], 42);
    MG_CHECK_EQ_INT(t, hu[0], 256);
    MG_CHECK_EQ_INT(t, hu[1], 381);
    MG_CHECK_EQ_INT(t, hu[2], 5);
    MG_CHECK_EQ_INT(t, hu[3], 11);
    MG_CHECK(t, hl[0] == 128ull << 33);
    MG_CHECK_EQ_INT(t, hl[1], 77);
    MG_CHECK(t, hf == 64.0f);
    MG_CHECK(t, mgk_emu_float_atomics_used());
    cudaFree(i);
    cudaFree(u);
    cudaFree(ull);
    cudaFree(f);
}

/* Launches from several host threads take turns; each sees its own kernel's ids. */
static __global__ void block_sum_ids_kernel(int *out, int tag)
{
    MGK_SHARED(int, s, 64);
    s[threadIdx.x] = (int)threadIdx.x + tag;
    __syncthreads();
    if (threadIdx.x == 0) {
        int sum = 0;
        for (int i = 0; i < 64; i++) sum += s[i];
        out[blockIdx.x] = sum;
    }
}

MG_TEST(emu_launch_from_host_threads)
{
    const int nthreads = 4, nb = 8;
    int *d[nthreads];
    for (int i = 0; i < nthreads; i++) d[i] = emu_device<int>(t, nb);
#pragma omp parallel for num_threads(nthreads)
    for (int i = 0; i < nthreads; i++)
        for (int rep = 0; rep < 5; rep++) MGK_LAUNCH(block_sum_ids_kernel, nb, 64, 0, 0, d[i], 1000 * i);
    for (int i = 0; i < nthreads; i++) {
        int h[nb];
        cudaMemcpy(h, d[i], sizeof h, cudaMemcpyDeviceToHost);
        for (int b = 0; b < nb; b++) MG_CHECK_EQ_INT(t, h[b], 2016 + 64 * 1000 * i);
        cudaFree(d[i]);
    }
}

/* Logs the order blocks start in (thread 0 of each block) and the order the threads of
 * block 0 run after a barrier. */
static __global__ void order_log_kernel(int *block_log, int *thread_log, int *counters)
{
    if (threadIdx.x == 0) block_log[atomicAdd(&counters[0], 1)] = (int)blockIdx.x;
    __syncthreads();
    if (blockIdx.x == 0) thread_log[atomicAdd(&counters[1], 1)] = (int)threadIdx.x;
}

static void order_log(mg_test_ctx *t, mgk_emu_order o, std::vector<int> *blocks, std::vector<int> *threads)
{
    emu_order_scope scope(o, 11);
    const int nb = 16, bs = 64;
    int *bl = emu_device<int>(t, nb), *tl = emu_device<int>(t, bs), *c = emu_device<int>(t, 2);
    cudaMemset(c, 0, 2 * sizeof(int));
    MGK_LAUNCH(order_log_kernel, nb, bs, 0, 0, bl, tl, c);
    blocks->resize(nb);
    threads->resize(bs);
    cudaMemcpy(blocks->data(), bl, nb * sizeof(int), cudaMemcpyDeviceToHost);
    cudaMemcpy(threads->data(), tl, bs * sizeof(int), cudaMemcpyDeviceToHost);
    cudaFree(bl);
    cudaFree(tl);
    cudaFree(c);
}

MG_TEST(emu_orders_are_applied)
{
    std::vector<int> fb, ft, rb, rt, xb, xt;
    order_log(t, MGK_EMU_FWD, &fb, &ft);
    order_log(t, MGK_EMU_REV, &rb, &rt);
    order_log(t, MGK_EMU_RANDOM, &xb, &xt);
    std::vector<int> sb = xb, st = xt;
    std::sort(sb.begin(), sb.end());
    std::sort(st.begin(), st.end());
    for (int i = 0; i < 16; i++) {
        MG_CHECK_EQ_INT(t, fb[i], i);
        MG_CHECK_EQ_INT(t, rb[i], 15 - i);
        MG_CHECK_EQ_INT(t, sb[i], i); /* a permutation */
    }
    for (int i = 0; i < 64; i++) {
        MG_CHECK_EQ_INT(t, ft[i], i);
        MG_CHECK_EQ_INT(t, rt[i], 63 - i);
        MG_CHECK_EQ_INT(t, st[i], i);
    }
    MG_CHECK(t, xb != fb && xb != rb);
    MG_CHECK(t, xt != ft && xt != rt);
}

/* min/max on the integer and floating types device code uses (int64_t is long here). */
static __global__ void minmax_kernel(long long *out, int64_t a, int64_t b)
{
    out[0] = min(a, b) + max((int)threadIdx.x, 3) + (long long)max(2.5, 1.0) +
             (long long)min(0.5f, 7.0f) + (long long)max((size_t)4, (size_t)9) + min(5u, 6u);
}

MG_TEST(emu_min_max)
{
    long long *d = emu_device<long long>(t, 1), h = 0;
    MGK_LAUNCH(minmax_kernel, 1, 1, 0, 0, d, (int64_t)-7, (int64_t)11);
    cudaMemcpy(&h, d, sizeof h, cudaMemcpyDeviceToHost);
    MG_CHECK_EQ_INT(t, h, -7 + 3 + 2 + 0 + 9 + 5);
    cudaFree(d);
}

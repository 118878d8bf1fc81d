/* test_emu_warp.cu — warp shuffles, votes and __syncwarp against host references that follow
 * CUDA's definitions (segments of `width` lanes; out-of-segment sources give the own value). */
#include <vector>

#include "emu_test_util.h"

enum { OP_IDX, OP_UP, OP_DOWN, OP_XOR };

/* out[i] = shuffle of v[i] = 1000 * i + 0.5, one shuffle per launch. */
static __global__ void shfl_kernel(float *out, int op, int b, int width)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = 1000.0f * (float)i + 0.5f;
    float r = 0;
    switch (op) {
    case OP_IDX: r = __shfl_sync(0xffffffffu, v, b, width); break;
    case OP_UP: r = __shfl_up_sync(0xffffffffu, v, (unsigned)b, width); break;
    case OP_DOWN: r = __shfl_down_sync(0xffffffffu, v, (unsigned)b, width); break;
    default: r = __shfl_xor_sync(0xffffffffu, v, b, width); break;
    }
    out[i] = r;
}

/* Host model: the lane that thread `lane` reads. */
static int expected_src(int op, int lane, int b, int width)
{
    int start = lane / width * width, end = start + width;
    int j = lane;
    switch (op) {
    case OP_IDX: j = start + (b % width + width) % width; break;
    case OP_UP: j = lane - b >= start ? lane - b : lane; break;
    case OP_DOWN: j = lane + b < end ? lane + b : lane; break;
    default: j = lane ^ b; if (j >= end) j = lane; break;
    }
    return j;
}

MG_TEST(emu_shuffles)
{
    const int n = 64;
    float *d = emu_device<float>(t, n);
    int ops[] = {OP_IDX, OP_UP, OP_DOWN, OP_XOR}, widths[] = {32, 16, 8, 4, 2, 1};
    int bs[] = {0, 1, 3, 5, 16, 31};
    std::vector<float> h(n);
    for (int op : ops)
        for (int w : widths)
            for (int b : bs) {
                if (op == OP_XOR && b >= w) continue; /* crosses segments: tested below */
                MGK_LAUNCH(shfl_kernel, 1, n, 0, 0, d, op, b, w);
                cudaMemcpy(h.data(), d, n * sizeof(float), cudaMemcpyDeviceToHost);
                for (int i = 0; i < n; i++) {
                    int lane = i % 32, warp = i / 32;
                    float want = 1000.0f * (float)(warp * 32 + expected_src(op, lane, b, w)) + 0.5f;
                    if (h[i] != want)
                        mg_test_fail(t, __FILE__, __LINE__, "op %d width %d b %d thread %d: %g != %g",
                                     op, w, b, i, h[i], want);
                }
            }
    /* xor with laneMask >= width reads the lower segment, as PTX's shfl.bfly does */
    MGK_LAUNCH(shfl_kernel, 1, 32, 0, 0, d, (int)OP_XOR, 8, 8);
    cudaMemcpy(h.data(), d, 32 * sizeof(float), cudaMemcpyDeviceToHost);
    MG_CHECK(t, h[8] == 0.5f && h[0] == 0.5f && h[24] == 16000.5f);
    cudaFree(d);
}

/* Warp sum by xor butterfly, inclusive scan by shfl_up, votes. */
static __global__ void reduce_scan_vote_kernel(const int *x, int *sum, int *scan, unsigned *votes)
{
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    int lane = threadIdx.x % 32;
    int v = x[i], s = v;
    for (int o = 16; o > 0; o /= 2) s += __shfl_xor_sync(0xffffffffu, s, o);
    sum[i] = s;
    int c = v;
    for (int o = 1; o < 32; o *= 2) {
        int up = __shfl_up_sync(0xffffffffu, c, (unsigned)o);
        if (lane >= o) c += up;
    }
    scan[i] = c;
    unsigned ballot = __ballot_sync(0xffffffffu, v > 0);
    int any = __any_sync(0xffffffffu, v > 5);
    int all = __all_sync(0xffffffffu, v > -100);
    __syncwarp();
    if (lane == 0) {
        int w = i / 32;
        votes[3 * w] = ballot;
        votes[3 * w + 1] = (unsigned)any;
        votes[3 * w + 2] = (unsigned)all;
    }
}

MG_TEST(emu_warp_reduce_scan_vote)
{
    const int n = 128, nw = n / 32;
    std::vector<int> x(n);
    for (int i = 0; i < n; i++) x[i] = (i * 37) % 11 - 5 + (i >= 96 ? 10 : 0);
    int *dx = emu_device<int>(t, n, x.data()), *ds = emu_device<int>(t, n), *dc = emu_device<int>(t, n);
    unsigned *dv = emu_device<unsigned>(t, 3 * nw);
    MGK_LAUNCH(reduce_scan_vote_kernel, 2, 64, 0, 0, dx, ds, dc, dv);
    std::vector<int> s(n), c(n);
    std::vector<unsigned> v(3 * nw);
    cudaMemcpy(s.data(), ds, n * sizeof(int), cudaMemcpyDeviceToHost);
    cudaMemcpy(c.data(), dc, n * sizeof(int), cudaMemcpyDeviceToHost);
    cudaMemcpy(v.data(), dv, v.size() * sizeof(unsigned), cudaMemcpyDeviceToHost);
    for (int w = 0; w < nw; w++) {
        int tot = 0, run = 0, any = 0, all = 1;
        unsigned ballot = 0;
        for (int l = 0; l < 32; l++) {
            int xv = x[w * 32 + l];
            tot += xv;
            if (xv > 0) ballot |= 1u << l;
            any |= xv > 5;
            all &= xv > -100;
        }
        for (int l = 0; l < 32; l++) {
            run += x[w * 32 + l];
            MG_CHECK_EQ_INT(t, s[w * 32 + l], tot);
            MG_CHECK_EQ_INT(t, c[w * 32 + l], run);
        }
        MG_CHECK_EQ_INT(t, v[3 * w], ballot);
        MG_CHECK_EQ_INT(t, v[3 * w + 1], any);
        MG_CHECK_EQ_INT(t, v[3 * w + 2], all);
    }
    cudaFree(dx);
    cudaFree(ds);
    cudaFree(dc);
    cudaFree(dv);
}

/* Divergent halves, each with its own mask: legal, and each half sums and votes over its own
 * lanes only. */
static __global__ void half_warp_kernel(int *out, unsigned *votes)
{
    int lane = threadIdx.x % 32;
    int v = lane;
    unsigned ballot;
    if (lane < 16) {
        for (int o = 8; o > 0; o /= 2) v += __shfl_down_sync(0x0000ffffu, v, (unsigned)o, 16);
        ballot = __ballot_sync(0x0000ffffu, lane % 3 == 0);
    } else {
        for (int o = 8; o > 0; o /= 2) v += __shfl_xor_sync(0xffff0000u, v, o, 16);
        ballot = __ballot_sync(0xffff0000u, lane % 5 == 0);
    }
    out[threadIdx.x] = v;
    votes[threadIdx.x] = ballot;
}

MG_TEST(emu_warp_divergent_masks)
{
    int *d = emu_device<int>(t, 64);
    unsigned *dv = emu_device<unsigned>(t, 64);
    MGK_LAUNCH(half_warp_kernel, 1, 64, 0, 0, d, dv);
    std::vector<int> h(64);
    std::vector<unsigned> votes(64);
    cudaMemcpy(h.data(), d, 64 * sizeof(int), cudaMemcpyDeviceToHost);
    cudaMemcpy(votes.data(), dv, 64 * sizeof(unsigned), cudaMemcpyDeviceToHost);
    for (int i = 0; i < 64; i++)
        MG_CHECK_EQ_INT(t, votes[i], i % 32 < 16 ? 0x9249u : (1u << 20 | 1u << 25 | 1u << 30));
    cudaFree(dv);
    for (int w = 0; w < 2; w++) {
        MG_CHECK_EQ_INT(t, h[w * 32], 120);      /* lane 0: 0 + 1 + ... + 15 */
        MG_CHECK_EQ_INT(t, h[w * 32 + 16], 376); /* every upper lane: 16 + ... + 31 */
        MG_CHECK_EQ_INT(t, h[w * 32 + 31], 376);
    }
    cudaFree(d);
}

/* A block-wide reduction as the kernels write it: warp shuffles, shared partials, a barrier. */
static __global__ void block_sum_kernel(const float *x, float *out, int n)
{
    MGK_SHARED(float, partial, 32);
    int i = blockIdx.x * blockDim.x + threadIdx.x;
    float v = i < n ? x[i] : 0.0f;
    for (int o = 16; o > 0; o /= 2) v += __shfl_xor_sync(0xffffffffu, v, o);
    if (threadIdx.x % 32 == 0) partial[threadIdx.x / 32] = v;
    __syncthreads();
    if (threadIdx.x < 32) {
        float p = threadIdx.x < blockDim.x / 32 ? partial[threadIdx.x] : 0.0f;
        for (int o = 16; o > 0; o /= 2) p += __shfl_xor_sync(0xffffffffu, p, o);
        if (threadIdx.x == 0) out[blockIdx.x] = p;
    }
}

MG_TEST(emu_block_reduction)
{
    const int n = 3000, bs = 256, nb = (n + bs - 1) / bs;
    std::vector<float> x(n);
    for (int i = 0; i < n; i++) x[i] = (float)(i % 17) * 0.25f;
    float *dx = emu_device<float>(t, n, x.data()), *dout = emu_device<float>(t, nb);
    MGK_LAUNCH(block_sum_kernel, nb, bs, 0, 0, dx, dout, n);
    std::vector<float> h(nb);
    cudaMemcpy(h.data(), dout, nb * sizeof(float), cudaMemcpyDeviceToHost);
    for (int b = 0; b < nb; b++) {
        float want = 0;
        for (int i = b * bs; i < n && i < (b + 1) * bs; i++) want += x[i];
        MG_CHECK(t, h[b] == want); /* exact: quarter-integers summed below 2^24 */
    }
    cudaFree(dx);
    cudaFree(dout);
}

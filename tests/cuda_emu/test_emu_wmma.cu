/* test_emu_wmma.cu — nvcuda::wmma bf16 16x16x16 fragments with float accumulators. */
#include <math.h>

#include <vector>

#include "emu_test_util.h"

using namespace nvcuda;

/* C (M x N, row-major fp32) = A (M x K, row-major bf16) * B (K x N, stored col-major: element
 * (k, n) at B[n * K + k]) + C0, one warp per 16x16 tile of C, then C *= scale elementwise. */
static __global__ void wmma_gemm_kernel(float *C, const __nv_bfloat16 *A, const __nv_bfloat16 *B,
                                        const float *C0, int M, int N, int K, float scale)
{
    int warp = (int)(threadIdx.x / 32);
    int tiles_n = N / 16;
    int tm = (blockIdx.x * (blockDim.x / 32) + warp) / tiles_n;
    int tn = (blockIdx.x * (blockDim.x / 32) + warp) % tiles_n;
    if (tm * 16 >= M) return; /* whole warps only, no barrier in this kernel */
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::row_major> a;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::col_major> b;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::load_matrix_sync(acc, C0 + (size_t)tm * 16 * N + tn * 16, (unsigned)N, wmma::mem_row_major);
    for (int k = 0; k < K; k += 16) {
        wmma::load_matrix_sync(a, A + (size_t)tm * 16 * K + k, (unsigned)K);
        wmma::load_matrix_sync(b, B + (size_t)tn * 16 * K + k, (unsigned)K);
        wmma::mma_sync(acc, a, b, acc);
    }
    for (int i = 0; i < acc.num_elements; i++) acc.x[i] *= scale;
    wmma::store_matrix_sync(C + (size_t)tm * 16 * N + tn * 16, acc, (unsigned)N, wmma::mem_row_major);
}

MG_TEST(emu_wmma_gemm)
{
    const int M = 32, N = 48, K = 64;
    std::vector<__nv_bfloat16> a(M * K), b(K * N);
    std::vector<float> c0(M * N), got(M * N);
    for (int i = 0; i < M * K; i++) a[i] = __float2bfloat16_rn((float)(i % 13) / 8.0f - 0.75f);
    for (int i = 0; i < K * N; i++) b[i] = __float2bfloat16_rn((float)(i % 7) / 4.0f - 0.5f);
    for (int i = 0; i < M * N; i++) c0[i] = (float)(i % 5);
    __nv_bfloat16 *da = emu_device(t, a.size(), a.data()), *db = emu_device(t, b.size(), b.data());
    float *dc0 = emu_device(t, c0.size(), c0.data()), *dc = emu_device<float>(t, M * N);
    int tiles = (M / 16) * (N / 16); /* 6 warps: 2 blocks of 4 warps, the last 2 warps idle */
    MGK_LAUNCH(wmma_gemm_kernel, (tiles + 3) / 4, 128, 0, 0, dc, da, db, dc0, M, N, K, 2.0f);
    EMU_OK(t, cudaGetLastError());
    cudaMemcpy(got.data(), dc, got.size() * sizeof(float), cudaMemcpyDeviceToHost);
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float s = c0[i * N + j];
            for (int k = 0; k < K; k++) s += __bfloat162float(a[i * K + k]) * __bfloat162float(b[j * K + k]);
            if (fabsf(got[i * N + j] - 2.0f * s) > 1e-3f * (1 + fabsf(s)))
                mg_test_fail(t, __FILE__, __LINE__, "C(%d,%d) = %g, want %g", i, j, got[i * N + j], 2 * s);
        }
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc0);
    cudaFree(dc);
}

/* Stores a tile to shared memory and reads a neighbour's element back: needs __syncwarp(). */
static __global__ void wmma_store_read_kernel(float *out, int with_syncwarp)
{
    MGK_SHARED(float, tile, 256);
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 3.0f);
    wmma::store_matrix_sync(tile, acc, 16, wmma::mem_row_major);
    if (with_syncwarp) __syncwarp();
    out[threadIdx.x] = tile[(threadIdx.x + 1) % 256];
}

MG_TEST(emu_wmma_store_needs_syncwarp)
{
    float *d = emu_device<float>(t, 32);
    std::vector<float> h(32);
    for (int with = 1; with >= 0; with--) {
        emu_order_scope fwd(MGK_EMU_FWD, 0);
        MGK_LAUNCH(wmma_store_read_kernel, 1, 32, 0, 0, d, with);
        cudaMemcpy(h.data(), d, 32 * sizeof(float), cudaMemcpyDeviceToHost);
        if (with)
            for (int i = 0; i < 32; i++) MG_CHECK(t, h[i] == 3.0f);
        else
            MG_CHECK(t, isnan(h[0])); /* lane 0 read lane 1's element before lane 1 stored it */
    }
    cudaFree(d);
}

/* A lane that skips a wmma operation is a warp-mask error. */
static __global__ void wmma_divergent_kernel(float *out)
{
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::fill_fragment(acc, 1.0f);
    if (threadIdx.x != 5) wmma::store_matrix_sync(out, acc, 16, wmma::mem_row_major);
}

static void wmma_divergent_child(void)
{
    float *d = nullptr;
    cudaMalloc((void **)&d, 256 * sizeof(float));
    MGK_LAUNCH(wmma_divergent_kernel, 1, 32, 0, 0, d);
}

MG_TEST(emu_wmma_divergent_is_reported)
{
    emu_expect_death(t, wmma_divergent_child, "exited");
}

/* The other layouts: A col_major, B row_major, C loaded and stored column-major, one tile:
 * C(i, j) = sum_k A(i, k) B(k, j) + C0(i, j) with A(i, k) at a[k * 16 + i], B(k, j) at
 * b[k * 16 + j], C(i, j) at c[j * 16 + i]. */
static __global__ void wmma_layouts_kernel(float *c, const __nv_bfloat16 *a, const __nv_bfloat16 *b)
{
    wmma::fragment<wmma::matrix_a, 16, 16, 16, __nv_bfloat16, wmma::col_major> fa;
    wmma::fragment<wmma::matrix_b, 16, 16, 16, __nv_bfloat16, wmma::row_major> fb;
    wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc;
    wmma::load_matrix_sync(fa, a, 16);
    wmma::load_matrix_sync(fb, b, 16);
    wmma::load_matrix_sync(acc, c, 16, wmma::mem_col_major);
    wmma::mma_sync(acc, fa, fb, acc);
    wmma::store_matrix_sync(c, acc, 16, wmma::mem_col_major);
}

MG_TEST(emu_wmma_layouts)
{
    std::vector<__nv_bfloat16> a(256), b(256);
    std::vector<float> c(256), got(256);
    for (int i = 0; i < 256; i++) {
        a[i] = __float2bfloat16_rn((float)(i % 11) / 4.0f - 1.0f);
        b[i] = __float2bfloat16_rn((float)(i % 9) / 8.0f - 0.5f);
        c[i] = (float)(i % 3);
    }
    __nv_bfloat16 *da = emu_device(t, 256, a.data()), *db = emu_device(t, 256, b.data());
    float *dc = emu_device(t, 256, c.data());
    MGK_LAUNCH(wmma_layouts_kernel, 1, 32, 0, 0, dc, da, db);
    cudaMemcpy(got.data(), dc, 256 * sizeof(float), cudaMemcpyDeviceToHost);
    for (int i = 0; i < 16; i++)
        for (int j = 0; j < 16; j++) {
            float s = c[j * 16 + i];
            for (int k = 0; k < 16; k++) s += __bfloat162float(a[k * 16 + i]) * __bfloat162float(b[k * 16 + j]);
            if (fabsf(got[j * 16 + i] - s) > 1e-4f * (1 + fabsf(s)))
                mg_test_fail(t, __FILE__, __LINE__, "C(%d,%d) = %g, want %g", i, j, got[j * 16 + i], s);
        }
    cudaFree(da);
    cudaFree(db);
    cudaFree(dc);
}

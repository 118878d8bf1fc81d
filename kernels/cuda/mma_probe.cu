/* mma_probe.cu — a test hook for the tensor-core instructions of mma_sm80.cuh
 * (mgk_cuda_mma_probe, kernels_cuda.h): one warp takes the fragments of a 16 x 16 and a 16 x 8
 * bf16 matrix with ldmatrix (plain for A, transposed for the row-major B) and multiplies them
 * with mma.sync, and every lane writes what it holds. tests/cuda/test_cuda_mma.c checks the
 * registers against the PTX ISA's fragment tables and the product against the CPU, on the
 * emulator and, where it matters, on a GPU: a wrong layout assumption shows here first.
 */
#include "cuda_portable.h"

#include "mma_sm80.cuh"

#define PLD 24 /* shared row stride: 16 columns + 8 (16-byte aligned rows) */

static __global__ void mma_probe_kernel(uint32_t *frags, float *c, const bf16 *a, const bf16 *b)
{
    MGK_SHARED(bf16, As, 16 * PLD);
    MGK_SHARED(bf16, Bs, 16 * PLD);
    int lane = threadIdx.x & 31;
    for (int i = lane; i < 16 * PLD; i += 32) {
        int r = i / PLD, col = i - r * PLD;
        As[i] = col < 16 ? a[r * 16 + col] : __float2bfloat16(0.0f);
        Bs[i] = col < 8 ? b[r * 8 + col] : __float2bfloat16(0.0f);
    }
    __syncwarp(MGK_FULL_MASK);
    uint32_t af[4], bf[4];
    ldsm_x4(af, ldsm_rows_first(As, PLD, 0, 0));
    ldsm_x4_t(bf, ldsm_rows_first(Bs, PLD, 0, 0)); /* bf[0], bf[1]: B's k 0-7 and 8-15 */
    float d[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    mma_16816(d, af, bf[0], bf[1]);
    for (int r = 0; r < 4; r++) frags[lane * 6 + r] = af[r];
    frags[lane * 6 + 4] = bf[0];
    frags[lane * 6 + 5] = bf[1];
    for (int i = 0; i < 4; i++) c[lane * 4 + i] = d[i];
}

extern "C" void mgk_cuda_mma_probe(const mg_kctx *k, uint32_t *frags, float *c,
                                   const mgk_bf16 *a, const mgk_bf16 *b)
{
    MGK_LAUNCH(mma_probe_kernel, 1, 32, 0, mgk_stream(k), frags, c, mgk_bf(a), mgk_bf(b));
    MGK_LAUNCH_CHECK();
}

/* mma_sm80.cuh — the warp-level tensor-core instructions of sm_80 and later that the fast
 * attention kernels (attn_mma_fwd.cu, attn_mma_bwd.cu) use, behind four small functions:
 *   mma_16816(d, a, b)      d (16 x 8 fp32) += a (16 x 16 bf16) b (16 x 8 bf16), mma.sync
 *                           .m16n8k16.row.col.f32.bf16.bf16.f32
 *   ldsm_x4(r, p)           ldmatrix.sync.aligned.m8n8.x4.shared.b16 (p: this lane's row)
 *   ldsm_x4_t(r, p)         the same with .trans
 *   cp_async16(dst, src, n) cp.async.cg.shared.global of 16 bytes (zero-filled when n is 0),
 *                           cp_async_commit(), cp_async_wait_all()
 * with the fragment layouts of mma_layout.h (the PTX ISA's), and the addressing helpers
 * ldsm_rows_first / ldsm_cols_first and acc_to_a (accumulators as the next A operand).
 *
 * Under nvcc they are the PTX instructions (sm_80+; the library is built for sm_80 and sm_90
 * only). Under the host emulator they are portable code that follows the documented layouts
 * exactly: each lane writes its operands (or its row address) to a per-warp exchange area,
 * __syncwarp(), reads what the instruction would deliver to it, __syncwarp(). So the
 * emulator runs the same kernels, index math included, and tests/cuda/test_cuda_mma.c checks
 * these layouts against the hardware on a GPU. The emulated cp.async copies at once (a
 * missing cp_async_wait_all() is not caught: the kernels wait, then __syncthreads(), before
 * every use). All four must be called by the 32 lanes of a warp together (full mask).
 */
#ifndef MGK_MMA_SM80_CUH
#define MGK_MMA_SM80_CUH

#include <string.h>

#include "cuda_common.cuh"
#include "mma_layout.h"

/* Two floats as a bf16 pair register (lo in the low half), rounded to nearest even. */
static __device__ inline uint32_t pack_bf16x2(float lo, float hi)
{
    return (uint32_t)__bfloat16_as_ushort(__float2bfloat16(lo)) |
           ((uint32_t)__bfloat16_as_ushort(__float2bfloat16(hi)) << 16);
}

#if !defined(MGK_CUDA_EMU)

static __device__ inline void mma_16816(float (&d)[4], const uint32_t (&a)[4],
                                        uint32_t b0, uint32_t b1)
{
    asm volatile("mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 "
                 "{%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%0, %1, %2, %3};\n"
                 : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
                 : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

static __device__ inline void ldsm_x4(uint32_t (&r)[4], const bf16 *p)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s)
                 : "memory");
}

static __device__ inline void ldsm_x4_t(uint32_t (&r)[4], const bf16 *p)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(p);
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0, %1, %2, %3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(s)
                 : "memory");
}

/* 16 bytes from global src to shared dst (both 16-byte aligned); zeros when n == 0. */
static __device__ inline void cp_async16(bf16 *dst, const bf16 *src, int n)
{
    unsigned s = (unsigned)__cvta_generic_to_shared(dst);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(s), "l"(src),
                 "r"(n ? 16 : 0)
                 : "memory");
}
static __device__ inline void cp_async_commit()
{
    asm volatile("cp.async.commit_group;\n" ::: "memory");
}
static __device__ inline void cp_async_wait_all()
{
    asm volatile("cp.async.wait_group 0;\n" ::: "memory");
}

#else /* the host emulator: the documented semantics in portable code */

/* Per warp of the running block (blocks run one at a time on one host thread): 32 lanes x 8
 * words. */
static uint32_t mgk_mma_xchg[32][32][8];

static __device__ inline uint32_t (*mma_xchg())[8]
{
    return mgk_mma_xchg[threadIdx.x >> 5];
}

static __device__ inline float bf16_lo(uint32_t v)
{
    return __bfloat162float(__ushort_as_bfloat16((unsigned short)(v & 0xffffu)));
}
static __device__ inline float bf16_hi(uint32_t v)
{
    return __bfloat162float(__ushort_as_bfloat16((unsigned short)(v >> 16)));
}
static __device__ inline float bf16_half(uint32_t v, int e)
{
    return e ? bf16_hi(v) : bf16_lo(v);
}

static __device__ inline void mma_16816(float (&d)[4], const uint32_t (&a)[4],
                                        uint32_t b0, uint32_t b1)
{
    uint32_t(*x)[8] = mma_xchg();
    int lane = threadIdx.x & 31;
    for (int r = 0; r < 4; r++) x[lane][r] = a[r];
    x[lane][4] = b0, x[lane][5] = b1;
    __syncwarp(MGK_FULL_MASK);
    /* gather the whole A (16 x 16) and B (16 x 8) from the documented layouts */
    float A[16][16], B[16][8];
    for (int l = 0; l < 32; l++)
        for (int r = 0; r < 4; r++)
            for (int e = 0; e < 2; e++) {
                int row, col;
                mgk_mma_a_rc(l, r, e, &row, &col);
                A[row][col] = bf16_half(x[l][r], e);
                if (r < 2) {
                    mgk_mma_b_rc(l, r, e, &row, &col);
                    B[row][col] = bf16_half(x[l][4 + r], e);
                }
            }
    __syncwarp(MGK_FULL_MASK);
    for (int i = 0; i < 4; i++) {
        int row, col;
        mgk_mma_c_rc(lane, i, &row, &col);
        float s = d[i];
        for (int k = 0; k < 16; k++) s += A[row][k] * B[k][col];
        d[i] = s;
    }
}

static __device__ inline void ldsm_x4_any(uint32_t (&r)[4], const bf16 *p, int trans)
{
    uint32_t(*x)[8] = mma_xchg();
    int lane = threadIdx.x & 31;
    uintptr_t u = (uintptr_t)p;
    MG_ASSERT((u & 15) == 0); /* ldmatrix rows are 16-byte aligned */
    x[lane][0] = (uint32_t)u, x[lane][1] = (uint32_t)(u >> 32);
    __syncwarp(MGK_FULL_MASK);
    for (int j = 0; j < 4; j++) {
        unsigned short h[2];
        for (int e = 0; e < 2; e++) {
            int row, col;
            mgk_ldsm_rc(lane, e, trans, &row, &col);
            int l = mgk_ldsm_addr_lane(j, row);
            const bf16 *rowp = (const bf16 *)(((uintptr_t)x[l][1] << 32) | x[l][0]);
            h[e] = __bfloat16_as_ushort(rowp[col]);
        }
        r[j] = (uint32_t)h[0] | ((uint32_t)h[1] << 16);
    }
    __syncwarp(MGK_FULL_MASK);
}
static __device__ inline void ldsm_x4(uint32_t (&r)[4], const bf16 *p)
{
    ldsm_x4_any(r, p, 0);
}
static __device__ inline void ldsm_x4_t(uint32_t (&r)[4], const bf16 *p)
{
    ldsm_x4_any(r, p, 1);
}

static __device__ inline void cp_async16(bf16 *dst, const bf16 *src, int n)
{
    MG_ASSERT(((uintptr_t)dst & 15) == 0 && (!n || ((uintptr_t)src & 15) == 0));
    if (n)
        memcpy(dst, src, 16);
    else
        memset(dst, 0, 16);
}
static __device__ inline void cp_async_commit() {}
static __device__ inline void cp_async_wait_all() {}

#endif

/* The address this lane gives ldmatrix .x4 for the 16 x 16 block at (row0, col0) of a tile
 * (row stride ld), matrices ordered (rows 0-7 | 8-15) fastest, then columns (0-7 | 8-15): an A
 * operand, or (trans) the B operand of two accumulator tiles (rows = k). */
static __device__ inline const bf16 *ldsm_rows_first(const bf16 *t, int ld, int row0, int col0)
{
    int lane = threadIdx.x & 31, mi = lane >> 3, r = lane & 7;
    return t + (row0 + r + 8 * (mi & 1)) * ld + col0 + 8 * (mi >> 1);
}
/* Matrices ordered columns (0-7 | 8-15) fastest, then rows: the B operands (k = columns) of
 * the two accumulator tiles of rows row0..row0+7 and row0+8..row0+15 (rows = n). */
static __device__ inline const bf16 *ldsm_cols_first(const bf16 *t, int ld, int row0, int col0)
{
    int lane = threadIdx.x & 31, mi = lane >> 3, r = lane & 7;
    return t + (row0 + r + 8 * (mi >> 1)) * ld + col0 + 8 * (mi & 1);
}

/* The A operand (16 x 16) made of two neighbouring accumulator tiles (columns 0-7 in x0, 8-15
 * in x1), rounded to bf16. */
static __device__ inline void acc_pair_to_a(uint32_t (&f)[4], const float (&x0)[4],
                                            const float (&x1)[4])
{
    f[0] = pack_bf16x2(x0[0], x0[1]);
    f[1] = pack_bf16x2(x0[2], x0[3]);
    f[2] = pack_bf16x2(x1[0], x1[1]);
    f[3] = pack_bf16x2(x1[2], x1[3]);
}

/* The A operands (16 x 16 each) of a 16 x 32 block of accumulator tiles x[4][4] (columns
 * 8j..8j+7 in x[j]), rounded to bf16. */
static __device__ inline void acc_to_a(uint32_t (&f)[2][4], const float (&x)[4][4])
{
    for (int k = 0; k < 2; k++) acc_pair_to_a(f[k], x[2 * k], x[2 * k + 1]);
}

#endif

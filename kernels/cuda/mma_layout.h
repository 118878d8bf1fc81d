/* mma_layout.h — which element of a matrix each lane's register holds, for the warp-level
 * tensor-core instructions the fast attention (attn_mma_*.cu) uses, as the PTX ISA documents
 * them ("Matrix Fragments for mma.m16n8k16 with floating point type", "ldmatrix"). C, usable
 * from host code (tests/cuda/test_cuda_mma.c checks them against the documented formulas and
 * the hardware) and device code (the emulated instructions of mma_sm80.cuh are built on them).
 *
 * Conventions: lane in [0, 32); a bf16 pair register holds element 2 r (low half) and 2 r + 1
 * (high half) of a lane's fragment; groupID g = lane >> 2, threadID_in_group u = lane & 3.
 *   A (16 x 16, row-major, 4 pair registers):  register r, half e -> row g + 8 (r & 1),
 *                                               column 2 u + e + 8 (r >> 1)
 *   B (16 x 8, "col", 2 pair registers):        register r, half e -> row (k) 2 u + e + 8 r,
 *                                               column (n) g
 *   C/D (16 x 8, fp32, 4 registers):            register i -> row g + 8 (i >> 1), column
 *                                               2 u + (i & 1)
 *   ldmatrix .x4 (four 8 x 8 b16 matrices):     lane l gives the address of row l & 7 of
 *                                               matrix l >> 3; register j of lane l receives
 *                                               row g, elements 2 u and 2 u + 1 of matrix j;
 *                                               with .trans, elements (2 u, g) and (2 u + 1, g)
 *                                               (row, column) of matrix j.
 */
#ifndef MGK_MMA_LAYOUT_H
#define MGK_MMA_LAYOUT_H

#if defined(__CUDACC__) || (defined(MGK_CUDA_EMU) && defined(__cplusplus))
#define MGK_HD __host__ __device__
#else
#define MGK_HD
#endif

/* Row and column of half e of pair register r of lane's A fragment. */
static MGK_HD inline void mgk_mma_a_rc(int lane, int r, int e, int *row, int *col)
{
    *row = (lane >> 2) + 8 * (r & 1);
    *col = 2 * (lane & 3) + e + 8 * (r >> 1);
}

/* Row (k) and column (n) of half e of pair register r of lane's B fragment. */
static MGK_HD inline void mgk_mma_b_rc(int lane, int r, int e, int *row, int *col)
{
    *row = 2 * (lane & 3) + e + 8 * r;
    *col = lane >> 2;
}

/* Row and column of accumulator register i of lane. */
static MGK_HD inline void mgk_mma_c_rc(int lane, int i, int *row, int *col)
{
    *row = (lane >> 2) + 8 * (i >> 1);
    *col = 2 * (lane & 3) + (i & 1);
}

/* ldmatrix: the lane whose address gives row `row` of matrix j; the (row, column) of the 8 x 8
 * matrix j that half e of lane's register j receives, plain or transposed. */
static MGK_HD inline int mgk_ldsm_addr_lane(int j, int row)
{
    return 8 * j + row;
}
static MGK_HD inline void mgk_ldsm_rc(int lane, int e, int trans, int *row, int *col)
{
    int g = lane >> 2, c = 2 * (lane & 3) + e;
    *row = trans ? c : g;
    *col = trans ? g : c;
}

#endif

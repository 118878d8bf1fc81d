/* test_cuda_mma.c — the tensor-core fragment layouts the fast attention (attn_mma_*.cu) relies
 * on: mma_layout.h against the PTX ISA's formulas ("Matrix Fragments for mma.m16n8k16 with
 * floating point type", written out here independently, per element index i of a fragment),
 * then mgk_cuda_mma_probe (ldmatrix + mma.sync in one warp) against those formulas and the CPU
 * product. On the emulator this checks the portable instructions of mma_sm80.cuh; on a GPU the
 * hardware itself: if the attention kernels fail on a GPU and this passes, the layouts are not
 * the cause. Product tolerance: 1e-5 + 1e-5 |ref| (bf16 products summed in fp32).
 */
#include "cuda_test_util.h"

#include "cuda/mma_layout.h"

/* The PTX ISA's tables, by element index i (two elements per 32-bit register). */
static void doc_a(int lane, int i, int *row, int *col)
{
    int g = lane >> 2, u = lane % 4;
    *row = (i < 2 || (i >= 4 && i < 6)) ? g : g + 8;
    *col = u * 2 + (i & 1) + (i >= 4 ? 8 : 0);
}
static void doc_b(int lane, int i, int *row, int *col)
{
    int g = lane >> 2, u = lane % 4;
    *row = u * 2 + (i & 1) + (i >= 2 ? 8 : 0);
    *col = g;
}
static void doc_c(int lane, int i, int *row, int *col)
{
    int g = lane >> 2, u = lane % 4;
    *row = i < 2 ? g : g + 8;
    *col = u * 2 + (i & 1);
}

MG_TEST(cuda_mma_layout_tables)
{
    for (int lane = 0; lane < 32; lane++) {
        for (int i = 0; i < 8; i++) {
            int r0, c0, r1, c1;
            doc_a(lane, i, &r0, &c0);
            mgk_mma_a_rc(lane, i / 2, i % 2, &r1, &c1);
            MG_CHECK(t, r0 == r1 && c0 == c1);
        }
        for (int i = 0; i < 4; i++) {
            int r0, c0, r1, c1;
            doc_b(lane, i, &r0, &c0);
            mgk_mma_b_rc(lane, i / 2, i % 2, &r1, &c1);
            MG_CHECK(t, r0 == r1 && c0 == c1);
            doc_c(lane, i, &r0, &c0);
            mgk_mma_c_rc(lane, i, &r1, &c1);
            MG_CHECK(t, r0 == r1 && c0 == c1);
        }
        /* ldmatrix: lane receives row lane/4, elements 2 (lane%4) and +1; .trans the transpose */
        for (int e = 0; e < 2; e++) {
            int r, c;
            mgk_ldsm_rc(lane, e, 0, &r, &c);
            MG_CHECK(t, r == lane / 4 && c == 2 * (lane % 4) + e);
            mgk_ldsm_rc(lane, e, 1, &r, &c);
            MG_CHECK(t, c == lane / 4 && r == 2 * (lane % 4) + e);
        }
    }
    for (int j = 0; j < 4; j++)
        for (int r = 0; r < 8; r++) MG_CHECK(t, mgk_ldsm_addr_lane(j, r) == 8 * j + r);
}

static float bf_half(uint32_t reg, int e)
{
    return ct_bf2f((mgk_bf16)(e ? reg >> 16 : reg & 0xffffu));
}

MG_TEST(cuda_mma_probe)
{
    ct c;
    ct_begin(&c, t);
    if (c.ok) {
        float *a = ct_round16(&c, ct_rand(&c, 16 * 16, 1, 2.0f), 16 * 16);
        float *b = ct_round16(&c, ct_rand(&c, 16 * 8, 2, 2.0f), 16 * 8);
        uint32_t *Dfr = (uint32_t *)ct_dalloc(&c, 32 * 6 * sizeof(uint32_t));
        float *Dc = (float *)ct_dalloc(&c, 32 * 4 * sizeof(float));
        mgk_cuda_mma_probe(&c.dev, Dfr, Dc, ct_up16(&c, a, 256), ct_up16(&c, b, 128));
        uint32_t fr[32 * 6];
        MG_CHECK_OK(t, mgk_cuda_download(fr, Dfr, sizeof fr));
        float *cc = ct_down(&c, Dc, 32 * 4);
        float got[16 * 8], ref[16 * 8];
        for (int lane = 0; lane < 32; lane++) {
            for (int i = 0; i < 8; i++) { /* A: ldmatrix delivers the documented fragment */
                int r, col;
                doc_a(lane, i, &r, &col);
                MG_CHECK(t, bf_half(fr[lane * 6 + i / 2], i % 2) == a[r * 16 + col]);
            }
            for (int i = 0; i < 4; i++) {
                int r, col;
                doc_b(lane, i, &r, &col); /* B: ldmatrix .trans of the row-major k x n */
                MG_CHECK(t, bf_half(fr[lane * 6 + 4 + i / 2], i % 2) == b[r * 8 + col]);
                doc_c(lane, i, &r, &col);
                got[r * 8 + col] = cc[lane * 4 + i];
            }
        }
        for (int r = 0; r < 16; r++)
            for (int n = 0; n < 8; n++) {
                double s = 0;
                for (int k = 0; k < 16; k++) s += (double)a[r * 16 + k] * b[k * 8 + n];
                ref[r * 8 + n] = (float)s;
            }
        KT_CLOSE(t, "mma.sync product", got, ref, 16 * 8, 1e-5, 1e-5);
    }
    ct_end(&c);
}

/* colsum.cuh — deterministic column sums of a per-element value over the rows of an (N, C)
 * tensor, up to two at once: bias gradients and the weight gradients of the norms.
 *
 * Contract: colsum_run(k, f, outa, outb, N, C) adds into outa[c] (and outb[c], each may be
 * NULL) the sums over r of the values f(r, c, &a, &b) adds into a and b. The rows are cut into
 * nseg segments (a function of N and C only); each block sums 32 columns of one segment (8
 * warps over interleaved rows, then the 8 in warp order), and a second kernel adds the
 * segment sums in segment order: the result depends on N and C only, never on scheduling.
 * Grid (ceil(C/32), nseg), block 256; workspace 2 * nseg * C floats. colsum_run<F, W> with
 * W > 1 (the functor's vec<W>, C % W == 0) lets a thread take W columns (16-byte loads): the
 * same sums in the same order.
 */
#ifndef MGK_COLSUM_CUH
#define MGK_COLSUM_CUH

#include "cuda_common.cuh"

#define COLSUM_ROWS_PER_SEG 256
#define COLSUM_MAX_SEG 64

/* W > 1: a thread takes W consecutive columns (f.vec<W>, 16-byte loads; C % W == 0); each
 * column's sum runs over the same rows in the same order as with W = 1. */
template <typename F, int W>
static __global__ void colsum_partial_kernel(F f, float *part, int64_t N, int64_t C,
                                             int64_t seg_rows)
{
    const int LS = 32 * W + 1;
    MGK_SHARED(float, sa, 8 * (32 * W + 1));
    MGK_SHARED(float, sb, 8 * (32 * W + 1));
    int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
    int64_t c = ((int64_t)blockIdx.x * 32 + tx) * W;
    int64_t r0 = (int64_t)blockIdx.y * seg_rows;
    int64_t r1 = r0 + seg_rows < N ? r0 + seg_rows : N;
    float a[W], b[W];
    for (int e = 0; e < W; e++) a[e] = 0.0f, b[e] = 0.0f;
    if (c < C)
        for (int64_t r = r0 + ty; r < r1; r += 8) {
            if constexpr (W == 1)
                f(r, c, &a[0], &b[0]);
            else
                f.template vec<W>(r, c, a, b);
        }
    for (int e = 0; e < W; e++) {
        sa[ty * LS + tx * W + e] = a[e];
        sb[ty * LS + tx * W + e] = b[e];
    }
    __syncthreads();
    if (ty == 0 && c < C) {
        int64_t nseg = gridDim.y;
        for (int e = 0; e < W; e++) {
            for (int j = 1; j < 8; j++) {
                a[e] += sa[j * LS + tx * W + e];
                b[e] += sb[j * LS + tx * W + e];
            }
            part[(int64_t)blockIdx.y * C + c + e] = a[e];
            part[(nseg + blockIdx.y) * C + c + e] = b[e];
        }
    }
}

static __global__ void colsum_finish_kernel(float *outa, float *outb, const float *part,
                                            int64_t nseg, int64_t C)
{
    MGK_FOR_EACH(c, C) {
        float a = 0.0f, b = 0.0f;
        for (int64_t s = 0; s < nseg; s++) a += part[s * C + c], b += part[(nseg + s) * C + c];
        if (outa) outa[c] += a;
        if (outb) outb[c] += b;
    }
}

template <typename F, int W = 1>
static void colsum_run(const mg_kctx *k, F f, float *outa, float *outb, int64_t N, int64_t C)
{
    if (N <= 0 || C <= 0 || (!outa && !outb)) return;
    int64_t nseg = (N + COLSUM_ROWS_PER_SEG - 1) / COLSUM_ROWS_PER_SEG;
    int64_t fit = (int64_t)(k->cuda->ws_bytes / (2 * sizeof(float))) / C;
    nseg = nseg > COLSUM_MAX_SEG ? COLSUM_MAX_SEG : nseg;
    nseg = nseg > fit ? fit : nseg;
    MG_ASSERT(nseg >= 1);
    int64_t seg_rows = (N + nseg - 1) / nseg;
    float *part = (float *)mgk_cuda_ws(k, (size_t)(2 * nseg * C) * sizeof(float));
    dim3 grid((unsigned)((C + 32 * W - 1) / (32 * W)), (unsigned)nseg);
    MGK_LAUNCH((colsum_partial_kernel<F, W>), grid, 256, 0, mgk_stream(k), f, part, N, C,
               seg_rows);
    MGK_LAUNCH_CHECK();
    MGK_LAUNCH(colsum_finish_kernel, mgk_grid(C, 256, MGK_GRID_CAP), 256, 0, mgk_stream(k), outa,
               outb, (const float *)part, nseg, C);
    MGK_LAUNCH_CHECK();
}

#endif

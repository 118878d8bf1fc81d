/* colsum.cuh — deterministic column sums of a per-element value over the rows of an (N, C)
 * tensor, up to two at once: bias gradients and the weight gradients of the norms.
 *
 * Contract: colsum_run(k, f, outa, outb, N, C) adds into outa[c] (and outb[c], each may be
 * NULL) the sums over r of the values f(r, c, &a, &b) adds into a and b. The rows are cut into
 * nseg segments (a function of N and C only); each block sums 32 columns of one segment (8
 * warps over interleaved rows, then the 8 in warp order), and a second kernel adds the
 * segment sums in segment order: the result depends on N and C only, never on scheduling.
 * Grid (ceil(C/32), nseg), block 256; workspace 2 * nseg * C floats.
 */
#ifndef MGK_COLSUM_CUH
#define MGK_COLSUM_CUH

#include "cuda_common.cuh"

#define COLSUM_ROWS_PER_SEG 256
#define COLSUM_MAX_SEG 64

template <typename F>
static __global__ void colsum_partial_kernel(F f, float *part, int64_t N, int64_t C,
                                             int64_t seg_rows)
{
    MGK_SHARED(float, sa, 8 * 33);
    MGK_SHARED(float, sb, 8 * 33);
    int tx = threadIdx.x & 31, ty = threadIdx.x >> 5;
    int64_t c = (int64_t)blockIdx.x * 32 + tx;
    int64_t r0 = (int64_t)blockIdx.y * seg_rows;
    int64_t r1 = r0 + seg_rows < N ? r0 + seg_rows : N;
    float a = 0.0f, b = 0.0f;
    if (c < C)
        for (int64_t r = r0 + ty; r < r1; r += 8) f(r, c, &a, &b);
    sa[ty * 33 + tx] = a;
    sb[ty * 33 + tx] = b;
    __syncthreads();
    if (ty == 0 && c < C) {
        for (int j = 1; j < 8; j++) a += sa[j * 33 + tx], b += sb[j * 33 + tx];
        int64_t nseg = gridDim.y;
        part[(int64_t)blockIdx.y * C + c] = a;
        part[(nseg + blockIdx.y) * C + c] = b;
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

template <typename F>
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
    dim3 grid((unsigned)((C + 31) / 32), (unsigned)nseg);
    MGK_LAUNCH(colsum_partial_kernel<F>, grid, 256, 0, mgk_stream(k), f, part, N, C, seg_rows);
    MGK_LAUNCH_CHECK();
    MGK_LAUNCH(colsum_finish_kernel, mgk_grid(C, 256, MGK_GRID_CAP), 256, 0, mgk_stream(k), outa,
               outb, (const float *)part, nseg, C);
    MGK_LAUNCH_CHECK();
}

#endif

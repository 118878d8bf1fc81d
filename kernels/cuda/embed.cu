/* embed.cu — embedding lookup over a vocabulary shard and its deterministic backward
 * (kernels.h semantics), fp32 tables and (bf16 variants) bf16 activations.
 *
 * Forward: rows x C launch (block 256 over the columns, blockIdx.y over the N ids), or, for
 * rows of whole 16-byte vectors on aligned tensors, block 64 over the vectors and at most 4096
 * row blocks striding over the ids.
 * Backward, without float atomics, in the reference's summation order (so fp32 results
 * equal the CPU reference bitwise):
 *   1. count the in-shard ids per table row (integer atomics: exact);
 *   2. one block of 1024 threads turns the counts into row starts (exclusive scan, 4096 rows
 *      per step: coalesced loads and warp-shuffle scans) and zeroes the counts;
 *   3. scatter each id's position into its row's list (integer atomics: order unspecified);
 *   4. 2048 blocks stride over the table rows (most are empty); a row's block sorts its
 *      positions (rank = number of smaller positions, in shared memory; a row with more than
 *      SORT_MAX occurrences instead collects them by a scan of all ids in order) and adds
 *      dout's rows into dtable in increasing position.
 * Workspace: 2 * nrows + 1 + N ints.
 */
#include "cuda_portable.h"

#include "cuda_common.cuh"

#define THREADS 256
#define SCAN_THREADS 1024 /* the one block of the scan over the table rows */
#define SORT_MAX 1024
#define ROW_BLOCKS 2048 /* blocks striding over the table rows (most are empty) */

template <typename T, typename TT, int W>
static __global__ void embedding_fwd_kernel(T *out, const int32_t *ids, const TT *table,
                                            int64_t N, int64_t C, int64_t row0, int64_t nrows,
                                            int accumulate)
{
    int64_t c = MGK_COL() * W;
    if (c < C) {
        MGK_FOR_ROWS(i, N) {
            int64_t r = (int64_t)ids[i] - row0;
            float v[W], o[W];
            if (r >= 0 && r < nrows)
                mgk_ldw<TT, W>(v, table + r * C + c);
            else
                for (int e = 0; e < W; e++) v[e] = 0.0f;
            if (accumulate) {
                mgk_ldw<T, W>(o, out + i * C + c);
                for (int e = 0; e < W; e++) v[e] = o[e] + v[e];
            }
            mgk_stw<T, W>(out + i * C + c, v);
        }
    }
}

static __global__ void count_kernel(int *count, const int32_t *ids, int64_t N, int64_t row0,
                                    int64_t nrows)
{
    MGK_FOR_EACH(i, N) {
        int64_t r = (int64_t)ids[i] - row0;
        if (r >= 0 && r < nrows) atomicAdd(count + r, 1);
    }
}

/* start[r] = sum of count[0, r) for r <= nrows; count reset to 0. One block of SCAN_THREADS:
 * tiles of 4 SCAN_THREADS rows (4 consecutive per thread), a warp scan of the threads' sums by
 * shuffles, then of the 32 warp sums; integer, so exact. */
static __global__ void scan_kernel(int *start, int *count, int64_t nrows)
{
    MGK_SHARED(int, wsum, 32);
    int lane = threadIdx.x & 31, w = threadIdx.x >> 5, carry = 0;
    for (int64_t base = 0; base < nrows; base += 4 * (int64_t)blockDim.x) {
        int64_t r = base + 4 * (int64_t)threadIdx.x;
        int v[4], s = 0;
        for (int e = 0; e < 4; e++) {
            v[e] = r + e < nrows ? count[r + e] : 0;
            s += v[e];
        }
        int x = s; /* inclusive scan over the warp */
        for (int o = 1; o < 32; o <<= 1) {
            int y = __shfl_up_sync(MGK_FULL_MASK, x, o);
            if (lane >= o) x += y;
        }
        __syncthreads(); /* the previous tile's readers of wsum are done */
        if (lane == 31) wsum[w] = x;
        __syncthreads();
        int ws = lane < (int)(blockDim.x >> 5) ? wsum[lane] : 0, wx = ws;
        for (int o = 1; o < 32; o <<= 1) {
            int y = __shfl_up_sync(MGK_FULL_MASK, wx, o);
            if (lane >= o) wx += y;
        }
        int wexcl = __shfl_sync(MGK_FULL_MASK, wx - ws, w);
        int total = __shfl_sync(MGK_FULL_MASK, wx, 31);
        int excl = carry + wexcl + x - s;
        for (int e = 0; e < 4; e++)
            if (r + e < nrows) {
                start[r + e] = excl;
                excl += v[e];
                count[r + e] = 0;
            }
        carry += total;
    }
    if (threadIdx.x == 0) start[nrows] = carry;
}

static __global__ void scatter_kernel(int *list, int *cursor, const int *start,
                                      const int32_t *ids, int64_t N, int64_t row0, int64_t nrows)
{
    MGK_FOR_EACH(i, N) {
        int64_t r = (int64_t)ids[i] - row0;
        if (r >= 0 && r < nrows) list[start[r] + atomicAdd(cursor + r, 1)] = (int)i;
    }
}

/* dtable[r, :] += dout[pos, :] for the m positions pos of sorted[0, m), in order. */
template <typename T>
static __device__ void add_rows(float *drow, const T *dout, const int *sorted, int m, int64_t C)
{
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) {
        float acc = drow[c];
        for (int j = 0; j < m; j++) acc += mgk_ld(dout + (int64_t)sorted[j] * C + c);
        drow[c] = acc;
    }
}

template <typename T>
static __global__ void accumulate_rows_kernel(float *dtable, const T *dout, const int32_t *ids,
                                              const int *list, const int *start, int64_t N,
                                              int64_t C, int64_t row0, int64_t nrows)
{
    MGK_SHARED(int, buf, SORT_MAX);
    MGK_SHARED(int, sorted, SORT_MAX);
    for (int64_t r = blockIdx.x; r < nrows; r += gridDim.x) {
        int s0 = start[r], m = start[r + 1] - s0;
        float *drow = dtable + r * C;
        if (m > 0 && m <= SORT_MAX) {
            __syncthreads(); /* the previous row's readers are done */
            for (int j = threadIdx.x; j < m; j += blockDim.x) buf[j] = list[s0 + j];
            __syncthreads();
            for (int j = threadIdx.x; j < m; j += blockDim.x) {
                int rank = 0, p = buf[j];
                for (int q = 0; q < m; q++) rank += buf[q] < p;
                sorted[rank] = p;
            }
            __syncthreads();
            add_rows(drow, dout, sorted, m, C);
        } else if (m > SORT_MAX) {
            /* many occurrences: collect them in order, THREADS ids at a time */
            for (int64_t i0 = 0; i0 < N; i0 += THREADS) {
                int64_t i = i0 + threadIdx.x;
                __syncthreads();
                buf[threadIdx.x] = i < N && (int64_t)ids[i] - row0 == r;
                __syncthreads();
                if (threadIdx.x == 0) {
                    int n = 0;
                    for (int j = 0; j < THREADS; j++)
                        if (buf[j]) sorted[n++] = (int)(i0 + j);
                    buf[THREADS] = n;
                }
                __syncthreads();
                add_rows(drow, dout, sorted, buf[THREADS], C);
            }
        }
    }
}

template <typename T, typename TT>
static void embedding_fwd(const mg_kctx *k, T *out, const int32_t *ids, const TT *table,
                          int64_t N, int64_t C, int64_t row0, int64_t nrows, int accumulate)
{
    if (N <= 0 || C <= 0) return;
    const int E = vec16<T>::N; /* T and TT are the same type: E elements of either */
    if (sizeof(T) == sizeof(TT) && mgk_rows_vec_ok(C, E, out, table))
        MGK_LAUNCH((embedding_fwd_kernel<T, TT, E>),
                   mgk_grid_rows_cap(N, C / E, MGK_VTHREADS, MGK_VROWS_CAP), MGK_VTHREADS, 0,
                   mgk_stream(k), out, ids, table, N, C, row0, nrows, accumulate);
    else
        MGK_LAUNCH((embedding_fwd_kernel<T, TT, 1>), mgk_grid_rows(N, C, THREADS), THREADS, 0,
                   mgk_stream(k), out, ids, table, N, C, row0, nrows, accumulate);
    MGK_LAUNCH_CHECK();
}

template <typename T>
static void embedding_bwd(const mg_kctx *k, float *dtable, const T *dout, const int32_t *ids,
                          int64_t N, int64_t C, int64_t row0, int64_t nrows)
{
    if (N <= 0 || C <= 0 || nrows <= 0) return;
    MG_ASSERT(N <= INT32_MAX);
    int *count = (int *)mgk_cuda_ws(k, (size_t)(2 * nrows + 1 + N) * sizeof(int));
    int *start = count + nrows, *list = start + nrows + 1;
    cudaStream_t st = mgk_stream(k);
    MGK_CUDA_CHECK(cudaMemsetAsync(count, 0, (size_t)nrows * sizeof(int), st));
    MGK_LAUNCH(count_kernel, mgk_grid(N, THREADS, MGK_GRID_CAP), THREADS, 0, st, count, ids, N,
               row0, nrows);
    MGK_LAUNCH_CHECK();
    MGK_LAUNCH(scan_kernel, 1, SCAN_THREADS, 0, st, start, count, nrows);
    MGK_LAUNCH_CHECK();
    MGK_LAUNCH(scatter_kernel, mgk_grid(N, THREADS, MGK_GRID_CAP), THREADS, 0, st, list, count,
               (const int *)start, ids, N, row0, nrows);
    MGK_LAUNCH_CHECK();
    MGK_LAUNCH(accumulate_rows_kernel<T>, mgk_grid(nrows, 1, ROW_BLOCKS), THREADS, 0, st, dtable,
               dout, ids, (const int *)list, (const int *)start, N, C, row0, nrows);
    MGK_LAUNCH_CHECK();
}

extern "C" void mgk_cuda_embedding_fwd(const mg_kctx *k, float *out, const int32_t *ids,
                                       const float *table, int64_t N, int64_t C, int64_t row0,
                                       int64_t nrows, int accumulate)
{
    embedding_fwd(k, out, ids, table, N, C, row0, nrows, accumulate);
}

extern "C" void mgk_cuda_embedding_bwd(const mg_kctx *k, float *dtable, const float *dout,
                                       const int32_t *ids, int64_t N, int64_t C, int64_t row0,
                                       int64_t nrows)
{
    embedding_bwd(k, dtable, dout, ids, N, C, row0, nrows);
}

extern "C" void mgk_cuda_embedding_fwd_h16(const mg_kctx *k, mgk_h16 *out, const int32_t *ids,
                                           const mgk_h16 *table, int64_t N, int64_t C,
                                           int64_t row0, int64_t nrows, int accumulate)
{
    MGK_BY_HALF(
        k, T16,
        embedding_fwd(k, mgk_as<T16>(out), ids, mgk_as<T16>(table), N, C, row0, nrows, accumulate));
}

extern "C" void mgk_cuda_embedding_bwd_h16(const mg_kctx *k, float *dtable, const mgk_h16 *dout,
                                           const int32_t *ids, int64_t N, int64_t C, int64_t row0,
                                           int64_t nrows)
{
    MGK_BY_HALF(k, T16, embedding_bwd(k, dtable, mgk_as<T16>(dout), ids, N, C, row0, nrows));
}

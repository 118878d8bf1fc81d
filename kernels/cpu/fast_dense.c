/* fast_dense.c — fast (OpenMP + BLAS) matrix products, linear layers, bias, elementwise ops,
 * reductions and the embedding. Same signatures and meaning as ref_dense.c. With
 * MG_HAVE_BLAS the products go to cblas_sgemm (OpenBLAS, OpenMP build); without, to
 * cache-friendly loops parallelised over row blocks of C. Reductions keep the reference's
 * chunk order, so mgk_sumsq/mgk_sum equal the reference bitwise for any thread count.
 */
#include <string.h>

#include "cpu_internal.h"

#if MG_HAVE_BLAS
#include <cblas.h>
#endif

#define ROW_BLOCK 16
#define K_BLOCK 128
#define COL_BLOCK 64
#define SUM_GROUP 256

/* 4-wide vectors (GCC/clang vector extensions: SSE2 on any x86-64, NEON on arm64) for
 * the loops fallback; unaligned access goes through memcpy. */
typedef float v4f __attribute__((vector_size(16)));

static v4f ld4(const float *p)
{
    v4f v;
    memcpy(&v, p, sizeof v);
    return v;
}

static float dotf(const float *a, const float *b, int64_t n)
{
    v4f s0 = {0, 0, 0, 0}, s1 = {0, 0, 0, 0};
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        s0 += ld4(a + i) * ld4(b + i);
        s1 += ld4(a + i + 4) * ld4(b + i + 4);
    }
    s0 += s1;
    float acc = (s0[0] + s0[1]) + (s0[2] + s0[3]);
    for (; i < n; i++) acc += a[i] * b[i];
    return acc;
}

/* c += a * b over n floats. */
static void axpy(float *c, const float *b, float a, int64_t n)
{
    v4f av = {a, a, a, a};
    int64_t j = 0;
    for (; j + 8 <= n; j += 8) {
        v4f c0 = ld4(c + j) + av * ld4(b + j), c1 = ld4(c + j + 4) + av * ld4(b + j + 4);
        memcpy(c + j, &c0, sizeof c0);
        memcpy(c + j + 4, &c1, sizeof c1);
    }
    for (; j < n; j++) c[j] += a * b[j];
}

static float a_at(const float *A, int64_t lda, int64_t i, int64_t p, int ta)
{
    return ta ? A[p * lda + i] : A[i * lda + p];
}

/* C rows [i0, i1) = beta C + alpha op(A) op(B), tiled so that a K-block (or N-block) of B
 * stays in cache while every row of the block uses it. */
static void gemm_rows(float *C, int64_t ldc, const float *A, int64_t lda, const float *B,
                      int64_t ldb, int64_t i0, int64_t i1, int64_t N, int64_t K, int ta, int tb,
                      float alpha, float beta)
{
    for (int64_t i = i0; i < i1; i++)
        for (int64_t j = 0; j < N; j++)
            C[i * ldc + j] = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
    if (!tb) {
        for (int64_t p0 = 0; p0 < K; p0 += K_BLOCK)
            for (int64_t i = i0; i < i1; i++)
                for (int64_t p = p0; p < K && p < p0 + K_BLOCK; p++) {
                    axpy(C + i * ldc, B + p * ldb, alpha * a_at(A, lda, i, p, ta), N);
                }
        return;
    }
    for (int64_t j0 = 0; j0 < N; j0 += COL_BLOCK)
        for (int64_t i = i0; i < i1; i++)
            for (int64_t j = j0; j < N && j < j0 + COL_BLOCK; j++) {
                float acc = 0.0f;
                if (!ta) {
                    acc = dotf(A + i * lda, B + j * ldb, K);
                } else {
                    for (int64_t p = 0; p < K; p++) acc += A[p * lda + i] * B[j * ldb + p];
                }
                C[i * ldc + j] += alpha * acc;
            }
}

void mgk_gemm_inner(float *C, int64_t ldc, const float *A, int64_t lda, const float *B,
                    int64_t ldb, int64_t M, int64_t N, int64_t K, int ta, int tb, float alpha,
                    float beta)
{
    if (M <= 0 || N <= 0) return;
#if MG_HAVE_BLAS
    if (K > 0) {
        cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans,
                    (blasint)M, (blasint)N, (blasint)K, alpha, A, (blasint)lda, B, (blasint)ldb,
                    beta, C, (blasint)ldc);
        return;
    }
#endif
    gemm_rows(C, ldc, A, lda, B, ldb, 0, M, N, K, ta, tb, alpha, beta);
}

void mgk_fast_gemm(const mg_kctx *k, float *C, int64_t ldc, const float *A, int64_t lda,
                   const float *B, int64_t ldb, int64_t M, int64_t N, int64_t K, int ta, int tb,
                   float alpha, float beta)
{
#if MG_HAVE_BLAS
    (void)k;
    mgk_gemm_inner(C, ldc, A, lda, B, ldb, M, N, K, ta, tb, alpha, beta);
#else
    int64_t nb = (M + ROW_BLOCK - 1) / ROW_BLOCK;
    MGK_OMP_FOR(k->nthreads)
    for (int64_t blk = 0; blk < nb; blk++) {
        int64_t i1 = (blk + 1) * ROW_BLOCK < M ? (blk + 1) * ROW_BLOCK : M;
        gemm_rows(C, ldc, A, lda, B, ldb, blk * ROW_BLOCK, i1, N, K, ta, tb, alpha, beta);
    }
#endif
}

void mgk_fast_linear_fwd(const mg_kctx *k, float *out, const float *inp, const float *W,
                         const float *bias, int64_t N, int64_t IN, int64_t OUT)
{
    if (bias) {
        MGK_OMP_FOR(k->nthreads)
        for (int64_t i = 0; i < N; i++) memcpy(out + i * OUT, bias, (size_t)OUT * sizeof(float));
    }
    mgk_fast_gemm(k, out, OUT, inp, IN, W, IN, N, OUT, IN, 0, 1, 1.0f, bias ? 1.0f : 0.0f);
}

void mgk_fast_linear_bwd(const mg_kctx *k, float *dinp, float *dW, float *dbias,
                         const float *dout, const float *inp, const float *W, int64_t N,
                         int64_t IN, int64_t OUT)
{
    if (dinp) mgk_fast_gemm(k, dinp, IN, dout, OUT, W, IN, N, IN, OUT, 0, 0, 1.0f, 1.0f);
    if (dW) mgk_fast_gemm(k, dW, IN, dout, OUT, inp, IN, OUT, IN, N, 1, 0, 1.0f, 1.0f);
    if (dbias) mgk_fast_bias_grad(k, dbias, dout, N, OUT);
}

void mgk_fast_bias_add(const mg_kctx *k, float *x, const float *bias, int64_t N, int64_t C)
{
    MGK_OMP_FOR(k->nthreads)
    for (int64_t i = 0; i < N; i++)
        for (int64_t c = 0; c < C; c++) x[i * C + c] += bias[c];
}

/* Parallel over blocks of columns, rows in order: deterministic, double accumulators. */
void mgk_fast_bias_grad(const mg_kctx *k, float *dbias, const float *dout, int64_t N, int64_t C)
{
    int64_t nb = (C + COL_BLOCK - 1) / COL_BLOCK;
    MGK_OMP_FOR(k->nthreads)
    for (int64_t blk = 0; blk < nb; blk++) {
        int64_t c0 = blk * COL_BLOCK, w = C - c0 < COL_BLOCK ? C - c0 : COL_BLOCK;
        double acc[COL_BLOCK] = {0};
        for (int64_t i = 0; i < N; i++)
            for (int64_t c = 0; c < w; c++) acc[c] += dout[i * C + c0 + c];
        for (int64_t c = 0; c < w; c++) dbias[c0 + c] += (float)acc[c];
    }
}

void mgk_fast_zero(const mg_kctx *k, float *x, int64_t n)
{
    mgk_ref_zero(k, x, n);
}

void mgk_fast_copy(const mg_kctx *k, float *dst, const float *src, int64_t n)
{
    mgk_ref_copy(k, dst, src, n);
}

void mgk_fast_add(const mg_kctx *k, float *out, const float *a, const float *b, int64_t n)
{
    MGK_OMP_FOR(k->nthreads)
    for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void mgk_fast_accumulate(const mg_kctx *k, float *y, const float *x, int64_t n)
{
    MGK_OMP_FOR(k->nthreads)
    for (int64_t i = 0; i < n; i++) y[i] += x[i];
}

void mgk_fast_scale(const mg_kctx *k, float *x, int64_t n, float alpha)
{
    MGK_OMP_FOR(k->nthreads)
    for (int64_t i = 0; i < n; i++) x[i] *= alpha;
}

/* Chunk sums of a group of up to SUM_GROUP chunks in parallel, added in chunk order. */
static double chunked_sum(const mg_kctx *k, const float *x, const float *y, const float *mask,
                          int64_t n)
{
    double total = 0.0;
    int64_t nchunks = (n + MGK_SUM_CHUNK - 1) / MGK_SUM_CHUNK;
    for (int64_t g0 = 0; g0 < nchunks; g0 += SUM_GROUP) {
        int64_t g1 = g0 + SUM_GROUP < nchunks ? g0 + SUM_GROUP : nchunks;
        double part[SUM_GROUP];
        MGK_OMP_FOR(k->nthreads)
        for (int64_t c = g0; c < g1; c++) {
            int64_t i0 = c * MGK_SUM_CHUNK, i1 = i0 + MGK_SUM_CHUNK < n ? i0 + MGK_SUM_CHUNK : n;
            double acc = 0.0;
            for (int64_t i = i0; i < i1; i++)
                acc += (double)x[i] * (y ? y[i] : 1.0f) * (mask ? mask[i] : 1.0f);
            part[c - g0] = acc;
        }
        for (int64_t c = g0; c < g1; c++) total += part[c - g0];
    }
    return total;
}

double mgk_fast_sumsq(const mg_kctx *k, const float *x, int64_t n)
{
    return chunked_sum(k, x, x, NULL, n);
}

double mgk_fast_sum(const mg_kctx *k, const float *x, const float *mask, int64_t n)
{
    return chunked_sum(k, x, NULL, mask, n);
}

void mgk_fast_embedding_fwd(const mg_kctx *k, float *out, const int32_t *ids, const float *table,
                            int64_t N, int64_t C, int64_t row0, int64_t nrows, int accumulate)
{
    MGK_OMP_FOR(k->nthreads)
    for (int64_t i = 0; i < N; i++) {
        int64_t r = (int64_t)ids[i] - row0;
        float *o = out + i * C;
        if (r < 0 || r >= nrows) {
            if (!accumulate) memset(o, 0, (size_t)C * sizeof(float));
        } else if (accumulate) {
            for (int64_t c = 0; c < C; c++) o[c] += table[r * C + c];
        } else {
            memcpy(o, table + r * C, (size_t)C * sizeof(float));
        }
    }
}

/* Column blocks in parallel, tokens in order: the same additions as the reference. */
void mgk_fast_embedding_bwd(const mg_kctx *k, float *dtable, const float *dout,
                            const int32_t *ids, int64_t N, int64_t C, int64_t row0,
                            int64_t nrows)
{
    int64_t nb = (C + COL_BLOCK - 1) / COL_BLOCK;
    MGK_OMP_FOR(k->nthreads)
    for (int64_t blk = 0; blk < nb; blk++) {
        int64_t c0 = blk * COL_BLOCK, c1 = c0 + COL_BLOCK < C ? c0 + COL_BLOCK : C;
        for (int64_t i = 0; i < N; i++) {
            int64_t r = (int64_t)ids[i] - row0;
            if (r < 0 || r >= nrows) continue;
            for (int64_t c = c0; c < c1; c++) dtable[r * C + c] += dout[i * C + c];
        }
    }
}

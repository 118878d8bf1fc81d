/* ref_dense.c — reference (plain loop) matrix products, linear layers, bias, elementwise ops,
 * reductions and the embedding. These loops define the meaning of the ops in kernels.h;
 * they favour clarity (and double accumulators) over speed, and stay forever.
 */
#include <string.h>

#include "cpu_internal.h"

static float elem(const float *X, int64_t ld, int64_t r, int64_t c, int trans)
{
    return trans ? X[c * ld + r] : X[r * ld + c];
}

void mgk_ref_gemm(const mg_kctx *k, float *C, int64_t ldc, const float *A, int64_t lda,
                  const float *B, int64_t ldb, int64_t M, int64_t N, int64_t K, int ta, int tb,
                  float alpha, float beta)
{
    (void)k;
    for (int64_t i = 0; i < M; i++) {
        for (int64_t j = 0; j < N; j++) {
            double acc = 0.0;
            for (int64_t p = 0; p < K; p++)
                acc += (double)elem(A, lda, i, p, ta) * elem(B, ldb, p, j, tb);
            float old = beta == 0.0f ? 0.0f : beta * C[i * ldc + j];
            C[i * ldc + j] = (float)(alpha * acc) + old;
        }
    }
}

void mgk_ref_linear_fwd(const mg_kctx *k, float *out, const float *inp, const float *W,
                        const float *bias, int64_t N, int64_t IN, int64_t OUT)
{
    mgk_ref_gemm(k, out, OUT, inp, IN, W, IN, N, OUT, IN, 0, 1, 1.0f, 0.0f);
    if (bias) mgk_ref_bias_add(k, out, bias, N, OUT);
}

void mgk_ref_linear_bwd(const mg_kctx *k, float *dinp, float *dW, float *dbias,
                        const float *dout, const float *inp, const float *W, int64_t N,
                        int64_t IN, int64_t OUT)
{
    if (dinp) mgk_ref_gemm(k, dinp, IN, dout, OUT, W, IN, N, IN, OUT, 0, 0, 1.0f, 1.0f);
    if (dW) mgk_ref_gemm(k, dW, IN, dout, OUT, inp, IN, OUT, IN, N, 1, 0, 1.0f, 1.0f);
    if (dbias) mgk_ref_bias_grad(k, dbias, dout, N, OUT);
}

void mgk_ref_bias_add(const mg_kctx *k, float *x, const float *bias, int64_t N, int64_t C)
{
    (void)k;
    for (int64_t i = 0; i < N; i++)
        for (int64_t c = 0; c < C; c++) x[i * C + c] += bias[c];
}

void mgk_ref_bias_grad(const mg_kctx *k, float *dbias, const float *dout, int64_t N, int64_t C)
{
    (void)k;
    for (int64_t c = 0; c < C; c++) {
        double acc = 0.0;
        for (int64_t i = 0; i < N; i++) acc += dout[i * C + c];
        dbias[c] += (float)acc;
    }
}

void mgk_ref_zero(const mg_kctx *k, float *x, int64_t n)
{
    (void)k;
    if (n > 0) memset(x, 0, (size_t)n * sizeof(float));
}

void mgk_ref_copy(const mg_kctx *k, float *dst, const float *src, int64_t n)
{
    (void)k;
    if (n > 0) memcpy(dst, src, (size_t)n * sizeof(float));
}

void mgk_ref_add(const mg_kctx *k, float *out, const float *a, const float *b, int64_t n)
{
    (void)k;
    for (int64_t i = 0; i < n; i++) out[i] = a[i] + b[i];
}

void mgk_ref_accumulate(const mg_kctx *k, float *y, const float *x, int64_t n)
{
    (void)k;
    for (int64_t i = 0; i < n; i++) y[i] += x[i];
}

void mgk_ref_scale(const mg_kctx *k, float *x, int64_t n, float alpha)
{
    (void)k;
    for (int64_t i = 0; i < n; i++) x[i] *= alpha;
}

/* Chunked double sums: chunk c covers [c*MGK_SUM_CHUNK, ...), summed left to right, and the
 * chunk sums are added in chunk order. The fast versions keep exactly this order. */
double mgk_ref_sumsq(const mg_kctx *k, const float *x, int64_t n)
{
    (void)k;
    double total = 0.0;
    for (int64_t c0 = 0; c0 < n; c0 += MGK_SUM_CHUNK) {
        int64_t c1 = c0 + MGK_SUM_CHUNK < n ? c0 + MGK_SUM_CHUNK : n;
        double acc = 0.0;
        for (int64_t i = c0; i < c1; i++) acc += (double)x[i] * x[i];
        total += acc;
    }
    return total;
}

double mgk_ref_sum(const mg_kctx *k, const float *x, const float *mask, int64_t n)
{
    (void)k;
    double total = 0.0;
    for (int64_t c0 = 0; c0 < n; c0 += MGK_SUM_CHUNK) {
        int64_t c1 = c0 + MGK_SUM_CHUNK < n ? c0 + MGK_SUM_CHUNK : n;
        double acc = 0.0;
        for (int64_t i = c0; i < c1; i++) acc += (double)x[i] * (mask ? mask[i] : 1.0f);
        total += acc;
    }
    return total;
}

void mgk_ref_embedding_fwd(const mg_kctx *k, float *out, const int32_t *ids, const float *table,
                           int64_t N, int64_t C, int64_t row0, int64_t nrows, int accumulate)
{
    (void)k;
    for (int64_t i = 0; i < N; i++) {
        int64_t r = (int64_t)ids[i] - row0;
        int in = r >= 0 && r < nrows;
        for (int64_t c = 0; c < C; c++) {
            float val = in ? table[r * C + c] : 0.0f;
            out[i * C + c] = accumulate ? out[i * C + c] + val : val;
        }
    }
}

void mgk_ref_embedding_bwd(const mg_kctx *k, float *dtable, const float *dout, const int32_t *ids,
                           int64_t N, int64_t C, int64_t row0, int64_t nrows)
{
    (void)k;
    for (int64_t i = 0; i < N; i++) {
        int64_t r = (int64_t)ids[i] - row0;
        if (r < 0 || r >= nrows) continue;
        for (int64_t c = 0; c < C; c++) dtable[r * C + c] += dout[i * C + c];
    }
}

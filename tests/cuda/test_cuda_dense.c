/* test_cuda_dense.c — the CUDA elementwise ops, reductions, bias, embedding and matrix products
 * against the CPU reference on ragged sizes (not multiples of the block size, of the 32-wide
 * column tiles or of the reduction chunk). Tolerances at each check: |cuda - ref| <= atol +
 * rtol |ref|; ops whose float operations are the reference's, in its order, are bitwise.
 */
#include "cuda_test_util.h"

static const int64_t sizes[] = {1, 255, 257, 3 * 16384 + 17};

static void elementwise_case(ct *c, int64_t n)
{
    float *a = ct_rand(c, n, 1, 2.0f), *b = ct_rand(c, n, 2, 1.0f), *o = ct_rand(c, n, 3, 1.0f);
    float *da = CT_UPF(c, a, n), *db = CT_UPF(c, b, n), *dO = CT_UPF(c, o, n);
    mgk_add(&c->ref, o, a, b, n), mgk_add(&c->dev, dO, da, db, n);
    mgk_accumulate(&c->ref, o, a, n), mgk_accumulate(&c->dev, dO, da, n);
    mgk_scale(&c->ref, o, n, -0.3f), mgk_scale(&c->dev, dO, n, -0.3f);
    KT_SAME(c->t, "add/accumulate/scale", ct_down(c, dO, n), o, n);
    float *dc = CT_UPF(c, b, n);
    mgk_copy(&c->ref, b, o, n), mgk_copy(&c->dev, dc, dO, n);
    KT_SAME(c->t, "copy", ct_down(c, dc, n), b, n);
    mgk_zero(&c->dev, dO, n);
    float *z = ct_down(c, dO, n);
    for (int64_t i = 0; i < n; i++) MG_CHECK(c->t, z[i] == 0.0f);
}

MG_TEST(cuda_elementwise)
{
    ct c;
    ct_begin(&c, t);
    for (int s = 0; c.ok && s < 4; s++) elementwise_case(&c, sizes[s]);
    ct_end(&c);
}

/* Double sums: the same bits on every call, within double rounding of the CPU's order. */
static void sums_case(ct *c, int64_t n)
{
    float *x = ct_rand(c, n, 4, 3.0f), *m = ct_rand(c, n, 5, 1.0f);
    float *dx = CT_UPF(c, x, n), *dm = CT_UPF(c, m, n);
    double r[3] = {mgk_sumsq(&c->ref, x, n), mgk_sum(&c->ref, x, NULL, n),
                   mgk_sum(&c->ref, x, m, n)};
    double d[3] = {mgk_sumsq(&c->dev, dx, n), mgk_sum(&c->dev, dx, NULL, n),
                   mgk_sum(&c->dev, dx, dm, n)};
    for (int i = 0; i < 3; i++)
        if (!(fabs(d[i] - r[i]) <= 1e-12 + 1e-12 * fabs(r[i])))
            mg_test_fail(c->t, __FILE__, __LINE__, "sum %d n=%lld: %.17g vs ref %.17g", i,
                         (long long)n, d[i], r[i]);
    MG_CHECK(c->t, mgk_sumsq(&c->dev, dx, n) == d[0]);
    MG_CHECK(c->t, mgk_sum(&c->dev, dx, dm, n) == d[2]);
}

MG_TEST(cuda_sums)
{
    ct c;
    ct_begin(&c, t);
    for (int s = 0; c.ok && s < 4; s++) sums_case(&c, sizes[s]);
    if (c.ok) MG_CHECK(t, mgk_sumsq(&c.dev, NULL, 0) == 0.0);
    ct_end(&c);
}

static void bias_case(ct *c, int64_t N, int64_t C)
{
    float *x = ct_rand(c, N * C, 6, 1.0f), *b = ct_rand(c, C, 7, 1.0f);
    float *g = ct_rand(c, C, 8, 1.0f), *dx = CT_UPF(c, x, N * C), *dg = CT_UPF(c, g, C);
    mgk_bias_add(&c->ref, x, b, N, C), mgk_bias_add(&c->dev, dx, CT_UPF(c, b, C), N, C);
    KT_SAME(c->t, "bias_add", ct_down(c, dx, N * C), x, N * C);
    mgk_bias_grad(&c->ref, g, x, N, C), mgk_bias_grad(&c->dev, dg, dx, N, C);
    KT_CLOSE(c->t, "bias_grad", ct_down(c, dg, C), g, C, 1e-4, 1e-5);
}

MG_TEST(cuda_bias)
{
    ct c;
    ct_begin(&c, t);
    static const int64_t shapes[][2] = {{1, 1}, {131, 77}, {600, 300}, {2000, 33}};
    for (int s = 0; c.ok && s < 4; s++) bias_case(&c, shapes[s][0], shapes[s][1]);
    ct_end(&c);
}

/* ids cover rows below, inside and above the shard [row0, row0 + nrows); hot = a row taking
 * most ids (more occurrences than the backward sorts in shared memory). */
static void embedding_case(ct *c, int64_t N, int64_t C, int64_t row0, int64_t nrows, int hot)
{
    int32_t *ids =
        (int32_t *)ct_host(c, kt_ids(N, 9, (int32_t)row0 - 5, (int32_t)(row0 + nrows + 5)));
    if (hot)
        for (int64_t i = 0; i < N; i++)
            if (i % 5) ids[i] = (int32_t)row0 + 3;
    float *tab = ct_rand(c, nrows * C, 10, 1.0f), *out = ct_rand(c, N * C, 11, 1.0f);
    int32_t *dids = CT_UPI(c, ids, N);
    float *dtab = CT_UPF(c, tab, nrows * C), *dout = CT_UPF(c, out, N * C);
    for (int acc = 0; acc < 2; acc++) {
        mgk_embedding_fwd(&c->ref, out, ids, tab, N, C, row0, nrows, acc);
        mgk_embedding_fwd(&c->dev, dout, dids, dtab, N, C, row0, nrows, acc);
        KT_SAME(c->t, "embedding fwd", ct_down(c, dout, N * C), out, N * C);
    }
    /* the backward adds in position order, as the reference: bitwise */
    mgk_embedding_bwd(&c->ref, tab, out, ids, N, C, row0, nrows);
    mgk_embedding_bwd(&c->dev, dtab, dout, dids, N, C, row0, nrows);
    KT_SAME(c->t, "embedding bwd", ct_down(c, dtab, nrows * C), tab, nrows * C);
}

MG_TEST(cuda_embedding)
{
    ct c;
    ct_begin(&c, t);
    if (c.ok) embedding_case(&c, 1, 1, 0, 3, 0);
    if (c.ok) embedding_case(&c, 300, 70, 7, 50, 0);
    if (c.ok) embedding_case(&c, 1500, 33, 100, 20, 1);
    if (c.ok) embedding_case(&c, 4500, 12, 0, 40, 0); /* 16-byte rows, > 4096 row blocks */
    if (c.ok) embedding_case(&c, 300, 4, 10, 9000, 0); /* a table over 2 steps of the scan */
    ct_end(&c);
}

static void gemm_case(ct *c, int64_t M, int64_t N, int64_t K, int ta, int tb, float beta)
{
    int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 1, ldc = N + 2;
    int64_t na = (ta ? K : M) * lda, nb = (tb ? N : K) * ldb;
    float *A = ct_rand(c, na, 1, 1.0f), *B = ct_rand(c, nb, 2, 1.0f),
          *C = ct_rand(c, M * ldc, 3, 1.0f);
    if (beta == 0.0f) /* C's old contents must be ignored, its padding columns kept */
        for (int64_t i = 0; i < M * ldc; i++) C[i] = i % ldc < N ? NAN : C[i];
    float *dC = CT_UPF(c, C, M * ldc);
    mgk_gemm(&c->ref, C, ldc, A, lda, B, ldb, M, N, K, ta, tb, 0.7f, beta);
    mgk_gemm(&c->dev, dC, ldc, CT_UPF(c, A, na), lda, CT_UPF(c, B, nb), ldb, M, N, K, ta, tb, 0.7f,
             beta);
    KT_CLOSE(c->t, "gemm", ct_down(c, dC, M * ldc), C, M * ldc, 1e-5, 1e-4);
}

MG_TEST(cuda_gemm)
{
    ct c;
    ct_begin(&c, t);
    static const int64_t sz[][3] = {{1, 1, 1}, {33, 70, 129}, {64, 17, 5}, {7, 130, 65}};
    for (int s = 0; c.ok && s < 4; s++)
        for (int tr = 0; tr < 4; tr++) {
            gemm_case(&c, sz[s][0], sz[s][1], sz[s][2], tr & 1, tr >> 1, 0.0f);
            gemm_case(&c, sz[s][0], sz[s][1], sz[s][2], tr & 1, tr >> 1, 1.3f);
        }
    ct_end(&c);
}

MG_TEST(cuda_linear)
{
    ct c;
    ct_begin(&c, t);
    int64_t N = 37, IN = 45, OUT = 29;
    float *x = ct_rand(&c, N * IN, 1, 1.0f), *W = ct_rand(&c, OUT * IN, 2, 0.5f);
    float *b = ct_rand(&c, OUT, 3, 1.0f), *dy = ct_rand(&c, N * OUT, 4, 1.0f);
    float *y = ct_rand(&c, N * OUT, 5, 1.0f), *dx = ct_rand(&c, N * IN, 6, 1.0f);
    float *dW = ct_rand(&c, OUT * IN, 7, 1.0f), *db = ct_rand(&c, OUT, 8, 1.0f);
    float *Dx = c.ok ? CT_UPF(&c, x, N * IN) : NULL, *DW = c.ok ? CT_UPF(&c, W, OUT * IN) : NULL;
    for (int bias = 0; c.ok && bias < 2; bias++) {
        float *Dy = CT_UPF(&c, y, N * OUT);
        mgk_linear_fwd(&c.ref, y, x, W, bias ? b : NULL, N, IN, OUT);
        mgk_linear_fwd(&c.dev, Dy, Dx, DW, bias ? CT_UPF(&c, b, OUT) : NULL, N, IN, OUT);
        KT_CLOSE(t, "linear fwd", ct_down(&c, Dy, N * OUT), y, N * OUT, 1e-5, 1e-4);
    }
    if (c.ok) {
        float *Ddx = CT_UPF(&c, dx, N * IN), *DdW = CT_UPF(&c, dW, OUT * IN),
              *Ddb = CT_UPF(&c, db, OUT);
        mgk_linear_bwd(&c.ref, dx, dW, db, dy, x, W, N, IN, OUT);
        mgk_linear_bwd(&c.dev, Ddx, DdW, Ddb, CT_UPF(&c, dy, N * OUT), Dx, DW, N, IN, OUT);
        KT_CLOSE(t, "linear dinp", ct_down(&c, Ddx, N * IN), dx, N * IN, 1e-5, 1e-4);
        KT_CLOSE(t, "linear dW", ct_down(&c, DdW, OUT * IN), dW, OUT * IN, 1e-5, 1e-4);
        KT_CLOSE(t, "linear dbias", ct_down(&c, Ddb, OUT), db, OUT, 1e-5, 1e-4);
    }
    ct_end(&c);
}

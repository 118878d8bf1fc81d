/* test_kernels.c — every fast (OpenMP/BLAS) kernel against its reference on random inputs of
 * awkward sizes (odd, prime, crossing the fast code's block sizes), with the tolerances
 * stated at each check: |fast - ref| <= atol + rtol * |ref|. Ops documented as
 * thread-count independent are checked bitwise. Backward checks start from non-zero
 * gradients, so the "add into" contract is tested too.
 */
#include "test_kernels_util.h"

#define ATOL 1e-5
#define RTOL 1e-4

static void gemm_case(mg_test_ctx *t, mg_kctx *r, mg_kctx *f, int64_t M, int64_t N, int64_t K,
                      int ta, int tb, float beta)
{
    int64_t lda = (ta ? M : K) + 3, ldb = (tb ? K : N) + 1, ldc = N + 2;
    float *A = kt_randn((ta ? K : M) * lda, 1, 1.0f), *B = kt_randn((tb ? N : K) * ldb, 2, 1.0f);
    float *C1 = kt_randn(M * ldc, 3, 1.0f), *C2 = kt_dup(C1, M * ldc);
    if (beta == 0.0f)
        for (int64_t i = 0; i < M * ldc; i++) C1[i] = C2[i] = NAN; /* must be ignored */
    float *C0 = kt_dup(C1, M * ldc);
    mgk_gemm(r, C1, ldc, A, lda, B, ldb, M, N, K, ta, tb, 0.7f, beta);
    mgk_gemm(f, C2, ldc, A, lda, B, ldb, M, N, K, ta, tb, 0.7f, beta);
    for (int64_t i = 0; i < M; i++)
        if (!KT_CLOSE(t, "gemm", C2 + i * ldc, C1 + i * ldc, N, ATOL, RTOL)) break;
    for (int64_t i = 0; i < M; i++) { /* the padding columns N..ldc-1 of C stay untouched */
        size_t pad = (size_t)(ldc - N) * sizeof(float);
        if (memcmp(C1 + i * ldc + N, C0 + i * ldc + N, pad) ||
            memcmp(C2 + i * ldc + N, C0 + i * ldc + N, pad)) {
            mg_test_fail(t, __FILE__, __LINE__, "gemm %lldx%lldx%lld ta=%d tb=%d: padding of "
                         "row %lld written", (long long)M, (long long)N, (long long)K, ta, tb,
                         (long long)i);
            break;
        }
    }
    free(A), free(B), free(C0), free(C1), free(C2);
}

MG_TEST(kernels_gemm_fast_vs_ref)
{
    mg_kctx r, f;
    kt_ctx_pair(t, &r, &f, 1);
    static const int64_t sz[][3] = {{1, 1, 1}, {33, 70, 129}, {64, 17, 5}, {7, 130, 65}};
    for (int s = 0; s < 4; s++)
        for (int tr = 0; tr < 4; tr++) {
            gemm_case(t, &r, &f, sz[s][0], sz[s][1], sz[s][2], tr & 1, tr >> 1, 0.0f);
            gemm_case(t, &r, &f, sz[s][0], sz[s][1], sz[s][2], tr & 1, tr >> 1, 1.3f);
        }
    kt_ctx_pair_free(&r, &f);
}

MG_TEST(kernels_linear_fast_vs_ref)
{
    mg_kctx r, f;
    kt_ctx_pair(t, &r, &f, 1);
    int64_t N = 37, IN = 45, OUT = 29;
    float *x = kt_randn(N * IN, 1, 1.0f), *W = kt_randn(OUT * IN, 2, 0.5f);
    float *b = kt_randn(OUT, 3, 1.0f), *dy = kt_randn(N * OUT, 4, 1.0f);
    float *y1 = kt_randn(N * OUT, 5, 1.0f), *y2 = kt_dup(y1, N * OUT);
    for (int bias = 0; bias < 2; bias++) {
        mgk_linear_fwd(&r, y1, x, W, bias ? b : NULL, N, IN, OUT);
        mgk_linear_fwd(&f, y2, x, W, bias ? b : NULL, N, IN, OUT);
        KT_CLOSE(t, "linear fwd", y2, y1, N * OUT, ATOL, RTOL);
    }
    float *dx1 = kt_randn(N * IN, 6, 1.0f), *dx2 = kt_dup(dx1, N * IN);
    float *dW1 = kt_randn(OUT * IN, 7, 1.0f), *dW2 = kt_dup(dW1, OUT * IN);
    float *db1 = kt_randn(OUT, 8, 1.0f), *db2 = kt_dup(db1, OUT);
    mgk_linear_bwd(&r, dx1, dW1, db1, dy, x, W, N, IN, OUT);
    mgk_linear_bwd(&f, dx2, dW2, db2, dy, x, W, N, IN, OUT);
    KT_CLOSE(t, "linear dinp", dx2, dx1, N * IN, ATOL, RTOL);
    KT_CLOSE(t, "linear dW", dW2, dW1, OUT * IN, ATOL, RTOL);
    KT_SAME(t, "linear dbias (same order, double sums)", db2, db1, OUT);
    mgk_linear_bwd(&f, NULL, NULL, db2, dy, x, W, N, IN, OUT); /* NULL grads are skipped */
    mgk_linear_bwd(&r, NULL, NULL, db1, dy, x, W, N, IN, OUT);
    KT_SAME(t, "linear dbias only", db2, db1, OUT);
    free(x), free(W), free(b), free(dy), free(y1), free(y2), free(dx1), free(dx2);
    free(dW1), free(dW2), free(db1), free(db2);
    kt_ctx_pair_free(&r, &f);
}

MG_TEST(kernels_elementwise_and_sums)
{
    mg_kctx r, f;
    kt_ctx_pair(t, &r, &f, 1);
    int64_t n = 3 * 16384 + 17, N = 131, C = 77;
    float *a = kt_randn(n, 1, 2.0f), *b = kt_randn(n, 2, 1.0f), *m = kt_randn(n, 3, 1.0f);
    float *o1 = kt_randn(n, 4, 1.0f), *o2 = kt_dup(o1, n);
    mgk_add(&r, o1, a, b, n), mgk_add(&f, o2, a, b, n);
    mgk_accumulate(&r, o1, a, n), mgk_accumulate(&f, o2, a, n);
    mgk_scale(&r, o1, n, -0.3f), mgk_scale(&f, o2, n, -0.3f);
    mgk_bias_add(&r, o1, b, N, C), mgk_bias_add(&f, o2, b, N, C);
    KT_SAME(t, "add/accumulate/scale/bias_add", o1, o2, n);
    mgk_bias_grad(&r, o1, a, N, C), mgk_bias_grad(&f, o2, a, N, C);
    KT_SAME(t, "bias_grad", o1, o2, C);
    double s1 = mgk_sumsq(&r, a, n), s2 = mgk_sumsq(&f, a, n), direct = 0.0;
    for (int64_t i = 0; i < n; i++) direct += (double)a[i] * a[i];
    MG_CHECK(t, s1 == s2);
    MG_CHECK(t, fabs(s1 - direct) <= 1e-12 * direct);
    MG_CHECK(t, mgk_sum(&r, a, m, n) == mgk_sum(&f, a, m, n));
    MG_CHECK(t, mgk_sum(&r, a, NULL, n) == mgk_sum(&f, a, NULL, n));
    MG_CHECK(t, mgk_sumsq(&f, a, 0) == 0.0);
    mgk_zero(&f, o2, n);
    MG_CHECK(t, mgk_sumsq(&r, o2, n) == 0.0);
    free(a), free(b), free(m), free(o1), free(o2);
    kt_ctx_pair_free(&r, &f);
}

/* The fast reductions and the embedding/bias gradients give the same bits for any thread
 * count (1, 2, 3, 5 threads). */
MG_TEST(kernels_fast_thread_count_independent)
{
    int64_t n = 5 * 16384 + 3, N = 61, C = 130, V = 17;
    float *x = kt_randn(n, 1, 1.0f), *dy = kt_randn(N * C, 2, 1.0f);
    int32_t *ids = kt_ids(N, 3, 0, (int32_t)V);
    float *ref_e = calloc((size_t)(V * C), 4), *ref_b = calloc((size_t)C, 4);
    double ref_s = 0.0;
    static const int threads[] = {1, 2, 3, 5};
    for (int i = 0; i < 4; i++) {
        mg_kctx f;
        MG_CHECK_OK(t, mgk_ctx_init(&f, MGK_CPU_FAST, threads[i]));
        float *e = calloc((size_t)(V * C), 4), *b = calloc((size_t)C, 4);
        double s = mgk_sumsq(&f, x, n);
        mgk_embedding_bwd(&f, e, dy, ids, N, C, 0, V);
        mgk_bias_grad(&f, b, dy, N, C);
        if (i == 0) {
            ref_s = s;
            memcpy(ref_e, e, (size_t)(V * C) * 4), memcpy(ref_b, b, (size_t)C * 4);
        }
        MG_CHECK(t, s == ref_s);
        KT_SAME(t, "embedding bwd across thread counts", e, ref_e, V * C);
        KT_SAME(t, "bias grad across thread counts", b, ref_b, C);
        free(e), free(b);
        mgk_ctx_free(&f);
    }
    free(x), free(dy), free(ids), free(ref_e), free(ref_b);
}

MG_TEST(kernels_embedding_fast_vs_ref_and_shards)
{
    mg_kctx r, f;
    kt_ctx_pair(t, &r, &f, 1);
    int64_t N = 53, C = 70, V = 31;
    int32_t *ids = kt_ids(N, 1, 0, (int32_t)V);
    float *tab = kt_randn(V * C, 2, 1.0f), *dy = kt_randn(N * C, 3, 1.0f);
    float *o1 = kt_randn(N * C, 4, 1.0f), *o2 = kt_dup(o1, N * C);
    mgk_embedding_fwd(&r, o1, ids, tab, N, C, 0, V, 1);
    mgk_embedding_fwd(&f, o2, ids, tab, N, C, 0, V, 1);
    KT_SAME(t, "embedding fwd accumulate", o1, o2, N * C);
    /* two vocabulary shards [0,12) and [12,V) add up to the full lookup */
    mgk_embedding_fwd(&r, o1, ids, tab, N, C, 0, V, 0);
    mgk_embedding_fwd(&f, o2, ids, tab, N, C, 0, 12, 0);
    mgk_embedding_fwd(&f, o2, ids, tab + 12 * C, N, C, 12, V - 12, 1);
    KT_SAME(t, "embedding shards", o1, o2, N * C);
    float *d1 = kt_randn(V * C, 5, 1.0f), *d2 = kt_dup(d1, V * C);
    mgk_embedding_bwd(&r, d1, dy, ids, N, C, 0, V);
    mgk_embedding_bwd(&f, d2, dy, ids, N, C, 0, 12);
    mgk_embedding_bwd(&f, d2 + 12 * C, dy, ids, N, C, 12, V - 12);
    KT_SAME(t, "embedding bwd (shards, same order)", d1, d2, V * C);
    free(ids), free(tab), free(dy), free(o1), free(o2), free(d1), free(d2);
    kt_ctx_pair_free(&r, &f);
}

static void norm_case(mg_test_ctx *t, mg_kctx *r, mg_kctx *f, int rms, int64_t N, int64_t C)
{
    float *x = kt_randn(N * C, 1, 2.0f), *w = kt_randn(C, 2, 1.0f), *b = kt_randn(C, 3, 1.0f);
    float *dy = kt_randn(N * C, 4, 1.0f);
    for (int64_t i = 0; i < N * C; i++) x[i] += (float)(i % 5); /* non-zero row means */
    float *y1 = kt_randn(N * C, 5, 1.0f), *y2 = kt_dup(y1, N * C);
    float *mu1 = kt_randn(N, 6, 1.0f), *mu2 = kt_dup(mu1, N);
    float *rs1 = kt_randn(N, 7, 1.0f), *rs2 = kt_dup(rs1, N);
    float *dx1 = kt_randn(N * C, 8, 1.0f), *dx2 = kt_dup(dx1, N * C);
    float *dw1 = kt_randn(C, 9, 1.0f), *dw2 = kt_dup(dw1, C);
    float *db1 = kt_randn(C, 10, 1.0f), *db2 = kt_dup(db1, C);
    if (rms) {
        mgk_rmsnorm_fwd(r, y1, rs1, x, w, N, C, 1e-5f);
        mgk_rmsnorm_fwd(f, y2, rs2, x, w, N, C, 1e-5f);
        mgk_rmsnorm_bwd(r, dx1, dw1, dy, x, w, rs1, N, C);
        mgk_rmsnorm_bwd(f, dx2, dw2, dy, x, w, rs1, N, C);
    } else {
        mgk_layernorm_fwd(r, y1, mu1, rs1, x, w, b, N, C, 1e-5f);
        mgk_layernorm_fwd(f, y2, mu2, rs2, x, w, b, N, C, 1e-5f);
        KT_CLOSE(t, "layernorm mean", mu2, mu1, N, 1e-6, 1e-6);
        mgk_layernorm_bwd(r, dx1, dw1, db1, dy, x, w, mu1, rs1, N, C);
        mgk_layernorm_bwd(f, dx2, dw2, db2, dy, x, w, mu1, rs1, N, C);
        KT_CLOSE(t, "layernorm db", db2, db1, C, ATOL, RTOL);
    }
    KT_CLOSE(t, rms ? "rmsnorm out" : "layernorm out", y2, y1, N * C, ATOL, RTOL);
    KT_CLOSE(t, "norm rstd", rs2, rs1, N, 1e-6, 1e-5);
    KT_CLOSE(t, "norm dinp", dx2, dx1, N * C, ATOL, RTOL);
    KT_CLOSE(t, "norm dw", dw2, dw1, C, ATOL, RTOL);
    free(x), free(w), free(b), free(dy), free(y1), free(y2), free(mu1), free(mu2), free(rs1);
    free(rs2), free(dx1), free(dx2), free(dw1), free(dw2), free(db1), free(db2);
}

MG_TEST(kernels_norms_fast_vs_ref)
{
    mg_kctx r, f;
    kt_ctx_pair(t, &r, &f, 1);
    norm_case(t, &r, &f, 0, 37, 77);
    norm_case(t, &r, &f, 1, 37, 77);
    norm_case(t, &r, &f, 0, 3, 130);
    norm_case(t, &r, &f, 1, 1, 1);
    kt_ctx_pair_free(&r, &f);
}

MG_TEST(kernels_activations_fast_vs_ref)
{
    mg_kctx r, f;
    kt_ctx_pair(t, &r, &f, 1);
    int64_t N = 23, F = 41, n = N * 2 * F;
    float *x = kt_randn(n, 1, 5.0f), *dy = kt_randn(n, 2, 1.0f);
    float *y1 = kt_randn(n, 3, 1.0f), *y2 = kt_dup(y1, n);
    float *d1 = kt_randn(n, 4, 1.0f), *d2 = kt_dup(d1, n);
    for (int kind = 0; kind < 2; kind++) {
        mgk_gelu_fwd(&r, y1, x, n, (mgk_gelu_kind)kind);
        mgk_gelu_fwd(&f, y2, x, n, (mgk_gelu_kind)kind);
        KT_CLOSE(t, kind ? "gelu tanh fwd" : "gelu erf fwd", y2, y1, n, 1e-6, 1e-5);
        mgk_gelu_bwd(&r, d1, dy, x, n, (mgk_gelu_kind)kind);
        mgk_gelu_bwd(&f, d2, dy, x, n, (mgk_gelu_kind)kind);
        KT_CLOSE(t, kind ? "gelu tanh bwd" : "gelu erf bwd", d2, d1, n, 1e-6, 1e-5);
    }
    mgk_swiglu_fwd(&r, y1, x, N, F);
    mgk_swiglu_fwd(&f, y2, x, N, F);
    KT_CLOSE(t, "swiglu fwd", y2, y1, N * F, 1e-6, 1e-5);
    mgk_swiglu_bwd(&r, d1, dy, x, N, F);
    mgk_swiglu_bwd(&f, d2, dy, x, N, F);
    KT_CLOSE(t, "swiglu bwd", d2, d1, n, 1e-6, 1e-5);
    free(x), free(dy), free(y1), free(y2), free(d1), free(d2);
    kt_ctx_pair_free(&r, &f);
}

MG_TEST(kernels_rope_fast_vs_ref)
{
    mg_kctx r, f;
    kt_ctx_pair(t, &r, &f, 1);
    int64_t B = 2, T = 19, H = 3, D = 14, n = B * T * H * D;
    int32_t *pos = kt_ids(B * T, 1, 0, 4000);
    float *x = kt_randn(n, 2, 1.0f), *dy = kt_randn(n, 3, 1.0f);
    float *y1 = kt_randn(n, 4, 1.0f), *y2 = kt_dup(y1, n);
    float *d1 = kt_randn(n, 5, 1.0f), *d2 = kt_dup(d1, n);
    for (int c = 0; c < 2; c++) {
        int64_t rot = c ? 10 : D;
        const int32_t *p = c ? pos : NULL;
        mgk_rope_fwd(&r, y1, x, p, B, T, H, D, rot, 10000.0f);
        mgk_rope_fwd(&f, y2, x, p, B, T, H, D, rot, 10000.0f);
        KT_SAME(t, "rope fwd (same fp32 formula)", y1, y2, n);
        memcpy(y2, x, (size_t)n * sizeof(float));
        mgk_rope_fwd(&f, y2, y2, p, B, T, H, D, rot, 10000.0f);
        KT_SAME(t, "rope fwd in place", y1, y2, n);
        mgk_rope_bwd(&r, d1, dy, p, B, T, H, D, rot, 500000.0f);
        mgk_rope_bwd(&f, d2, dy, p, B, T, H, D, rot, 500000.0f);
        KT_SAME(t, "rope bwd", d1, d2, n);
    }
    free(pos), free(x), free(dy), free(y1), free(y2), free(d1), free(d2);
    kt_ctx_pair_free(&r, &f);
}

static void attn_case(mg_test_ctx *t, mgk_attn_dims d, int use_seg)
{
    mg_kctx r, f;
    MG_CHECK_OK(t, mgk_ctx_init(&r, MGK_CPU_REF, 0));
    MG_CHECK_OK(t, mgk_ctx_init(&f, MGK_CPU_FAST, 0));
    MG_CHECK_OK(t, mgk_ctx_reserve(&r, mgk_attn_scratch_numel(&r, &d)));
    MG_CHECK_OK(t, mgk_ctx_reserve(&f, mgk_attn_scratch_numel(&f, &d)));
    int64_t nq = d.B * d.T * d.Hq * d.D, nkv = d.B * d.T * d.Hkv * d.D;
    int64_t ns = mgk_attn_saved_numel(&f, &d);
    int32_t *seg = kt_ids(d.B * d.T, 1, 0, 1);
    for (int64_t i = 0; i < d.B * d.T; i++) seg[i] = (int32_t)((i % d.T) / 11); /* docs of 11 */
    float *q = kt_randn(nq, 2, 1.5f), *k = kt_randn(nkv, 3, 1.5f), *v = kt_randn(nkv, 4, 1.0f);
    float *dy = kt_randn(nq, 5, 1.0f), *o1 = kt_randn(nq, 6, 1.0f), *o2 = kt_dup(o1, nq);
    float *s1 = kt_randn(ns, 7, 1.0f), *s2 = kt_dup(s1, ns);
    mgk_attn_fwd(&r, &d, o1, s1, q, k, v, use_seg ? seg : NULL);
    mgk_attn_fwd(&f, &d, o2, s2, q, k, v, use_seg ? seg : NULL);
    KT_CLOSE(t, "attention out", o2, o1, nq, ATOL, RTOL);
    KT_CLOSE(t, "attention probabilities", s2, s1, ns, 1e-6, 1e-4);
    float *dq1 = kt_randn(nq, 8, 1.0f), *dq2 = kt_dup(dq1, nq);
    float *dk1 = kt_randn(nkv, 9, 1.0f), *dk2 = kt_dup(dk1, nkv);
    float *dv1 = kt_randn(nkv, 10, 1.0f), *dv2 = kt_dup(dv1, nkv);
    mgk_attn_bwd(&r, &d, dq1, dk1, dv1, dy, s1, q, k, v, use_seg ? seg : NULL);
    mgk_attn_bwd(&f, &d, dq2, dk2, dv2, dy, s1, q, k, v, use_seg ? seg : NULL);
    KT_CLOSE(t, "attention dq", dq2, dq1, nq, ATOL, RTOL);
    KT_CLOSE(t, "attention dk", dk2, dk1, nkv, ATOL, RTOL);
    KT_CLOSE(t, "attention dv", dv2, dv1, nkv, ATOL, RTOL);
    free(seg), free(q), free(k), free(v), free(dy), free(o1), free(o2), free(s1), free(s2);
    free(dq1), free(dq2), free(dk1), free(dk2), free(dv1), free(dv2);
    kt_ctx_pair_free(&r, &f);
}

MG_TEST(kernels_attention_fast_vs_ref)
{
    attn_case(t, (mgk_attn_dims){2, 67, 6, 2, 24, 0.2041241f}, 0); /* GQA, T crosses 64 */
    attn_case(t, (mgk_attn_dims){2, 67, 6, 2, 24, 0.2041241f}, 1); /* + document mask */
    attn_case(t, (mgk_attn_dims){1, 130, 3, 3, 7, 0.3779645f}, 0); /* MHA, odd head dim */
    attn_case(t, (mgk_attn_dims){3, 1, 4, 1, 5, 0.4472136f}, 0);   /* T = 1, MQA */
}

MG_TEST(kernels_qkv_split_merge)
{
    mg_kctx r, f;
    kt_ctx_pair(t, &r, &f, 1);
    int64_t N = 7, Hq = 6, Hkv = 2, D = 3, rep = 3, W = (Hq + 2 * Hkv) * D;
    float *qkv = kt_randn(N * W, 1, 1.0f), *back = kt_randn(N * W, 2, 1.0f);
    float *q1 = malloc((size_t)(N * Hq * D) * 4), *q2 = malloc((size_t)(N * Hq * D) * 4);
    float *k1 = malloc((size_t)(N * Hkv * D) * 4), *k2 = malloc((size_t)(N * Hkv * D) * 4);
    float *v1 = malloc((size_t)(N * Hkv * D) * 4), *v2 = malloc((size_t)(N * Hkv * D) * 4);
    mgk_qkv_split(&r, q1, k1, v1, qkv, N, Hq, Hkv, D);
    mgk_qkv_split(&f, q2, k2, v2, qkv, N, Hq, Hkv, D);
    KT_SAME(t, "qkv split q", q1, q2, N * Hq * D);
    KT_SAME(t, "qkv split k", k1, k2, N * Hkv * D);
    KT_SAME(t, "qkv split v", v1, v2, N * Hkv * D);
    /* Megatron's per-group order: row i, head h = g*rep + j at (g*(rep+2) + j)*D */
    MG_CHECK(t, q1[(4 * Hq + 5) * D + 2] == qkv[4 * W + (1 * (rep + 2) + 2) * D + 2]);
    MG_CHECK(t, k1[(4 * Hkv + 1) * D + 1] == qkv[4 * W + (1 * (rep + 2) + rep) * D + 1]);
    MG_CHECK(t, v1[(6 * Hkv + 0) * D + 0] == qkv[6 * W + (0 * (rep + 2) + rep + 1) * D]);
    mgk_qkv_merge(&f, back, q1, k1, v1, N, Hq, Hkv, D);
    KT_SAME(t, "qkv merge(split(x)) == x", back, qkv, N * W);
    mgk_qkv_merge(&r, back, q1, k1, v1, N, Hq, Hkv, D);
    KT_SAME(t, "qkv merge ref", back, qkv, N * W);
    free(qkv), free(back), free(q1), free(q2), free(k1), free(k2), free(v1), free(v2);
    kt_ctx_pair_free(&r, &f);
}

static void xent_case(mg_test_ctx *t, mg_kctx *r, mg_kctx *f, int64_t N, int64_t Vp, int64_t V)
{
    float *x = kt_randn(N * Vp, 1, 4.0f), *mask = kt_randn(N, 2, 1.0f);
    int32_t *tg = kt_ids(N, 3, 0, (int32_t)V);
    for (int64_t i = V; i < Vp; i++) x[i] = 1e30f; /* padding must be ignored */
    float *l1 = malloc((size_t)N * 4), *l2 = malloc((size_t)N * 4);
    float *e1 = malloc((size_t)N * 4), *e2 = malloc((size_t)N * 4);
    mgk_xent_fwd(r, l1, e1, x, tg, N, Vp, V);
    mgk_xent_fwd(f, l2, e2, x, tg, N, Vp, V);
    KT_CLOSE(t, "xent loss", l2, l1, N, 1e-5, 1e-5);
    KT_CLOSE(t, "xent lse", e2, e1, N, 1e-5, 1e-6);
    float *g1 = malloc((size_t)(N * Vp) * 4), *g2 = kt_dup(x, N * Vp);
    mgk_xent_bwd(r, g1, x, e1, tg, mask, 0.37f, N, Vp, 0, V);
    mgk_xent_bwd(f, g2, g2, e1, tg, mask, 0.37f, N, Vp, 0, V); /* in place */
    KT_CLOSE(t, "xent dlogits", g2, g1, N * Vp, 1e-7, 1e-5);
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = V; j < Vp; j++) MG_CHECK(t, g2[i * Vp + j] == 0.0f);
    free(x), free(mask), free(tg), free(l1), free(l2), free(e1), free(e2), free(g1), free(g2);
}

MG_TEST(kernels_xent_fast_vs_ref)
{
    mg_kctx r, f;
    kt_ctx_pair(t, &r, &f, 1);
    xent_case(t, &r, &f, 29, 128, 101);
    xent_case(t, &r, &f, 5, 257, 257);
    xent_case(t, &r, &f, 1, 3, 1);
    kt_ctx_pair_free(&r, &f);
}

/* Three vocabulary shards (the last one partly padding, one more entirely padding), combined
 * as the tensor-parallel code will: max, rescale, sum, finish. */
MG_TEST(kernels_xent_shards_equal_full)
{
    mg_kctx r, f;
    kt_ctx_pair(t, &r, &f, 1);
    int64_t N = 17, Vl = 40, Vp = 4 * Vl, V = 101;
    float *x = kt_randn(N * Vp, 1, 3.0f), *full = malloc((size_t)N * 4), *lse = malloc(N * 4);
    int32_t *tg = kt_ids(N, 2, 0, (int32_t)V);
    mgk_xent_fwd(&r, full, lse, x, tg, N, Vp, V);
    float mx[4][17], sm[4][17], tl[4][17], gmax[17], gsum[17], gt[17], loss[17], l2[17];
    float *sh = malloc((size_t)(N * Vl) * 4);
    for (int s = 0; s < 4; s++) {
        for (int64_t i = 0; i < N; i++) memcpy(sh + i * Vl, x + i * Vp + s * Vl, Vl * 4);
        mgk_xent_partial(&f, mx[s], sm[s], tl[s], sh, tg, N, Vl, s * Vl, V);
    }
    for (int64_t i = 0; i < N; i++) {
        gmax[i] = fmaxf(fmaxf(mx[0][i], mx[1][i]), fmaxf(mx[2][i], mx[3][i]));
        MG_CHECK(t, isinf(mx[3][i]) && sm[3][i] == 0.0f);
    }
    for (int s = 0; s < 4; s++) mgk_xent_rescale(&f, sm[s], mx[s], gmax, N);
    for (int64_t i = 0; i < N; i++) {
        gsum[i] = sm[0][i] + sm[1][i] + sm[2][i] + sm[3][i];
        gt[i] = tl[0][i] + tl[1][i] + tl[2][i] + tl[3][i];
    }
    mgk_xent_finish(&f, loss, l2, gmax, gsum, gt, N);
    KT_CLOSE(t, "sharded xent loss", loss, full, N, 1e-5, 1e-5);
    KT_CLOSE(t, "sharded xent lse", l2, lse, N, 1e-5, 1e-6);
    free(x), free(full), free(lse), free(tg), free(sh);
    kt_ctx_pair_free(&r, &f);
}

MG_TEST(kernels_adamw_fast_vs_ref_and_formula)
{
    mg_kctx r, f;
    kt_ctx_pair(t, &r, &f, 1);
    int64_t n = 1001;
    float *p1 = kt_randn(n, 1, 1.0f), *p2 = kt_dup(p1, n), *p0 = kt_dup(p1, n);
    float *m1 = calloc((size_t)n, 4), *m2 = calloc((size_t)n, 4);
    float *v1 = calloc((size_t)n, 4), *v2 = calloc((size_t)n, 4);
    double pd = p0[7], md = 0.0, vd = 0.0;
    mgk_adamw_hp hp = {1e-2, 0.9, 0.95, 1e-8, 0.1, 1, 0.5};
    for (int step = 1; step <= 5; step++) {
        float *g = kt_randn(n, 10 + (uint64_t)step, 1.0f);
        hp.step = step;
        mgk_adamw(&r, p1, m1, v1, g, n, &hp, 1);
        mgk_adamw(&f, p2, m2, v2, g, n, &hp, 1);
        double gd = g[7] * 0.5; /* the textbook formula in double for one element */
        pd *= 1.0 - 1e-2 * 0.1;
        md = 0.9 * md + 0.1 * gd, vd = 0.95 * vd + 0.05 * gd * gd;
        pd -= 1e-2 * (md / (1 - pow(0.9, step))) / (sqrt(vd / (1 - pow(0.95, step))) + 1e-8);
        free(g);
    }
    KT_SAME(t, "adamw params", p1, p2, n);
    KT_SAME(t, "adamw m", m1, m2, n);
    KT_SAME(t, "adamw v", v1, v2, n);
    MG_CHECK(t, fabs(p1[7] - pd) <= 1e-6 + 1e-5 * fabs(pd));
    /* a zero gradient on zero moments moves a parameter only through weight decay */
    float *z = calloc((size_t)n, 4), *mz = calloc((size_t)n, 4), *vz = calloc((size_t)n, 4);
    float *pc = kt_dup(p0, n);
    hp.step = 1;
    mgk_adamw(&f, p0, mz, vz, z, n, &hp, 0);
    KT_SAME(t, "adamw no decay, zero grad", p0, pc, n);
    mgk_adamw(&f, p0, mz, vz, z, n, &hp, 1);
    MG_CHECK(t, p0[3] == pc[3] * (float)(1.0 - 1e-2 * 0.1) && p0[3] != pc[3]);
    free(pc);
    free(p1), free(p2), free(p0), free(m1), free(m2), free(v1), free(v2), free(z), free(mz);
    free(vz);
    kt_ctx_pair_free(&r, &f);
}

/* The other branches of the element update (beta1 <= 0.5, no gradient scale) over several
 * parallel blocks with a ragged tail: fast equals the reference bitwise. */
MG_TEST(kernels_adamw_fast_blocks_and_small_beta1)
{
    mg_kctx r, f;
    kt_ctx_pair(t, &r, &f, 3);
    int64_t n = 3 * 16384 + 13;
    float *p1 = kt_randn(n, 2, 1.0f), *p2 = kt_dup(p1, n);
    float *m1 = kt_randn(n, 3, 0.1f), *m2 = kt_dup(m1, n);
    float *v1 = kt_randn(n, 4, 0.1f), *v2;
    for (int64_t i = 0; i < n; i++) v1[i] *= v1[i];
    v2 = kt_dup(v1, n);
    mgk_adamw_hp hp = {3e-3, 0.3, 0.99, 1e-6, 0.05, 7, 1.0};
    for (int step = 7; step <= 9; step++) {
        float *g = kt_randn(n, 20 + (uint64_t)step, 2.0f);
        hp.step = step;
        mgk_adamw(&r, p1, m1, v1, g, n, &hp, step & 1);
        mgk_adamw(&f, p2, m2, v2, g, n, &hp, step & 1);
        free(g);
    }
    KT_SAME(t, "adamw params", p1, p2, n);
    KT_SAME(t, "adamw m", m1, m2, n);
    KT_SAME(t, "adamw v", v1, v2, n);
    free(p1), free(p2), free(m1), free(m2), free(v1), free(v2);
    kt_ctx_pair_free(&r, &f);
}

MG_TEST(kernels_ctx)
{
    mg_kctx k;
    MG_CHECK_ERR(t, mgk_ctx_init(&k, MGK_CUDA, 0), MG_ERR_UNSUPPORTED, "not built with CUDA");
    MG_CHECK_OK(t, mgk_ctx_init(&k, MGK_CPU_FAST, 3));
    MG_CHECK_EQ_INT(t, k.nthreads, 3);
    MG_CHECK_OK(t, mgk_ctx_reserve(&k, 10));
    MG_CHECK_OK(t, mgk_ctx_reserve(&k, 5));
    MG_CHECK_EQ_INT(t, k.scratch_numel, 10);
    mgk_ctx_free(&k);
    mgk_ctx_free(NULL);
    MG_CHECK_EQ_STR(t, mgk_backend_name(MGK_CPU_REF), "cpu_ref");
}

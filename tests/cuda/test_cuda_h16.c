/* test_cuda_h16.c — the 16-bit variants of kernels_cuda.h (and the fused residual + norm ops),
 * each test once with bf16 and once with fp16 contexts, against the CPU reference run on the
 * same 16-bit input values (ct_round16). Tolerances: a 16-bit result is rounded once,
 * |cuda - ref| <= ct_tol16 (1 + |ref|) (bf16 1e-2, fp16 2e-3: the type's relative rounding
 * plus fp32-vs-reference arithmetic); fp32 results computed from 16-bit inputs use the fp32
 * tolerances; copies, the embedding backward and AdamW's fp32 master weights and 16-bit copy
 * are bitwise. The 16-bit attention has its own file (test_cuda_attn_h16.c).
 */
#include "cuda_test_util.h"

/* add, bias add / grad, embedding forward / backward on rows of C (70: one element per thread;
 * 64: 16-byte vectors). */
static void elementwise_case(ct *c, int64_t C)
{
    int64_t N = 300, row0 = 7, nrows = 50;
    mgk_h16 *Da, *Db, *Dbias, *Dtab, *Ddy;
    float *a = c->ok ? ct_in16(c, N * C, 1, 2.0f, &Da) : NULL;
    float *b = c->ok ? ct_in16(c, N * C, 2, 2.0f, &Db) : NULL;
    float *bias = c->ok ? ct_in16(c, C, 3, 1.0f, &Dbias) : NULL;
    if (c->ok) {
        mgk_cuda_add_h16(&c->dev, Da, Da, Db, N * C);
        mgk_add(&c->ref, a, a, b, N * C);
        mgk_cuda_bias_add_h16(&c->dev, Da, Dbias, N, C);
        mgk_bias_add(&c->ref, ct_round16(c, a, N * C), bias, N, C);
        KT_CLOSE(c->t, ct_label(c, "add + bias_add"), ct_down16(c, Da, N * C), a, N * C,
                 ct_tol16(c), ct_tol16(c));
        mgk_h16 *Dc;
        ct_in16(c, N * C, 10, 1.0f, &Dc);
        mgk_cuda_copy_h16(&c->dev, Dc, Da, N * C);
        KT_SAME(c->t, ct_label(c, "copy"), ct_down16(c, Dc, N * C), ct_down16(c, Da, N * C),
                N * C);
        float *g = ct_rand(c, C, 4, 1.0f), *Dg = CT_UPF(c, g, C);
        mgk_cuda_bias_grad_h16(&c->dev, Dg, Db, N, C);
        mgk_bias_grad(&c->ref, g, b, N, C);
        KT_CLOSE(c->t, ct_label(c, "bias_grad"), ct_down(c, Dg, C), g, C, 1e-4, 1e-5);
        int32_t *ids = (int32_t *)ct_host(c, kt_ids(N, 5, 0, 70));
        int32_t *Dids = CT_UPI(c, ids, N);
        float *tab = ct_in16(c, nrows * C, 6, 1.0f, &Dtab), *out = ct_rand(c, N * C, 7, 1.0f);
        mgk_h16 *Dout = ct_up16(c, ct_round16(c, out, N * C), N * C);
        mgk_cuda_embedding_fwd_h16(&c->dev, Dout, Dids, Dtab, N, C, row0, nrows, 1);
        mgk_embedding_fwd(&c->ref, out, ids, tab, N, C, row0, nrows, 1);
        KT_CLOSE(c->t, ct_label(c, "embedding fwd"), ct_down16(c, Dout, N * C),
                 ct_round16(c, out, N * C), N * C, 0.0, 0.0);
        float *dy = ct_in16(c, N * C, 8, 1.0f, &Ddy), *dt = ct_rand(c, nrows * C, 9, 1.0f);
        float *Ddt = CT_UPF(c, dt, nrows * C);
        mgk_cuda_embedding_bwd_h16(&c->dev, Ddt, Ddy, Dids, N, C, row0, nrows);
        mgk_embedding_bwd(&c->ref, dt, dy, ids, N, C, row0, nrows);
        KT_SAME(c->t, ct_label(c, "embedding bwd (fp32 table gradient)"),
                ct_down(c, Ddt, nrows * C), dt, nrows * C);
    }
}

static void elementwise_embedding_cases(ct *c)
{
    elementwise_case(c, 70);
    elementwise_case(c, 64);
}

MG_TEST(cuda_h16_elementwise_embedding)
{
    ct_each_half(t, elementwise_embedding_cases);
}

static void norm_case(ct *c, int64_t N, int64_t C, int rms)
{
    mgk_h16 *Dx, *Dw, *Db, *Ddy, *Ddx, *Dy;
    float *x = ct_in16(c, N * C, 1, 2.0f, &Dx), *w = ct_in16(c, C, 2, 1.0f, &Dw);
    float *b = ct_in16(c, C, 3, 1.0f, &Db), *dy = ct_in16(c, N * C, 4, 1.0f, &Ddy);
    float *dx = ct_in16(c, N * C, 5, 1.0f, &Ddx), *y = ct_rand(c, N * C, 6, 1.0f);
    float *mu = ct_rand(c, N, 7, 1.0f), *rs = ct_rand(c, N, 8, 1.0f), *dw = ct_rand(c, C, 9, 1.0f);
    float *db = ct_rand(c, C, 10, 1.0f), *Dmu = CT_UPF(c, mu, N), *Drs = CT_UPF(c, rs, N);
    float *Ddw = CT_UPF(c, dw, C), *Ddb = CT_UPF(c, db, C);
    Dy = (mgk_h16 *)ct_dalloc(c, (size_t)(N * C) * sizeof(mgk_h16));
    if (rms) {
        mgk_cuda_rmsnorm_fwd_h16(&c->dev, Dy, Drs, Dx, Dw, N, C, 1e-6f);
        mgk_rmsnorm_fwd(&c->ref, y, rs, x, w, N, C, 1e-6f);
        mgk_cuda_rmsnorm_bwd_h16(&c->dev, Ddx, Ddw, Ddy, Dx, Dw, Drs, N, C);
        mgk_rmsnorm_bwd(&c->ref, dx, dw, dy, x, w, rs, N, C);
    } else {
        mgk_cuda_layernorm_fwd_h16(&c->dev, Dy, Dmu, Drs, Dx, Dw, Db, N, C, 1e-5f);
        mgk_layernorm_fwd(&c->ref, y, mu, rs, x, w, b, N, C, 1e-5f);
        mgk_cuda_layernorm_bwd_h16(&c->dev, Ddx, Ddw, Ddb, Ddy, Dx, Dw, Dmu, Drs, N, C);
        mgk_layernorm_bwd(&c->ref, dx, dw, db, dy, x, w, mu, rs, N, C);
        KT_CLOSE(c->t, ct_label(c, "layernorm db"), ct_down(c, Ddb, C), db, C, 1e-4, 1e-4);
    }
    KT_CLOSE(c->t, ct_label(c, "norm out"), ct_down16(c, Dy, N * C), y, N * C, ct_tol16(c),
             ct_tol16(c));
    KT_CLOSE(c->t, ct_label(c, "norm rstd"), ct_down(c, Drs, N), rs, N, 1e-5, 1e-4);
    KT_CLOSE(c->t, ct_label(c, "norm dinp"), ct_down16(c, Ddx, N * C), dx, N * C, ct_tol16(c),
             ct_tol16(c));
    KT_CLOSE(c->t, ct_label(c, "norm dw"), ct_down(c, Ddw, C), dw, C, 1e-4, 1e-4);
}

/* resid = a + b then the norm, against mgk_add + the norm on the reference. */
static void residual_case(ct *c, int64_t N, int64_t C, int rms, int bf)
{
    float *a = ct_rand(c, N * C, 11, 2.0f), *b = ct_rand(c, N * C, 12, 2.0f);
    float *w = ct_rand(c, C, 13, 1.0f), *bias = ct_rand(c, C, 14, 1.0f);
    float *r = ct_rand(c, N * C, 15, 1.0f), *y = ct_rand(c, N * C, 16, 1.0f);
    float *mu = ct_rand(c, N, 17, 1.0f), *rs = ct_rand(c, N, 18, 1.0f);
    float *Dmu = CT_UPF(c, mu, N), *Drs = CT_UPF(c, rs, N), *Dr, *Dy;
    if (bf) {
        mgk_h16 *Ba, *Bb, *Bw, *Bbias;
        ct_round16(c, a, N * C), ct_round16(c, b, N * C), ct_round16(c, w, C);
        ct_round16(c, bias, C);
        Ba = ct_up16(c, a, N * C), Bb = ct_up16(c, b, N * C), Bw = ct_up16(c, w, C);
        Bbias = ct_up16(c, bias, C);
        mgk_h16 *Br = (mgk_h16 *)ct_dalloc(c, (size_t)(N * C) * 2);
        mgk_h16 *By = (mgk_h16 *)ct_dalloc(c, (size_t)(N * C) * 2);
        if (rms) mgk_cuda_residual_rmsnorm_fwd_h16(&c->dev, Br, By, Drs, Ba, Bb, Bw, N, C, 1e-6f);
        else mgk_cuda_residual_layernorm_fwd_h16(&c->dev, Br, By, Dmu, Drs, Ba, Bb, Bw, Bbias, N,
                                                 C, 1e-5f);
        Dr = ct_down16(c, Br, N * C), Dy = ct_down16(c, By, N * C);
    } else {
        float *Gr = (float *)ct_dalloc(c, (size_t)(N * C) * 4),
              *Gy = (float *)ct_dalloc(c, (size_t)(N * C) * 4);
        float *Ga = CT_UPF(c, a, N * C), *Gb = CT_UPF(c, b, N * C), *Gw = CT_UPF(c, w, C);
        if (rms) mgk_cuda_residual_rmsnorm_fwd(&c->dev, Gr, Gy, Drs, Ga, Gb, Gw, N, C, 1e-6f);
        else mgk_cuda_residual_layernorm_fwd(&c->dev, Gr, Gy, Dmu, Drs, Ga, Gb, Gw,
                                             CT_UPF(c, bias, C), N, C, 1e-5f);
        Dr = ct_down(c, Gr, N * C), Dy = ct_down(c, Gy, N * C);
    }
    mgk_add(&c->ref, r, a, b, N * C);
    if (bf) ct_round16(c, r, N * C);
    if (rms) mgk_rmsnorm_fwd(&c->ref, y, rs, r, w, N, C, 1e-6f);
    else mgk_layernorm_fwd(&c->ref, y, mu, rs, r, w, bias, N, C, 1e-5f);
    KT_SAME(c->t, bf ? ct_label(c, "residual sum") : "residual sum (fp32)", Dr, r, N * C);
    KT_CLOSE(c->t, "residual norm out", Dy, y, N * C, bf ? ct_tol16(c) : 1e-5,
             bf ? ct_tol16(c) : 1e-4);
    KT_CLOSE(c->t, "residual norm rstd", ct_down(c, Drs, N), rs, N, 1e-5, 1e-4);
}

static void norms_cases(ct *c)
{
    static const int64_t shapes[][2] = {{5, 33}, {37, 1000}, {300, 77}, {70, 768}, {9, 64}};
    for (int s = 0; c->ok && s < 5; s++)
        for (int rms = 0; rms < 2; rms++) {
            norm_case(c, shapes[s][0], shapes[s][1], rms);
            residual_case(c, shapes[s][0], shapes[s][1], rms, 0);
            residual_case(c, shapes[s][0], shapes[s][1], rms, 1);
        }
}

MG_TEST(cuda_h16_norms)
{
    ct_each_half(t, norms_cases);
}

static void activations_rope_qkv_cases(ct *c)
{
    int64_t n = 1003, N = 37, F = 296; /* F: 16-byte rows of 16-bit values */
    for (int kind = 0; c->ok && kind < 2; kind++) {
        mgk_h16 *Dx, *Ddy, *Ddx;
        float *x = ct_in16(c, n, 1, 4.0f, &Dx), *dy = ct_in16(c, n, 2, 1.0f, &Ddy);
        float *dx = ct_in16(c, n, 3, 1.0f, &Ddx), *y = ct_rand(c, n, 4, 1.0f);
        mgk_h16 *Dy = (mgk_h16 *)ct_dalloc(c, (size_t)n * 2);
        mgk_cuda_gelu_fwd_h16(&c->dev, Dy, Dx, n, (mgk_gelu_kind)kind);
        mgk_gelu_fwd(&c->ref, y, x, n, (mgk_gelu_kind)kind);
        KT_CLOSE(c->t, ct_label(c, "gelu fwd"), ct_down16(c, Dy, n), y, n, ct_tol16(c),
                 ct_tol16(c));
        mgk_cuda_gelu_bwd_h16(&c->dev, Ddx, Ddy, Dx, n, (mgk_gelu_kind)kind);
        mgk_gelu_bwd(&c->ref, dx, dy, x, n, (mgk_gelu_kind)kind);
        KT_CLOSE(c->t, ct_label(c, "gelu bwd"), ct_down16(c, Ddx, n), dx, n, ct_tol16(c),
                 ct_tol16(c));
    }
    if (c->ok) {
        mgk_h16 *Dx, *Ddy, *Ddx;
        float *x = ct_in16(c, N * 2 * F, 5, 4.0f, &Dx), *dy = ct_in16(c, N * F, 6, 1.0f, &Ddy);
        float *dx = ct_in16(c, N * 2 * F, 7, 1.0f, &Ddx), *y = ct_rand(c, N * F, 8, 1.0f);
        mgk_h16 *Dy = (mgk_h16 *)ct_dalloc(c, (size_t)(N * F) * 2);
        mgk_cuda_swiglu_fwd_h16(&c->dev, Dy, Dx, N, F);
        mgk_swiglu_fwd(&c->ref, y, x, N, F);
        KT_CLOSE(c->t, ct_label(c, "swiglu fwd"), ct_down16(c, Dy, N * F), y, N * F, ct_tol16(c),
                 ct_tol16(c));
        mgk_cuda_swiglu_bwd_h16(&c->dev, Ddx, Ddy, Dx, N, F);
        mgk_swiglu_bwd(&c->ref, dx, dy, x, N, F);
        KT_CLOSE(c->t, ct_label(c, "swiglu bwd"), ct_down16(c, Ddx, N * 2 * F), dx, N * 2 * F,
                 ct_tol16(c), ct_tol16(c));
        /* RoPE (B 2, T 7, H 3, D 64, rotating 48) */
        int64_t nr = 2 * 7 * 3 * 64;
        mgk_h16 *Rx, *Rd;
        float *rx = ct_in16(c, nr, 9, 1.0f, &Rx), *rd = ct_in16(c, nr, 10, 1.0f, &Rd);
        float *ry = ct_rand(c, nr, 11, 1.0f);
        mgk_h16 *Ry = (mgk_h16 *)ct_dalloc(c, (size_t)nr * 2);
        mgk_cuda_rope_fwd_h16(&c->dev, Ry, Rx, NULL, 2, 7, 3, 64, 48, 10000.0f);
        mgk_rope_fwd(&c->ref, ry, rx, NULL, 2, 7, 3, 64, 48, 10000.0f);
        KT_CLOSE(c->t, ct_label(c, "rope fwd"), ct_down16(c, Ry, nr), ry, nr, ct_tol16(c),
                 ct_tol16(c));
        mgk_cuda_rope_bwd_h16(&c->dev, Rd, Rx, NULL, 2, 7, 3, 64, 48, 10000.0f);
        mgk_rope_bwd(&c->ref, rd, rx, NULL, 2, 7, 3, 64, 48, 10000.0f);
        KT_CLOSE(c->t, ct_label(c, "rope bwd"), ct_down16(c, Rd, nr), rd, nr, ct_tol16(c),
                 ct_tol16(c));
    }
    /* QKV copies, bitwise: 7 rows, 6 query heads in 2 groups, D 5 (one feature per thread)
     * and D 16 (16-byte units) */
    static const int64_t qs[2][4] = {{7, 6, 2, 5}, {3, 4, 2, 16}};
    for (int s = 0; c->ok && s < 2; s++) {
        int64_t Nr = qs[s][0], Hq = qs[s][1], Hkv = qs[s][2], D = qs[s][3];
        int64_t nf = Nr * (Hq + 2 * Hkv) * D, nq = Nr * Hq * D, nk = Nr * Hkv * D;
        mgk_h16 *Qf;
        float *f = ct_in16(c, nf, 12, 1.0f, &Qf), *q = ct_rand(c, nq, 13, 1.0f);
        float *k = ct_rand(c, nk, 14, 1.0f), *v = ct_rand(c, nk, 15, 1.0f);
        mgk_h16 *Qq = (mgk_h16 *)ct_dalloc(c, (size_t)nq * 2);
        mgk_h16 *Qk = (mgk_h16 *)ct_dalloc(c, (size_t)nk * 2);
        mgk_h16 *Qv = (mgk_h16 *)ct_dalloc(c, (size_t)nk * 2);
        mgk_h16 *Qg = (mgk_h16 *)ct_dalloc(c, (size_t)nf * 2);
        mgk_cuda_qkv_split_h16(&c->dev, Qq, Qk, Qv, Qf, Nr, Hq, Hkv, D);
        mgk_qkv_split(&c->ref, q, k, v, f, Nr, Hq, Hkv, D);
        KT_SAME(c->t, ct_label(c, "qkv split"), ct_down16(c, Qk, nk), k, nk);
        mgk_cuda_qkv_merge_h16(&c->dev, Qg, Qq, Qk, Qv, Nr, Hq, Hkv, D);
        KT_SAME(c->t, ct_label(c, "qkv merge (round trip)"), ct_down16(c, Qg, nf), f, nf);
    }
}

MG_TEST(cuda_h16_activations_rope_qkv)
{
    ct_each_half(t, activations_rope_qkv_cases);
}

static void xent_adamw_cases(ct *c)
{
    int64_t N = 13, Vp = 1032, V = 1003, n = 1001; /* Vp: rows of 16-byte vectors */
    if (c->ok) {
        mgk_h16 *Dx;
        float *x = ct_in16(c, N * Vp, 1, 8.0f, &Dx), *mask = ct_rand(c, N, 2, 1.0f);
        int32_t *tg = (int32_t *)ct_host(c, kt_ids(N, 3, 0, (int32_t)V));
        int32_t *Dtg = CT_UPI(c, tg, N);
        float *loss = ct_rand(c, N, 4, 1.0f), *lse = ct_rand(c, N, 5, 1.0f);
        float *Dloss = CT_UPF(c, loss, N), *Dlse = CT_UPF(c, lse, N);
        mgk_cuda_xent_fwd_h16(&c->dev, Dloss, Dlse, Dx, Dtg, N, Vp, V);
        mgk_xent_fwd(&c->ref, loss, lse, x, tg, N, Vp, V);
        KT_CLOSE(c->t, ct_label(c, "xent loss"), ct_down(c, Dloss, N), loss, N, 1e-5, 1e-5);
        float *mx = ct_rand(c, N, 6, 1.0f), *sm = ct_rand(c, N, 7, 1.0f),
              *tv = ct_rand(c, N, 8, 1.0f);
        float *Dmx = CT_UPF(c, mx, N), *Dsm = CT_UPF(c, sm, N), *Dtv = CT_UPF(c, tv, N);
        mgk_cuda_xent_partial_h16(&c->dev, Dmx, Dsm, Dtv, Dx, Dtg, N, Vp, 0, V);
        mgk_xent_partial(&c->ref, mx, sm, tv, x, tg, N, Vp, 0, V);
        KT_CLOSE(c->t, ct_label(c, "xent rowsum"), ct_down(c, Dsm, N), sm, N, 0.0, 1e-5);
        mgk_cuda_xent_bwd_h16(&c->dev, Dx, Dx, Dlse, Dtg, CT_UPF(c, mask, N), 0.5f, N, Vp, 0, V);
        mgk_xent_bwd(&c->ref, x, x, lse, tg, mask, 0.5f, N, Vp, 0, V);
        KT_CLOSE(c->t, ct_label(c, "xent dlogits"), ct_down16(c, Dx, N * Vp), x, N * Vp, 1e-4,
                 ct_tol16(c));
    }
    if (c->ok) {
        mgk_adamw_hp hp = {3e-4, 0.9, 0.95, 1e-8, 0.1, 5, 1.0};
        float *p = ct_rand(c, n, 9, 1.0f), *m = ct_rand(c, n, 10, 0.1f);
        float *v = ct_rand(c, n, 11, 0.1f), *g = ct_rand(c, n, 12, 1.0f);
        for (int64_t i = 0; i < n; i++) v[i] = fabsf(v[i]);
        float *Dp = CT_UPF(c, p, n), *Dm = CT_UPF(c, m, n), *Dv = CT_UPF(c, v, n);
        mgk_h16 *Dpb = (mgk_h16 *)ct_dalloc(c, (size_t)n * 2);
        mgk_cuda_adamw_h16(&c->dev, Dp, Dpb, Dm, Dv, CT_UPF(c, g, n), n, &hp, 1);
        mgk_adamw(&c->ref, p, m, v, g, n, &hp, 1);
        KT_SAME(c->t, ct_label(c, "adamw master"), ct_down(c, Dp, n), p, n);
        KT_SAME(c->t, ct_label(c, "adamw copy"), ct_down16(c, Dpb, n), ct_round16(c, p, n), n);
    }
}

MG_TEST(cuda_h16_xent_adamw)
{
    ct_each_half(t, xent_adamw_cases);
}

static void gemm_linear_cases(ct *c)
{
    int64_t M = 33, N = 72, K = 129, N_ = 37, IN = 45, OUT = 32;
    for (int tr = 0; c->ok && tr < 4; tr++) {
        int ta = tr & 1, tb = tr >> 1;
        int64_t lda = ta ? M : K, ldb = tb ? K : N, na = (ta ? K : M) * lda,
                nb = (tb ? N : K) * ldb;
        mgk_h16 *Da, *Db, *Dc;
        float *A = ct_in16(c, na, 1, 1.0f, &Da), *B = ct_in16(c, nb, 2, 1.0f, &Db);
        float *C1 = ct_in16(c, M * N, 3, 1.0f, &Dc), *C2 = ct_dup(c, C1, M * N);
        float *Dc2 = CT_UPF(c, C2, M * N);
        mgk_cuda_gemm_h16(&c->dev, Dc, N, Da, lda, Db, ldb, M, N, K, ta, tb, 0.5f, 1.0f);
        mgk_cuda_gemm_h16_f32(&c->dev, Dc2, N, Da, lda, Db, ldb, M, N, K, ta, tb, 0.5f, 1.0f);
        mgk_gemm(&c->ref, C1, N, A, lda, B, ldb, M, N, K, ta, tb, 0.5f, 1.0f);
        KT_CLOSE(c->t, ct_label(c, "gemm"), ct_down16(c, Dc, M * N), C1, M * N, ct_tol16(c),
                 ct_tol16(c));
        KT_CLOSE(c->t, ct_label(c, "gemm -> fp32"), ct_down(c, Dc2, M * N), C1, M * N, 1e-5, 1e-4);
    }
    for (int gelu = 0; c->ok && gelu < 2; gelu++) {
        mgk_h16 *Dx, *DW, *Db, *Ddy, *Ddx;
        float *x = ct_in16(c, N_ * IN, 4, 1.0f, &Dx), *W = ct_in16(c, OUT * IN, 5, 0.5f, &DW);
        float *b = ct_in16(c, OUT, 6, 1.0f, &Db), *pre = ct_rand(c, N_ * OUT, 7, 1.0f);
        float *y = ct_rand(c, N_ * OUT, 8, 1.0f);
        mgk_h16 *Dy = (mgk_h16 *)ct_dalloc(c, (size_t)(N_ * OUT) * 2);
        mgk_h16 *Dpre = (mgk_h16 *)ct_dalloc(c, (size_t)(N_ * OUT) * 2);
        mgk_cuda_linear_fwd_h16(&c->dev, Dy, gelu ? Dpre : NULL, Dx, DW, Db, N_, IN, OUT, gelu);
        mgk_linear_fwd(&c->ref, pre, x, W, b, N_, IN, OUT);
        if (gelu) mgk_gelu_fwd(&c->ref, y, pre, N_ * OUT, MGK_GELU_TANH);
        KT_CLOSE(c->t, ct_label(c, "linear out"), ct_down16(c, Dy, N_ * OUT), gelu ? y : pre,
                 N_ * OUT, ct_tol16(c), ct_tol16(c));
        if (gelu)
            KT_CLOSE(c->t, ct_label(c, "linear pre-gelu"), ct_down16(c, Dpre, N_ * OUT), pre,
                     N_ * OUT, ct_tol16(c), ct_tol16(c));
        float *dy = ct_in16(c, N_ * OUT, 9, 1.0f, &Ddy);
        float *dx = ct_in16(c, N_ * IN, 10, 1.0f, &Ddx);
        float *dW = ct_rand(c, OUT * IN, 11, 1.0f), *db = ct_rand(c, OUT, 12, 1.0f);
        float *DdW = CT_UPF(c, dW, OUT * IN), *Ddb = CT_UPF(c, db, OUT);
        mgk_cuda_linear_bwd_h16(&c->dev, Ddx, DdW, Ddb, Ddy, Dx, DW, N_, IN, OUT);
        mgk_linear_bwd(&c->ref, dx, dW, db, dy, x, W, N_, IN, OUT);
        KT_CLOSE(c->t, ct_label(c, "linear dinp"), ct_down16(c, Ddx, N_ * IN), dx, N_ * IN,
                 ct_tol16(c), ct_tol16(c));
        KT_CLOSE(c->t, ct_label(c, "linear dW (fp32)"), ct_down(c, DdW, OUT * IN), dW, OUT * IN,
                 1e-5, 1e-4);
        KT_CLOSE(c->t, ct_label(c, "linear dbias (fp32)"), ct_down(c, Ddb, OUT), db, OUT, 1e-5,
                 1e-4);
    }
}

MG_TEST(cuda_h16_gemm_linear)
{
    ct_each_half(t, gemm_linear_cases);
}

/* test_cuda_norm_act.c — the CUDA norms, activations, RoPE and QKV layout ops against the CPU
 * reference: row lengths below, between and above the block size, row counts crossing the
 * column-sum segments. The reference computes in double; tolerances at each check
 * (|cuda - ref| <= atol + rtol |ref|). Backward checks start from non-zero gradients.
 */
#include "cuda_test_util.h"

#define ATOL 1e-5
#define RTOL 1e-4

static void layernorm_case(ct *c, int64_t N, int64_t C, int with_bias)
{
    float *x = ct_rand(c, N * C, 1, 2.0f), *w = ct_rand(c, C, 2, 1.0f), *b = ct_rand(c, C, 3, 1.0f);
    float *y = ct_rand(c, N * C, 4, 1.0f), *mu = ct_rand(c, N, 5, 1.0f),
          *rs = ct_rand(c, N, 6, 1.0f);
    float *Dx = CT_UPF(c, x, N * C), *Dw = CT_UPF(c, w, C),
          *Db = with_bias ? CT_UPF(c, b, C) : NULL;
    float *Dy = CT_UPF(c, y, N * C), *Dmu = CT_UPF(c, mu, N), *Drs = CT_UPF(c, rs, N);
    mgk_layernorm_fwd(&c->ref, y, mu, rs, x, w, with_bias ? b : NULL, N, C, 1e-5f);
    mgk_layernorm_fwd(&c->dev, Dy, Dmu, Drs, Dx, Dw, Db, N, C, 1e-5f);
    KT_CLOSE(c->t, "layernorm out", ct_down(c, Dy, N * C), y, N * C, ATOL, RTOL);
    KT_CLOSE(c->t, "layernorm mean", ct_down(c, Dmu, N), mu, N, ATOL, RTOL);
    KT_CLOSE(c->t, "layernorm rstd", ct_down(c, Drs, N), rs, N, ATOL, RTOL);
    float *dy = ct_rand(c, N * C, 7, 1.0f), *dx = ct_rand(c, N * C, 8, 1.0f);
    float *dw = ct_rand(c, C, 9, 1.0f), *db = ct_rand(c, C, 10, 1.0f);
    float *Ddx = CT_UPF(c, dx, N * C), *Ddw = CT_UPF(c, dw, C), *Ddb = CT_UPF(c, db, C);
    mgk_layernorm_bwd(&c->ref, dx, dw, db, dy, x, w, mu, rs, N, C);
    mgk_layernorm_bwd(&c->dev, Ddx, Ddw, Ddb, CT_UPF(c, dy, N * C), Dx, Dw, Dmu, Drs, N, C);
    KT_CLOSE(c->t, "layernorm dinp", ct_down(c, Ddx, N * C), dx, N * C, ATOL, RTOL);
    KT_CLOSE(c->t, "layernorm dw", ct_down(c, Ddw, C), dw, C, 1e-4, RTOL);
    KT_CLOSE(c->t, "layernorm db", ct_down(c, Ddb, C), db, C, 1e-4, RTOL);
    /* the input gradient alone (no parameter gradients) */
    mgk_layernorm_bwd(&c->ref, dx, NULL, NULL, dy, x, w, mu, rs, N, C);
    mgk_layernorm_bwd(&c->dev, Ddx, NULL, NULL, CT_UPF(c, dy, N * C), Dx, Dw, Dmu, Drs, N, C);
    KT_CLOSE(c->t, "layernorm dinp alone", ct_down(c, Ddx, N * C), dx, N * C, ATOL, RTOL);
}

static void rmsnorm_case(ct *c, int64_t N, int64_t C)
{
    float *x = ct_rand(c, N * C, 11, 2.0f), *w = ct_rand(c, C, 12, 1.0f);
    float *y = ct_rand(c, N * C, 13, 1.0f), *rs = ct_rand(c, N, 14, 1.0f);
    float *Dx = CT_UPF(c, x, N * C), *Dw = CT_UPF(c, w, C), *Dy = CT_UPF(c, y, N * C);
    float *Drs = CT_UPF(c, rs, N);
    mgk_rmsnorm_fwd(&c->ref, y, rs, x, w, N, C, 1e-6f);
    mgk_rmsnorm_fwd(&c->dev, Dy, Drs, Dx, Dw, N, C, 1e-6f);
    KT_CLOSE(c->t, "rmsnorm out", ct_down(c, Dy, N * C), y, N * C, ATOL, RTOL);
    KT_CLOSE(c->t, "rmsnorm rstd", ct_down(c, Drs, N), rs, N, ATOL, RTOL);
    float *dy = ct_rand(c, N * C, 15, 1.0f), *dx = ct_rand(c, N * C, 16, 1.0f);
    float *dw = ct_rand(c, C, 17, 1.0f), *Ddx = CT_UPF(c, dx, N * C), *Ddw = CT_UPF(c, dw, C);
    mgk_rmsnorm_bwd(&c->ref, dx, dw, dy, x, w, rs, N, C);
    mgk_rmsnorm_bwd(&c->dev, Ddx, Ddw, CT_UPF(c, dy, N * C), Dx, Dw, Drs, N, C);
    KT_CLOSE(c->t, "rmsnorm dinp", ct_down(c, Ddx, N * C), dx, N * C, ATOL, RTOL);
    KT_CLOSE(c->t, "rmsnorm dw", ct_down(c, Ddw, C), dw, C, 1e-4, RTOL);
}

MG_TEST(cuda_norms)
{
    ct c;
    ct_begin(&c, t);
    /* C = 1000, 768, 32: the warp-per-row kernels (N = 2100 > the backward's 512 x 4 warps) */
    static const int64_t shapes[][2] = {{1, 1}, {5, 33}, {37, 1000}, {300, 77}, {70, 768},
                                        {2100, 32}};
    for (int s = 0; c.ok && s < 6; s++) {
        layernorm_case(&c, shapes[s][0], shapes[s][1], s & 1);
        rmsnorm_case(&c, shapes[s][0], shapes[s][1]);
    }
    ct_end(&c);
}

static void gelu_case(ct *c, int64_t n, mgk_gelu_kind kind)
{
    float *x = ct_rand(c, n, 1, 4.0f), *y = ct_rand(c, n, 2, 1.0f), *dy = ct_rand(c, n, 3, 1.0f);
    float *dx = ct_rand(c, n, 4, 1.0f), *Dx = CT_UPF(c, x, n), *Dy = CT_UPF(c, y, n);
    float *Ddx = CT_UPF(c, dx, n);
    mgk_gelu_fwd(&c->ref, y, x, n, kind), mgk_gelu_fwd(&c->dev, Dy, Dx, n, kind);
    KT_CLOSE(c->t, "gelu fwd", ct_down(c, Dy, n), y, n, 1e-6, 1e-5);
    mgk_gelu_bwd(&c->ref, dx, dy, x, n, kind);
    mgk_gelu_bwd(&c->dev, Ddx, CT_UPF(c, dy, n), Dx, n, kind);
    KT_CLOSE(c->t, "gelu bwd", ct_down(c, Ddx, n), dx, n, 1e-6, 1e-5);
}

static void swiglu_case(ct *c, int64_t N, int64_t F)
{
    float *x = ct_rand(c, N * 2 * F, 5, 4.0f), *y = ct_rand(c, N * F, 6, 1.0f);
    float *dy = ct_rand(c, N * F, 7, 1.0f), *dx = ct_rand(c, N * 2 * F, 8, 1.0f);
    float *Dx = CT_UPF(c, x, N * 2 * F), *Dy = CT_UPF(c, y, N * F), *Ddx = CT_UPF(c, dx, N * 2 * F);
    mgk_swiglu_fwd(&c->ref, y, x, N, F), mgk_swiglu_fwd(&c->dev, Dy, Dx, N, F);
    KT_CLOSE(c->t, "swiglu fwd", ct_down(c, Dy, N * F), y, N * F, 1e-6, 1e-5);
    mgk_swiglu_bwd(&c->ref, dx, dy, x, N, F);
    mgk_swiglu_bwd(&c->dev, Ddx, CT_UPF(c, dy, N * F), Dx, N, F);
    KT_CLOSE(c->t, "swiglu bwd", ct_down(c, Ddx, N * 2 * F), dx, N * 2 * F, 1e-6, 1e-5);
}

MG_TEST(cuda_activations)
{
    ct c;
    ct_begin(&c, t);
    for (int kind = 0; c.ok && kind < 2; kind++) {
        gelu_case(&c, 1, (mgk_gelu_kind)kind);
        gelu_case(&c, 1003, (mgk_gelu_kind)kind);
    }
    if (c.ok) swiglu_case(&c, 1, 1);
    if (c.ok) swiglu_case(&c, 37, 300);
    ct_end(&c);
}

static void rope_case(ct *c, int64_t B, int64_t T, int64_t H, int64_t D, int64_t rot, int with_pos)
{
    int64_t n = B * T * H * D;
    int32_t *pos = with_pos ? (int32_t *)ct_host(c, kt_ids(B * T, 3, 0, 4096)) : NULL;
    float *x = ct_rand(c, n, 1, 1.0f), *y = ct_rand(c, n, 2, 1.0f), *dx = ct_rand(c, n, 4, 1.0f);
    float *Dy = CT_UPF(c, y, n), *Ddx = CT_UPF(c, dx, n), *Dx = CT_UPF(c, x, n);
    int32_t *Dpos = pos ? CT_UPI(c, pos, B * T) : NULL;
    mgk_rope_fwd(&c->ref, y, x, pos, B, T, H, D, rot, 10000.0f);
    mgk_rope_fwd(&c->dev, Dy, Dx, Dpos, B, T, H, D, rot, 10000.0f);
    /* same fp32 angles, cos/sin in double on both sides: equal up to the device's libm */
    KT_CLOSE(c->t, "rope fwd", ct_down(c, Dy, n), y, n, 1e-6, 1e-6);
    mgk_rope_bwd(&c->ref, dx, y, pos, B, T, H, D, rot, 10000.0f);
    mgk_rope_bwd(&c->dev, Ddx, Dy, Dpos, B, T, H, D, rot, 10000.0f);
    KT_CLOSE(c->t, "rope bwd", ct_down(c, Ddx, n), dx, n, 1e-6, 1e-6);
}

static void qkv_case(ct *c, int64_t N, int64_t Hq, int64_t Hkv, int64_t D)
{
    int64_t nf = N * (Hq + 2 * Hkv) * D, nq = N * Hq * D, nk = N * Hkv * D;
    float *f = ct_rand(c, nf, 1, 1.0f), *q = ct_rand(c, nq, 2, 1.0f);
    float *k = ct_rand(c, nk, 3, 1.0f), *v = ct_rand(c, nk, 4, 1.0f);
    float *Dq = CT_UPF(c, q, nq), *Dk = CT_UPF(c, k, nk), *Dv = CT_UPF(c, v, nk);
    mgk_qkv_split(&c->ref, q, k, v, f, N, Hq, Hkv, D);
    mgk_qkv_split(&c->dev, Dq, Dk, Dv, CT_UPF(c, f, nf), N, Hq, Hkv, D);
    KT_SAME(c->t, "qkv split q", ct_down(c, Dq, nq), q, nq);
    KT_SAME(c->t, "qkv split k", ct_down(c, Dk, nk), k, nk);
    KT_SAME(c->t, "qkv split v", ct_down(c, Dv, nk), v, nk);
    float *g = ct_rand(c, nf, 5, 1.0f), *Dg = CT_UPF(c, g, nf);
    mgk_qkv_merge(&c->ref, g, q, k, v, N, Hq, Hkv, D);
    mgk_qkv_merge(&c->dev, Dg, Dq, Dk, Dv, N, Hq, Hkv, D);
    KT_SAME(c->t, "qkv merge", ct_down(c, Dg, nf), g, nf);
}

MG_TEST(cuda_rope_qkv)
{
    ct c;
    ct_begin(&c, t);
    if (c.ok) rope_case(&c, 1, 1, 1, 2, 2, 0);
    if (c.ok) rope_case(&c, 2, 5, 3, 10, 8, 0);
    if (c.ok) rope_case(&c, 2, 7, 2, 64, 64, 1);
    if (c.ok) rope_case(&c, 1, 3, 5, 130, 100, 1);
    static const int64_t shapes[][4] = {{1, 1, 1, 1}, {7, 6, 2, 5}, {3, 3, 3, 8}, {5, 8, 1, 33},
                                        {4, 4, 2, 12}};
    for (int s = 0; c.ok && s < 5; s++)
        qkv_case(&c, shapes[s][0], shapes[s][1], shapes[s][2], shapes[s][3]);
    ct_end(&c);
}

/* test_kernels_grad.c — the reference backward of every differentiable op against central
 * finite differences of its reference forward, on small cases. The objective is
 * L = sum_i r_i * out_i (r random, in double), so dL/dout = r is fed to the backward; each
 * input element is perturbed by +-h and (L+ - L-) / 2h compared with the analytic gradient:
 * |analytic - numeric| <= 2e-3 + 2e-2 * |numeric| (fp32 forwards, h = 1e-2 or 1e-3).
 */
#include "test_kernels_util.h"

#define FD_ATOL 2e-3
#define FD_RTOL 2e-2

/* One case: its inputs (up to 4 float tensors), the forward writing out, and r = dL/dout. */
typedef struct fd_case {
    mg_kctx k;
    float *in[4];
    int64_t n_in[4];
    float *out, *r;
    int64_t n_out;
    void (*fwd)(struct fd_case *c);
    const void *p; /* op parameters */
} fd_case;

static double fd_objective(fd_case *c)
{
    c->fwd(c);
    double L = 0.0;
    for (int64_t i = 0; i < c->n_out; i++) L += (double)c->r[i] * c->out[i];
    return L;
}

static void fd_check(mg_test_ctx *t, const char *what, fd_case *c, int which, const float *grad,
                     float h)
{
    float *x = c->in[which];
    float *num = malloc((size_t)c->n_in[which] * sizeof(float));
    for (int64_t i = 0; i < c->n_in[which]; i++) {
        float save = x[i];
        x[i] = save + h;
        double lp = fd_objective(c);
        x[i] = save - h;
        double lm = fd_objective(c);
        x[i] = save;
        num[i] = (float)((lp - lm) / (2.0 * (double)h));
    }
    KT_CLOSE(t, what, grad, num, c->n_in[which], FD_ATOL, FD_RTOL);
    free(num);
}

static void fd_init(mg_test_ctx *t, fd_case *c, int64_t n_out, const int64_t *n_in, int nin)
{
    memset(c, 0, sizeof *c);
    MG_CHECK_OK(t, mgk_ctx_init(&c->k, MGK_CPU_REF, 1));
    MG_CHECK_OK(t, mgk_ctx_reserve(&c->k, 4096));
    for (int i = 0; i < nin; i++) {
        c->n_in[i] = n_in[i];
        c->in[i] = kt_randn(n_in[i], 100 + (uint64_t)i, 1.0f);
    }
    c->n_out = n_out;
    c->out = calloc((size_t)n_out, sizeof(float));
    c->r = kt_randn(n_out, 99, 1.0f);
}

static void fd_free(fd_case *c)
{
    for (int i = 0; i < 4; i++) free(c->in[i]);
    free(c->out), free(c->r);
    mgk_ctx_free(&c->k);
}

static float *zeros(int64_t n)
{
    return calloc((size_t)n, sizeof(float));
}

/* ---- linear ---- */
enum { LN_N = 5, LN_I = 7, LN_O = 4 };
static void linear_fwd(fd_case *c)
{
    mgk_linear_fwd(&c->k, c->out, c->in[0], c->in[1], c->in[2], LN_N, LN_I, LN_O);
}

MG_TEST(kernels_grad_linear)
{
    fd_case c;
    int64_t n_in[] = {LN_N * LN_I, LN_O * LN_I, LN_O};
    fd_init(t, &c, LN_N * LN_O, n_in, 3);
    c.fwd = linear_fwd;
    float *dx = zeros(n_in[0]), *dW = zeros(n_in[1]), *db = zeros(n_in[2]);
    mgk_linear_bwd(&c.k, dx, dW, db, c.r, c.in[0], c.in[1], LN_N, LN_I, LN_O);
    fd_check(t, "linear dinp", &c, 0, dx, 1e-2f);
    fd_check(t, "linear dW", &c, 1, dW, 1e-2f);
    fd_check(t, "linear dbias", &c, 2, db, 1e-2f);
    free(dx), free(dW), free(db);
    fd_free(&c);
}

/* ---- layernorm / rmsnorm ---- */
enum { NM_N = 3, NM_C = 9 };
static float nm_mean[NM_N], nm_rstd[NM_N];
static void layernorm_fwd(fd_case *c)
{
    mgk_layernorm_fwd(&c->k, c->out, nm_mean, nm_rstd, c->in[0], c->in[1], c->in[2], NM_N, NM_C,
                      1e-5f);
}
static void rmsnorm_fwd(fd_case *c)
{
    mgk_rmsnorm_fwd(&c->k, c->out, nm_rstd, c->in[0], c->in[1], NM_N, NM_C, 1e-5f);
}

MG_TEST(kernels_grad_norms)
{
    for (int rms = 0; rms < 2; rms++) {
        fd_case c;
        int64_t n_in[] = {NM_N * NM_C, NM_C, NM_C};
        fd_init(t, &c, NM_N * NM_C, n_in, rms ? 2 : 3);
        c.fwd = rms ? rmsnorm_fwd : layernorm_fwd;
        fd_objective(&c); /* fills mean/rstd */
        float *dx = zeros(n_in[0]), *dw = zeros(NM_C), *db = zeros(NM_C);
        if (rms)
            mgk_rmsnorm_bwd(&c.k, dx, dw, c.r, c.in[0], c.in[1], nm_rstd, NM_N, NM_C);
        else
            mgk_layernorm_bwd(&c.k, dx, dw, db, c.r, c.in[0], c.in[1], nm_mean, nm_rstd, NM_N,
                              NM_C);
        fd_check(t, rms ? "rmsnorm dinp" : "layernorm dinp", &c, 0, dx, 1e-3f);
        fd_check(t, rms ? "rmsnorm dw" : "layernorm dw", &c, 1, dw, 1e-2f);
        if (!rms) fd_check(t, "layernorm db", &c, 2, db, 1e-2f);
        free(dx), free(dw), free(db);
        fd_free(&c);
    }
}

/* ---- activations ---- */
enum { AC_N = 4, AC_F = 6 };
static void gelu_erf_fwd(fd_case *c)
{
    mgk_gelu_fwd(&c->k, c->out, c->in[0], c->n_out, MGK_GELU_ERF);
}
static void gelu_tanh_fwd(fd_case *c)
{
    mgk_gelu_fwd(&c->k, c->out, c->in[0], c->n_out, MGK_GELU_TANH);
}
static void swiglu_fwd(fd_case *c)
{
    mgk_swiglu_fwd(&c->k, c->out, c->in[0], AC_N, AC_F);
}

MG_TEST(kernels_grad_activations)
{
    for (int kind = 0; kind < 2; kind++) {
        fd_case c;
        int64_t n_in[] = {40};
        fd_init(t, &c, 40, n_in, 1);
        for (int i = 0; i < 40; i++) c.in[0][i] *= 4.0f;
        c.fwd = kind ? gelu_tanh_fwd : gelu_erf_fwd;
        float *dx = zeros(40);
        mgk_gelu_bwd(&c.k, dx, c.r, c.in[0], 40, (mgk_gelu_kind)kind);
        fd_check(t, kind ? "gelu tanh" : "gelu erf", &c, 0, dx, 1e-3f);
        free(dx);
        fd_free(&c);
    }
    fd_case c;
    int64_t n_in[] = {AC_N * 2 * AC_F};
    fd_init(t, &c, AC_N * AC_F, n_in, 1);
    c.fwd = swiglu_fwd;
    float *dx = zeros(n_in[0]);
    mgk_swiglu_bwd(&c.k, dx, c.r, c.in[0], AC_N, AC_F);
    fd_check(t, "swiglu", &c, 0, dx, 1e-3f);
    free(dx);
    fd_free(&c);
}

/* ---- rope ---- */
static const int32_t rope_pos[] = {0, 5, 17, 3, 1000, 2};
static void rope_fwd(fd_case *c)
{
    mgk_rope_fwd(&c->k, c->out, c->in[0], rope_pos, 2, 3, 2, 8, 6, 10000.0f);
}

MG_TEST(kernels_grad_rope)
{
    fd_case c;
    int64_t n_in[] = {2 * 3 * 2 * 8};
    fd_init(t, &c, n_in[0], n_in, 1);
    c.fwd = rope_fwd;
    float *dx = zeros(n_in[0]);
    mgk_rope_bwd(&c.k, dx, c.r, rope_pos, 2, 3, 2, 8, 6, 10000.0f);
    fd_check(t, "rope", &c, 0, dx, 1e-2f);
    free(dx);
    fd_free(&c);
}

/* ---- attention (GQA, with and without document segments) ---- */
static const mgk_attn_dims at_dims = {2, 5, 4, 2, 3, 0.5773503f};
static const int32_t at_seg[] = {0, 0, 1, 1, 1, 0, 0, 0, 2, 2};
static float at_saved[2 * 4 * 5 * 5];
static void attn_fwd(fd_case *c)
{
    mgk_attn_fwd(&c->k, &at_dims, c->out, at_saved, c->in[0], c->in[1], c->in[2],
                 c->p ? at_seg : NULL);
}

MG_TEST(kernels_grad_attention)
{
    for (int use_seg = 0; use_seg < 2; use_seg++) {
        fd_case c;
        int64_t nq = 2 * 5 * 4 * 3, nkv = 2 * 5 * 2 * 3, n_in[] = {nq, nkv, nkv};
        fd_init(t, &c, nq, n_in, 3);
        c.fwd = attn_fwd;
        c.p = use_seg ? at_seg : NULL;
        fd_objective(&c);
        float *dq = zeros(nq), *dk = zeros(nkv), *dv = zeros(nkv);
        mgk_attn_bwd(&c.k, &at_dims, dq, dk, dv, c.r, at_saved, c.in[0], c.in[1], c.in[2],
                     c.p);
        fd_check(t, "attention dq", &c, 0, dq, 1e-2f);
        fd_check(t, "attention dk", &c, 1, dk, 1e-2f);
        fd_check(t, "attention dv", &c, 2, dv, 1e-2f);
        free(dq), free(dk), free(dv);
        fd_free(&c);
    }
}

/* ---- cross-entropy (loss weighted by mask * scale as the objective) ---- */
enum { XE_N = 4, XE_VP = 8, XE_V = 6 };
static const int32_t xe_tg[XE_N] = {0, 5, 2, 2};
static const float xe_mask[XE_N] = {1.0f, 0.0f, 1.0f, 0.5f};
static float xe_lse[XE_N];
static void xent_fwd(fd_case *c)
{
    mgk_xent_fwd(&c->k, c->out, xe_lse, c->in[0], xe_tg, XE_N, XE_VP, XE_V);
}

MG_TEST(kernels_grad_xent)
{
    fd_case c;
    int64_t n_in[] = {XE_N * XE_VP};
    fd_init(t, &c, XE_N, n_in, 1);
    c.fwd = xent_fwd;
    for (int i = 0; i < XE_N; i++) c.r[i] = 0.25f * xe_mask[i];
    fd_objective(&c);
    float *g = zeros(n_in[0]);
    mgk_xent_bwd(&c.k, g, c.in[0], xe_lse, xe_tg, xe_mask, 0.25f, XE_N, XE_VP, 0, XE_V);
    fd_check(t, "xent dlogits (padding columns: zero)", &c, 0, g, 1e-2f);
    fd_free(&c);
    free(g);
}

/* ---- embedding (with an out-of-shard id) ---- */
static const int32_t em_ids[] = {2, 0, 2, 7, 1};
static void embedding_fwd(fd_case *c)
{
    mgk_embedding_fwd(&c->k, c->out, em_ids, c->in[0], 5, 3, 0, 4, 0);
}

MG_TEST(kernels_grad_embedding)
{
    fd_case c;
    int64_t n_in[] = {4 * 3};
    fd_init(t, &c, 5 * 3, n_in, 1);
    c.fwd = embedding_fwd;
    float *g = zeros(n_in[0]);
    mgk_embedding_bwd(&c.k, g, c.r, em_ids, 5, 3, 0, 4);
    fd_check(t, "embedding dtable", &c, 0, g, 1e-2f);
    free(g);
    fd_free(&c);
}

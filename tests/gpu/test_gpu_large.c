/* test_gpu_large.c — GPU-only checks at training sizes (too slow for the emulator): the
 * attention at T = 1024 (32 query tiles of the portable kernels, 16 of the tensor-core ones)
 * against the CPU reference in fp32, and the three 16-bit implementations (portable, WMMA,
 * mma.sync) against the CPU reference on the same 16-bit inputs and the tensor-core ones
 * against the portable one, with bf16 and with fp16 contexts (fp16: every variant runs the
 * portable kernels). Tolerances as tests/cuda (fp32 2e-5 + 2e-4 |ref|; 16-bit outputs
 * ct_tol16 (1 + |ref|), lse 1e-4 + 1e-5 |portable|, gradients bf16 2e-2 + 2e-2 |ref|, fp16
 * 4e-3 + 4e-3 |ref|).
 */
#include "../cuda/cuda_test_util.h"

static const mgk_attn_dims large = {2, 1024, 8, 2, 128, 0.08838834764831845f};

MG_TEST(gpu_attention_large_fp32)
{
    ct c;
    ct_begin(&c, t);
    mgk_attn_dims d = large;
    int64_t nq = d.B * d.T * d.Hq * d.D, nk = d.B * d.T * d.Hkv * d.D;
    if (c.ok) {
        float *q = ct_rand(&c, nq, 1, 1.0f), *k = ct_rand(&c, nk, 2, 1.0f),
              *v = ct_rand(&c, nk, 3, 1.0f);
        float *o = ct_rand(&c, nq, 4, 1.0f), *dy = ct_rand(&c, nq, 5, 1.0f);
        float *dq = ct_rand(&c, nq, 6, 1.0f), *dk = ct_rand(&c, nk, 7, 1.0f),
              *dv = ct_rand(&c, nk, 8, 1.0f);
        float *sv = (float *)ct_host(&c, malloc((size_t)mgk_attn_saved_numel(&c.ref, &d) * 4));
        float *Dq = CT_UPF(&c, q, nq), *Dk = CT_UPF(&c, k, nk), *Dv = CT_UPF(&c, v, nk);
        float *Do = CT_UPF(&c, o, nq), *Ddq = CT_UPF(&c, dq, nq), *Ddk = CT_UPF(&c, dk, nk);
        float *Ddv = CT_UPF(&c, dv, nk);
        float *Dsv = (float *)ct_dalloc(&c, (size_t)mgk_attn_saved_numel(&c.dev, &d) * 4);
        MG_CHECK_OK(t, mgk_ctx_reserve(&c.ref, mgk_attn_scratch_numel(&c.ref, &d)));
        MG_CHECK_OK(t, mgk_ctx_reserve(&c.dev, mgk_attn_scratch_numel(&c.dev, &d)));
        mgk_attn_fwd(&c.ref, &d, o, sv, q, k, v, NULL);
        mgk_attn_fwd(&c.dev, &d, Do, Dsv, Dq, Dk, Dv, NULL);
        KT_CLOSE(t, "attn out (T 1024)", ct_down(&c, Do, nq), o, nq, 2e-5, 2e-4);
        mgk_attn_bwd(&c.ref, &d, dq, dk, dv, dy, sv, q, k, v, NULL);
        mgk_attn_bwd(&c.dev, &d, Ddq, Ddk, Ddv, CT_UPF(&c, dy, nq), Dsv, Dq, Dk, Dv, NULL);
        KT_CLOSE(t, "attn dq (T 1024)", ct_down(&c, Ddq, nq), dq, nq, 2e-5, 2e-4);
        KT_CLOSE(t, "attn dk (T 1024)", ct_down(&c, Ddk, nk), dk, nk, 2e-5, 2e-4);
        KT_CLOSE(t, "attn dv (T 1024)", ct_down(&c, Ddv, nk), dv, nk, 2e-5, 2e-4);
    }
    ct_end(&c);
}

static const struct {
    const char *name;
    ct_attn_fwd_fn fwd;
    ct_attn_bwd_fn bwd;
} variants[3] = {
    {"portable", mgk_cuda_attn_fwd_h16_portable, mgk_cuda_attn_bwd_h16_portable},
    {"wmma", mgk_cuda_attn_fwd_h16_wmma, mgk_cuda_attn_bwd_h16_wmma},
    {"mma", mgk_cuda_attn_fwd_h16_mma, mgk_cuda_attn_bwd_h16_mma},
};

static void close_named(ct *c, const char *v, const char *what, const float *got,
                        const float *ref, int64_t n, double atol, double rtol)
{
    char name[96];
    snprintf(name, sizeof name, "%s %s %s (T 1024)", mgk_half_name(c->dev.half), v, what);
    KT_CLOSE(c->t, name, got, ref, n, atol, rtol);
}

/* The three 16-bit implementations at T = 1024 against the CPU reference (on the same 16-bit
 * inputs) and the tensor-core ones against the portable one. */
static void large_variants(ct *c)
{
    mgk_attn_dims d = large;
    int64_t nq = d.B * d.T * d.Hq * d.D, nk = d.B * d.T * d.Hkv * d.D;
    int64_t ns = mgk_attn_saved_numel(&c->dev, &d), nl = d.B * d.Hq * d.T;
    double tol = ct_tol16(c), gtol = c->dev.half == MGK_HALF_FP16 ? 4e-3 : 2e-2;
    MG_CHECK(c->t, mgk_cuda_attn_mma_serves(&d));
    MG_CHECK_OK(c->t, mgk_ctx_reserve(&c->ref, mgk_attn_scratch_numel(&c->ref, &d)));
    MG_CHECK_OK(c->t, mgk_ctx_reserve(&c->dev, mgk_attn_scratch_numel(&c->dev, &d)));
    float *h[4];
    mgk_h16 *in[4]; /* q, k, v, dout */
    int64_t n[4] = {nq, nk, nk, nq};
    for (int i = 0; i < 4; i++) h[i] = ct_in16(c, n[i], 11 + (uint64_t)i, 1.0f, &in[i]);
    float *ro = ct_rand(c, nq, 1, 1.0f), *rg[3];
    float *rs = (float *)ct_host(c, malloc((size_t)mgk_attn_saved_numel(&c->ref, &d) * 4));
    for (int g = 0; g < 3; g++) rg[g] = (float *)ct_host(c, calloc((size_t)n[g], 4));
    mgk_attn_fwd(&c->ref, &d, ro, rs, h[0], h[1], h[2], NULL);
    mgk_attn_bwd(&c->ref, &d, rg[0], rg[1], rg[2], h[3], rs, h[0], h[1], h[2], NULL);
    float *po = NULL, *ps = NULL, *pg[3] = {NULL, NULL, NULL};
    static const char *gn[3] = {"dq", "dk", "dv"};
    for (int w = 0; w < 3; w++) { /* gradients from zero */
        mgk_h16 *out = (mgk_h16 *)ct_dalloc(c, (size_t)nq * 2), *grad[3];
        float *saved = (float *)ct_dalloc(c, (size_t)ns * 4);
        for (int g = 0; g < 3; g++) {
            grad[g] = (mgk_h16 *)ct_dalloc(c, (size_t)n[g] * 2);
            mgk_zero(&c->dev, (float *)(void *)grad[g], n[g] / 2);
        }
        variants[w].fwd(&c->dev, &d, out, saved, in[0], in[1], in[2], NULL);
        variants[w].bwd(&c->dev, &d, grad[0], grad[1], grad[2], in[3], saved, in[0], in[1],
                        in[2], NULL);
        float *o = ct_down16(c, out, nq), *sv = ct_down(c, saved, nl), *gr[3];
        close_named(c, variants[w].name, "out vs ref", o, ro, nq, tol, tol);
        for (int g = 0; g < 3; g++) {
            gr[g] = ct_down16(c, grad[g], n[g]);
            close_named(c, variants[w].name, gn[g], gr[g], rg[g], n[g], gtol, gtol);
        }
        if (w == 0) {
            po = o, ps = sv;
            for (int g = 0; g < 3; g++) pg[g] = gr[g];
            continue;
        }
        close_named(c, variants[w].name, "out vs portable", o, po, nq, tol, tol);
        close_named(c, variants[w].name, "lse vs portable", sv, ps, nl, 1e-4, 1e-5);
        for (int g = 0; g < 3; g++)
            close_named(c, variants[w].name, gn[g], gr[g], pg[g], n[g], gtol, gtol);
    }
}

MG_TEST(gpu_attention_large_h16_variants)
{
    ct_each_half(t, large_variants);
}

/* test_cuda_attn_h16.c — the three 16-bit attention implementations of kernels_cuda.h
 * (portable CUDA cores, WMMA, mma.sync with register accumulators) against the CPU reference
 * on the same 16-bit inputs, and the tensor-core ones against the portable one (output, lse,
 * output copy), each backward from its own forward's saved state and the same initial
 * gradients: T below, across and not a multiple of the 64-row tiles, GQA groups of 1 to 4,
 * document segments, D = 64 and 128 (the tensor-core kernels) and 8 (they fall back to the
 * portable ones). Once with bf16, once with fp16 contexts: the tensor-core kernels are bf16
 * only, so with fp16 every variant runs the portable kernels. Tolerances: outputs ct_tol16
 * (1 + |ref|) (one rounding: bf16 1e-2, fp16 2e-3), lse 1e-4 + 1e-5 |portable|, gradients
 * bf16 1e-2 + 1e-2 |ref| (portable) and 2e-2 + 2e-2 |ref| (tensor cores: P and dS enter their
 * products rounded to bf16), fp16 4e-3 + 4e-3 |ref| (twice the fp16 output tolerance).
 */
#include "cuda_test_util.h"

static const struct variant {
    const char *name;
    ct_attn_fwd_fn fwd;
    ct_attn_bwd_fn bwd;
    double gtol; /* bf16 gradients: atol = rtol */
} variants[] = {
    {"portable", mgk_cuda_attn_fwd_h16_portable, mgk_cuda_attn_bwd_h16_portable, 1e-2},
    {"wmma", mgk_cuda_attn_fwd_h16_wmma, mgk_cuda_attn_bwd_h16_wmma, 2e-2},
    {"mma", mgk_cuda_attn_fwd_h16_mma, mgk_cuda_attn_bwd_h16_mma, 2e-2},
    {"default", mgk_cuda_attn_fwd_h16, mgk_cuda_attn_bwd_h16, 2e-2},
};
#define NVAR (int)(sizeof variants / sizeof variants[0])

typedef struct attn_case {
    int64_t B, T, Hq, Hkv, D;
    int segs;
} attn_case;

static void check(ct *c, const char *v, const char *what, const float *got, const float *ref,
                  int64_t n, double atol, double rtol)
{
    char name[96];
    snprintf(name, sizeof name, "attn %s %s %s", mgk_half_name(c->dev.half), v, what);
    KT_CLOSE(c->t, name, got, ref, n, atol, rtol);
}

static void attn_run(ct *c, const attn_case *ac)
{
    mgk_attn_dims d = {ac->B, ac->T, ac->Hq, ac->Hkv, ac->D, 1.0f / sqrtf((float)ac->D)};
    int64_t nq = d.B * d.T * d.Hq * d.D, nk = d.B * d.T * d.Hkv * d.D;
    int64_t ns = mgk_attn_saved_numel(&c->dev, &d), nl = d.B * d.Hq * d.T;
    if (d.D == 64 || d.D == 128) MG_CHECK(c->t, mgk_cuda_attn_mma_serves(&d));
    mgk_h16 *Dq, *Dk, *Dv, *Ddy, *Dg[3];
    float *q = ct_in16(c, nq, 1, 1.0f, &Dq), *k = ct_in16(c, nk, 2, 1.0f, &Dk);
    float *v = ct_in16(c, nk, 3, 1.0f, &Dv), *dy = ct_in16(c, nq, 4, 1.0f, &Ddy);
    int64_t n[3] = {nq, nk, nk};
    float *g[3];
    for (int i = 0; i < 3; i++) g[i] = ct_in16(c, n[i], 5 + (uint64_t)i, 1.0f, &Dg[i]);
    int32_t *seg = ac->segs ? ct_segments(c, d.B, d.T, ac->segs) : NULL;
    int32_t *Dseg = seg ? CT_UPI(c, seg, d.B * d.T) : NULL;
    float *o = ct_rand(c, nq, 8, 1.0f);
    float *sv = ct_rand(c, mgk_attn_saved_numel(&c->ref, &d), 9, 1.0f);
    MG_CHECK_OK(c->t, mgk_ctx_reserve(&c->ref, mgk_attn_scratch_numel(&c->ref, &d)));
    MG_CHECK_OK(c->t, mgk_ctx_reserve(&c->dev, mgk_attn_scratch_numel(&c->dev, &d)));
    mgk_attn_fwd(&c->ref, &d, o, sv, q, k, v, seg);
    mgk_attn_bwd(&c->ref, &d, g[0], g[1], g[2], dy, sv, q, k, v, seg);
    float *port_out = NULL, *port_saved = NULL;
    for (int vi = 0; vi < NVAR; vi++) {
        const struct variant *va = &variants[vi];
        mgk_h16 *Do = (mgk_h16 *)ct_dalloc(c, (size_t)nq * 2), *Dgv[3];
        float *Dsv = (float *)ct_dalloc(c, (size_t)ns * 4);
        va->fwd(&c->dev, &d, Do, Dsv, Dq, Dk, Dv, Dseg);
        float *out = ct_down16(c, Do, nq), *saved = ct_down(c, Dsv, ns);
        check(c, va->name, "out", out, o, nq, ct_tol16(c), ct_tol16(c));
        if (!port_out) {
            port_out = out, port_saved = saved;
        } else {
            check(c, va->name, "out vs portable", out, port_out, nq, ct_tol16(c), ct_tol16(c));
            check(c, va->name, "lse vs portable", saved, port_saved, nl, 1e-4, 1e-5);
            check(c, va->name, "out copy vs portable", saved + nl, port_saved + nl, ns - nl,
                  ct_tol16(c), ct_tol16(c));
        }
        for (int i = 0; i < 3; i++) ct_in16(c, n[i], 5 + (uint64_t)i, 1.0f, &Dgv[i]);
        va->bwd(&c->dev, &d, Dgv[0], Dgv[1], Dgv[2], Ddy, Dsv, Dq, Dk, Dv, Dseg);
        static const char *gn[3] = {"dq", "dk", "dv"};
        double gtol = c->dev.half == MGK_HALF_FP16 ? 4e-3 : va->gtol;
        for (int i = 0; i < 3; i++)
            check(c, va->name, gn[i], ct_down16(c, Dgv[i], n[i]), g[i], n[i], gtol, gtol);
    }
}

static void attention_cases(ct *c)
{
    static const attn_case cases[] = {
        {1, 5, 2, 2, 8, 0},    {2, 37, 6, 2, 64, 0}, {1, 45, 4, 1, 128, 2},
        {1, 130, 2, 1, 64, 0}, {2, 100, 2, 2, 64, 3},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) attn_run(c, &cases[i]);
}

MG_TEST(cuda_h16_attention)
{
    ct_each_half(t, attention_cases);
}

/* test_cuda_attn.c — the CUDA flash attention (forward, backward) against the CPU reference
 * (which materialises the probabilities): T below, at and not a multiple of the 32-row tile,
 * grouped-query attention with group sizes 1, 2, 3 and 4 (and Hkv = 1), head dims padded to
 * the kernels' 32-wide chunks, document segments. fp32 throughout; the reference sums in
 * double: |cuda - ref| <= 2e-5 + 2e-4 |ref|. Gradients start non-zero (they are added into).
 */
#include "cuda_test_util.h"

#define ATOL 2e-5
#define RTOL 2e-4

typedef struct attn_case {
    int64_t B, T, Hq, Hkv, D;
    int segs; /* document segments per sequence (0: no mask) */
} attn_case;

static void attn_run(ct *c, const attn_case *ac)
{
    mgk_attn_dims d = {ac->B, ac->T, ac->Hq, ac->Hkv, ac->D, 1.0f / sqrtf((float)ac->D)};
    int64_t nq = d.B * d.T * d.Hq * d.D, nk = d.B * d.T * d.Hkv * d.D;
    float *q = ct_rand(c, nq, 1, 1.0f), *k = ct_rand(c, nk, 2, 1.0f), *v = ct_rand(c, nk, 3, 1.0f);
    int32_t *seg = ac->segs ? ct_segments(c, d.B, d.T, ac->segs) : NULL;
    float *o = ct_rand(c, nq, 4, 1.0f), *Do = CT_UPF(c, o, nq);
    float *sv = ct_rand(c, mgk_attn_saved_numel(&c->ref, &d), 5, 1.0f);
    float *Dsv = (float *)ct_dalloc(c, (size_t)mgk_attn_saved_numel(&c->dev, &d) * sizeof(float));
    float *Dq = CT_UPF(c, q, nq), *Dk = CT_UPF(c, k, nk), *Dv = CT_UPF(c, v, nk);
    int32_t *Dseg = seg ? CT_UPI(c, seg, d.B * d.T) : NULL;
    mgk_attn_fwd(&c->ref, &d, o, sv, q, k, v, seg);
    mgk_attn_fwd(&c->dev, &d, Do, Dsv, Dq, Dk, Dv, Dseg);
    KT_CLOSE(c->t, "attn out", ct_down(c, Do, nq), o, nq, ATOL, RTOL);
    float *dy = ct_rand(c, nq, 6, 1.0f), *dq = ct_rand(c, nq, 7, 1.0f);
    float *dk = ct_rand(c, nk, 8, 1.0f), *dv = ct_rand(c, nk, 9, 1.0f);
    float *Ddq = CT_UPF(c, dq, nq), *Ddk = CT_UPF(c, dk, nk), *Ddv = CT_UPF(c, dv, nk);
    MG_CHECK_OK(c->t, mgk_ctx_reserve(&c->ref, mgk_attn_scratch_numel(&c->ref, &d)));
    MG_CHECK_OK(c->t, mgk_ctx_reserve(&c->dev, mgk_attn_scratch_numel(&c->dev, &d)));
    mgk_attn_bwd(&c->ref, &d, dq, dk, dv, dy, sv, q, k, v, seg);
    mgk_attn_bwd(&c->dev, &d, Ddq, Ddk, Ddv, CT_UPF(c, dy, nq), Dsv, Dq, Dk, Dv, Dseg);
    KT_CLOSE(c->t, "attn dq", ct_down(c, Ddq, nq), dq, nq, ATOL, RTOL);
    KT_CLOSE(c->t, "attn dk", ct_down(c, Ddk, nk), dk, nk, ATOL, RTOL);
    KT_CLOSE(c->t, "attn dv", ct_down(c, Ddv, nk), dv, nk, ATOL, RTOL);
}

MG_TEST(cuda_attention)
{
    static const attn_case cases[] = {
        {1, 1, 1, 1, 1, 0},   {1, 5, 2, 2, 8, 0},    {2, 37, 4, 2, 16, 0}, {1, 70, 6, 2, 40, 0},
        {2, 33, 4, 1, 64, 2}, {1, 32, 4, 1, 100, 0}, {1, 45, 8, 2, 128, 3}, {1, 20, 2, 1, 200, 0},
    };
    ct c;
    ct_begin(&c, t);
    for (size_t i = 0; c.ok && i < sizeof cases / sizeof cases[0]; i++) attn_run(&c, &cases[i]);
    ct_end(&c);
}

/* test_cuda_loss_optim.c — the CUDA softmax + cross-entropy (whole vocabulary, shards, a shard
 * of padding only, in-place backward) and AdamW against the CPU reference. AdamW uses the
 * reference's operations in its order with correctly rounded intrinsics: bitwise.
 */
#include "cuda_test_util.h"

/* logits (N, Vl) of global columns [col0, col0 + Vl), vocab real columns overall. */
static void xent_shard_case(ct *c, int64_t N, int64_t Vl, int64_t col0, int64_t vocab)
{
    float *x = ct_rand(c, N * Vl, 1, 8.0f);
    int32_t *tg = (int32_t *)ct_host(c, kt_ids(N, 2, 0, (int32_t)vocab));
    float *mx = ct_rand(c, N, 3, 1.0f), *sm = ct_rand(c, N, 4, 1.0f), *tv = ct_rand(c, N, 5, 1.0f);
    float *Dx = CT_UPF(c, x, N * Vl), *Dmx = CT_UPF(c, mx, N), *Dsm = CT_UPF(c, sm, N);
    float *Dtv = CT_UPF(c, tv, N);
    int32_t *Dtg = CT_UPI(c, tg, N);
    mgk_xent_partial(&c->ref, mx, sm, tv, x, tg, N, Vl, col0, vocab);
    mgk_xent_partial(&c->dev, Dmx, Dsm, Dtv, Dx, Dtg, N, Vl, col0, vocab);
    KT_SAME(c->t, "xent rowmax", ct_down(c, Dmx, N), mx, N);
    KT_CLOSE(c->t, "xent rowsum", ct_down(c, Dsm, N), sm, N, 0.0, 1e-5);
    KT_SAME(c->t, "xent tgt", ct_down(c, Dtv, N), tv, N);
    /* pretend the global max is 0.5 above: rescale, then finish */
    float *g = ct_dup(c, mx, N);
    for (int64_t i = 0; i < N; i++) g[i] = isinf(g[i]) ? 1.0f : g[i] + 0.5f;
    float *Dg = CT_UPF(c, g, N);
    mgk_xent_rescale(&c->ref, sm, mx, g, N), mgk_xent_rescale(&c->dev, Dsm, Dmx, Dg, N);
    KT_CLOSE(c->t, "xent rescale", ct_down(c, Dsm, N), sm, N, 0.0, 1e-5);
    /* the largest of three ranks' row maxima (the tensor-parallel group's) */
    float *all = ct_rand(c, 3 * N, 8, 4.0f), *gm = ct_rand(c, N, 9, 1.0f);
    float *Dall = CT_UPF(c, all, 3 * N), *Dgm = CT_UPF(c, gm, N);
    mgk_xent_gmax(&c->ref, gm, all, 3, N), mgk_xent_gmax(&c->dev, Dgm, Dall, 3, N);
    KT_SAME(c->t, "xent gmax", ct_down(c, Dgm, N), gm, N);
    if (col0 >= vocab) return; /* a padding-only shard has no log-sum-exp of its own */
    float *loss = ct_rand(c, N, 6, 1.0f), *lse = ct_rand(c, N, 7, 1.0f);
    float *Dloss = CT_UPF(c, loss, N), *Dlse = CT_UPF(c, lse, N);
    mgk_xent_finish(&c->ref, loss, lse, g, sm, tv, N);
    mgk_xent_finish(&c->dev, Dloss, Dlse, Dg, Dsm, Dtv, N);
    KT_CLOSE(c->t, "xent finish loss", ct_down(c, Dloss, N), loss, N, 1e-5, 1e-5);
    KT_CLOSE(c->t, "xent finish lse", ct_down(c, Dlse, N), lse, N, 1e-5, 1e-5);
}

static void xent_full_case(ct *c, int64_t N, int64_t Vp, int64_t vocab)
{
    float *x = ct_rand(c, N * Vp, 11, 8.0f), *mask = ct_rand(c, N, 12, 1.0f);
    int32_t *tg = (int32_t *)ct_host(c, kt_ids(N, 13, 0, (int32_t)vocab));
    float *loss = ct_rand(c, N, 14, 1.0f), *lse = ct_rand(c, N, 15, 1.0f);
    float *Dx = CT_UPF(c, x, N * Vp), *Dloss = CT_UPF(c, loss, N), *Dlse = CT_UPF(c, lse, N);
    int32_t *Dtg = CT_UPI(c, tg, N);
    mgk_xent_fwd(&c->ref, loss, lse, x, tg, N, Vp, vocab);
    mgk_xent_fwd(&c->dev, Dloss, Dlse, Dx, Dtg, N, Vp, vocab);
    KT_CLOSE(c->t, "xent loss", ct_down(c, Dloss, N), loss, N, 1e-5, 1e-5);
    KT_CLOSE(c->t, "xent lse", ct_down(c, Dlse, N), lse, N, 1e-5, 1e-5);
    float *g = ct_rand(c, N * Vp, 16, 1.0f), *Dg = CT_UPF(c, g, N * Vp);
    mgk_xent_bwd(&c->ref, g, x, lse, tg, mask, 0.25f, N, Vp, 0, vocab);
    mgk_xent_bwd(&c->dev, Dg, Dx, Dlse, Dtg, CT_UPF(c, mask, N), 0.25f, N, Vp, 0, vocab);
    KT_CLOSE(c->t, "xent dlogits", ct_down(c, Dg, N * Vp), g, N * Vp, 1e-7, 1e-5);
    /* in place, no mask, over the second half of the vocabulary as a shard */
    int64_t half = Vp / 2;
    float *xs = ct_rand(c, N * half, 17, 8.0f), *Dxs = CT_UPF(c, xs, N * half);
    mgk_xent_bwd(&c->ref, xs, xs, lse, tg, NULL, 1.0f, N, half, Vp - half, vocab);
    mgk_xent_bwd(&c->dev, Dxs, Dxs, Dlse, Dtg, NULL, 1.0f, N, half, Vp - half, vocab);
    KT_CLOSE(c->t, "xent dlogits in place", ct_down(c, Dxs, N * half), xs, N * half, 1e-7, 1e-5);
}

MG_TEST(cuda_xent)
{
    ct c;
    ct_begin(&c, t);
    if (c.ok) xent_shard_case(&c, 1, 1, 0, 1);
    if (c.ok) xent_shard_case(&c, 9, 1000, 0, 990);
    if (c.ok) xent_shard_case(&c, 9, 500, 500, 990);
    if (c.ok) xent_shard_case(&c, 4, 300, 1000, 990);
    if (c.ok) xent_full_case(&c, 1, 2, 1);
    if (c.ok) xent_full_case(&c, 13, 1030, 1000);
    ct_end(&c);
}

static void adamw_case(ct *c, int64_t n, int64_t step, double grad_scale, int decay)
{
    mgk_adamw_hp hp = {.lr = 3e-4, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8,
                       .weight_decay = 0.1, .step = step, .grad_scale = grad_scale};
    float *p = ct_rand(c, n, 1, 1.0f), *m = ct_rand(c, n, 2, 0.1f), *v = ct_rand(c, n, 3, 0.1f);
    float *g = ct_rand(c, n, 4, 1.0f);
    for (int64_t i = 0; i < n; i++) v[i] = fabsf(v[i]);
    float *Dp = CT_UPF(c, p, n), *Dm = CT_UPF(c, m, n), *Dv = CT_UPF(c, v, n);
    float *Dg = CT_UPF(c, g, n);
    for (int it = 0; it < 3; it++) {
        mgk_adamw(&c->ref, p, m, v, g, n, &hp, decay);
        mgk_adamw(&c->dev, Dp, Dm, Dv, Dg, n, &hp, decay);
        hp.step++;
    }
    KT_SAME(c->t, "adamw param", ct_down(c, Dp, n), p, n);
    KT_SAME(c->t, "adamw m", ct_down(c, Dm, n), m, n);
    KT_SAME(c->t, "adamw v", ct_down(c, Dv, n), v, n);
}

MG_TEST(cuda_adamw)
{
    ct c;
    ct_begin(&c, t);
    if (c.ok) adamw_case(&c, 1, 1, 1.0, 1);
    if (c.ok) adamw_case(&c, 3 * 16384 + 17, 1, 1.0, 1);
    if (c.ok) adamw_case(&c, 1001, 10, 0.37, 0);
    ct_end(&c);
}

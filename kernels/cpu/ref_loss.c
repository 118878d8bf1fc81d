/* ref_loss.c — reference softmax + cross-entropy over a padded (possibly sharded) vocabulary:
 * padding columns (global index >= vocab) never enter the max, the sum or the gradient.
 * Semantics: kernels.h. The backward writes dlogits and may run in place over logits.
 */
#include <math.h>

#include "cpu_internal.h"

static int64_t valid_cols(int64_t Vl, int64_t col0, int64_t vocab)
{
    int64_t n = vocab - col0;
    return n < 0 ? 0 : (n < Vl ? n : Vl);
}

static void xent_row(float *rowmax, float *rowsum, float *tgt, const float *x, int32_t target,
                     int64_t nv, int64_t col0)
{
    double mx = -INFINITY, sum = 0.0;
    for (int64_t j = 0; j < nv; j++) mx = x[j] > mx ? x[j] : mx;
    for (int64_t j = 0; j < nv; j++) sum += exp((double)x[j] - mx);
    int64_t tj = (int64_t)target - col0;
    *rowmax = (float)mx;
    *rowsum = (float)sum;
    *tgt = tj >= 0 && tj < nv ? x[tj] : 0.0f;
}

void mgk_ref_xent_partial(const mg_kctx *k, float *rowmax, float *rowsum, float *tgt,
                          const float *logits, const int32_t *targets, int64_t N, int64_t Vl,
                          int64_t col0, int64_t vocab)
{
    (void)k;
    int64_t nv = valid_cols(Vl, col0, vocab);
    for (int64_t i = 0; i < N; i++)
        xent_row(rowmax + i, rowsum + i, tgt + i, logits + i * Vl, targets[i], nv, col0);
}

void mgk_ref_xent_gmax(const mg_kctx *k, float *gmax, const float *all, int64_t tp, int64_t N)
{
    (void)k;
    for (int64_t i = 0; i < N; i++) {
        float m = all[i];
        for (int64_t r = 1; r < tp; r++) m = fmaxf(m, all[r * N + i]);
        gmax[i] = m;
    }
}

void mgk_ref_xent_rescale(const mg_kctx *k, float *rowsum, const float *rowmax,
                          const float *gmax, int64_t N)
{
    (void)k;
    for (int64_t i = 0; i < N; i++)
        if (rowsum[i] != 0.0f) rowsum[i] = (float)(rowsum[i] * exp((double)rowmax[i] - gmax[i]));
}

void mgk_ref_xent_finish(const mg_kctx *k, float *loss, float *lse, const float *rowmax,
                         const float *rowsum, const float *tgt, int64_t N)
{
    (void)k;
    for (int64_t i = 0; i < N; i++) {
        double l = (double)rowmax[i] + log((double)rowsum[i]);
        loss[i] = (float)(l - tgt[i]);
        lse[i] = (float)l;
    }
}

/* Row statistics in double straight to lse and loss (no float rounding in between). */
void mgk_ref_xent_fwd(const mg_kctx *k, float *loss, float *lse, const float *logits,
                      const int32_t *targets, int64_t N, int64_t Vp, int64_t vocab)
{
    (void)k;
    int64_t nv = valid_cols(Vp, 0, vocab);
    for (int64_t i = 0; i < N; i++) {
        const float *x = logits + i * Vp;
        double mx = -INFINITY, sum = 0.0;
        for (int64_t j = 0; j < nv; j++) mx = x[j] > mx ? x[j] : mx;
        for (int64_t j = 0; j < nv; j++) sum += exp((double)x[j] - mx);
        double l = mx + log(sum);
        lse[i] = (float)l;
        loss[i] = (float)(l - x[targets[i]]);
    }
}

void mgk_ref_xent_bwd(const mg_kctx *k, float *dlogits, const float *logits, const float *lse,
                      const int32_t *targets, const float *mask, float scale, int64_t N,
                      int64_t Vl, int64_t col0, int64_t vocab)
{
    (void)k;
    int64_t nv = valid_cols(Vl, col0, vocab);
    for (int64_t i = 0; i < N; i++) {
        double w = (double)scale * (mask ? mask[i] : 1.0f);
        for (int64_t j = 0; j < Vl; j++) {
            double g = 0.0;
            if (j < nv) g = exp((double)logits[i * Vl + j] - lse[i]) - (col0 + j == targets[i]);
            dlogits[i * Vl + j] = (float)(g * w);
        }
    }
}

/* fast_loss.c — OpenMP softmax + cross-entropy over a padded (possibly sharded) vocabulary:
 * rows in parallel, fp32 exponentials with a double row sum. Same meaning as ref_loss.c;
 * the backward writes dlogits and may run in place over logits.
 */
#include <math.h>

#include "cpu_internal.h"

static int64_t valid_cols(int64_t Vl, int64_t col0, int64_t vocab)
{
    int64_t n = vocab - col0;
    return n < 0 ? 0 : (n < Vl ? n : Vl);
}

static float row_max(const float *x, int64_t n)
{
    float m[8] = {-INFINITY, -INFINITY, -INFINITY, -INFINITY,
                  -INFINITY, -INFINITY, -INFINITY, -INFINITY};
    int64_t j = 0;
    for (; j + 8 <= n; j += 8)
        for (int l = 0; l < 8; l++) m[l] = x[j + l] > m[l] ? x[j + l] : m[l];
    float mx = -INFINITY;
    for (int l = 0; l < 8; l++) mx = m[l] > mx ? m[l] : mx;
    for (; j < n; j++) mx = x[j] > mx ? x[j] : mx;
    return mx;
}

static double row_sumexp(const float *x, int64_t n, float mx)
{
    double sum = 0.0;
    for (int64_t j = 0; j < n; j++) sum += expf(x[j] - mx);
    return sum;
}

void mgk_fast_xent_partial(const mg_kctx *k, float *rowmax, float *rowsum, float *tgt,
                           const float *logits, const int32_t *targets, int64_t N, int64_t Vl,
                           int64_t col0, int64_t vocab)
{
    int64_t nv = valid_cols(Vl, col0, vocab);
    MGK_OMP_FOR(k->nthreads)
    for (int64_t i = 0; i < N; i++) {
        const float *x = logits + i * Vl;
        float mx = row_max(x, nv);
        int64_t tj = (int64_t)targets[i] - col0;
        rowmax[i] = mx;
        rowsum[i] = nv > 0 ? (float)row_sumexp(x, nv, mx) : 0.0f;
        tgt[i] = tj >= 0 && tj < nv ? x[tj] : 0.0f;
    }
}

void mgk_fast_xent_gmax(const mg_kctx *k, float *gmax, const float *all, int64_t tp, int64_t N)
{
    mgk_ref_xent_gmax(k, gmax, all, tp, N);
}

void mgk_fast_xent_rescale(const mg_kctx *k, float *rowsum, const float *rowmax,
                           const float *gmax, int64_t N)
{
    mgk_ref_xent_rescale(k, rowsum, rowmax, gmax, N);
}

void mgk_fast_xent_finish(const mg_kctx *k, float *loss, float *lse, const float *rowmax,
                          const float *rowsum, const float *tgt, int64_t N)
{
    mgk_ref_xent_finish(k, loss, lse, rowmax, rowsum, tgt, N);
}

void mgk_fast_xent_fwd(const mg_kctx *k, float *loss, float *lse, const float *logits,
                       const int32_t *targets, int64_t N, int64_t Vp, int64_t vocab)
{
    int64_t nv = valid_cols(Vp, 0, vocab);
    MGK_OMP_FOR(k->nthreads)
    for (int64_t i = 0; i < N; i++) {
        const float *x = logits + i * Vp;
        float mx = row_max(x, nv);
        double l = (double)mx + log(row_sumexp(x, nv, mx));
        lse[i] = (float)l;
        loss[i] = (float)(l - x[targets[i]]);
    }
}

void mgk_fast_xent_bwd(const mg_kctx *k, float *dlogits, const float *logits, const float *lse,
                       const int32_t *targets, const float *mask, float scale, int64_t N,
                       int64_t Vl, int64_t col0, int64_t vocab)
{
    int64_t nv = valid_cols(Vl, col0, vocab);
    MGK_OMP_FOR(k->nthreads)
    for (int64_t i = 0; i < N; i++) {
        float w = scale * (mask ? mask[i] : 1.0f), l = lse[i];
        const float *x = logits + i * Vl;
        float *g = dlogits + i * Vl;
        for (int64_t j = 0; j < nv; j++) g[j] = expf(x[j] - l) * w;
        for (int64_t j = nv; j < Vl; j++) g[j] = 0.0f;
        int64_t tj = (int64_t)targets[i] - col0;
        if (tj >= 0 && tj < nv) g[tj] -= w;
    }
}

/* ref_norm.c — reference LayerNorm and RMSNorm, forward and backward (row by row, double
 * accumulators for the row statistics). Backward adds into dinp/dw/db.
 */
#include <math.h>

#include "cpu_internal.h"

void mgk_ref_layernorm_fwd(const mg_kctx *k, float *out, float *mean, float *rstd,
                           const float *inp, const float *w, const float *b, int64_t N,
                           int64_t C, float eps)
{
    (void)k;
    for (int64_t i = 0; i < N; i++) {
        const float *x = inp + i * C;
        double s = 0.0, ss = 0.0;
        for (int64_t c = 0; c < C; c++) s += x[c];
        double mu = s / (double)C;
        for (int64_t c = 0; c < C; c++) ss += (x[c] - mu) * (x[c] - mu);
        float r = (float)(1.0 / sqrt(ss / (double)C + eps));
        for (int64_t c = 0; c < C; c++)
            out[i * C + c] = ((x[c] - (float)mu) * r) * w[c] + (b ? b[c] : 0.0f);
        mean[i] = (float)mu;
        rstd[i] = r;
    }
}

/* dinp += rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dout * w. */
static void ln_dinp_row(float *dx, const float *dy, const float *x, const float *w, float mu,
                        float r, int64_t C, int center)
{
    double sg = 0.0, sgx = 0.0;
    for (int64_t c = 0; c < C; c++) {
        double xhat = (double)(x[c] - (center ? mu : 0.0f)) * r;
        sg += (double)dy[c] * w[c];
        sgx += (double)dy[c] * w[c] * xhat;
    }
    double mg = center ? sg / (double)C : 0.0, mgx = sgx / (double)C;
    for (int64_t c = 0; c < C; c++) {
        double xhat = (double)(x[c] - (center ? mu : 0.0f)) * r;
        dx[c] += (float)(r * ((double)dy[c] * w[c] - mg - xhat * mgx));
    }
}

void mgk_ref_layernorm_bwd(const mg_kctx *k, float *dinp, float *dw, float *db, const float *dout,
                           const float *inp, const float *w, const float *mean, const float *rstd,
                           int64_t N, int64_t C)
{
    (void)k;
    for (int64_t i = 0; i < N; i++) {
        const float *x = inp + i * C, *dy = dout + i * C;
        if (dinp) ln_dinp_row(dinp + i * C, dy, x, w, mean[i], rstd[i], C, 1);
        for (int64_t c = 0; c < C; c++) {
            if (dw) dw[c] += dy[c] * ((x[c] - mean[i]) * rstd[i]);
            if (db) db[c] += dy[c];
        }
    }
}

void mgk_ref_rmsnorm_fwd(const mg_kctx *k, float *out, float *rstd, const float *inp,
                         const float *w, int64_t N, int64_t C, float eps)
{
    (void)k;
    for (int64_t i = 0; i < N; i++) {
        const float *x = inp + i * C;
        double ss = 0.0;
        for (int64_t c = 0; c < C; c++) ss += (double)x[c] * x[c];
        float r = (float)(1.0 / sqrt(ss / (double)C + eps));
        for (int64_t c = 0; c < C; c++) out[i * C + c] = (x[c] * r) * w[c];
        rstd[i] = r;
    }
}

void mgk_ref_rmsnorm_bwd(const mg_kctx *k, float *dinp, float *dw, const float *dout,
                         const float *inp, const float *w, const float *rstd, int64_t N,
                         int64_t C)
{
    (void)k;
    for (int64_t i = 0; i < N; i++) {
        const float *x = inp + i * C, *dy = dout + i * C;
        if (dinp) ln_dinp_row(dinp + i * C, dy, x, w, 0.0f, rstd[i], C, 0);
        if (dw)
            for (int64_t c = 0; c < C; c++) dw[c] += dy[c] * (x[c] * rstd[i]);
    }
}

/* fast_norm.c — OpenMP LayerNorm and RMSNorm, forward and backward: rows in parallel for the
 * activations, column blocks in parallel (rows in order, deterministic) for the parameter
 * gradients. Same meaning as ref_norm.c; row statistics accumulate in double.
 */
#include <math.h>

#include "cpu_internal.h"

#define COL_BLOCK 64

static void norm_row(float *y, float *mean, float *rstd, const float *x, const float *w,
                     const float *b, int64_t C, float eps, int center)
{
    double s = 0.0, ss = 0.0;
    if (center)
        for (int64_t c = 0; c < C; c++) s += x[c];
    float mu = (float)(s / (double)C);
    for (int64_t c = 0; c < C; c++) ss += (double)(x[c] - mu) * (x[c] - mu);
    float r = (float)(1.0 / sqrt(ss / (double)C + eps));
    for (int64_t c = 0; c < C; c++) y[c] = ((x[c] - mu) * r) * w[c] + (b ? b[c] : 0.0f);
    if (mean) *mean = mu;
    *rstd = r;
}

void mgk_fast_layernorm_fwd(const mg_kctx *k, float *out, float *mean, float *rstd,
                            const float *inp, const float *w, const float *b, int64_t N,
                            int64_t C, float eps)
{
    MGK_OMP_FOR(k->nthreads)
    for (int64_t i = 0; i < N; i++)
        norm_row(out + i * C, mean + i, rstd + i, inp + i * C, w, b, C, eps, 1);
}

void mgk_fast_rmsnorm_fwd(const mg_kctx *k, float *out, float *rstd, const float *inp,
                          const float *w, int64_t N, int64_t C, float eps)
{
    MGK_OMP_FOR(k->nthreads)
    for (int64_t i = 0; i < N; i++)
        norm_row(out + i * C, NULL, rstd + i, inp + i * C, w, NULL, C, eps, 0);
}

static void norm_dinp_row(float *dx, const float *dy, const float *x, const float *w, float mu,
                          float r, int64_t C, int center)
{
    float sg = 0.0f, sgx = 0.0f;
    for (int64_t c = 0; c < C; c++) {
        float g = dy[c] * w[c];
        sg += g;
        sgx += g * ((x[c] - mu) * r);
    }
    float mg = center ? sg / (float)C : 0.0f, mgx = sgx / (float)C;
    for (int64_t c = 0; c < C; c++) dx[c] += r * (dy[c] * w[c] - mg - ((x[c] - mu) * r) * mgx);
}

/* dw += sum_i dy * xhat, db += sum_i dy over a block of columns. */
static void norm_param_block(float *dw, float *db, const float *dout, const float *inp,
                             const float *mean, const float *rstd, int64_t N, int64_t C,
                             int64_t c0, int64_t c1)
{
    double aw[COL_BLOCK] = {0}, ab[COL_BLOCK] = {0};
    for (int64_t i = 0; i < N; i++) {
        float mu = mean ? mean[i] : 0.0f, r = rstd[i];
        const float *dy = dout + i * C, *x = inp + i * C;
        for (int64_t c = c0; c < c1; c++) {
            aw[c - c0] += dy[c] * ((x[c] - mu) * r);
            ab[c - c0] += dy[c];
        }
    }
    for (int64_t c = c0; c < c1; c++) {
        if (dw) dw[c] += (float)aw[c - c0];
        if (db) db[c] += (float)ab[c - c0];
    }
}

static void norm_bwd(const mg_kctx *k, float *dinp, float *dw, float *db, const float *dout,
                     const float *inp, const float *w, const float *mean, const float *rstd,
                     int64_t N, int64_t C)
{
    if (dinp) {
        MGK_OMP_FOR(k->nthreads)
        for (int64_t i = 0; i < N; i++)
            norm_dinp_row(dinp + i * C, dout + i * C, inp + i * C, w, mean ? mean[i] : 0.0f,
                          rstd[i], C, mean != NULL);
    }
    if (!dw && !db) return;
    int64_t nb = (C + COL_BLOCK - 1) / COL_BLOCK;
    MGK_OMP_FOR(k->nthreads)
    for (int64_t blk = 0; blk < nb; blk++) {
        int64_t c0 = blk * COL_BLOCK, c1 = c0 + COL_BLOCK < C ? c0 + COL_BLOCK : C;
        norm_param_block(dw, db, dout, inp, mean, rstd, N, C, c0, c1);
    }
}

void mgk_fast_layernorm_bwd(const mg_kctx *k, float *dinp, float *dw, float *db,
                            const float *dout, const float *inp, const float *w,
                            const float *mean, const float *rstd, int64_t N, int64_t C)
{
    norm_bwd(k, dinp, dw, db, dout, inp, w, mean, rstd, N, C);
}

void mgk_fast_rmsnorm_bwd(const mg_kctx *k, float *dinp, float *dw, const float *dout,
                          const float *inp, const float *w, const float *rstd, int64_t N,
                          int64_t C)
{
    norm_bwd(k, dinp, dw, NULL, dout, inp, w, NULL, rstd, N, C);
}

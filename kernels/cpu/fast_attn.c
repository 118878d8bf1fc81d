/* fast_attn.c — fast causal grouped-query attention and RoPE. Attention runs one (batch,
 * head) pair per OpenMP task (forward) or one (batch, kv-group) per task (backward, so that
 * the heads sharing a group add into dk/dv in order without races), with the products done
 * by mgk_gemm_inner on causal row blocks (the strictly-future half is never multiplied).
 * The forward saves the probabilities exactly as ref_attn.c; the backward uses a T*T slice
 * of k->scratch per thread.
 */
#include <math.h>

#include "cpu_internal.h"

#if MG_HAVE_OPENMP
#include <omp.h>
#endif

#define TBLK 128

static int64_t min64(int64_t a, int64_t b)
{
    return a < b ? a : b;
}

/* S[t, s] = alpha * X[t] . Y[s] for s < end of t's row block (X rows ldx, Y rows ldy). */
static void causal_nt(float *S, int64_t T, const float *X, int64_t ldx, const float *Y,
                      int64_t ldy, int64_t D, float alpha)
{
    for (int64_t t0 = 0; t0 < T; t0 += TBLK) {
        int64_t t1 = min64(t0 + TBLK, T);
        mgk_gemm_inner(S + t0 * T, T, X + t0 * ldx, ldx, Y, ldy, t1 - t0, t1, D, 0, 1, alpha,
                       0.0f);
    }
}

/* O[t] = beta O[t] + alpha * sum_{s < end of block} S[t, s] Y[s]. */
static void causal_nn(float *O, int64_t ldo, const float *S, int64_t T, const float *Y,
                      int64_t ldy, int64_t D, float alpha, float beta)
{
    for (int64_t t0 = 0; t0 < T; t0 += TBLK) {
        int64_t t1 = min64(t0 + TBLK, T);
        mgk_gemm_inner(O + t0 * ldo, ldo, S + t0 * T, T, Y, ldy, t1 - t0, D, t1, 0, 0, alpha,
                       beta);
    }
}

/* O[s] += alpha * sum_{t >= start of s's block} S[t, s] X[t]. */
static void causal_tn(float *O, int64_t ldo, const float *S, int64_t T, const float *X,
                      int64_t ldx, int64_t D, float alpha)
{
    for (int64_t s0 = 0; s0 < T; s0 += TBLK) {
        int64_t s1 = min64(s0 + TBLK, T);
        mgk_gemm_inner(O + s0 * ldo, ldo, S + s0 * T + s0, T, X + s0 * ldx, ldx, s1 - s0, D,
                       T - s0, 1, 0, alpha, 1.0f);
    }
}

/* Masked softmax of row t of S in place; every entry s > t (or in another segment) is 0. */
static void softmax_row(float *row, int64_t T, int64_t t, const int32_t *segb)
{
    float mx = -INFINITY;
    for (int64_t s = 0; s <= t; s++)
        if (!segb || segb[s] == segb[t]) mx = row[s] > mx ? row[s] : mx;
    float sum = 0.0f;
    for (int64_t s = 0; s <= t; s++) {
        float e = (!segb || segb[s] == segb[t]) ? expf(row[s] - mx) : 0.0f;
        row[s] = e;
        sum += e;
    }
    float inv = 1.0f / sum;
    for (int64_t s = 0; s <= t; s++) row[s] *= inv;
    for (int64_t s = t + 1; s < T; s++) row[s] = 0.0f;
}

void mgk_fast_attn_fwd(const mg_kctx *k, const mgk_attn_dims *d, float *out, float *saved,
                       const float *q, const float *kk, const float *v, const int32_t *seg)
{
    int64_t T = d->T, D = d->D, rep = d->Hq / d->Hkv, ldq = d->Hq * D, ldkv = d->Hkv * D;
    MGK_OMP_FOR_DYN(k->nthreads)
    for (int64_t bh = 0; bh < d->B * d->Hq; bh++) {
        int64_t b = bh / d->Hq, h = bh % d->Hq;
        float *P = saved + bh * T * T;
        const float *qh = q + b * T * ldq + h * D;
        const float *kg = kk + b * T * ldkv + (h / rep) * D;
        const float *vg = v + b * T * ldkv + (h / rep) * D;
        causal_nt(P, T, qh, ldq, kg, ldkv, D, d->scale);
        for (int64_t t = 0; t < T; t++) softmax_row(P + t * T, T, t, seg ? seg + b * T : NULL);
        causal_nn(out + b * T * ldq + h * D, ldq, P, T, vg, ldkv, D, 1.0f, 0.0f);
    }
}

/* dS = P * (dP - rowsum(P * dP)) in place over dP; zero above the diagonal. */
static void dsoftmax(float *dP, const float *P, int64_t T)
{
    for (int64_t t = 0; t < T; t++) {
        float *g = dP + t * T;
        const float *p = P + t * T;
        float dotv = 0.0f;
        for (int64_t s = 0; s <= t; s++) dotv += p[s] * g[s];
        for (int64_t s = 0; s <= t; s++) g[s] = p[s] * (g[s] - dotv);
        for (int64_t s = t + 1; s < T; s++) g[s] = 0.0f;
    }
}

static void attn_bwd_head(const mgk_attn_dims *d, float *dP, float *dqh, float *dkg, float *dvg,
                          const float *doh, const float *P, const float *qh, const float *kg,
                          const float *vg)
{
    int64_t T = d->T, D = d->D, ldq = d->Hq * D, ldkv = d->Hkv * D;
    causal_nt(dP, T, doh, ldq, vg, ldkv, D, 1.0f);
    causal_tn(dvg, ldkv, P, T, doh, ldq, D, 1.0f);
    dsoftmax(dP, P, T);
    causal_nn(dqh, ldq, dP, T, kg, ldkv, D, d->scale, 1.0f);
    causal_tn(dkg, ldkv, dP, T, qh, ldq, D, d->scale);
}

void mgk_fast_attn_bwd(const mg_kctx *k, const mgk_attn_dims *d, float *dq, float *dk, float *dv,
                       const float *dout, const float *saved, const float *q, const float *kk,
                       const float *v, const int32_t *seg)
{
    (void)seg; /* the saved probabilities already carry the mask */
    int64_t T = d->T, D = d->D, rep = d->Hq / d->Hkv, ldq = d->Hq * D, ldkv = d->Hkv * D;
    MGK_OMP_FOR_DYN(k->nthreads)
    for (int64_t bg = 0; bg < d->B * d->Hkv; bg++) {
        int tid = 0;
#if MG_HAVE_OPENMP
        tid = omp_get_thread_num();
#endif
        int64_t b = bg / d->Hkv, g = bg % d->Hkv, kvo = b * T * ldkv + g * D;
        for (int64_t h = g * rep; h < (g + 1) * rep; h++) {
            int64_t qo = b * T * ldq + h * D;
            attn_bwd_head(d, k->scratch + (int64_t)tid * T * T, dq + qo, dk + kvo, dv + kvo,
                          dout + qo, saved + (b * d->Hq + h) * T * T, q + qo, kk + kvo, v + kvo);
        }
    }
}

void mgk_fast_qkv_split(const mg_kctx *k, float *q, float *kk, float *v, const float *qkv,
                        int64_t N, int64_t Hq, int64_t Hkv, int64_t D)
{
    MGK_OMP_FOR(k->nthreads)
    for (int64_t i = 0; i < N; i++)
        mgk_qkv_row_split(q + i * Hq * D, kk + i * Hkv * D, v + i * Hkv * D,
                          qkv + i * (Hq + 2 * Hkv) * D, Hq, Hkv, D);
}

void mgk_fast_qkv_merge(const mg_kctx *k, float *qkv, const float *q, const float *kk,
                        const float *v, int64_t N, int64_t Hq, int64_t Hkv, int64_t D)
{
    MGK_OMP_FOR(k->nthreads)
    for (int64_t i = 0; i < N; i++)
        mgk_qkv_row_merge(qkv + i * (Hq + 2 * Hkv) * D, q + i * Hq * D, kk + i * Hkv * D,
                          v + i * Hkv * D, Hq, Hkv, D);
}

/* One position: the rotation of every head, angles computed once per feature pair. */
static void rope_pos(float *y, const float *x, float p, int64_t H, int64_t D, int64_t rot_dim,
                     float base, int dir, int acc)
{
    int64_t half = rot_dim / 2;
    for (int64_t i = 0; i < half; i++) {
        float ang = p * mgk_rope_inv_freq(i, rot_dim, base);
        float c = (float)cos((double)ang), s = (float)dir * (float)sin((double)ang);
        for (int64_t h = 0; h < H; h++) {
            const float *xh = x + h * D;
            float *yh = y + h * D;
            float x1 = xh[i], x2 = xh[i + half];
            float y1 = x1 * c - x2 * s, y2 = x2 * c + x1 * s;
            yh[i] = acc ? yh[i] + y1 : y1;
            yh[i + half] = acc ? yh[i + half] + y2 : y2;
        }
    }
    for (int64_t h = 0; h < H; h++)
        for (int64_t i = h * D + rot_dim; i < (h + 1) * D; i++) y[i] = acc ? y[i] + x[i] : x[i];
}

static void rope_fast(const mg_kctx *k, float *y, const float *x, const int32_t *pos, int64_t B,
                      int64_t T, int64_t H, int64_t D, int64_t rot_dim, float base, int dir)
{
    MGK_OMP_FOR(k->nthreads)
    for (int64_t bt = 0; bt < B * T; bt++) {
        float p = (float)(pos ? pos[bt] : bt % T);
        rope_pos(y + bt * H * D, x + bt * H * D, p, H, D, rot_dim, base, dir, dir < 0);
    }
}

void mgk_fast_rope_fwd(const mg_kctx *k, float *out, const float *inp, const int32_t *pos,
                       int64_t B, int64_t T, int64_t H, int64_t D, int64_t rot_dim, float base)
{
    rope_fast(k, out, inp, pos, B, T, H, D, rot_dim, base, 1);
}

void mgk_fast_rope_bwd(const mg_kctx *k, float *dinp, const float *dout, const int32_t *pos,
                       int64_t B, int64_t T, int64_t H, int64_t D, int64_t rot_dim, float base)
{
    rope_fast(k, dinp, dout, pos, B, T, H, D, rot_dim, base, -1);
}

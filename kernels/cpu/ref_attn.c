/* ref_attn.c — reference causal grouped-query self-attention (materialising the softmax
 * probabilities, which are what the forward saves) and rotary position embedding.
 * Layouts and masking rules: kernels.h. Backward adds into dq/dk/dv and dinp.
 */
#include <math.h>
#include <string.h>

#include "cpu_internal.h"

static int visible(const int32_t *seg, int64_t b, int64_t T, int64_t s, int64_t t)
{
    return s <= t && (!seg || seg[b * T + s] == seg[b * T + t]);
}

static double dot(const float *a, const float *b, int64_t n)
{
    double acc = 0.0;
    for (int64_t i = 0; i < n; i++) acc += (double)a[i] * b[i];
    return acc;
}

/* One query row: probabilities into P (length T, zero where masked), output into o. */
static void attn_row(const mgk_attn_dims *d, float *o, float *P, const float *qt,
                     const float *kbase, const float *vbase, const int32_t *seg, int64_t b,
                     int64_t t)
{
    int64_t ldkv = d->Hkv * d->D;
    double mx = -INFINITY, sum = 0.0;
    for (int64_t s = 0; s <= t; s++)
        if (visible(seg, b, d->T, s, t)) {
            double sc = d->scale * dot(qt, kbase + s * ldkv, d->D);
            mx = sc > mx ? sc : mx;
        }
    for (int64_t s = 0; s < d->T; s++) {
        double e = 0.0;
        if (visible(seg, b, d->T, s, t)) e = exp(d->scale * dot(qt, kbase + s * ldkv, d->D) - mx);
        P[s] = (float)e;
        sum += e;
    }
    for (int64_t s = 0; s < d->T; s++) P[s] = (float)(P[s] / sum);
    for (int64_t c = 0; c < d->D; c++) {
        double acc = 0.0;
        for (int64_t s = 0; s <= t; s++) acc += (double)P[s] * vbase[s * ldkv + c];
        o[c] = (float)acc;
    }
}

void mgk_ref_attn_fwd(const mg_kctx *k, const mgk_attn_dims *d, float *out, float *saved,
                      const float *q, const float *kk, const float *v, const int32_t *seg)
{
    (void)k;
    int64_t T = d->T, D = d->D, rep = d->Hq / d->Hkv;
    for (int64_t b = 0; b < d->B; b++)
        for (int64_t h = 0; h < d->Hq; h++) {
            const float *kb = kk + (b * T * d->Hkv + h / rep) * D;
            const float *vb = v + (b * T * d->Hkv + h / rep) * D;
            for (int64_t t = 0; t < T; t++) {
                int64_t qo = ((b * T + t) * d->Hq + h) * D;
                float *P = saved + ((b * d->Hq + h) * T + t) * T;
                attn_row(d, out + qo, P, q + qo, kb, vb, seg, b, t);
            }
        }
}

/* One query row of the backward; dP is a length-T buffer. */
static void attn_row_bwd(const mgk_attn_dims *d, float *dqt, float *dkb, float *dvb, float *dP,
                         const float *dot_, const float *P, const float *qt, const float *kb,
                         const float *vb, int64_t t)
{
    int64_t ldkv = d->Hkv * d->D, D = d->D;
    double rowdot = 0.0;
    for (int64_t s = 0; s <= t; s++) {
        dP[s] = P[s] == 0.0f ? 0.0f : (float)dot(dot_, vb + s * ldkv, D);
        rowdot += (double)P[s] * dP[s];
    }
    for (int64_t s = 0; s <= t; s++) {
        if (P[s] == 0.0f) continue;
        double ds = (double)P[s] * (dP[s] - rowdot) * d->scale;
        for (int64_t c = 0; c < D; c++) {
            dqt[c] += (float)(ds * kb[s * ldkv + c]);
            dkb[s * ldkv + c] += (float)(ds * qt[c]);
            dvb[s * ldkv + c] += P[s] * dot_[c];
        }
    }
}

void mgk_ref_attn_bwd(const mg_kctx *k, const mgk_attn_dims *d, float *dq, float *dk, float *dv,
                      const float *dout, const float *saved, const float *q, const float *kk,
                      const float *v, const int32_t *seg)
{
    (void)seg; /* the saved probabilities already carry the mask */
    int64_t T = d->T, D = d->D, rep = d->Hq / d->Hkv;
    for (int64_t b = 0; b < d->B; b++)
        for (int64_t h = 0; h < d->Hq; h++) {
            int64_t kvo = (b * T * d->Hkv + h / rep) * D;
            for (int64_t t = 0; t < T; t++) {
                int64_t qo = ((b * T + t) * d->Hq + h) * D;
                const float *P = saved + ((b * d->Hq + h) * T + t) * T;
                attn_row_bwd(d, dq + qo, dk + kvo, dv + kvo, k->scratch, dout + qo, P, q + qo,
                             kk + kvo, v + kvo, t);
            }
        }
}

/* Group g of a fused row: query heads g*rep .. g*rep+rep-1, then key g, then value g. */
void mgk_qkv_row_split(float *q, float *kk, float *v, const float *row, int64_t Hq, int64_t Hkv,
                       int64_t D)
{
    int64_t rep = Hq / Hkv, gs = (rep + 2) * D;
    size_t fs = sizeof(float);
    for (int64_t g = 0; g < Hkv; g++) {
        memcpy(q + g * rep * D, row + g * gs, (size_t)(rep * D) * fs);
        memcpy(kk + g * D, row + g * gs + rep * D, (size_t)D * fs);
        memcpy(v + g * D, row + g * gs + (rep + 1) * D, (size_t)D * fs);
    }
}

void mgk_qkv_row_merge(float *row, const float *q, const float *kk, const float *v, int64_t Hq,
                       int64_t Hkv, int64_t D)
{
    int64_t rep = Hq / Hkv, gs = (rep + 2) * D;
    size_t fs = sizeof(float);
    for (int64_t g = 0; g < Hkv; g++) {
        memcpy(row + g * gs, q + g * rep * D, (size_t)(rep * D) * fs);
        memcpy(row + g * gs + rep * D, kk + g * D, (size_t)D * fs);
        memcpy(row + g * gs + (rep + 1) * D, v + g * D, (size_t)D * fs);
    }
}

void mgk_ref_qkv_split(const mg_kctx *k, float *q, float *kk, float *v, const float *qkv,
                       int64_t N, int64_t Hq, int64_t Hkv, int64_t D)
{
    (void)k;
    for (int64_t i = 0; i < N; i++)
        mgk_qkv_row_split(q + i * Hq * D, kk + i * Hkv * D, v + i * Hkv * D,
                          qkv + i * (Hq + 2 * Hkv) * D, Hq, Hkv, D);
}

void mgk_ref_qkv_merge(const mg_kctx *k, float *qkv, const float *q, const float *kk,
                       const float *v, int64_t N, int64_t Hq, int64_t Hkv, int64_t D)
{
    (void)k;
    for (int64_t i = 0; i < N; i++)
        mgk_qkv_row_merge(qkv + i * (Hq + 2 * Hkv) * D, q + i * Hq * D, kk + i * Hkv * D,
                          v + i * Hkv * D, Hq, Hkv, D);
}

float mgk_rope_inv_freq(int64_t i, int64_t rot_dim, float base)
{
    float e = (float)(2 * i) / (float)rot_dim;
    return 1.0f / powf(base, e);
}

/* Rotates one head vector by the angles of position p; dir = +1 is R, dir = -1 is R^T (the
 * backward). acc: y += instead of y =. */
static void rope_head(float *y, const float *x, float p, int64_t D, int64_t rot_dim, float base,
                      int dir, int acc)
{
    int64_t half = rot_dim / 2;
    for (int64_t i = 0; i < half; i++) {
        float ang = p * mgk_rope_inv_freq(i, rot_dim, base);
        float c = (float)cos((double)ang), s = (float)dir * (float)sin((double)ang);
        float x1 = x[i], x2 = x[i + half];
        float y1 = x1 * c - x2 * s, y2 = x2 * c + x1 * s;
        y[i] = acc ? y[i] + y1 : y1;
        y[i + half] = acc ? y[i + half] + y2 : y2;
    }
    for (int64_t i = rot_dim; i < D; i++) y[i] = acc ? y[i] + x[i] : x[i];
}

static void rope_all(float *y, const float *x, const int32_t *pos, int64_t B, int64_t T,
                     int64_t H, int64_t D, int64_t rot_dim, float base, int dir)
{
    for (int64_t b = 0; b < B; b++)
        for (int64_t t = 0; t < T; t++) {
            float p = (float)(pos ? pos[b * T + t] : t);
            for (int64_t h = 0; h < H; h++) {
                int64_t o = ((b * T + t) * H + h) * D;
                rope_head(y + o, x + o, p, D, rot_dim, base, dir, dir < 0);
            }
        }
}

void mgk_ref_rope_fwd(const mg_kctx *k, float *out, const float *inp, const int32_t *pos,
                      int64_t B, int64_t T, int64_t H, int64_t D, int64_t rot_dim, float base)
{
    (void)k;
    rope_all(out, inp, pos, B, T, H, D, rot_dim, base, 1);
}

void mgk_ref_rope_bwd(const mg_kctx *k, float *dinp, const float *dout, const int32_t *pos,
                      int64_t B, int64_t T, int64_t H, int64_t D, int64_t rot_dim, float base)
{
    (void)k;
    rope_all(dinp, dout, pos, B, T, H, D, rot_dim, base, -1);
}

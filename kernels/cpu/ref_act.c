/* ref_act.c — reference GeLU (exact erf and tanh approximation) and SwiGLU, forward and
 * backward, evaluated in double and rounded once per element. Backward adds.
 */
#include <math.h>

#include "cpu_internal.h"

#define SQRT_2_OVER_PI 0.7978845608028654
#define GELU_C 0.044715

/* Evaluated in double and rounded once. */
static float gelu_value(float x, mgk_gelu_kind kind)
{
    double xd = x;
    if (kind == MGK_GELU_TANH)
        return (float)(0.5 * xd * (1.0 + tanh(SQRT_2_OVER_PI * (xd + GELU_C * xd * xd * xd))));
    return (float)(0.5 * xd * (1.0 + erf(xd * M_SQRT1_2)));
}

static float gelu_grad(float x, mgk_gelu_kind kind)
{
    double xd = x;
    if (kind == MGK_GELU_TANH) {
        double u = SQRT_2_OVER_PI * (xd + GELU_C * xd * xd * xd);
        double t = tanh(u);
        double du = SQRT_2_OVER_PI * (1.0 + 3.0 * GELU_C * xd * xd);
        return (float)(0.5 * (1.0 + t) + 0.5 * xd * (1.0 - t * t) * du);
    }
    double pdf = exp(-0.5 * xd * xd) * (M_2_SQRTPI * M_SQRT1_2 * 0.5);
    return (float)(0.5 * (1.0 + erf(xd * M_SQRT1_2)) + xd * pdf);
}

void mgk_ref_gelu_fwd(const mg_kctx *k, float *out, const float *inp, int64_t n,
                      mgk_gelu_kind kind)
{
    (void)k;
    for (int64_t i = 0; i < n; i++) out[i] = gelu_value(inp[i], kind);
}

void mgk_ref_gelu_bwd(const mg_kctx *k, float *dinp, const float *dout, const float *inp,
                      int64_t n, mgk_gelu_kind kind)
{
    (void)k;
    for (int64_t i = 0; i < n; i++) dinp[i] += gelu_grad(inp[i], kind) * dout[i];
}

static double sigmoid(double x)
{
    return 1.0 / (1.0 + exp(-x));
}

void mgk_ref_swiglu_fwd(const mg_kctx *k, float *out, const float *inp, int64_t N, int64_t F)
{
    (void)k;
    for (int64_t i = 0; i < N; i++) {
        const float *gate = inp + i * 2 * F, *up = gate + F;
        for (int64_t j = 0; j < F; j++) {
            double g = gate[j];
            out[i * F + j] = (float)(g * sigmoid(g) * up[j]);
        }
    }
}

/* d gate = dout * up * s * (1 + g (1 - s)), d up = dout * g * s, with s = sigmoid(g). */
void mgk_ref_swiglu_bwd(const mg_kctx *k, float *dinp, const float *dout, const float *inp,
                        int64_t N, int64_t F)
{
    (void)k;
    for (int64_t i = 0; i < N; i++) {
        const float *gate = inp + i * 2 * F, *up = gate + F;
        float *dgate = dinp + i * 2 * F, *dup = dgate + F;
        for (int64_t j = 0; j < F; j++) {
            double g = gate[j], s = sigmoid(g), dy = dout[i * F + j];
            dgate[j] += (float)(dy * up[j] * s * (1.0 + g * (1.0 - s)));
            dup[j] += (float)(dy * g * s);
        }
    }
}

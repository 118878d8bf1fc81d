/* fast_act.c — OpenMP GeLU (erf / tanh approximation) and SwiGLU, forward and backward, in
 * fp32 arithmetic (the reference evaluates in double). Backward adds into dinp.
 */
#include <math.h>

#include "cpu_internal.h"

#define SQRT_2_OVER_PI 0.7978845608f
#define GELU_C 0.044715f
#define INV_SQRT2 0.70710678118654752f
#define INV_SQRT_2PI 0.39894228040143268f

/* Cancellation-free forms: 0.5 (1 + tanh u) = sigmoid(2u), 1 - tanh^2 u = 4 s (1 - s),
 * 0.5 (1 + erf z) = 0.5 erfc(-z). */
static inline float gelu_f(float x, mgk_gelu_kind kind)
{
    if (kind == MGK_GELU_TANH) {
        float u = SQRT_2_OVER_PI * (x + GELU_C * x * x * x);
        return x / (1.0f + expf(-2.0f * u));
    }
    return 0.5f * x * erfcf(-x * INV_SQRT2);
}

static inline float gelu_grad_f(float x, mgk_gelu_kind kind)
{
    if (kind == MGK_GELU_TANH) {
        float u = SQRT_2_OVER_PI * (x + GELU_C * x * x * x);
        float s = 1.0f / (1.0f + expf(-2.0f * u));
        float du = SQRT_2_OVER_PI * (1.0f + 3.0f * GELU_C * x * x);
        return s + 2.0f * x * s * (1.0f - s) * du;
    }
    return 0.5f * erfcf(-x * INV_SQRT2) + x * INV_SQRT_2PI * expf(-0.5f * x * x);
}

void mgk_fast_gelu_fwd(const mg_kctx *k, float *out, const float *inp, int64_t n,
                       mgk_gelu_kind kind)
{
    MGK_OMP_FOR(k->nthreads)
    for (int64_t i = 0; i < n; i++) out[i] = gelu_f(inp[i], kind);
}

void mgk_fast_gelu_bwd(const mg_kctx *k, float *dinp, const float *dout, const float *inp,
                       int64_t n, mgk_gelu_kind kind)
{
    MGK_OMP_FOR(k->nthreads)
    for (int64_t i = 0; i < n; i++) dinp[i] += gelu_grad_f(inp[i], kind) * dout[i];
}

void mgk_fast_swiglu_fwd(const mg_kctx *k, float *out, const float *inp, int64_t N, int64_t F)
{
    MGK_OMP_FOR(k->nthreads)
    for (int64_t i = 0; i < N; i++) {
        const float *gate = inp + i * 2 * F, *up = gate + F;
        for (int64_t j = 0; j < F; j++) {
            float g = gate[j];
            out[i * F + j] = g / (1.0f + expf(-g)) * up[j];
        }
    }
}

void mgk_fast_swiglu_bwd(const mg_kctx *k, float *dinp, const float *dout, const float *inp,
                         int64_t N, int64_t F)
{
    MGK_OMP_FOR(k->nthreads)
    for (int64_t i = 0; i < N; i++) {
        const float *gate = inp + i * 2 * F, *up = gate + F;
        float *dgate = dinp + i * 2 * F, *dup = dgate + F;
        for (int64_t j = 0; j < F; j++) {
            float g = gate[j], s = 1.0f / (1.0f + expf(-g)), dy = dout[i * F + j];
            dgate[j] += dy * up[j] * s * (1.0f + g * (1.0f - s));
            dup[j] += dy * g * s;
        }
    }
}

/* optim.cu — AdamW on fp32 master weights (kernels.h semantics), and its 16-bit variant that
 * also writes the 16-bit copy (bf16 or fp16) of the parameters the model computes with.
 *
 * Kernel: grid-stride loop (block 256, at most 8192 blocks) over 16-byte vectors of the four
 * fp32 arrays where they are aligned (the last n % 4 one by one), the reference's element update
 * (mgk_adamw_elem, kernels/cpu/cpu_internal.h) operation for operation with correctly
 * rounded intrinsics, so nvcc cannot contract a product and a sum: fp32 results equal the
 * CPU reference bitwise. Coefficients are computed on the host by the reference's
 * mgk_adamw_coefs and passed by value.
 */
#include "cuda_portable.h"

#include "cuda_common.cuh"

#define THREADS 256

static __device__ inline void adamw_elem(const mgk_adamw_coef c, float *p, float *m, float *v,
                                         float g)
{
    if (c.grad_scale != 1.0f) g = mgk_fmul(g, c.grad_scale);
    float pi = mgk_fmul(*p, c.decay_mul), mi = *m, d = mgk_fsub(g, mi);
    mi = c.lerp_w < 0.5f ? fmaf(c.lerp_w, d, mi) : fmaf(mgk_fsub(c.lerp_w, 1.0f), d, g);
    float vi = fmaf(mgk_fmul(c.one_minus_beta2, g), g, mgk_fmul(*v, c.beta2));
    float denom = mgk_fadd(mgk_fdiv(sqrtf(vi), c.bc2_sqrt), c.eps);
    *p = mgk_fadd(pi, mgk_fdiv(mgk_fmul(c.neg_step_size, mi), denom));
    *m = mi;
    *v = vi;
}

/* param_lp (may be NULL): the 16-bit copy of the updated parameters. W parameters at a time
 * (16-byte vectors when W = 4: param, m, v, grad aligned), then the n % W last ones. */
template <typename T, int W>
static __global__ void adamw_kernel(float *param, T *param_lp, float *m, float *v,
                                    const float *grad, int64_t n, const mgk_adamw_coef c)
{
    MGK_FOR_EACH(i, n / W) {
        float p[W], mi[W], vi[W], g[W];
        mgk_ldw<float, W>(p, param + i * W);
        mgk_ldw<float, W>(mi, m + i * W);
        mgk_ldw<float, W>(vi, v + i * W);
        mgk_ldw<float, W>(g, grad + i * W);
        for (int e = 0; e < W; e++) adamw_elem(c, &p[e], &mi[e], &vi[e], g[e]);
        mgk_stw<float, W>(param + i * W, p);
        mgk_stw<float, W>(m + i * W, mi);
        mgk_stw<float, W>(v + i * W, vi);
        if (param_lp)
            for (int e = 0; e < W; e++) mgk_st(param_lp + i * W + e, p[e]);
    }
    MGK_FOR_EACH(i, n % W) {
        int64_t j = n / W * W + i;
        adamw_elem(c, param + j, m + j, v + j, grad[j]);
        if (param_lp) mgk_st(param_lp + j, param[j]);
    }
}

template <typename T>
static void adamw_launch(const mg_kctx *k, float *param, T *param_lp, float *m, float *v,
                         const float *grad, int64_t n, const mgk_adamw_hp *hp, int decay)
{
    if (n <= 0) return;
    mgk_adamw_coef c = mgk_adamw_coefs(hp, decay);
    if (mgk_aligned16(param) && mgk_aligned16(m) && mgk_aligned16(v) && mgk_aligned16(grad))
        MGK_LAUNCH((adamw_kernel<T, 4>), mgk_grid(n / 4 + 1, THREADS, MGK_GRID_CAP), THREADS, 0,
                   mgk_stream(k), param, param_lp, m, v, grad, n, c);
    else
        MGK_LAUNCH((adamw_kernel<T, 1>), mgk_grid(n, THREADS, MGK_GRID_CAP), THREADS, 0,
                   mgk_stream(k), param, param_lp, m, v, grad, n, c);
    MGK_LAUNCH_CHECK();
}

extern "C" void mgk_cuda_adamw(const mg_kctx *k, float *param, float *m, float *v,
                               const float *grad, int64_t n, const mgk_adamw_hp *hp, int decay)
{
    adamw_launch(k, param, (bf16 *)NULL, m, v, grad, n, hp, decay);
}

extern "C" void mgk_cuda_adamw_h16(const mg_kctx *k, float *param, mgk_h16 *param16, float *m,
                                   float *v, const float *grad, int64_t n,
                                   const mgk_adamw_hp *hp, int decay)
{
    MGK_BY_HALF(k, T16, adamw_launch(k, param, mgk_as<T16>(param16), m, v, grad, n, hp, decay));
}

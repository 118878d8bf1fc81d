/* ref_optim.c — reference AdamW (torch.optim.AdamW, single-tensor path, same operation order
 * and scalar roundings, so that results match torch bitwise or to an ulp), and the scalar
 * coefficients and element update shared with the fast version.
 */
#include <math.h>

#include "cpu_internal.h"

/* Scalars computed in double (Python floats), rounded to float where torch's CPU kernels
 * convert a scalar for a float tensor. */
mgk_adamw_coef mgk_adamw_coefs(const mgk_adamw_hp *hp, int decay)
{
    mgk_adamw_coef c;
    double bc1 = 1.0 - pow(hp->beta1, (double)hp->step);
    double bc2 = 1.0 - pow(hp->beta2, (double)hp->step);
    c.lr = (float)hp->lr;
    c.lerp_w = (float)(1.0 - hp->beta1);
    c.beta2 = (float)hp->beta2;
    c.one_minus_beta2 = (float)(1.0 - hp->beta2);
    c.eps = (float)hp->eps;
    c.decay_mul = (float)(1.0 - hp->lr * (decay ? hp->weight_decay : 0.0));
    c.neg_step_size = (float)(-(hp->lr / bc1));
    c.bc2_sqrt = (float)sqrt(bc2);
    c.grad_scale = (float)hp->grad_scale;
    return c;
}

void mgk_ref_adamw(const mg_kctx *k, float *param, float *m, float *v, const float *grad,
                   int64_t n, const mgk_adamw_hp *hp, int decay)
{
    (void)k;
    mgk_adamw_coef c = mgk_adamw_coefs(hp, decay);
    for (int64_t i = 0; i < n; i++) mgk_adamw_elem(&c, param + i, m + i, v + i, grad[i]);
}

/* fast_optim.c — OpenMP AdamW: the reference's element update (mgk_adamw_elem) over
 * elements in parallel, so it equals the reference bitwise for any thread count.
 */
#include "cpu_internal.h"

void mgk_fast_adamw(const mg_kctx *k, float *param, float *m, float *v, const float *grad,
                    int64_t n, const mgk_adamw_hp *hp, int decay)
{
    mgk_adamw_coef c = mgk_adamw_coefs(hp, decay);
    MGK_OMP_FOR(k->nthreads)
    for (int64_t i = 0; i < n; i++) mgk_adamw_elem(&c, param + i, m + i, v + i, grad[i]);
}

/* model_tp.c — model_internal.h: the tensor-parallel steps of the forward and backward
 * passes (Megatron's tensor_parallel mappings and vocabulary-parallel cross-entropy).
 *
 * Contract (model.h): every call is made by all ranks of the tensor-parallel group in the
 * same order; sums are comm.h's (rank order, identical on every rank). With tp = 1 (no
 * group) gather and reduce are no-ops on the same buffer, the row-parallel linear is the
 * single-process mgk_linear_fwd with its bias. Under sequence parallelism rank r's rows
 * are rows [r Ns, (r + 1) Ns) of the micro-batch's N token rows.
 */
#include "comm.h"
#include "model_internal.h"

mg_status mg_tp_gather(const mg_gpt_acts *a, float *full, const float *local, int64_t C)
{
    if (!a->sp) {
        MG_ASSERT(full == local);
        return MG_OK;
    }
    return mg_comm_allgather_f32(a->tpc, full, local, a->Ns * C);
}

mg_status mg_tp_reduce(const mg_gpt_acts *a, float *out, float *partial, int64_t C)
{
    if (a->sp) return mg_comm_reduce_scatter_sum_f32(a->tpc, out, partial, a->Ns * C);
    MG_ASSERT(out == partial);
    return a->tpc ? mg_comm_allreduce_sum_f32(a->tpc, partial, a->N * C) : MG_OK;
}

mg_status mg_tp_row_linear_fwd(const mg_gpt_acts *a, const mg_kctx *k, float *out,
                               const float *inp, const float *W, const float *bias,
                               int64_t IN, int64_t C)
{
    if (!a->tpc) {
        mgk_linear_fwd(k, out, inp, W, bias, a->N, IN, C);
        return MG_OK;
    }
    float *partial = a->sp ? a->tmp : out;
    mgk_linear_fwd(k, partial, inp, W, NULL, a->N, IN, C);
    MG_FORWARD(mg_tp_reduce(a, out, partial, C));
    if (bias) mgk_bias_add(k, out, bias, a->Ns, C);
    return MG_OK;
}

/* _VocabParallelCrossEntropy: the row maxima's maximum (gathered: comm.h sums only), each
 * rank's sum of exp rescaled to it, then the sums of exp and of the target logit (which
 * only its owner holds) added over the group in one all-reduce. */
static mg_status xent_combine(const mg_gpt_acts *a, const mg_kctx *k)
{
    int64_t N = a->N;
    float *rowsum = a->xsum, *tgt = a->xsum + N;
    MG_FORWARD(mg_comm_allgather_f32(a->tpc, a->xall, a->xmax, N));
    mgk_xent_gmax(k, a->xgmax, a->xall, a->tp, N);
    mgk_xent_rescale(k, rowsum, a->xmax, a->xgmax, N);
    MG_FORWARD(mg_comm_allreduce_sum_f32(a->tpc, a->xsum, 2 * N));
    mgk_xent_finish(k, a->loss, a->lse, a->xgmax, rowsum, tgt, N);
    return MG_OK;
}

mg_status mg_tp_xent_fwd(const mg_gpt_acts *a, const mg_kctx *k, const int32_t *targets,
                         int64_t vocab)
{
    mgk_xent_partial(k, a->xmax, a->xsum, a->xsum + a->N, a->logits, targets, a->N, a->Vp,
                     a->vocab0, vocab);
    return xent_combine(a, k);
}

mg_status mg_tp_xent_fwd_h16(const mg_gpt_acts *a, const mg_kctx *k, const int32_t *targets,
                              int64_t vocab)
{
    mgk_xent_partial_h16(k, a->xmax, a->xsum, a->xsum + a->N, mg_h16(a->logits), targets, a->N,
                          a->Vp, a->vocab0, vocab);
    return xent_combine(a, k);
}

/* ---- 16-bit activations (--bf16 / --fp16): the sums in the context's 16-bit type ---- */

mg_status mg_tp_gather_h16(const mg_gpt_acts *a, mgk_h16 *full, const mgk_h16 *local,
                           int64_t C)
{
    if (!a->sp) {
        MG_ASSERT(full == local);
        return MG_OK;
    }
    return mg_comm_allgather_bf16(a->tpc, full, local, a->Ns * C); /* the bits, either type */
}

mg_status mg_tp_reduce_h16(const mg_gpt_acts *a, const mg_kctx *k, mgk_h16 *out,
                           mgk_h16 *partial, int64_t C)
{
    int fp16 = k->half == MGK_HALF_FP16;
    if (a->sp)
        return fp16 ? mg_comm_reduce_scatter_sum_f16(a->tpc, out, partial, a->Ns * C)
                    : mg_comm_reduce_scatter_sum_bf16(a->tpc, out, partial, a->Ns * C);
    MG_ASSERT(out == partial);
    if (!a->tpc) return MG_OK;
    return fp16 ? mg_comm_allreduce_sum_f16(a->tpc, partial, a->N * C)
                : mg_comm_allreduce_sum_bf16(a->tpc, partial, a->N * C);
}

mg_status mg_tp_row_linear_fwd_h16(const mg_gpt_acts *a, const mg_kctx *k, mgk_h16 *out,
                                   const mgk_h16 *inp, const mgk_h16 *W, const mgk_h16 *bias,
                                   int64_t IN, int64_t C)
{
    if (!a->tpc) {
        mgk_linear_fwd_h16(k, out, inp, W, bias, a->N, IN, C);
        return MG_OK;
    }
    mgk_h16 *partial = a->sp ? mg_h16(a->tmp) : out;
    mgk_linear_fwd_h16(k, partial, inp, W, NULL, a->N, IN, C);
    MG_FORWARD(mg_tp_reduce_h16(a, k, out, partial, C));
    if (bias) mgk_bias_add_h16(k, out, bias, a->Ns, C);
    return MG_OK;
}

/* backward_h16.c — model_internal.h mg_gpt_backward_h16: backward.c's pass in reverse
 * order of forward_h16.c, with 16-bit activation gradients (the residual gradient a->dx and
 * the per-block work buffers, zeroed before each use because kernels add) and fp32 parameter
 * gradients accumulated into g->grads (Megatron's fp32 gradient accumulation).
 *
 * Contract: as forward_h16.c (any tensor-parallel rank, with or without sequence
 * parallelism, backward.c's communication in 16 bits: the column-parallel layers' input
 * gradients — QKV, fc1, the output layer — summed over the group (all-reduce, or reduce-
 * scatter under SP: mg_tp_reduce_h16), the residual gradient all-gathered before the row-
 * parallel layers and the embeddings under SP (mg_tp_gather_h16), a row-parallel bias's
 * gradient then from this rank's rows (summed over the group in fp32 by the step, as the
 * norms' are); any stage: a stage that is not the last starts from the 16-bit gradient of
 * its output in a->dx, one that is not the first leaves the gradient of its input there).
 * The logits buffer is overwritten by dlogits (in place). Recomputation as backward.c's: a
 * chunk's forward again (its 16-bit layers) before its last layer's backward, the
 * attention's before its backward (selective).
 */
#include "model_internal.h"

static void norm_bwd(const mg_gpt *g, const mg_kctx *k, float *dx, float *dw, float *db,
                     float *dout, float *x, const mgk_h16 *w, const float *mean,
                     const float *rstd, int64_t N, int64_t C)
{
    if (g->m.rmsnorm)
        mgk_rmsnorm_bwd_h16(k, mg_h16(dx), dw, mg_h16(dout), mg_h16(x), w, rstd, N, C);
    else
        mgk_layernorm_bwd_h16(k, mg_h16(dx), dw, db, mg_h16(dout), mg_h16(x), w, mean, rstd, N,
                              C);
}

static mg_status head_bwd(mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k, double grad_scale)
{
    float *G = g->grads;
    const mg_gpt_batch *b = &a->batch;
    mgk_h16 *dlogits = mg_h16(a->logits);
    float scale = a->denom > 0 ? (float)(grad_scale / a->denom) : 0.0f;
    mgk_xent_bwd_h16(k, dlogits, dlogits, a->lse, b->targets, b->loss_mask, scale, a->N,
                      a->Vp, a->vocab0, mg_gpt_loss_vocab(g));
    mgk_zero_h16(k, mg_h16(a->dlng), a->N * a->H);
    mgk_linear_bwd_h16(k, mg_h16(a->dlng), mg_gp(G, a, P_OUT), NULL, dlogits, mg_h16(a->lnfg),
                        mg_gw16(g, a, P_OUT), a->N, a->H, a->Vp);
    MG_FORWARD(mg_tp_reduce_h16(a, k, mg_h16(a->dln), mg_h16(a->dlng), a->H));
    mgk_zero_h16(k, mg_h16(a->dx), a->Ns * a->H);
    norm_bwd(g, k, a->dx, mg_gp(G, a, P_LNF_W), mg_gp(G, a, P_LNF_B), a->dln, a->x[a->L],
             mg_gw16(g, a, P_LNF_W), a->lnf_mean, a->lnf_rstd, a->Ns, a->H);
    return MG_OK;
}

/* backward.c's row-parallel layer: dinp (N, IN) += dout W with dout = a->dx (gathered under
 * SP); the bias gradient from this rank's rows under SP. */
static mg_status row_linear_bwd(const mg_gpt_acts *a, const mg_kctx *k, mgk_h16 *dinp,
                                float *dW, float *dbias, const mgk_h16 *inp, const mgk_h16 *W,
                                int64_t IN)
{
    if (!a->sp) {
        mgk_linear_bwd_h16(k, dinp, dW, dbias, mg_h16(a->dx), inp, W, a->N, IN, a->H);
        return MG_OK;
    }
    MG_FORWARD(mg_tp_gather_h16(a, mg_h16(a->dxg), mg_h16(a->dx), a->H));
    mgk_linear_bwd_h16(k, dinp, dW, NULL, mg_h16(a->dxg), inp, W, a->N, IN, a->H);
    if (dbias) mgk_bias_grad_h16(k, dbias, mg_h16(a->dx), a->Ns, a->H);
    return MG_OK;
}

static mg_status mlp_block_bwd(mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k, int64_t l)
{
    mg_layer_acts *s = &a->la[l];
    float *G = g->grads;
    mgk_h16 *dact = mg_h16(a->dact), *dfc1 = mg_h16(a->dfc1), *dlng = mg_h16(a->dlng);
    int64_t N = a->N;
    mgk_zero_h16(k, dact, N * a->F);
    MG_FORWARD(row_linear_bwd(a, k, dact, mg_lp(G, a, l, P_FC2_W), mg_lp(G, a, l, P_FC2_B),
                              mg_h16(s->act), mg_lw16(g, a, l, P_FC2_W), a->F));
    mgk_zero_h16(k, dfc1, N * a->F1);
    if (g->m.swiglu) mgk_swiglu_bwd_h16(k, dfc1, dact, mg_h16(s->fc1), N, a->F);
    else mgk_gelu_bwd_h16(k, dfc1, dact, mg_h16(s->fc1), N * a->F, g->opt.gelu);
    mgk_zero_h16(k, dlng, N * a->H);
    mgk_linear_bwd_h16(k, dlng, mg_lp(G, a, l, P_FC1_W), mg_lp(G, a, l, P_FC1_B), dfc1,
                        mg_h16(s->ln2g), mg_lw16(g, a, l, P_FC1_W), N, a->H, a->F1);
    MG_FORWARD(mg_tp_reduce_h16(a, k, mg_h16(a->dln), dlng, a->H));
    norm_bwd(g, k, a->dx, mg_lp(G, a, l, P_POST_W), mg_lp(G, a, l, P_POST_B), a->dln, s->xmid,
             mg_lw16(g, a, l, P_POST_W), s->ln2_mean, s->ln2_rstd, a->Ns, a->H);
    return MG_OK;
}

/* d(q, k) after RoPE -> before RoPE (a->dq0, a->dk0); identity without RoPE. */
static void rope_bwd(const mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k, mgk_h16 **dq,
                     mgk_h16 **dk)
{
    *dq = mg_h16(a->dq);
    *dk = mg_h16(a->dk);
    if (g->m.learned_positions) return;
    int64_t N = a->N, D = a->D;
    float base = (float)g->m.rotary_base;
    mgk_h16 *dq0 = mg_h16(a->dq0), *dk0 = mg_h16(a->dk0);
    mgk_zero_h16(k, dq0, N * a->Hq * D);
    mgk_zero_h16(k, dk0, N * a->Hkv * D);
    mgk_rope_bwd_h16(k, dq0, *dq, a->pos, a->B, a->T, a->Hq, D, D, base);
    mgk_rope_bwd_h16(k, dk0, *dk, a->pos, a->B, a->T, a->Hkv, D, D, base);
    *dq = dq0;
    *dk = dk0;
}

static mg_status attn_block_bwd(mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k, int64_t l)
{
    mg_layer_acts *s = &a->la[l];
    float *G = g->grads;
    int64_t N = a->N, QD = a->Hq * a->D, KD = a->Hkv * a->D;
    mgk_h16 *dao = mg_h16(a->dao), *dv = mg_h16(a->dv), *qkv = mg_h16(a->qkv), *dq, *dk;
    mgk_zero_h16(k, dao, N * QD);
    MG_FORWARD(row_linear_bwd(a, k, dao, mg_lp(G, a, l, P_PROJ_W), mg_lp(G, a, l, P_PROJ_B),
                              mg_h16(s->ao), mg_lw16(g, a, l, P_PROJ_W), QD));
    if (a->rc_attn) /* selective: the saved state again (ao: the same values) */
        mgk_attn_fwd_h16(k, &a->ad, mg_h16(s->ao), s->att, mg_h16(s->q), mg_h16(s->k),
                         mg_h16(s->v), a->batch.seg);
    mgk_zero_h16(k, mg_h16(a->dq), N * QD);
    mgk_zero_h16(k, mg_h16(a->dk), N * KD);
    mgk_zero_h16(k, dv, N * KD);
    mgk_attn_bwd_h16(k, &a->ad, mg_h16(a->dq), mg_h16(a->dk), dv, dao, s->att, mg_h16(s->q),
                     mg_h16(s->k), mg_h16(s->v), a->batch.seg);
    rope_bwd(g, a, k, &dq, &dk);
    mgk_qkv_merge_h16(k, qkv, dq, dk, dv, N, a->Hq, a->Hkv, a->D);
    mgk_zero_h16(k, mg_h16(a->dlng), N * a->H);
    mgk_linear_bwd_h16(k, mg_h16(a->dlng), mg_lp(G, a, l, P_QKV_W), mg_lp(G, a, l, P_QKV_B), qkv,
                        mg_h16(s->ln1g), mg_lw16(g, a, l, P_QKV_W), N, a->H, a->QKV);
    MG_FORWARD(mg_tp_reduce_h16(a, k, mg_h16(a->dln), mg_h16(a->dlng), a->H));
    norm_bwd(g, k, a->dx, mg_lp(G, a, l, P_IN_W), mg_lp(G, a, l, P_IN_B), a->dln, a->x[l],
             mg_lw16(g, a, l, P_IN_W), s->ln1_mean, s->ln1_rstd, a->Ns, a->H);
    return MG_OK;
}

/* The embeddings see the whole micro-batch: the gradient gathered first under SP. */
static mg_status embed_bwd(mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k)
{
    float *G = g->grads;
    mgk_h16 *dxg = mg_h16(a->dxg);
    MG_FORWARD(mg_tp_gather_h16(a, dxg, mg_h16(a->dx), a->H));
    mgk_embedding_bwd_h16(k, mg_gp(G, a, P_WTE), dxg, a->batch.ids, a->N, a->H, a->vocab0,
                          a->Vp);
    if (g->m.learned_positions)
        mgk_embedding_bwd_h16(k, mg_gp(G, a, P_WPE), dxg, a->pos, a->N, a->H, 0,
                              g->m.max_position_embeddings);
    return MG_OK;
}

mg_status mg_gpt_backward_h16(mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k, double grad_scale)
{
    if (g->lay.last_stage) MG_FORWARD(head_bwd(g, a, k, grad_scale));
    MG_FORWARD(mg_gpt_grads_ready(g, INT64_MAX));
    for (int64_t l = a->L - 1; l >= 0; l--) {
        MG_FORWARD(mg_gpt_recompute_chunk(g, a, k, l));
        MG_FORWARD(mlp_block_bwd(g, a, k, l));
        MG_FORWARD(attn_block_bwd(g, a, k, l));
        MG_FORWARD(mg_gpt_grads_ready(g, g->lay.layer_first + l));
    }
    if (g->lay.first_stage) MG_FORWARD(embed_bwd(g, a, k));
    return mg_gpt_grads_ready(g, -1);
}

/* backward.c — model.h: the backward pass of one pipeline stage on one tensor-parallel
 * rank, in reverse order of forward.c.
 *
 * Contract (model.h): adds grad_scale * d(mean masked loss)/d(param) into g->grads. The
 * residual gradient lives in a->dx (Ns rows) and every block's norm backward adds its input
 * gradient into it; the per-block work buffers are zeroed before each use because kernels
 * add. Tensor parallelism: the input gradient of a column-parallel layer is summed over the
 * group (all-reduce, or reduce-scatter under SP: the conjugate of the forward's identity /
 * all-gather), a row-parallel layer takes the (gathered) output gradient as it is; under SP
 * the row-parallel biases take their gradient from this rank's rows (summed by the step).
 * The logits buffer is overwritten by dlogits (in place). With full recomputation each
 * chunk's forward runs again (forward.c mg_gpt_layer_fwd) just before its last layer's
 * backward; it writes only the chunk's working set, a->qkv and a->tmp, none of which holds
 * anything of the backward between two layers. With selective recomputation the
 * attention's forward runs again just before its backward, into the shared saved state.
 */
#include "comm.h"
#include "model_internal.h"

static void norm_bwd(const mg_gpt *g, const mg_kctx *k, float *dx, float *dw, float *db,
                     const float *dout, const float *x, const float *w, const float *mean,
                     const float *rstd, int64_t N, int64_t C)
{
    if (g->m.rmsnorm) mgk_rmsnorm_bwd(k, dx, dw, dout, x, w, rstd, N, C);
    else mgk_layernorm_bwd(k, dx, dw, db, dout, x, w, mean, rstd, N, C);
}

static mg_status head_bwd(mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k, double grad_scale)
{
    float *P = g->params, *G = g->grads;
    const mg_gpt_batch *b = &a->batch;
    float scale = a->denom > 0 ? (float)(grad_scale / a->denom) : 0.0f;
    mgk_xent_bwd(k, a->logits, a->logits, a->lse, b->targets, b->loss_mask, scale, a->N, a->Vp,
                 a->vocab0, mg_gpt_loss_vocab(g));
    mgk_zero(k, a->dlng, a->N * a->H);
    mgk_linear_bwd(k, a->dlng, mg_gp(G, a, P_OUT), NULL, a->logits, a->lnfg, mg_gp(P, a, P_OUT),
                   a->N, a->H, a->Vp);
    MG_FORWARD(mg_tp_reduce(a, a->dln, a->dlng, a->H));
    mgk_zero(k, a->dx, a->Ns * a->H);
    norm_bwd(g, k, a->dx, mg_gp(G, a, P_LNF_W), mg_gp(G, a, P_LNF_B), a->dln, a->x[a->L],
             mg_gp(P, a, P_LNF_W), a->lnf_mean, a->lnf_rstd, a->Ns, a->H);
    return MG_OK;
}

/* A row-parallel layer's backward from the residual gradient: dinp (N, IN) += dout W with
 * dout = a->dx (gathered under SP); the bias gradient from this rank's rows under SP. */
static mg_status row_linear_bwd(mg_gpt_acts *a, const mg_kctx *k, float *dinp, float *dW,
                                float *dbias, const float *inp, const float *W, int64_t IN)
{
    if (!a->sp) {
        mgk_linear_bwd(k, dinp, dW, dbias, a->dx, inp, W, a->N, IN, a->H);
        return MG_OK;
    }
    MG_FORWARD(mg_tp_gather(a, a->dxg, a->dx, a->H));
    mgk_linear_bwd(k, dinp, dW, NULL, a->dxg, inp, W, a->N, IN, a->H);
    if (dbias) mgk_bias_grad(k, dbias, a->dx, a->Ns, a->H);
    return MG_OK;
}

static mg_status mlp_block_bwd(mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k, int64_t l)
{
    mg_layer_acts *s = &a->la[l];
    float *P = g->params, *G = g->grads;
    int64_t N = a->N;
    mgk_zero(k, a->dact, N * a->F);
    MG_FORWARD(row_linear_bwd(a, k, a->dact, mg_lp(G, a, l, P_FC2_W), mg_lp(G, a, l, P_FC2_B),
                              s->act, mg_lp(P, a, l, P_FC2_W), a->F));
    mgk_zero(k, a->dfc1, N * a->F1);
    if (g->m.swiglu) mgk_swiglu_bwd(k, a->dfc1, a->dact, s->fc1, N, a->F);
    else mgk_gelu_bwd(k, a->dfc1, a->dact, s->fc1, N * a->F, g->opt.gelu);
    mgk_zero(k, a->dlng, N * a->H);
    mgk_linear_bwd(k, a->dlng, mg_lp(G, a, l, P_FC1_W), mg_lp(G, a, l, P_FC1_B), a->dfc1,
                   s->ln2g, mg_lp(P, a, l, P_FC1_W), N, a->H, a->F1);
    MG_FORWARD(mg_tp_reduce(a, a->dln, a->dlng, a->H));
    norm_bwd(g, k, a->dx, mg_lp(G, a, l, P_POST_W), mg_lp(G, a, l, P_POST_B), a->dln, s->xmid,
             mg_lp(P, a, l, P_POST_W), s->ln2_mean, s->ln2_rstd, a->Ns, a->H);
    return MG_OK;
}

/* d(q, k) after RoPE -> before RoPE (a->dq0, a->dk0); identity without RoPE. */
static void rope_bwd(const mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k, const float **dq,
                     const float **dk)
{
    *dq = a->dq;
    *dk = a->dk;
    if (g->m.learned_positions) return;
    int64_t N = a->N, D = a->D;
    float base = (float)g->m.rotary_base;
    mgk_zero(k, a->dq0, N * a->Hq * D);
    mgk_zero(k, a->dk0, N * a->Hkv * D);
    mgk_rope_bwd(k, a->dq0, a->dq, a->pos, a->B, a->T, a->Hq, D, D, base);
    mgk_rope_bwd(k, a->dk0, a->dk, a->pos, a->B, a->T, a->Hkv, D, D, base);
    *dq = a->dq0;
    *dk = a->dk0;
}

static mg_status attn_block_bwd(mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k, int64_t l)
{
    mg_layer_acts *s = &a->la[l];
    float *P = g->params, *G = g->grads;
    int64_t N = a->N, QD = a->Hq * a->D, KD = a->Hkv * a->D;
    mgk_zero(k, a->dao, N * QD);
    MG_FORWARD(row_linear_bwd(a, k, a->dao, mg_lp(G, a, l, P_PROJ_W), mg_lp(G, a, l, P_PROJ_B),
                              s->ao, mg_lp(P, a, l, P_PROJ_W), QD));
    if (a->rc_attn) /* selective: the saved state again (ao: the same values) */
        mgk_attn_fwd(k, &a->ad, s->ao, s->att, s->q, s->k, s->v, a->batch.seg);
    mgk_zero(k, a->dq, N * QD);
    mgk_zero(k, a->dk, N * KD);
    mgk_zero(k, a->dv, N * KD);
    mgk_attn_bwd(k, &a->ad, a->dq, a->dk, a->dv, a->dao, s->att, s->q, s->k, s->v,
                 a->batch.seg);
    const float *dq, *dk;
    rope_bwd(g, a, k, &dq, &dk);
    mgk_qkv_merge(k, a->qkv, dq, dk, a->dv, N, a->Hq, a->Hkv, a->D);
    mgk_zero(k, a->dlng, N * a->H);
    mgk_linear_bwd(k, a->dlng, mg_lp(G, a, l, P_QKV_W), mg_lp(G, a, l, P_QKV_B), a->qkv,
                   s->ln1g, mg_lp(P, a, l, P_QKV_W), N, a->H, a->QKV);
    MG_FORWARD(mg_tp_reduce(a, a->dln, a->dlng, a->H));
    norm_bwd(g, k, a->dx, mg_lp(G, a, l, P_IN_W), mg_lp(G, a, l, P_IN_B), a->dln, a->x[l],
             mg_lp(P, a, l, P_IN_W), s->ln1_mean, s->ln1_rstd, a->Ns, a->H);
    return MG_OK;
}

/* The embeddings see the whole micro-batch: under SP the gradient is gathered first (the
 * conjugate of the forward's scatter). */
static mg_status embed_bwd(mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k)
{
    float *G = g->grads;
    MG_FORWARD(mg_tp_gather(a, a->dxg, a->dx, a->H));
    mgk_embedding_bwd(k, mg_gp(G, a, P_WTE), a->dxg, a->batch.ids, a->N, a->H, a->vocab0,
                      a->Vp);
    if (g->m.learned_positions)
        mgk_embedding_bwd(k, mg_gp(G, a, P_WPE), a->dxg, a->pos, a->N, a->H, 0,
                          g->m.max_position_embeddings);
    return MG_OK;
}

/* Before layer l's backward: when l ends a recomputed chunk, the chunk's forward again from
 * its kept input, into the working set (model.h mg_gpt_recompute). */
mg_status mg_gpt_recompute_chunk(const mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k, int64_t l)
{
    if (l >= a->rc_layers || ((l + 1) % a->rc_chunk && l + 1 < a->rc_layers)) return MG_OK;
    for (int64_t j = l / a->rc_chunk * a->rc_chunk; j <= l; j++) {
        MG_FORWARD(a->h16 ? mg_gpt_layer_fwd_h16(g, a, k, j) : mg_gpt_layer_fwd(g, a, k, j));
    }
    return MG_OK;
}

mg_status mg_gpt_backward(mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k, double grad_scale)
{
    MG_ASSERT(a->owner == g);
    MG_RETURN_IF(!a->have_forward, MG_ERR_ARG, "model: backward without a forward pass");
    a->have_forward = 0;
    if (a->h16) return mg_gpt_backward_h16(g, a, k, grad_scale);
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

/* backward.c — model.h: the backward pass, in reverse order of forward.c.
 *
 * Contract (model.h): adds grad_scale * d(mean masked loss)/d(param) into g->grads. The
 * residual gradient lives in a->dx and every block's norm backward adds its input gradient
 * into it; the per-block work buffers are zeroed before each use because kernels add.
 * The logits buffer is overwritten by dlogits (in place).
 */
#include "model_internal.h"

static void norm_bwd(const mg_gpt *g, const mg_kctx *k, float *dx, float *dw, float *db,
                     const float *dout, const float *x, const float *w, const float *mean,
                     const float *rstd, int64_t N, int64_t C)
{
    if (g->m.rmsnorm) mgk_rmsnorm_bwd(k, dx, dw, dout, x, w, rstd, N, C);
    else mgk_layernorm_bwd(k, dx, dw, db, dout, x, w, mean, rstd, N, C);
}

static void head_bwd(mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k, double grad_scale)
{
    float *P = g->params, *G = g->grads;
    const mg_gpt_batch *b = &a->batch;
    float scale = a->denom > 0 ? (float)(grad_scale / a->denom) : 0.0f;
    int tied = g->m.tied_embeddings;
    mgk_xent_bwd(k, a->logits, a->logits, a->lse, b->targets, b->loss_mask, scale, a->N, a->Vp,
                 0, mg_gpt_loss_vocab(g));
    mgk_zero(k, a->dln, a->N * a->H);
    mgk_linear_bwd(k, a->dln, mg_gp(G, a, tied ? P_WTE : P_OUT), NULL, a->logits, a->lnf,
                   mg_gp(P, a, tied ? P_WTE : P_OUT), a->N, a->H, a->Vp);
    mgk_zero(k, a->dx, a->N * a->H);
    norm_bwd(g, k, a->dx, mg_gp(G, a, P_LNF_W), mg_gp(G, a, P_LNF_B), a->dln, a->x[a->L],
             mg_gp(P, a, P_LNF_W), a->lnf_mean, a->lnf_rstd, a->N, a->H);
}

static void mlp_block_bwd(mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k, int64_t l)
{
    mg_layer_acts *s = &a->la[l];
    float *P = g->params, *G = g->grads;
    int64_t N = a->N;
    mgk_zero(k, a->dact, N * a->F);
    mgk_linear_bwd(k, a->dact, mg_lp(G, a, l, P_FC2_W), mg_lp(G, a, l, P_FC2_B), a->dx, s->act,
                   mg_lp(P, a, l, P_FC2_W), N, a->F, a->H);
    mgk_zero(k, a->dfc1, N * a->F1);
    if (g->m.swiglu) mgk_swiglu_bwd(k, a->dfc1, a->dact, s->fc1, N, a->F);
    else mgk_gelu_bwd(k, a->dfc1, a->dact, s->fc1, N * a->F, g->opt.gelu);
    mgk_zero(k, a->dln, N * a->H);
    mgk_linear_bwd(k, a->dln, mg_lp(G, a, l, P_FC1_W), mg_lp(G, a, l, P_FC1_B), a->dfc1, s->ln2,
                   mg_lp(P, a, l, P_FC1_W), N, a->H, a->F1);
    norm_bwd(g, k, a->dx, mg_lp(G, a, l, P_POST_W), mg_lp(G, a, l, P_POST_B), a->dln, s->xmid,
             mg_lp(P, a, l, P_POST_W), s->ln2_mean, s->ln2_rstd, N, a->H);
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

static void attn_block_bwd(mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k, int64_t l)
{
    mg_layer_acts *s = &a->la[l];
    float *P = g->params, *G = g->grads;
    int64_t N = a->N, QD = a->Hq * a->D, KD = a->Hkv * a->D;
    mgk_zero(k, a->dao, N * QD);
    mgk_linear_bwd(k, a->dao, mg_lp(G, a, l, P_PROJ_W), mg_lp(G, a, l, P_PROJ_B), a->dx, s->ao,
                   mg_lp(P, a, l, P_PROJ_W), N, QD, a->H);
    mgk_zero(k, a->dq, N * QD);
    mgk_zero(k, a->dk, N * KD);
    mgk_zero(k, a->dv, N * KD);
    mgk_attn_bwd(k, &a->ad, a->dq, a->dk, a->dv, a->dao, s->att, s->q, s->k, s->v,
                 a->batch.seg);
    const float *dq, *dk;
    rope_bwd(g, a, k, &dq, &dk);
    mgk_qkv_merge(k, a->qkv, dq, dk, a->dv, N, a->Hq, a->Hkv, a->D);
    mgk_zero(k, a->dln, N * a->H);
    mgk_linear_bwd(k, a->dln, mg_lp(G, a, l, P_QKV_W), mg_lp(G, a, l, P_QKV_B), a->qkv, s->ln1,
                   mg_lp(P, a, l, P_QKV_W), N, a->H, a->QKV);
    norm_bwd(g, k, a->dx, mg_lp(G, a, l, P_IN_W), mg_lp(G, a, l, P_IN_B), a->dln, a->x[l],
             mg_lp(P, a, l, P_IN_W), s->ln1_mean, s->ln1_rstd, N, a->H);
}

static void embed_bwd(mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k)
{
    float *G = g->grads;
    mgk_embedding_bwd(k, mg_gp(G, a, P_WTE), a->dx, a->batch.ids, a->N, a->H, 0, a->Vp);
    if (g->m.learned_positions)
        mgk_embedding_bwd(k, mg_gp(G, a, P_WPE), a->dx, a->pos, a->N, a->H, 0,
                          g->m.max_position_embeddings);
}

mg_status mg_gpt_backward(mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k, double grad_scale)
{
    MG_ASSERT(a->owner == g);
    MG_RETURN_IF(!a->have_forward, MG_ERR_ARG, "model: backward without a forward pass");
    head_bwd(g, a, k, grad_scale);
    for (int64_t l = a->L - 1; l >= 0; l--) {
        mlp_block_bwd(g, a, k, l);
        attn_block_bwd(g, a, k, l);
    }
    embed_bwd(g, a, k);
    a->have_forward = 0;
    return MG_OK;
}

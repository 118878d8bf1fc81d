/* forward_h16.c — model_internal.h mg_gpt_forward_h16: forward.c's pass with 16-bit weights
 * (g->params16) and 16-bit activations of the kernel context's kind k->half (Megatron's --bf16
 * or --fp16: the residual stream, the norm outputs, q/k/v, the MLP and the logits in 16 bits;
 * norm statistics, the attention's saved state, the loss and its log-sum-exp in fp32), on the
 * kernels' 16-bit variants (kernels.h).
 *
 * Contract: any tensor-parallel rank, with or without sequence parallelism, as forward.c's
 * pass: the vocabulary-parallel embedding and the row-parallel outputs (attention projection,
 * fc2) summed over the group in the 16-bit type as Megatron does (all-reduce, or reduce-
 * scatter to the rank's Ns rows under SP: mg_tp_reduce_h16), a row-parallel bias added after
 * the sum (mg_tp_row_linear_fwd_h16), the norm outputs all-gathered in 16 bits under SP
 * (mg_tp_gather_h16), the vocabulary-parallel loss on the logit shard (mg_tp_xent_fwd_h16);
 * any pipeline stage: the embedding on the first, the head on the last, the residual stream
 * (Ns rows) at the stage boundaries in 16 bits (mg_gpt_stage_bytes); every buffer is
 * forward.c's arena slot, planned at 16-bit size (take_act) and read through mg_h16(). The
 * loss of each token goes to a->loss for mg_gpt_forward's masked mean.
 */
#include "model_internal.h"

static void norm_fwd(const mg_gpt *g, const mg_kctx *k, float *out, float *mean, float *rstd,
                     float *x, const mgk_h16 *w, const mgk_h16 *b, int64_t N, int64_t C)
{
    float eps = (float)g->m.norm_epsilon;
    if (g->m.rmsnorm) mgk_rmsnorm_fwd_h16(k, mg_h16(out), rstd, mg_h16(x), w, N, C, eps);
    else mgk_layernorm_fwd_h16(k, mg_h16(out), mean, rstd, mg_h16(x), w, b, N, C, eps);
}

/* forward.c's embedding: the word embedding summed (scattered under SP), the position
 * embedding of the rank's rows added after the sum. */
static mg_status embed_fwd(const mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k)
{
    mgk_h16 *x = mg_h16(a->x[0]), *sum = a->sp ? mg_h16(a->tmp) : x;
    mgk_embedding_fwd_h16(k, sum, a->batch.ids, mg_gw16(g, a, P_WTE), a->N, a->H, a->vocab0,
                           a->Vp, 0);
    MG_FORWARD(mg_tp_reduce_h16(a, k, x, sum, a->H));
    const int32_t *pos = a->sp ? a->pos + a->tp_rank * a->Ns : a->pos; /* the rank's rows */
    if (g->m.learned_positions)
        mgk_embedding_fwd_h16(k, x, pos, mg_gw16(g, a, P_WPE), a->Ns, a->H, 0,
                               g->m.max_position_embeddings, 1);
    return MG_OK;
}

static mg_status attn_block_fwd(const mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k, int64_t l)
{
    mg_layer_acts *s = &a->la[l];
    int64_t N = a->N, QD = a->Hq * a->D;
    mgk_h16 *q = mg_h16(s->q), *kk = mg_h16(s->k), *v = mg_h16(s->v);
    norm_fwd(g, k, s->ln1, s->ln1_mean, s->ln1_rstd, a->x[l], mg_lw16(g, a, l, P_IN_W),
             mg_lw16(g, a, l, P_IN_B), a->Ns, a->H);
    MG_FORWARD(mg_tp_gather_h16(a, mg_h16(s->ln1g), mg_h16(s->ln1), a->H));
    mgk_linear_fwd_h16(k, mg_h16(a->qkv), mg_h16(s->ln1g), mg_lw16(g, a, l, P_QKV_W),
                       mg_lw16(g, a, l, P_QKV_B), N, a->H, a->QKV);
    mgk_qkv_split_h16(k, q, kk, v, mg_h16(a->qkv), N, a->Hq, a->Hkv, a->D);
    if (!g->m.learned_positions) {
        float base = (float)g->m.rotary_base;
        mgk_rope_fwd_h16(k, q, q, a->pos, a->B, a->T, a->Hq, a->D, a->D, base);
        mgk_rope_fwd_h16(k, kk, kk, a->pos, a->B, a->T, a->Hkv, a->D, a->D, base);
    }
    mgk_attn_fwd_h16(k, &a->ad, mg_h16(s->ao), s->att, q, kk, v, a->batch.seg);
    MG_FORWARD(mg_tp_row_linear_fwd_h16(a, k, mg_h16(s->xmid), mg_h16(s->ao),
                                        mg_lw16(g, a, l, P_PROJ_W),
                                        mg_lw16(g, a, l, P_PROJ_B), QD, a->H));
    mgk_add_h16(k, mg_h16(s->xmid), mg_h16(s->xmid), mg_h16(a->x[l]), a->Ns * a->H);
    return MG_OK;
}

static mg_status mlp_block_fwd(const mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k, int64_t l)
{
    mg_layer_acts *s = &a->la[l];
    mgk_h16 *out = mg_h16(a->x[l + 1]), *fc1 = mg_h16(s->fc1), *act = mg_h16(s->act);
    int64_t N = a->N;
    norm_fwd(g, k, s->ln2, s->ln2_mean, s->ln2_rstd, s->xmid, mg_lw16(g, a, l, P_POST_W),
             mg_lw16(g, a, l, P_POST_B), a->Ns, a->H);
    MG_FORWARD(mg_tp_gather_h16(a, mg_h16(s->ln2g), mg_h16(s->ln2), a->H));
    mgk_linear_fwd_h16(k, fc1, mg_h16(s->ln2g), mg_lw16(g, a, l, P_FC1_W),
                       mg_lw16(g, a, l, P_FC1_B), N, a->H, a->F1);
    if (g->m.swiglu) mgk_swiglu_fwd_h16(k, act, fc1, N, a->F);
    else mgk_gelu_fwd_h16(k, act, fc1, N * a->F, g->opt.gelu);
    MG_FORWARD(mg_tp_row_linear_fwd_h16(a, k, out, act, mg_lw16(g, a, l, P_FC2_W),
                                        mg_lw16(g, a, l, P_FC2_B), a->F, a->H));
    mgk_add_h16(k, out, out, mg_h16(s->xmid), a->Ns * a->H);
    return MG_OK;
}

mg_status mg_gpt_layer_fwd_h16(const mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k, int64_t l)
{
    MG_FORWARD(attn_block_fwd(g, a, k, l));
    return mlp_block_fwd(g, a, k, l);
}

static mg_status head_fwd(const mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k)
{
    norm_fwd(g, k, a->lnf, a->lnf_mean, a->lnf_rstd, a->x[a->L], mg_gw16(g, a, P_LNF_W),
             mg_gw16(g, a, P_LNF_B), a->Ns, a->H);
    MG_FORWARD(mg_tp_gather_h16(a, mg_h16(a->lnfg), mg_h16(a->lnf), a->H));
    mgk_linear_fwd_h16(k, mg_h16(a->logits), mg_h16(a->lnfg), mg_gw16(g, a, P_OUT), NULL, a->N,
                        a->H, a->Vp);
    if (a->tpc) return mg_tp_xent_fwd_h16(a, k, a->batch.targets, mg_gpt_loss_vocab(g));
    mgk_xent_fwd_h16(k, a->loss, a->lse, mg_h16(a->logits), a->batch.targets, a->N, a->Vp,
                      mg_gpt_loss_vocab(g));
    return MG_OK;
}

mg_status mg_gpt_forward_h16(const mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k)
{
    if (g->lay.first_stage) MG_FORWARD(embed_fwd(g, a, k));
    for (int64_t l = 0; l < a->L; l++) MG_FORWARD(mg_gpt_layer_fwd_h16(g, a, k, l));
    return g->lay.last_stage ? head_fwd(g, a, k) : MG_OK;
}

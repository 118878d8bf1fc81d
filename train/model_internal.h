/* model_internal.h — shared between forward.c and backward.c: the activation arena of one
 * micro-batch shape and the parameter slots of each layer.
 *
 * Contract: every pointer below points into one allocation (arena) sized up front by
 * mg_gpt_acts_create; offsets of parameters are indices into g->params / g->grads (-1 when
 * the model has no such tensor).
 */
#ifndef MG_TRAIN_MODEL_INTERNAL_H
#define MG_TRAIN_MODEL_INTERNAL_H

#include "model.h"

enum { P_IN_W, P_IN_B, P_QKV_W, P_QKV_B, P_PROJ_W, P_PROJ_B, P_POST_W, P_POST_B,
       P_FC1_W, P_FC1_B, P_FC2_W, P_FC2_B, P_NLAYER };
enum { P_WTE, P_WPE, P_LNF_W, P_LNF_B, P_OUT, P_NGLOBAL };

typedef struct {
    float *ln1, *ln1_mean, *ln1_rstd; /* input norm output and statistics */
    float *q, *k, *v;                 /* after RoPE */
    float *att;                       /* attention's saved buffer */
    float *ao;                        /* attention output (N, Hq*D) */
    float *xmid;                      /* residual after attention */
    float *ln2, *ln2_mean, *ln2_rstd;
    float *fc1, *act;                 /* fc1 output, activation output */
} mg_layer_acts;

struct mg_gpt_acts {
    const mg_gpt *owner;              /* the model the arena was planned for */
    int64_t B, T, N;
    int64_t H, Hq, Hkv, D, QKV, F, F1, Vp, L;
    mgk_attn_dims ad;
    float *arena;
    int64_t arena_numel;
    mg_layer_acts *la;                /* L entries */
    float **x;                        /* L + 1 residual streams (N, H) */
    float *lnf, *lnf_mean, *lnf_rstd, *logits, *lse, *loss;
    /* backward work buffers */
    float *dx, *dln, *dfc1, *dact, *dao, *dq, *dk, *dv, *dq0, *dk0, *qkv;
    int32_t *pos_default;             /* (N): t for every sequence */
    int64_t poff[P_NGLOBAL], *loff;   /* parameter offsets, loff: L * P_NLAYER */
    mg_gpt_batch batch;               /* of the last forward */
    const int32_t *pos;               /* batch.pos or pos_default */
    double denom;                     /* loss denominator of the last forward */
    int have_forward;
};

/* Parameter (or gradient) pointer of a slot, NULL when absent. */
static inline float *mg_lp(float *base, const struct mg_gpt_acts *a, int64_t l, int slot)
{
    int64_t o = a->loff[l * P_NLAYER + slot];
    return o < 0 ? NULL : base + o;
}
static inline float *mg_gp(float *base, const struct mg_gpt_acts *a, int slot)
{
    int64_t o = a->poff[slot];
    return o < 0 ? NULL : base + o;
}

#endif

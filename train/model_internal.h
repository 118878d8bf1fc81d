/* model_internal.h — shared between forward.c, backward.c and model_tp.c: the activation
 * arena of one micro-batch shape, the parameter slots of each layer and the tensor-
 * parallel communication steps.
 *
 * Contract: every pointer below points into one allocation (arena) sized up front by
 * mg_gpt_acts_create_par; offsets of parameters are indices into g->params / g->grads (-1
 * when the model has no such tensor). Buffers marked "(SP)" exist only under sequence
 * parallelism; otherwise they alias their unsharded twin (ln1g = ln1, dxg = dx, ...).
 */
#ifndef MG_TRAIN_MODEL_INTERNAL_H
#define MG_TRAIN_MODEL_INTERNAL_H

#include "model.h"

enum { P_IN_W, P_IN_B, P_QKV_W, P_QKV_B, P_PROJ_W, P_PROJ_B, P_POST_W, P_POST_B,
       P_FC1_W, P_FC1_B, P_FC2_W, P_FC2_B, P_NLAYER };
enum { P_WTE, P_WPE, P_LNF_W, P_LNF_B, P_OUT, P_NGLOBAL };

typedef struct {
    float *ln1, *ln1_mean, *ln1_rstd; /* input norm output and statistics (Ns rows) */
    float *ln1g, *ln2g;               /* the norm outputs gathered to N rows (SP) */
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
    int64_t Ns;                       /* rows of the residual stream: N / tp with SP, else N */
    /* Hq, Hkv, QKV, F, F1, Vp: this tensor-parallel rank's share (heads, groups, rows) */
    int64_t H, Hq, Hkv, D, QKV, F, F1, Vp, L;
    int64_t tp, tp_rank, vocab0;      /* group size, rank, first vocabulary row / column */
    struct mg_comm *tpc;              /* tensor-parallel group, NULL when tp = 1 */
    int sp;                           /* sequence parallel */
    mgk_attn_dims ad;
    float *arena;                     /* in the memory of backend mem */
    int64_t arena_numel;
    mgk_backend mem;
    int h16;                          /* the owner has params16: the passes of *_h16.c; the
                                         activation buffers hold 16-bit values (planned at half
                                         the floats), the statistics stay fp32 */
    mg_layer_acts *la;                /* L entries */
    float **x;                        /* L + 1 residual streams (N, H) */
    /* full recomputation: layers [0, rc_layers) run in chunks of rc_chunk layers, whose la
     * and non-input x share one chunk's working set (0, 0: none) */
    int64_t rc_layers, rc_chunk;
    int rc_attn;                      /* selective: every la[l].att is one shared buffer */
    float *lnf, *lnf_mean, *lnf_rstd, *lnfg, *logits, *lse, *loss;
    float *tmp;                       /* (N, H) row-parallel / embedding partial sums (SP) */
    float *xmax, *xsum, *xgmax, *xall; /* vocab-parallel loss: N, 2N, N, tp * N (tp > 1) */
    /* backward work buffers */
    float *dx, *dln, *dfc1, *dact, *dao, *dq, *dk, *dv, *dq0, *dk0, *qkv;
    float *dxg, *dlng;                /* dx gathered / dln before its reduce-scatter (SP) */
    int32_t *pos_default;             /* (N): t for every sequence */
    int64_t poff[P_NGLOBAL], *loff;   /* parameter offsets, loff: L * P_NLAYER */
    mg_gpt_batch batch;               /* of the last forward */
    const int32_t *pos;               /* batch.pos or pos_default */
    double denom;                     /* loss denominator of the last forward */
    int have_forward;
};

/* Layer l's forward (attention and MLP blocks; forward.c, forward_h16.c), and before layer
 * l's backward the forward again of the recomputed chunk l ends, if any (backward.c; model.h
 * mg_gpt_recompute): both passes' backward call it. */
mg_status mg_gpt_layer_fwd(const mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k, int64_t l);
mg_status mg_gpt_layer_fwd_h16(const mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k, int64_t l);
mg_status mg_gpt_recompute_chunk(const mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k,
                                 int64_t l);

/* The passes with 16-bit activations and weights (forward_h16.c, backward_h16.c; a->h16):
 * any tensor-parallel rank (with or without sequence parallelism) of any pipeline stage; the
 * loss in a->loss (fp32). */
mg_status mg_gpt_forward_h16(const mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k);
mg_status mg_gpt_backward_h16(mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k, double grad_scale);

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

/* --bf16/--fp16: an arena buffer (planned in floats) holding 16-bit values, and a slot's
 * 16-bit weights (g->params16 at the slot's offset, NULL when absent). */
static inline mgk_h16 *mg_h16(float *p) { return (mgk_h16 *)(void *)p; }
static inline const mgk_h16 *mg_lw16(const mg_gpt *g, const struct mg_gpt_acts *a, int64_t l,
                                     int slot)
{
    int64_t o = a->loff[l * P_NLAYER + slot];
    return o < 0 ? NULL : g->params16 + o;
}
static inline const mgk_h16 *mg_gw16(const mg_gpt *g, const struct mg_gpt_acts *a, int slot)
{
    int64_t o = a->poff[slot];
    return o < 0 ? NULL : g->params16 + o;
}

/* ---- tensor-parallel steps (model_tp.c); no-ops or copies when tp = 1 ---- */

/* full (N rows) <- the group's chunks (SP all-gather; full == local otherwise). */
mg_status mg_tp_gather(const struct mg_gpt_acts *a, float *full, const float *local,
                       int64_t C);
/* out (Ns rows) <- sum over the group of partial (N rows): all-reduce in place, or
 * reduce-scatter under SP. */
mg_status mg_tp_reduce(const struct mg_gpt_acts *a, float *out, float *partial, int64_t C);
/* out (Ns, C) = the row-parallel linear inp (N, IN) * W^T summed over the group, + bias
 * once after the sum (tp = 1: mgk_linear_fwd with its bias, as the single process). */
mg_status mg_tp_row_linear_fwd(const struct mg_gpt_acts *a, const mg_kctx *k, float *out,
                               const float *inp, const float *W, const float *bias,
                               int64_t IN, int64_t C);
/* Vocabulary-parallel cross-entropy of a->logits into a->loss and a->lse. */
mg_status mg_tp_xent_fwd(const struct mg_gpt_acts *a, const mg_kctx *k,
                         const int32_t *targets, int64_t vocab);
/* --bf16 / --fp16: mg_tp_gather, mg_tp_reduce and mg_tp_row_linear_fwd on 16-bit values of
 * k's kind, the sums in that type as Megatron moves them (accumulated in fp32, rounded once;
 * comm.h), the row-parallel bias added after the sum (tp = 1: the fused single-process
 * mgk_linear_fwd_h16). */
mg_status mg_tp_gather_h16(const struct mg_gpt_acts *a, mgk_h16 *full, const mgk_h16 *local,
                           int64_t C);
mg_status mg_tp_reduce_h16(const struct mg_gpt_acts *a, const mg_kctx *k, mgk_h16 *out,
                           mgk_h16 *partial, int64_t C);
mg_status mg_tp_row_linear_fwd_h16(const struct mg_gpt_acts *a, const mg_kctx *k, mgk_h16 *out,
                                   const mgk_h16 *inp, const mgk_h16 *W, const mgk_h16 *bias,
                                   int64_t IN, int64_t C);
/* mg_tp_xent_fwd on the 16-bit logits of a --bf16 / --fp16 arena (the statistics in fp32). */
mg_status mg_tp_xent_fwd_h16(const struct mg_gpt_acts *a, const mg_kctx *k,
                              const int32_t *targets, int64_t vocab);

#endif

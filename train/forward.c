/* forward.c — model.h: the activation arena and the forward pass of one pipeline stage
 * on one tensor-parallel rank (embedding, attention block, MLP block, final norm, output
 * layer, masked cross-entropy).
 *
 * Contract (model.h): pre-norm blocks as Megatron-Core's GPT layer:
 *   x_mid = x + proj(attn(rope(qkv(norm1(x)))));  x' = x_mid + fc2(act(fc1(norm2(x_mid))))
 * with LayerNorm or RMSNorm, GeLU (erf/tanh) or SwiGLU, learned positions added to the
 * token embeddings or RoPE on q and k, grouped-query causal attention scaled by 1/sqrt(D).
 * The arena is planned once (plan()) and used both to size and to carve the buffers; the
 * tensor-parallel steps are model_tp.c's.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "comm.h"
#include "model_internal.h"

#define ALIGN_FLOATS 16

static const char *const layer_keys[P_NLAYER] = {
    "input_norm.weight", "input_norm.bias", "qkv.weight", "qkv.bias", "proj.weight",
    "proj.bias", "post_norm.weight", "post_norm.bias", "fc1.weight", "fc1.bias",
    "fc2.weight", "fc2.bias"};
static const char *const global_keys[P_NGLOBAL] = {
    "word_embeddings.weight", "position_embeddings.weight", "final_norm.weight",
    "final_norm.bias", "output_layer.weight"};

/* Carves n floats from the arena (base NULL: only counts). */
static float *take(float *base, int64_t *off, int64_t n)
{
    float *p = base ? base + *off : NULL;
    *off += (n + ALIGN_FLOATS - 1) / ALIGN_FLOATS * ALIGN_FLOATS;
    return p;
}

/* An activation (or activation gradient) of n values: n floats, or n 16-bit values in a->h16
 * arenas (forward_h16.c); statistics and saved attention state stay take()'s floats. */
static float *take_act(const mg_gpt_acts *a, float *base, int64_t *off, int64_t n)
{
    return take(base, off, a->h16 ? (n + 1) / 2 : n);
}

/* Sizes of this rank's share; sp = sequence parallel (tp > 1 only). */
static void set_dims(mg_gpt_acts *a, const mg_gpt *g, int64_t B, int64_t T, int sp)
{
    const mg_model_desc *m = &g->m;
    int64_t tp = g->lay.tp;
    a->B = B;
    a->T = T;
    a->N = B * T;
    a->tp = tp;
    a->tp_rank = g->lay.tp_rank;
    a->sp = sp && tp > 1;
    a->Ns = a->sp ? a->N / tp : a->N;
    a->H = m->hidden_size;
    a->Hq = m->num_attention_heads / tp;
    a->Hkv = m->num_query_groups / tp;
    a->D = m->kv_channels;
    a->QKV = (a->Hq + 2 * a->Hkv) * a->D;
    a->F = m->ffn_hidden_size / tp;
    a->F1 = m->swiglu ? 2 * a->F : a->F;
    a->Vp = m->padded_vocab_size / tp;
    a->vocab0 = a->tp_rank * a->Vp;
    a->L = g->lay.layers;
    mgk_attn_dims ad = {B, T, a->Hq, a->Hkv, a->D, (float)(1.0 / sqrt((double)a->D))};
    a->ad = ad;
}

/* A buffer of N rows that only sequence parallelism needs apart from its Ns-row twin. */
static float *take_sp(mg_gpt_acts *a, float *base, int64_t *off, int64_t C, float *twin)
{
    return a->sp ? take_act(a, base, off, a->N * C) : twin;
}

static void plan_layer(mg_gpt_acts *a, const mg_kctx *k, mg_layer_acts *la, float *base,
                       int64_t *off)
{
    int64_t N = a->N, Ns = a->Ns;
    la->ln1 = take_act(a, base, off, Ns * a->H);
    la->ln1_mean = take(base, off, Ns);
    la->ln1_rstd = take(base, off, Ns);
    la->ln1g = take_sp(a, base, off, a->H, la->ln1);
    la->q = take_act(a, base, off, N * a->Hq * a->D);
    la->k = take_act(a, base, off, N * a->Hkv * a->D);
    la->v = take_act(a, base, off, N * a->Hkv * a->D);
    la->att = a->rc_attn ? NULL : take(base, off, mgk_attn_saved_numel(k, &a->ad));
    la->ao = take_act(a, base, off, N * a->Hq * a->D);
    la->xmid = take_act(a, base, off, Ns * a->H);
    la->ln2 = take_act(a, base, off, Ns * a->H);
    la->ln2_mean = take(base, off, Ns);
    la->ln2_rstd = take(base, off, Ns);
    la->ln2g = take_sp(a, base, off, a->H, la->ln2);
    la->fc1 = take_act(a, base, off, N * a->F1);
    la->act = take_act(a, base, off, N * a->F);
}

/* The vocabulary-parallel loss's row statistics (tp > 1). */
static void plan_xent(mg_gpt_acts *a, float *base, int64_t *off)
{
    if (a->tp == 1) return;
    a->xmax = take(base, off, a->N);
    a->xsum = take(base, off, 2 * a->N);
    a->xgmax = take(base, off, a->N);
    a->xall = take(base, off, a->tp * a->N);
}

static void plan_work(mg_gpt_acts *a, float *base, int64_t *off)
{
    int64_t N = a->N, Ns = a->Ns, QD = a->Hq * a->D, KD = a->Hkv * a->D;
    a->lnf = take_act(a, base, off, Ns * a->H);
    a->lnf_mean = take(base, off, Ns);
    a->lnf_rstd = take(base, off, Ns);
    a->lnfg = take_sp(a, base, off, a->H, a->lnf);
    a->logits = take_act(a, base, off, N * a->Vp);
    a->lse = take(base, off, N);
    a->loss = take(base, off, N);
    a->tmp = take_sp(a, base, off, a->H, NULL);
    plan_xent(a, base, off);
    a->dx = take_act(a, base, off, Ns * a->H);
    a->dln = take_act(a, base, off, Ns * a->H);
    a->dxg = take_sp(a, base, off, a->H, a->dx);
    a->dlng = take_sp(a, base, off, a->H, a->dln);
    a->dfc1 = take_act(a, base, off, N * a->F1);
    a->dact = take_act(a, base, off, N * a->F);
    a->dao = take_act(a, base, off, N * QD);
    a->dq = take_act(a, base, off, N * QD);
    a->dk = take_act(a, base, off, N * KD);
    a->dv = take_act(a, base, off, N * KD);
    a->dq0 = take_act(a, base, off, N * QD);
    a->dk0 = take_act(a, base, off, N * KD);
    a->qkv = take_act(a, base, off, N * a->QKV);
}

/* Whether x[l] is kept for the whole pass: a recomputed chunk's input, or outside the
 * recomputed layers (x[L], the stage output, always). */
static int x_kept(const mg_gpt_acts *a, int64_t l)
{
    return l >= a->rc_layers || l % a->rc_chunk == 0;
}

/* One chunk's working set: rc_chunk layers' buffers and the residual streams between them,
 * shared by every recomputed chunk (the j-th layer of each chunk on the j-th slot). */
static void plan_chunk(mg_gpt_acts *a, const mg_kctx *k, float *base, int64_t *off)
{
    int64_t c = a->rc_layers ? a->rc_chunk : 0;
    for (int64_t j = 0; j < c; j++) {
        mg_layer_acts ws;
        plan_layer(a, k, &ws, base, off);
        float *x = j > 0 ? take_act(a, base, off, a->Ns * a->H) : NULL;
        for (int64_t l = j; base && l < a->rc_layers; l += c) {
            a->la[l] = ws;
            if (j > 0) a->x[l] = x;
        }
    }
}

/* Lays out the arena on base (NULL: sizes only); returns its length in floats. */
static int64_t plan(mg_gpt_acts *a, const mg_kctx *k, float *base)
{
    int64_t off = 0;
    for (int64_t l = 0; l <= a->L; l++) {
        if (x_kept(a, l)) {
            float *x = take_act(a, base, &off, a->Ns * a->H);
            if (base) a->x[l] = x;
        }
        if (l == a->L) break;
        mg_layer_acts tmp;
        if (l >= a->rc_layers) plan_layer(a, k, base ? &a->la[l] : &tmp, base, &off);
    }
    plan_chunk(a, k, base, &off);
    if (a->rc_attn) {
        float *att = take(base, &off, mgk_attn_saved_numel(k, &a->ad));
        for (int64_t l = 0; base && l < a->L; l++) a->la[l].att = att;
    }
    plan_work(a, base, &off);
    return off;
}

/* The recomputed layers and their chunk length (recompute_layers >= 1 with a method). */
static void set_recompute(mg_gpt_acts *a, const mg_gpt_par *par)
{
    int64_t n = par ? par->recompute_layers : 0, L = a->L;
    a->rc_layers = a->rc_chunk = 0;
    a->rc_attn = par && par->recompute_attention;
    if (!par || par->recompute == MG_RECOMPUTE_NONE || n < 1 || L == 0) return;
    a->rc_layers = par->recompute == MG_RECOMPUTE_BLOCK && n < L ? n : L;
    a->rc_chunk = par->recompute == MG_RECOMPUTE_BLOCK ? 1 : n < L ? n : L;
}

int64_t mg_gpt_acts_plan_bytes(const mg_gpt *g, const mg_kctx *k, int64_t B, int64_t T)
{
    return mg_gpt_acts_plan_bytes_par(g, k, B, T, g->params16 != NULL, NULL);
}

int64_t mg_gpt_acts_plan_bytes_par(const mg_gpt *g, const mg_kctx *k, int64_t B, int64_t T,
                                   int h16, const mg_gpt_par *par)
{
    mg_gpt_acts a;
    memset(&a, 0, sizeof a);
    a.h16 = h16;
    set_dims(&a, g, B, T, par && par->sequence_parallel);
    set_recompute(&a, par);
    return plan(&a, k, NULL) * (int64_t)sizeof(float) + a.N * (int64_t)sizeof(int32_t);
}

static void find_offsets(mg_gpt_acts *a, const mg_gpt *g)
{
    for (int s = 0; s < P_NGLOBAL; s++) a->poff[s] = -1;
    for (int64_t i = 0; i < a->L * P_NLAYER; i++) a->loff[i] = -1;
    for (size_t i = 0; i < g->nt; i++) {
        const mg_gpt_tensor *t = &g->t[i];
        if (t->tied_copy) {
            a->poff[P_OUT] = t->offset;
            continue;
        }
        if (t->param.layer < 0) {
            for (int s = 0; s < P_NGLOBAL; s++)
                if (strcmp(t->param.spec->key, global_keys[s]) == 0) a->poff[s] = t->offset;
            continue;
        }
        int64_t l = t->param.layer - g->lay.layer_first;
        for (int s = 0; s < P_NLAYER; s++)
            if (strcmp(t->param.spec->key, layer_keys[s]) == 0)
                a->loff[l * P_NLAYER + s] = t->offset;
    }
    if (g->m.tied_embeddings && a->poff[P_OUT] < 0) a->poff[P_OUT] = a->poff[P_WTE];
}

/* The arena and the default positions in the memory of k's backend. */
static mg_status alloc_acts(mg_gpt_acts *a, const mg_gpt *g, mg_kctx *k)
{
    a->mem = k->backend;
    a->h16 = g->params16 != NULL;
    a->la = mg_calloc((size_t)(a->L ? a->L : 1), sizeof(*a->la));
    a->x = mg_calloc((size_t)(a->L + 1), sizeof(*a->x));
    a->loff = mg_calloc((size_t)(a->L ? a->L : 1) * P_NLAYER, sizeof(*a->loff));
    int32_t *pos = mg_calloc((size_t)a->N, sizeof(int32_t));
    a->pos_default = mgk_alloc(a->mem, (size_t)a->N * sizeof(int32_t));
    a->arena_numel = plan(a, k, NULL);
    a->arena = mgk_alloc(a->mem, (size_t)a->arena_numel * sizeof(float));
    mg_status st = !a->la || !a->x || !a->loff || !pos || !a->pos_default || !a->arena
                       ? MG_ERR_NOMEM : MG_OK;
    if (st == MG_OK) {
        plan(a, k, a->arena);
        for (int64_t i = 0; i < a->N; i++) pos[i] = (int32_t)(i % a->T);
        st = mgk_upload(a->mem, a->pos_default, pos, (size_t)a->N * sizeof(int32_t));
    }
    free(pos);
    MG_FORWARD(st);
    find_offsets(a, g);
    return mgk_ctx_reserve(k, mgk_attn_scratch_numel(k, &a->ad));
}

static mg_status check_par(const mg_gpt *g, const mg_gpt_par *par, int64_t N)
{
    int64_t tp = g->lay.tp;
    if (tp == 1) return MG_OK;
    MG_RETURN_IF(!par || !par->tp, MG_ERR_ARG,
                 "model: tensor-parallel rank %lld of %lld without its group",
                 (long long)g->lay.tp_rank, (long long)tp);
    MG_RETURN_IF(mg_comm_size(par->tp) != tp || mg_comm_rank(par->tp) != g->lay.tp_rank,
                 MG_ERR_ARG, "model: tensor-parallel rank %lld of %lld on a group where it is "
                 "rank %lld of %lld", (long long)g->lay.tp_rank, (long long)tp,
                 (long long)mg_comm_rank(par->tp), (long long)mg_comm_size(par->tp));
    MG_RETURN_IF(par->sequence_parallel && N % tp, MG_ERR_ARG,
                 "model: sequence parallelism needs the %lld tokens of a micro-batch to divide "
                 "over %lld ranks", (long long)N, (long long)tp);
    return MG_OK;
}

mg_status mg_gpt_acts_create(mg_gpt_acts **out, const mg_gpt *g, mg_kctx *k, int64_t B,
                             int64_t T)
{
    return mg_gpt_acts_create_par(out, g, k, B, T, NULL);
}

mg_status mg_gpt_acts_create_par(mg_gpt_acts **out, const mg_gpt *g, mg_kctx *k, int64_t B,
                                 int64_t T, const mg_gpt_par *par)
{
    *out = NULL;
    MG_RETURN_IF(B < 1 || T < 1 || T > g->m.seq_length, MG_ERR_ARG,
                 "model: micro-batch %lld x %lld tokens (sequence length %lld)", (long long)B,
                 (long long)T, (long long)g->m.seq_length);
    MG_FORWARD(check_par(g, par, B * T));
    mg_gpt_acts *a = mg_calloc(1, sizeof(*a));
    if (!a) return MG_ERR_NOMEM;
    set_dims(a, g, B, T, par && par->sequence_parallel);
    set_recompute(a, par);
    a->tpc = g->lay.tp > 1 ? par->tp : NULL;
    a->owner = g;
    mg_status st = alloc_acts(a, g, k);
    if (st != MG_OK) {
        mg_gpt_acts_free(a);
        return st;
    }
    *out = a;
    return MG_OK;
}

void mg_gpt_acts_free(mg_gpt_acts *a)
{
    if (!a) return;
    mgk_free(a->mem, a->arena);
    free(a->la);
    free(a->x);
    free(a->loff);
    mgk_free(a->mem, a->pos_default);
    free(a);
}

int64_t mg_gpt_acts_bytes(const mg_gpt_acts *a)
{
    return a->arena_numel * (int64_t)sizeof(float) + a->N * (int64_t)sizeof(int32_t);
}

const float *mg_gpt_logits(const mg_gpt_acts *a) { return a->logits; }
int64_t mg_gpt_stage_numel(const mg_gpt_acts *a) { return a->Ns * a->H; }
int64_t mg_gpt_stage_bytes(const mg_gpt_acts *a)
{
    return mg_gpt_stage_numel(a) * (a->h16 ? (int64_t)sizeof(mgk_h16) : (int64_t)sizeof(float));
}
float *mg_gpt_stage_input(mg_gpt_acts *a) { return a->x[0]; }
const float *mg_gpt_stage_output(const mg_gpt_acts *a) { return a->x[a->L]; }
float *mg_gpt_stage_dout(mg_gpt_acts *a) { return a->dx; }
const float *mg_gpt_stage_din(const mg_gpt_acts *a) { return a->dx; }
double mg_gpt_loss_denom(const mg_gpt_acts *a) { return a->denom; }

/* ---- the pass ---- */

static void norm_fwd(const mg_gpt *g, const mg_kctx *k, float *out, float *mean, float *rstd,
                     const float *x, const float *w, const float *b, int64_t N, int64_t C)
{
    float eps = (float)g->m.norm_epsilon;
    if (g->m.rmsnorm) mgk_rmsnorm_fwd(k, out, rstd, x, w, N, C, eps);
    else mgk_layernorm_fwd(k, out, mean, rstd, x, w, b, N, C, eps);
}

/* Vocabulary-parallel word embedding: this rank's rows, summed over the group (reduce-
 * scattered to the rank's token rows under SP), then the replicated position embedding of
 * those rows added once after the sum (Megatron adds it before scattering: same values). */
static mg_status embed_fwd(const mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k)
{
    const float *wte = mg_gp(g->params, a, P_WTE), *wpe = mg_gp(g->params, a, P_WPE);
    float *sum = a->sp ? a->tmp : a->x[0];
    mgk_embedding_fwd(k, sum, a->batch.ids, wte, a->N, a->H, a->vocab0, a->Vp, 0);
    MG_FORWARD(mg_tp_reduce(a, a->x[0], sum, a->H));
    const int32_t *pos = a->sp ? a->pos + a->tp_rank * a->Ns : a->pos; /* the rank's rows */
    if (g->m.learned_positions)
        mgk_embedding_fwd(k, a->x[0], pos, wpe, a->Ns, a->H, 0, g->m.max_position_embeddings,
                          1);
    return MG_OK;
}

static mg_status attn_block_fwd(const mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k, int64_t l)
{
    mg_layer_acts *s = &a->la[l];
    float *P = g->params;
    int64_t N = a->N;
    norm_fwd(g, k, s->ln1, s->ln1_mean, s->ln1_rstd, a->x[l], mg_lp(P, a, l, P_IN_W),
             mg_lp(P, a, l, P_IN_B), a->Ns, a->H);
    MG_FORWARD(mg_tp_gather(a, s->ln1g, s->ln1, a->H));
    mgk_linear_fwd(k, a->qkv, s->ln1g, mg_lp(P, a, l, P_QKV_W), mg_lp(P, a, l, P_QKV_B), N,
                   a->H, a->QKV);
    mgk_qkv_split(k, s->q, s->k, s->v, a->qkv, N, a->Hq, a->Hkv, a->D);
    if (!g->m.learned_positions) {
        float base = (float)g->m.rotary_base;
        mgk_rope_fwd(k, s->q, s->q, a->pos, a->B, a->T, a->Hq, a->D, a->D, base);
        mgk_rope_fwd(k, s->k, s->k, a->pos, a->B, a->T, a->Hkv, a->D, a->D, base);
    }
    mgk_attn_fwd(k, &a->ad, s->ao, s->att, s->q, s->k, s->v, a->batch.seg);
    MG_FORWARD(mg_tp_row_linear_fwd(a, k, s->xmid, s->ao, mg_lp(P, a, l, P_PROJ_W),
                                    mg_lp(P, a, l, P_PROJ_B), a->Hq * a->D, a->H));
    mgk_add(k, s->xmid, s->xmid, a->x[l], a->Ns * a->H);
    return MG_OK;
}

static mg_status mlp_block_fwd(const mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k, int64_t l)
{
    mg_layer_acts *s = &a->la[l];
    float *P = g->params, *out = a->x[l + 1];
    int64_t N = a->N;
    norm_fwd(g, k, s->ln2, s->ln2_mean, s->ln2_rstd, s->xmid, mg_lp(P, a, l, P_POST_W),
             mg_lp(P, a, l, P_POST_B), a->Ns, a->H);
    MG_FORWARD(mg_tp_gather(a, s->ln2g, s->ln2, a->H));
    mgk_linear_fwd(k, s->fc1, s->ln2g, mg_lp(P, a, l, P_FC1_W), mg_lp(P, a, l, P_FC1_B), N,
                   a->H, a->F1);
    if (g->m.swiglu) mgk_swiglu_fwd(k, s->act, s->fc1, N, a->F);
    else mgk_gelu_fwd(k, s->act, s->fc1, N * a->F, g->opt.gelu);
    MG_FORWARD(mg_tp_row_linear_fwd(a, k, out, s->act, mg_lp(P, a, l, P_FC2_W),
                                    mg_lp(P, a, l, P_FC2_B), a->F, a->H));
    mgk_add(k, out, out, s->xmid, a->Ns * a->H);
    return MG_OK;
}

/* Final norm, output layer (column-parallel over the vocabulary) and cross-entropy. */
static mg_status head_fwd(const mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k)
{
    float *P = g->params;
    norm_fwd(g, k, a->lnf, a->lnf_mean, a->lnf_rstd, a->x[a->L], mg_gp(P, a, P_LNF_W),
             mg_gp(P, a, P_LNF_B), a->Ns, a->H);
    MG_FORWARD(mg_tp_gather(a, a->lnfg, a->lnf, a->H));
    mgk_linear_fwd(k, a->logits, a->lnfg, mg_gp(P, a, P_OUT), NULL, a->N, a->H, a->Vp);
    if (a->tpc) return mg_tp_xent_fwd(a, k, a->batch.targets, mg_gpt_loss_vocab(g));
    mgk_xent_fwd(k, a->loss, a->lse, a->logits, a->batch.targets, a->N, a->Vp,
                 mg_gpt_loss_vocab(g));
    return MG_OK;
}

mg_status mg_gpt_layer_fwd(const mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k, int64_t l)
{
    MG_FORWARD(attn_block_fwd(g, a, k, l));
    return mlp_block_fwd(g, a, k, l);
}

/* The fp32 pass of the stage: embedding (first stage), the layers, the head (last stage). */
static mg_status stage_fwd(const mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k)
{
    if (g->lay.first_stage) MG_FORWARD(embed_fwd(g, a, k));
    for (int64_t l = 0; l < a->L; l++) MG_FORWARD(mg_gpt_layer_fwd(g, a, k, l));
    return g->lay.last_stage ? head_fwd(g, a, k) : MG_OK;
}

mg_status mg_gpt_check_batch(const mg_gpt *g, const mg_gpt_batch *b, int64_t N)
{
    for (int64_t i = 0; i < N; i++) {
        MG_RETURN_IF(b->ids[i] < 0 || b->ids[i] >= g->m.vocab_size || b->targets[i] < 0 ||
                         b->targets[i] >= g->m.vocab_size,
                     MG_ERR_ARG, "model: token %lld: id %d / target %d outside the vocabulary "
                     "of %lld", (long long)i, b->ids[i], b->targets[i],
                     (long long)g->m.vocab_size);
        MG_RETURN_IF(b->pos && (b->pos[i] < 0 || b->pos[i] >= g->m.max_position_embeddings),
                     MG_ERR_ARG, "model: token %lld: position %d outside [0, %lld)",
                     (long long)i, b->pos[i], (long long)g->m.max_position_embeddings);
    }
    return MG_OK;
}

mg_status mg_gpt_forward(const mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k,
                         const mg_gpt_batch *b, double *loss)
{
    MG_ASSERT(a->owner == g);
    MG_ASSERT(k->backend == g->mem || (k->backend != MGK_CUDA && g->mem != MGK_CUDA));
    if (k->backend != MGK_CUDA) MG_FORWARD(mg_gpt_check_batch(g, b, a->N));
    a->batch = *b;
    a->pos = b->pos ? b->pos : a->pos_default;
    a->have_forward = 0;
    MG_FORWARD(a->h16 ? mg_gpt_forward_h16(g, a, k) : stage_fwd(g, a, k));
    a->denom = b->loss_mask ? mgk_sum(k, b->loss_mask, NULL, a->N) : (double)a->N;
    *loss = 0.0;
    if (g->lay.last_stage) {
        double total = mgk_sum(k, a->loss, b->loss_mask, a->N);
        *loss = a->denom > 0 ? total / a->denom : 0.0;
    }
    a->have_forward = 1;
    return MG_OK;
}

/* dist_optim.c — dist_optim.h: megatron-core's distributed optimizer layout and step. */
#include "dist_optim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mg/distrib_optim.h"
#include "model_internal.h"
#include "param_order.h"

/* LanguageModule.setup_embeddings_and_output_layer: with tied embeddings and PP > 1 the
 * first stage's word embedding and the last stage's output layer are "shared_embedding". */
static int shared_embedding(const mg_gpt *g, const mg_gpt_tensor *t)
{
    if (!g->m.tied_embeddings || (g->lay.first_stage && g->lay.last_stage)) return 0;
    if (g->lay.first_stage) return strcmp(t->name, "embedding.word_embeddings.weight") == 0;
    return g->lay.last_stage && strcmp(t->name, "output_layer.weight") == 0;
}

mg_status mg_grad_layout_build(mg_dist_layout *l, const mg_gpt *g, int64_t dp, mg_names nm,
                               int distributed)
{
    memset(l, 0, sizeof *l);
    size_t *order = mg_calloc(g->nt ? g->nt : 1, sizeof *order);
    int64_t *numel = mg_calloc(g->nt ? g->nt : 1, sizeof *numel);
    unsigned char *own = mg_calloc(g->nt ? g->nt : 1, 1);
    mg_tname *names = mg_gpt_names(g, nm);
    mg_status st = order && numel && own && names ? MG_OK : MG_ERR_NOMEM;
    if (st == MG_OK) {
        mg_gpt_param_order(g, names, -1, order, 0);
        for (size_t j = 0; j < g->nt; j++) {
            numel[j] = g->t[j].numel;
            own[j] = (unsigned char)shared_embedding(g, &g->t[j]);
        }
        mg_bucket_cfg cfg = {dp, g->opt.ddp_bucket_size, distributed};
        st = mg_grad_buffer_plan(l, g->nt, order, numel, own, &cfg);
    }
    free(order);
    free(numel);
    free(own);
    free(names);
    return st;
}

mg_status mg_dist_layout_build(mg_dist_layout *l, const mg_gpt *g, int64_t dp, mg_names nm)
{
    return mg_grad_layout_build(l, g, dp, nm, 1);
}

void mg_grad_bucket_copy(const mg_dist_layout *l, const mg_gpt *g, const mg_kctx *k,
                         int64_t b, float *buf, float *model, int to_model)
{
    for (size_t j = 0; j < g->nt; j++) {
        if (l->start[j] < l->bucket[b] || l->start[j] >= l->bucket[b + 1]) continue;
        if (to_model) mgk_copy(k, model + g->t[j].offset, buf + l->start[j], g->t[j].numel);
        else mgk_copy(k, buf + l->start[j], model + g->t[j].offset, g->t[j].numel);
    }
}

/* n floats of o's memory, zeroed (at least one, so that an empty shard is not NULL). */
static float *alloc_floats(const mg_dist_optim *o, int64_t n)
{
    return mgk_alloc(o->mem, (size_t)(n ? n : 1) * sizeof(float));
}

mg_status mg_dist_optim_create(mg_dist_optim **out, const mg_gpt *g, mg_comm *world,
                               mg_names nm, mgk_backend mem)
{
    *out = NULL;
    mg_comm *dp = mg_comm_group(world, MG_COMM_DATA);
    mg_dist_optim *o = mg_calloc(1, sizeof *o);
    if (!o) return MG_ERR_NOMEM;
    o->mem = mem;
    mg_status st = mg_dist_layout_build(&o->lay, g, mg_comm_size(dp), nm);
    if (st == MG_OK) {
        o->dp_rank = mg_comm_rank(dp);
        o->shard = o->lay.numel / o->lay.dp;
        o->buf = alloc_floats(o, o->lay.numel);
        o->gshard = alloc_floats(o, o->shard);
        o->m = alloc_floats(o, o->shard);
        o->v = alloc_floats(o, o->shard);
        if (!o->buf || !o->gshard || !o->m || !o->v) st = MG_ERR_NOMEM;
    }
    if (st != MG_OK) {
        mg_dist_optim_free(o);
        return st;
    }
    *out = o;
    return MG_OK;
}

mg_status mg_dist_optim_use_params16(mg_dist_optim *o)
{
    if (!o->buf16) /* at least one element, as alloc_floats */
        o->buf16 = mgk_alloc(o->mem, (size_t)(o->lay.numel ? o->lay.numel : 1) * 2);
    return o->buf16 ? MG_OK : MG_ERR_NOMEM;
}

void mg_dist_optim_free(mg_dist_optim *o)
{
    if (!o) return;
    mg_dist_layout_free(&o->lay);
    mgk_free(o->mem, o->buf);
    mgk_free(o->mem, o->gshard);
    mgk_free(o->mem, o->m);
    mgk_free(o->mem, o->v);
    mgk_free(o->mem, o->buf16);
    free(o);
}

/* Bucket b's slice owned by this rank: buffer range [*lo, *lo + *n) and its offset in the
 * shard arrays. */
static void slice(const mg_dist_optim *o, int64_t b, int64_t *lo, int64_t *n, int64_t *at)
{
    const int64_t *bk = o->lay.bucket;
    *n = (bk[b + 1] - bk[b]) / o->lay.dp;
    *lo = bk[b] + o->dp_rank * *n;
    *at = bk[b] / o->lay.dp;
}

/* Buffer layout -> model layout, tensor by tensor, in k's memory. */
static void unpack(const mg_dist_optim *o, const mg_gpt *g, const mg_kctx *k, float *model,
                   const float *buf)
{
    for (size_t j = 0; j < g->nt; j++)
        mgk_copy(k, model + g->t[j].offset, buf + o->lay.start[j], g->t[j].numel);
}

/* Calls fn on every piece of a tensor inside this rank's slices: the tensor's element
 * index e0, the shard index s0 and the length. */
typedef void (*piece_fn)(void *ctx, const mg_gpt_tensor *t, int64_t e0, int64_t s0, int64_t n);

static void for_pieces(const mg_dist_optim *o, const mg_gpt *g, piece_fn fn, void *ctx)
{
    for (int64_t b = 0; b < o->lay.nbuckets; b++) {
        int64_t lo, n, at;
        slice(o, b, &lo, &n, &at);
        for (size_t j = 0; j < g->nt; j++) {
            int64_t ts = o->lay.start[j], te = ts + g->t[j].numel;
            int64_t a = ts > lo ? ts : lo, e = te < lo + n ? te : lo + n;
            if (a < e) fn(ctx, &g->t[j], a - ts, at + (a - lo), e - a);
        }
    }
}

typedef struct {
    mg_dist_optim *o;
    mg_gpt *g;
    const mg_kctx *k;
    mgk_adamw_hp hp;
} adam_ctx;

/* AdamW on a piece of the fp32 masters; with 16-bit parameters their rounded copy goes
 * straight into this rank's slice of buf16 (megatron-core's bf16 / fp16 param buffer). */
static void adam_piece(void *vc, const mg_gpt_tensor *t, int64_t e0, int64_t s0, int64_t n)
{
    adam_ctx *c = vc;
    float *master = c->g->params + t->offset + e0;
    if (c->o->buf16)
        mgk_adamw_h16(c->k, master, c->o->buf16 + c->o->lay.start[t - c->g->t] + e0,
                      c->o->m + s0, c->o->v + s0, c->o->gshard + s0, n, &c->hp, t->decay);
    else
        mgk_adamw(c->k, master, c->o->m + s0, c->o->v + s0, c->o->gshard + s0, n, &c->hp,
                  t->decay);
}

/* The shard's parameters into this rank's slices of buf (padding zero). */
static void param_piece(void *vc, const mg_gpt_tensor *t, int64_t e0, int64_t s0, int64_t n)
{
    adam_ctx *c = vc;
    (void)s0;
    int64_t j = t - c->g->t;
    mgk_copy(c->k, c->o->buf + c->o->lay.start[j] + e0, c->g->params + t->offset + e0, n);
}

mg_status mg_dist_reduce_bucket(mg_dist_optim *o, const mg_gpt *g, const mg_kctx *k,
                                mg_comm *dp, int64_t b, int async)
{
    /* the padding stays zero: nothing writes it */
    mg_grad_bucket_copy(&o->lay, g, k, b, o->buf, g->grads, 0);
    int64_t lo, n, at, b0 = o->lay.bucket[b];
    slice(o, b, &lo, &n, &at);
    if (o->lay.dp > 1) mgk_scale(k, o->buf + b0, n * o->lay.dp, 1.0f / (float)o->lay.dp);
    if (async) MG_FORWARD(mg_comm_async_follow(dp));
    return mg_comm_reduce_scatter_sum_f32(dp, o->gshard + at, o->buf + b0, n);
}

static mg_status reduce_scatter_grads(mg_dist_optim *o, const mg_gpt *g, const mg_kctx *k,
                                      mg_comm *dp)
{
    for (int64_t b = 0; b < o->lay.nbuckets; b++)
        MG_FORWARD(mg_dist_reduce_bucket(o, g, k, dp, b, 0));
    return MG_OK;
}

/* Every rank's updated fp32 parameters into g->params (through buf). */
static mg_status gather_params(mg_dist_optim *o, mg_gpt *g, const mg_kctx *k, mg_comm *dp)
{
    adam_ctx c = {.o = o, .g = g, .k = k};
    for_pieces(o, g, param_piece, &c);
    for (int64_t b = 0; b < o->lay.nbuckets; b++) {
        int64_t lo, n, at;
        slice(o, b, &lo, &n, &at);
        MG_FORWARD(mg_comm_allgather_f32(dp, o->buf + o->lay.bucket[b], o->buf + lo, n));
    }
    unpack(o, g, k, g->params, o->buf);
    return MG_OK;
}

/* Every rank's updated 16-bit parameters (adam_piece wrote this rank's slices of buf16)
 * into g->params16. */
static mg_status gather_params16(mg_dist_optim *o, mg_gpt *g, const mg_kctx *k, mg_comm *dp)
{
    for (int64_t b = 0; b < o->lay.nbuckets; b++) {
        int64_t lo, n, at;
        slice(o, b, &lo, &n, &at);
        MG_FORWARD(mg_comm_allgather_bf16(dp, o->buf16 + o->lay.bucket[b], o->buf16 + lo, n));
    }
    for (size_t j = 0; j < g->nt; j++)
        mgk_copy_h16(k, g->params16 + g->t[j].offset, o->buf16 + o->lay.start[j],
                     g->t[j].numel);
    return MG_OK;
}

mg_status mg_dist_gather_masters(mg_dist_optim *o, mg_gpt *g, const mg_kctx *k,
                                 mg_comm *world)
{
    if (!o->buf16) return MG_OK; /* fp32: the step gathered them */
    return gather_params(o, g, k, mg_comm_group(world, MG_COMM_DATA));
}

typedef struct {
    const mg_dist_optim *o;
    const mg_gpt *g;
    const mg_kctx *k;
    double sumsq;
} norm_ctx;

/* The reduced gradients of a piece, where its tensor counts in the norm on this rank
 * (mg_gpt_tensor_in_norm: a replicated tensor on TP rank 0 only, never the tied copy). */
static void norm_piece(void *vc, const mg_gpt_tensor *t, int64_t e0, int64_t s0, int64_t n)
{
    norm_ctx *c = vc;
    (void)e0;
    if (mg_gpt_tensor_in_norm(c->g, t)) c->sumsq += mgk_sumsq(c->k, c->o->gshard + s0, n);
}

mg_status mg_dist_step(mg_dist_optim *o, mg_gpt *g, const mg_kctx *k, mg_comm *world,
                       const mg_step_hp *hp, mg_step_result *res)
{
    mg_comm *dp = mg_comm_group(world, MG_COMM_DATA);
    if (!o->grads_reduced) MG_FORWARD(reduce_scatter_grads(o, g, k, dp));
    o->grads_reduced = 0;
    mg_unscale_grads(k, o->gshard, o->shard, hp->loss_scale);
    norm_ctx nc = {o, g, k, 0.0};
    for_pieces(o, g, norm_piece, &nc);
    double s = nc.sumsq;
    MG_FORWARD(mg_comm_allreduce_sum_f64(dp, &s, 1));
    MG_FORWARD(mg_comm_allreduce_sum_f64(mg_comm_group(world, MG_COMM_MODEL), &s, 1));
    res->grad_norm = sqrt(s);
    res->skipped = !isfinite(res->grad_norm);
    if (res->skipped) return MG_OK;
    double coeff = mg_clip_coeff(hp->clip_grad, res->grad_norm);
    o->step++;
    adam_ctx c = {o, g, k, {hp->lr, hp->beta1, hp->beta2, hp->eps, hp->weight_decay, o->step,
                            coeff}};
    for_pieces(o, g, adam_piece, &c);
    return o->buf16 ? gather_params16(o, g, k, dp) : gather_params(o, g, k, dp);
}

/* model (host, model layout) <- shard of every rank, gathered into dbuf (o's memory) and
 * unpacked on the host through hbuf. */
static mg_status gather_one(const mg_dist_optim *o, const mg_gpt *g, mg_comm *dp,
                            const float *shard, float *dbuf, float *hbuf, float *model)
{
    for (int64_t b = 0; b < o->lay.nbuckets; b++) {
        int64_t lo, n, at;
        slice(o, b, &lo, &n, &at);
        MG_FORWARD(mg_comm_allgather_f32(dp, dbuf + o->lay.bucket[b], shard + at, n));
    }
    MG_FORWARD(mgk_download(o->mem, hbuf, dbuf, (size_t)o->lay.numel * sizeof(float)));
    for (size_t j = 0; j < g->nt; j++)
        memcpy(model + g->t[j].offset, hbuf + o->lay.start[j],
               (size_t)g->t[j].numel * sizeof(float));
    return MG_OK;
}

mg_status mg_dist_gather_moments(const mg_dist_optim *o, const mg_gpt *g, mg_comm *world,
                                 mg_gpt_optim *full)
{
    mg_comm *dp = mg_comm_group(world, MG_COMM_DATA);
    float *dbuf = alloc_floats(o, o->lay.numel);
    float *hbuf = mg_calloc((size_t)(o->lay.numel ? o->lay.numel : 1), sizeof(float));
    mg_status st = dbuf && hbuf ? MG_OK : MG_ERR_NOMEM;
    if (st == MG_OK) st = gather_one(o, g, dp, o->m, dbuf, hbuf, full->m);
    if (st == MG_OK) st = gather_one(o, g, dp, o->v, dbuf, hbuf, full->v);
    full->step = o->step;
    mgk_free(o->mem, dbuf);
    free(hbuf);
    return st;
}

/* shard (o's memory) <- this rank's slices of model (host, model layout), through buf (host,
 * numel) and the host shard hs. */
static mg_status take_one(const mg_dist_optim *o, const mg_gpt *g, float *buf, float *hs,
                          const float *model, float *shard)
{
    memset(buf, 0, (size_t)o->lay.numel * sizeof(float));
    for (size_t j = 0; j < g->nt; j++)
        memcpy(buf + o->lay.start[j], model + g->t[j].offset,
               (size_t)g->t[j].numel * sizeof(float));
    for (int64_t b = 0; b < o->lay.nbuckets; b++) {
        int64_t lo, n, at;
        slice(o, b, &lo, &n, &at);
        memcpy(hs + at, buf + lo, (size_t)n * sizeof(float));
    }
    return mgk_upload(o->mem, shard, hs, (size_t)o->shard * sizeof(float));
}

mg_status mg_dist_load_moments(mg_dist_optim *o, const mg_gpt *g, const mg_gpt_optim *full)
{
    float *buf = mg_calloc((size_t)(o->lay.numel ? o->lay.numel : 1), sizeof(float));
    float *hs = mg_calloc((size_t)(o->shard ? o->shard : 1), sizeof(float));
    mg_status st = buf && hs ? MG_OK : MG_ERR_NOMEM;
    if (st == MG_OK) st = take_one(o, g, buf, hs, full->m, o->m);
    if (st == MG_OK) st = take_one(o, g, buf, hs, full->v, o->v);
    o->step = full->step;
    free(buf);
    free(hs);
    return st;
}

/* One world tensor: the model-layout x packed into the buffer, bucket after bucket cut at
 * numel_unpadded, into dst (sum of the unpadded sizes). */
static void coalesce(const mg_dist_layout *l, const mg_gpt *g, const float *x, float *buf,
                     float *dst)
{
    memset(buf, 0, (size_t)l->numel * sizeof(float));
    for (size_t j = 0; j < g->nt; j++)
        memcpy(buf + l->start[j], x + g->t[j].offset, (size_t)g->t[j].numel * sizeof(float));
    for (int64_t b = 0, at = 0; b < l->nbuckets; at += l->unpadded[b], b++)
        memcpy(dst + at, buf + l->bucket[b], (size_t)l->unpadded[b] * sizeof(float));
}

mg_status mg_dist_save_state(const mg_dist_layout *l, const mg_gpt *g, const mg_gpt_optim *full,
                             mg_tdtype param_dtype, const char *path)
{
    size_t n = (size_t)(l->numel ? l->numel : 1);
    float *buf = mg_malloc(4 * n * sizeof(float));
    if (!buf) return MG_ERR_NOMEM;
    float *world[3] = {buf + n, buf + 2 * n, buf + 3 * n};
    const float *src[3] = {g->params, full->m, full->v};
    for (int k = 0; k < 3; k++) coalesce(l, g, src[k], buf, world[k]);
    mg_status st = mg_distrib_optim_save(path, param_dtype, mg_dist_coalesced_numel(l), world);
    free(buf);
    return st;
}

/* grad_buckets.c — grad_buckets.h: megatron-core's DDP buckets, reduced from the backward. */
#include "grad_buckets.h"

#include <stdlib.h>
#include <string.h>

#include "grad_sync.h"

struct mg_grad_buckets {
    mg_dist_layout lay;      /* the plain buffer's (o == NULL), else a copy of o's bounds */
    const mg_dist_layout *l; /* the layout in use: &lay or &o->lay */
    mg_dist_optim *o;
    mg_comm *world;
    int sequence_parallel;
    int64_t *level;          /* per bucket: the lowest level of its tensors */
    int64_t deferred;        /* first bucket that waits for finish (nbuckets: none) */
    unsigned char *sel;      /* per tensor: in the bucket being launched */
    float *buf;              /* plain: the staging buffer (lay.numel, g's memory) */
    mgk_backend mem;
    mg_gpt *g;               /* the run's model and kernels (begin) */
    const mg_kctx *k;
    int64_t next;            /* the next bucket to launch */
    mg_status failed;        /* a launch from the backward failed */
};

int64_t mg_ddp_bucket_size(const mg_train_opts *o, int64_t stage)
{
    return mg_ddp_bucket_size_of(o->overlap_grad_reduce, o->ddp_bucket_size,
                                 o->data_parallel_size, stage);
}

static int64_t tensor_level(const mg_gpt_tensor *t)
{
    if (t->param.layer >= 0) return t->param.layer;
    return strncmp(t->name, "embedding.", 10) == 0 ? -1 : INT64_MAX;
}

static int64_t bucket_of(const mg_dist_layout *l, size_t j)
{
    int64_t b = 0;
    while (b + 1 < l->nbuckets && l->start[j] >= l->bucket[b + 1]) b++;
    return b;
}

static void plan_levels(mg_grad_buckets *b, const mg_gpt *g)
{
    const mg_gpt_tensor *tied = mg_gpt_tied_synced(g, b->world);
    b->deferred = b->l->nbuckets;
    for (int64_t i = 0; i < b->l->nbuckets; i++) b->level[i] = INT64_MAX;
    for (size_t j = 0; j < g->nt; j++) {
        int64_t i = bucket_of(b->l, j), lv = tensor_level(&g->t[j]);
        if (lv < b->level[i]) b->level[i] = lv;
        if (&g->t[j] == tied && i < b->deferred) b->deferred = i;
    }
}

mg_status mg_grad_buckets_create(mg_grad_buckets **out, const mg_gpt *g, mg_comm *world,
                                 mg_names nm, int sequence_parallel, mg_dist_optim *o)
{
    *out = NULL;
    mg_grad_buckets *b = mg_calloc(1, sizeof *b);
    if (!b) return MG_ERR_NOMEM;
    b->o = o;
    b->world = world;
    b->sequence_parallel = sequence_parallel;
    b->mem = g->mem;
    mg_status st = MG_OK;
    if (o) b->l = &o->lay;
    else st = mg_grad_layout_build(&b->lay, g, mg_comm_size(mg_comm_group(world, MG_COMM_DATA)),
                                   nm, 0), b->l = &b->lay;
    if (st == MG_OK) {
        b->level = mg_calloc((size_t)b->l->nbuckets + 1, sizeof *b->level);
        b->sel = mg_calloc(g->nt + 1, 1);
        if (!o) b->buf = mgk_alloc(b->mem, (size_t)(b->lay.numel + 1) * sizeof(float));
        if (!b->level || !b->sel || (!o && !b->buf)) st = MG_ERR_NOMEM;
    }
    if (st != MG_OK) {
        mg_grad_buckets_free(b);
        return st;
    }
    plan_levels(b, g);
    *out = b;
    return MG_OK;
}

void mg_grad_buckets_free(mg_grad_buckets *b)
{
    if (!b) return;
    mg_dist_layout_free(&b->lay);
    free(b->level);
    free(b->sel);
    if (b->buf) mgk_free(b->mem, b->buf);
    free(b);
}

int64_t mg_grad_buckets_count(const mg_grad_buckets *b) { return b->l->nbuckets; }

/* Bucket i: its tensors' model-parallel sums, then its data-parallel sum. */
static mg_status launch(mg_grad_buckets *b, int64_t i)
{
    const mg_dist_layout *l = b->l;
    mg_gpt *g = b->g;
    mg_comm *dp = mg_comm_group(b->world, MG_COMM_DATA);
    for (size_t j = 0; j < g->nt; j++) b->sel[j] = (unsigned char)(bucket_of(l, j) == i);
    MG_FORWARD(mg_gpt_sync_grads_of(g, b->world, b->sequence_parallel, b->sel));
    if (b->o) return mg_dist_reduce_bucket(b->o, g, b->k, dp, i, 1);
    int64_t n = l->bucket[i + 1] - l->bucket[i], size = mg_comm_size(dp);
    float *at = b->buf + l->bucket[i];
    mg_grad_bucket_copy(l, g, b->k, i, b->buf, g->grads, 0);
    if (size > 1) mgk_scale(b->k, at, n, 1.0f / (float)size);
    MG_FORWARD(mg_comm_async_follow(dp));
    return mg_comm_allreduce_sum_f32(dp, at, n);
}

void mg_grad_buckets_begin(mg_grad_buckets *b, mg_gpt *g, const mg_kctx *k)
{
    b->g = g;
    b->k = k;
    b->next = 0;
    b->failed = MG_OK;
}

/* model.h grads_ready: every complete bucket before the deferred ones, in order. */
static mg_status on_ready(void *ctx, int64_t progress)
{
    mg_grad_buckets *b = ctx;
    while (b->failed == MG_OK && b->next < b->deferred && progress <= b->level[b->next])
        b->failed = launch(b, b->next++);
    return b->failed;
}

void mg_grad_buckets_arm(mg_grad_buckets *b, mg_gpt *g)
{
    g->grads_ready = on_ready;
    g->grads_ready_ctx = b;
}

mg_status mg_grad_buckets_finish(mg_grad_buckets *b)
{
    MG_FORWARD(b->failed);
    while (b->next < b->l->nbuckets) MG_FORWARD(launch(b, b->next++));
    MG_FORWARD(mg_comm_async_join(mg_comm_group(b->world, MG_COMM_DATA)));
    if (b->o) b->o->grads_reduced = 1;
    else /* the reduced buckets back into the model's gradients */
        for (int64_t i = 0; i < b->l->nbuckets; i++)
            mg_grad_bucket_copy(b->l, b->g, b->k, i, b->buf, b->g->grads, 1);
    return MG_OK;
}

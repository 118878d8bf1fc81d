/* model.c — model.h: the parameter views of one rank (layout -> names, shard shapes,
 * offsets, init kinds, weight-decay flags) and the two fp32 buffers.
 *
 * Contract (model.h): tensors follow mg_schema_params' Megatron module order, filtered to
 * the stage (embeddings on the first stage, layers in range, final norm and output layer on
 * the last); offsets are rounded up to 16 floats; buffers start zeroed.
 */
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define ALIGN_FLOATS 16

mg_gpt_layout mg_gpt_layout_full(const mg_model_desc *m)
{
    mg_gpt_layout l = {1, 0, 0, m->num_layers, 1, 1};
    return l;
}

mgk_gelu_kind mg_gpt_default_gelu(const mg_model_desc *m)
{
    return m->add_bias_linear ? MGK_GELU_TANH : MGK_GELU_ERF;
}

int64_t mg_gpt_loss_vocab(const mg_gpt *g)
{
    return g->opt.mask_vocab_padding ? g->m.vocab_size : g->m.padded_vocab_size;
}

static int on_stage(const mg_param *p, const mg_gpt_layout *l)
{
    if (p->spec->stage == MG_STAGE_FIRST) return l->first_stage;
    if (p->spec->stage == MG_STAGE_LAST) return l->last_stage;
    return p->layer >= l->layer_first && p->layer < l->layer_first + l->layers;
}

static int ends_with(const char *s, const char *suffix)
{
    size_t n = strlen(s), k = strlen(suffix);
    return n >= k && strcmp(s + n - k, suffix) == 0;
}

static mg_gpt_init_kind init_kind(const mg_param *p)
{
    const char *key = p->spec->key;
    if (strstr(key, "norm")) return ends_with(key, ".bias") ? MG_INIT_ZERO : MG_INIT_ONE;
    if (ends_with(key, ".bias")) return MG_INIT_ZERO;
    if (strcmp(key, "proj.weight") == 0 || strcmp(key, "fc2.weight") == 0)
        return MG_INIT_SCALED;
    return MG_INIT_NORMAL;
}

/* First canonical row of the shard for the row-chunked split rules. */
static int64_t shard_row0(const mg_param *p, const mg_gpt_layout *l, int64_t rows)
{
    switch (p->spec->split) {
    case MG_SPLIT_VOCAB:
    case MG_SPLIT_COLUMN:
    case MG_SPLIT_QKV: return l->tp_rank * rows;
    default: return 0;
    }
}

static void fill_view(mg_gpt_tensor *v, const mg_gpt *g, const mg_param *p, int64_t *off)
{
    int64_t local = p->layer >= 0 ? p->layer - g->lay.layer_first : 0;
    v->param = *p;
    mg_schema_mcore_name(p, MG_NAMES_TE, local, v->name, sizeof v->name);
    mg_schema_shard_shape(p, &g->m, g->lay.tp, g->m.padded_vocab_size, v->shape, &v->ndim);
    v->numel = v->shape[0] * v->shape[1];
    v->offset = *off;
    v->row0 = shard_row0(p, &g->lay, v->shape[0]);
    v->decay = p->spec->ndim == 2;
    v->init = init_kind(p);
    *off += (v->numel + ALIGN_FLOATS - 1) / ALIGN_FLOATS * ALIGN_FLOATS;
}

static mg_status check_layout(const mg_model_desc *m, const mg_gpt_layout *l)
{
    MG_RETURN_IF(m->vocab_size <= 0 || m->padded_vocab_size < m->vocab_size, MG_ERR_ARG,
                 "model: the vocabulary size (%lld, padded %lld) is not set",
                 (long long)m->vocab_size, (long long)m->padded_vocab_size);
    MG_RETURN_IF(m->rope_scaling_factor != 0, MG_ERR_UNSUPPORTED,
                 "not supported yet: RoPE scaling (factor %g)", m->rope_scaling_factor);
    MG_RETURN_IF(l->tp < 1 || l->tp_rank < 0 || l->tp_rank >= l->tp, MG_ERR_ARG,
                 "model: tensor-parallel rank %lld of %lld", (long long)l->tp_rank,
                 (long long)l->tp);
    MG_RETURN_IF(m->padded_vocab_size % l->tp, MG_ERR_ARG,
                 "model: padded vocabulary %lld does not divide over %lld ranks",
                 (long long)m->padded_vocab_size, (long long)l->tp);
    MG_RETURN_IF(l->layer_first < 0 || l->layers < 0 ||
                     l->layer_first + l->layers > m->num_layers,
                 MG_ERR_ARG, "model: layers [%lld, %lld) outside the model's %lld",
                 (long long)l->layer_first, (long long)(l->layer_first + l->layers),
                 (long long)m->num_layers);
    return mg_schema_check_tp(m, l->tp);
}

/* The last stage's copy of the tied word embeddings (PP > 1; docs/FORMATS.md §5.3):
 * Megatron-Core's output_layer.weight there, initialised like the embeddings (same schema
 * entry, so the same values) and kept equal to them by the embedding-group gradient sum. */
static void add_tied_copy(mg_gpt *g, const mg_param *ps, size_t np, int64_t *off)
{
    if (!g->m.tied_embeddings || !g->lay.last_stage || g->lay.first_stage) return;
    for (size_t i = 0; i < np; i++) {
        if (strcmp(ps[i].spec->key, "word_embeddings.weight") != 0) continue;
        mg_gpt_tensor *v = &g->t[g->nt++];
        fill_view(v, g, &ps[i], off);
        snprintf(v->name, sizeof v->name, "output_layer.weight");
        v->tied_copy = 1;
        g->nparams += v->numel;
        return;
    }
}

static mg_status build_views(mg_gpt *g)
{
    mg_param *ps = NULL;
    size_t np = 0;
    MG_FORWARD(mg_schema_params(&g->m, &ps, &np));
    g->t = mg_calloc(np + 1, sizeof(*g->t));
    if (!g->t) {
        free(ps);
        return MG_ERR_NOMEM;
    }
    int64_t off = 0;
    for (size_t i = 0; i < np; i++) {
        if (!on_stage(&ps[i], &g->lay)) continue;
        fill_view(&g->t[g->nt], g, &ps[i], &off);
        g->nparams += g->t[g->nt].numel;
        g->nt++;
    }
    add_tied_copy(g, ps, np, &off);
    free(ps);
    g->numel = off;
    return MG_OK;
}

static mg_status create(mg_gpt **out, const mg_model_desc *m, const mg_gpt_layout *lay,
                        const mg_gpt_opts *opt, int buffers, mgk_backend mem)
{
    *out = NULL;
    MG_FORWARD(check_layout(m, lay));
    mg_gpt *g = mg_calloc(1, sizeof(*g));
    if (!g) return MG_ERR_NOMEM;
    mg_status st = mg_model_copy(&g->m, m);
    g->lay = *lay;
    g->opt = *opt;
    g->mem = mem;
    if (st == MG_OK) st = build_views(g);
    if (st == MG_OK && buffers) {
        size_t bytes = (size_t)g->numel * sizeof(float);
        g->params = mgk_alloc(mem, bytes);
        g->grads = mgk_alloc(mem, bytes);
        if (!g->params || !g->grads) st = MG_ERR_NOMEM;
    }
    if (st != MG_OK) {
        mg_gpt_free(g);
        return st;
    }
    *out = g;
    return MG_OK;
}

mg_status mg_gpt_create(mg_gpt **out, const mg_model_desc *m, const mg_gpt_layout *lay,
                        const mg_gpt_opts *opt)
{
    return create(out, m, lay, opt, 1, MGK_CPU_FAST);
}

mg_status mg_gpt_create_on(mg_gpt **out, const mg_model_desc *m, const mg_gpt_layout *lay,
                           const mg_gpt_opts *opt, mgk_backend mem)
{
    return create(out, m, lay, opt, 1, mem);
}

mg_status mg_gpt_create_views(mg_gpt **out, const mg_model_desc *m, const mg_gpt_layout *lay)
{
    mg_gpt_opts opt = {MGK_GELU_TANH, 0.02, 0, 0, 0};
    return create(out, m, lay, &opt, 0, MGK_CPU_FAST);
}

void mg_gpt_free(mg_gpt *g)
{
    if (!g) return;
    mg_model_free(&g->m);
    free(g->t);
    mgk_free(g->mem, g->params);
    mgk_free(g->mem, g->grads);
    mgk_free(g->mem, g->params16);
    free(g);
}

const mg_gpt_tensor *mg_gpt_find(const mg_gpt *g, const char *name)
{
    for (size_t i = 0; i < g->nt; i++)
        if (strcmp(g->t[i].name, name) == 0) return &g->t[i];
    return NULL;
}

int mg_gpt_tensor_in_norm(const mg_gpt *g, const mg_gpt_tensor *t)
{
    if (t->tied_copy) return 0;
    return t->param.spec->split != MG_SPLIT_REPLICATED || g->lay.tp_rank == 0;
}

int mg_gpt_tensor_sp_reduced(const mg_gpt_tensor *t)
{
    return t->param.spec->split == MG_SPLIT_REPLICATED &&
           strcmp(t->param.spec->key, "position_embeddings.weight") != 0;
}

void mg_gpt_zero_grads(mg_gpt *g)
{
    MG_ASSERT(g->mem != MGK_CUDA); /* device gradients: mgk_zero on the step's context */
    memset(g->grads, 0, (size_t)g->numel * sizeof(float));
}

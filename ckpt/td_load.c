/* td_load.c — Megatron `torch_dist` loader: metadata.json, the DCP folder (mg/dcp.h: the
 * .metadata and the mapped __R_K.distcp files), the common state (common.pt, or the newer
 * `common_state/shard_0_1` byte object), and every canonical parameter bound to the chunks
 * of its global tensor (stacked `decoder.layers.X` keys with a leading layer axis, or
 * per-layer `decoder.layers.N.X` keys; TransformerEngine or local names).
 *
 * Contract (ckpt.h): canonical element (row, col) of a parameter is global element
 * ([layer,] row[, col]) of its key: the global tensors are Megatron's unsplit ones, so
 * whatever TP/PP/DP layout wrote the chunks, they are read the same way. Checked: the
 * backend, every key's dtype (floating) and global shape against the schema (vocabulary
 * tensors: padded rows >= the true vocabulary), the chunks' geometry and bytes (mg/dcp.h).
 * `_extra_state` objects and the RNG and scheduler state are dropped and listed; optimizer
 * state is refused unless --drop-optimizer-state; any other key is refused.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt.h"
#include "mg/dcp.h"
#include "mg/file.h"
#include "mg/mcore_dist.h"
#include "mg/torchfile.h"

typedef struct {
    const mg_dcp_item *it;
    int64_t layer;              /* position on the stacked layer axis; -1: not stacked */
    const mg_dcp_chunk **ch;    /* the chunks holding part of this parameter */
    size_t nch;
} binding;

typedef struct {
    mg_dcp_dir *d;
    binding *b;                 /* per parameter */
    unsigned char *used;        /* per item */
    mg_torch_file *common;      /* common.pt, or the common_state archive */
    char dir[4096];             /* the iteration folder */
} td_impl;

/* ---- locating ---- */

static int inside(const mg_dcp_chunk *c, const int64_t *g, int n)
{
    for (int d = 0; d < n; d++)
        if (g[d] < c->off[d] || g[d] >= c->off[d] + c->len[d]) return 0;
    return 1;
}

static void td_locate(const ck_source *s, size_t pi, int64_t row, int64_t col, ck_loc *loc)
{
    const td_impl *h = s->impl;
    const binding *b = &h->b[pi];
    int64_t g[3];
    int n = 0;
    if (b->layer >= 0) g[n++] = b->layer;
    g[n++] = row;
    if (s->params[pi].spec->ndim == 2) g[n++] = col;
    for (size_t i = 0; i < b->nch; i++) {
        const mg_dcp_chunk *c = b->ch[i];
        if (!inside(c, g, n)) continue;
        int64_t e = 0;
        for (int d = 0; d < n; d++) e = e * c->len[d] + (g[d] - c->off[d]);
        size_t es = mg_tdtype_size(b->it->dtype);
        loc->p = c->data + (size_t)e * es;
        loc->step = (int64_t)es;
        loc->avail = n == 0 ? 1 : c->off[n - 1] + c->len[n - 1] - g[n - 1];
        if (s->params[pi].spec->ndim == 1) loc->avail = 1;
        loc->dtype = b->it->dtype;
        return;
    }
    MG_ASSERT(!"a canonical element outside every chunk"); /* the chunks cover (mg/dcp.h) */
}

static void td_release(const ck_source *s, size_t pi)
{
    const td_impl *h = s->impl;
    const binding *b = &h->b[pi];
    for (size_t i = 0; i < b->nch; i++)
        ck_release_pages(b->ch[i]->data, (size_t)mg_dcp_volume(b->it->ndim, b->ch[i]->len) *
                                             mg_tdtype_size(b->it->dtype));
}

static int td_file_of(const ck_source *s, const uint8_t *p, int *fd, uint64_t *off)
{
    const td_impl *h = s->impl;
    const mg_dcp_meta *m = mg_dcp_dir_meta(h->d);
    for (size_t i = 0; i < m->nfiles; i++) {
        size_t n = 0;
        const uint8_t *base = mg_dcp_dir_file(h->d, i, &n, fd);
        if (*fd < 0 || !base || p < base || p >= base + n) continue;
        *off = (uint64_t)(p - base);
        return 1;
    }
    return 0;
}

static void td_close(ck_source *s)
{
    td_impl *h = s->impl;
    if (!h) return;
    for (size_t i = 0; h->b && i < s->nparams; i++) free(h->b[i].ch);
    free(h->b);
    free(h->used);
    mg_torch_close(h->common);
    mg_dcp_dir_close(h->d);
    free(h);
}

/* ---- opening ---- */

static mg_status read_args(ck_source *s, td_impl *h, const mg_pk_obj *common, const ck_opts *o)
{
    char label[4300];
    snprintf(label, sizeof label, "%s (common state)", h->dir);
    mg_pk_obj *args = mg_pk_get(common, "args");
    MG_RETURN_IF(!args, MG_ERR_FORMAT, "%s: no 'args' Namespace", label);
    MG_FORWARD(mg_model_from_args(&s->m, args, label));
    s->args = args;
    s->tp = s->m.tp > 0 ? s->m.tp : 1;
    s->pp = s->m.pp > 0 ? s->m.pp : 1;
    const mg_dcp_item *emb = mg_dcp_find(mg_dcp_dir_meta(h->d), "embedding.word_embeddings.weight");
    MG_RETURN_IF(!emb || emb->is_bytes || emb->ndim != 2, MG_ERR_FORMAT,
                 "%s: no 2-D tensor embedding.word_embeddings.weight", h->dir);
    s->m.padded_vocab_size = emb->size[0]; /* what is stored, whatever args say */
    if (o->true_vocab > 0) s->m.vocab_size = o->true_vocab;
    if (s->m.vocab_size <= 0) {
        s->vocab_unknown = 1;
        s->m.vocab_size = emb->size[0];
    }
    MG_RETURN_IF(s->m.vocab_size > emb->size[0], MG_ERR_FORMAT, "%s: vocabulary %lld larger than "
                 "the stored embedding rows %lld", h->dir, (long long)s->m.vocab_size,
                 (long long)emb->size[0]);
    return MG_OK;
}

static mg_status check_shape(const ck_source *s, const mg_param *p, const mg_dcp_item *it,
                             int stacked)
{
    int nd = p->spec->ndim + stacked, ok = !it->is_bytes && it->ndim == nd;
    if (ok && stacked) ok = it->size[0] == s->m.num_layers;
    int64_t rows = ok ? it->size[stacked] : 0;
    if (ok) ok = p->spec->split == MG_SPLIT_VOCAB ? rows >= p->rows : rows == p->rows;
    if (ok && p->spec->ndim == 2) ok = it->size[stacked + 1] == p->cols;
    MG_RETURN_IF(!ok, MG_ERR_FORMAT, "%s/.metadata: pickle offset %zu: %s: global shape does not "
                 "match the model in args (%lld x %lld%s)", ((const td_impl *)s->impl)->dir, it->at,
                 it->key, (long long)p->rows, (long long)p->cols, stacked ? ", stacked over layers" : "");
    MG_RETURN_IF(it->dtype != MG_TD_F32 && it->dtype != MG_TD_BF16 && it->dtype != MG_TD_F16,
                 MG_ERR_UNSUPPORTED, "not supported yet: %s has dtype %s", it->key,
                 mg_tdtype_name(it->dtype));
    return MG_OK;
}

static mg_status bind(ck_source *s, td_impl *h, size_t pi)
{
    const mg_param *p = &s->params[pi];
    binding *b = &h->b[pi];
    char name[512];
    int stacked = 0;
    b->it = mg_mcore_dist_find(mg_dcp_dir_meta(h->d), p, &stacked, name, sizeof name);
    MG_RETURN_IF(!b->it, MG_ERR_FORMAT, "%s/.metadata: tensor %s is missing", h->dir, name);
    MG_FORWARD(check_shape(s, p, b->it, stacked));
    h->used[b->it - mg_dcp_dir_meta(h->d)->items] = 1;
    b->layer = stacked ? p->layer : -1;
    b->ch = mg_calloc(b->it->nchunks ? b->it->nchunks : 1, sizeof(*b->ch));
    if (!b->ch) return MG_ERR_NOMEM;
    for (size_t i = 0; i < b->it->nchunks; i++) {
        const mg_dcp_chunk *c = &b->it->chunks[i];
        int vol = mg_dcp_volume(b->it->ndim, c->len) > 0;
        if (vol && (!stacked || (c->off[0] <= p->layer && p->layer < c->off[0] + c->len[0])))
            b->ch[b->nch++] = c;
    }
    return MG_OK;
}

static int starts(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* Items no parameter used: extra states, RNG state, optimizer state (with the flag). */
static mg_status leftovers(ck_source *s, td_impl *h, const ck_opts *o)
{
    const mg_dcp_meta *m = mg_dcp_dir_meta(h->d);
    size_t extra = 0, optim = 0, rng = 0;
    for (size_t i = 0; i < m->nitems; i++) {
        const char *k = m->items[i].key;
        if (h->used[i] || starts(k, "common_state/")) continue;
        if (strstr(k, "._extra_state")) extra++;
        else if (starts(k, "rng_state")) rng++;
        else if (starts(k, "optimizer.")) optim++;
        else
            return mg_error_set(MG_ERR_UNSUPPORTED, "not supported yet: %s in %s/.metadata is not "
                                "part of the %s schema", k, h->dir, mg_arch_name(s->m.arch));
    }
    MG_RETURN_IF(optim && !ck_drops_optimizer(o), MG_ERR_UNSUPPORTED, "not supported yet: converting "
                 "optimizer state (%zu optimizer.* keys in %s); pass --drop-optimizer-state to "
                 "drop it", optim, h->dir);
    if (optim) MG_FORWARD(ck_source_drop(s, "%zu optimizer.* keys (%s): optimizer state", optim, h->dir));
    if (extra) MG_FORWARD(ck_source_drop(s, "%zu _extra_state objects (%s): TransformerEngine/"
                                         "linear metadata", extra, h->dir));
    if (rng) MG_FORWARD(ck_source_drop_notable(s, "rng_state (%zu objects, %s): training state",
                                               rng, h->dir));
    return MG_OK;
}

/* The common state's training entries, as the torch loader lists them. */
static mg_status common_leftovers(ck_source *s, const td_impl *h, const mg_pk_obj *common,
                                  const ck_opts *o)
{
    static const char *const extra[] = {"rng_state", "opt_param_scheduler", "lr_scheduler",
                                        "rerun_state_machine"};
    for (int i = 0; i < 4; i++)
        if (mg_pk_get(common, extra[i]))
            MG_FORWARD(ck_source_drop_notable(s, "%s (%s common state): training state", extra[i], h->dir));
    const mg_pk_obj *opt = mg_pk_get(common, "optimizer");
    if (!opt || opt->kind == MG_PK_NONE) return MG_OK;
    MG_RETURN_IF(!ck_drops_optimizer(o), MG_ERR_UNSUPPORTED, "not supported yet: converting optimizer "
                 "state (%s common state); pass --drop-optimizer-state to drop it", h->dir);
    return ck_source_drop(s, "optimizer (%s common state): optimizer state", h->dir);
}

static mg_status load_all(ck_source *s, td_impl *h, const char *iterpath, const char *what,
                          const ck_opts *o)
{
    snprintf(h->dir, sizeof h->dir, "%s", iterpath);
    snprintf(s->format, sizeof s->format, "megatron torch_dist (%s)", what);
    MG_FORWARD(mg_mcore_dist_check(iterpath));
    MG_FORWARD(mg_dcp_dir_open(&h->d, iterpath));
    mg_pk_obj *common = NULL;
    MG_FORWARD(mg_mcore_dist_common(h->dir, h->d, &h->common, &common));
    MG_FORWARD(read_args(s, h, common, o));
    MG_FORWARD(ck_source_params(s));
    const mg_dcp_meta *m = mg_dcp_dir_meta(h->d);
    h->b = mg_calloc(s->nparams ? s->nparams : 1, sizeof(*h->b));
    h->used = mg_calloc(m->nitems ? m->nitems : 1, 1);
    if (!h->b || !h->used) return MG_ERR_NOMEM;
    for (size_t i = 0; i < s->nparams; i++) MG_FORWARD(bind(s, h, i));
    s->m.dtype = h->b[0].it->dtype; /* what the tensors hold, whatever args say */
    MG_FORWARD(common_leftovers(s, h, common, o));
    return leftovers(s, h, o);
}

mg_status ck_td_open(ck_source **out, const char *iterpath, const char *what, const ck_opts *o)
{
    ck_source *s = ck_source_alloc(sizeof(td_impl));
    if (!s) return MG_ERR_NOMEM;
    s->locate = td_locate;
    s->close = td_close;
    s->release = td_release;
    s->file_of = td_file_of;
    mg_status st = load_all(s, s->impl, iterpath, what, o);
    if (st != MG_OK) {
        ck_source_free(s);
        return st;
    }
    *out = s;
    return MG_OK;
}

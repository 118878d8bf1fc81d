/* dist_optim_load.c — dist_optim.h: megatron-core's distrib_optim.pt read back into the model
 * layout (mg_dist_read_state).
 *
 * The file holds the buckets of the buffer one after the other, each cut at its
 * numel_unpadded (get_parameter_state_dp_zero). Buckets start at multiples of lcm(DP, 128),
 * a multiple of 128, and parameters at multiples of 64 from there: the coalesced tensors are
 * the same for every data-parallel size, so the layout of DP 1 reads the file of any DP.
 */
#include "dist_optim.h"

#include <stdlib.h>
#include <string.h>

#include "mg/pickle.h"
#include "mg/torchfile.h"

static const char *const state_keys[3] = {"param", "exp_avg", "exp_avg_sq"};

static int is_dict(const mg_pk_obj *x)
{
    return x && (x->kind == MG_PK_DICT || x->kind == MG_PK_ODICT);
}

/* root[0][(param dtype, grad dtype)]: the one buffer's state dict. */
static mg_status buffer_state(const char *path, const mg_pk_obj *root, const mg_pk_obj **out)
{
    MG_RETURN_IF(!is_dict(root), MG_ERR_FORMAT, "%s: the pickled object is a %s, not a dict",
                 path, mg_pk_kind_name(root->kind));
    const mg_pk_obj *co = mg_pk_get(root, "buckets_coalesced");
    MG_RETURN_IF(!co || co->kind != MG_PK_BOOL || !co->i, MG_ERR_UNSUPPORTED,
                 "not supported yet: %s without buckets_coalesced (megatron-core's format "
                 "before February 2024)", path);
    const mg_pk_obj *buf0 = NULL;
    for (size_t i = 0; i < root->n; i++) {
        const mg_pk_obj *k = root->items[2 * i];
        if (k->kind == MG_PK_STR && !strcmp(k->str, "buckets_coalesced")) continue;
        MG_RETURN_IF(k->kind != MG_PK_INT || k->i != 0, MG_ERR_UNSUPPORTED,
                     "not supported yet: %s holds more than one gradient buffer (expert or "
                     "mixed-dtype parameters)", path);
        buf0 = root->items[2 * i + 1];
    }
    MG_RETURN_IF(!is_dict(buf0) || buf0->n != 1, MG_ERR_FORMAT,
                 "%s: expected one buffer 0 keyed by (param dtype, grad dtype)", path);
    const mg_pk_obj *key = buf0->items[0], *st = buf0->items[1];
    MG_RETURN_IF(key->kind != MG_PK_TUPLE || key->n != 2 || !is_dict(st), MG_ERR_FORMAT,
                 "%s: buffer 0 is not keyed by a (param dtype, grad dtype) tuple", path);
    *out = st;
    return MG_OK;
}

/* The world tensor `what` of st: fp32, one dimension of n elements, inside its storage. */
static mg_status world_tensor(const char *path, const mg_pk_obj *st, const char *what,
                              int64_t n, const uint8_t **out)
{
    const mg_pk_obj *x = mg_pk_get(st, what);
    MG_RETURN_IF(!x || x->kind != MG_PK_TENSOR, MG_ERR_FORMAT, "%s: '%s' is missing or not a "
                 "tensor", path, what);
    const mg_pk_tensor *t = x->tensor;
    MG_RETURN_IF(t->dtype != MG_TD_F32 || t->ndim != 1, MG_ERR_FORMAT,
                 "%s: '%s' is not a one-dimensional float32 tensor", path, what);
    MG_RETURN_IF(t->size[0] != n, MG_ERR_FORMAT, "%s: '%s' has %lld elements, the model's "
                 "buffer %lld (a checkpoint of another model or layout)", path, what,
                 (long long)t->size[0], (long long)n);
    MG_RETURN_IF(!t->data || t->offset < 0 || (n > 1 && t->stride[0] != 1) ||
                     t->offset + n > t->storage_numel,
                 MG_ERR_FORMAT, "%s: '%s': not a contiguous tensor inside its storage", path,
                 what);
    *out = t->data + (size_t)t->offset * sizeof(float);
    return MG_OK;
}

/* The coalesced world tensor src back into the model layout dst (the inverse of coalesce). */
static void uncoalesce(const mg_dist_layout *l, const mg_gpt *g, const uint8_t *src,
                       float *buf, float *dst)
{
    memset(buf, 0, (size_t)l->numel * sizeof(float));
    for (int64_t b = 0, at = 0; b < l->nbuckets; at += l->unpadded[b], b++)
        memcpy(buf + l->bucket[b], src + (size_t)at * sizeof(float), (size_t)l->unpadded[b] * sizeof(float));
    for (size_t j = 0; j < g->nt; j++)
        memcpy(dst + g->t[j].offset, buf + l->start[j], (size_t)g->t[j].numel * sizeof(float));
}

static mg_status read_root(const mg_dist_layout *l, const mg_gpt *g, const char *path,
                           const mg_pk_obj *root, float *params, mg_gpt_optim *full)
{
    const mg_pk_obj *st = NULL;
    MG_FORWARD(buffer_state(path, root, &st));
    int64_t n = 0;
    for (int64_t b = 0; b < l->nbuckets; b++) n += l->unpadded[b];
    const mg_pk_obj *nu = mg_pk_get(st, "numel_unpadded");
    MG_RETURN_IF(!nu || nu->kind != MG_PK_INT, MG_ERR_FORMAT, "%s: numel_unpadded is missing",
                 path);
    MG_RETURN_IF(nu->i != n, MG_ERR_FORMAT, "%s: numel_unpadded is %lld, the model's buffer "
                 "%lld (a checkpoint of another model or layout)", path, (long long)nu->i,
                 (long long)n);
    const uint8_t *src[3];
    for (int k = 0; k < 3; k++) MG_FORWARD(world_tensor(path, st, state_keys[k], n, &src[k]));
    float *buf = mg_malloc((size_t)(l->numel ? l->numel : 1) * sizeof(float));
    if (!buf) return MG_ERR_NOMEM;
    float *dst[3] = {params, full->m, full->v};
    for (int k = 0; k < 3; k++) uncoalesce(l, g, src[k], buf, dst[k]);
    free(buf);
    return MG_OK;
}

mg_status mg_dist_read_state_root(const mg_gpt *g, mg_names nm, const char *path,
                                  const mg_pk_obj *root, float *params, mg_gpt_optim *full)
{
    mg_dist_layout l;
    MG_FORWARD(mg_dist_layout_build(&l, g, 1, nm));
    mg_status s = read_root(&l, g, path, root, params, full);
    mg_dist_layout_free(&l);
    return s;
}

mg_status mg_dist_read_state(const mg_gpt *g, mg_names nm, const char *path, float *params,
                             mg_gpt_optim *full)
{
    mg_torch_file *f = NULL;
    MG_FORWARD(mg_torch_open(&f, path));
    mg_status s = mg_dist_read_state_root(g, nm, path, mg_torch_root(f), params, full);
    mg_torch_close(f);
    return s;
}

/* distrib_optim.c — mg/distrib_optim.h: the structure of megatron-core's distrib_optim.pt. */
#include "mg/distrib_optim.h"

#include <string.h>

#include "mg/torchfile.h"

const char *const mg_distrib_optim_keys[3] = {"param", "exp_avg", "exp_avg_sq"};

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
    MG_RETURN_IF(t->size[0] != n, MG_ERR_FORMAT, "%s: '%s' has %lld elements, numel_unpadded "
                 "says %lld", path, what, (long long)t->size[0], (long long)n);
    MG_RETURN_IF(!t->data || t->offset < 0 || t->offset > t->storage_numel ||
                     (n > 1 && t->stride[0] != 1) || n > t->storage_numel - t->offset,
                 MG_ERR_FORMAT, "%s: '%s': not a contiguous tensor inside its storage", path,
                 what);
    *out = t->data + (size_t)t->offset * sizeof(float);
    return MG_OK;
}

mg_status mg_distrib_optim_read(const char *path, const mg_pk_obj *root,
                                 mg_distrib_optim_world *w)
{
    const mg_pk_obj *st = NULL;
    memset(w, 0, sizeof *w);
    MG_FORWARD(buffer_state(path, root, &st));
    const mg_pk_obj *nu = mg_pk_get(st, "numel_unpadded");
    MG_RETURN_IF(!nu || nu->kind != MG_PK_INT || nu->i < 0, MG_ERR_FORMAT,
                 "%s: numel_unpadded is missing or negative", path);
    for (int k = 0; k < 3; k++)
        MG_FORWARD(world_tensor(path, st, mg_distrib_optim_keys[k], nu->i, &w->t[k]));
    w->n = nu->i;
    return MG_OK;
}

/* {'buckets_coalesced': True, 0: {(param_dtype, torch.float32): {param, exp_avg, exp_avg_sq,
 * numel_unpadded}}} over world (not copied: it must outlive the save). */
static mg_status save_root(mg_pk_graph *pg, mg_tdtype param_dtype, int64_t n,
                           float *const world[3], mg_pk_obj **root)
{
    mg_pk_obj *r = mg_pk_container(pg, MG_PK_DICT), *gbuf = mg_pk_container(pg, MG_PK_DICT);
    mg_pk_obj *t = mg_pk_container(pg, MG_PK_DICT), *key = mg_pk_container(pg, MG_PK_TUPLE);
    if (!r || !gbuf || !t || !key) return MG_ERR_NOMEM;
    /* (buffer.param_dtype, buffer.grad_dtype) */
    MG_FORWARD(mg_pk_append(pg, key, mg_pk_global(pg, "torch",
                                                  mg_pk_torch_dtype_name(param_dtype))));
    MG_FORWARD(mg_pk_append(pg, key, mg_pk_global(pg, "torch", "float32")));
    for (int k = 0; k < 3; k++) {
        mg_pk_obj *x = mg_pk_tensor_new(pg, MG_TD_F32, 1, &n, world[k]);
        if (!x) return MG_ERR_NOMEM;
        MG_FORWARD(mg_pk_set(pg, t, mg_distrib_optim_keys[k], x));
    }
    MG_FORWARD(mg_pk_set(pg, t, "numel_unpadded", mg_pk_int(pg, n)));
    MG_FORWARD(mg_pk_set_obj(pg, gbuf, key, t));
    MG_FORWARD(mg_pk_set(pg, r, "buckets_coalesced", mg_pk_bool(pg, 1)));
    MG_FORWARD(mg_pk_set_obj(pg, r, mg_pk_int(pg, 0), gbuf));
    *root = r;
    return MG_OK;
}

mg_status mg_distrib_optim_save(const char *path, mg_tdtype param_dtype, int64_t n,
                                float *const world[3])
{
    mg_pk_graph *pg = mg_pk_graph_create();
    if (!pg) return MG_ERR_NOMEM;
    mg_pk_obj *root = NULL;
    mg_status st = save_root(pg, param_dtype, n, world, &root);
    mg_torch_save_opts so = {.archive_name = "distrib_optim"};
    if (st == MG_OK) st = mg_torch_save(path, root, &so);
    mg_pk_graph_free(pg);
    return st;
}

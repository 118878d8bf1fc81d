/* dcp_meta_read.c — mg/dcp.h: mg_dcp_meta_load, the `.metadata` pickle of a DCP checkpoint
 * turned into items and chunks with their storage, and checked.
 *
 * Contract (mg/dcp.h): objects are recognised by class name (Metadata, TensorStorageMetadata,
 * BytesStorageMetadata, TensorProperties, ChunkStorageMetadata, MetadataIndex, _StorageInfo,
 * torch.Size), whatever module PyTorch kept them in; a dataclass is an MG_PK_OBJECT whose
 * BUILD state is its field dict (TensorProperties: a tuple starting with the dtype, or a
 * dict). Everything else in the graph (all_local_plans, storage_meta, Megatron's extras) is
 * not looked at. Messages carry the pickle offset of the offending object.
 */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/dcp.h"
#include "mg/pickle.h"

typedef struct {
    mg_dcp_meta *m;
    const char *label;
    mg_dcp_item **order; /* items sorted by key */
} parser;

static mg_status fail(const parser *p, const mg_pk_obj *o, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static mg_status fail(const parser *p, const mg_pk_obj *o, const char *fmt, ...)
{
    char msg[700];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return mg_error_set(MG_ERR_FORMAT, "%s: pickle offset %zu: %s", p->label, o ? o->at : 0, msg);
}

/* Class name of a dataclass/REDUCE object, "" otherwise. */
static const char *class_of(const mg_pk_obj *o)
{
    if (!o || o->kind != MG_PK_OBJECT || !o->callable || o->callable->kind != MG_PK_GLOBAL) return "";
    return o->callable->name;
}

static const char *module_of(const mg_pk_obj *o)
{
    return class_of(o)[0] ? o->callable->str : "";
}

/* The field dict of dataclass o of class cls, or NULL. */
static const mg_pk_obj *fields_of(const mg_pk_obj *o, const char *cls)
{
    if (strcmp(class_of(o), cls) != 0 || !o->state || o->state->kind != MG_PK_DICT) return NULL;
    return o->state;
}

static int as_int(const mg_pk_obj *o, int64_t *v)
{
    if (!o || (o->kind != MG_PK_INT && o->kind != MG_PK_BOOL)) return 0;
    *v = o->i;
    return 1;
}

/* torch.Size((a, b, ...)) (or a plain tuple/list) of non-negative ints -> v[0..*n). */
static mg_status shape_of(const parser *p, const mg_pk_obj *o, const char *key, const char *what,
                          int64_t *v, int *n)
{
    const mg_pk_obj *t = o;
    if (o && !strcmp(class_of(o), "Size")) t = o->args && o->args->n == 1 ? o->args->items[0] : NULL;
    if (!t || (t->kind != MG_PK_TUPLE && t->kind != MG_PK_LIST))
        return fail(p, o, "%s: %s is not a torch.Size", key, what);
    if (t->n > MG_DCP_MAX_DIMS)
        return mg_error_set(MG_ERR_UNSUPPORTED, "%s: pickle offset %zu: not supported yet: %s has "
                            "%zu dimensions (at most %d)", p->label, t->at, key, t->n, MG_DCP_MAX_DIMS);
    for (size_t i = 0; i < t->n; i++)
        if (!as_int(t->items[i], &v[i]) || v[i] < 0 || v[i] > (INT64_C(1) << 48))
            return fail(p, t, "%s: %s entry %zu is not a size", key, what, i);
    *n = (int)t->n;
    return MG_OK;
}

static mg_status dtype_of(const parser *p, const mg_pk_obj *props, const char *key, mg_tdtype *dt)
{
    const mg_pk_obj *d = NULL;
    if (strcmp(class_of(props), "TensorProperties") != 0 || !props->state)
        return fail(p, props, "%s: properties are a %s, not TensorProperties", key,
                    class_of(props)[0] ? class_of(props) : mg_pk_kind_name(props ? props->kind : MG_PK_NONE));
    if (props->state->kind == MG_PK_TUPLE && props->state->n >= 1) d = props->state->items[0];
    else if (props->state->kind == MG_PK_DICT) d = mg_pk_get(props->state, "dtype");
    if (!d || d->kind != MG_PK_GLOBAL || strcmp(d->str, "torch") != 0)
        return fail(p, props, "%s: no torch dtype in its TensorProperties", key);
    *dt = mg_pk_torch_dtype(d->name);
    if (*dt == MG_TD_INVALID)
        return mg_error_set(MG_ERR_UNSUPPORTED, "%s: pickle offset %zu: not supported yet: %s has "
                            "dtype torch.%s", p->label, d->at, key, d->name);
    return MG_OK;
}

static mg_status add_chunks(const parser *p, mg_dcp_item *it, const mg_pk_obj *list)
{
    if (!list || list->kind != MG_PK_LIST) return fail(p, list, "%s: chunks are not a list", it->key);
    for (size_t i = 0; i < list->n; i++) {
        const mg_pk_obj *f = fields_of(list->items[i], "ChunkStorageMetadata");
        if (!f) return fail(p, list->items[i], "%s: chunk %zu is not a ChunkStorageMetadata", it->key, i);
        int64_t off[MG_DCP_MAX_DIMS], len[MG_DCP_MAX_DIMS];
        int n1 = 0, n2 = 0;
        MG_FORWARD(shape_of(p, mg_pk_get(f, "offsets"), it->key, "a chunk's offsets", off, &n1));
        MG_FORWARD(shape_of(p, mg_pk_get(f, "sizes"), it->key, "a chunk's sizes", len, &n2));
        if (n1 != it->ndim || n2 != it->ndim)
            return fail(p, list->items[i], "%s: a chunk has %d/%d dimensions, the tensor %d", it->key,
                        n1, n2, it->ndim);
        for (int d = 0; d < it->ndim; d++)
            if (off[d] + len[d] > it->size[d])
                return fail(p, list->items[i], "%s: a chunk ends at %lld in dimension %d, past the "
                            "tensor's size %lld", it->key, (long long)(off[d] + len[d]), d,
                            (long long)it->size[d]);
        if (!mg_dcp_add_chunk(it, off, len)) return MG_ERR_NOMEM;
    }
    return MG_OK;
}

static mg_status add_tensor(const parser *p, const char *key, const mg_pk_obj *v)
{
    const mg_pk_obj *f = fields_of(v, "TensorStorageMetadata");
    if (!f) return fail(p, v, "%s: TensorStorageMetadata without fields", key);
    mg_tdtype dt;
    int64_t size[MG_DCP_MAX_DIMS];
    int nd = 0;
    MG_FORWARD(dtype_of(p, mg_pk_get(f, "properties"), key, &dt));
    MG_FORWARD(shape_of(p, mg_pk_get(f, "size"), key, "the size", size, &nd));
    int64_t vol = 1;
    for (int d = 0; d < nd; d++)
        if (__builtin_mul_overflow(vol, size[d], &vol) || vol > (INT64_C(1) << 56))
            return fail(p, v, "%s: a tensor of more than 2^56 elements", key);
    mg_dcp_item *it = mg_dcp_add_tensor(p->m, key, dt, nd, size);
    if (!it) return MG_ERR_NOMEM;
    it->at = v->at;
    return add_chunks(p, it, mg_pk_get(f, "chunks"));
}

static mg_status add_items(const parser *p, const mg_pk_obj *sdm)
{
    if (!sdm || sdm->kind != MG_PK_DICT) return fail(p, sdm, "state_dict_metadata is not a dict");
    for (size_t i = 0; i < sdm->n; i++) {
        const mg_pk_obj *k = sdm->items[2 * i], *v = sdm->items[2 * i + 1];
        if (k->kind != MG_PK_STR) return fail(p, k, "a state_dict_metadata key is a %s", mg_pk_kind_name(k->kind));
        const char *cls = class_of(v);
        if (!strcmp(cls, "TensorStorageMetadata")) MG_FORWARD(add_tensor(p, k->str, v));
        else if (!strcmp(cls, "BytesStorageMetadata")) {
            mg_dcp_item *it = mg_dcp_add_bytes(p->m, k->str);
            if (!it) return MG_ERR_NOMEM;
            it->at = v->at;
        } else if (cls[0])
            return fail(p, v, "%s: unknown class %s.%s (expected TensorStorageMetadata or "
                        "BytesStorageMetadata)", k->str, module_of(v), cls);
        else
            return fail(p, v, "%s: a %s where storage metadata was expected", k->str, mg_pk_kind_name(v->kind));
    }
    return MG_OK;
}

static int cmp_key(const void *a, const void *b)
{
    return strcmp((*(mg_dcp_item *const *)a)->key, (*(mg_dcp_item *const *)b)->key);
}

static int cmp_box(const void *a, const void *b)
{
    const mg_dcp_chunk *x = a, *y = b;
    for (int d = 0; d < MG_DCP_MAX_DIMS; d++)
        if (x->off[d] != y->off[d]) return x->off[d] < y->off[d] ? -1 : 1;
    return 0;
}

/* Sorted key index (duplicate keys refused) and chunks sorted by offset. */
static mg_status index_items(parser *p)
{
    mg_dcp_meta *m = p->m;
    p->order = mg_malloc((m->nitems ? m->nitems : 1) * sizeof(*p->order));
    if (!p->order) return MG_ERR_NOMEM;
    for (size_t i = 0; i < m->nitems; i++) p->order[i] = &m->items[i];
    qsort(p->order, m->nitems, sizeof(*p->order), cmp_key);
    for (size_t i = 1; i < m->nitems; i++)
        if (!strcmp(p->order[i]->key, p->order[i - 1]->key))
            return mg_error_set(MG_ERR_FORMAT, "%s: pickle offset %zu: %s appears twice in "
                                "state_dict_metadata", p->label, p->order[i]->at, p->order[i]->key);
    for (size_t i = 0; i < m->nitems; i++)
        if (m->items[i].nchunks > 1)
            qsort(m->items[i].chunks, m->items[i].nchunks, sizeof(mg_dcp_chunk), cmp_box);
    return MG_OK;
}

static mg_dcp_item *item_of(const parser *p, const char *key)
{
    size_t lo = 0, hi = p->m->nitems;
    while (lo < hi) {
        size_t mid = (lo + hi) / 2;
        int c = strcmp(p->order[mid]->key, key);
        if (c == 0) return p->order[mid];
        if (c < 0) lo = mid + 1;
        else hi = mid;
    }
    return NULL;
}

/* The chunk of `it` whose box starts at off, or NULL. */
static mg_dcp_chunk *chunk_at(mg_dcp_item *it, const int64_t *off, int n)
{
    mg_dcp_chunk key;
    memset(&key, 0, sizeof key);
    for (int d = 0; d < n; d++) key.off[d] = off[d];
    return bsearch(&key, it->chunks, it->nchunks, sizeof(mg_dcp_chunk), cmp_box);
}

/* A plain file name in the checkpoint folder. */
static int plain_name(const char *s)
{
    return s[0] && !strchr(s, '/') && strcmp(s, ".") && strcmp(s, "..");
}

static mg_status set_storage(const parser *p, mg_dcp_chunk *c, const mg_pk_obj *info,
                             const char *key)
{
    const mg_pk_obj *f = fields_of(info, "_StorageInfo");
    if (!f) return fail(p, info, "%s: storage entry is a %s, not a _StorageInfo", key,
                        class_of(info)[0] ? class_of(info) : mg_pk_kind_name(info->kind));
    const mg_pk_obj *path = mg_pk_get(f, "relative_path"), *tr = mg_pk_get(f, "transform_descriptors");
    int64_t off = -1, len = -1;
    if (!path || path->kind != MG_PK_STR || !plain_name(path->str))
        return fail(p, info, "%s: relative_path is not a file name of the folder", key);
    if (!as_int(mg_pk_get(f, "offset"), &off) || !as_int(mg_pk_get(f, "length"), &len) || off < 0 || len < 0)
        return fail(p, info, "%s: bad storage offset/length", key);
    if (tr && tr->kind != MG_PK_NONE && mg_pk_len(tr) > 0)
        return mg_error_set(MG_ERR_UNSUPPORTED, "%s: pickle offset %zu: not supported yet: %s is "
                            "stored with transforms (compression)", p->label, tr->at, key);
    if (c->file != UINT32_MAX) return fail(p, info, "%s: two storage entries for one chunk", key);
    int64_t fi = mg_dcp_file_index(p->m, path->str);
    if (fi < 0) return MG_ERR_NOMEM;
    c->file = (uint32_t)fi;
    c->offset = (uint64_t)off;
    c->length = (uint64_t)len;
    return MG_OK;
}

static mg_status add_storage(const parser *p, const mg_pk_obj *k, const mg_pk_obj *v)
{
    const mg_pk_obj *f = fields_of(k, "MetadataIndex");
    if (!f) return fail(p, k, "a storage_data key is not a MetadataIndex");
    const mg_pk_obj *fqn = mg_pk_get(f, "fqn"), *off = mg_pk_get(f, "offset");
    if (!fqn || fqn->kind != MG_PK_STR) return fail(p, k, "a MetadataIndex without fqn");
    mg_dcp_item *it = item_of(p, fqn->str);
    if (!it) return fail(p, k, "%s: storage entry for a key that state_dict_metadata does not list", fqn->str);
    if (it->is_bytes) {
        if (!it->nchunks && !mg_dcp_add_chunk(it, NULL, NULL)) return MG_ERR_NOMEM;
        return set_storage(p, &it->chunks[0], v, it->key);
    }
    int64_t o[MG_DCP_MAX_DIMS];
    int n = 0;
    MG_FORWARD(shape_of(p, off, it->key, "a storage entry's offset", o, &n));
    mg_dcp_chunk *c = n == it->ndim ? chunk_at(it, o, n) : NULL;
    if (!c) return fail(p, k, "%s: storage entry for a chunk that state_dict_metadata does not list", it->key);
    return set_storage(p, c, v, it->key);
}

static mg_status add_storages(const parser *p, const mg_pk_obj *sd)
{
    if (!sd || sd->kind != MG_PK_DICT) return fail(p, sd, "storage_data is not a dict");
    for (size_t i = 0; i < sd->n; i++) MG_FORWARD(add_storage(p, sd->items[2 * i], sd->items[2 * i + 1]));
    return MG_OK;
}

static void box_str(char *buf, size_t cap, const mg_dcp_item *it, const mg_dcp_chunk *c)
{
    size_t k = 0;
    for (int d = 0; d < it->ndim && k < cap; d++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld:%lld", d ? ", " : "[", (long long)c->off[d],
                              (long long)(c->off[d] + c->len[d]));
    if (k < cap) snprintf(buf + k, cap - k, it->ndim ? "]" : "[]");
}

static int overlap(const mg_dcp_item *it, const mg_dcp_chunk *a, const mg_dcp_chunk *b)
{
    for (int d = 0; d < it->ndim; d++)
        if (a->off[d] >= b->off[d] + b->len[d] || b->off[d] >= a->off[d] + a->len[d]) return 0;
    return 1;
}

/* Chunks sorted by offset: no two overlap, and together they hold every element. */
static mg_status check_cover(const parser *p, const mg_dcp_item *it)
{
    int64_t total = mg_dcp_volume(it->ndim, it->size), sum = 0;
    char a[160], b[160];
    for (size_t i = 0; i < it->nchunks; i++) {
        const mg_dcp_chunk *x = &it->chunks[i];
        int64_t v = mg_dcp_volume(it->ndim, x->len);
        if (v == 0) continue;
        sum += v;
        if (sum > total) sum = total + 1; /* the sum stays bounded: "more than all" */
        for (size_t j = i + 1; j < it->nchunks; j++) {
            const mg_dcp_chunk *y = &it->chunks[j];
            if (it->ndim > 0 && y->off[0] >= x->off[0] + x->len[0]) break;
            if (mg_dcp_volume(it->ndim, y->len) == 0 || !overlap(it, x, y)) continue;
            box_str(a, sizeof a, it, x);
            box_str(b, sizeof b, it, y);
            return mg_error_set(MG_ERR_FORMAT, "%s: pickle offset %zu: %s: chunks %s and %s "
                                "overlap", p->label, it->at, it->key, a, b);
        }
    }
    MG_RETURN_IF(sum != total, MG_ERR_FORMAT, "%s: pickle offset %zu: %s: its chunks hold %lld "
                 "of its %lld elements (they do not cover the tensor)", p->label, it->at, it->key,
                 (long long)sum, (long long)total);
    return MG_OK;
}

static mg_status check_items(const parser *p)
{
    char box[160];
    for (size_t i = 0; i < p->m->nitems; i++) {
        const mg_dcp_item *it = &p->m->items[i];
        MG_RETURN_IF(it->is_bytes && it->nchunks == 0, MG_ERR_FORMAT, "%s: pickle offset %zu: "
                     "%s: no storage entry", p->label, it->at, it->key);
        for (size_t c = 0; c < it->nchunks; c++) {
            if (it->chunks[c].file != UINT32_MAX) continue;
            box_str(box, sizeof box, it, &it->chunks[c]);
            return mg_error_set(MG_ERR_FORMAT, "%s: pickle offset %zu: %s: chunk %s has no "
                                "storage entry", p->label, it->at, it->key, box);
        }
        if (!it->is_bytes) MG_FORWARD(check_cover(p, it));
    }
    return MG_OK;
}

static mg_status parse(parser *p, const mg_pk_obj *root)
{
    const mg_pk_obj *f = fields_of(root, "Metadata");
    if (!f) {
        const char *cls = class_of(root);
        return fail(p, root, "the root object is %s%s%s, not a torch.distributed.checkpoint "
                    "Metadata", cls[0] ? module_of(root) : "a ", cls[0] ? "." : "",
                    cls[0] ? cls : mg_pk_kind_name(root->kind));
    }
    MG_FORWARD(add_items(p, mg_pk_get(f, "state_dict_metadata")));
    MG_FORWARD(index_items(p));
    MG_FORWARD(add_storages(p, mg_pk_get(f, "storage_data")));
    return check_items(p);
}

mg_status mg_dcp_meta_load(mg_dcp_meta **out, const uint8_t *data, size_t len, const char *label)
{
    *out = NULL;
    parser p = {.m = mg_dcp_meta_create(), .label = label ? label : ".metadata"};
    mg_pk_graph *g = mg_pk_graph_create();
    mg_pk_obj *root = NULL;
    mg_status st = p.m && g ? mg_pk_load(g, data, len, p.label, &root) : MG_ERR_NOMEM;
    if (st == MG_OK) st = parse(&p, root);
    mg_pk_graph_free(g);
    free(p.order);
    if (st != MG_OK) {
        mg_dcp_meta_free(p.m);
        return st;
    }
    *out = p.m;
    return MG_OK;
}

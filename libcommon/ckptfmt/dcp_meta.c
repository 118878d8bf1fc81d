/* dcp_meta.c — mg/dcp.h: the joined DCP metadata (items, chunks, data files), its adders,
 * lookups, and the .metadata emitter (mg_dcp_meta_dump).
 *
 * Contract (mg/dcp.h): the emitted pickle is the object graph torch.distributed.checkpoint
 * writes, built as mg/pickle.h nodes (dataclasses as NEWOBJ + BUILD of their __dict__,
 * torch.Size as REDUCE, TensorProperties' BUILD state the 5-tuple every PyTorch >= 2.0
 * accepts) and written at protocol 2: Metadata(state_dict_metadata, planner_data={},
 * storage_data={MetadataIndex(fqn, offset): _StorageInfo(path, offset, length)},
 * version="1.0.0"). Byte objects get MetadataIndex(fqn) without offset, as PyTorch's.
 */
#include <stdlib.h>
#include <string.h>

#include "mg/dcp.h"
#include "mg/pickle.h"

#define DCP_MOD "torch.distributed.checkpoint.metadata"
#define FS_MOD "torch.distributed.checkpoint.filesystem"

mg_dcp_meta *mg_dcp_meta_create(void)
{
    return mg_calloc(1, sizeof(mg_dcp_meta));
}

void mg_dcp_meta_free(mg_dcp_meta *m)
{
    if (!m) return;
    for (size_t i = 0; i < m->nitems; i++) {
        free(m->items[i].key);
        free(m->items[i].chunks);
    }
    for (size_t i = 0; i < m->nfiles; i++) free(m->files[i]);
    free(m->items);
    free(m->files);
    free(m);
}

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = mg_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

static mg_dcp_item *add_item(mg_dcp_meta *m, const char *key)
{
    if (m->nitems == m->cap) {
        size_t cap = m->cap ? m->cap * 2 : 64;
        mg_dcp_item *it = mg_realloc(m->items, cap * sizeof(*it));
        if (!it) return NULL;
        m->items = it;
        m->cap = cap;
    }
    mg_dcp_item *it = &m->items[m->nitems];
    memset(it, 0, sizeof(*it));
    if (!(it->key = dup_str(key))) return NULL;
    it->dtype = MG_TD_INVALID;
    m->nitems++;
    return it;
}

mg_dcp_item *mg_dcp_add_tensor(mg_dcp_meta *m, const char *key, mg_tdtype dtype, int ndim,
                               const int64_t *size)
{
    MG_ASSERT(ndim >= 0 && ndim <= MG_DCP_MAX_DIMS);
    mg_dcp_item *it = add_item(m, key);
    if (!it) return NULL;
    it->dtype = dtype;
    it->ndim = ndim;
    for (int d = 0; d < ndim; d++) it->size[d] = size[d];
    return it;
}

mg_dcp_item *mg_dcp_add_bytes(mg_dcp_meta *m, const char *key)
{
    mg_dcp_item *it = add_item(m, key);
    if (it) it->is_bytes = 1;
    return it;
}

mg_dcp_chunk *mg_dcp_add_chunk(mg_dcp_item *it, const int64_t *off, const int64_t *len)
{
    if (it->nchunks == it->cap) {
        size_t cap = it->cap ? it->cap * 2 : 4;
        mg_dcp_chunk *c = mg_realloc(it->chunks, cap * sizeof(*c));
        if (!c) return NULL;
        it->chunks = c;
        it->cap = cap;
    }
    mg_dcp_chunk *c = &it->chunks[it->nchunks++];
    memset(c, 0, sizeof(*c));
    c->file = UINT32_MAX;
    for (int d = 0; !it->is_bytes && d < it->ndim; d++) {
        c->off[d] = off[d];
        c->len[d] = len[d];
    }
    return c;
}

int64_t mg_dcp_file_index(mg_dcp_meta *m, const char *name)
{
    for (size_t i = 0; i < m->nfiles; i++)
        if (!strcmp(m->files[i], name)) return (int64_t)i;
    if (m->nfiles == m->fcap) {
        size_t cap = m->fcap ? m->fcap * 2 : 8;
        char **f = mg_realloc(m->files, cap * sizeof(*f));
        if (!f) return -1;
        m->files = f;
        m->fcap = cap;
    }
    if (!(m->files[m->nfiles] = dup_str(name))) return -1;
    return (int64_t)m->nfiles++;
}

const mg_dcp_item *mg_dcp_find(const mg_dcp_meta *m, const char *key)
{
    for (size_t i = 0; i < m->nitems; i++)
        if (!strcmp(m->items[i].key, key)) return &m->items[i];
    return NULL;
}

int64_t mg_dcp_volume(int ndim, const int64_t *len)
{
    int64_t v = 1;
    for (int d = 0; d < ndim; d++) v *= len[d];
    return v;
}

/* ---- emitting ---- */

/* cls() + BUILD(state): how pickle writes a dataclass. */
static mg_pk_obj *dataclass(mg_pk_graph *g, const char *mod, const char *name, mg_pk_obj *state)
{
    mg_pk_obj *o = mg_pk_container(g, MG_PK_OBJECT);
    mg_pk_obj *cls = mg_pk_global(g, mod, name), *args = mg_pk_container(g, MG_PK_TUPLE);
    if (!o || !cls || !args) return NULL;
    o->callable = cls;
    o->args = args;
    o->newobj = 1;
    o->state = state;
    return o;
}

/* callable(*args) */
static mg_pk_obj *reduce(mg_pk_graph *g, const char *mod, const char *name, mg_pk_obj *arg)
{
    mg_pk_obj *o = mg_pk_container(g, MG_PK_OBJECT);
    mg_pk_obj *fn = mg_pk_global(g, mod, name), *args = mg_pk_container(g, MG_PK_TUPLE);
    if (!o || !fn || !args || !arg || mg_pk_append(g, args, arg) != MG_OK) return NULL;
    o->callable = fn;
    o->args = args;
    return o;
}

static mg_pk_obj *torch_size(mg_pk_graph *g, int n, const int64_t *v)
{
    mg_pk_obj *t = mg_pk_container(g, MG_PK_TUPLE);
    for (int i = 0; t && i < n; i++) {
        mg_pk_obj *x = mg_pk_int(g, v[i]);
        if (!x || mg_pk_append(g, t, x) != MG_OK) return NULL;
    }
    return t ? reduce(g, "torch", "Size", t) : NULL;
}

static mg_pk_obj *properties(mg_pk_graph *g, mg_tdtype dt)
{
    const char *name = mg_pk_torch_dtype_name(dt);
    mg_pk_obj *st = mg_pk_container(g, MG_PK_TUPLE);
    if (!st || !name) return NULL;
    mg_pk_obj *parts[5] = {mg_pk_global(g, "torch", name), mg_pk_global(g, "torch", "strided"),
                           mg_pk_bool(g, 0),
                           reduce(g, DCP_MOD, "_MEM_FORMAT_ENCODING", mg_pk_int(g, 0)),
                           mg_pk_bool(g, 0)};
    for (int i = 0; i < 5; i++)
        if (!parts[i] || mg_pk_append(g, st, parts[i]) != MG_OK) return NULL;
    return dataclass(g, DCP_MOD, "TensorProperties", st);
}

/* dict(name0=v0, name1=v1, ...) with n pairs. */
static mg_pk_obj *fields(mg_pk_graph *g, int n, const char *const *names, mg_pk_obj *const *v)
{
    mg_pk_obj *d = mg_pk_container(g, MG_PK_DICT);
    for (int i = 0; d && i < n; i++)
        if (!v[i] || mg_pk_set(g, d, names[i], v[i]) != MG_OK) return NULL;
    return d;
}

static mg_pk_obj *chunk_meta(mg_pk_graph *g, const mg_dcp_item *it, const mg_dcp_chunk *c)
{
    static const char *const names[] = {"offsets", "sizes"};
    mg_pk_obj *v[2] = {torch_size(g, it->ndim, c->off), torch_size(g, it->ndim, c->len)};
    mg_pk_obj *st = fields(g, 2, names, v);
    return st ? dataclass(g, DCP_MOD, "ChunkStorageMetadata", st) : NULL;
}

static mg_pk_obj *item_meta(mg_pk_graph *g, const mg_dcp_item *it)
{
    if (it->is_bytes) return dataclass(g, DCP_MOD, "BytesStorageMetadata", mg_pk_container(g, MG_PK_DICT));
    static const char *const names[] = {"properties", "size", "chunks"};
    mg_pk_obj *chunks = mg_pk_container(g, MG_PK_LIST);
    for (size_t i = 0; chunks && i < it->nchunks; i++) {
        mg_pk_obj *c = chunk_meta(g, it, &it->chunks[i]);
        if (!c || mg_pk_append(g, chunks, c) != MG_OK) return NULL;
    }
    mg_pk_obj *v[3] = {properties(g, it->dtype), torch_size(g, it->ndim, it->size), chunks};
    mg_pk_obj *st = fields(g, 3, names, v);
    return st ? dataclass(g, DCP_MOD, "TensorStorageMetadata", st) : NULL;
}

/* storage_data[MetadataIndex(key, offset)] = _StorageInfo(file, offset, length) */
static mg_status storage_entry(mg_pk_graph *g, mg_pk_obj *sd, const mg_dcp_meta *m,
                               const mg_dcp_item *it, const mg_dcp_chunk *c)
{
    MG_RETURN_IF(c->file >= m->nfiles, MG_ERR_ARG, "dcp metadata: %s: a chunk has no data file",
                 it->key);
    static const char *const kn[] = {"fqn", "index", "offset"};
    static const char *const vn[] = {"relative_path", "offset", "length"};
    mg_pk_obj *kv[3] = {mg_pk_str(g, it->key), mg_pk_none(g),
                        it->is_bytes ? NULL : torch_size(g, it->ndim, c->off)};
    mg_pk_obj *vv[3] = {mg_pk_str(g, m->files[c->file]), mg_pk_int(g, (int64_t)c->offset),
                        mg_pk_int(g, (int64_t)c->length)};
    mg_pk_obj *ks = fields(g, it->is_bytes ? 2 : 3, kn, kv), *vs = fields(g, 3, vn, vv);
    mg_pk_obj *k = ks ? dataclass(g, DCP_MOD, "MetadataIndex", ks) : NULL;
    mg_pk_obj *v = vs ? dataclass(g, FS_MOD, "_StorageInfo", vs) : NULL;
    if (!k || !v) return MG_ERR_NOMEM;
    return mg_pk_set_obj(g, sd, k, v);
}

static mg_status build(mg_pk_graph *g, const mg_dcp_meta *m, mg_pk_obj **root)
{
    mg_pk_obj *sdm = mg_pk_container(g, MG_PK_DICT), *sd = mg_pk_container(g, MG_PK_DICT);
    if (!sdm || !sd) return MG_ERR_NOMEM;
    for (size_t i = 0; i < m->nitems; i++) {
        const mg_dcp_item *it = &m->items[i];
        mg_pk_obj *v = item_meta(g, it);
        if (!v) return MG_ERR_NOMEM;
        MG_FORWARD(mg_pk_set(g, sdm, it->key, v));
        for (size_t c = 0; c < it->nchunks; c++) MG_FORWARD(storage_entry(g, sd, m, it, &it->chunks[c]));
    }
    static const char *const names[] = {"state_dict_metadata", "planner_data", "storage_data",
                                        "version"};
    mg_pk_obj *v[4] = {sdm, mg_pk_container(g, MG_PK_DICT), sd, mg_pk_str(g, "1.0.0")};
    mg_pk_obj *st = fields(g, 4, names, v);
    *root = st ? dataclass(g, DCP_MOD, "Metadata", st) : NULL;
    return *root ? MG_OK : MG_ERR_NOMEM;
}

mg_status mg_dcp_meta_dump(const mg_dcp_meta *m, uint8_t **out, size_t *out_len)
{
    *out = NULL;
    *out_len = 0;
    mg_pk_graph *g = mg_pk_graph_create();
    if (!g) return MG_ERR_NOMEM;
    mg_pk_obj *root = NULL;
    mg_status st = build(g, m, &root);
    if (st == MG_OK) st = mg_pk_dump(root, NULL, NULL, out, out_len);
    mg_pk_graph_free(g);
    return st;
}

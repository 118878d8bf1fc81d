/* pickle_graph.c — the object graph of mg/pickle.h: arena, constructors, container edits,
 * lookups, and the dtype <-> torch name tables shared by the reader and the emitter.
 *
 * Contract (see mg/pickle.h): every node, string and item array lives in the graph's arena
 * (linked 64 KiB chunks, bigger requests get their own chunk); item arrays grow by doubling
 * inside the arena (the old array stays until the graph is freed, at most doubling use).
 */
#include "pickle_internal.h"

#include <stdlib.h>
#include <string.h>

#include "mg/grow.h"

#define ARENA_CHUNK ((size_t)64 << 10)

typedef struct chunk {
    struct chunk *next;
    size_t used, cap;
    max_align_t data[];
} chunk;

struct mg_pk_graph {
    chunk *head;
    mg_pk_obj **tensors;
    size_t n_tensors, cap_tensors;
};

mg_pk_graph *mg_pk_graph_create(void)
{
    return mg_calloc(1, sizeof(mg_pk_graph));
}

void mg_pk_graph_free(mg_pk_graph *g)
{
    if (!g) return;
    for (chunk *c = g->head, *next; c; c = next) {
        next = c->next;
        free(c);
    }
    free(g->tensors);
    free(g);
}

void *mg_pk_alloc(mg_pk_graph *g, size_t n)
{
    if (n > SIZE_MAX / 2) {
        mg_error_set(MG_ERR_NOMEM, "pickle graph: allocation of %zu bytes", n);
        return NULL;
    }
    n = n ? (n + 15) & ~(size_t)15 : 16;
    chunk *c = g->head;
    if (!c || c->cap - c->used < n) {
        size_t cap = n > ARENA_CHUNK / 2 ? n : ARENA_CHUNK;
        chunk *nc = mg_malloc(sizeof(chunk) + cap);
        if (!nc) return NULL;
        nc->used = 0;
        nc->cap = cap;
        if (c && n > ARENA_CHUNK / 2) { /* keep filling the current chunk */
            nc->next = c->next;
            c->next = nc;
        } else {
            nc->next = c;
            g->head = nc;
        }
        c = nc;
    }
    void *p = (char *)c->data + c->used;
    c->used += n;
    memset(p, 0, n);
    return p;
}

mg_status mg_pk_add_tensor(mg_pk_graph *g, mg_pk_obj *t)
{
    MG_FORWARD(MG_GROW(g->tensors, g->cap_tensors, g->n_tensors + 1, 16));
    g->tensors[g->n_tensors++] = t;
    return MG_OK;
}

size_t mg_pk_tensor_count(const mg_pk_graph *g) { return g->n_tensors; }
mg_pk_obj *mg_pk_tensor_at(const mg_pk_graph *g, size_t i)
{
    return i < g->n_tensors ? g->tensors[i] : NULL;
}

static mg_pk_obj *node(mg_pk_graph *g, mg_pk_kind kind)
{
    mg_pk_obj *o = mg_pk_alloc(g, sizeof(*o));
    if (o) o->kind = kind;
    return o;
}

mg_pk_obj *mg_pk_none(mg_pk_graph *g) { return node(g, MG_PK_NONE); }

mg_pk_obj *mg_pk_bool(mg_pk_graph *g, int v)
{
    mg_pk_obj *o = node(g, MG_PK_BOOL);
    if (o) o->i = v != 0;
    return o;
}

mg_pk_obj *mg_pk_int(mg_pk_graph *g, int64_t v)
{
    mg_pk_obj *o = node(g, MG_PK_INT);
    if (o) o->i = v;
    return o;
}

mg_pk_obj *mg_pk_float(mg_pk_graph *g, double v)
{
    mg_pk_obj *o = node(g, MG_PK_FLOAT);
    if (o) o->f = v;
    return o;
}

char *mg_pk_copy(mg_pk_graph *g, const void *p, size_t len)
{
    if (len == SIZE_MAX) return NULL;
    char *s = mg_pk_alloc(g, len + 1);
    if (s && len) memcpy(s, p, len);
    return s;
}

static mg_pk_obj *blob(mg_pk_graph *g, mg_pk_kind kind, const void *p, size_t len)
{
    mg_pk_obj *o = node(g, kind);
    if (!o) return NULL;
    o->str = mg_pk_copy(g, p, len);
    o->len = len;
    return o->str ? o : NULL;
}

mg_pk_obj *mg_pk_strn(mg_pk_graph *g, const char *s, size_t len)
{
    return blob(g, MG_PK_STR, s, len);
}
mg_pk_obj *mg_pk_str(mg_pk_graph *g, const char *s) { return mg_pk_strn(g, s, strlen(s)); }
mg_pk_obj *mg_pk_bytes(mg_pk_graph *g, const void *p, size_t len)
{
    return blob(g, MG_PK_BYTES, p, len);
}

mg_pk_obj *mg_pk_global(mg_pk_graph *g, const char *module, const char *name)
{
    mg_pk_obj *o = node(g, MG_PK_GLOBAL);
    if (!o) return NULL;
    o->str = mg_pk_copy(g, module, strlen(module));
    o->len = strlen(module);
    o->name = mg_pk_copy(g, name, strlen(name));
    return o->str && o->name ? o : NULL;
}

mg_pk_obj *mg_pk_container(mg_pk_graph *g, mg_pk_kind kind)
{
    mg_pk_obj *o = node(g, kind);
    if (o && kind == MG_PK_NAMESPACE) {
        o->state = node(g, MG_PK_DICT);
        if (!o->state) return NULL;
    }
    return o;
}

mg_pk_obj *mg_pk_tensor_new(mg_pk_graph *g, mg_tdtype dtype, int ndim, const int64_t *size,
                            const void *data)
{
    if (ndim < 0 || ndim > 64 || mg_tdtype_size(dtype) == 0) {
        mg_error_set(MG_ERR_ARG, "tensor: bad dtype or ndim %d", ndim);
        return NULL;
    }
    mg_pk_obj *o = node(g, MG_PK_TENSOR);
    mg_pk_tensor *t = mg_pk_alloc(g, sizeof(*t));
    int64_t *dims = mg_pk_alloc(g, sizeof(int64_t) * (size_t)(2 * ndim + 1));
    if (!o || !t || !dims) return NULL;
    t->dtype = dtype;
    t->ndim = ndim;
    t->size = dims;
    t->stride = dims + ndim;
    int64_t n = 1;
    for (int d = ndim - 1; d >= 0; d--) {
        t->size[d] = size[d];
        t->stride[d] = n;
        n *= size[d];
    }
    t->storage_numel = n;
    t->storage_nbytes = (uint64_t)n * mg_tdtype_size(dtype);
    t->data = data;
    t->location = "cpu";
    o->tensor = t;
    return mg_pk_add_tensor(g, o) == MG_OK ? o : NULL;
}

/* Makes room for `extra` more item slots. */
mg_status mg_pk_reserve(mg_pk_graph *g, mg_pk_obj *o, size_t extra)
{
    size_t used = (o->kind == MG_PK_DICT || o->kind == MG_PK_ODICT) ? 2 * o->n
                  : o->kind == MG_PK_OBJECT ? o->n_list + 2 * (o->n - o->n_list)
                                            : o->n;
    if (o->cap - used >= extra) return MG_OK;
    size_t cap = o->cap ? o->cap : 4;
    while (cap - used < extra) {
        if (cap > SIZE_MAX / 16) return mg_error_set(MG_ERR_NOMEM, "pickle: container too big");
        cap *= 2;
    }
    mg_pk_obj **items = mg_pk_alloc(g, cap * sizeof(*items));
    if (!items) return MG_ERR_NOMEM;
    if (used) memcpy(items, o->items, used * sizeof(*items));
    o->items = items;
    o->cap = cap;
    return MG_OK;
}

mg_status mg_pk_append(mg_pk_graph *g, mg_pk_obj *seq, mg_pk_obj *item)
{
    MG_ASSERT(seq->kind == MG_PK_TUPLE || seq->kind == MG_PK_LIST || seq->kind == MG_PK_SET);
    MG_FORWARD(mg_pk_reserve(g, seq, 1));
    seq->items[seq->n++] = item;
    return MG_OK;
}

mg_status mg_pk_set_obj(mg_pk_graph *g, mg_pk_obj *map, mg_pk_obj *key, mg_pk_obj *value)
{
    if (map->kind == MG_PK_NAMESPACE) map = map->state;
    MG_ASSERT(map->kind == MG_PK_DICT || map->kind == MG_PK_ODICT);
    MG_FORWARD(mg_pk_reserve(g, map, 2));
    map->items[2 * map->n] = key;
    map->items[2 * map->n + 1] = value;
    map->n++;
    return MG_OK;
}

static mg_pk_obj **find_slot(const mg_pk_obj *map, const char *key)
{
    if (map->kind == MG_PK_NAMESPACE) map = map->state;
    if (!map || (map->kind != MG_PK_DICT && map->kind != MG_PK_ODICT)) return NULL;
    size_t klen = strlen(key);
    for (size_t i = map->n; i-- > 0;) { /* the last pair wins, as in a Python dict */
        const mg_pk_obj *k = map->items[2 * i];
        if (k->kind == MG_PK_STR && k->len == klen && memcmp(k->str, key, klen) == 0)
            return &map->items[2 * i + 1];
    }
    return NULL;
}

mg_status mg_pk_set(mg_pk_graph *g, mg_pk_obj *map, const char *key, mg_pk_obj *value)
{
    mg_pk_obj **slot = find_slot(map, key);
    if (slot) {
        *slot = value;
        return MG_OK;
    }
    mg_pk_obj *k = mg_pk_str(g, key);
    if (!k) return MG_ERR_NOMEM;
    return mg_pk_set_obj(g, map, k, value);
}

mg_pk_obj *mg_pk_get(const mg_pk_obj *map, const char *key)
{
    mg_pk_obj **slot = find_slot(map, key);
    return slot ? *slot : NULL;
}

const mg_pk_obj *mg_pk_get_index(const mg_pk_obj *map, int64_t key)
{
    int mapping = map && (map->kind == MG_PK_DICT || map->kind == MG_PK_ODICT);
    for (size_t i = 0; mapping && i < map->n; i++)
        if (map->items[2 * i]->kind == MG_PK_INT && map->items[2 * i]->i == key)
            return map->items[2 * i + 1];
    return NULL;
}

double mg_pk_number(const mg_pk_obj *x)
{
    if (!x) return -1;
    if (x->kind == MG_PK_INT) return (double)x->i;
    if (x->kind == MG_PK_FLOAT) return x->f;
    if (x->kind == MG_PK_TENSOR && x->tensor->ndim == 0 && x->tensor->data &&
        x->tensor->dtype == MG_TD_F32 && x->tensor->offset >= 0 &&
        x->tensor->offset < x->tensor->storage_numel) {
        float f;
        memcpy(&f, x->tensor->data + (size_t)x->tensor->offset * 4, 4);
        return f;
    }
    return -1;
}

size_t mg_pk_len(const mg_pk_obj *o)
{
    return o->kind == MG_PK_NAMESPACE ? o->state->n : o->n;
}

const char *mg_pk_kind_name(mg_pk_kind k)
{
    static const char *const names[] = {
        "None", "bool", "int", "bigint", "float", "str", "bytes", "tuple", "list", "set",
        "dict", "OrderedDict", "Namespace", "global", "tensor", "ndarray", "persid", "object"};
    return (unsigned)k < sizeof names / sizeof names[0] ? names[k] : "?";
}

int64_t mg_pk_tensor_numel(const mg_pk_tensor *t)
{
    int64_t n = 1;
    for (int d = 0; d < t->ndim; d++) n *= t->size[d];
    return n;
}

/* ---- dtype tables ---- */

static const struct {
    mg_tdtype dtype;
    const char *storage; /* legacy storage class or NULL */
    const char *torch;   /* torch.<name> */
} dtype_table[] = {
    {MG_TD_F32, "FloatStorage", "float32"},     {MG_TD_F16, "HalfStorage", "float16"},
    {MG_TD_BF16, "BFloat16Storage", "bfloat16"}, {MG_TD_F64, "DoubleStorage", "float64"},
    {MG_TD_I64, "LongStorage", "int64"},        {MG_TD_I32, "IntStorage", "int32"},
    {MG_TD_I16, "ShortStorage", "int16"},       {MG_TD_I8, "CharStorage", "int8"},
    {MG_TD_U8, "ByteStorage", "uint8"},         {MG_TD_BOOL, "BoolStorage", "bool"},
    {MG_TD_F8_E4M3, NULL, "float8_e4m3fn"},     {MG_TD_F8_E5M2, NULL, "float8_e5m2"},
    {MG_TD_U16, NULL, "uint16"},                {MG_TD_U32, NULL, "uint32"},
    {MG_TD_U64, NULL, "uint64"},
};
#define N_DTYPES (sizeof dtype_table / sizeof dtype_table[0])

const char *mg_pk_storage_class(mg_tdtype t)
{
    for (size_t i = 0; i < N_DTYPES; i++)
        if (dtype_table[i].dtype == t) return dtype_table[i].storage;
    return NULL;
}

mg_tdtype mg_pk_storage_dtype(const char *cls)
{
    for (size_t i = 0; i < N_DTYPES; i++)
        if (dtype_table[i].storage && strcmp(dtype_table[i].storage, cls) == 0)
            return dtype_table[i].dtype;
    return MG_TD_INVALID;
}

const char *mg_pk_torch_dtype_name(mg_tdtype t)
{
    for (size_t i = 0; i < N_DTYPES; i++)
        if (dtype_table[i].dtype == t) return dtype_table[i].torch;
    return NULL;
}

mg_tdtype mg_pk_torch_dtype(const char *name)
{
    static const struct { const char *alias; mg_tdtype t; } aliases[] = {
        {"float", MG_TD_F32}, {"half", MG_TD_F16}, {"double", MG_TD_F64},
        {"long", MG_TD_I64},  {"int", MG_TD_I32},  {"short", MG_TD_I16}};
    for (size_t i = 0; i < N_DTYPES; i++)
        if (strcmp(dtype_table[i].torch, name) == 0) return dtype_table[i].dtype;
    for (size_t i = 0; i < sizeof aliases / sizeof aliases[0]; i++)
        if (strcmp(aliases[i].alias, name) == 0) return aliases[i].t;
    return MG_TD_INVALID;
}

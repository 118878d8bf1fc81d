/* pickle_write.c — the protocol 2 emitter of mg/pickle.h (mg_pk_dump).
 *
 * Contract: writes PROTO 2 ... STOP using only opcodes torch's weights_only unpickler
 * implements (no memo at all: shared nodes are written once per reference), with ints
 * encoded as CPython does (K/M/J/LONG1) and SETITEMS/APPENDS batched by 1000. Typed nodes
 * are written in the form torch.save uses (OrderedDict via REDUCE, Namespace via NEWOBJ +
 * BUILD, bytes via _codecs.encode, tensors via _rebuild_tensor_v2/_v3); opaque objects
 * are re-emitted from their callable/args/items/state. Walks stop with MG_ERR_FORMAT past
 * MG_PK_MAX_DEPTH levels or WRITE_BUDGET nodes (cyclic or exploding graphs).
 */
#include <stdlib.h>
#include <string.h>

#include "mg/grow.h"

#include "pickle_internal.h"

#define BATCH 1000
#define WRITE_BUDGET ((size_t)1 << 24)

typedef struct {
    uint8_t *buf;
    size_t len, cap;
    size_t visits;
    mg_pk_key_fn key_of;
    void *ctx;
} emitter;

static mg_status put(emitter *e, const void *p, size_t n)
{
    MG_RETURN_IF(n > SIZE_MAX - e->len, MG_ERR_NOMEM, "pickle: output too big");
    MG_FORWARD(MG_GROW(e->buf, e->cap, e->len + n, 4096));
    memcpy(e->buf + e->len, p, n);
    e->len += n;
    return MG_OK;
}

static mg_status op(emitter *e, uint8_t c) { return put(e, &c, 1); }

static mg_status put_le(emitter *e, uint64_t v, size_t n)
{
    uint8_t b[8];
    for (size_t i = 0; i < n; i++) b[i] = (uint8_t)(v >> (8 * i));
    return put(e, b, n);
}

static mg_status emit_int(emitter *e, int64_t v)
{
    if (v >= 0 && v < 256) {
        MG_FORWARD(op(e, 'K'));
        return put_le(e, (uint64_t)v, 1);
    }
    if (v >= 0 && v < 65536) {
        MG_FORWARD(op(e, 'M'));
        return put_le(e, (uint64_t)v, 2);
    }
    if (v >= INT32_MIN && v <= INT32_MAX) {
        MG_FORWARD(op(e, 'J'));
        return put_le(e, (uint64_t)v, 4);
    }
    /* LONG1: shortest little-endian two's complement */
    size_t n = 8;
    while (n > 1) {
        int64_t lo = -((int64_t)1 << (8 * (n - 1) - 1)), hi = ((int64_t)1 << (8 * (n - 1) - 1)) - 1;
        if (v < lo || v > hi) break;
        n--;
    }
    MG_FORWARD(op(e, 0x8a));
    MG_FORWARD(put_le(e, n, 1));
    return put_le(e, (uint64_t)v, n);
}

static mg_status emit_bigint(emitter *e, const mg_pk_obj *o)
{
    if (o->len < 256) {
        MG_FORWARD(op(e, 0x8a));
        MG_FORWARD(put_le(e, o->len, 1));
    } else {
        if (o->len > INT32_MAX) return mg_error_set(MG_ERR_LIMIT, "pickle: integer too big");
        MG_FORWARD(op(e, 0x8b));
        MG_FORWARD(put_le(e, o->len, 4));
    }
    return put(e, o->str, o->len);
}

static mg_status emit_float(emitter *e, double d)
{
    uint64_t bits;
    memcpy(&bits, &d, sizeof bits);
    uint8_t b[9] = {'G'};
    for (int i = 0; i < 8; i++) b[1 + i] = (uint8_t)(bits >> (56 - 8 * i));
    return put(e, b, sizeof b);
}

static mg_status emit_strn(emitter *e, const char *s, size_t n)
{
    if (n > UINT32_MAX) return mg_error_set(MG_ERR_LIMIT, "pickle: string longer than 4 GiB");
    MG_FORWARD(op(e, 'X'));
    MG_FORWARD(put_le(e, n, 4));
    return put(e, s, n);
}

static mg_status emit_str(emitter *e, const char *s) { return emit_strn(e, s, strlen(s)); }

static mg_status emit_global(emitter *e, const char *mod, const char *name)
{
    if (strchr(mod, '\n') || strchr(name, '\n'))
        return mg_error_set(MG_ERR_ARG, "pickle: global name with a newline");
    MG_FORWARD(op(e, 'c'));
    MG_FORWARD(put(e, mod, strlen(mod)));
    MG_FORWARD(op(e, '\n'));
    MG_FORWARD(put(e, name, strlen(name)));
    return op(e, '\n');
}

/* bytes as _codecs.encode(latin-1 text, 'latin1') */
static mg_status emit_bytes(emitter *e, const mg_pk_obj *o)
{
    if (o->len > UINT32_MAX / 2) return mg_error_set(MG_ERR_LIMIT, "pickle: bytes longer than 2 GiB");
    MG_FORWARD(emit_global(e, "_codecs", "encode"));
    size_t n = 0;
    const uint8_t *s = (const uint8_t *)o->str;
    for (size_t i = 0; i < o->len; i++) n += s[i] < 0x80 ? 1 : 2;
    MG_FORWARD(op(e, 'X'));
    MG_FORWARD(put_le(e, n, 4));
    for (size_t i = 0; i < o->len; i++) {
        uint8_t u[2] = {(uint8_t)(0xc0 | (s[i] >> 6)), (uint8_t)(0x80 | (s[i] & 0x3f))};
        MG_FORWARD(s[i] < 0x80 ? put(e, &s[i], 1) : put(e, u, 2));
    }
    MG_FORWARD(emit_str(e, "latin1"));
    MG_FORWARD(op(e, 0x86));
    return op(e, 'R');
}

static mg_status emit(emitter *e, const mg_pk_obj *o, int depth);

static mg_status emit_seq(emitter *e, mg_pk_obj *const *items, size_t n, int depth)
{
    for (size_t i = 0; i < n; i++) MG_FORWARD(emit(e, items[i], depth + 1));
    return MG_OK;
}

static mg_status emit_tuple(emitter *e, const mg_pk_obj *o, int depth)
{
    if (o->n == 0) return op(e, ')');
    if (o->n <= 3) {
        MG_FORWARD(emit_seq(e, o->items, o->n, depth));
        return op(e, (uint8_t)(0x84 + o->n));
    }
    MG_FORWARD(op(e, '('));
    MG_FORWARD(emit_seq(e, o->items, o->n, depth));
    return op(e, 't');
}

/* APPENDS in batches (a batch of one is an APPEND). */
static mg_status emit_appends(emitter *e, mg_pk_obj *const *items, size_t n, int depth)
{
    for (size_t i = 0; i < n; i += BATCH) {
        size_t k = n - i < BATCH ? n - i : BATCH;
        if (k == 1) {
            MG_FORWARD(emit(e, items[i], depth + 1));
            MG_FORWARD(op(e, 'a'));
            continue;
        }
        MG_FORWARD(op(e, '('));
        MG_FORWARD(emit_seq(e, items + i, k, depth));
        MG_FORWARD(op(e, 'e'));
    }
    return MG_OK;
}

/* items holds n key/value pairs. */
static mg_status emit_setitems(emitter *e, mg_pk_obj *const *items, size_t n, int depth)
{
    for (size_t i = 0; i < n; i += BATCH) {
        size_t k = n - i < BATCH ? n - i : BATCH;
        if (k > 1) MG_FORWARD(op(e, '('));
        MG_FORWARD(emit_seq(e, items + 2 * i, 2 * k, depth));
        MG_FORWARD(op(e, k > 1 ? 'u' : 's'));
    }
    return MG_OK;
}

static mg_status emit_empty_odict(emitter *e)
{
    MG_FORWARD(emit_global(e, "collections", "OrderedDict"));
    MG_FORWARD(op(e, ')'));
    return op(e, 'R');
}

static mg_status emit_int_tuple(emitter *e, const int64_t *v, int n)
{
    if (n == 0) return op(e, ')');
    if (n > 3) MG_FORWARD(op(e, '('));
    for (int i = 0; i < n; i++) MG_FORWARD(emit_int(e, v[i]));
    return op(e, n > 3 ? 't' : (uint8_t)(0x84 + n));
}

static mg_status emit_persid(emitter *e, const mg_pk_obj *o, const char *cls, uint64_t numel)
{
    const char *key = e->key_of ? e->key_of(e->ctx, o) : NULL;
    if (!key) return mg_error_set(MG_ERR_ARG, "pickle: no storage key for a tensor");
    MG_FORWARD(op(e, '('));
    MG_FORWARD(emit_str(e, "storage"));
    MG_FORWARD(emit_global(e, "torch", cls));
    MG_FORWARD(emit_str(e, key));
    MG_FORWARD(emit_str(e, "cpu"));
    MG_FORWARD(emit_int(e, (int64_t)numel));
    MG_FORWARD(op(e, 't'));
    return op(e, 'Q');
}

static mg_status emit_tensor(emitter *e, const mg_pk_obj *o)
{
    const mg_pk_tensor *t = o->tensor;
    const char *cls = mg_pk_storage_class(t->dtype);
    const char *tname = mg_pk_torch_dtype_name(t->dtype);
    if (!tname) return mg_error_set(MG_ERR_ARG, "pickle: tensor with an invalid dtype");
    if (t->parameter) MG_FORWARD(emit_global(e, "torch._utils", "_rebuild_parameter"));
    MG_FORWARD(emit_global(e, "torch._utils", cls ? "_rebuild_tensor_v2" : "_rebuild_tensor_v3"));
    MG_FORWARD(op(e, '('));
    MG_FORWARD(emit_persid(e, o, cls ? cls : "UntypedStorage",
                           cls ? (uint64_t)t->storage_numel : t->storage_nbytes));
    MG_FORWARD(emit_int(e, t->offset));
    MG_FORWARD(emit_int_tuple(e, t->size, t->ndim));
    MG_FORWARD(emit_int_tuple(e, t->stride, t->ndim));
    MG_FORWARD(op(e, t->requires_grad ? 0x88 : 0x89));
    MG_FORWARD(emit_empty_odict(e));
    if (!cls) MG_FORWARD(emit_global(e, "torch", tname));
    MG_FORWARD(op(e, 't'));
    MG_FORWARD(op(e, 'R'));
    if (!t->parameter) return MG_OK;
    MG_FORWARD(op(e, t->requires_grad ? 0x88 : 0x89));
    MG_FORWARD(emit_empty_odict(e));
    MG_FORWARD(op(e, 0x87));
    return op(e, 'R');
}

static mg_status emit_object(emitter *e, const mg_pk_obj *o, int depth)
{
    MG_FORWARD(emit(e, o->callable, depth + 1));
    MG_FORWARD(emit(e, o->args, depth + 1));
    MG_FORWARD(op(e, o->newobj ? 0x81 : 'R'));
    if (o->n) {
        MG_FORWARD(emit_appends(e, o->items, o->n_list, depth));
        MG_FORWARD(emit_setitems(e, o->items + o->n_list, o->n - o->n_list, depth));
    }
    if (!o->state) return MG_OK;
    MG_FORWARD(emit(e, o->state, depth + 1));
    return op(e, 'b');
}

static mg_status emit_namespace(emitter *e, const mg_pk_obj *o, int depth)
{
    MG_FORWARD(emit_global(e, "argparse", "Namespace"));
    MG_FORWARD(op(e, ')'));
    MG_FORWARD(op(e, 0x81));
    if (o->state->n == 0) return MG_OK;
    MG_FORWARD(emit(e, o->state, depth + 1));
    return op(e, 'b');
}

static mg_status emit_set(emitter *e, const mg_pk_obj *o, int depth)
{
    MG_FORWARD(emit_global(e, "builtins", "set"));
    MG_FORWARD(op(e, ']'));
    MG_FORWARD(emit_appends(e, o->items, o->n, depth));
    MG_FORWARD(op(e, 0x85));
    return op(e, 'R');
}

static mg_status emit(emitter *e, const mg_pk_obj *o, int depth)
{
    if (!o) return mg_error_set(MG_ERR_ARG, "pickle: missing object");
    if (depth > MG_PK_MAX_DEPTH)
        return mg_error_set(MG_ERR_FORMAT, "pickle: objects nested deeper than %d (or cyclic)",
                            MG_PK_MAX_DEPTH);
    if (++e->visits > WRITE_BUDGET)
        return mg_error_set(MG_ERR_FORMAT, "pickle: more than %zu objects to write", WRITE_BUDGET);
    switch (o->kind) {
    case MG_PK_NONE: return op(e, 'N');
    case MG_PK_BOOL: return op(e, o->i ? 0x88 : 0x89);
    case MG_PK_INT: return emit_int(e, o->i);
    case MG_PK_BIGINT: return emit_bigint(e, o);
    case MG_PK_FLOAT: return emit_float(e, o->f);
    case MG_PK_STR: return emit_strn(e, o->str, o->len);
    case MG_PK_BYTES: return emit_bytes(e, o);
    case MG_PK_TUPLE: return emit_tuple(e, o, depth);
    case MG_PK_LIST:
        MG_FORWARD(op(e, ']'));
        return emit_appends(e, o->items, o->n, depth);
    case MG_PK_SET: return emit_set(e, o, depth);
    case MG_PK_DICT:
        MG_FORWARD(op(e, '}'));
        return emit_setitems(e, o->items, o->n, depth);
    case MG_PK_ODICT:
        MG_FORWARD(emit_empty_odict(e));
        MG_FORWARD(emit_setitems(e, o->items, o->n, depth));
        if (!o->state) return MG_OK;
        MG_FORWARD(emit(e, o->state, depth + 1));
        return op(e, 'b');
    case MG_PK_NAMESPACE: return emit_namespace(e, o, depth);
    case MG_PK_GLOBAL: return emit_global(e, o->str, o->name);
    case MG_PK_TENSOR: return emit_tensor(e, o);
    case MG_PK_PERSID:
        MG_FORWARD(emit(e, o->args, depth + 1));
        return op(e, 'Q');
    case MG_PK_NDARRAY:
    case MG_PK_OBJECT: return emit_object(e, o, depth);
    }
    return mg_error_set(MG_ERR_ARG, "pickle: bad node kind %d", (int)o->kind);
}

mg_status mg_pk_dump(const mg_pk_obj *root, mg_pk_key_fn key_of, void *ctx, uint8_t **out,
                     size_t *out_len)
{
    emitter e = {.key_of = key_of, .ctx = ctx};
    *out = NULL;
    *out_len = 0;
    static const uint8_t proto[2] = {0x80, 2};
    mg_status st = put(&e, proto, 2);
    if (st == MG_OK) st = emit(&e, root, 0);
    if (st == MG_OK) st = op(&e, '.');
    if (st != MG_OK) {
        free(e.buf);
        return st;
    }
    *out = e.buf;
    *out_len = e.len;
    return MG_OK;
}

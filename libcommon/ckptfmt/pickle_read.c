/* pickle_read.c — the pickle VM of mg/pickle.h (mg_pk_load).
 *
 * Contract: runs protocols 0-5 (binary opcodes, plus the text INT/LONG/FLOAT/GET/PUT/DICT/
 * LIST/PERSID forms) over a byte slice, building nodes in the graph's arena. The stack
 * has a fence at the last MARK like CPython's, so popping below it is a "stack underflow".
 * Memo ids must not exceed the pickle's length (every real pickler numbers them densely).
 * Recognisers turn REDUCE/NEWOBJ/BUILD patterns into typed nodes (see mg/pickle.h); an
 * unrecognised call stays an MG_PK_OBJECT. Every error is
 * "LABEL: pickle offset N: what" with N the offset of the failing opcode.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mg/grow.h"

#include "pickle_internal.h"

typedef struct {
    mg_pk_graph *g;
    const uint8_t *p;
    size_t len, pos, op_pos;
    const char *label;
    mg_pk_obj **stack;
    size_t sp, scap;
    size_t *marks;
    size_t nmarks, mcap;
    mg_pk_obj **memo;
    size_t memo_cap, memo_len; /* memo_len: defined entries (MEMOIZE's next id) */
    int done;
    mg_pk_obj *result;
} vm;

static mg_status fail(vm *m, const char *what)
{
    return mg_error_set(MG_ERR_FORMAT, "%s: pickle offset %zu: %s", m->label, m->op_pos, what);
}

static mg_status failx(vm *m, mg_status st, const char *what, unsigned op)
{
    return mg_error_set(st, "%s: pickle offset %zu: %s 0x%02x", m->label, m->op_pos, what, op);
}

/* ---- input ---- */

static mg_status take(vm *m, size_t n, const uint8_t **out)
{
    if (n > m->len - m->pos) return fail(m, "truncated pickle");
    *out = m->p + m->pos;
    m->pos += n;
    return MG_OK;
}

static mg_status read_uint(vm *m, size_t n, uint64_t *v)
{
    const uint8_t *b = NULL;
    MG_FORWARD(take(m, n, &b));
    *v = 0;
    for (size_t i = 0; i < n; i++) *v |= (uint64_t)b[i] << (8 * i);
    return MG_OK;
}

/* A text line up to '\n' (excluded). */
static mg_status read_line(vm *m, const char **s, size_t *n)
{
    const uint8_t *start = m->p + m->pos;
    const uint8_t *nl = memchr(start, '\n', m->len - m->pos);
    if (!nl) return fail(m, "truncated pickle (no end of line)");
    *s = (const char *)start;
    *n = (size_t)(nl - start);
    m->pos += *n + 1;
    return MG_OK;
}

/* ---- stack ---- */

static mg_status push(vm *m, mg_pk_obj *o)
{
    if (!o) return MG_ERR_NOMEM;
    if (!o->at) o->at = m->op_pos;
    MG_FORWARD(MG_GROW(m->stack, m->scap, m->sp + 1, 64));
    m->stack[m->sp++] = o;
    return MG_OK;
}

static size_t fence(const vm *m) { return m->nmarks ? m->marks[m->nmarks - 1] : 0; }

static mg_status pop(vm *m, mg_pk_obj **o)
{
    if (m->sp <= fence(m)) return fail(m, "stack underflow");
    *o = m->stack[--m->sp];
    return MG_OK;
}

static mg_status top(vm *m, mg_pk_obj **o)
{
    if (m->sp <= fence(m)) return fail(m, "stack underflow");
    *o = m->stack[m->sp - 1];
    return MG_OK;
}

static mg_status push_mark(vm *m)
{
    MG_FORWARD(MG_GROW(m->marks, m->mcap, m->nmarks + 1, 16));
    m->marks[m->nmarks++] = m->sp;
    return MG_OK;
}

/* Pops the items above the last MARK: they are m->stack[*base .. m->sp). */
static mg_status pop_mark(vm *m, size_t *base)
{
    if (m->nmarks == 0) return fail(m, "no MARK on the stack");
    *base = m->marks[--m->nmarks];
    return MG_OK;
}

/* ---- memo ---- */

static mg_status memo_put(vm *m, uint64_t id)
{
    mg_pk_obj *o = NULL;
    MG_FORWARD(top(m, &o));
    if (id > m->len) return fail(m, "memo index larger than the pickle");
    if (id >= m->memo_cap) {
        size_t old = m->memo_cap;
        MG_FORWARD(MG_GROW(m->memo, m->memo_cap, id + 1, 64));
        memset(m->memo + old, 0, (m->memo_cap - old) * sizeof(*m->memo));
    }
    if (!m->memo[id]) m->memo_len++;
    m->memo[id] = o;
    return MG_OK;
}

static mg_status memo_get(vm *m, uint64_t id)
{
    if (id >= m->memo_cap || !m->memo[id]) return fail(m, "memo index not defined");
    return push(m, m->memo[id]);
}

/* ---- scalars ---- */

static mg_status push_long(vm *m, const uint8_t *b, size_t n)
{
    if (n <= 8) {
        uint64_t v = 0;
        for (size_t i = 0; i < n; i++) v |= (uint64_t)b[i] << (8 * i);
        if (n > 0 && n < 8 && (b[n - 1] & 0x80)) v |= ~(uint64_t)0 << (8 * n);
        return push(m, mg_pk_int(m->g, (int64_t)v));
    }
    mg_pk_obj *o = mg_pk_bytes(m->g, b, n);
    if (o) o->kind = MG_PK_BIGINT;
    return push(m, o);
}

static mg_status op_binlong(vm *m, size_t lenbytes)
{
    uint64_t n;
    const uint8_t *b = NULL;
    MG_FORWARD(read_uint(m, lenbytes, &n));
    if (lenbytes == 4 && (n & 0x80000000u)) return fail(m, "negative LONG4 length");
    MG_FORWARD(take(m, (size_t)n, &b));
    return push_long(m, b, (size_t)n);
}

static mg_status op_binfloat(vm *m)
{
    uint64_t bits = 0;
    const uint8_t *b = NULL;
    MG_FORWARD(take(m, 8, &b));
    for (int i = 0; i < 8; i++) bits = (bits << 8) | b[i];
    double d;
    memcpy(&d, &bits, sizeof d);
    return push(m, mg_pk_float(m->g, d));
}

static mg_status op_text_number(vm *m, int is_float)
{
    const char *s;
    size_t n;
    char buf[64];
    MG_FORWARD(read_line(m, &s, &n));
    if (n > 0 && s[n - 1] == 'L') n--; /* LONG "123L" */
    if (n == 0 || n >= sizeof buf) return fail(m, "bad text number");
    memcpy(buf, s, n);
    buf[n] = 0;
    char *end;
    errno = 0;
    if (is_float) {
        double d = strtod(buf, &end);
        if (*end) return fail(m, "bad FLOAT");
        return push(m, mg_pk_float(m->g, d));
    }
    if (strcmp(buf, "00") == 0 || strcmp(buf, "01") == 0) return push(m, mg_pk_bool(m->g, buf[1] == '1'));
    long long v = strtoll(buf, &end, 10);
    if (*end || errno) return failx(m, MG_ERR_UNSUPPORTED, "text integer too big or bad, opcode", 'I');
    return push(m, mg_pk_int(m->g, v));
}

/* Strings and bytes with an n-byte little-endian length prefix. */
static mg_status op_blob(vm *m, size_t lenbytes, mg_pk_kind kind)
{
    uint64_t n;
    const uint8_t *b = NULL;
    MG_FORWARD(read_uint(m, lenbytes, &n));
    if (n > m->len) return fail(m, "truncated pickle");
    MG_FORWARD(take(m, (size_t)n, &b));
    mg_pk_obj *o = kind == MG_PK_STR ? mg_pk_strn(m->g, (const char *)b, (size_t)n)
                                     : mg_pk_bytes(m->g, b, (size_t)n);
    return push(m, o);
}

static mg_status push_global(vm *m, const char *mod, size_t mlen, const char *name, size_t nlen)
{
    mg_pk_obj *o = mg_pk_container(m->g, MG_PK_GLOBAL);
    if (!o) return MG_ERR_NOMEM;
    o->str = mg_pk_copy(m->g, mod, mlen);
    o->len = mlen;
    o->name = mg_pk_copy(m->g, name, nlen);
    if (!o->str || !o->name) return MG_ERR_NOMEM;
    if (memchr(o->str, 0, mlen) || memchr(o->name, 0, nlen)) return fail(m, "NUL in a global name");
    return push(m, o);
}

static mg_status op_global(vm *m)
{
    const char *mod, *name;
    size_t ml, nl;
    MG_FORWARD(read_line(m, &mod, &ml));
    MG_FORWARD(read_line(m, &name, &nl));
    return push_global(m, mod, ml, name, nl);
}

static mg_status op_stack_global(vm *m)
{
    mg_pk_obj *mod, *name;
    MG_FORWARD(pop(m, &name));
    MG_FORWARD(pop(m, &mod));
    if (mod->kind != MG_PK_STR || name->kind != MG_PK_STR)
        return fail(m, "STACK_GLOBAL needs two strings");
    return push_global(m, mod->str, mod->len, name->str, name->len);
}

/* ---- containers ---- */

static mg_status make_tuple(vm *m, size_t base)
{
    mg_pk_obj *t = mg_pk_container(m->g, MG_PK_TUPLE);
    if (!t) return MG_ERR_NOMEM;
    size_t n = m->sp - base;
    MG_FORWARD(mg_pk_reserve(m->g, t, n));
    if (n) memcpy(t->items, m->stack + base, n * sizeof(*t->items));
    t->n = n;
    m->sp = base;
    return push(m, t);
}

static mg_status op_tuple_n(vm *m, size_t n)
{
    if (m->sp < fence(m) + n) return fail(m, "stack underflow");
    return make_tuple(m, m->sp - n);
}

static mg_status op_tuple_mark(vm *m)
{
    size_t base = 0;
    MG_FORWARD(pop_mark(m, &base));
    return make_tuple(m, base);
}

static mg_status add_items(vm *m, mg_pk_obj *target, size_t base)
{
    size_t n = m->sp - base;
    int is_obj = target->kind == MG_PK_OBJECT || target->kind == MG_PK_NDARRAY;
    if (target->kind != MG_PK_LIST && target->kind != MG_PK_SET && !is_obj)
        return fail(m, "APPEND/ADDITEMS target is not a list or set");
    if (is_obj && target->n != target->n_list)
        return fail(m, "APPEND on an object after SETITEM");
    MG_FORWARD(mg_pk_reserve(m->g, target, n));
    if (n) memcpy(target->items + target->n, m->stack + base, n * sizeof(*target->items));
    target->n += n;
    if (is_obj) target->n_list += n;
    m->sp = base;
    return MG_OK;
}

static mg_status op_appends(vm *m)
{
    size_t base = 0;
    MG_FORWARD(pop_mark(m, &base));
    if (base == 0 || base <= fence(m)) return fail(m, "stack underflow");
    return add_items(m, m->stack[base - 1], base);
}

static mg_status op_append(vm *m)
{
    if (m->sp < fence(m) + 2) return fail(m, "stack underflow");
    return add_items(m, m->stack[m->sp - 2], m->sp - 1);
}

static mg_status set_pairs(vm *m, mg_pk_obj *target, size_t base)
{
    size_t n = m->sp - base;
    if (n % 2) return fail(m, "SETITEMS with an odd number of items");
    if (target->kind != MG_PK_DICT && target->kind != MG_PK_ODICT && target->kind != MG_PK_OBJECT)
        return fail(m, "SETITEM target is not a dict");
    MG_FORWARD(mg_pk_reserve(m->g, target, n));
    size_t used = target->kind == MG_PK_OBJECT ? target->n_list + 2 * (target->n - target->n_list)
                                               : 2 * target->n;
    if (n) memcpy(target->items + used, m->stack + base, n * sizeof(*target->items));
    target->n += n / 2;
    m->sp = base;
    return MG_OK;
}

static mg_status op_setitems(vm *m)
{
    size_t base = 0;
    MG_FORWARD(pop_mark(m, &base));
    if (base == 0 || base <= fence(m)) return fail(m, "stack underflow");
    return set_pairs(m, m->stack[base - 1], base);
}

static mg_status op_setitem(vm *m)
{
    if (m->sp < fence(m) + 3) return fail(m, "stack underflow");
    return set_pairs(m, m->stack[m->sp - 3], m->sp - 2);
}

/* DICT / LIST / FROZENSET: a new container from the items above the MARK. */
static mg_status op_collect(vm *m, mg_pk_kind kind)
{
    size_t base = 0;
    MG_FORWARD(pop_mark(m, &base));
    mg_pk_obj *c = mg_pk_container(m->g, kind);
    if (!c) return MG_ERR_NOMEM;
    if (kind == MG_PK_DICT) MG_FORWARD(set_pairs(m, c, base));
    else MG_FORWARD(add_items(m, c, base));
    return push(m, c);
}

/* ---- recognisers ---- */

static int is_global(const mg_pk_obj *o, const char *mod, const char *name)
{
    return o && o->kind == MG_PK_GLOBAL && strcmp(o->str, mod) == 0 && strcmp(o->name, name) == 0;
}

static int is_int(const mg_pk_obj *o) { return o->kind == MG_PK_INT || o->kind == MG_PK_BOOL; }

static int is_str(const mg_pk_obj *o, const char *s)
{
    return o->kind == MG_PK_STR && strcmp(o->str, s) == 0;
}

static mg_status int_tuple(vm *m, const mg_pk_obj *t, int64_t **out, int *ndim)
{
    if (t->kind != MG_PK_TUPLE && t->kind != MG_PK_LIST) return fail(m, "tensor size/stride is not a tuple");
    if (t->n > 64) return fail(m, "tensor has more than 64 dimensions");
    *out = mg_pk_alloc(m->g, sizeof(int64_t) * (t->n + 1));
    if (!*out) return MG_ERR_NOMEM;
    for (size_t i = 0; i < t->n; i++) {
        if (t->items[i]->kind != MG_PK_INT || t->items[i]->i < 0)
            return fail(m, "tensor size/stride entry is not a non-negative int");
        (*out)[i] = t->items[i]->i;
    }
    *ndim = (int)t->n;
    return MG_OK;
}

/* ('storage', StorageClass, key, location, numel) -> dtype (or U8 bytes for untyped). */
static mg_status parse_storage(vm *m, const mg_pk_obj *pid, mg_pk_tensor *t, mg_tdtype v3_dtype)
{
    if (pid->kind != MG_PK_PERSID) return fail(m, "tensor storage is not a persistent id");
    const mg_pk_obj *s = pid->args;
    if (s->kind != MG_PK_TUPLE || s->n < 5 || !is_str(s->items[0], "storage"))
        return fail(m, "persistent id is not ('storage', type, key, location, numel)");
    const mg_pk_obj *cls = s->items[1], *key = s->items[2], *loc = s->items[3], *num = s->items[4];
    if (cls->kind != MG_PK_GLOBAL || key->kind != MG_PK_STR || loc->kind != MG_PK_STR ||
        num->kind != MG_PK_INT || num->i < 0)
        return fail(m, "bad storage persistent id fields");
    mg_tdtype sd = strcmp(cls->name, "UntypedStorage") == 0 ? MG_TD_U8 : mg_pk_storage_dtype(cls->name);
    if (sd == MG_TD_INVALID) return fail(m, "unknown storage class");
    uint64_t nbytes = (uint64_t)num->i;
    if (nbytes > UINT64_MAX / 16) return fail(m, "storage too large");
    nbytes *= mg_tdtype_size(sd);
    t->dtype = v3_dtype != MG_TD_INVALID ? v3_dtype : sd;
    size_t es = mg_tdtype_size(t->dtype);
    if (nbytes % es) return fail(m, "storage size is not a multiple of the element size");
    t->storage_nbytes = nbytes;
    t->storage_numel = (int64_t)(nbytes / es);
    t->storage_key = key->str;
    t->location = loc->str;
    return MG_OK;
}

/* The view must stay inside its storage. */
static mg_status check_view(vm *m, const mg_pk_tensor *t)
{
    uint64_t last = (uint64_t)t->offset;
    for (int d = 0; d < t->ndim; d++) {
        if (t->size[d] == 0) return MG_OK;
        if (t->size[d] > 0 && (uint64_t)t->stride[d] > (UINT64_MAX >> 2) / (uint64_t)t->size[d])
            return fail(m, "tensor view overflows");
        last += (uint64_t)(t->size[d] - 1) * (uint64_t)t->stride[d];
        if (last > (UINT64_MAX >> 2)) return fail(m, "tensor view overflows");
    }
    if (last >= (uint64_t)t->storage_numel) return fail(m, "tensor view exceeds its storage");
    return MG_OK;
}

static mg_status make_tensor(vm *m, const mg_pk_obj *args, int v3, mg_pk_obj **out)
{
    size_t need = v3 ? 7 : 4; /* v1: (storage, offset, size, stride); v2 adds grad, hooks */
    if (args->kind != MG_PK_TUPLE || args->n < need) return fail(m, "bad _rebuild_tensor arguments");
    mg_tdtype v3d = MG_TD_INVALID;
    if (v3) {
        const mg_pk_obj *dt = args->items[6];
        if (dt->kind != MG_PK_GLOBAL || strcmp(dt->str, "torch") != 0 ||
            (v3d = mg_pk_torch_dtype(dt->name)) == MG_TD_INVALID)
            return fail(m, "unknown tensor dtype in _rebuild_tensor_v3");
    }
    mg_pk_tensor *t = mg_pk_alloc(m->g, sizeof(*t));
    mg_pk_obj *o = mg_pk_container(m->g, MG_PK_TENSOR);
    if (!t || !o) return MG_ERR_NOMEM;
    o->tensor = t;
    MG_FORWARD(parse_storage(m, args->items[0], t, v3d));
    if (args->items[1]->kind != MG_PK_INT || args->items[1]->i < 0) return fail(m, "bad tensor offset");
    t->offset = args->items[1]->i;
    int nd2;
    MG_FORWARD(int_tuple(m, args->items[2], &t->size, &t->ndim));
    MG_FORWARD(int_tuple(m, args->items[3], &t->stride, &nd2));
    if (nd2 != t->ndim) return fail(m, "tensor size and stride differ in length");
    t->requires_grad = args->n > 4 && is_int(args->items[4]) && args->items[4]->i;
    MG_FORWARD(check_view(m, t));
    MG_FORWARD(mg_pk_add_tensor(m->g, o));
    *out = o;
    return MG_OK;
}

/* _codecs.encode(text, 'latin1') -> bytes. Returns NULL (no error) if not that pattern. */
static mg_pk_obj *latin1_bytes(vm *m, const mg_pk_obj *args)
{
    if (args->kind != MG_PK_TUPLE || args->n != 2 || args->items[0]->kind != MG_PK_STR ||
        !(is_str(args->items[1], "latin1") || is_str(args->items[1], "latin-1")))
        return NULL;
    const uint8_t *s = (const uint8_t *)args->items[0]->str;
    size_t n = args->items[0]->len, k = 0;
    uint8_t *buf = mg_pk_alloc(m->g, n + 1);
    if (!buf) return NULL;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < 0x80) buf[k++] = s[i];
        else if ((s[i] == 0xc2 || s[i] == 0xc3) && i + 1 < n && (s[i + 1] & 0xc0) == 0x80) {
            buf[k++] = (uint8_t)(((s[i] & 0x1f) << 6) | (s[i + 1] & 0x3f));
            i++;
        } else return NULL;
    }
    mg_pk_obj *o = mg_pk_container(m->g, MG_PK_BYTES);
    if (!o) return NULL;
    o->str = (const char *)buf;
    o->len = k;
    return o;
}

/* fn(*args) when fn rebuilds a tensor (torch._utils._rebuild_tensor[_v2|_v3]) into *o;
 * *o stays NULL for another fn. A plain torch.Tensor that carried Python attributes comes
 * as _rebuild_from_type_v2(fn, torch.Tensor, args, attributes) (torch.Tensor.__reduce_ex__;
 * megatron-core's fp32 masters carry tensor_model_parallel, partition_dim, ...): op_reduce
 * hands its fn and args here, the attributes are dropped (torch.load's tensor is the same). */
static mg_status tensor_of_rebuild(vm *m, const mg_pk_obj *fn, mg_pk_obj *args, mg_pk_obj **o)
{
    if (is_global(fn, "torch._utils", "_rebuild_tensor_v2") ||
        is_global(fn, "torch._utils", "_rebuild_tensor"))
        return make_tensor(m, args, 0, o);
    if (is_global(fn, "torch._utils", "_rebuild_tensor_v3")) return make_tensor(m, args, 1, o);
    return MG_OK;
}

static mg_status op_reduce(vm *m)
{
    mg_pk_obj *args, *fn;
    MG_FORWARD(pop(m, &args));
    MG_FORWARD(pop(m, &fn));
    if (args->kind != MG_PK_TUPLE) return fail(m, "REDUCE arguments are not a tuple");
    mg_pk_obj *o = NULL;
    if (is_global(fn, "torch._tensor", "_rebuild_from_type_v2") && args->n == 4 &&
        is_global(args->items[1], "torch", "Tensor") && args->items[2]->kind == MG_PK_TUPLE)
        MG_FORWARD(tensor_of_rebuild(m, args->items[0], args->items[2], &o));
    else MG_FORWARD(tensor_of_rebuild(m, fn, args, &o));
    if (o) return push(m, o);
    if ((is_global(fn, "torch._utils", "_rebuild_parameter") ||
         is_global(fn, "torch._utils", "_rebuild_parameter_with_state")) &&
        args->n >= 2 && args->items[0]->kind == MG_PK_TENSOR) {
        o = args->items[0];
        o->tensor->parameter = 1;
        o->tensor->requires_grad = is_int(args->items[1]) && args->items[1]->i;
    } else if (is_global(fn, "collections", "OrderedDict") && args->n == 0)
        o = mg_pk_container(m->g, MG_PK_ODICT);
    else if (is_global(fn, "_codecs", "encode"))
        o = latin1_bytes(m, args);
    if (!o) {
        o = mg_pk_container(m->g, MG_PK_OBJECT);
        if (!o) return MG_ERR_NOMEM;
        o->callable = fn;
        o->args = args;
    }
    return push(m, o);
}

static mg_status op_newobj(vm *m, int ex)
{
    mg_pk_obj *cls, *args, *kwargs = NULL;
    if (ex) MG_FORWARD(pop(m, &kwargs));
    MG_FORWARD(pop(m, &args));
    MG_FORWARD(pop(m, &cls));
    if (args->kind != MG_PK_TUPLE) return fail(m, "NEWOBJ arguments are not a tuple");
    mg_pk_obj *o;
    if (!ex && is_global(cls, "argparse", "Namespace") && args->n == 0) {
        o = mg_pk_container(m->g, MG_PK_NAMESPACE);
    } else {
        o = mg_pk_container(m->g, MG_PK_OBJECT);
        if (!o) return MG_ERR_NOMEM;
        o->callable = cls;
        o->args = args;
        o->newobj = 1;
        if (kwargs && (kwargs->kind != MG_PK_DICT || kwargs->n))
            return failx(m, MG_ERR_UNSUPPORTED, "NEWOBJ_EX with keyword arguments, opcode", 0x92);
    }
    return push(m, o);
}

/* numpy _reconstruct + BUILD (1, shape, dtype, fortran, raw bytes) -> nd. */
static void try_ndarray(vm *m, mg_pk_obj *o)
{
    const mg_pk_obj *fn = o->callable, *s = o->state;
    if (!(is_global(fn, "numpy.core.multiarray", "_reconstruct") ||
          is_global(fn, "numpy._core.multiarray", "_reconstruct")))
        return;
    if (s->kind != MG_PK_TUPLE || s->n != 5 || s->items[1]->kind != MG_PK_TUPLE ||
        s->items[2]->kind != MG_PK_OBJECT || s->items[4]->kind != MG_PK_BYTES)
        return;
    const mg_pk_obj *dt = s->items[2];
    if (!dt->args || dt->args->n < 1 || dt->args->items[0]->kind != MG_PK_STR) return;
    const mg_pk_obj *ds = dt->state;
    const char *order = "";
    if (ds && ds->kind == MG_PK_TUPLE && ds->n >= 2 && ds->items[1]->kind == MG_PK_STR)
        order = ds->items[1]->str;
    mg_pk_ndarray *nd = mg_pk_alloc(m->g, sizeof(*nd));
    if (!nd || int_tuple(m, s->items[1], &nd->shape, &nd->ndim) != MG_OK) return;
    if (strlen(order) + dt->args->items[0]->len >= sizeof nd->dtype) return;
    strcpy(nd->dtype, order);
    strcat(nd->dtype, dt->args->items[0]->str);
    nd->data = (const uint8_t *)s->items[4]->str;
    nd->nbytes = s->items[4]->len;
    o->nd = nd;
    o->kind = MG_PK_NDARRAY;
}

static mg_status op_build(vm *m)
{
    mg_pk_obj *state, *o;
    MG_FORWARD(pop(m, &state));
    MG_FORWARD(top(m, &o));
    switch (o->kind) {
    case MG_PK_NAMESPACE:
        if (state->kind != MG_PK_DICT) return fail(m, "Namespace state is not a dict");
        for (size_t i = 0; i < state->n; i++)
            MG_FORWARD(mg_pk_set_obj(m->g, o, state->items[2 * i], state->items[2 * i + 1]));
        return MG_OK;
    case MG_PK_OBJECT:
        o->state = state;
        try_ndarray(m, o);
        return MG_OK;
    case MG_PK_ODICT:
    case MG_PK_NDARRAY:
        o->state = state;
        return MG_OK;
    case MG_PK_TENSOR: /* Parameter/tensor python attributes: kept nowhere */
        return MG_OK;
    default:
        return fail(m, "BUILD on an object that has no state");
    }
}

static mg_status op_persid(vm *m, int binary)
{
    mg_pk_obj *pid;
    if (binary) MG_FORWARD(pop(m, &pid));
    else {
        const char *s;
        size_t n;
        MG_FORWARD(read_line(m, &s, &n));
        pid = mg_pk_strn(m->g, s, n);
        if (!pid) return MG_ERR_NOMEM;
    }
    mg_pk_obj *o = mg_pk_container(m->g, MG_PK_PERSID);
    if (!o) return MG_ERR_NOMEM;
    o->args = pid;
    return push(m, o);
}

static mg_status op_text_memo(vm *m, int put)
{
    const char *s;
    size_t n;
    MG_FORWARD(read_line(m, &s, &n));
    uint64_t id = 0;
    if (n == 0 || n > 18) return fail(m, "bad memo index");
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9') return fail(m, "bad memo index");
        id = id * 10 + (uint64_t)(s[i] - '0');
    }
    return put ? memo_put(m, id) : memo_get(m, id);
}

static mg_status op_dup_pop(vm *m, int op)
{
    mg_pk_obj *o;
    size_t base = 0;
    switch (op) {
    case '0': return pop(m, &o);
    case '1': MG_FORWARD(pop_mark(m, &base)); m->sp = base; return MG_OK;
    default: MG_FORWARD(top(m, &o)); return push(m, o);
    }
}

static mg_status op_memo(vm *m, int op)
{
    uint64_t id;
    switch (op) {
    case 'h': MG_FORWARD(read_uint(m, 1, &id)); return memo_get(m, id);
    case 'j': MG_FORWARD(read_uint(m, 4, &id)); return memo_get(m, id);
    case 'q': MG_FORWARD(read_uint(m, 1, &id)); return memo_put(m, id);
    case 'r': MG_FORWARD(read_uint(m, 4, &id)); return memo_put(m, id);
    default: return memo_put(m, m->memo_len); /* MEMOIZE */
    }
}

static mg_status op_int(vm *m, int op)
{
    uint64_t v;
    switch (op) {
    case 'J': MG_FORWARD(read_uint(m, 4, &v)); return push(m, mg_pk_int(m->g, (int32_t)(uint32_t)v));
    case 'K': MG_FORWARD(read_uint(m, 1, &v)); return push(m, mg_pk_int(m->g, (int64_t)v));
    default: MG_FORWARD(read_uint(m, 2, &v)); return push(m, mg_pk_int(m->g, (int64_t)v));
    }
}

static mg_status op_stop(vm *m)
{
    MG_FORWARD(pop(m, &m->result));
    m->done = 1;
    return MG_OK;
}

static mg_status op_skip(vm *m, size_t n)
{
    const uint8_t *b = NULL;
    return take(m, n, &b);
}

static mg_status op_proto(vm *m)
{
    uint64_t v;
    MG_FORWARD(read_uint(m, 1, &v));
    if (v > 5) return fail(m, "unsupported pickle protocol");
    return MG_OK;
}

static mg_status op_frozenset(vm *m)
{
    return op_collect(m, MG_PK_SET);
}

static mg_status step(vm *m, int op)
{
    switch (op) {
    case 0x80: return op_proto(m);
    case 0x95: return op_skip(m, 8); /* FRAME: frames are not needed on a flat buffer */
    case '.': return op_stop(m);
    case '(': return push_mark(m);
    case '0': case '1': case '2': return op_dup_pop(m, op);
    case 'N': return push(m, mg_pk_none(m->g));
    case 0x88: case 0x89: return push(m, mg_pk_bool(m->g, op == 0x88));
    case 'J': case 'K': case 'M': return op_int(m, op);
    case 'I': case 'L': return op_text_number(m, 0);
    case 'F': return op_text_number(m, 1);
    case 0x8a: return op_binlong(m, 1);
    case 0x8b: return op_binlong(m, 4);
    case 'G': return op_binfloat(m);
    case 'X': return op_blob(m, 4, MG_PK_STR);
    case 0x8c: case 'U': return op_blob(m, 1, MG_PK_STR);
    case 0x8d: return op_blob(m, 8, MG_PK_STR);
    case 'T': return op_blob(m, 4, MG_PK_STR);
    case 'B': return op_blob(m, 4, MG_PK_BYTES);
    case 'C': return op_blob(m, 1, MG_PK_BYTES);
    case 0x8e: case 0x96: return op_blob(m, 8, MG_PK_BYTES);
    case ')': return push(m, mg_pk_container(m->g, MG_PK_TUPLE));
    case 't': return op_tuple_mark(m);
    case 0x85: case 0x86: case 0x87: return op_tuple_n(m, (size_t)(op - 0x84));
    case ']': return push(m, mg_pk_container(m->g, MG_PK_LIST));
    case 'l': return op_collect(m, MG_PK_LIST);
    case 'a': return op_append(m);
    case 'e': case 0x90: return op_appends(m);
    case '}': return push(m, mg_pk_container(m->g, MG_PK_DICT));
    case 'd': return op_collect(m, MG_PK_DICT);
    case 's': return op_setitem(m);
    case 'u': return op_setitems(m);
    case 0x8f: return push(m, mg_pk_container(m->g, MG_PK_SET));
    case 0x91: return op_frozenset(m);
    case 'c': return op_global(m);
    case 0x93: return op_stack_global(m);
    case 'R': return op_reduce(m);
    case 0x81: return op_newobj(m, 0);
    case 0x92: return op_newobj(m, 1);
    case 'b': return op_build(m);
    case 'Q': return op_persid(m, 1);
    case 'P': return op_persid(m, 0);
    case 'h': case 'j': case 'q': case 'r': case 0x94: return op_memo(m, op);
    case 'g': return op_text_memo(m, 0);
    case 'p': return op_text_memo(m, 1);
    case 0x82: case 0x83: case 0x84: case 0x97: case 0x98: case 'i': case 'o': case 'S':
    case 'V':
        return failx(m, MG_ERR_UNSUPPORTED, "not supported: pickle opcode", (unsigned)op);
    default:
        return failx(m, MG_ERR_FORMAT, "unknown pickle opcode", (unsigned)op);
    }
}

mg_status mg_pk_load(mg_pk_graph *g, const uint8_t *data, size_t len, const char *label,
                     mg_pk_obj **root)
{
    vm m = {.g = g, .p = data, .len = len, .label = label ? label : "pickle"};
    mg_status st = MG_OK;
    *root = NULL;
    while (st == MG_OK && !m.done) {
        m.op_pos = m.pos;
        if (m.pos >= m.len) st = fail(&m, "truncated pickle (no STOP)");
        else st = step(&m, m.p[m.pos++]);
    }
    if (st == MG_OK) *root = m.result;
    free(m.stack);
    free(m.marks);
    free(m.memo);
    return st;
}

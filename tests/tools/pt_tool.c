/* pt_tool.c — test program for the torch.save module (mg/torchfile.h).
 *
 *   pt_tool dump FILE.pt            prints the object graph as stable text (below)
 *   pt_tool write [--namespace] OUT.pt
 *                                   writes a fixed graph: tensors (F32/BF16/F16/I64/BOOL,
 *                                   a 0-dim one, a strided view sharing a storage), nested
 *                                   dicts, lists (one longer than a SETITEMS batch), ints of
 *                                   every encoding, floats, str, bytes, None, bools, a
 *                                   torch dtype; --namespace adds 'args': argparse.Namespace
 *   pt_tool roundtrip IN.pt OUT.pt  reads IN and saves the same graph to OUT
 *
 * Dump format (tests/interop/test_torchfile.py renders the same from torch.load): one line
 * per value, two spaces per level; mapping entries are "KEY: VALUE", sequence items bare.
 * Containers print "kind[n]" and their items below; tensors print
 * "tensor DTYPE shape=[..] stride=[..] offset=N storage=KEY crc32=0x........" where the
 * CRC covers the view's elements in C order; numpy arrays "ndarray DTYPE shape=[..]
 * crc32=..."; floats "%.17g"; strings/bytes quoted with \xNN escapes for control bytes.
 * Exit status: 0 ok, 1 library error (message on stderr), 2 usage.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/torchfile.h"

static void print_quoted(const char *s, size_t n, int is_bytes)
{
    if (is_bytes) putchar('b');
    putchar('\'');
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)s[i];
        if (c == '\\' || c == '\'') printf("\\%c", c);
        else if (c < 0x20 || c == 0x7f || (is_bytes && c >= 0x80)) printf("\\x%02x", c);
        else putchar(c);
    }
    putchar('\'');
}

static void print_dims(const char *label, const int64_t *v, int n)
{
    printf(" %s=[", label);
    for (int i = 0; i < n; i++) printf(i ? ", %" PRId64 : "%" PRId64, v[i]);
    putchar(']');
}

/* CRC-32 of the view's elements in C order. */
static uint32_t view_crc(const mg_pk_tensor *t)
{
    size_t es = mg_tdtype_size(t->dtype);
    int64_t idx[64] = {0};
    int64_t n = mg_pk_tensor_numel(t);
    uint32_t crc = 0;
    for (int64_t k = 0; k < n; k++) {
        int64_t off = t->offset;
        for (int d = 0; d < t->ndim; d++) off += idx[d] * t->stride[d];
        crc = mg_crc32(crc, t->data + (size_t)off * es, es);
        for (int d = t->ndim - 1; d >= 0; d--) {
            if (++idx[d] < t->size[d]) break;
            idx[d] = 0;
        }
    }
    return crc;
}

static int print_value(const mg_pk_obj *o, int depth);

static void print_scalar(const mg_pk_obj *o)
{
    switch (o->kind) {
    case MG_PK_NONE: printf("None"); break;
    case MG_PK_BOOL: printf(o->i ? "True" : "False"); break;
    case MG_PK_INT: printf("%" PRId64, o->i); break;
    case MG_PK_FLOAT: printf("%.17g", o->f); break;
    case MG_PK_STR: print_quoted(o->str, o->len, 0); break;
    case MG_PK_BYTES: print_quoted(o->str, o->len, 1); break;
    case MG_PK_GLOBAL: printf("global %s.%s", o->str, o->name); break;
    case MG_PK_BIGINT:
        printf("bigint 0x");
        for (size_t i = o->len; i-- > 0;) printf("%02x", (unsigned char)o->str[i]);
        break;
    default: printf("<%s>", mg_pk_kind_name(o->kind)); break;
    }
}

static void indent(int depth)
{
    for (int i = 0; i < depth; i++) printf("  ");
}

static int print_items(mg_pk_obj *const *items, size_t n, int pairs, int depth)
{
    for (size_t i = 0; i < n; i++) {
        indent(depth);
        if (pairs) {
            print_scalar(items[2 * i]);
            printf(": ");
        }
        if (print_value(pairs ? items[2 * i + 1] : items[i], depth)) return 1;
    }
    return 0;
}

/* Prints o (its first line continues the current line) and its children. */
static int print_value(const mg_pk_obj *o, int depth)
{
    if (depth > MG_PK_MAX_DEPTH) {
        printf("...\n");
        return 1;
    }
    switch (o->kind) {
    case MG_PK_TUPLE: case MG_PK_LIST: case MG_PK_SET:
        printf("%s[%zu]\n", mg_pk_kind_name(o->kind), o->n);
        return print_items(o->items, o->n, 0, depth + 1);
    case MG_PK_DICT: case MG_PK_ODICT:
        printf("%s[%zu]\n", mg_pk_kind_name(o->kind), o->n);
        return print_items(o->items, o->n, 1, depth + 1);
    case MG_PK_NAMESPACE:
        printf("Namespace[%zu]\n", o->state->n);
        return print_items(o->state->items, o->state->n, 1, depth + 1);
    case MG_PK_TENSOR: {
        const mg_pk_tensor *t = o->tensor;
        printf("tensor %s", mg_tdtype_name(t->dtype));
        print_dims("shape", t->size, t->ndim);
        print_dims("stride", t->stride, t->ndim);
        printf(" offset=%" PRId64 " storage=%s crc32=0x%08x\n", t->offset, t->storage_key, view_crc(t));
        return 0;
    }
    case MG_PK_NDARRAY:
        printf("ndarray %s", o->nd->dtype);
        print_dims("shape", o->nd->shape, o->nd->ndim);
        printf(" crc32=0x%08x\n", mg_crc32(0, o->nd->data, o->nd->nbytes));
        return 0;
    case MG_PK_OBJECT:
        printf("object %s%s\n", o->newobj ? "new " : "", o->callable->kind == MG_PK_GLOBAL ? o->callable->name : "?");
        indent(depth + 1);
        printf("args: ");
        if (print_value(o->args, depth + 1)) return 1;
        if (o->n) {
            indent(depth + 1);
            printf("items[%zu]\n", o->n);
            if (print_items(o->items, o->n_list, 0, depth + 2)) return 1;
            if (print_items(o->items + o->n_list, o->n - o->n_list, 1, depth + 2)) return 1;
        }
        if (!o->state) return 0;
        indent(depth + 1);
        printf("state: ");
        return print_value(o->state, depth + 1);
    case MG_PK_PERSID:
        printf("persid ");
        return print_value(o->args, depth);
    default:
        print_scalar(o);
        putchar('\n');
        return 0;
    }
}

static int cmd_dump(const char *path)
{
    mg_torch_file *f;
    if (mg_torch_open(&f, path) != MG_OK) {
        fprintf(stderr, "pt_tool: error: %s\n", mg_last_error());
        return 1;
    }
    int rc = print_value(mg_torch_root(f), 0);
    mg_torch_close(f);
    return rc;
}

/* ---- the fixed graph of `write` ---- */

typedef struct {
    float f32[12];
    uint16_t bf16[6], f16[5];
    int64_t i64[4];
    uint8_t flags[3];
    float scalar;
} payload;

static void fill_payload(payload *p)
{
    static const uint16_t bf16[6] = {0x3f80, 0xc000, 0x3fc0, 0x0000, 0x7f80, 0x4049}; /* 1,-2,1.5,0,inf,3.14 */
    static const uint16_t f16[5] = {0x3c00, 0xc000, 0x3e00, 0x7bff, 0x0001};          /* 1,-2,1.5,65504,tiny */
    static const int64_t i64[4] = {0, -1, INT64_C(1) << 40, INT64_MIN};
    for (int i = 0; i < 12; i++) p->f32[i] = (float)i * 0.5f - 1.0f;
    memcpy(p->bf16, bf16, sizeof bf16);
    memcpy(p->f16, f16, sizeof f16);
    memcpy(p->i64, i64, sizeof i64);
    p->flags[0] = 1, p->flags[1] = 0, p->flags[2] = 1;
    p->scalar = 2.5f;
}

#define TRY(x) do { if (!(x)) return NULL; } while (0)

static mg_pk_obj *make_model(mg_pk_graph *g, payload *p)
{
    mg_pk_obj *m = mg_pk_container(g, MG_PK_ODICT), *view;
    int64_t s34[2] = {3, 4}, s12 = 12, s23[2] = {2, 3}, s5 = 5, s22[2] = {2, 2}, s3 = 3;
    TRY(m);
    TRY(mg_pk_set(g, m, "w_f32", mg_pk_tensor_new(g, MG_TD_F32, 2, s34, p->f32)) == MG_OK);
    TRY(mg_pk_set(g, m, "w_bf16", mg_pk_tensor_new(g, MG_TD_BF16, 2, s23, p->bf16)) == MG_OK);
    TRY(mg_pk_set(g, m, "w_f16", mg_pk_tensor_new(g, MG_TD_F16, 1, &s5, p->f16)) == MG_OK);
    TRY(mg_pk_set(g, m, "idx_i64", mg_pk_tensor_new(g, MG_TD_I64, 2, s22, p->i64)) == MG_OK);
    TRY(mg_pk_set(g, m, "mask", mg_pk_tensor_new(g, MG_TD_BOOL, 1, &s3, p->flags)) == MG_OK);
    TRY(mg_pk_set(g, m, "scalar", mg_pk_tensor_new(g, MG_TD_F32, 0, NULL, &p->scalar)) == MG_OK);
    /* a view of w_f32's storage: elements 1, 5, 9 */
    TRY(view = mg_pk_tensor_new(g, MG_TD_F32, 1, &s3, p->f32));
    view->tensor->storage_numel = s12;
    view->tensor->storage_nbytes = 48;
    view->tensor->offset = 1;
    view->tensor->stride[0] = 4;
    TRY(mg_pk_set(g, m, "view", view) == MG_OK);
    return m;
}

static mg_pk_obj *make_list(mg_pk_graph *g)
{
    static const int64_t ints[] = {1, -2, 255, 256, 65535, 65536, 70000, -3000000000LL,
                                   INT64_C(1) << 40, INT64_MAX, INT64_MIN};
    mg_pk_obj *l = mg_pk_container(g, MG_PK_LIST);
    TRY(l);
    for (size_t i = 0; i < sizeof ints / sizeof ints[0]; i++)
        TRY(mg_pk_append(g, l, mg_pk_int(g, ints[i])) == MG_OK);
    TRY(mg_pk_append(g, l, mg_pk_float(g, 1.5)) == MG_OK);
    TRY(mg_pk_append(g, l, mg_pk_float(g, -1e-300)) == MG_OK);
    TRY(mg_pk_append(g, l, mg_pk_str(g, "h\xc3\xa9llo 'q' \\ \n")) == MG_OK);
    TRY(mg_pk_append(g, l, mg_pk_none(g)) == MG_OK);
    TRY(mg_pk_append(g, l, mg_pk_bool(g, 1)) == MG_OK);
    TRY(mg_pk_append(g, l, mg_pk_bool(g, 0)) == MG_OK);
    return l;
}

static mg_pk_obj *make_nested(mg_pk_graph *g)
{
    mg_pk_obj *n = mg_pk_container(g, MG_PK_DICT), *a = mg_pk_container(g, MG_PK_DICT);
    mg_pk_obj *t = mg_pk_container(g, MG_PK_TUPLE), *big = mg_pk_container(g, MG_PK_LIST);
    mg_pk_obj *many = mg_pk_container(g, MG_PK_DICT);
    TRY(n && a && t && big && many);
    TRY(mg_pk_set(g, a, "b", make_list(g)) == MG_OK);
    TRY(mg_pk_set(g, n, "a", a) == MG_OK);
    for (int i = 1; i <= 4; i++) TRY(mg_pk_append(g, t, mg_pk_int(g, i)) == MG_OK);
    TRY(mg_pk_set(g, n, "tuple", t) == MG_OK);
    for (int i = 0; i < 2500; i++) TRY(mg_pk_append(g, big, mg_pk_int(g, i * 7)) == MG_OK);
    TRY(mg_pk_set(g, n, "big_list", big) == MG_OK);
    for (int i = 0; i < 1001; i++) TRY(mg_pk_set_obj(g, many, mg_pk_int(g, i), mg_pk_int(g, -i)) == MG_OK);
    TRY(mg_pk_set(g, n, "int_keys", many) == MG_OK);
    TRY(mg_pk_set(g, n, "empty", mg_pk_container(g, MG_PK_DICT)) == MG_OK);
    TRY(mg_pk_set(g, n, "empty_list", mg_pk_container(g, MG_PK_LIST)) == MG_OK);
    return n;
}

static mg_pk_obj *make_args(mg_pk_graph *g)
{
    mg_pk_obj *ns = mg_pk_container(g, MG_PK_NAMESPACE), *l = mg_pk_container(g, MG_PK_LIST);
    TRY(ns && l);
    TRY(mg_pk_append(g, l, mg_pk_int(g, 1)) == MG_OK && mg_pk_append(g, l, mg_pk_int(g, 2)) == MG_OK);
    TRY(mg_pk_set(g, ns, "num_layers", mg_pk_int(g, 2)) == MG_OK);
    TRY(mg_pk_set(g, ns, "hidden_size", mg_pk_int(g, 8)) == MG_OK);
    TRY(mg_pk_set(g, ns, "params_dtype", mg_pk_global(g, "torch", "bfloat16")) == MG_OK);
    TRY(mg_pk_set(g, ns, "lr", mg_pk_float(g, 1e-4)) == MG_OK);
    TRY(mg_pk_set(g, ns, "tokenizer_type", mg_pk_str(g, "GPT2BPETokenizer")) == MG_OK);
    TRY(mg_pk_set(g, ns, "vocab_size", mg_pk_none(g)) == MG_OK);
    TRY(mg_pk_set(g, ns, "bf16", mg_pk_bool(g, 1)) == MG_OK);
    TRY(mg_pk_set(g, ns, "layers", l) == MG_OK);
    return ns;
}

static mg_pk_obj *make_root(mg_pk_graph *g, payload *p, int with_args)
{
    mg_pk_obj *r = mg_pk_container(g, MG_PK_DICT);
    TRY(r);
    if (with_args) TRY(mg_pk_set(g, r, "args", make_args(g)) == MG_OK);
    TRY(mg_pk_set(g, r, "checkpoint_version", mg_pk_float(g, 3.0)) == MG_OK);
    TRY(mg_pk_set(g, r, "iteration", mg_pk_int(g, 10)) == MG_OK);
    TRY(mg_pk_set(g, r, "model", make_model(g, p)) == MG_OK);
    TRY(mg_pk_set(g, r, "nested", make_nested(g)) == MG_OK);
    TRY(mg_pk_set(g, r, "bytes", mg_pk_bytes(g, "\0\xff abc\x80", 7)) == MG_OK);
    TRY(mg_pk_set(g, r, "dtype", mg_pk_global(g, "torch", "bfloat16")) == MG_OK);
    return r;
}

static int cmd_write(const char *path, int with_args)
{
    payload p;
    fill_payload(&p);
    mg_pk_graph *g = mg_pk_graph_create();
    mg_pk_obj *root = g ? make_root(g, &p, with_args) : NULL;
    mg_status st = root ? mg_torch_save(path, root, NULL) : MG_ERR_NOMEM;
    mg_pk_graph_free(g);
    if (st != MG_OK) {
        fprintf(stderr, "pt_tool: error: %s\n", mg_last_error());
        return 1;
    }
    return 0;
}

static int cmd_roundtrip(const char *in, const char *out)
{
    mg_torch_file *f;
    mg_status st = mg_torch_open(&f, in);
    if (st == MG_OK) {
        st = mg_torch_save(out, mg_torch_root(f), NULL);
        mg_torch_close(f);
    }
    if (st != MG_OK) fprintf(stderr, "pt_tool: error: %s\n", mg_last_error());
    return st == MG_OK ? 0 : 1;
}

int main(int argc, char **argv)
{
    if (argc == 3 && strcmp(argv[1], "dump") == 0) return cmd_dump(argv[2]);
    if (argc == 3 && strcmp(argv[1], "write") == 0) return cmd_write(argv[2], 0);
    if (argc == 4 && strcmp(argv[1], "write") == 0 && strcmp(argv[2], "--namespace") == 0)
        return cmd_write(argv[3], 1);
    if (argc == 4 && strcmp(argv[1], "roundtrip") == 0) return cmd_roundtrip(argv[2], argv[3]);
    fprintf(stderr, "usage: pt_tool dump FILE.pt | write [--namespace] OUT.pt | roundtrip IN.pt OUT.pt\n");
    return 2;
}

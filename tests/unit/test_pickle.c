/* test_pickle.c — unit tests for mg/pickle.h: the VM on hand-assembled pickles (opcodes of
 * protocols 0-5, memo, marks, nested structures, recognised patterns) and its errors
 * (unknown opcode, stack underflow, truncation, bad memo), and the protocol 2 emitter
 * (exact bytes for small values, round trips through the VM). */
#include <math.h>
#include <stdlib.h>

#include "harness.h"
#include "mg/pickle.h"

static mg_pk_obj *load(mg_test_ctx *t, mg_pk_graph *g, const char *p, size_t n)
{
    mg_pk_obj *root = NULL;
    MG_CHECK_OK(t, mg_pk_load(g, (const uint8_t *)p, n, "t.pkl", &root));
    return root;
}

#define LOAD(g, lit) load(t, (g), (lit), sizeof(lit) - 1)

MG_TEST(pickle_scalars)
{
    mg_pk_graph *g = mg_pk_graph_create();
    /* (None, True, False, 7, 300, -5, LONG1 2^40, 1.5, 'ab') as TUPLE */
    mg_pk_obj *r = LOAD(g, "\x80\x02(N\x88\x89K\x07M\x2c\x01J\xfb\xff\xff\xff"
                           "\x8a\x06\x00\x00\x00\x00\x00\x01G\x3f\xf8\x00\x00\x00\x00\x00\x00"
                           "X\x02\x00\x00\x00" "abt.");
    MG_CHECK(t, r && r->kind == MG_PK_TUPLE && r->n == 9);
    if (r && r->n == 9) {
        MG_CHECK_EQ_INT(t, r->items[0]->kind, MG_PK_NONE);
        MG_CHECK(t, r->items[1]->kind == MG_PK_BOOL && r->items[1]->i == 1);
        MG_CHECK(t, r->items[2]->kind == MG_PK_BOOL && r->items[2]->i == 0);
        MG_CHECK_EQ_INT(t, r->items[3]->i, 7);
        MG_CHECK_EQ_INT(t, r->items[4]->i, 300);
        MG_CHECK_EQ_INT(t, r->items[5]->i, -5);
        MG_CHECK_EQ_INT(t, r->items[6]->i, (int64_t)1 << 40);
        MG_CHECK(t, r->items[7]->f == 1.5);
        MG_CHECK_EQ_STR(t, r->items[8]->str, "ab");
    }
    mg_pk_graph_free(g);
}

MG_TEST(pickle_long_sign_and_bigint)
{
    mg_pk_graph *g = mg_pk_graph_create();
    mg_pk_obj *r = LOAD(g, "\x80\x02\x8a\x01\xff.");
    MG_CHECK(t, r && r->kind == MG_PK_INT && r->i == -1);
    r = LOAD(g, "\x80\x02\x8a\x09\x00\x00\x00\x00\x00\x00\x00\x00\x01.");
    MG_CHECK(t, r && r->kind == MG_PK_BIGINT && r->len == 9);
    r = LOAD(g, "\x80\x02\x8a\x00.");
    MG_CHECK(t, r && r->kind == MG_PK_INT && r->i == 0);
    mg_pk_graph_free(g);
}

MG_TEST(pickle_memo_and_nesting)
{
    mg_pk_graph *g = mg_pk_graph_create();
    /* d = {'k': [1, 2], 'again': <memo 1 = the list>, 'x': {}} */
    mg_pk_obj *r = LOAD(g, "\x80\x02}q\x00(X\x01\x00\x00\x00kq\x01](K\x01K\x02" "eq\x02"
                           "X\x05\x00\x00\x00" "againh\x02X\x01\x00\x00\x00x}u.");
    MG_CHECK(t, r && r->kind == MG_PK_DICT && r->n == 3);
    mg_pk_obj *k = r ? mg_pk_get(r, "k") : NULL, *again = r ? mg_pk_get(r, "again") : NULL;
    MG_CHECK(t, k && k->kind == MG_PK_LIST && k->n == 2 && k->items[1]->i == 2);
    MG_CHECK(t, again == k);
    MG_CHECK(t, r && mg_pk_get(r, "x") && mg_pk_get(r, "x")->kind == MG_PK_DICT);
    mg_pk_graph_free(g);
}

MG_TEST(pickle_protocol4_opcodes)
{
    mg_pk_graph *g = mg_pk_graph_create();
    /* FRAME, SHORT_BINUNICODE + MEMOIZE, STACK_GLOBAL, SHORT_BINBYTES, EMPTY_SET/ADDITEMS,
     * DUP/POP, text INT/GET/PUT */
    mg_pk_obj *r = LOAD(g, "\x80\x04\x95\x30\x00\x00\x00\x00\x00\x00\x00"
                           "(\x8c\x05torch\x94\x8c\x08" "bfloat16\x94\x93"
                           "C\x03\x00\x01\x02\x8f(K\x05K\x06\x90"
                           "I42\np7\n0g7\n2\x86" "t.");
    MG_CHECK(t, r && r->kind == MG_PK_TUPLE && r->n == 4);
    if (r && r->n == 4) {
        MG_CHECK(t, r->items[0]->kind == MG_PK_GLOBAL && strcmp(r->items[0]->name, "bfloat16") == 0);
        MG_CHECK(t, r->items[1]->kind == MG_PK_BYTES && r->items[1]->len == 3);
        MG_CHECK(t, r->items[2]->kind == MG_PK_SET && r->items[2]->n == 2);
        MG_CHECK(t, r->items[3]->kind == MG_PK_TUPLE && r->items[3]->n == 2);
    }
    mg_pk_graph_free(g);
}

MG_TEST(pickle_ordereddict_namespace_bytes)
{
    mg_pk_graph *g = mg_pk_graph_create();
    mg_pk_obj *r = LOAD(g, "\x80\x02(ccollections\nOrderedDict\n)R(X\x01\x00\x00\x00" "aK\x01u"
                           "cargparse\nNamespace\n)\x81}(X\x02\x00\x00\x00lrG\x3f\x50\x62\x4d\xd2\xf1\xa9\xfc"
                           "X\x03\x00\x00\x00tokN" "ub"
                           "c_codecs\nencode\nX\x03\x00\x00\x00\xc3\xbf" "aX\x06\x00\x00\x00latin1\x86R"
                           "t.");
    MG_CHECK(t, r && r->kind == MG_PK_TUPLE && r->n == 3);
    if (r && r->n == 3) {
        MG_CHECK(t, r->items[0]->kind == MG_PK_ODICT && mg_pk_get(r->items[0], "a")->i == 1);
        mg_pk_obj *ns = r->items[1];
        MG_CHECK(t, ns->kind == MG_PK_NAMESPACE && mg_pk_len(ns) == 2);
        MG_CHECK(t, mg_pk_get(ns, "lr") && fabs(mg_pk_get(ns, "lr")->f - 0.001) < 1e-15);
        MG_CHECK(t, mg_pk_get(ns, "tok") && mg_pk_get(ns, "tok")->kind == MG_PK_NONE);
        MG_CHECK(t, r->items[2]->kind == MG_PK_BYTES && r->items[2]->len == 2 &&
                        memcmp(r->items[2]->str, "\xff" "a", 2) == 0);
    }
    mg_pk_graph_free(g);
}

static const char tensor_pkl[] =
    "\x80\x02" "ctorch._utils\n_rebuild_tensor_v2\n"
    "((X\x07\x00\x00\x00storagectorch\nBFloat16Storage\nX\x01\x00\x00\x00" "0X\x03\x00\x00\x00" "cpuK\x20tQ"
    "K\x01K\x03K\x04\x86K\x08K\x01\x86\x89" "ccollections\nOrderedDict\n)Rt"
    "R.";

/* The tensor of tensor_pkl's arguments (storage "0" of 32 elements, offset 1, [3, 4] with
 * strides [8, 1]) as the root of pickle p, of dtype dt. */
static void expect_tensor(mg_test_ctx *t, const char *p, size_t n, mg_tdtype dt)
{
    mg_pk_graph *g = mg_pk_graph_create();
    mg_pk_obj *r = load(t, g, p, n);
    MG_CHECK(t, r && r->kind == MG_PK_TENSOR);
    if (r && r->kind == MG_PK_TENSOR) {
        const mg_pk_tensor *x = r->tensor;
        MG_CHECK_EQ_INT(t, x->dtype, dt);
        MG_CHECK_EQ_STR(t, x->storage_key, "0");
        MG_CHECK_EQ_INT(t, x->storage_numel, 32);
        MG_CHECK_EQ_INT(t, x->storage_nbytes, 32 * (int64_t)mg_tdtype_size(dt));
        MG_CHECK_EQ_INT(t, x->offset, 1);
        MG_CHECK(t, x->ndim == 2 && x->size[0] == 3 && x->size[1] == 4 && x->stride[0] == 8);
        MG_CHECK(t, x->data == NULL);
    }
    MG_CHECK_EQ_INT(t, mg_pk_tensor_count(g), 1);
    mg_pk_graph_free(g);
}

MG_TEST(pickle_tensor_pattern)
{
    expect_tensor(t, tensor_pkl, sizeof tensor_pkl - 1, MG_TD_BF16);
}

/* torch.save of a plain tensor with a Python attribute (megatron-core's fp32 masters):
 * _rebuild_from_type_v2(_rebuild_tensor_v2, torch.Tensor, args, {attributes}); the
 * attributes are dropped. */
static const char tensor_attrs_pkl[] =
    "\x80\x02" "ctorch._tensor\n_rebuild_from_type_v2\n"
    "(" "ctorch._utils\n_rebuild_tensor_v2\n" "ctorch\nTensor\n"
    "((X\x07\x00\x00\x00storagectorch\nFloatStorage\nX\x01\x00\x00\x00" "0X\x03\x00\x00\x00" "cpuK\x20tQ"
    "K\x01K\x03K\x04\x86K\x08K\x01\x86\x89" "ccollections\nOrderedDict\n)Rt"
    "}X\x15\x00\x00\x00tensor_model_parallel\x88st"
    "R.";

MG_TEST(pickle_tensor_with_attributes)
{
    expect_tensor(t, tensor_attrs_pkl, sizeof tensor_attrs_pkl - 1, MG_TD_F32);
}

MG_TEST(pickle_tensor_view_past_storage)
{
    char bad[sizeof tensor_pkl];
    memcpy(bad, tensor_pkl, sizeof bad);
    char *numel = memmem(bad, sizeof bad, "cpuK\x20", 4);
    MG_CHECK(t, numel != NULL);
    if (!numel) return;
    numel[4] = 0x10; /* storage of 16 elements: offset 1 + 2*8 + 3 = 20 > 15 */
    mg_pk_graph *g = mg_pk_graph_create();
    mg_pk_obj *r;
    MG_CHECK_ERR(t, mg_pk_load(g, (const uint8_t *)bad, sizeof bad - 1, "t.pkl", &r), MG_ERR_FORMAT,
                 "exceeds its storage");
    mg_pk_graph_free(g);
}

static void expect_error(mg_test_ctx *t, const char *p, size_t n, mg_status st, const char *sub)
{
    mg_pk_graph *g = mg_pk_graph_create();
    mg_pk_obj *r;
    MG_CHECK_ERR(t, mg_pk_load(g, (const uint8_t *)p, n, "bad.pkl", &r), st, sub);
    MG_CHECK(t, strstr(mg_last_error(), "bad.pkl: pickle offset") != NULL);
    mg_pk_graph_free(g);
}

#define EXPECT_ERROR(lit, st, sub) expect_error(t, (lit), sizeof(lit) - 1, (st), (sub))

MG_TEST(pickle_errors)
{
    EXPECT_ERROR("\x80\x02\xff.", MG_ERR_FORMAT, "offset 2: unknown pickle opcode 0xff");
    EXPECT_ERROR("\x80\x02" "a.", MG_ERR_FORMAT, "stack underflow");
    EXPECT_ERROR("\x80\x02" "(0.", MG_ERR_FORMAT, "stack underflow"); /* pop below the mark */
    EXPECT_ERROR("\x80\x02" ".", MG_ERR_FORMAT, "stack underflow");
    EXPECT_ERROR("\x80\x02X\x10\x00\x00\x00" "ab", MG_ERR_FORMAT, "truncated");
    EXPECT_ERROR("\x80\x02K\x01", MG_ERR_FORMAT, "no STOP");
    EXPECT_ERROR("\x80\x02h\x05.", MG_ERR_FORMAT, "memo index not defined");
    EXPECT_ERROR("\x80\x02t.", MG_ERR_FORMAT, "no MARK");
    EXPECT_ERROR("\x80\x02K\x01K\x02s.", MG_ERR_FORMAT, "stack underflow");
    EXPECT_ERROR("\x80\x02)K\x01" "a.", MG_ERR_FORMAT, "not a list");
    EXPECT_ERROR("\x80\x02K\x01N" "b.", MG_ERR_FORMAT, "no state");
    EXPECT_ERROR("\x80\x09N.", MG_ERR_FORMAT, "protocol");
    EXPECT_ERROR("\x80\x02\x82\x01.", MG_ERR_UNSUPPORTED, "opcode 0x82");
}

static char key0[] = "0", key7[] = "7";

static const char *key_fn(void *ctx, const mg_pk_obj *o)
{
    (void)o;
    return ctx;
}

static void dump_eq(mg_test_ctx *t, const mg_pk_obj *o, const char *want, size_t n)
{
    uint8_t *out;
    size_t len;
    MG_CHECK_OK(t, mg_pk_dump(o, key_fn, key0, &out, &len));
    MG_CHECK_EQ_INT(t, len, n);
    MG_CHECK(t, len == n && memcmp(out, want, n) == 0);
    free(out);
}

#define DUMP_EQ(o, lit) dump_eq(t, (o), (lit), sizeof(lit) - 1)

MG_TEST(pickle_emit_exact_bytes)
{
    mg_pk_graph *g = mg_pk_graph_create();
    DUMP_EQ(mg_pk_int(g, 255), "\x80\x02K\xff.");
    DUMP_EQ(mg_pk_int(g, 256), "\x80\x02M\x00\x01.");
    DUMP_EQ(mg_pk_int(g, -1), "\x80\x02J\xff\xff\xff\xff.");
    DUMP_EQ(mg_pk_int(g, (int64_t)1 << 31), "\x80\x02\x8a\x05\x00\x00\x00\x80\x00.");
    DUMP_EQ(mg_pk_int(g, -((int64_t)1 << 31) - 1), "\x80\x02\x8a\x05\xff\xff\xff\x7f\xff.");
    DUMP_EQ(mg_pk_float(g, 1.5), "\x80\x02G\x3f\xf8\x00\x00\x00\x00\x00\x00.");
    DUMP_EQ(mg_pk_str(g, "ab"), "\x80\x02X\x02\x00\x00\x00" "ab.");
    mg_pk_obj *d = mg_pk_container(g, MG_PK_DICT);
    mg_pk_set(g, d, "a", mg_pk_none(g));
    DUMP_EQ(d, "\x80\x02}X\x01\x00\x00\x00" "aNs.");
    mg_pk_set(g, d, "b", mg_pk_bool(g, 1));
    DUMP_EQ(d, "\x80\x02}(X\x01\x00\x00\x00" "aNX\x01\x00\x00\x00" "b\x88u.");
    mg_pk_obj *ns = mg_pk_container(g, MG_PK_NAMESPACE);
    mg_pk_set(g, ns, "x", mg_pk_int(g, 1));
    DUMP_EQ(ns, "\x80\x02" "cargparse\nNamespace\n)\x81}X\x01\x00\x00\x00xK\x01sb.");
    int64_t size[2] = {3, 4};
    mg_pk_obj *x = mg_pk_tensor_new(g, MG_TD_BF16, 2, size, NULL);
    x->tensor->storage_numel = 32, x->tensor->storage_nbytes = 64, x->tensor->offset = 1;
    x->tensor->stride[0] = 8;
    DUMP_EQ(x, tensor_pkl);
    mg_pk_graph_free(g);
}

/* Emits a graph, reads it back, emits again: the two pickles must be identical. */
MG_TEST(pickle_emit_roundtrip)
{
    mg_pk_graph *g = mg_pk_graph_create();
    mg_pk_obj *root = mg_pk_container(g, MG_PK_ODICT), *l = mg_pk_container(g, MG_PK_LIST);
    for (int i = 0; i < 2345; i++) mg_pk_append(g, l, mg_pk_int(g, (int64_t)i * 1000003));
    mg_pk_set(g, root, "list", l);
    mg_pk_set(g, root, "bytes", mg_pk_bytes(g, "\0\x80\xff", 3));
    mg_pk_set(g, root, "dtype", mg_pk_global(g, "torch", "float16"));
    mg_pk_obj *tu = mg_pk_container(g, MG_PK_TUPLE);
    for (int i = 0; i < 5; i++) mg_pk_append(g, tu, mg_pk_float(g, i / 3.0));
    mg_pk_set(g, root, "tuple", tu);
    int64_t n = 4;
    mg_pk_set(g, root, "f8", mg_pk_tensor_new(g, MG_TD_F8_E4M3, 1, &n, NULL));
    uint8_t *a, *b;
    size_t alen, blen;
    MG_CHECK_OK(t, mg_pk_dump(root, key_fn, key7, &a, &alen));
    mg_pk_graph *g2 = mg_pk_graph_create();
    mg_pk_obj *back = NULL;
    MG_CHECK_OK(t, mg_pk_load(g2, a, alen, "rt", &back));
    MG_CHECK(t, back && back->kind == MG_PK_ODICT && mg_pk_len(back) == 5);
    mg_pk_obj *f8 = back ? mg_pk_get(back, "f8") : NULL;
    MG_CHECK(t, f8 && f8->kind == MG_PK_TENSOR && f8->tensor->dtype == MG_TD_F8_E4M3 &&
                    f8->tensor->storage_nbytes == 4);
    MG_CHECK(t, back && mg_pk_get(back, "list")->n == 2345);
    MG_CHECK_OK(t, mg_pk_dump(back, key_fn, key7, &b, &blen));
    MG_CHECK(t, alen == blen && memcmp(a, b, alen) == 0);
    free(a);
    free(b);
    mg_pk_graph_free(g);
    mg_pk_graph_free(g2);
}

MG_TEST(pickle_emit_refuses_cycles)
{
    mg_pk_graph *g = mg_pk_graph_create();
    mg_pk_obj *root = NULL;
    /* l = []; l.append(l) */
    const char p[] = "\x80\x02]q\x00h\x00" "a.";
    MG_CHECK_OK(t, mg_pk_load(g, (const uint8_t *)p, sizeof p - 1, "cyc", &root));
    uint8_t *out;
    size_t len;
    MG_CHECK_ERR(t, mg_pk_dump(root, key_fn, NULL, &out, &len), MG_ERR_FORMAT, "cyclic");
    mg_pk_graph_free(g);
}

MG_TEST(pickle_duplicate_key_last_wins)
{
    mg_pk_graph *g = mg_pk_graph_create();
    mg_pk_obj *r = LOAD(g, "\x80\x02}(X\x01\x00\x00\x00" "aK\x01X\x01\x00\x00\x00" "aK\x02u.");
    MG_CHECK(t, r && mg_pk_get(r, "a") && mg_pk_get(r, "a")->i == 2);
    mg_pk_graph_free(g);
}

MG_TEST(pickle_index_and_number)
{
    mg_pk_graph *g = mg_pk_graph_create();
    mg_pk_obj *d = mg_pk_container(g, MG_PK_DICT), *e = mg_pk_container(g, MG_PK_DICT);
    float step = 7.0f;
    int64_t two = 2;
    mg_pk_obj *scalar = mg_pk_tensor_new(g, MG_TD_F32, 0, NULL, &step);
    mg_pk_obj *vec = mg_pk_tensor_new(g, MG_TD_F32, 1, &two, NULL);
    MG_CHECK_OK(t, mg_pk_set_obj(g, d, mg_pk_int(g, 3), e));
    MG_CHECK_OK(t, mg_pk_set(g, d, "3", mg_pk_int(g, 9)));
    MG_CHECK(t, mg_pk_get_index(d, 3) == e);   /* the int key, not the str key "3" */
    MG_CHECK(t, mg_pk_get_index(d, 4) == NULL);
    MG_CHECK(t, mg_pk_get_index(mg_pk_int(g, 3), 3) == NULL); /* not a mapping */
    MG_CHECK(t, mg_pk_get_index(NULL, 0) == NULL);
    MG_CHECK(t, mg_pk_number(mg_pk_int(g, 5)) == 5.0);
    MG_CHECK(t, mg_pk_number(mg_pk_float(g, 0.5)) == 0.5);
    MG_CHECK(t, mg_pk_number(scalar) == 7.0);
    MG_CHECK(t, mg_pk_number(vec) == -1);      /* not 0-dim */
    MG_CHECK(t, mg_pk_number(mg_pk_str(g, "7")) == -1);
    MG_CHECK(t, mg_pk_number(NULL) == -1);
    mg_pk_graph_free(g);
}

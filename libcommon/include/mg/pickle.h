/* mg/pickle.h — Python pickles as a generic object graph: a reader (a pickle VM for
 * protocols 0-5) and an emitter of protocol 2 restricted to what torch.load(weights_only=True)
 * accepts. Used by torch.save files (mg/torchfile.h) and DCP .metadata.
 *
 * Contract:
 *   - A graph (mg_pk_graph) owns every node, string and array made for it (one arena);
 *     mg_pk_graph_free() releases all of it. Nodes are never freed one by one. The graph may
 *     be a DAG (memo references share nodes) and, for hostile input, even cyclic: every walk
 *     (writer, dumper) stops at MG_PK_MAX_DEPTH nesting levels and after a visit budget with
 *     MG_ERR_FORMAT instead of recursing forever.
 *   - Strings are NUL-terminated UTF-8 (len excludes the NUL); bytes may hold NULs.
 *   - Recognised patterns become typed nodes: OrderedDict (REDUCE of collections.OrderedDict),
 *     bytes (_codecs.encode(s, 'latin1')), tensors (torch._utils._rebuild_tensor_v2/v3 and
 *     _rebuild_parameter with a ('storage', StorageType, key, location, numel) persistent id;
 *     a plain tensor with Python attributes, torch._tensor._rebuild_from_type_v2 of
 *     torch.Tensor, becomes the tensor, its attributes dropped),
 *     argparse.Namespace (NEWOBJ + BUILD with a dict), numpy arrays
 *     (numpy[._]core.multiarray._reconstruct + BUILD). Anything else stays an MG_PK_OBJECT
 *     holding its callable, args, state and appended items, and is re-emitted verbatim.
 *   - A tensor node records dtype/storage key/offset/size/stride; its data pointer is NULL
 *     until the container (torchfile.c) resolves the storage key.
 *   - Reader errors are MG_ERR_FORMAT "LABEL: pickle offset N: what" (LABEL names the file);
 *     integers wider than 64 bits become MG_PK_BIGINT (little-endian two's complement bytes).
 */
#ifndef MG_PICKLE_H
#define MG_PICKLE_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"
#include "mg/tensor.h"

#define MG_PK_MAX_DEPTH 1000

typedef enum {
    MG_PK_NONE,
    MG_PK_BOOL,    /* i = 0/1 */
    MG_PK_INT,     /* i */
    MG_PK_BIGINT,  /* str/len: little-endian two's complement bytes */
    MG_PK_FLOAT,   /* f */
    MG_PK_STR,     /* str/len, UTF-8 */
    MG_PK_BYTES,   /* str/len, raw */
    MG_PK_TUPLE,   /* items[n] */
    MG_PK_LIST,    /* items[n] */
    MG_PK_SET,     /* items[n] (set and frozenset) */
    MG_PK_DICT,    /* items[2n]: key, value, key, value ... in insertion order */
    MG_PK_ODICT,   /* collections.OrderedDict: like DICT; state = BUILD state or NULL */
    MG_PK_NAMESPACE, /* argparse.Namespace: state = attribute DICT (never NULL) */
    MG_PK_GLOBAL,  /* module/name, e.g. torch.bfloat16 */
    MG_PK_TENSOR,  /* tensor */
    MG_PK_NDARRAY, /* numpy array: nd; also callable/args/state as read */
    MG_PK_PERSID,  /* persistent id: args = the id object */
    MG_PK_OBJECT,  /* callable(args) via REDUCE, or cls.__new__ via NEWOBJ (newobj = 1);
                    * state = BUILD state; items = APPEND(S) then dict pairs */
} mg_pk_kind;

typedef struct mg_pk_obj mg_pk_obj;

typedef struct {
    mg_tdtype dtype;
    const char *storage_key;  /* "0", "1", ... */
    const char *location;     /* "cpu", "cuda:0" */
    int64_t storage_numel;    /* elements of dtype in the storage */
    int64_t offset;           /* in elements */
    int ndim;
    int64_t *size, *stride;   /* ndim entries each (arena) */
    int requires_grad;
    int parameter;            /* came from _rebuild_parameter */
    const uint8_t *data;      /* storage bytes (set by the container; NULL if unresolved) */
    uint64_t storage_nbytes;  /* storage_numel * dtype size */
} mg_pk_tensor;

typedef struct {
    char dtype[16];          /* numpy dtype string with byte order, e.g. "<u4" */
    int ndim;
    int64_t *shape;
    const uint8_t *data;     /* raw array bytes (inside the graph) */
    size_t nbytes;
} mg_pk_ndarray;

struct mg_pk_obj {
    mg_pk_kind kind;
    int newobj;               /* MG_PK_OBJECT: made by NEWOBJ */
    int64_t i;
    double f;
    const char *str;          /* STR, BYTES, BIGINT data; GLOBAL module */
    size_t len;
    const char *name;         /* GLOBAL name */
    mg_pk_obj **items;
    size_t n;                 /* items (pairs for DICT/ODICT, objects otherwise) */
    size_t n_list;            /* OBJECT: the first n_list items were APPENDed, then pairs */
    size_t cap;
    mg_pk_obj *callable, *args, *state;
    mg_pk_tensor *tensor;
    mg_pk_ndarray *nd;
    size_t at;                /* read nodes: pickle offset of the opcode that made it */
};

typedef struct mg_pk_graph mg_pk_graph;

mg_pk_graph *mg_pk_graph_create(void); /* NULL + message on allocation failure */
void mg_pk_graph_free(mg_pk_graph *g);  /* accepts NULL */

/* Runs the pickle in data[0..len) and returns its root object in *root (owned by g).
 * label names the input in error messages. Errors: MG_ERR_FORMAT (bad opcode, truncated,
 * stack underflow, bad memo index, bad tensor/storage pattern), MG_ERR_UNSUPPORTED
 * (out-of-band buffers, EXT codes), MG_ERR_NOMEM. */
mg_status mg_pk_load(mg_pk_graph *g, const uint8_t *data, size_t len, const char *label,
                     mg_pk_obj **root);

/* Tensor nodes of g in the order they were created (first use). */
size_t mg_pk_tensor_count(const mg_pk_graph *g);
mg_pk_obj *mg_pk_tensor_at(const mg_pk_graph *g, size_t i);

/* Constructors (all owned by g; NULL on allocation failure with the message set).
 * Strings are copied. */
mg_pk_obj *mg_pk_none(mg_pk_graph *g);
mg_pk_obj *mg_pk_bool(mg_pk_graph *g, int v);
mg_pk_obj *mg_pk_int(mg_pk_graph *g, int64_t v);
mg_pk_obj *mg_pk_float(mg_pk_graph *g, double v);
mg_pk_obj *mg_pk_str(mg_pk_graph *g, const char *s);
mg_pk_obj *mg_pk_strn(mg_pk_graph *g, const char *s, size_t len);
mg_pk_obj *mg_pk_bytes(mg_pk_graph *g, const void *p, size_t len);
mg_pk_obj *mg_pk_global(mg_pk_graph *g, const char *module, const char *name);
/* kind: MG_PK_TUPLE, MG_PK_LIST, MG_PK_SET, MG_PK_DICT, MG_PK_ODICT, MG_PK_NAMESPACE. */
mg_pk_obj *mg_pk_container(mg_pk_graph *g, mg_pk_kind kind);
/* A contiguous offset-0 tensor over caller-owned bytes (data may be NULL when the writer is
 * given a fill callback). size has ndim entries; strides are computed. */
mg_pk_obj *mg_pk_tensor_new(mg_pk_graph *g, mg_tdtype dtype, int ndim, const int64_t *size,
                            const void *data);

/* Appends to a TUPLE/LIST/SET. */
mg_status mg_pk_append(mg_pk_graph *g, mg_pk_obj *seq, mg_pk_obj *item);
/* Sets key (a new str) = value in a DICT/ODICT/NAMESPACE (replacing an existing str key). */
mg_status mg_pk_set(mg_pk_graph *g, mg_pk_obj *map, const char *key, mg_pk_obj *value);
/* Adds a pair with any key object (no replacement). */
mg_status mg_pk_set_obj(mg_pk_graph *g, mg_pk_obj *map, mg_pk_obj *key, mg_pk_obj *value);

/* Value for a str key in a DICT/ODICT/NAMESPACE (a NAMESPACE looks in its state), or NULL.
 * A linear scan from the end: a key SETITEM'd twice answers its last value, like Python. */
mg_pk_obj *mg_pk_get(const mg_pk_obj *map, const char *key);
/* Value for an int key in a DICT/ODICT (torch's optimizer state {i: ...}), or NULL. */
const mg_pk_obj *mg_pk_get_index(const mg_pk_obj *map, int64_t key);
/* The value of an int, a float or a 0-dim float32 tensor (torch's step counts); -1 for
 * anything else, NULL included. */
double mg_pk_number(const mg_pk_obj *x);
/* Number of items: entries of a sequence, pairs of a mapping, attributes of a Namespace. */
size_t mg_pk_len(const mg_pk_obj *o);
/* Short kind name ("dict", "tensor", ...). */
const char *mg_pk_kind_name(mg_pk_kind k);
/* Elements of the view's logical shape (1 for 0-dim). */
int64_t mg_pk_tensor_numel(const mg_pk_tensor *t);

/* Emitter: protocol 2, opcodes and globals of the torch weights_only subset (plus whatever
 * opaque objects/globals the graph holds, re-emitted as read). Tensors are written as
 * _rebuild_tensor_v2 (v3 + UntypedStorage for dtypes without a legacy storage class) with
 * persistent ids ('storage', XStorage, key, 'cpu', numel); storage keys are assigned by
 * the caller through key_of (returns a NUL-terminated key for the tensor, e.g. "0").
 * The pickle is appended to a malloc'd buffer (*out, *out_len; caller frees). */
typedef const char *(*mg_pk_key_fn)(void *ctx, const mg_pk_obj *tensor);
mg_status mg_pk_dump(const mg_pk_obj *root, mg_pk_key_fn key_of, void *ctx, uint8_t **out,
                     size_t *out_len);

/* Legacy storage class name ("FloatStorage") for a dtype, NULL if it has none; and back
 * (MG_TD_INVALID if unknown). */
const char *mg_pk_storage_class(mg_tdtype t);
mg_tdtype mg_pk_storage_dtype(const char *cls);
/* torch dtype attribute name ("bfloat16") for a dtype and back. */
const char *mg_pk_torch_dtype_name(mg_tdtype t);
mg_tdtype mg_pk_torch_dtype(const char *name);

#endif /* MG_PICKLE_H */

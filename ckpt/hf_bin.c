/* hf_bin.c — pytorch_model.bin files as tables of mg_st_tensor entries pointing into the
 * mapped torch.save file (zero copy).
 *
 * Contract: hf_bin.h. The pickle VM (mg/pickle.h) already rejects views that leave their
 * storage; this file checks again, against the storage record's bytes, before handing out a
 * pointer, and refuses layouts the HF loader cannot address (non-contiguous views).
 */
#include <stdlib.h>
#include <string.h>

#include "hf_bin.h"
#include "mg/torchfile.h"

struct ck_bin {
    mg_torch_file *f;
    char *path;
    mg_st_tensor *t;             /* dict order */
    const mg_st_tensor **sorted; /* by name */
    size_t n;
};

/* Elements of the view, -1 when a size is negative or the product overflows. */
static int64_t view_numel(const mg_pk_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->ndim; i++) {
        if (t->size[i] < 0) return -1;
        if (t->size[i] && n > INT64_MAX / t->size[i]) return -1;
        n *= t->size[i];
    }
    return n;
}

/* Row-major strides; size-1 dimensions may have any stride (as torch's is_contiguous). */
static int contiguous(const mg_pk_tensor *t)
{
    int64_t want = 1;
    for (int i = t->ndim - 1; i >= 0; i--) {
        if (t->size[i] != 1 && t->stride[i] != want) return 0;
        want *= t->size[i];
    }
    return 1;
}

static mg_status add_entry(ck_bin *b, const char *name, const mg_pk_obj *v, const uint8_t *base)
{
    MG_RETURN_IF(v->kind != MG_PK_TENSOR, MG_ERR_UNSUPPORTED,
                 "not supported yet: entry %s in %s is a %s, not a tensor", name, b->path,
                 mg_pk_kind_name(v->kind));
    const mg_pk_tensor *t = v->tensor;
    size_t es = mg_tdtype_size(t->dtype);
    int64_t numel = view_numel(t);
    MG_RETURN_IF(numel < 0 || es == 0 || !t->data, MG_ERR_FORMAT,
                 "%s: tensor %s: bad shape, dtype or storage", b->path, name);
    MG_RETURN_IF(numel > 0 && !contiguous(t), MG_ERR_UNSUPPORTED,
                 "not supported yet: non-contiguous tensor %s in %s", name, b->path);
    uint64_t cap = t->storage_nbytes / es, off = numel > 0 ? (uint64_t)t->offset : 0;
    MG_RETURN_IF(t->offset < 0 || off > cap || (uint64_t)numel > cap - off, MG_ERR_FORMAT,
                 "%s: tensor %s: data outside its storage", b->path, name);
    const uint8_t *data = t->data + off * es;
    b->t[b->n++] = (mg_st_tensor){.name = name, .dtype = t->dtype, .ndim = t->ndim,
                                  .shape = t->size, .numel = (uint64_t)numel,
                                  .offset = (uint64_t)(data - base),
                                  .nbytes = (uint64_t)numel * es, .data = data};
    return MG_OK;
}

static int cmp_name(const void *a, const void *b)
{
    return strcmp((*(const mg_st_tensor *const *)a)->name, (*(const mg_st_tensor *const *)b)->name);
}

static mg_status index_names(ck_bin *b)
{
    b->sorted = mg_calloc(b->n ? b->n : 1, sizeof(*b->sorted));
    if (!b->sorted) return MG_ERR_NOMEM;
    for (size_t i = 0; i < b->n; i++) b->sorted[i] = &b->t[i];
    qsort(b->sorted, b->n, sizeof(*b->sorted), cmp_name);
    for (size_t i = 1; i < b->n; i++)
        MG_RETURN_IF(!strcmp(b->sorted[i - 1]->name, b->sorted[i]->name), MG_ERR_FORMAT,
                     "%s: tensor %s appears twice", b->path, b->sorted[i]->name);
    return MG_OK;
}

static mg_status load(ck_bin *b, const char *path)
{
    b->path = mg_malloc(strlen(path) + 1);
    if (!b->path) return MG_ERR_NOMEM;
    memcpy(b->path, path, strlen(path) + 1);
    MG_FORWARD(mg_torch_open(&b->f, path));
    const mg_pk_obj *root = mg_torch_root(b->f);
    MG_RETURN_IF(root->kind != MG_PK_DICT && root->kind != MG_PK_ODICT, MG_ERR_FORMAT,
                 "%s: not a state dict (the pickled object is a %s)", path,
                 mg_pk_kind_name(root->kind));
    b->t = mg_calloc(root->n ? root->n : 1, sizeof(*b->t));
    if (!b->t) return MG_ERR_NOMEM;
    size_t size = 0;
    const uint8_t *base = mg_torch_mapping(b->f, &size);
    for (size_t i = 0; i < root->n; i++) {
        const mg_pk_obj *k = root->items[2 * i];
        MG_RETURN_IF(k->kind != MG_PK_STR, MG_ERR_FORMAT,
                     "%s: state dict key %zu is a %s, not a string", path, i,
                     mg_pk_kind_name(k->kind));
        MG_FORWARD(add_entry(b, k->str, root->items[2 * i + 1], base));
    }
    return index_names(b);
}

mg_status ck_bin_open(ck_bin **out, const char *path)
{
    *out = NULL;
    ck_bin *b = mg_calloc(1, sizeof(*b));
    if (!b) return MG_ERR_NOMEM;
    mg_status st = load(b, path);
    if (st != MG_OK) {
        ck_bin_close(b);
        return st;
    }
    *out = b;
    return MG_OK;
}

void ck_bin_close(ck_bin *b)
{
    if (!b) return;
    mg_torch_close(b->f);
    free(b->path);
    free(b->t);
    free(b->sorted);
    free(b);
}

const char *ck_bin_path(const ck_bin *b) { return b->path; }
size_t ck_bin_count(const ck_bin *b) { return b->n; }
const mg_st_tensor *ck_bin_at(const ck_bin *b, size_t i) { return &b->t[i]; }

const mg_st_tensor *ck_bin_find(const ck_bin *b, const char *name)
{
    mg_st_tensor key = {.name = name};
    const mg_st_tensor *kp = &key;
    const mg_st_tensor **hit = bsearch(&kp, b->sorted, b->n, sizeof(*b->sorted), cmp_name);
    return hit ? *hit : NULL;
}

const uint8_t *ck_bin_mapping(const ck_bin *b, size_t *size)
{
    return mg_torch_mapping(b->f, size);
}

/* safetensors_read.c — validating, zero-copy safetensors reader (mg/safetensors.h).
 *
 * Contract: mg_st_open maps the file, mg_st_open_mem reads a caller's buffer; both parse
 * the JSON header with jansson (kept alive: tensor names and metadata strings point into
 * it) and apply the reference library's checks (safetensors/src/tensor.rs read_metadata
 * and Metadata::validate): header length bounds, JSON object, known dtype, shape and
 * data_offsets types, byte size == numel * element size without overflow, tensors sorted
 * by (begin, end) covering the data section from 0 to the file's end with no gap or
 * overlap. Lookup by name is a binary search over a name-sorted index.
 */
#include "mg/safetensors.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "mg/file.h"

struct mg_st_file {
    char *path;
    mg_map map; /* zeroed for mg_st_open_mem */
    const uint8_t *buf;
    size_t len;
    uint64_t hlen;
    json_t *root;
    mg_st_tensor *tensors; /* file order */
    size_t n;
    size_t *by_name; /* indices into tensors, sorted by name */
    int64_t *dims;   /* all shapes, back to back */
    json_t *meta;    /* the "__metadata__" object or NULL */
};

/* Valid safetensors dtypes that mg_tdtype does not represent. */
static const char *const st_other_dtypes[] = {"F4", "F6_E2M3", "F6_E3M2", "F8_E8M0",
                                              "F8_E4M3FNUZ", "F8_E5M2FNUZ", "C64"};

static uint64_t le64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--) v = (v << 8) | p[i];
    return v;
}

static mg_status check_header_len(const mg_st_file *f)
{
    MG_RETURN_IF(f->len < 8, MG_ERR_FORMAT,
                 "%s: file too short for a safetensors header (%zu bytes)", f->path, f->len);
    uint64_t n = le64(f->buf);
    MG_RETURN_IF(n > MG_ST_MAX_HEADER, MG_ERR_FORMAT,
                 "%s: header length %llu exceeds the limit of %u bytes", f->path,
                 (unsigned long long)n, MG_ST_MAX_HEADER);
    MG_RETURN_IF(n > f->len - 8, MG_ERR_FORMAT,
                 "%s: header length %llu runs past the end of the file (%zu bytes)", f->path,
                 (unsigned long long)n, f->len);
    return MG_OK;
}

static mg_status parse_json(mg_st_file *f)
{
    json_error_t err;
    f->hlen = le64(f->buf);
    f->root = json_loadb((const char *)f->buf + 8, (size_t)f->hlen, JSON_REJECT_DUPLICATES, &err);
    MG_RETURN_IF(!f->root, MG_ERR_FORMAT, "%s: header: invalid JSON at byte %d: %s", f->path,
                 err.position, err.text);
    MG_RETURN_IF(!json_is_object(f->root), MG_ERR_FORMAT, "%s: header: not a JSON object",
                 f->path);
    return MG_OK;
}

static mg_status parse_metadata(mg_st_file *f, json_t *meta)
{
    if (json_is_null(meta)) return MG_OK;
    MG_RETURN_IF(!json_is_object(meta), MG_ERR_FORMAT,
                 "%s: header: \"__metadata__\" is not an object", f->path);
    const char *key;
    json_t *v;
    json_object_foreach(meta, key, v) {
        MG_RETURN_IF(!json_is_string(v), MG_ERR_FORMAT,
                     "%s: header: \"__metadata__\" value of \"%s\" is not a string", f->path,
                     key);
    }
    f->meta = meta;
    return MG_OK;
}

static mg_status parse_dtype(const mg_st_file *f, const char *name, json_t *v, mg_tdtype *out)
{
    const char *s = json_string_value(v);
    MG_RETURN_IF(!s, MG_ERR_FORMAT, "%s: tensor \"%s\": \"dtype\" missing or not a string",
                 f->path, name);
    *out = mg_tdtype_from_name(s);
    if (*out != MG_TD_INVALID) return MG_OK;
    for (size_t i = 0; i < sizeof st_other_dtypes / sizeof *st_other_dtypes; i++)
        MG_RETURN_IF(strcmp(s, st_other_dtypes[i]) == 0, MG_ERR_UNSUPPORTED,
                     "%s: tensor \"%s\": not supported yet: dtype %s", f->path, name, s);
    return mg_error_set(MG_ERR_FORMAT, "%s: tensor \"%s\": unknown dtype \"%s\"", f->path, name,
                        s);
}

/* A JSON integer >= 0 (jansson rejects integers beyond int64 while parsing). */
static int get_uint(json_t *v, uint64_t *out)
{
    if (!json_is_integer(v) || json_integer_value(v) < 0) return 0;
    *out = (uint64_t)json_integer_value(v);
    return 1;
}

static mg_status parse_shape(const mg_st_file *f, const char *name, json_t *v, mg_st_tensor *t,
                             int64_t *dims)
{
    MG_RETURN_IF(!json_is_array(v), MG_ERR_FORMAT,
                 "%s: tensor \"%s\": \"shape\" missing or not an array", f->path, name);
    size_t nd = json_array_size(v); /* < MG_ST_MAX_HEADER / 2: fits an int */
    t->ndim = (int)nd;
    t->shape = dims;
    t->numel = 1;
    int overflow = 0;
    for (size_t i = 0; i < nd; i++) {
        uint64_t d;
        MG_RETURN_IF(!get_uint(json_array_get(v, i), &d), MG_ERR_FORMAT,
                     "%s: tensor \"%s\": shape[%zu] is not a non-negative integer", f->path,
                     name, i);
        dims[i] = (int64_t)d;
        overflow |= __builtin_mul_overflow(t->numel, d, &t->numel);
    }
    /* Like the reference, any overflow in the product is an error, even with a 0 dim. */
    MG_RETURN_IF(overflow, MG_ERR_FORMAT, "%s: tensor \"%s\": shape product overflows",
                 f->path, name);
    return MG_OK;
}

static mg_status parse_offsets(const mg_st_file *f, const char *name, json_t *v,
                               mg_st_tensor *t)
{
    uint64_t b, e;
    MG_RETURN_IF(!json_is_array(v) || json_array_size(v) != 2 ||
                     !get_uint(json_array_get(v, 0), &b) || !get_uint(json_array_get(v, 1), &e),
                 MG_ERR_FORMAT,
                 "%s: tensor \"%s\": \"data_offsets\" is not an array of 2 non-negative "
                 "integers", f->path, name);
    MG_RETURN_IF(e < b, MG_ERR_FORMAT, "%s: tensor \"%s\": data_offsets [%llu, %llu] end before "
                 "they begin", f->path, name, (unsigned long long)b, (unsigned long long)e);
    t->offset = b;
    t->nbytes = e - b;
    return MG_OK;
}

static mg_status check_size(const mg_st_file *f, const mg_st_tensor *t)
{
    uint64_t need;
    MG_RETURN_IF(__builtin_mul_overflow(t->numel, (uint64_t)mg_tdtype_size(t->dtype), &need),
                 MG_ERR_FORMAT, "%s: tensor \"%s\": byte size overflows", f->path, t->name);
    MG_RETURN_IF(need != t->nbytes, MG_ERR_FORMAT,
                 "%s: tensor \"%s\": data_offsets hold %llu bytes but %llu elements of %s need "
                 "%llu", f->path, t->name, (unsigned long long)t->nbytes,
                 (unsigned long long)t->numel, mg_tdtype_name(t->dtype),
                 (unsigned long long)need);
    return MG_OK;
}

static mg_status parse_tensor(const mg_st_file *f, const char *name, json_t *v, mg_st_tensor *t,
                              int64_t *dims)
{
    MG_RETURN_IF(!json_is_object(v), MG_ERR_FORMAT, "%s: tensor \"%s\": entry is not an object",
                 f->path, name);
    t->name = name;
    MG_FORWARD(parse_dtype(f, name, json_object_get(v, "dtype"), &t->dtype));
    MG_FORWARD(parse_shape(f, name, json_object_get(v, "shape"), t, dims));
    MG_FORWARD(parse_offsets(f, name, json_object_get(v, "data_offsets"), t));
    return check_size(f, t);
}

static mg_status alloc_tables(mg_st_file *f)
{
    size_t ndims = 0;
    const char *key;
    json_t *v;
    json_object_foreach(f->root, key, v) {
        if (strcmp(key, "__metadata__") == 0) continue;
        f->n++;
        ndims += json_array_size(json_object_get(v, "shape"));
    }
    f->tensors = mg_calloc(f->n + 1, sizeof *f->tensors);
    f->by_name = mg_calloc(f->n + 1, sizeof *f->by_name);
    f->dims = mg_calloc(ndims + 1, sizeof *f->dims);
    if (!f->tensors || !f->by_name || !f->dims) return MG_ERR_NOMEM;
    return MG_OK;
}

static mg_status parse_entries(mg_st_file *f)
{
    MG_FORWARD(alloc_tables(f));
    size_t i = 0, used = 0;
    const char *key;
    json_t *v;
    json_object_foreach(f->root, key, v) {
        if (strcmp(key, "__metadata__") == 0) {
            MG_FORWARD(parse_metadata(f, v));
            continue;
        }
        MG_FORWARD(parse_tensor(f, key, v, &f->tensors[i], f->dims + used));
        used += (size_t)f->tensors[i].ndim;
        i++;
    }
    return MG_OK;
}

/* Sorts pointers into the header-ordered array: the address breaks ties (stable). */
static int cmp_offsets(const void *a, const void *b)
{
    const mg_st_tensor *x = *(const mg_st_tensor *const *)a;
    const mg_st_tensor *y = *(const mg_st_tensor *const *)b;
    if (x->offset != y->offset) return x->offset < y->offset ? -1 : 1;
    if (x->nbytes != y->nbytes) return x->nbytes < y->nbytes ? -1 : 1;
    return x < y ? -1 : x > y;
}

static mg_status sort_by_offset(mg_st_file *f)
{
    const mg_st_tensor **p = mg_calloc(f->n + 1, sizeof *p);
    mg_st_tensor *sorted = mg_calloc(f->n + 1, sizeof *sorted);
    if (!p || !sorted) {
        free(p);
        free(sorted);
        return MG_ERR_NOMEM;
    }
    for (size_t i = 0; i < f->n; i++) p[i] = &f->tensors[i];
    qsort(p, f->n, sizeof *p, cmp_offsets);
    for (size_t i = 0; i < f->n; i++) sorted[i] = *p[i];
    free(p);
    free(f->tensors);
    f->tensors = sorted;
    return MG_OK;
}

/* Sorted by (begin, end) the tensors must tile [0, data size) exactly. */
static mg_status check_layout(mg_st_file *f)
{
    MG_FORWARD(sort_by_offset(f));
    uint64_t pos = 0, data_len = (uint64_t)f->len - 8 - f->hlen;
    const uint8_t *data = f->buf + 8 + f->hlen;
    for (size_t i = 0; i < f->n; i++) {
        mg_st_tensor *t = &f->tensors[i];
        MG_RETURN_IF(t->offset != pos, MG_ERR_FORMAT,
                     "%s: tensor \"%s\": data_offsets begin at %llu, expected %llu (tensors must "
                     "be contiguous from 0 without gaps or overlaps)", f->path, t->name,
                     (unsigned long long)t->offset, (unsigned long long)pos);
        pos += t->nbytes;
        MG_RETURN_IF(pos > data_len, MG_ERR_FORMAT,
                     "%s: tensor \"%s\": data_offsets end at %llu, past the data section "
                     "(%llu bytes)", f->path, t->name, (unsigned long long)pos,
                     (unsigned long long)data_len);
        t->data = data + t->offset;
    }
    MG_RETURN_IF(pos != data_len, MG_ERR_FORMAT,
                 "%s: the tensors cover %llu bytes but the data section holds %llu", f->path,
                 (unsigned long long)pos, (unsigned long long)data_len);
    return MG_OK;
}

/* qsort has no context argument: sort pointers to tensors, then convert to indices. */
static int cmp_names(const void *a, const void *b)
{
    const mg_st_tensor *const *x = a, *const *y = b;
    return strcmp((*x)->name, (*y)->name);
}

static mg_status build_name_index(mg_st_file *f)
{
    const mg_st_tensor **p = mg_calloc(f->n + 1, sizeof *p);
    if (!p) return MG_ERR_NOMEM;
    for (size_t i = 0; i < f->n; i++) p[i] = &f->tensors[i];
    qsort(p, f->n, sizeof *p, cmp_names);
    for (size_t i = 0; i < f->n; i++) f->by_name[i] = (size_t)(p[i] - f->tensors);
    free(p);
    return MG_OK;
}

static mg_status st_parse(mg_st_file *f)
{
    MG_FORWARD(check_header_len(f));
    MG_FORWARD(parse_json(f));
    MG_FORWARD(parse_entries(f));
    MG_FORWARD(check_layout(f));
    return build_name_index(f);
}

static mg_status st_finish_open(mg_st_file **out, mg_st_file *f)
{
    mg_status st = st_parse(f);
    if (st != MG_OK) {
        mg_st_close(f);
        return st;
    }
    *out = f;
    return MG_OK;
}

static mg_st_file *st_new(const char *label)
{
    mg_st_file *f = mg_calloc(1, sizeof *f);
    if (!f) return NULL;
    f->path = strdup(label);
    if (!f->path) {
        free(f);
        mg_error_set(MG_ERR_NOMEM, "out of memory");
        return NULL;
    }
    return f;
}

mg_status mg_st_open_mem(mg_st_file **out, const void *buf, size_t len, const char *label)
{
    *out = NULL;
    mg_st_file *f = st_new(label ? label : "(memory)");
    if (!f) return MG_ERR_NOMEM;
    f->buf = buf;
    f->len = buf ? len : 0;
    return st_finish_open(out, f);
}

mg_status mg_st_open(mg_st_file **out, const char *path)
{
    *out = NULL;
    mg_st_file *f = st_new(path);
    if (!f) return MG_ERR_NOMEM;
    mg_status st = mg_map_open(&f->map, path);
    if (st != MG_OK) {
        mg_st_close(f);
        return st;
    }
    f->buf = f->map.data;
    f->len = f->map.size;
    return st_finish_open(out, f);
}

void mg_st_close(mg_st_file *f)
{
    if (!f) return;
    mg_map_close(&f->map);
    json_decref(f->root);
    free(f->tensors);
    free(f->by_name);
    free(f->dims);
    free(f->path);
    free(f);
}

const char *mg_st_path(const mg_st_file *f) { return f->path; }
size_t mg_st_count(const mg_st_file *f) { return f->n; }
uint64_t mg_st_header_len(const mg_st_file *f) { return f->hlen; }

const mg_st_tensor *mg_st_at(const mg_st_file *f, size_t i)
{
    MG_ASSERT(i < f->n);
    return &f->tensors[i];
}

const mg_st_tensor *mg_st_find(const mg_st_file *f, const char *name)
{
    size_t lo = 0, hi = f->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        const mg_st_tensor *t = &f->tensors[f->by_name[mid]];
        int c = strcmp(name, t->name);
        if (c == 0) return t;
        if (c < 0)
            hi = mid;
        else
            lo = mid + 1;
    }
    return NULL;
}

mg_status mg_st_get(const mg_st_file *f, const char *name, const mg_st_tensor **t)
{
    *t = mg_st_find(f, name);
    MG_RETURN_IF(!*t, MG_ERR_NOTFOUND, "%s: no tensor \"%s\"", f->path, name);
    return MG_OK;
}

size_t mg_st_meta_count(const mg_st_file *f) { return f->meta ? json_object_size(f->meta) : 0; }

void mg_st_meta_at(const mg_st_file *f, size_t i, const char **key, const char **value)
{
    MG_ASSERT(i < mg_st_meta_count(f));
    void *it = json_object_iter(f->meta);
    while (i-- > 0) it = json_object_iter_next(f->meta, it);
    *key = json_object_iter_key(it);
    *value = json_string_value(json_object_iter_value(it));
}

const char *mg_st_meta_get(const mg_st_file *f, const char *key)
{
    return f->meta ? json_string_value(json_object_get(f->meta, key)) : NULL;
}

/* safetensors_write.c — streaming safetensors writer (mg/safetensors.h).
 *
 * Contract: tensors and metadata are declared first; mg_st_writer_begin sorts the tensors
 * like the reference serializer (safetensors/src/tensor.rs prepare(): descending order of
 * the library's Dtype enum, which lists dtypes by increasing alignment, then by name
 * bytewise), assigns contiguous data_offsets from 0, emits the header as serde_json would
 * (compact, "__metadata__" first, the tensor entries as {"dtype","shape","data_offsets"},
 * strings escaped like serde_json: \" \\ \b \f \n \r \t, other control characters as
 * \u00xx, everything else raw UTF-8) padded with spaces to a multiple of 8, and writes it
 * through an atomic mg_out. The data then streams in that order; only the declarations
 * are held in memory; data may also be copied from another file (mg_st_writer_copy) or
 * written straight from the caller's pieces of memory (mg_st_writer_writev: pwritev).
 */
#include "mg/safetensors.h"
#include "mg/strbuf.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>

#include "mg/file.h"
#include "mg/unicode.h"

typedef struct {
    char *name;
    mg_tdtype dtype;
    int ndim;
    int64_t *shape;
    uint64_t nbytes;
} w_tensor;

typedef struct {
    char *key;
    char *value;
} w_meta;

struct mg_st_writer {
    mg_out *out;
    char *path;
    w_tensor *t;
    size_t n, cap;
    w_meta *meta;
    size_t n_meta, cap_meta;
    int begun;
    size_t cur;      /* first tensor not complete (after begin) */
    uint64_t cur_wr; /* bytes of tensor cur written */
};

/* Position of each dtype in the library's Dtype enum (its sort key). */
static int st_rank(mg_tdtype d)
{
    switch (d) {
    case MG_TD_BOOL: return 0;
    case MG_TD_U8: return 4;
    case MG_TD_I8: return 5;
    case MG_TD_F8_E5M2: return 6;
    case MG_TD_F8_E4M3: return 7;
    case MG_TD_I16: return 11;
    case MG_TD_U16: return 12;
    case MG_TD_F16: return 13;
    case MG_TD_BF16: return 14;
    case MG_TD_I32: return 15;
    case MG_TD_U32: return 16;
    case MG_TD_F32: return 17;
    case MG_TD_F64: return 19;
    case MG_TD_I64: return 20;
    case MG_TD_U64: return 21;
    default: return -1;
    }
}

/* ---- the header text (mg/strbuf.h) ---- */

static void sb_u64(mg_strbuf *b, uint64_t v)
{
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%llu", (unsigned long long)v);
    mg_strbuf_put(b, tmp, (size_t)n);
}

/* A JSON string escaped the way serde_json escapes it. */
static void sb_json_str(mg_strbuf *b, const char *s)
{
    mg_strbuf_put(b, "\"", 1);
    for (const unsigned char *c = (const unsigned char *)s; *c; c++) {
        const char *esc = NULL;
        char tmp[16];
        switch (*c) {
        case '"': esc = "\\\""; break;
        case '\\': esc = "\\\\"; break;
        case '\b': esc = "\\b"; break;
        case '\f': esc = "\\f"; break;
        case '\n': esc = "\\n"; break;
        case '\r': esc = "\\r"; break;
        case '\t': esc = "\\t"; break;
        default:
            if (*c < 0x20) {
                snprintf(tmp, sizeof tmp, "\\u%04x", *c);
                esc = tmp;
            }
        }
        if (esc)
            mg_strbuf_puts(b, esc);
        else
            mg_strbuf_put(b, (const char *)c, 1);
    }
    mg_strbuf_put(b, "\"", 1);
}

/* ---- declarations ---- */

mg_status mg_st_writer_create(mg_st_writer **out, const char *path)
{
    *out = NULL;
    mg_st_writer *w = mg_calloc(1, sizeof *w);
    if (!w) return MG_ERR_NOMEM;
    w->path = strdup(path);
    if (!w->path) {
        free(w);
        return mg_error_set(MG_ERR_NOMEM, "out of memory");
    }
    mg_status st = mg_out_create(&w->out, path);
    if (st != MG_OK) {
        mg_st_writer_free(w);
        return st;
    }
    *out = w;
    return MG_OK;
}

static mg_status check_text(const mg_st_writer *w, const char *what, const char *s)
{
    size_t n = strlen(s);
    MG_RETURN_IF(mg_utf8_validate((const uint8_t *)s, n) != n, MG_ERR_ARG,
                 "%s: %s \"%s\" is not valid UTF-8", w->path, what, s);
    return MG_OK;
}

static mg_status check_open(const mg_st_writer *w, const char *what)
{
    MG_RETURN_IF(w->begun, MG_ERR_ARG, "%s: %s after the header was written", w->path, what);
    return MG_OK;
}

mg_status mg_st_writer_meta(mg_st_writer *w, const char *key, const char *value)
{
    MG_FORWARD(check_open(w, "metadata added"));
    MG_FORWARD(check_text(w, "metadata key", key));
    MG_FORWARD(check_text(w, "metadata value", value));
    for (size_t i = 0; i < w->n_meta; i++)
        MG_RETURN_IF(strcmp(w->meta[i].key, key) == 0, MG_ERR_ARG,
                     "%s: metadata key \"%s\" given twice", w->path, key);
    if (w->n_meta == w->cap_meta) {
        size_t cap = w->cap_meta ? 2 * w->cap_meta : 8;
        w_meta *p = mg_realloc(w->meta, cap * sizeof *p);
        if (!p) return MG_ERR_NOMEM;
        w->meta = p;
        w->cap_meta = cap;
    }
    w_meta *m = &w->meta[w->n_meta];
    m->key = strdup(key);
    m->value = strdup(value);
    if (!m->key || !m->value) {
        free(m->key);
        free(m->value);
        return mg_error_set(MG_ERR_NOMEM, "out of memory");
    }
    w->n_meta++;
    return MG_OK;
}

static mg_status tensor_bytes(const mg_st_writer *w, const char *name, mg_tdtype dtype,
                              int ndim, const int64_t *shape, uint64_t *nbytes)
{
    MG_RETURN_IF(st_rank(dtype) < 0, MG_ERR_ARG, "%s: tensor \"%s\": invalid dtype %d", w->path,
                 name, (int)dtype);
    MG_RETURN_IF(ndim < 0 || (ndim > 0 && !shape), MG_ERR_ARG,
                 "%s: tensor \"%s\": invalid number of dimensions %d", w->path, name, ndim);
    uint64_t n = mg_tdtype_size(dtype);
    for (int i = 0; i < ndim; i++) {
        MG_RETURN_IF(shape[i] < 0, MG_ERR_ARG, "%s: tensor \"%s\": negative dimension %lld",
                     w->path, name, (long long)shape[i]);
        MG_RETURN_IF(__builtin_mul_overflow(n, (uint64_t)shape[i], &n), MG_ERR_LIMIT,
                     "%s: tensor \"%s\": byte size overflows 64 bits", w->path, name);
    }
    *nbytes = n;
    return MG_OK;
}

static mg_status grow_tensors(mg_st_writer *w)
{
    if (w->n < w->cap) return MG_OK;
    size_t cap = w->cap ? 2 * w->cap : 64;
    w_tensor *p = mg_realloc(w->t, cap * sizeof *p);
    if (!p) return MG_ERR_NOMEM;
    w->t = p;
    w->cap = cap;
    return MG_OK;
}

mg_status mg_st_writer_declare(mg_st_writer *w, const char *name, mg_tdtype dtype, int ndim,
                               const int64_t *shape)
{
    MG_FORWARD(check_open(w, "tensor declared"));
    MG_FORWARD(check_text(w, "tensor name", name));
    MG_RETURN_IF(strcmp(name, "__metadata__") == 0, MG_ERR_ARG,
                 "%s: \"__metadata__\" cannot name a tensor", w->path);
    uint64_t nbytes = 0;
    MG_FORWARD(tensor_bytes(w, name, dtype, ndim, shape, &nbytes));
    MG_FORWARD(grow_tensors(w));
    w_tensor *t = &w->t[w->n];
    t->name = strdup(name);
    t->shape = mg_calloc((size_t)ndim + 1, sizeof *t->shape);
    if (!t->name || !t->shape) {
        free(t->name);
        free(t->shape);
        return mg_error_set(MG_ERR_NOMEM, "out of memory");
    }
    if (ndim > 0) memcpy(t->shape, shape, (size_t)ndim * sizeof *shape);
    t->dtype = dtype;
    t->ndim = ndim;
    t->nbytes = nbytes;
    w->n++;
    return MG_OK;
}

/* ---- layout and header ---- */

static int cmp_layout(const void *a, const void *b)
{
    const w_tensor *x = a, *y = b;
    int rx = st_rank(x->dtype), ry = st_rank(y->dtype);
    if (rx != ry) return rx > ry ? -1 : 1;
    return strcmp(x->name, y->name);
}

/* Duplicate names are found on a name-sorted copy of the pointers. */
static int cmp_name_ptr(const void *a, const void *b)
{
    return strcmp((*(const w_tensor *const *)a)->name, (*(const w_tensor *const *)b)->name);
}

static mg_status check_unique(const mg_st_writer *w)
{
    const w_tensor **p = mg_calloc(w->n + 1, sizeof *p);
    if (!p) return MG_ERR_NOMEM;
    for (size_t i = 0; i < w->n; i++) p[i] = &w->t[i];
    qsort(p, w->n, sizeof *p, cmp_name_ptr);
    mg_status st = MG_OK;
    for (size_t i = 1; i < w->n && st == MG_OK; i++)
        if (strcmp(p[i - 1]->name, p[i]->name) == 0)
            st = mg_error_set(MG_ERR_ARG, "%s: tensor \"%s\" declared twice", w->path,
                              p[i]->name);
    free(p);
    return st;
}

static void put_tensor(mg_strbuf *b, const w_tensor *t, uint64_t begin)
{
    sb_json_str(b, t->name);
    mg_strbuf_puts(b, ":{\"dtype\":");
    sb_json_str(b, mg_tdtype_name(t->dtype));
    mg_strbuf_puts(b, ",\"shape\":[");
    for (int i = 0; i < t->ndim; i++) {
        if (i) mg_strbuf_put(b, ",", 1);
        sb_u64(b, (uint64_t)t->shape[i]);
    }
    mg_strbuf_puts(b, "],\"data_offsets\":[");
    sb_u64(b, begin);
    mg_strbuf_put(b, ",", 1);
    sb_u64(b, begin + t->nbytes);
    mg_strbuf_puts(b, "]}");
}

static void put_header(const mg_st_writer *w, mg_strbuf *b)
{
    mg_strbuf_put(b, "{", 1);
    if (w->n_meta > 0) {
        mg_strbuf_puts(b, "\"__metadata__\":{");
        for (size_t i = 0; i < w->n_meta; i++) {
            if (i) mg_strbuf_put(b, ",", 1);
            sb_json_str(b, w->meta[i].key);
            mg_strbuf_put(b, ":", 1);
            sb_json_str(b, w->meta[i].value);
        }
        mg_strbuf_put(b, "}", 1);
    }
    uint64_t off = 0;
    for (size_t i = 0; i < w->n; i++) {
        if (i || w->n_meta > 0) mg_strbuf_put(b, ",", 1);
        put_tensor(b, &w->t[i], off);
        off += w->t[i].nbytes;
    }
    mg_strbuf_put(b, "}", 1);
    while (b->len % 8 != 0) mg_strbuf_put(b, " ", 1);
}

static mg_status check_total(const mg_st_writer *w)
{
    uint64_t total = 0;
    for (size_t i = 0; i < w->n; i++)
        MG_RETURN_IF(__builtin_add_overflow(total, w->t[i].nbytes, &total), MG_ERR_LIMIT,
                     "%s: total tensor size overflows 64 bits", w->path);
    return MG_OK;
}

static void advance(mg_st_writer *w)
{
    while (w->cur < w->n && w->cur_wr == w->t[w->cur].nbytes) {
        w->cur++;
        w->cur_wr = 0;
    }
}

mg_status mg_st_writer_begin(mg_st_writer *w)
{
    MG_FORWARD(check_open(w, "mg_st_writer_begin called again"));
    MG_FORWARD(check_unique(w));
    MG_FORWARD(check_total(w));
    if (w->n > 0) qsort(w->t, w->n, sizeof *w->t, cmp_layout);
    mg_strbuf b = {0};
    put_header(w, &b);
    if (b.nomem) {
        mg_strbuf_free(&b);
        return MG_ERR_NOMEM;
    }
    mg_status st = MG_OK;
    if (b.len > MG_ST_MAX_HEADER)
        st = mg_error_set(MG_ERR_LIMIT, "%s: header of %zu bytes exceeds the limit of %u",
                          w->path, b.len, MG_ST_MAX_HEADER);
    uint8_t n8[8];
    for (int i = 0; i < 8; i++) n8[i] = (uint8_t)((uint64_t)b.len >> (8 * i));
    if (st == MG_OK) st = mg_out_write(w->out, n8, 8);
    if (st == MG_OK) st = mg_out_write(w->out, b.s, b.len);
    mg_strbuf_free(&b);
    w->begun = 1;
    advance(w);
    return st;
}

/* ---- data ---- */

const char *mg_st_writer_order(const mg_st_writer *w, size_t i)
{
    return w->begun && i < w->n ? w->t[i].name : NULL;
}

const char *mg_st_writer_next(const mg_st_writer *w, uint64_t *nbytes, uint64_t *remaining)
{
    if (!w->begun || w->cur >= w->n) return NULL;
    const w_tensor *t = &w->t[w->cur];
    if (nbytes) *nbytes = t->nbytes;
    if (remaining) *remaining = t->nbytes - w->cur_wr;
    return t->name;
}

mg_status mg_st_writer_write(mg_st_writer *w, const void *data, size_t len)
{
    MG_RETURN_IF(!w->begun, MG_ERR_ARG, "%s: tensor data written before the header", w->path);
    const uint8_t *p = data;
    while (len > 0) {
        MG_RETURN_IF(w->cur >= w->n, MG_ERR_ARG,
                     "%s: %zu bytes written past the end of the last tensor", w->path, len);
        uint64_t room = w->t[w->cur].nbytes - w->cur_wr;
        size_t k = room < len ? (size_t)room : len;
        MG_FORWARD(mg_out_write(w->out, p, k));
        w->cur_wr += k;
        p += k;
        len -= k;
        advance(w);
    }
    return MG_OK;
}

mg_status mg_st_writer_copy(mg_st_writer *w, int src_fd, uint64_t src_off, uint64_t len)
{
    MG_RETURN_IF(!w->begun, MG_ERR_ARG, "%s: tensor data written before the header", w->path);
    while (len > 0) {
        MG_RETURN_IF(w->cur >= w->n, MG_ERR_ARG, "%s: %llu bytes written past the end of the "
                     "last tensor", w->path, (unsigned long long)len);
        uint64_t room = w->t[w->cur].nbytes - w->cur_wr, k = room < len ? room : len;
        MG_FORWARD(mg_out_copy_from(w->out, src_fd, src_off, k));
        w->cur_wr += k;
        src_off += k;
        len -= k;
        advance(w);
    }
    return MG_OK;
}

/* Bytes of the data section still due. */
static uint64_t data_left(const mg_st_writer *w)
{
    uint64_t left = 0;
    for (size_t i = w->cur; i < w->n; i++) left += w->t[i].nbytes;
    return left - w->cur_wr;
}

mg_status mg_st_writer_writev(mg_st_writer *w, const struct iovec *iov, int n)
{
    MG_RETURN_IF(!w->begun, MG_ERR_ARG, "%s: tensor data written before the header", w->path);
    uint64_t len = 0;
    for (int i = 0; i < n; i++) len += iov[i].iov_len;
    MG_RETURN_IF(len > data_left(w), MG_ERR_ARG, "%s: %llu bytes written past the end of the "
                 "last tensor", w->path, (unsigned long long)(len - data_left(w)));
    MG_FORWARD(mg_out_writev(w->out, iov, n));
    while (len > 0) {
        uint64_t room = w->t[w->cur].nbytes - w->cur_wr, k = room < len ? room : len;
        w->cur_wr += k;
        len -= k;
        advance(w);
    }
    return MG_OK;
}

static int is_empty_tensor(const mg_st_writer *w, const char *name)
{
    for (size_t i = 0; i < w->n; i++)
        if (w->t[i].nbytes == 0 && strcmp(w->t[i].name, name) == 0) return 1;
    return 0;
}

mg_status mg_st_writer_tensor(mg_st_writer *w, const char *name, const void *data, size_t len)
{
    MG_RETURN_IF(!w->begun, MG_ERR_ARG, "%s: tensor \"%s\" written before the header", w->path,
                 name);
    if (len == 0 && is_empty_tensor(w, name)) return MG_OK;
    uint64_t nbytes, rem;
    const char *due = mg_st_writer_next(w, &nbytes, &rem);
    MG_RETURN_IF(!due, MG_ERR_ARG, "%s: tensor \"%s\" written after all tensors", w->path,
                 name);
    MG_RETURN_IF(strcmp(due, name) != 0 || rem != nbytes, MG_ERR_ARG,
                 "%s: tensor \"%s\" written where tensor \"%s\" is due", w->path, name, due);
    MG_RETURN_IF(len != nbytes, MG_ERR_ARG, "%s: tensor \"%s\": %zu bytes given, %llu declared",
                 w->path, name, len, (unsigned long long)nbytes);
    return mg_st_writer_write(w, data, len);
}

mg_status mg_st_writer_finish(mg_st_writer *w)
{
    MG_RETURN_IF(!w->begun, MG_ERR_ARG, "%s: finished before the header was written", w->path);
    uint64_t nbytes, rem;
    const char *due = mg_st_writer_next(w, &nbytes, &rem);
    MG_RETURN_IF(due, MG_ERR_ARG, "%s: tensor \"%s\" incomplete: %llu of %llu bytes written",
                 w->path, due, (unsigned long long)(nbytes - rem), (unsigned long long)nbytes);
    return mg_out_commit(w->out);
}

void mg_st_writer_free(mg_st_writer *w)
{
    if (!w) return;
    mg_out_free(w->out);
    for (size_t i = 0; i < w->n; i++) {
        free(w->t[i].name);
        free(w->t[i].shape);
    }
    for (size_t i = 0; i < w->n_meta; i++) {
        free(w->meta[i].key);
        free(w->meta[i].value);
    }
    free(w->t);
    free(w->meta);
    free(w->path);
    free(w);
}

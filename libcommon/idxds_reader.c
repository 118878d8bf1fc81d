/* idxds_reader.c — opens and validates a Megatron indexed dataset (P.idx + P.bin).
 *
 * Contract (mg/idxds.h, byte layout in specs/megatron-data.md §1.2):
 *   - The .idx is mapped, its header checked (magic, version 1, dtype code 1..8, S, D against
 *     the file size: 34+12S+8D, or 34+13S+8D with a modes array), then its arrays are copied
 *     into one aligned allocation (in the file they sit at offset 34, which is not aligned for
 *     int32/int64) and checked: lengths >= 0, pointers == prefix sums of lengths × element size,
 *     document indices start at 0, never decrease, end at S. The .bin is mapped and its size
 *     must equal the total of the lengths × element size.
 *   - The first problem found is MG_ERR_FORMAT "P.idx: byte OFFSET: <found>, expected <what>".
 *     All size arithmetic is overflow-checked (the reader is fuzzed).
 *   - Also here: the dtype tables (mg_dtype_size/name, mg_dtype_for_vocab).
 */
#include "idxds_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "mg/file.h"

typedef struct {
    void *arrays; /* lengths | pointers | doc_index | modes, one allocation */
    mg_map bin;
} idx_priv;

/* A mapped .idx while it is being checked. */
typedef struct {
    const char *path;
    const uint8_t *data;
    uint64_t size;
    int code;
    uint64_t s, d;
    int multimodal;
} idx_view;

static const struct {
    const char *name;
    size_t size;
} dtype_table[9] = {
    {NULL, 0},      {"uint8", 1},   {"int8", 1},    {"int16", 2}, {"int32", 4},
    {"int64", 8},   {"float64", 8}, {"float32", 4}, {"uint16", 2},
};

size_t mg_dtype_size(int code)
{
    return code >= 1 && code <= 8 ? dtype_table[code].size : 0;
}

const char *mg_dtype_name(int code)
{
    return code >= 1 && code <= 8 ? dtype_table[code].name : "invalid";
}

mg_dtype mg_dtype_for_vocab(int64_t vocab_size)
{
    return vocab_size < 65500 ? MG_DT_UINT16 : MG_DT_INT32;
}

char *mg_idx_path_alloc(const char *prefix, const char *suffix)
{
    size_t a = strlen(prefix), b = strlen(suffix);
    char *p = mg_malloc(a + b + 1);
    if (!p) return NULL;
    memcpy(p, prefix, a);
    memcpy(p + a, suffix, b + 1);
    return p;
}

static uint64_t load_u64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static mg_status check_magic(const idx_view *v)
{
    size_t n = v->size < MG_IDX_MAGIC_SIZE ? (size_t)v->size : MG_IDX_MAGIC_SIZE;
    for (size_t i = 0; i < n; i++) {
        if (v->data[i] != (uint8_t)MG_IDX_MAGIC[i])
            return mg_error_set(MG_ERR_FORMAT,
                                "%s: byte %zu: magic byte 0x%02x, expected 0x%02x "
                                "(\"MMIDIDX\\0\\0\": not a Megatron indexed dataset)",
                                v->path, i, v->data[i], (uint8_t)MG_IDX_MAGIC[i]);
    }
    MG_RETURN_IF(v->size < MG_IDX_HEADER_SIZE, MG_ERR_FORMAT,
                 "%s: byte %" PRIu64 ": file ends inside the header, expected at least %d bytes",
                 v->path, v->size, MG_IDX_HEADER_SIZE);
    return MG_OK;
}

static mg_status check_header(idx_view *v)
{
    MG_FORWARD(check_magic(v));
    uint64_t version = load_u64(v->data + 9);
    MG_RETURN_IF(version != 1, MG_ERR_FORMAT, "%s: byte 9: version %" PRIu64 ", expected 1",
                 v->path, version);
    v->code = v->data[17];
    MG_RETURN_IF(mg_dtype_size(v->code) == 0, MG_ERR_FORMAT,
                 "%s: byte 17: dtype code %d, expected 1..8", v->path, v->code);
    v->s = load_u64(v->data + 18);
    v->d = load_u64(v->data + 26);
    MG_RETURN_IF(v->d == 0, MG_ERR_FORMAT,
                 "%s: byte 26: document index count 0, expected at least 1 (the leading 0)",
                 v->path);
    return MG_OK;
}

/* S and D against the file size, without overflow; decides whether modes are present. */
static mg_status check_sizes(idx_view *v)
{
    uint64_t avail = v->size - MG_IDX_HEADER_SIZE;
    MG_RETURN_IF(v->s > avail / 12, MG_ERR_FORMAT,
                 "%s: byte 18: sequence count %" PRIu64 ", expected at most %" PRIu64
                 " for a %" PRIu64 "-byte file",
                 v->path, v->s, avail / 12, v->size);
    uint64_t rest = avail - 12 * v->s;
    MG_RETURN_IF(v->d > rest / 8, MG_ERR_FORMAT,
                 "%s: byte 26: document index count %" PRIu64 ", expected at most %" PRIu64
                 " for a %" PRIu64 "-byte file with %" PRIu64 " sequences",
                 v->path, v->d, rest / 8, v->size, v->s);
    uint64_t extra = rest - 8 * v->d, end = v->size - extra;
    if (extra == 0 || extra == v->s) {
        v->multimodal = extra != 0;
        return MG_OK;
    }
    return mg_error_set(MG_ERR_FORMAT,
                        "%s: byte %" PRIu64 ": %" PRIu64 " bytes after the document indices, "
                        "expected 0 (or %" PRIu64 " sequence modes)",
                        v->path, end, extra, v->s);
}

/* Copies the arrays out of the mapping into an aligned allocation and points d at them. */
static mg_status copy_arrays(const idx_view *v, mg_idx *d, idx_priv *priv)
{
    uint64_t len_bytes = (4 * v->s + 7) & ~(uint64_t)7;
    uint64_t total = len_bytes + 8 * v->s + 8 * v->d + (v->multimodal ? v->s : 0);
    MG_RETURN_IF(total > SIZE_MAX, MG_ERR_LIMIT, "%s: too large for this machine", v->path);
    uint8_t *buf = mg_malloc((size_t)total);
    if (!buf) return MG_ERR_NOMEM;
    const uint8_t *src = v->data + MG_IDX_HEADER_SIZE;
    memcpy(buf, src, (size_t)(4 * v->s));
    memcpy(buf + len_bytes, src + 4 * v->s, (size_t)(8 * v->s + 8 * v->d));
    if (v->multimodal)
        memcpy(buf + len_bytes + 8 * v->s + 8 * v->d, src + 12 * v->s + 8 * v->d, (size_t)v->s);
    priv->arrays = buf;
    d->lengths = (const int32_t *)(void *)buf;
    d->pointers = (const int64_t *)(void *)(buf + len_bytes);
    d->doc_index = d->pointers + v->s;
    d->modes = v->multimodal ? (const int8_t *)(d->doc_index + v->d) : NULL;
    return MG_OK;
}

/* Lengths >= 0 and pointers == running sums; *total receives the .bin size they imply. */
static mg_status check_pointers(const idx_view *v, const mg_idx *d, uint64_t *total)
{
    uint64_t sum = 0, len_off = MG_IDX_HEADER_SIZE, ptr_off = len_off + 4 * v->s;
    for (uint64_t i = 0; i < v->s; i++) {
        int32_t len = d->lengths[i];
        MG_RETURN_IF(len < 0, MG_ERR_FORMAT,
                     "%s: byte %" PRIu64 ": length %" PRId32 " of sequence %" PRIu64
                     ", expected >= 0",
                     v->path, len_off + 4 * i, len, i);
        MG_RETURN_IF(d->pointers[i] < 0 || (uint64_t)d->pointers[i] != sum, MG_ERR_FORMAT,
                     "%s: byte %" PRIu64 ": pointer %" PRId64 " of sequence %" PRIu64
                     ", expected %" PRIu64 " (the sum of the previous lengths x %zu bytes)",
                     v->path, ptr_off + 8 * i, d->pointers[i], i, sum, d->elem_size);
        sum += (uint64_t)len * d->elem_size;
        MG_RETURN_IF(sum > (uint64_t)INT64_MAX, MG_ERR_FORMAT,
                     "%s: byte %" PRIu64 ": the lengths add up to more than 2^63 bytes, "
                     "expected a total that fits in int64",
                     v->path, len_off + 4 * i);
    }
    *total = sum;
    return MG_OK;
}

static mg_status check_doc_index(const idx_view *v, const mg_idx *d)
{
    uint64_t off = MG_IDX_HEADER_SIZE + 12 * v->s;
    const int64_t *di = d->doc_index;
    MG_RETURN_IF(di[0] != 0, MG_ERR_FORMAT,
                 "%s: byte %" PRIu64 ": first document index %" PRId64 ", expected 0", v->path,
                 off, di[0]);
    for (uint64_t k = 1; k < v->d; k++) {
        MG_RETURN_IF(di[k] < di[k - 1], MG_ERR_FORMAT,
                     "%s: byte %" PRIu64 ": document index %" PRId64 " (entry %" PRIu64
                     ") after %" PRId64 ", expected non-decreasing indices",
                     v->path, off + 8 * k, di[k], k, di[k - 1]);
        MG_RETURN_IF((uint64_t)di[k] > v->s, MG_ERR_FORMAT,
                     "%s: byte %" PRIu64 ": document index %" PRId64 " (entry %" PRIu64
                     "), expected at most %" PRIu64 " (the sequence count)",
                     v->path, off + 8 * k, di[k], k, v->s);
    }
    MG_RETURN_IF((uint64_t)di[v->d - 1] != v->s, MG_ERR_FORMAT,
                 "%s: byte %" PRIu64 ": last document index %" PRId64 ", expected %" PRIu64
                 " (the sequence count)",
                 v->path, off + 8 * (v->d - 1), di[v->d - 1], v->s);
    return MG_OK;
}

static mg_status parse_idx(const idx_view *base, mg_idx *d, idx_priv *priv, uint64_t *bin_total)
{
    idx_view v = *base;
    MG_FORWARD(check_header(&v));
    MG_FORWARD(check_sizes(&v));
    d->dtype = (mg_dtype)v.code;
    d->elem_size = mg_dtype_size(v.code);
    d->n_sequences = v.s;
    d->n_doc_indices = v.d;
    MG_FORWARD(copy_arrays(&v, d, priv));
    MG_FORWARD(check_pointers(&v, d, bin_total));
    return check_doc_index(&v, d);
}

static mg_status load_idx(mg_idx *d, idx_priv *priv, const char *prefix, uint64_t *bin_total)
{
    char *path = mg_idx_path_alloc(prefix, ".idx");
    if (!path) return MG_ERR_NOMEM;
    mg_map m;
    mg_status st = mg_map_open(&m, path);
    if (st == MG_OK) {
        idx_view v = {.path = path, .data = m.data, .size = m.size};
        st = parse_idx(&v, d, priv, bin_total);
        mg_map_close(&m);
    }
    free(path);
    return st;
}

static mg_status load_bin(mg_idx *d, idx_priv *priv, const char *prefix, uint64_t expect)
{
    char *path = mg_idx_path_alloc(prefix, ".bin");
    if (!path) return MG_ERR_NOMEM;
    mg_status st = mg_map_open(&priv->bin, path);
    if (st == MG_OK && priv->bin.size != expect)
        st = mg_error_set(MG_ERR_FORMAT,
                          "%s: file size %zu bytes, expected %" PRIu64
                          " (the sequence lengths in %s.idx x %zu-byte %s)",
                          path, priv->bin.size, expect, prefix, d->elem_size,
                          mg_dtype_name(d->dtype));
    free(path);
    d->bin = priv->bin.data;
    d->bin_size = priv->bin.size;
    return st;
}

mg_status mg_idx_open(mg_idx *d, const char *prefix)
{
    memset(d, 0, sizeof *d);
    idx_priv *priv = mg_calloc(1, sizeof *priv);
    if (!priv) return MG_ERR_NOMEM;
    d->priv_ = priv;
    uint64_t bin_total = 0;
    mg_status st = load_idx(d, priv, prefix, &bin_total);
    if (st == MG_OK) st = load_bin(d, priv, prefix, bin_total);
    if (st != MG_OK) mg_idx_close(d);
    return st;
}

void mg_idx_close(mg_idx *d)
{
    if (!d) return;
    idx_priv *priv = d->priv_;
    if (priv) {
        free(priv->arrays);
        mg_map_close(&priv->bin);
        free(priv);
    }
    memset(d, 0, sizeof *d);
}

/* numpy-free widening of a float token: truncation, clamped, NaN -> 0. */
static int64_t float_token(double x)
{
    if (x != x) return 0;
    if (x >= 9223372036854775807.0) return INT64_MAX;
    if (x <= -9223372036854775808.0) return INT64_MIN;
    return (int64_t)x;
}

int64_t mg_idx_token(const mg_idx *d, uint64_t seq, uint64_t j)
{
    MG_ASSERT(seq < d->n_sequences && j < (uint64_t)d->lengths[seq]);
    const uint8_t *p = d->bin + d->pointers[seq] + j * d->elem_size;
    switch (d->dtype) {
    case MG_DT_UINT8: return p[0];
    case MG_DT_INT8: return (int8_t)p[0];
    case MG_DT_INT16: { int16_t v; memcpy(&v, p, 2); return v; }
    case MG_DT_UINT16: { uint16_t v; memcpy(&v, p, 2); return v; }
    case MG_DT_INT32: { int32_t v; memcpy(&v, p, 4); return v; }
    case MG_DT_INT64: { int64_t v; memcpy(&v, p, 8); return v; }
    case MG_DT_FLOAT32: { float v; memcpy(&v, p, 4); return float_token(v); }
    case MG_DT_FLOAT64: { double v; memcpy(&v, p, 8); return float_token(v); }
    }
    return 0;
}

/* idxds_reader.c — opens a Megatron indexed dataset (P.idx + P.bin) for random access.
 *
 * Contract (mg/idxds.h, byte layout in docs/FORMATS.md §1.2):
 *   - Validation is mg_idx_view_open's (idxds_view.c): header, sizes, lengths, pointers,
 *     document indices and the .bin size, with the first problem reported as
 *     MG_ERR_FORMAT "P.idx: byte OFFSET: <found>, expected <what>".
 *   - The arrays are then copied into one aligned allocation (in the file they sit at
 *     offset 34, not aligned for int32/int64); the .bin stays mapped.
 *   - Also here: the dtype tables (mg_dtype_size/name, mg_dtype_for_vocab).
 */
#include "idxds_internal.h"

#include <stdlib.h>
#include <string.h>

typedef struct {
    void *arrays; /* lengths | pointers | doc_index | modes, one allocation */
    mg_idx_view view;
} idx_priv;

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

/* Copies the view's arrays into an aligned allocation and recomputes the pointers
 * (already checked equal to the prefix sums of the lengths). */
static mg_status copy_arrays(const mg_idx_view *v, mg_idx *d, idx_priv *priv)
{
    uint64_t n = v->n_sequences, nd = v->n_doc_indices;
    uint64_t len_bytes = (4 * n + 7) & ~(uint64_t)7;
    uint64_t total = len_bytes + 8 * n + 8 * nd + (v->multimodal ? n : 0);
    MG_RETURN_IF(total > SIZE_MAX, MG_ERR_LIMIT, "%s: too large for this machine", v->path);
    uint8_t *buf = mg_malloc((size_t)total);
    if (!buf) return MG_ERR_NOMEM;
    memcpy(buf, mg_idx_view_lengths(v), (size_t)(4 * n));
    memcpy(buf + len_bytes, mg_idx_view_lengths(v) + 4 * n, (size_t)(8 * n));
    memcpy(buf + len_bytes + 8 * n, mg_idx_view_doc_index(v), (size_t)(8 * nd));
    if (v->multimodal) memcpy(buf + len_bytes + 8 * n + 8 * nd, mg_idx_view_modes(v), (size_t)n);
    priv->arrays = buf;
    d->lengths = (const int32_t *)(void *)buf;
    d->pointers = (const int64_t *)(void *)(buf + len_bytes);
    d->doc_index = d->pointers + n;
    d->modes = v->multimodal ? (const int8_t *)(d->doc_index + nd) : NULL;
    return MG_OK;
}

mg_status mg_idx_open(mg_idx *d, const char *prefix)
{
    memset(d, 0, sizeof *d);
    idx_priv *priv = mg_calloc(1, sizeof *priv);
    if (!priv) return MG_ERR_NOMEM;
    d->priv_ = priv;
    mg_status st = mg_idx_view_open(&priv->view, prefix);
    if (st == MG_OK) {
        const mg_idx_view *v = &priv->view;
        d->dtype = v->dtype;
        d->elem_size = v->elem_size;
        d->n_sequences = v->n_sequences;
        d->n_doc_indices = v->n_doc_indices;
        d->bin = v->bin.data;
        d->bin_size = v->bin.size;
        st = copy_arrays(v, d, priv);
    }
    if (st != MG_OK) mg_idx_close(d);
    return st;
}

void mg_idx_close(mg_idx *d)
{
    if (!d) return;
    idx_priv *priv = d->priv_;
    if (priv) {
        free(priv->arrays);
        mg_idx_view_close(&priv->view);
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

/* dcp_pack.c — mg/dcp.h: a meta's items and chunks as flat bytes (one writer's part of a
 * .metadata sent to the one that writes it) and the merge of such parts. */
#include <stdlib.h>
#include <string.h>

#include "mg/dcp.h"

typedef struct {
    uint8_t *p;
    size_t n, cap;
} packer;

static int put(packer *b, const void *x, size_t n)
{
    if (b->n + n > b->cap) {
        size_t cap = (b->n + n) * 2 + 256;
        uint8_t *p = realloc(b->p, cap);
        if (!p) return 0;
        b->p = p, b->cap = cap;
    }
    memcpy(b->p + b->n, x, n);
    b->n += n;
    return 1;
}

static int put_i64(packer *b, int64_t v) { return put(b, &v, sizeof v); }

static int put_str(packer *b, const char *s)
{
    return put_i64(b, (int64_t)strlen(s)) && put(b, s, strlen(s));
}

static int pack_item(packer *b, const mg_dcp_meta *m, const mg_dcp_item *it)
{
    int ok = put_str(b, it->key) && put_i64(b, it->is_bytes) && put_i64(b, it->dtype) &&
             put_i64(b, it->ndim) && put(b, it->size, sizeof(int64_t) * (size_t)it->ndim) &&
             put_i64(b, (int64_t)it->nchunks);
    for (size_t c = 0; ok && c < it->nchunks; c++) {
        const mg_dcp_chunk *k = &it->chunks[c];
        ok = put(b, k->off, sizeof(int64_t) * (size_t)it->ndim) &&
             put(b, k->len, sizeof(int64_t) * (size_t)it->ndim) && put_str(b, m->files[k->file]) &&
             put_i64(b, (int64_t)k->offset) && put_i64(b, (int64_t)k->length);
    }
    return ok;
}

mg_status mg_dcp_meta_pack(const mg_dcp_meta *m, uint8_t **out, size_t *out_len)
{
    packer b = {NULL, 0, 0};
    int ok = put_i64(&b, (int64_t)m->nitems);
    for (size_t i = 0; ok && i < m->nitems; i++) ok = pack_item(&b, m, &m->items[i]);
    if (!ok) {
        free(b.p);
        return mg_error_set(MG_ERR_NOMEM, "out of memory packing a checkpoint's metadata");
    }
    *out = b.p, *out_len = b.n;
    return MG_OK;
}

typedef struct {
    const uint8_t *p;
    size_t n, at;
    char str[4096];
} unpacker;

static int get(unpacker *u, void *x, size_t n)
{
    if (n > u->n - u->at) return 0;
    memcpy(x, u->p + u->at, n);
    u->at += n;
    return 1;
}

static int get_i64(unpacker *u, int64_t *v) { return get(u, v, sizeof *v); }

static int get_str(unpacker *u)
{
    int64_t n = 0;
    if (!get_i64(u, &n) || n < 0 || n >= (int64_t)sizeof u->str || !get(u, u->str, (size_t)n)) return 0;
    u->str[n] = 0;
    return 1;
}

/* One packed item into m: a new key is added, a known one (same kind, dtype and shape)
 * gains the chunks. Returns 0 on malformed input, -1 when out of memory. */
static int merge_item(mg_dcp_meta *m, unpacker *u)
{
    int64_t is_bytes, dtype, ndim, size[MG_DCP_MAX_DIMS], nchunks;
    if (!get_str(u) || !get_i64(u, &is_bytes) || !get_i64(u, &dtype) || !get_i64(u, &ndim) ||
        ndim < 0 || ndim > MG_DCP_MAX_DIMS || !get(u, size, sizeof(int64_t) * (size_t)ndim) ||
        !get_i64(u, &nchunks))
        return 0;
    const mg_dcp_item *found = mg_dcp_find(m, u->str);
    mg_dcp_item *it = found ? &m->items[found - m->items]
                      : is_bytes ? mg_dcp_add_bytes(m, u->str)
                                 : mg_dcp_add_tensor(m, u->str, (mg_tdtype)dtype, (int)ndim, size);
    if (!it) return -1;
    if (it->is_bytes != !!is_bytes || it->dtype != (mg_tdtype)dtype || it->ndim != ndim ||
        memcmp(it->size, size, sizeof(int64_t) * (size_t)ndim) != 0)
        return 0;
    for (int64_t c = 0; c < nchunks; c++) {
        int64_t off[MG_DCP_MAX_DIMS], len[MG_DCP_MAX_DIMS], offset, length;
        size_t bytes = sizeof(int64_t) * (size_t)ndim;
        if (!get(u, off, bytes) || !get(u, len, bytes) || !get_str(u) || !get_i64(u, &offset) ||
            !get_i64(u, &length))
            return 0;
        int64_t file = mg_dcp_file_index(m, u->str);
        mg_dcp_chunk *k = file >= 0 ? mg_dcp_add_chunk(it, is_bytes ? NULL : off, is_bytes ? NULL : len) : NULL;
        if (!k) return -1;
        k->file = (uint32_t)file, k->offset = (uint64_t)offset, k->length = (uint64_t)length;
    }
    return 1;
}

mg_status mg_dcp_meta_merge(mg_dcp_meta *m, const uint8_t *data, size_t len, const char *label)
{
    unpacker u = {data, len, 0, ""};
    int64_t n = 0;
    MG_RETURN_IF(!get_i64(&u, &n) || n < 0, MG_ERR_FORMAT, "%s: no item count", label);
    for (int64_t i = 0; i < n; i++) {
        size_t at = u.at;
        int r = merge_item(m, &u);
        MG_RETURN_IF(r < 0, MG_ERR_NOMEM, "out of memory merging %s", label);
        MG_RETURN_IF(r == 0, MG_ERR_FORMAT, "%s: byte %zu: item %lld is malformed or disagrees "
                     "with the same key's kind, dtype or shape", label, at, (long long)i);
    }
    MG_RETURN_IF(u.at != len, MG_ERR_FORMAT, "%s: %zu bytes after the last item", label, len - u.at);
    return MG_OK;
}

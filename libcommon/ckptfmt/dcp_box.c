/* dcp_box.c — mg/dcp.h: mg_dcp_read_box, a box of a DCP tensor gathered from its chunks.
 *
 * Contract (mg/dcp.h): for every chunk the intersection with the box is copied run by run
 * (runs along the last dimension are contiguous in both the chunk and the destination);
 * an odometer walks the other dimensions. Chunks without data are a bug (MG_ASSERT).
 */
#include <string.h>

#include "mg/dcp.h"

typedef struct {
    int n;
    int64_t lo[MG_DCP_MAX_DIMS], hi[MG_DCP_MAX_DIMS]; /* the intersection, global */
} box;

/* Intersection of chunk c with [off, off + len); 0 when empty. */
static int intersect(const mg_dcp_item *it, const mg_dcp_chunk *c, const int64_t *off,
                     const int64_t *len, box *b)
{
    b->n = it->ndim;
    for (int d = 0; d < it->ndim; d++) {
        b->lo[d] = off[d] > c->off[d] ? off[d] : c->off[d];
        int64_t e1 = off[d] + len[d], e2 = c->off[d] + c->len[d];
        b->hi[d] = e1 < e2 ? e1 : e2;
        if (b->hi[d] <= b->lo[d]) return 0;
    }
    return 1;
}

/* Element offset of global index g in a C-order box starting at o with extents l. */
static int64_t index_in(int n, const int64_t *g, const int64_t *o, const int64_t *l)
{
    int64_t e = 0;
    for (int d = 0; d < n; d++) e = e * l[d] + (g[d] - o[d]);
    return e;
}

static void copy_part(const mg_dcp_item *it, const mg_dcp_chunk *c, const box *b,
                      const int64_t *off, const int64_t *len, uint8_t *dst)
{
    size_t es = mg_tdtype_size(it->dtype);
    int n = b->n, last = n - 1;
    int64_t g[MG_DCP_MAX_DIMS];
    size_t run = n ? (size_t)(b->hi[last] - b->lo[last]) * es : es;
    for (int d = 0; d < n; d++) g[d] = b->lo[d];
    for (;;) {
        memcpy(dst + (size_t)index_in(n, g, off, len) * es,
               c->data + (size_t)index_in(n, g, c->off, c->len) * es, run);
        int d = last - 1;
        for (; d >= 0; d--) { /* the odometer over all but the last dimension */
            if (++g[d] < b->hi[d]) break;
            g[d] = b->lo[d];
        }
        if (d < 0) return;
    }
}

void mg_dcp_read_box(const mg_dcp_item *it, const int64_t *off, const int64_t *len, void *dst)
{
    for (size_t i = 0; i < it->nchunks; i++) {
        const mg_dcp_chunk *c = &it->chunks[i];
        box b = {0};
        if (!intersect(it, c, off, len, &b)) continue;
        MG_ASSERT(c->data);
        copy_part(it, c, &b, off, len, dst);
    }
}

/* fuzz_dcp_metadata.c — libFuzzer target for the DCP `.metadata` reader (mg/dcp.h).
 *
 * Input: a .metadata pickle. When it loads, every item and chunk is visited, the metadata is
 * emitted again (mg_dcp_meta_dump) and the emitted pickle must load to the same items, dtypes,
 * shapes, chunks and storage (abort otherwise). Must not crash, leak or trip a sanitizer.
 */
#include <stdlib.h>
#include <string.h>

#include "mg/dcp.h"

static int same_item(const mg_dcp_item *a, const mg_dcp_item *b)
{
    if (strcmp(a->key, b->key) || a->is_bytes != b->is_bytes || a->nchunks != b->nchunks) return 0;
    if (!a->is_bytes && (a->dtype != b->dtype || a->ndim != b->ndim ||
                         memcmp(a->size, b->size, sizeof a->size)))
        return 0;
    for (size_t c = 0; c < a->nchunks; c++) {
        const mg_dcp_chunk *x = &a->chunks[c], *y = &b->chunks[c];
        if (memcmp(x->off, y->off, sizeof x->off) || memcmp(x->len, y->len, sizeof x->len) ||
            x->offset != y->offset || x->length != y->length)
            return 0;
    }
    return 1;
}

static void roundtrip(const mg_dcp_meta *m)
{
    uint8_t *out = NULL;
    size_t len = 0;
    mg_dcp_meta *back = NULL;
    if (mg_dcp_meta_dump(m, &out, &len) != MG_OK) abort();
    if (mg_dcp_meta_load(&back, out, len, "dump") != MG_OK) abort(); /* our own output loads */
    if (back->nitems != m->nitems || back->nfiles != m->nfiles) abort();
    for (size_t i = 0; i < m->nitems; i++)
        if (!same_item(&m->items[i], mg_dcp_find(back, m->items[i].key))) abort();
    mg_dcp_meta_free(back);
    free(out);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mg_dcp_meta *m = NULL;
    if (mg_dcp_meta_load(&m, data, size, "fuzz/.metadata") != MG_OK) return 0;
    roundtrip(m);
    mg_dcp_meta_free(m);
    return 0;
}

/* fuzz_zip.c — libFuzzer target for the ZIP reader and torch file loader (mg/torchfile.h).
 *
 * Input: a whole file. It is opened as a ZIP (every entry's data is read and its CRC
 * checked) and as a torch.save file (every tensor's view is read element by element, then
 * the graph is emitted as a pickle). Must not crash, leak or trip a sanitizer.
 */
#include <stdlib.h>
#include <string.h>

#include "mg/torchfile.h"

static char key[] = "0";

static const char *key_fn(void *ctx, const mg_pk_obj *o)
{
    (void)ctx;
    return o->tensor->storage_key ? o->tensor->storage_key : key;
}

static void read_zip(const uint8_t *data, size_t size)
{
    mg_zip *z;
    if (mg_zip_open(&z, data, size, "fuzz.zip") != MG_OK) return;
    for (size_t i = 0; i < mg_zip_count(z); i++) {
        const mg_zip_entry *e = mg_zip_entry_at(z, i);
        (void)mg_zip_check_crc(z, e);
        if (mg_zip_find(z, e->name) == NULL) abort();
    }
    mg_zip_free(z);
}

/* Touches every element of the view (ASan checks the bounds the loader promised). */
static uint32_t read_view(const mg_pk_tensor *t)
{
    size_t es = mg_tdtype_size(t->dtype);
    int64_t idx[64] = {0};
    int64_t n = mg_pk_tensor_numel(t);
    uint32_t crc = 0;
    for (int64_t k = 0; k < n && k < 4096; k++) {
        int64_t off = t->offset;
        for (int d = 0; d < t->ndim; d++) off += idx[d] * t->stride[d];
        crc = mg_crc32(crc, t->data + (size_t)off * es, es);
        for (int d = t->ndim - 1; d >= 0; d--) {
            if (++idx[d] < t->size[d]) break;
            idx[d] = 0;
        }
    }
    /* and the last element */
    if (n > 0) {
        int64_t off = t->offset;
        for (int d = 0; d < t->ndim; d++) off += (t->size[d] - 1) * t->stride[d];
        crc = mg_crc32(crc, t->data + (size_t)off * es, es);
    }
    return crc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    read_zip(data, size);
    mg_torch_file *f;
    if (mg_torch_open_mem(&f, data, size, "fuzz.pt") != MG_OK) return 0;
    mg_pk_graph *g = mg_torch_graph(f);
    uint32_t acc = 0;
    for (size_t i = 0; i < mg_pk_tensor_count(g); i++) acc ^= read_view(mg_pk_tensor_at(g, i)->tensor);
    uint8_t *out;
    size_t len;
    if (mg_pk_dump(mg_torch_root(f), key_fn, NULL, &out, &len) == MG_OK) free(out);
    mg_torch_close(f);
    return (int)(acc & 0);
}

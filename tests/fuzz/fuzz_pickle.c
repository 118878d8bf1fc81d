/* fuzz_pickle.c — libFuzzer target for the pickle VM and emitter (mg/pickle.h).
 *
 * Input: a pickle. It is loaded; if that succeeds the graph is emitted (protocol 2), the
 * emitted pickle must load again, and emitting that second graph must give the same bytes
 * (abort otherwise). Must not crash, leak or trip a sanitizer.
 */
#include <stdlib.h>
#include <string.h>

#include "mg/pickle.h"

static char key[] = "0";

static const char *key_fn(void *ctx, const mg_pk_obj *o)
{
    (void)ctx, (void)o;
    return key;
}

static void roundtrip(const uint8_t *a, size_t alen)
{
    mg_pk_graph *g = mg_pk_graph_create();
    mg_pk_obj *root;
    uint8_t *b;
    size_t blen;
    if (!g) return;
    if (mg_pk_load(g, a, alen, "dump", &root) != MG_OK) abort(); /* our own output must load */
    if (mg_pk_dump(root, key_fn, NULL, &b, &blen) != MG_OK) abort();
    if (blen != alen || memcmp(a, b, alen) != 0) abort();
    free(b);
    mg_pk_graph_free(g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mg_pk_graph *g = mg_pk_graph_create();
    mg_pk_obj *root;
    if (!g) return 0;
    if (mg_pk_load(g, data, size, "fuzz", &root) == MG_OK) {
        uint8_t *out;
        size_t len;
        (void)mg_pk_tensor_count(g);
        if (mg_pk_dump(root, key_fn, NULL, &out, &len) == MG_OK) {
            roundtrip(out, len);
            free(out);
        }
    }
    mg_pk_graph_free(g);
    return 0;
}

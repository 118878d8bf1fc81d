/* fuzz_npy.c — libFuzzer target for the .npy reader (mg_npy_parse): any input is either
 * refused or describes an array that lies exactly inside the input; every element of an
 * accepted array is read, and the header mg_npy_header writes for the same array, followed
 * by the same data, parses back to the same dtype and shape. Must not crash, leak or trip a
 * sanitizer. */
#include <stdlib.h>
#include <string.h>

#include "mg/npy.h"

static void round_trip(const mg_npy *a)
{
    char head[256];
    size_t hlen = 0;
    uint64_t shape[2] = {a->shape[0], a->shape[1]};
    if (mg_npy_header(a->dtype, a->ndim, shape, head, sizeof head, &hlen) != MG_OK) abort();
    size_t dlen = (size_t)a->count * mg_npy_itemsize(a->dtype);
    uint8_t *img = malloc(hlen + dlen + 1);
    if (!img) abort();
    memcpy(img, head, hlen);
    if (dlen) memcpy(img + hlen, a->data, dlen);
    mg_npy b;
    if (mg_npy_parse(img, hlen + dlen, "copy", &b) != MG_OK) abort();
    if (b.dtype != a->dtype || b.ndim != a->ndim || b.count != a->count ||
        b.shape[0] != a->shape[0] || b.shape[1] != a->shape[1])
        abort();
    free(img);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mg_npy a;
    static const uint8_t empty[1] = {0};
    if (mg_npy_parse(size ? data : empty, size, "fuzz.npy", &a) != MG_OK) return 0;
    size_t item = mg_npy_itemsize(a.dtype);
    if (a.data < data || a.data + a.count * item != data + size) abort();
    volatile uint64_t sum = 0;
    for (uint64_t i = 0; i < a.count; i++) sum += (uint64_t)mg_npy_get(&a, i);
    (void)sum;
    round_trip(&a);
    return 0;
}

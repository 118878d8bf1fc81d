/* fuzz_distcp.c — libFuzzer target for the reader of `.distcp` tensor items (mg/dcp.h,
 * mg_dcp_chunk_check: a nested torch.save archive that must hold one contiguous tensor).
 *
 * Input: one byte choosing the expected dtype and shape (from a small table, among them the
 * seeds' own), then the item's bytes. When the item is accepted every element of the chunk
 * is read. Must not crash, leak or trip a sanitizer.
 */
#include <stdint.h>
#include <stdlib.h>

#include "mg/dcp.h"

static const struct {
    mg_tdtype dt;
    int ndim;
    int64_t shape[3];
} expect[] = {
    {MG_TD_F32, 1, {64}},          {MG_TD_F32, 2, {1, 64}},  {MG_TD_F32, 3, {1, 64, 96}},
    {MG_TD_BF16, 2, {128, 64}},    {MG_TD_F16, 0, {0}},      {MG_TD_F32, 3, {2, 3, 4}},
    {MG_TD_U8, 1, {16}},           {MG_TD_F32, 2, {128, 64}},
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    size_t k = data[0] % (sizeof expect / sizeof expect[0]);
    const uint8_t *p = NULL;
    if (mg_dcp_chunk_check(data + 1, size - 1, expect[k].dt, expect[k].ndim, expect[k].shape,
                           "fuzz.distcp: offset 0: key", &p) != MG_OK)
        return 0;
    int64_t n = mg_dcp_volume(expect[k].ndim, expect[k].shape);
    size_t bytes = (size_t)n * mg_tdtype_size(expect[k].dt);
    volatile uint8_t sum = 0;
    for (size_t i = 0; i < bytes; i++) sum ^= p[i];
    (void)sum;
    return 0;
}

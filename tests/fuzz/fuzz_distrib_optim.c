/* fuzz_distrib_optim.c — libFuzzer target for megatron-core's distrib_optim.pt structure
 * (mg/distrib_optim.h) over the torch container (mg/torchfile.h).
 *
 * Input: a torch.save zip. When it opens and mg_distrib_optim_read accepts its root, the
 * three world tensors' n floats must be readable inside the file's storages (every byte is
 * read, so that ASan sees an overrun) and n must not be negative. Must not crash, leak or
 * trip a sanitizer.
 */
#include <stdlib.h>
#include <string.h>

#include "mg/distrib_optim.h"
#include "mg/torchfile.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mg_torch_file *f = NULL;
    if (mg_torch_open_mem(&f, data, size, "fuzz") != MG_OK) return 0;
    mg_distrib_optim_world w;
    if (mg_distrib_optim_read("fuzz", mg_torch_root(f), &w) == MG_OK) {
        if (w.n < 0) abort();
        volatile uint8_t sum = 0;
        for (int k = 0; k < 3; k++)
            for (int64_t i = 0; i < w.n * 4; i++) sum ^= w.t[k][i];
        (void)sum;
    }
    mg_torch_close(f);
    return 0;
}

/* fuzz_pretok_fast.c — libFuzzer target: the GPT-2, cl100k and o200k scanners' window loops
 * against their reference loops (tests/fuzz/pretok_fast_oracle.h) on arbitrary bytes.
 * Byte 0 picks the config (family), the rest is the text; any difference aborts.
 */
#include <stdlib.h>

#include "pretok_fast_oracle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const pretok_fast_case *c = &pretok_fast_cases[data[0] % PRETOK_FAST_NCASES];
    const char *diff = pretok_fast_oracle_check(c, data + 1, size - 1, 0);
    if (diff) {
        fprintf(stderr, "%s\n", diff);
        abort();
    }
    return 0;
}

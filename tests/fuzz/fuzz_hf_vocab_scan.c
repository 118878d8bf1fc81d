/* fuzz_hf_vocab_scan.c — libFuzzer target: arbitrary bytes as a tokenizer.json, parsed with
 * the vocab/merges scanner and by jansson alone (tests/fuzz/hf_scan_oracle.h); a
 * disagreement aborts. Seeds: tests/fuzz/corpus/hf_vocab_scan/.
 */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>

#include "hf_scan_oracle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    int scanned;
    const char *diff = hf_scan_oracle_check((const char *)data, size, &scanned);
    if (diff) {
        fprintf(stderr, "hf_vocab_scan differs from jansson: %s\n", diff);
        abort();
    }
    return 0;
}

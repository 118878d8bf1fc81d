/* fuzz_tracker.c — libFuzzer target for Megatron's tracker parser (mg_megatron_tracker_parse):
 * any input is either refused or gives a non-negative iteration (0 for release); an accepted
 * iteration written back as the tracker text parses to the same value. Must not crash or
 * trip a sanitizer (the input is not NUL-terminated). */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/megatron_layout.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    mg_megatron_iter it;
    if (mg_megatron_tracker_parse((const char *)data, size, "fuzz", &it) != MG_OK) return 0;
    if (it.iteration < 0 || (it.release && it.iteration != 0)) abort();
    char text[32];
    int n = it.release ? snprintf(text, sizeof text, "release")
                       : snprintf(text, sizeof text, "%" PRId64, it.iteration);
    mg_megatron_iter back;
    if (mg_megatron_tracker_parse(text, (size_t)n, "copy", &back) != MG_OK) abort();
    if (back.iteration != it.iteration || back.release != it.release) abort();
    return 0;
}

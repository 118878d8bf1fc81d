/* fuzz_jsonl.c — libFuzzer target for mg/jsonl.h: arbitrary bytes as one JSONL line with
 * keys {"text", "id"}, checked against jansson (tests/fuzz/jsonl_oracle.h). A disagreement
 * aborts with the line's verdicts; crashes and leaks are caught by the sanitizers. */
#include <stdio.h>
#include <stdlib.h>

#include "jsonl_oracle.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const keys[] = {"text", "id"};
    mg_jsonl *p = NULL;
    if (mg_jsonl_create(&p) != MG_OK) return 0;
    mg_jsonl_value out[2];
    const char *diff = jsonl_oracle_check(p, data, size, keys, 2, out);
    if (diff) {
        fprintf(stderr, "fuzz_jsonl: %s (ours: \"%s\")\n", diff, mg_last_error());
        abort();
    }
    mg_jsonl_free(p);
    return 0;
}

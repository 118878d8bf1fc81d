/* fuzz_argv.c — libFuzzer target for the command-line scanner (mg/argv.h): the input, split
 * at NUL bytes, is argv; scanned under each dialect (abbrev, any_value), every event consumes
 * or stops, values lie inside argv (or inside the word for "=value"), counts follow nargs,
 * the scan ends and each error event is worded (mg_argv_error). Must not crash or trip a
 * sanitizer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mg/argv.h"

static const mg_argv_flag flags[] = {
    {"--input", MG_ARGV_ONE},  {"--inspect", MG_ARGV_ONE}, {"--keys", MG_ARGV_LIST},
    {"--quiet", MG_ARGV_SWITCH}, {"--paths", MG_ARGV_ANY}, {"--help", MG_ARGV_SWITCH},
};

static void scan(int argc, char **argv, int abbrev, int any_value)
{
    mg_argv_spec spec = {flags, sizeof flags / sizeof flags[0], abbrev, any_value, 5, NULL, NULL};
    mg_argv a;
    mg_argv_init(&a, &spec, argc, argv);
    for (int steps = 0;; steps++) {
        if (steps > argc) abort(); /* every flag event consumes a word */
        int before = a.i;
        mg_argv_event ev = mg_argv_next(&a);
        if (ev != MG_ARGV_FLAG && ev != MG_ARGV_END && mg_argv_error(&a, ev) != MG_ERR_ARG)
            abort(); /* every error event has its message */
        if (ev != MG_ARGV_FLAG) return;
        if (a.i <= before || a.id < 0 || (size_t)a.id >= spec.n) abort();
        mg_argv_nargs n = flags[a.id].nargs;
        if ((n == MG_ARGV_SWITCH && a.nvalues) || (n == MG_ARGV_ONE && a.nvalues != 1) ||
            (n == MG_ARGV_LIST && !a.nvalues))
            abort();
        for (size_t k = 0; k < a.nvalues; k++)
            if (!a.values[k] || strlen(a.values[k]) > 4096) abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 4096) return 0;
    char *buf = malloc(size + 1), *argv[64];
    if (!buf) return 0;
    memcpy(buf, data, size);
    buf[size] = 0;
    int argc = 0;
    argv[argc++] = buf; /* argv[0], the program: never scanned */
    for (char *p = buf; argc < 64 && p <= buf + size; p += strlen(p) + 1) argv[argc++] = p;
    for (int d = 0; d < 4; d++) scan(argc, argv, d & 1, d >> 1);
    free(buf);
    return 0;
}

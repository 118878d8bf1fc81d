/* punkt_split.c — test program: Punkt sentence spans of texts (tests/interop/test_punkt.py).
 *
 * Usage: punkt_split MODEL_DIR [--keep-newlines] [--chunk N] < records
 * stdin: records, each an 8-byte little-endian length and that many bytes of UTF-8 text.
 * stdout: per record, one line "START END" (byte offsets) per sentence, then "-".
 * Exit 1 with the library's message when the model does not load. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/punkt.h"

static int read_record(char **buf, size_t *cap, size_t *len)
{
    uint8_t h[8];
    if (fread(h, 1, 8, stdin) != 8) return 0;
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--) n = (n << 8) | h[i];
    if (n + 1 > *cap) {
        *cap = (size_t)n + 1;
        *buf = realloc(*buf, *cap);
        if (!*buf) return -1;
    }
    if (fread(*buf, 1, (size_t)n, stdin) != n) return -1;
    *len = (size_t)n;
    return 1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: punkt_split MODEL_DIR [--keep-newlines] [--chunk N]\n");
        return 2;
    }
    int keep = 0;
    size_t chunk = 0;
    for (int i = 2; i < argc; i++) {
        if (strcmp(argv[i], "--keep-newlines") == 0) keep = 1;
        else if (strcmp(argv[i], "--chunk") == 0 && i + 1 < argc)
            chunk = strtoull(argv[++i], NULL, 10);
    }
    mg_punkt *p;
    mg_punkt_splitter *s;
    if (mg_punkt_load(&p, argv[1]) != MG_OK || mg_punkt_splitter_create(&s, p, keep) != MG_OK) {
        fprintf(stderr, "punkt_split: %s\n", mg_last_error());
        return 1;
    }
    char *buf = NULL;
    size_t cap = 0, len = 0;
    int r;
    while ((r = read_record(&buf, &cap, &len)) == 1) {
        const mg_punkt_span *sp;
        size_t n;
        if (mg_punkt_split(s, buf, len, chunk, &sp, &n) != MG_OK) return 1;
        for (size_t i = 0; i < n; i++) printf("%zu %zu\n", sp[i].start, sp[i].end);
        printf("-\n");
    }
    free(buf);
    mg_punkt_splitter_free(s);
    mg_punkt_free(p);
    return r < 0 ? 1 : 0;
}

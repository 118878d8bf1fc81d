/* fuzz_punkt.c — libFuzzer target: the Punkt model loader and sentence splitter.
 *
 * Input layout: byte 0 = flags (bit 0: --keep-newlines; bits 1-7: piece size in code points,
 * 0 = one piece), then five parts separated by NUL bytes: abbrev_types.txt,
 * sent_starters.txt, collocations.tab, ortho_context.tab and the text to split (missing
 * parts are empty; the text may hold any bytes, malformed UTF-8 included). A model that
 * loads splits the text, and the spans must be ordered, within the text and on code point
 * boundaries of its decoding. Any outcome is fine except a crash, a sanitizer report, a leak
 * or a bad span. Seeds: tests/fuzz/corpus/punkt/ (small models with English text).
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mg/unicode.h"
#include "text/punkt_internal.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* 1 when off is where a code point starts in the decoding of t[0, n) (or n). */
static int on_boundary(const uint8_t *t, size_t n, size_t off)
{
    size_t i = 0;
    while (i < off) {
        uint32_t c;
        i += mg_utf8_decode(t + i, n - i, &c);
    }
    return i == off;
}

static void check_spans(const uint8_t *t, size_t n, const mg_punkt_span *sp, size_t k)
{
    size_t prev = 0;
    for (size_t i = 0; i < k; i++) {
        if (sp[i].start > sp[i].end || sp[i].end > n || sp[i].start < prev) abort();
        if (!on_boundary(t, n, sp[i].start) || !on_boundary(t, n, sp[i].end)) abort();
        prev = sp[i].end;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1) return 0;
    const char *part[5] = {"", "", "", "", ""};
    size_t len[5] = {0};
    const uint8_t *p = data + 1, *end = data + size;
    for (int i = 0; i < 5 && p <= end; i++) {
        const uint8_t *z = i < 4 ? memchr(p, 0, (size_t)(end - p)) : NULL;
        part[i] = (const char *)p;
        len[i] = (size_t)((z ? z : end) - p);
        p += len[i] + 1;
    }
    mg_punkt *m;
    if (pk_load_memory(&m, part, len, "fuzz") != MG_OK) return 0;
    mg_punkt_splitter *s;
    if (mg_punkt_splitter_create(&s, m, data[0] & 1) == MG_OK) {
        const mg_punkt_span *sp;
        size_t k;
        if (mg_punkt_split(s, part[4], len[4], data[0] >> 1, &sp, &k) == MG_OK)
            check_spans((const uint8_t *)part[4], len[4], sp, k);
        mg_punkt_splitter_free(s);
    }
    mg_punkt_free(m);
    return 0;
}

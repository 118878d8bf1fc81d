/* mg/strbuf.h — a growing NUL-terminated string for text that is built piece by piece (JSON
 * headers, cache descriptions).
 *
 * Contract: start from a zeroed mg_strbuf; appends keep s NUL-terminated (s stays NULL until
 * the first append). An allocation failure sets nomem and every later append does nothing,
 * so a builder appends freely and checks nomem once at the end. mg_strbuf_free releases
 * the memory and leaves an empty buffer.
 */
#ifndef MG_STRBUF_H
#define MG_STRBUF_H

#include <stddef.h>

typedef struct mg_strbuf {
    char *s;
    size_t len, cap;
    int nomem;
} mg_strbuf;

/* The growth rule shared with other string buffers (mg_text): makes *cap >= need by
 * doubling from 256 and reallocating *p. Returns 0, or -1 (nothing changed) when out of
 * memory. */
int mg_strbuf_grow(char **p, size_t *cap, size_t need);

void mg_strbuf_put(mg_strbuf *b, const char *s, size_t n);
void mg_strbuf_puts(mg_strbuf *b, const char *s);
void mg_strbuf_free(mg_strbuf *b);

#endif

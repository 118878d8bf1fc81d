/* strbuf.c — mg/strbuf.h: a growing NUL-terminated string (capacity doubles from 256). */
#include "mg/strbuf.h"

#include <stdlib.h>
#include <string.h>

#include "mg/error.h"

void mg_strbuf_put(mg_strbuf *b, const char *s, size_t n)
{
    if (b->nomem) return;
    if (b->len + n + 1 > b->cap) {
        size_t cap = b->cap ? b->cap : 256;
        while (cap < b->len + n + 1) cap *= 2;
        char *p = mg_realloc(b->s, cap);
        if (!p) {
            b->nomem = 1;
            return;
        }
        b->s = p;
        b->cap = cap;
    }
    if (n) memcpy(b->s + b->len, s, n);
    b->len += n;
    b->s[b->len] = '\0';
}

void mg_strbuf_puts(mg_strbuf *b, const char *s)
{
    mg_strbuf_put(b, s, strlen(s));
}

void mg_strbuf_free(mg_strbuf *b)
{
    free(b->s);
    memset(b, 0, sizeof *b);
}

/* strbuf.c — mg/strbuf.h: a growing NUL-terminated string (capacity doubles from 256). */
#include "mg/strbuf.h"

#include <stdlib.h>
#include <string.h>

#include "mg/error.h"
#include "mg/grow.h"

int mg_strbuf_grow(char **p, size_t *cap, size_t need)
{
    return mg_grow(p, cap, need, 1, 256) == MG_OK ? 0 : -1;
}

void mg_strbuf_put(mg_strbuf *b, const char *s, size_t n)
{
    if (b->nomem) return;
    if (mg_strbuf_grow(&b->s, &b->cap, b->len + n + 1)) {
        b->nomem = 1;
        return;
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

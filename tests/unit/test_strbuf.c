/* test_strbuf.c — mg/strbuf.h: appends across several capacity doublings stay contiguous and
 * NUL-terminated, an empty append on a fresh buffer gives "", free leaves an empty buffer. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "mg/strbuf.h"

MG_TEST(strbuf_grows_and_terminates)
{
    mg_strbuf b = {0};
    mg_strbuf_put(&b, "", 0);
    MG_CHECK(t, b.s && b.len == 0 && b.s[0] == '\0' && !b.nomem);
    char expect[3000];
    size_t n = 0;
    for (int i = 0; i < 300; i++) {
        char piece[16];
        int k = snprintf(piece, sizeof piece, "%d,", i);
        mg_strbuf_puts(&b, piece);
        memcpy(expect + n, piece, (size_t)k);
        n += (size_t)k;
    }
    expect[n] = '\0';
    MG_CHECK(t, b.len == n && b.cap > n && !b.nomem);
    MG_CHECK_EQ_STR(t, b.s, expect);
    mg_strbuf_put(&b, "xyz", 2); /* only the first n bytes */
    MG_CHECK(t, b.len == n + 2 && b.s[n] == 'x' && b.s[n + 1] == 'y' && b.s[n + 2] == '\0');
    mg_strbuf_free(&b);
    MG_CHECK(t, b.s == NULL && b.len == 0 && b.cap == 0 && !b.nomem);
}

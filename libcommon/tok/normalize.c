/* normalize.c — HF normalizers over utf8proc; see normalize.h. */
#include "tok/normalize.h"

#include <stdlib.h>
#include <string.h>

#if MG_HAVE_UTF8PROC
#include <utf8proc.h>
#endif

mg_status mg_normalizer_add(mg_normalizer *nz, mg_norm_step step)
{
#if !MG_HAVE_UTF8PROC
    if (step == MG_NORM_NFC)
        return mg_error_set(MG_ERR_UNSUPPORTED, "NFC normalizer: not built with utf8proc");
#endif
    MG_RETURN_IF(nz->n == MG_NORM_MAX_STEPS, MG_ERR_LIMIT, "more than %d normalizers",
                 MG_NORM_MAX_STEPS);
    nz->steps[nz->n++] = step;
    return MG_OK;
}

/* Every code point below U+0300 is NFC-stable and never composes with a predecessor
 * (all combining characters and conjoining jamo lie above), so such text is NFC. */
static int nfc_trivial(const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < len; i++)
        if (s[i] >= 0xCC) return 0; /* lead byte of U+0300 and above */
    return 1;
}

static mg_status buf_reserve(mg_norm_buf *buf, size_t n)
{
    if (buf->cap >= n) return MG_OK;
    size_t cap = buf->cap ? buf->cap : 256;
    while (cap < n) cap *= 2;
    char *p = mg_realloc(buf->p, cap);
    if (!p) return MG_ERR_NOMEM;
    buf->p = p;
    buf->cap = cap;
    return MG_OK;
}

#if MG_HAVE_UTF8PROC
static mg_status nfc(mg_norm_buf *buf, const char *text, size_t len, const char **out,
                     size_t *out_len)
{
    utf8proc_uint8_t *res = NULL;
    utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)text, (utf8proc_ssize_t)len,
                                      &res, UTF8PROC_STABLE | UTF8PROC_COMPOSE);
    if (n < 0)
        return mg_error_set(MG_ERR_FORMAT, "NFC normalization failed: %s",
                            utf8proc_errmsg(n));
    mg_status st = buf_reserve(buf, (size_t)n + 1);
    if (st == MG_OK) {
        memcpy(buf->p, res, (size_t)n);
        *out = buf->p;
        *out_len = (size_t)n;
    }
    free(res);
    return st;
}
#endif

static mg_status apply(mg_norm_step step, mg_norm_buf *buf, const char *text, size_t len,
                       const char **out, size_t *out_len)
{
    *out = text;
    *out_len = len;
    switch (step) {
    case MG_NORM_NFC:
        if (nfc_trivial(text, len)) return MG_OK;
#if MG_HAVE_UTF8PROC
        return nfc(buf, text, len, out, out_len);
#else
        (void)buf;
        return mg_error_set(MG_ERR_UNSUPPORTED, "NFC normalizer: not built with utf8proc");
#endif
    }
    return mg_error_set(MG_ERR_UNSUPPORTED, "unknown normalizer step %d", (int)step);
}

mg_status mg_normalize(const mg_normalizer *nz, mg_norm_buf *buf, const char *text, size_t len,
                       const char **out, size_t *out_len)
{
    *out = text;
    *out_len = len;
    for (size_t i = 0; nz && i < nz->n; i++) MG_FORWARD(apply(nz->steps[i], buf, *out, *out_len, out, out_len));
    return MG_OK;
}

void mg_norm_buf_free(mg_norm_buf *buf)
{
    free(buf->p);
    buf->p = NULL;
    buf->cap = 0;
}

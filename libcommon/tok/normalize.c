/* normalize.c — HF normalizers (NFC over utf8proc, Prepend, Replace); see normalize.h.
 * A regex Replace finds its matches with an mg_pretok splitter of one REMOVED+invert
 * stage (the pieces are exactly the matches, found by Oniguruma as HF does). */
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
    memset(&nz->args[nz->n], 0, sizeof nz->args[nz->n]);
    nz->steps[nz->n++] = step;
    return MG_OK;
}

static char *dup_bytes(const char *s, size_t n)
{
    char *d = mg_malloc(n + 1);
    if (!d) return NULL;
    if (n) memcpy(d, s, n);
    d[n] = 0;
    return d;
}

static void free_arg(mg_norm_arg *a)
{
    free(a->str);
    free(a->content);
    free(a->regex);
    mg_pretok_free(a->re);
    memset(a, 0, sizeof *a);
}

static mg_status push_arg(mg_normalizer *nz, mg_norm_step step, mg_norm_arg *a)
{
    mg_status st = mg_normalizer_add(nz, step);
    if (st == MG_OK) {
        nz->args[nz->n - 1] = *a;
        return MG_OK;
    }
    free_arg(a);
    return st;
}

mg_status mg_normalizer_add_prepend(mg_normalizer *nz, const char *str, size_t len)
{
    mg_norm_arg a = {.str = dup_bytes(str, len), .len = len};
    if (!a.str) return MG_ERR_NOMEM;
    return push_arg(nz, MG_NORM_PREPEND, &a);
}

static mg_status compile_regex(mg_norm_arg *a)
{
    MG_FORWARD(mg_pretok_create(&a->re));
    return mg_pretok_add_regex(a->re, a->regex, MG_SPLIT_REMOVED, 1);
}

mg_status mg_normalizer_add_replace(mg_normalizer *nz, const char *pattern, size_t plen,
                                    int is_regex, const char *content, size_t clen)
{
    MG_RETURN_IF(!is_regex && plen == 0, MG_ERR_UNSUPPORTED,
                 "not supported yet: Replace normalizer with an empty pattern");
    mg_norm_arg a = {.content = dup_bytes(content, clen), .clen = clen};
    if (is_regex) {
        a.regex = dup_bytes(pattern, plen);
    } else {
        a.str = dup_bytes(pattern, plen);
        a.len = plen;
    }
    mg_status st = (!a.content || (!a.regex && !a.str)) ? MG_ERR_NOMEM : MG_OK;
    if (st == MG_OK && is_regex) st = compile_regex(&a);
    if (st == MG_OK) return push_arg(nz, MG_NORM_REPLACE, &a);
    free_arg(&a);
    return st;
}

mg_status mg_normalizer_copy(mg_normalizer *dst, const mg_normalizer *src)
{
    memset(dst, 0, sizeof *dst);
    for (size_t i = 0; i < src->n; i++) {
        const mg_norm_arg *a = &src->args[i];
        mg_status st = MG_OK;
        if (src->steps[i] == MG_NORM_NFC) st = mg_normalizer_add(dst, MG_NORM_NFC);
        else if (src->steps[i] == MG_NORM_PREPEND)
            st = mg_normalizer_add_prepend(dst, a->str, a->len);
        else if (a->regex)
            st = mg_normalizer_add_replace(dst, a->regex, strlen(a->regex), 1, a->content,
                                           a->clen);
        else
            st = mg_normalizer_add_replace(dst, a->str, a->len, 0, a->content, a->clen);
        if (st != MG_OK) {
            mg_normalizer_free(dst);
            return st;
        }
    }
    return MG_OK;
}

void mg_normalizer_free(mg_normalizer *nz)
{
    if (!nz) return;
    for (size_t i = 0; i < nz->n; i++) free_arg(&nz->args[i]);
    memset(nz, 0, sizeof *nz);
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

static mg_status reserve(char **p, size_t *cap, size_t n)
{
    if (*cap >= n) return MG_OK;
    size_t c = *cap ? *cap : 256;
    while (c < n) c *= 2;
    char *q = mg_realloc(*p, c);
    if (!q) return MG_ERR_NOMEM;
    *p = q;
    *cap = c;
    return MG_OK;
}

/* The buffer a step writes to: the one its input is not in (outputs start at buffer
 * starts), grown to n bytes. */
static mg_status out_buf(mg_norm_buf *buf, const char *in, size_t n, char **dst)
{
    if (buf->p && in == buf->p) {
        MG_FORWARD(reserve(&buf->q, &buf->qcap, n));
        *dst = buf->q;
    } else {
        MG_FORWARD(reserve(&buf->p, &buf->cap, n));
        *dst = buf->p;
    }
    return MG_OK;
}

static mg_status prepend(const mg_norm_arg *a, mg_norm_buf *buf, const char *text, size_t len,
                         const char **out, size_t *out_len)
{
    char *d;
    if (len == 0 || a->len == 0) return MG_OK;
    MG_FORWARD(out_buf(buf, text, len + a->len + 1, &d));
    memcpy(d, a->str, a->len);
    memcpy(d + a->len, text, len);
    *out = d;
    *out_len = len + a->len;
    return MG_OK;
}

/* Writes text with the n matches m[] replaced by the content. */
static mg_status substitute(const mg_norm_arg *a, mg_norm_buf *buf, const char *text,
                            size_t len, const mg_span *m, size_t n, const char **out,
                            size_t *out_len)
{
    size_t removed = 0, pos = 0, o = 0;
    char *d;
    for (size_t i = 0; i < n; i++) removed += m[i].len;
    MG_FORWARD(out_buf(buf, text, len - removed + n * a->clen + 1, &d));
    for (size_t i = 0; i < n; i++) {
        memcpy(d + o, text + pos, m[i].off - pos);
        o += m[i].off - pos;
        memcpy(d + o, a->content, a->clen);
        o += a->clen;
        pos = m[i].off + m[i].len;
    }
    memcpy(d + o, text + pos, len - pos);
    *out = d;
    *out_len = o + len - pos;
    return MG_OK;
}

static mg_status find_literal(const mg_norm_arg *a, mg_spans *sp, const char *text, size_t len)
{
    size_t pos = 0;
    while (pos + a->len <= len) {
        const char *f = memmem(text + pos, len - pos, a->str, a->len);
        if (!f) break;
        size_t at = (size_t)(f - text);
        MG_FORWARD(mg_spans_push(sp, (uint32_t)at, (uint32_t)a->len));
        pos = at + a->len;
    }
    return MG_OK;
}

static mg_status replace(const mg_norm_arg *a, mg_norm_buf *buf, const char *text, size_t len,
                         const char **out, size_t *out_len)
{
    MG_RETURN_IF(len > UINT32_MAX - 1, MG_ERR_LIMIT,
                 "a text segment of %zu bytes (more than 4 GiB) to normalize", len);
    buf->spans.n = 0;
    if (a->re) {
        if (!buf->scratch) MG_FORWARD(mg_pretok_scratch_create(&buf->scratch));
        MG_FORWARD(mg_pretok_split(a->re, buf->scratch, text, len, &buf->spans));
    } else {
        MG_FORWARD(find_literal(a, &buf->spans, text, len));
    }
    if (buf->spans.n == 0) return MG_OK;
    return substitute(a, buf, text, len, buf->spans.v, buf->spans.n, out, out_len);
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
    char *d;
    mg_status st = out_buf(buf, text, (size_t)n + 1, &d);
    if (st == MG_OK) {
        memcpy(d, res, (size_t)n);
        *out = d;
        *out_len = (size_t)n;
    }
    free(res);
    return st;
}
#endif

static mg_status apply(mg_norm_step step, const mg_norm_arg *a, mg_norm_buf *buf, const char *text, size_t len,
                       const char **out, size_t *out_len)
{
    *out = text;
    *out_len = len;
    switch (step) {
    case MG_NORM_PREPEND:
        return prepend(a, buf, text, len, out, out_len);
    case MG_NORM_REPLACE:
        return replace(a, buf, text, len, out, out_len);
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
    for (size_t i = 0; nz && i < nz->n; i++)
        MG_FORWARD(apply(nz->steps[i], &nz->args[i], buf, *out, *out_len, out, out_len));
    return MG_OK;
}

void mg_norm_buf_free(mg_norm_buf *buf)
{
    free(buf->p);
    free(buf->q);
    mg_pretok_scratch_free(buf->scratch);
    mg_spans_free(&buf->spans);
    memset(buf, 0, sizeof *buf);
}

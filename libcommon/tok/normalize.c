/* normalize.c — HF normalizers (NFC/NFD/NFKC/NFKD/Lowercase/StripAccents over utf8proc,
 * BertNormalizer, Strip, Prepend, Replace); see normalize.h.
 * A regex Replace finds its matches with an mg_pretok splitter of one REMOVED+invert
 * stage (the pieces are exactly the matches, found by Oniguruma as HF does). */
#include "tok/normalize.h"

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "mg/unicode.h"
#include "tok/bert_basic.h"
#include "tok/nfc_inert.h"

#if MG_HAVE_UTF8PROC
#include <utf8proc.h>
#endif

const char *mg_norm_step_name(mg_norm_step step)
{
    static const char *const names[] = {"?",   "NFC",       "Prepend",      "Replace",
                                        "NFD", "NFKC",      "NFKD",         "Lowercase",
                                        "StripAccents",     "Strip",        "BertNormalizer"};
    return (size_t)step < sizeof names / sizeof names[0] ? names[step] : "?";
}

static int needs_utf8proc(mg_norm_step step)
{
    return step != MG_NORM_PREPEND && step != MG_NORM_REPLACE && step != MG_NORM_STRIP;
}

mg_status mg_normalizer_add(mg_normalizer *nz, mg_norm_step step)
{
#if !MG_HAVE_UTF8PROC
    if (needs_utf8proc(step))
        return mg_error_set(MG_ERR_UNSUPPORTED, "normalizer %s: not built with utf8proc",
                            mg_norm_step_name(step));
#else
    (void)needs_utf8proc;
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

mg_status mg_normalizer_add_strip(mg_normalizer *nz, int left, int right)
{
    MG_FORWARD(mg_normalizer_add(nz, MG_NORM_STRIP));
    nz->args[nz->n - 1].left = left;
    nz->args[nz->n - 1].right = right;
    return MG_OK;
}

mg_status mg_normalizer_add_bert(mg_normalizer *nz, unsigned flags)
{
    MG_FORWARD(mg_normalizer_add(nz, MG_NORM_BERT));
    nz->args[nz->n - 1].bert = flags;
    return MG_OK;
}

/* Steps whose arguments are scalars only. */
static mg_status copy_plain(mg_normalizer *dst, mg_norm_step step, const mg_norm_arg *a)
{
    MG_FORWARD(mg_normalizer_add(dst, step));
    dst->args[dst->n - 1].left = a->left;
    dst->args[dst->n - 1].right = a->right;
    dst->args[dst->n - 1].bert = a->bert;
    return MG_OK;
}

mg_status mg_normalizer_copy(mg_normalizer *dst, const mg_normalizer *src)
{
    memset(dst, 0, sizeof *dst);
    for (size_t i = 0; i < src->n; i++) {
        const mg_norm_arg *a = &src->args[i];
        mg_status st = MG_OK;
        if (src->steps[i] != MG_NORM_PREPEND && src->steps[i] != MG_NORM_REPLACE)
            st = copy_plain(dst, src->steps[i], a);
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
static int inside(const char *in, const char *p, size_t cap)
{
    uintptr_t a = (uintptr_t)in, b = (uintptr_t)p;
    return p && a >= b && a <= b + cap;
}

static mg_status out_buf(mg_norm_buf *buf, const char *in, size_t n, char **dst)
{
    if (inside(in, buf->p, buf->cap)) {
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

static int is_ascii(const char *text, size_t len)
{
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < len; i++)
        if (s[i] >= 0x80) return 0;
    return 1;
}

/* Strip: a view of the text without White_Space at the chosen ends. */
static void strip(const mg_norm_arg *a, const char **out, size_t *out_len)
{
    const uint8_t *s = (const uint8_t *)*out;
    size_t b = 0, e = *out_len;
    while (a->left && b < e) {
        uint32_t cp;
        size_t k = mg_utf8_decode(s + b, e - b, &cp);
        if (!mg_uc_is_ws(cp)) break;
        b += k;
    }
    while (a->right && e > b) {
        size_t k = e - 1;
        while (k > b && (s[k] & 0xC0) == 0x80) k--;
        uint32_t cp;
        mg_utf8_decode(s + k, e - k, &cp);
        if (!mg_uc_is_ws(cp)) break;
        e = k;
    }
    *out += b;
    *out_len = e - b;
}

#if MG_HAVE_UTF8PROC
static const char *form_name(int options)
{
    if (options & UTF8PROC_COMPAT) return options & UTF8PROC_COMPOSE ? "NFKC" : "NFKD";
    return options & UTF8PROC_COMPOSE ? "NFC" : "NFD";
}

/* utf8proc_map with options (a normalization form) into the other buffer. */
static mg_status umap(mg_norm_buf *buf, int options, const char *text, size_t len,
                      const char **out, size_t *out_len)
{
    utf8proc_uint8_t *res = NULL;
    utf8proc_ssize_t n = utf8proc_map((const utf8proc_uint8_t *)text, (utf8proc_ssize_t)len,
                                      &res, (utf8proc_option_t)(UTF8PROC_STABLE | options));
    if (n < 0)
        return mg_error_set(MG_ERR_FORMAT, "%s normalization failed: %s", form_name(options),
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

/* Appends src[0, n) at (*dst)[*o], growing the buffer. */
static mg_status put(char **dst, size_t *cap, size_t *o, const void *src, size_t n)
{
    MG_FORWARD(reserve(dst, cap, *o + n + 1));
    memcpy(*dst + *o, src, n);
    *o += n;
    return MG_OK;
}

/* End of the segment of s[0, len) that holds s[i] (>= 0xCC): the next ASCII byte, or further
 * while another such byte follows within SEGMENT_JOIN bytes (fewer utf8proc calls). */
#define SEGMENT_JOIN 32
static size_t segment_end(const unsigned char *s, size_t len, size_t i)
{
    for (;;) {
        while (i < len && s[i] >= 0x80) i++;
        size_t k = i;
        while (k < len && k < i + SEGMENT_JOIN && s[k] < 0xCC) k++;
        if (k >= len || k >= i + SEGMENT_JOIN) return i;
        i = k;
    }
}

/* NFC a segment at a time: right before an ASCII character is a safe boundary (a starter
 * that composes with nothing before it, and canonical reordering never crosses a starter),
 * so only the segments between ASCII characters that hold a code point >= U+0300 go through
 * utf8proc (each with the ASCII character before it, which may compose with what follows);
 * the rest is copied. */
static mg_status nfc(mg_norm_buf *buf, const char *text, size_t len, const char **out,
                     size_t *out_len)
{
    const unsigned char *s = (const unsigned char *)text;
    int to_q = inside(text, buf->p, buf->cap);
    char **dst = to_q ? &buf->q : &buf->p;
    size_t *cap = to_q ? &buf->qcap : &buf->cap;
    size_t o = 0, done = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < 0xCC) continue;
        size_t a = i, e = segment_end(s, len, i);
        while (a > done && s[a - 1] >= 0x80) a--;
        if (mg_nfc_inert_run(s + a, e - a)) { /* NFC leaves it as it is: copied below */
            i = e - 1;
            continue;
        }
        if (a > done) a--; /* the ASCII character before: a starter, maybe composing */
        utf8proc_uint8_t *res = NULL;
        utf8proc_ssize_t n = utf8proc_map(s + a, (utf8proc_ssize_t)(e - a), &res,
                                          (utf8proc_option_t)(UTF8PROC_STABLE | UTF8PROC_COMPOSE));
        if (n < 0)
            return mg_error_set(MG_ERR_FORMAT, "NFC normalization failed: %s",
                                utf8proc_errmsg(n));
        mg_status st = put(dst, cap, &o, s + done, a - done);
        if (st == MG_OK) st = put(dst, cap, &o, res, (size_t)n);
        free(res);
        MG_FORWARD(st);
        done = e;
        i = e - 1;
    }
    MG_FORWARD(put(dst, cap, &o, s + done, len - done));
    *out = *dst;
    *out_len = o;
    return MG_OK;
}

/* One character lower-cased as Rust's char::to_lowercase; returns the bytes written. */
static size_t lower_char(uint32_t cp, uint8_t *o)
{
    if (cp == 0x130) { /* the only unconditional multi-character lowercase mapping */
        memcpy(o, "i\xcc\x87", 3);
        return 3;
    }
    return mg_utf8_encode((uint32_t)utf8proc_tolower((utf8proc_int32_t)cp), o);
}

/* Lower-casing at most doubles the length (2-byte U+0130 -> 3 bytes; 2 -> 3 bytes). */
static mg_status lowercase(mg_norm_buf *buf, const char *text, size_t len, const char **out,
                           size_t *out_len)
{
    char *d;
    size_t o = 0;
    MG_FORWARD(out_buf(buf, text, 2 * len + 1, &d));
    for (size_t i = 0; i < len;) {
        unsigned char c = (unsigned char)text[i];
        if (c < 0x80) {
            d[o++] = (char)(c >= 'A' && c <= 'Z' ? c + 32 : c);
            i++;
            continue;
        }
        uint32_t cp;
        i += mg_utf8_decode((const uint8_t *)text + i, len - i, &cp);
        o += lower_char(cp, (uint8_t *)d + o);
    }
    *out = d;
    *out_len = o;
    return MG_OK;
}

/* Drops the characters `drop` selects, copying the rest into the other buffer. */
static mg_status filter(mg_norm_buf *buf, int (*drop)(uint32_t), const char *text, size_t len,
                        const char **out, size_t *out_len)
{
    char *d;
    size_t o = 0;
    MG_FORWARD(out_buf(buf, text, len + 1, &d));
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = mg_utf8_decode((const uint8_t *)text + i, len - i, &cp);
        if (!drop(cp)) {
            memcpy(d + o, text + i, k);
            o += k;
        }
        i += k;
    }
    *out = d;
    *out_len = o;
    return MG_OK;
}

static int is_mark(uint32_t cp)
{
    utf8proc_category_t c = utf8proc_category((utf8proc_int32_t)cp);
    return c == UTF8PROC_CATEGORY_MN || c == UTF8PROC_CATEGORY_MC || c == UTF8PROC_CATEGORY_ME;
}

static mg_status bert_clean(mg_norm_buf *buf, const char **t, size_t *n)
{
    char *d;
    MG_FORWARD(out_buf(buf, *t, *n + 1, &d));
    *n = mg_bert_clean(*t, *n, d);
    *t = d;
    return MG_OK;
}

static mg_status bert_chinese(mg_norm_buf *buf, const char **t, size_t *n)
{
    size_t k = mg_bert_count_chinese(*t, *n);
    char *d;
    if (k == 0) return MG_OK;
    MG_FORWARD(out_buf(buf, *t, *n + 2 * k + 1, &d));
    *n = mg_bert_pad_chinese(*t, *n, d);
    *t = d;
    return MG_OK;
}

static int drop_mn(uint32_t cp) { return mg_bert_is_mark_nonspacing(cp); }

/* BertNormalizer: clean, pad Chinese characters, NFD + drop Mn, lowercase. */
static mg_status bert(const mg_norm_arg *a, mg_norm_buf *buf, const char **t, size_t *n)
{
    if (a->bert & MG_NORM_BERT_CLEAN) MG_FORWARD(bert_clean(buf, t, n));
    if (a->bert & MG_NORM_BERT_CHINESE) MG_FORWARD(bert_chinese(buf, t, n));
    if ((a->bert & MG_NORM_BERT_STRIP_ACCENTS) && !is_ascii(*t, *n)) {
        MG_FORWARD(umap(buf, UTF8PROC_DECOMPOSE, *t, *n, t, n));
        MG_FORWARD(filter(buf, drop_mn, *t, *n, t, n));
    }
    if (a->bert & MG_NORM_BERT_LOWERCASE) MG_FORWARD(lowercase(buf, *t, *n, t, n));
    return MG_OK;
}

/* The utf8proc steps. */
static mg_status apply_unicode(mg_norm_step step, const mg_norm_arg *a, mg_norm_buf *buf,
                               const char *text, size_t len, const char **out,
                               size_t *out_len)
{
    switch (step) {
    case MG_NORM_NFC:
        return nfc(buf, text, len, out, out_len);
    case MG_NORM_NFD:
        return is_ascii(text, len) ? MG_OK : umap(buf, UTF8PROC_DECOMPOSE, text, len, out, out_len);
    case MG_NORM_NFKC:
        return is_ascii(text, len) ? MG_OK
                                   : umap(buf, UTF8PROC_COMPOSE | UTF8PROC_COMPAT, text, len,
                                          out, out_len);
    case MG_NORM_NFKD:
        return is_ascii(text, len) ? MG_OK
                                   : umap(buf, UTF8PROC_DECOMPOSE | UTF8PROC_COMPAT, text, len,
                                          out, out_len);
    case MG_NORM_LOWERCASE:
        return lowercase(buf, text, len, out, out_len);
    case MG_NORM_STRIP_ACCENTS:
        return is_ascii(text, len) ? MG_OK : filter(buf, is_mark, text, len, out, out_len);
    case MG_NORM_BERT:
        return bert(a, buf, out, out_len);
    default:
        break;
    }
    return mg_error_set(MG_ERR_UNSUPPORTED, "unknown normalizer step %d", (int)step);
}
#endif

static mg_status apply(mg_norm_step step, const mg_norm_arg *a, mg_norm_buf *buf,
                       const char *text, size_t len, const char **out, size_t *out_len)
{
    *out = text;
    *out_len = len;
    switch (step) {
    case MG_NORM_PREPEND:
        return prepend(a, buf, text, len, out, out_len);
    case MG_NORM_REPLACE:
        return replace(a, buf, text, len, out, out_len);
    case MG_NORM_STRIP:
        strip(a, out, out_len);
        return MG_OK;
    case MG_NORM_NFC:
        if (nfc_trivial(text, len)) return MG_OK;
        break;
    default:
        break;
    }
#if MG_HAVE_UTF8PROC
    return apply_unicode(step, a, buf, text, len, out, out_len);
#else
    (void)buf;
    (void)is_ascii;
    return mg_error_set(MG_ERR_UNSUPPORTED, "normalizer %s: not built with utf8proc",
                        mg_norm_step_name(step));
#endif
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

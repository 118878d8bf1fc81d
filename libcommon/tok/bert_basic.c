/* bert_basic.c — BertNormalizer's per-character passes and BertPreTokenizer; see
 * bert_basic.h. Categories from utf8proc, White_Space from mg/unicode.h. */
#include "tok/bert_basic.h"

#include <string.h>

#include "mg/unicode.h"

#if MG_HAVE_UTF8PROC
#include <utf8proc.h>
#endif

int mg_bert_available(void) { return MG_HAVE_UTF8PROC; }

int mg_bert_is_whitespace(uint32_t cp)
{
    return cp == '\t' || cp == '\n' || cp == '\r' || mg_uc_is_ws(cp);
}

#if MG_HAVE_UTF8PROC
static utf8proc_category_t category(uint32_t cp)
{
    return utf8proc_category((utf8proc_int32_t)cp);
}

int mg_bert_is_control(uint32_t cp)
{
    if (cp == '\t' || cp == '\n' || cp == '\r') return 0;
    utf8proc_category_t c = category(cp);
    return c == UTF8PROC_CATEGORY_CC || c == UTF8PROC_CATEGORY_CF || c == UTF8PROC_CATEGORY_CO;
}

int mg_bert_is_mark_nonspacing(uint32_t cp) { return category(cp) == UTF8PROC_CATEGORY_MN; }

static int is_unicode_punct(uint32_t cp)
{
    utf8proc_category_t c = category(cp);
    return c >= UTF8PROC_CATEGORY_PC && c <= UTF8PROC_CATEGORY_PO;
}
#else
int mg_bert_is_control(uint32_t cp)
{
    (void)cp;
    MG_ASSERT(!"mg_bert_is_control without utf8proc");
    return 0;
}

int mg_bert_is_mark_nonspacing(uint32_t cp)
{
    (void)cp;
    MG_ASSERT(!"mg_bert_is_mark_nonspacing without utf8proc");
    return 0;
}

static int is_unicode_punct(uint32_t cp)
{
    (void)cp;
    MG_ASSERT(!"mg_bert_is_punct without utf8proc");
    return 0;
}
#endif

int mg_bert_is_chinese(uint32_t cp)
{
    return (cp >= 0x4E00 && cp <= 0x9FFF) || (cp >= 0x3400 && cp <= 0x4DBF) ||
           (cp >= 0x20000 && cp <= 0x2A6DF) || (cp >= 0x2A700 && cp <= 0x2B73F) ||
           (cp >= 0x2B740 && cp <= 0x2B81F) || (cp >= 0x2B920 && cp <= 0x2CEAF) ||
           (cp >= 0xF900 && cp <= 0xFAFF) || (cp >= 0x2F800 && cp <= 0x2FA1F);
}

int mg_bert_is_punct(uint32_t cp)
{
    if (cp < 0x80)
        return (cp >= 33 && cp <= 47) || (cp >= 58 && cp <= 64) || (cp >= 91 && cp <= 96) ||
               (cp >= 123 && cp <= 126);
    return is_unicode_punct(cp);
}

static size_t decode(const char *s, size_t n, uint32_t *cp)
{
    return mg_utf8_decode((const uint8_t *)s, n, cp);
}

size_t mg_bert_clean(const char *text, size_t len, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = decode(text + i, len - i, &cp);
        if (cp < 0x80 && cp >= 0x20 && cp != 0x7F) { /* printable ASCII: kept as is */
            out[o++] = text[i++];
            continue;
        }
        if (cp == 0 || cp == 0xFFFD || mg_bert_is_control(cp)) { /* dropped first */
        } else if (mg_bert_is_whitespace(cp)) {
            out[o++] = ' ';
        } else {
            memcpy(out + o, text + i, k);
            o += k;
        }
        i += k;
    }
    return o;
}

size_t mg_bert_count_chinese(const char *text, size_t len)
{
    size_t n = 0;
    const unsigned char *s = (const unsigned char *)text;
    for (size_t i = 0; i < len; i++) {
        if (s[i] < 0xE3) continue; /* every Chinese character starts with E3..F0 */
        uint32_t cp;
        size_t k = decode(text + i, len - i, &cp);
        n += mg_bert_is_chinese(cp);
        i += k - 1;
    }
    return n;
}

size_t mg_bert_pad_chinese(const char *text, size_t len, char *out)
{
    size_t o = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = decode(text + i, len - i, &cp);
        int cjk = (unsigned char)text[i] >= 0xE3 && mg_bert_is_chinese(cp);
        if (cjk) out[o++] = ' ';
        memcpy(out + o, text + i, k);
        o += k;
        if (cjk) out[o++] = ' ';
        i += k;
    }
    return o;
}

static mg_status flush(mg_spans *out, uint32_t base, size_t start, size_t end)
{
    if (end <= start) return MG_OK;
    return mg_spans_push(out, base + (uint32_t)start, (uint32_t)(end - start));
}

mg_status mg_bert_pretokenize(const char *text, size_t len, uint32_t base, mg_spans *out)
{
    MG_RETURN_IF(len > UINT32_MAX - base, MG_ERR_LIMIT,
                 "a text of %zu bytes (more than 4 GiB) to pre-tokenize", len);
    size_t start = 0;
    for (size_t i = 0; i < len;) {
        uint32_t cp;
        size_t k = decode(text + i, len - i, &cp);
        if (mg_bert_is_whitespace(cp)) {
            MG_FORWARD(flush(out, base, start, i));
            start = i + k;
        } else if (mg_bert_is_punct(cp)) {
            MG_FORWARD(flush(out, base, start, i));
            MG_FORWARD(flush(out, base, i, i + k));
            start = i + k;
        }
        i += k;
    }
    return flush(out, base, start, len);
}

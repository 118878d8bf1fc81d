/* tok_null.c — NullTokenizer: the text is the ids, "11 325 97" -> [11, 325, 97].
 *
 * Megatron (HEAD megatron/core/tokenizers/text/libraries/null_tokenizer.py):
 *   ids = [int(x) for x in text.split(' ')], vocab_size = --vocab-size V,
 *   eod = --null-tokenizer-eod-id if given else V - 1.
 *   (megatron-core 0.16 had vocab_size V + 1 and eod V for the same flag.)
 * Each field is parsed as Python's int(str) does: characters >= U+007F that are Unicode
 * whitespace become ' ' and Unicode decimal digits (Nd, Unicode 14 as in Python 3.11)
 * their ASCII digit, anything else non-ASCII is rejected; then optional ASCII whitespace,
 * an optional sign, digits with single underscores between them, optional ASCII
 * whitespace. So empty fields (an empty text, double spaces) are errors, as in Megatron.
 * Values must fit in int64 (MG_ERR_LIMIT otherwise).
 */
#include "tok/tok_internal.h"

#include <stdio.h>
#include <stdlib.h>

/* Code points whose Python str.isspace() is true, above U+007E. */
static const uint32_t py_spaces[] = {0x85,   0xA0,   0x1680, 0x2000, 0x2001, 0x2002, 0x2003,
                                     0x2004, 0x2005, 0x2006, 0x2007, 0x2008, 0x2009, 0x200A,
                                     0x2028, 0x2029, 0x202F, 0x205F, 0x3000};

/* The digit zero of every Unicode decimal-digit run (unicodedata.decimal(c) == 0). */
static const uint32_t nd_zeros[] = {
    0x30,    0x660,   0x6F0,   0x7C0,   0x966,   0x9E6,   0xA66,   0xAE6,   0xB66,
    0xBE6,   0xC66,   0xCE6,   0xD66,   0xDE6,   0xE50,   0xED0,   0xF20,   0x1040,
    0x1090,  0x17E0,  0x1810,  0x1946,  0x19D0,  0x1A80,  0x1A90,  0x1B50,  0x1BB0,
    0x1C40,  0x1C50,  0xA620,  0xA8D0,  0xA900,  0xA9D0,  0xA9F0,  0xAA50,  0xABF0,
    0xFF10,  0x104A0, 0x10D30, 0x11066, 0x110F0, 0x11136, 0x111D0, 0x112F0, 0x11450,
    0x114D0, 0x11650, 0x116C0, 0x11730, 0x118E0, 0x11950, 0x11C50, 0x11D50, 0x11DA0,
    0x16A60, 0x16AC0, 0x16B50, 0x1D7CE, 0x1D7D8, 0x1D7E2, 0x1D7EC, 0x1D7F6, 0x1E140,
    0x1E2F0, 0x1E950, 0x1FBF0};

static const struct mg_tok_vtbl null_vtbl;

/* Decodes the (valid) UTF-8 sequence at s[0, n); returns its length. */
static size_t decode_cp(const uint8_t *s, size_t n, uint32_t *cp)
{
    uint8_t c = s[0];
    if (c < 0x80 || n < 2) {
        *cp = c;
        return 1;
    }
    if (c < 0xE0) {
        *cp = (uint32_t)(c & 0x1F) << 6 | (s[1] & 0x3F);
        return 2;
    }
    if (c < 0xF0 || n < 4) {
        *cp = (uint32_t)(c & 0x0F) << 12 | (uint32_t)(s[1] & 0x3F) << 6 | (s[2] & 0x3F);
        return 3;
    }
    *cp = (uint32_t)(c & 0x07) << 18 | (uint32_t)(s[1] & 0x3F) << 12 |
          (uint32_t)(s[2] & 0x3F) << 6 | (s[3] & 0x3F);
    return 4;
}

/* Python's _PyUnicode_TransformDecimalAndSpaceToASCII for one code point >= 0x7F:
 * the ASCII character it becomes, or 0 if int() rejects it. */
static char to_ascii(uint32_t cp)
{
    for (size_t i = 0; i < sizeof py_spaces / sizeof py_spaces[0]; i++)
        if (cp == py_spaces[i]) return ' ';
    for (size_t i = 0; i < sizeof nd_zeros / sizeof nd_zeros[0]; i++)
        if (cp >= nd_zeros[i] && cp < nd_zeros[i] + 10) return (char)('0' + (cp - nd_zeros[i]));
    return 0;
}

static int py_isspace_ascii(char c)
{
    return c == ' ' || c == '\t' || c == '\n' || c == '\v' || c == '\f' || c == '\r';
}

typedef enum { FIELD_OK, FIELD_BAD, FIELD_RANGE } field_result;

/* PyLong_FromString(s, base 10) over the whole ASCII string a[0, n). */
static field_result parse_ascii_int(const char *a, size_t n, int64_t *value)
{
    size_t i = 0;
    while (i < n && py_isspace_ascii(a[i])) i++;
    int neg = 0;
    if (i < n && (a[i] == '+' || a[i] == '-')) neg = a[i++] == '-';
    uint64_t mag = 0, limit = neg ? (uint64_t)INT64_MAX + 1 : (uint64_t)INT64_MAX;
    size_t digits = 0;
    int overflow = 0;
    char prev = 0;
    for (; i < n && ((a[i] >= '0' && a[i] <= '9') || a[i] == '_'); prev = a[i++]) {
        if (a[i] == '_') {
            if (prev < '0' || prev > '9') return FIELD_BAD; /* leading or double '_' */
            continue;
        }
        unsigned d = (unsigned)(a[i] - '0');
        if (mag > (limit - d) / 10) overflow = 1;
        else mag = mag * 10 + d;
        digits++;
    }
    if (digits == 0 || prev == '_') return FIELD_BAD;
    while (i < n && py_isspace_ascii(a[i])) i++;
    if (i != n) return FIELD_BAD;
    if (overflow) return FIELD_RANGE;
    *value = neg ? (int64_t)(0 - mag) : (int64_t)mag;
    return FIELD_OK;
}

/* int(field) for the UTF-8 field s[0, n); ascii is scratch of n bytes. */
static field_result parse_field(const uint8_t *s, size_t n, char *ascii, int64_t *value)
{
    size_t m = 0;
    for (size_t i = 0; i < n;) {
        uint32_t cp;
        i += decode_cp(s + i, n - i, &cp);
        char c = cp < 0x7F ? (char)cp : to_ascii(cp);
        if (c == 0 && cp != 0) return FIELD_BAD;
        ascii[m++] = c;
    }
    return parse_ascii_int(ascii, m, value);
}

static mg_status field_error(field_result r, size_t field, const uint8_t *s, size_t n)
{
    char shown[64];
    size_t o = 0;
    for (size_t i = 0; i < n && o + 5 < sizeof shown; i++) {
        if (s[i] < 0x20 || s[i] == '"' || s[i] == '\\')
            o += (size_t)snprintf(shown + o, sizeof shown - o, "\\x%02x", s[i]);
        else
            shown[o++] = (char)s[i];
    }
    shown[o] = 0;
    const char *more = o < n ? "..." : "";
    if (r == FIELD_RANGE)
        return mg_error_set(MG_ERR_LIMIT, "NullTokenizer: field %zu (\"%s%s\") does not fit in "
                            "64 bits", field, shown, more);
    return mg_error_set(MG_ERR_FORMAT, "NullTokenizer: field %zu (\"%s%s\") is not an integer "
                        "(Megatron: int(x) for x in text.split(' '))", field, shown, more);
}

static mg_status null_encode(const mg_tokenizer *tk, void *state, const char *text, size_t len,
                             mg_ids *out)
{
    (void)tk;
    (void)state;
    const uint8_t *s = (const uint8_t *)text;
    char small[128];
    char *ascii = len <= sizeof small ? small : mg_malloc(len);
    if (!ascii) return MG_ERR_NOMEM;
    mg_status st = MG_OK;
    size_t start = 0, field = 1;
    for (size_t i = 0; i <= len && st == MG_OK; i++) {
        if (i < len && s[i] != ' ') continue;
        int64_t v = 0;
        field_result r = parse_field(s + start, i - start, ascii, &v);
        st = r == FIELD_OK ? mg_ids_push(out, v) : field_error(r, field, s + start, i - start);
        start = i + 1;
        field++;
    }
    if (ascii != small) free(ascii);
    return st;
}

static void null_free(void *impl) { (void)impl; }

/* Megatron's detokenize: ' '.join(str(x) for x in ids). */
static mg_status null_decode(const mg_tokenizer *tk, const int64_t *ids, size_t n, mg_text *out)
{
    (void)tk;
    for (size_t i = 0; i < n; i++) {
        char num[32];
        int k = snprintf(num, sizeof num, "%s%lld", i ? " " : "", (long long)ids[i]);
        MG_FORWARD(mg_text_append(out, num, (size_t)k));
    }
    return MG_OK;
}

static const struct mg_tok_vtbl null_vtbl = {
    .encoder_create = NULL,
    .encoder_free = NULL,
    .encode = null_encode,
    .free = null_free,
    .decode = null_decode,
};

mg_status mg_tok_null_create(mg_tokenizer *tk, const mg_tok_opts *o)
{
    MG_RETURN_IF(o->vocab_size < 0, MG_ERR_ARG, "NullTokenizer needs --vocab-size");
    MG_RETURN_IF(o->vocab_size < 1, MG_ERR_ARG, "NullTokenizer: --vocab-size must be positive");
    tk->vt = &null_vtbl;
    tk->vocab_size = o->vocab_size;
    tk->eod = o->null_eod_id >= 0 ? o->null_eod_id : o->vocab_size - 1;
    tk->accepts_lone_surrogates = 0;
    tk->impl = NULL;
    snprintf(tk->describe, sizeof tk->describe,
             "NullTokenizer: vocab_size %lld, eod %lld; ids = [int(x) for x in text.split(' ')] "
             "(Megatron HEAD; megatron-core 0.16 reports vocab_size V+1, eod V)",
             (long long)tk->vocab_size, (long long)tk->eod);
    return MG_OK;
}

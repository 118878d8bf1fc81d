/* unicode.c — UTF-8 validation/encoding and simple case folding to ASCII letters; see
 * mg/unicode.h. The class table itself is generated (unicode_tables.c). */
#include "mg/unicode.h"

size_t mg_utf8_validate(const uint8_t *s, size_t len)
{
    size_t i = 0;
    while (i < len) {
        i = mg_ascii_end(s, i, len);
        if (i >= len) break;
        uint32_t cp;
        size_t n = mg_utf8_decode(s + i, len - i, &cp);
        if (cp == MG_UC_BAD) return i;
        i += n;
    }
    return len;
}

size_t mg_utf8_encode(uint32_t cp, uint8_t out[4])
{
    if (cp < 0x80) {
        out[0] = (uint8_t)cp;
        return 1;
    }
    if (cp < 0x800) {
        out[0] = (uint8_t)(0xC0 | (cp >> 6));
        out[1] = (uint8_t)(0x80 | (cp & 0x3F));
        return 2;
    }
    if (cp >= 0xD800 && cp <= 0xDFFF) return 0;
    if (cp < 0x10000) {
        out[0] = (uint8_t)(0xE0 | (cp >> 12));
        out[1] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
        out[2] = (uint8_t)(0x80 | (cp & 0x3F));
        return 3;
    }
    if (cp >= 0x110000) return 0;
    out[0] = (uint8_t)(0xF0 | (cp >> 18));
    out[1] = (uint8_t)(0x80 | ((cp >> 12) & 0x3F));
    out[2] = (uint8_t)(0x80 | ((cp >> 6) & 0x3F));
    out[3] = (uint8_t)(0x80 | (cp & 0x3F));
    return 4;
}

int mg_uc_fold_ascii_letter(uint32_t cp)
{
    if (cp >= 'a' && cp <= 'z') return (int)cp;
    if (cp >= 'A' && cp <= 'Z') return (int)(cp + 32);
    for (size_t i = 0; i < mg_uc_fold_ascii_n; i++)
        if (mg_uc_fold_ascii[i][0] == cp) return (int)mg_uc_fold_ascii[i][1];
    return 0;
}

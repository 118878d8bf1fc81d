/* byte_level.c — the GPT-2 ByteLevel byte <-> Unicode map; see byte_level.h. */
#include "tok/byte_level.h"

/* Bytes that map to themselves. */
static int is_printable_byte(unsigned b)
{
    return (b >= 0x21 && b <= 0x7E) || (b >= 0xA1 && b <= 0xAC) || b >= 0xAE;
}

uint32_t mg_byte_level_char(uint8_t b)
{
    if (is_printable_byte(b)) return b;
    /* Rank of b among the 68 remapped bytes: 0x00-0x20 (33), 0x7F-0xA0 (34), 0xAD. */
    if (b <= 0x20) return 0x100u + b;
    if (b <= 0xA0) return 0x100u + 33u + (uint32_t)(b - 0x7F);
    return 0x100u + 67u; /* 0xAD */
}

/* Inverse of mg_byte_level_char: returns the byte of cp, or -1. */
static int char_to_byte(uint32_t cp)
{
    if (cp < 0x100) return is_printable_byte(cp) ? (int)cp : -1;
    if (cp < 0x100 + 33) return (int)(cp - 0x100);
    if (cp < 0x100 + 67) return (int)(cp - 0x100 - 33 + 0x7F);
    if (cp == 0x100 + 67) return 0xAD;
    return -1;
}

/* Decodes one UTF-8 sequence of at most 2 bytes (the alphabet stops at U+0143). */
static int next_char(const unsigned char *s, size_t len, size_t *i, uint32_t *cp)
{
    unsigned c = s[*i];
    if (c < 0x80) {
        *cp = c;
        *i += 1;
        return 1;
    }
    if ((c & 0xE0) != 0xC0 || c < 0xC2 || *i + 1 >= len || (s[*i + 1] & 0xC0) != 0x80) return 0;
    *cp = ((uint32_t)(c & 0x1F) << 6) | (s[*i + 1] & 0x3F);
    *i += 2;
    return 1;
}

int mg_byte_level_decode(const char *s, size_t len, uint8_t *out, size_t *out_len)
{
    const unsigned char *u = (const unsigned char *)s;
    size_t i = 0, n = 0;
    while (i < len) {
        if (u[i] - 0x21u <= 0x7Eu - 0x21u) { /* printable ASCII maps to itself */
            out[n++] = u[i++];
            continue;
        }
        uint32_t cp;
        if (!next_char(u, len, &i, &cp)) return 0;
        int b = char_to_byte(cp);
        if (b < 0) return 0;
        out[n++] = (uint8_t)b;
    }
    *out_len = n;
    return 1;
}

size_t mg_byte_level_encode(const uint8_t *bytes, size_t len, char *out)
{
    size_t n = 0;
    for (size_t i = 0; i < len; i++) {
        uint32_t cp = mg_byte_level_char(bytes[i]);
        if (cp < 0x80) {
            out[n++] = (char)cp;
        } else {
            out[n++] = (char)(0xC0 | (cp >> 6));
            out[n++] = (char)(0x80 | (cp & 0x3F));
        }
    }
    return n;
}

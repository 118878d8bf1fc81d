/* base64.c — standard base64 decoding; see mg/base64.h. */
#include "mg/base64.h"

/* Value of an alphabet character, 64 for '=', 255 for anything else (bytes >= 0x80 too):
 * a table, since a .tiktoken vocabulary is ~1.3M characters of base64. */
static const uint8_t b64_value[256] = {
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 62, 255, 255, 255, 63,
    52, 53, 54, 55, 56, 57, 58, 59, 60, 61, 255, 255, 255, 64, 255, 255,
    255, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14,
    15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 255, 255, 255, 255, 255,
    255, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,
    41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
    255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255, 255,
};

static mg_status bad_char(size_t i)
{
    return mg_error_set(MG_ERR_FORMAT, "invalid base64 at character %zu", i);
}

/* Decodes one group of 4 characters at in[i]; last: it is the final group. */
static mg_status decode_group(const char *in, size_t i, int last, uint8_t *out, size_t *n)
{
    uint8_t v[4];
    for (size_t k = 0; k < 4; k++) {
        v[k] = b64_value[(unsigned char)in[i + k]];
        if (v[k] == 255) return bad_char(i + k);
    }
    if (v[0] == 64 || v[1] == 64) return bad_char(i + (v[0] == 64 ? 0 : 1));
    if (v[2] == 64 && v[3] != 64) return bad_char(i + 3);
    if ((v[2] == 64 || v[3] == 64) && !last) return bad_char(i + (v[2] == 64 ? 2 : 3));
    uint32_t w = (uint32_t)v[0] << 18 | (uint32_t)v[1] << 12;
    out[0] = (uint8_t)(w >> 16);
    *n = 1;
    if (v[2] == 64) return MG_OK;
    w |= (uint32_t)v[2] << 6;
    out[1] = (uint8_t)(w >> 8);
    *n = 2;
    if (v[3] == 64) return MG_OK;
    out[2] = (uint8_t)(w | v[3]);
    *n = 3;
    return MG_OK;
}

mg_status mg_base64_decode(const char *in, size_t len, uint8_t *out, size_t *out_len)
{
    *out_len = 0;
    if (len % 4 != 0)
        return mg_error_set(MG_ERR_FORMAT, "invalid base64: length %zu is not a multiple of 4", len);
    size_t o = 0, i = 0;
    for (; i + 4 < len; i += 4, o += 3) { /* groups before the last: no padding allowed */
        const unsigned char *g = (const unsigned char *)in + i;
        uint32_t a = b64_value[g[0]], b = b64_value[g[1]], c = b64_value[g[2]],
                 d = b64_value[g[3]];
        if ((a | b | c | d) & 0xC0) break; /* '=' or a bad character: decode_group says which */
        uint32_t w = a << 18 | b << 12 | c << 6 | d;
        out[o] = (uint8_t)(w >> 16);
        out[o + 1] = (uint8_t)(w >> 8);
        out[o + 2] = (uint8_t)w;
    }
    for (; i < len; i += 4) {
        size_t n;
        MG_FORWARD(decode_group(in, i, i + 4 == len, out + o, &n));
        o += n;
    }
    *out_len = o;
    return MG_OK;
}

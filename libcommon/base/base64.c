/* base64.c — standard base64 decoding; see mg/base64.h. */
#include "mg/base64.h"

/* Value of an alphabet character, 64 for '=', 255 for anything else. */
static uint8_t b64_value(unsigned char c)
{
    if (c >= 'A' && c <= 'Z') return (uint8_t)(c - 'A');
    if (c >= 'a' && c <= 'z') return (uint8_t)(c - 'a' + 26);
    if (c >= '0' && c <= '9') return (uint8_t)(c - '0' + 52);
    if (c == '+') return 62;
    if (c == '/') return 63;
    if (c == '=') return 64;
    return 255;
}

static mg_status bad_char(size_t i)
{
    return mg_error_set(MG_ERR_FORMAT, "invalid base64 at character %zu", i);
}

/* Decodes one group of 4 characters at in[i]; last: it is the final group. */
static mg_status decode_group(const char *in, size_t i, int last, uint8_t *out, size_t *n)
{
    uint8_t v[4];
    for (size_t k = 0; k < 4; k++) {
        v[k] = b64_value((unsigned char)in[i + k]);
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
    size_t o = 0;
    for (size_t i = 0; i < len; i += 4) {
        size_t n;
        MG_FORWARD(decode_group(in, i, i + 4 == len, out + o, &n));
        o += n;
    }
    *out_len = o;
    return MG_OK;
}

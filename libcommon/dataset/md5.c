/* md5.c — MD5 of RFC 1321 (contract in mg/md5.h): 64-byte blocks, four rounds of sixteen
 * steps with the sine-derived constants, little-endian words, length in bits at the end. */
#include "mg/md5.h"

#include <string.h>

/* Per-step left rotations, four per round. */
static const uint8_t rot[4][4] = {{7, 12, 17, 22}, {5, 9, 14, 20}, {4, 11, 16, 23},
                                  {6, 10, 15, 21}};

/* K[i] = floor(2^32 * |sin(i + 1)|). */
static const uint32_t K[64] = {
    0xd76aa478, 0xe8c7b756, 0x242070db, 0xc1bdceee, 0xf57c0faf, 0x4787c62a, 0xa8304613,
    0xfd469501, 0x698098d8, 0x8b44f7af, 0xffff5bb1, 0x895cd7be, 0x6b901122, 0xfd987193,
    0xa679438e, 0x49b40821, 0xf61e2562, 0xc040b340, 0x265e5a51, 0xe9b6c7aa, 0xd62f105d,
    0x02441453, 0xd8a1e681, 0xe7d3fbc8, 0x21e1cde6, 0xc33707d6, 0xf4d50d87, 0x455a14ed,
    0xa9e3e905, 0xfcefa3f8, 0x676f02d9, 0x8d2a4c8a, 0xfffa3942, 0x8771f681, 0x6d9d6122,
    0xfde5380c, 0xa4beea44, 0x4bdecfa9, 0xf6bb4b60, 0xbebfbc70, 0x289b7ec6, 0xeaa127fa,
    0xd4ef3085, 0x04881d05, 0xd9d4d039, 0xe6db99e5, 0x1fa27cf8, 0xc4ac5665, 0xf4292244,
    0x432aff97, 0xab9423a7, 0xfc93a039, 0x655b59c3, 0x8f0ccc92, 0xffeff47d, 0x85845dd1,
    0x6fa87e4f, 0xfe2ce6e0, 0xa3014314, 0x4e0811a1, 0xf7537e82, 0xbd3af235, 0x2ad7d2bb,
    0xeb86d391};

static uint32_t rotl(uint32_t x, unsigned n)
{
    return (x << n) | (x >> (32 - n));
}

static uint32_t load_le32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Round function and message-word index of step i. */
static uint32_t mix(int i, uint32_t b, uint32_t c, uint32_t d, int *g)
{
    switch (i / 16) {
    case 0: *g = i; return (b & c) | (~b & d);
    case 1: *g = (5 * i + 1) % 16; return (d & b) | (~d & c);
    case 2: *g = (3 * i + 5) % 16; return b ^ c ^ d;
    default: *g = (7 * i) % 16; return c ^ (b | ~d);
    }
}

static void transform(uint32_t s[4], const uint8_t block[64])
{
    uint32_t w[16];
    for (int i = 0; i < 16; i++) w[i] = load_le32(block + 4 * i);
    uint32_t a = s[0], b = s[1], c = s[2], d = s[3];
    for (int i = 0; i < 64; i++) {
        int g;
        uint32_t f = mix(i, b, c, d, &g) + a + K[i] + w[g];
        a = d;
        d = c;
        c = b;
        b += rotl(f, rot[i / 16][i % 4]);
    }
    s[0] += a;
    s[1] += b;
    s[2] += c;
    s[3] += d;
}

void mg_md5_init(mg_md5 *m)
{
    m->state[0] = 0x67452301;
    m->state[1] = 0xefcdab89;
    m->state[2] = 0x98badcfe;
    m->state[3] = 0x10325476;
    m->length = 0;
}

void mg_md5_update(mg_md5 *m, const void *data, size_t len)
{
    const uint8_t *p = data;
    size_t used = (size_t)(m->length % 64);
    m->length += len;
    while (len > 0) {
        size_t take = 64 - used < len ? 64 - used : len;
        memcpy(m->block + used, p, take);
        used += take;
        p += take;
        len -= take;
        if (used == 64) {
            transform(m->state, m->block);
            used = 0;
        }
    }
}

void mg_md5_final(mg_md5 *m, uint8_t digest[16])
{
    uint64_t bits = m->length * 8;
    static const uint8_t pad[64] = {0x80};
    size_t used = (size_t)(m->length % 64);
    mg_md5_update(m, pad, used < 56 ? 56 - used : 120 - used);
    uint8_t len_le[8];
    for (int i = 0; i < 8; i++) len_le[i] = (uint8_t)(bits >> (8 * i));
    mg_md5_update(m, len_le, 8);
    for (int i = 0; i < 16; i++) digest[i] = (uint8_t)(m->state[i / 4] >> (8 * (i % 4)));
}

void mg_md5_hex(const void *data, size_t len, char hex[33])
{
    static const char digits[] = "0123456789abcdef";
    mg_md5 m;
    uint8_t d[16];
    mg_md5_init(&m);
    mg_md5_update(&m, data, len);
    mg_md5_final(&m, d);
    for (int i = 0; i < 16; i++) {
        hex[2 * i] = digits[d[i] >> 4];
        hex[2 * i + 1] = digits[d[i] & 15];
    }
    hex[32] = '\0';
}

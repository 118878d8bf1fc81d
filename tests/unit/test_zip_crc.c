/* test_zip_crc.c — unit tests for the two CRC-32 implementations behind mg_crc32
 * (zip_internal.h): the PCLMULQDQ folding version against the slicing-by-8 reference on
 * random lengths, alignments and chained calls, and both against values from Python's
 * zlib.crc32 over the same pseudo-random bytes (xorshift64, computed once in Python). */
#include <stdlib.h>

#include "harness.h"
#include "mg/zip.h"
#include "ckptfmt/zip_internal.h"

#define BUF_LEN ((size_t)1 << 20)

/* xorshift64 bytes: the high 32 bits of each state, little-endian (as the Python side). */
static uint8_t *random_bytes(size_t n)
{
    uint8_t *b = malloc(n);
    uint64_t x = 0x9E3779B97F4A7C15ull;
    for (size_t i = 0; b && i < n; i += 4) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        uint32_t v = (uint32_t)(x >> 32);
        for (size_t k = 0; k < 4 && i + k < n; k++) b[i + k] = (uint8_t)(v >> (8 * k));
    }
    return b;
}

MG_TEST(zip_crc_matches_python_zlib)
{
    static const struct {
        size_t off, len;
        uint32_t crc;
    } cases[] = {{0, 64, 0xc8495a33u},     {1, 100, 0x6ba56228u},    {3, 1000, 0x716bab43u},
                 {7, 4096, 0x0f0029e2u},   {13, 65535, 0x2697c763u}, {0, BUF_LEN, 0xe4f38e9eu}};
    uint8_t *b = random_bytes(BUF_LEN);
    MG_CHECK(t, b != NULL);
    if (!b) return;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        MG_CHECK_EQ_INT(t, mg_crc32_table(0, b + cases[i].off, cases[i].len), cases[i].crc);
        MG_CHECK_EQ_INT(t, mg_crc32_clmul(0, b + cases[i].off, cases[i].len), cases[i].crc);
        MG_CHECK_EQ_INT(t, mg_crc32(0, b + cases[i].off, cases[i].len), cases[i].crc);
    }
    free(b);
}

MG_TEST(zip_crc_clmul_equals_table)
{
    uint8_t *b = random_bytes(BUF_LEN);
    MG_CHECK(t, b != NULL);
    if (!b) return;
    uint64_t x = 12345;
    for (int i = 0; i < 2000; i++) {
        x = x * 6364136223846793005ull + 1442695040888963407ull;
        size_t off = (size_t)(x >> 40) % 64;
        size_t len = i < 300 ? (size_t)i : (size_t)(x >> 20) % (BUF_LEN - 64);
        uint32_t seed = (uint32_t)(x >> 8);
        MG_CHECK_EQ_INT(t, mg_crc32_clmul(seed, b + off, len), mg_crc32_table(seed, b + off, len));
    }
    /* chained calls of odd sizes equal one call */
    uint32_t whole = mg_crc32_table(0, b, 300000), c = 0;
    for (size_t at = 0, step = 1; at < 300000; at += step, step = step * 3 + 1) {
        size_t n = 300000 - at < step ? 300000 - at : step;
        c = mg_crc32_clmul(c, b + at, n);
    }
    MG_CHECK_EQ_INT(t, c, whole);
    free(b);
}

MG_TEST(zip_crc_clmul_detected_on_x86)
{
#if defined(__x86_64__)
    /* every x86-64 CPU this project targets has PCLMULQDQ; a 0 here means the fast path is
     * never taken (and never tested) */
    MG_CHECK_EQ_INT(t, mg_crc32_clmul_available(), 1);
#else
    MG_CHECK_EQ_INT(t, mg_crc32_clmul_available(), 0);
#endif
}

/* test_md5.c — mg/md5.h against the RFC 1321 test suite, a million 'a' fed in odd pieces,
 * and lengths around the 56-byte padding limit (values from Python's hashlib). */
#include <stdlib.h>

#include "harness.h"
#include "mg/md5.h"

MG_TEST(md5_rfc1321_vectors)
{
    static const char *const in[] = {
        "", "a", "abc", "message digest", "abcdefghijklmnopqrstuvwxyz",
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789",
        "1234567890123456789012345678901234567890123456789012345678901234567890123456789"
        "0"};
    static const char *const out[] = {
        "d41d8cd98f00b204e9800998ecf8427e", "0cc175b9c0f1b6a831c399e269772661",
        "900150983cd24fb0d6963f7d28e17f72", "f96b697d7cb7938d525a2f31aaf161d0",
        "c3fcd3d76192e4007dfb496cca67e13b", "d174ab98d277d9f5a5611c2c9f419d9f",
        "57edf4a22be3c955ac49da2e2107b67a"};
    for (size_t i = 0; i < sizeof in / sizeof in[0]; i++) {
        char hex[33];
        mg_md5_hex(in[i], strlen(in[i]), hex);
        MG_CHECK_EQ_STR(t, hex, out[i]);
    }
}

MG_TEST(md5_pieces_and_block_boundaries)
{
    size_t n = 1000000;
    char *a = malloc(n);
    MG_CHECK(t, a != NULL);
    if (!a) return;
    memset(a, 'a', n);
    mg_md5 m;
    mg_md5_init(&m);
    for (size_t off = 0, step = 1; off < n; off += step, step = step % 131 + 7)
        mg_md5_update(&m, a + off, off + step > n ? n - off : step);
    uint8_t d[16];
    mg_md5_final(&m, d);
    static const uint8_t want[16] = {0x77, 0x07, 0xd6, 0xae, 0x4e, 0x02, 0x7c, 0x70,
                                     0xee, 0xa2, 0xa9, 0x35, 0xc2, 0x29, 0x6f, 0x21};
    MG_CHECK(t, memcmp(d, want, 16) == 0);
    /* lengths around the 56-byte padding limit (hashlib values) */
    char hex[33];
    mg_md5_hex(a, 55, hex);
    MG_CHECK_EQ_STR(t, hex, "ef1772b6dff9a122358552954ad0df65");
    mg_md5_hex(a, 56, hex);
    MG_CHECK_EQ_STR(t, hex, "3b0c8ac703f828b04c6c197006d17218");
    mg_md5_hex(a, 64, hex);
    MG_CHECK_EQ_STR(t, hex, "014842d480b571495a4a0363793f7367");
    free(a);
}

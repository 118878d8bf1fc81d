/* mg/md5.h — MD5 (RFC 1321), for the names of Megatron's dataset cache files
 * (hashlib.md5(description).hexdigest()).
 *
 * Contract: mg_md5_init/update/final compute the digest of any byte stream fed in pieces of
 * any size (64-bit length); mg_md5_hex writes the 32 lowercase hex digits of data plus a NUL.
 * No allocation, no failure; the context is a plain struct on the caller's stack. MD5 is used
 * here as a name, never for security.
 */
#ifndef MG_MD5_H
#define MG_MD5_H

#include <stddef.h>
#include <stdint.h>

typedef struct mg_md5 {
    uint32_t state[4];
    uint64_t length; /* bytes fed so far */
    uint8_t block[64];
} mg_md5;

void mg_md5_init(mg_md5 *m);
void mg_md5_update(mg_md5 *m, const void *data, size_t len);
void mg_md5_final(mg_md5 *m, uint8_t digest[16]);

/* hex[33]: the digest of data[0..len) as 32 lowercase hex digits and a NUL. */
void mg_md5_hex(const void *data, size_t len, char hex[33]);

#endif

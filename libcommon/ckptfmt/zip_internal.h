/* zip_internal.h — ZIP header encoders/decoders shared by zip_read.c and zip_write.c and
 * exercised directly by the unit tests (ZIP64 fields without writing 4 GiB files).
 *
 * Contract: all values little-endian; a field that does not fit 32 bits is written as
 * 0xFFFFFFFF with its 64-bit value in a ZIP64 extra (id 0x0001) in the order uncompressed
 * size, compressed size, local header offset (only the fields that overflow). Encoders
 * write into a caller buffer of at least MG_ZIP_HDR_MAX bytes (+ name length) and return
 * the bytes used. Decoders never read past `avail` and return MG_ERR_FORMAT naming `label`
 * and the absolute offset `at`.
 */
#ifndef MG_ZIP_INTERNAL_H
#define MG_ZIP_INTERNAL_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"

/* CRC-32 (IEEE) implementations behind mg_crc32 (zip_write.c), for the unit tests: the
 * slicing-by-8 reference, and PCLMULQDQ folding (the reference where the CPU lacks it;
 * mg_crc32_clmul_available says whether it has it). Same contract as mg_crc32. */
uint32_t mg_crc32_table(uint32_t crc, const void *data, size_t len);
uint32_t mg_crc32_clmul(uint32_t crc, const void *data, size_t len);
int mg_crc32_clmul_available(void);

#define MG_ZIP_HDR_MAX 160 /* fixed part + zip64 extra + FB padding, without the name */
#define MG_ZIP_ALIGN 64
#define MG_ZIP_U32_MAX 0xFFFFFFFFu

typedef struct {
    const char *name; /* not NUL-terminated when decoded: use name_len */
    size_t name_len;
    uint16_t flags, method;
    uint32_t crc;
    uint64_t comp, uncomp, offset; /* offset: of the local header */
} mg_zip_rec;

typedef struct {
    uint64_t n_entries, cd_offset, cd_size;
    uint64_t end_offset; /* where the end records begin (zip64 EOCD, or EOCD) */
} mg_zip_end;

/* Local header for a record whose header starts at r->offset and whose size is r->uncomp
 * (known in advance), flags 0x0808 (data descriptor, UTF-8), crc/sizes 0, a ZIP64 extra if
 * the size or offset needs one, and an "FB" extra of 'Z' bytes padding the data start to a
 * multiple of MG_ZIP_ALIGN. Returns the header length (data starts at offset + length). */
size_t mg_zip_local_encode(uint8_t *buf, const mg_zip_rec *r);
/* Data descriptor (16 bytes, or 24 with 64-bit sizes when zip64 is set). */
size_t mg_zip_descriptor_encode(uint8_t *buf, const mg_zip_rec *r, int zip64);
/* 1 if the local header of r carries a ZIP64 extra (then its descriptor is 64-bit). */
int mg_zip_needs_zip64(const mg_zip_rec *r);
/* Central directory header (+ name + ZIP64 extra when needed). */
size_t mg_zip_central_encode(uint8_t *buf, const mg_zip_rec *r);
/* ZIP64 EOCD + locator + EOCD (98 bytes) for a directory of n entries. end_offset is where
 * these records start (= cd_offset + cd_size). */
size_t mg_zip_end_encode(uint8_t *buf, const mg_zip_end *e);

/* Central header at p (absolute file offset `at`); *used = its full length. */
mg_status mg_zip_central_decode(const uint8_t *p, size_t avail, uint64_t at, const char *label,
                                mg_zip_rec *r, size_t *used);
/* Finds and decodes the end records of a whole file data[0..size). */
mg_status mg_zip_end_decode(const uint8_t *data, size_t size, const char *label, mg_zip_end *e);

static inline uint16_t mg_rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static inline uint32_t mg_rd32(const uint8_t *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}
static inline uint64_t mg_rd64(const uint8_t *p)
{
    return (uint64_t)mg_rd32(p) | (uint64_t)mg_rd32(p + 4) << 32;
}

#endif

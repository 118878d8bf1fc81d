/* mg/zip.h — ZIP archives as PyTorch's torch.save writes them: a reader of stored records and
 * a writer of stored ZIP64 archives (the container of mg/torchfile.h).
 *
 * Contract:
 *   - ZIP reader (mg_zip_*): works on a caller-owned byte slice (a mapped file, or a nested
 *     record), which must outlive the mg_zip. It parses the end records (ZIP64 when present),
 *     the central directory (sizes/offsets from there, never from local headers) and each
 *     local header (for the data start). Every offset is bounds-checked; errors are
 *     MG_ERR_FORMAT "LABEL: offset N: what". Only stored (method 0) records can be read;
 *     others answer MG_ERR_UNSUPPORTED when their data is asked for.
 *   - ZIP writer (mg_zip_writer_*): writes what PyTorch writes (stored, 64-byte aligned
 *     data, data descriptors, ZIP64 end records always) to a caller-owned mg_out.
 */
#ifndef MG_ZIP_H
#define MG_ZIP_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"
#include "mg/file.h"

struct iovec; /* <sys/uio.h> */

/* ---- ZIP reader ---- */

typedef struct {
    const char *name;     /* NUL-terminated */
    uint64_t header_offset, data_offset;
    uint64_t size, comp_size;
    uint32_t crc;
    uint16_t method;
} mg_zip_entry;

typedef struct mg_zip mg_zip;

mg_status mg_zip_open(mg_zip **z, const uint8_t *data, size_t size, const char *label);
void mg_zip_free(mg_zip *z); /* accepts NULL */
size_t mg_zip_count(const mg_zip *z);
const mg_zip_entry *mg_zip_entry_at(const mg_zip *z, size_t i); /* central directory order */
const mg_zip_entry *mg_zip_find(const mg_zip *z, const char *name); /* NULL if absent */
/* Pointer to a stored record's bytes (e->size of them). */
mg_status mg_zip_data(const mg_zip *z, const mg_zip_entry *e, const uint8_t **p);
/* Recomputes the CRC-32 of a stored record; MG_ERR_FORMAT on mismatch. */
mg_status mg_zip_check_crc(const mg_zip *z, const mg_zip_entry *e);

/* CRC-32 (IEEE 802.3, as zlib's crc32: start with 0, feed chunks). */
uint32_t mg_crc32(uint32_t crc, const void *data, size_t len);

/* ---- ZIP writer ---- */

typedef struct mg_zip_writer mg_zip_writer;

mg_status mg_zip_writer_create(mg_zip_writer **w, mg_out *out);
void mg_zip_writer_free(mg_zip_writer *w); /* accepts NULL; does not touch the mg_out */
/* One record: begin with its exact size, write the bytes in any chunks, end. */
mg_status mg_zip_writer_begin(mg_zip_writer *w, const char *name, uint64_t size);
mg_status mg_zip_writer_write(mg_zip_writer *w, const void *data, size_t len);
/* Like mg_zip_writer_write for the bytes [src_off, src_off + len) of file src_fd: read
 * into the output buffer, checksummed there and written (mg_out_copy_seen). */
mg_status mg_zip_writer_copy(mg_zip_writer *w, int src_fd, uint64_t src_off, size_t len);
/* Like mg_zip_writer_write for the n pieces of iov in order: checksummed in place and
 * written from the caller's memory (mg_out_writev), no copy through the output buffer. */
mg_status mg_zip_writer_writev(mg_zip_writer *w, const struct iovec *iov, int n);
mg_status mg_zip_writer_end(mg_zip_writer *w);
mg_status mg_zip_writer_add(mg_zip_writer *w, const char *name, const void *data, size_t len);
/* Central directory + end records. */
mg_status mg_zip_writer_finish(mg_zip_writer *w);

#endif /* MG_ZIP_H */

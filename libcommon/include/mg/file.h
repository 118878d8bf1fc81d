/* mg/file.h — files: read-only mappings and atomic output.
 *
 * Contract:
 *   - mg_map_*: maps a whole file read-only (an empty file maps to data == NULL, size 0).
 *   - mg_out_*: an output file is written under a temporary name in the same directory
 *     ("<path>.tmp.<pid>.<n>"), through a buffer, with 64-bit offsets; mg_out_commit()
 *     flushes, fsyncs and renames it to its final name; mg_out_abort() (or mg_out_free()
 *     without commit) deletes the temporary file. So a failed run never leaves a file under
 *     the final name. A full disk is reported as MG_ERR_NOSPACE naming the file.
 *   - Several outputs that must appear together (a .bin and its .idx) are committed one
 *     after the other by the caller after all writes succeeded.
 *   - Errors name the path and carry errno's text (mg/error.h).
 */
#ifndef MG_FILE_H
#define MG_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"

struct iovec; /* <sys/uio.h> */

/* Room for any path the tools form (Linux's PATH_MAX: the kernel refuses longer ones). */
#define MG_PATH_MAX 4096

typedef struct {
    const uint8_t *data; /* NULL when size == 0 */
    size_t size;
} mg_map;

/* Maps path read-only. On failure *m is zeroed. */
mg_status mg_map_open(mg_map *m, const char *path);
void mg_map_close(mg_map *m); /* accepts a zeroed map */

typedef struct mg_out mg_out; /* opaque */

/* Creates the temporary file for final path `path`. *out is NULL on failure. */
mg_status mg_out_create(mg_out **out, const char *path);
/* The same with direct I/O (O_DIRECT) for the whole buffers written, where the filesystem
 * takes it (else buffered, silently): the data goes from an aligned buffer to the device,
 * not through the page cache, which costs the kernel a copy and a fresh page per 4 KiB
 * (mg-preprocess's .bin; a file read again soon after is better buffered). */
mg_status mg_out_create_direct(mg_out **out, const char *path);
/* 1 while o writes with direct I/O (for tests). */
int mg_out_is_direct(const mg_out *o);
mg_status mg_out_write(mg_out *o, const void *data, size_t len);
/* The free end of the buffer, to write into in place (a dtype conversion): *p and *avail
 * (>= 1) bytes, a full buffer flushed first; the caller then counts what it wrote with
 * mg_out_wrote(o, n), n <= *avail, before any other call on o. */
mg_status mg_out_room(mg_out *o, uint8_t **p, size_t *avail);
void mg_out_wrote(mg_out *o, size_t n);
/* Appends the n pieces of iov in order (the buffer is flushed first, then pwritev() from
 * the caller's memory: no copy through the buffer); partial writes are resumed. */
mg_status mg_out_writev(mg_out *o, const struct iovec *iov, int n);
/* Appends len bytes read from src_fd at src_off (src_fd's own offset is not used): by
 * copy_file_range() where the kernel can (no copy through user space), otherwise (EXDEV,
 * ENOSYS, EINVAL, EOPNOTSUPP) by pread + write. A source shorter than asked is MG_ERR_IO. */
mg_status mg_out_copy_from(mg_out *o, int src_fd, uint64_t src_off, uint64_t len);
/* The same by pread + write through the output buffer, showing every piece to see(ctx, p, n)
 * in order before it is written (e.g. a checksum over data that is in the cache right now):
 * one pass over memory where a checksum of a mapping followed by copy_file_range would need
 * two plus the page faults of the mapping. */
mg_status mg_out_copy_seen(mg_out *o, int src_fd, uint64_t src_off, uint64_t len,
                           void (*see)(void *ctx, const void *p, size_t n), void *ctx);
/* Bytes written so far (the current offset). */
uint64_t mg_out_offset(const mg_out *o);
/* Flush + fsync + rename to the final path. The handle stays valid for mg_out_free. */
mg_status mg_out_commit(mg_out *o);
/* Removes the temporary file (no-op after commit). */
void mg_out_abort(mg_out *o);
/* Aborts if not committed, then frees. Accepts NULL. */
void mg_out_free(mg_out *o);
/* The final path given at creation. */
const char *mg_out_path(const mg_out *o);

/* Reads a whole file into a malloc'd, NUL-terminated buffer (for small files). */
mg_status mg_read_file(const char *path, char **data, size_t *len);
/* 1 if path names an existing directory, else 0. */
int mg_is_dir(const char *path);

#endif

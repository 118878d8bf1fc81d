/* mg/torchfile.h — torch.save files (.pt): the ZIP container and the pickled object graph.
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
 *   - Torch files: mg_torch_open() maps a .pt file, finds "<A>/data.pkl" (A = the folder of
 *     the first record, any name), runs the pickle VM and points every tensor's data at its
 *     "<A>/data/<key>" record inside the mapping (zero copy, valid until mg_torch_close).
 *     The legacy non-zip format (PyTorch < 1.6) is refused with MG_ERR_UNSUPPORTED.
 *   - mg_torch_save() writes a graph (mg/pickle.h) as PyTorch 2.x does: records data.pkl,
 *     .format_version ("1"), .storage_alignment ("64"), byteorder ("little"), data/0..N-1,
 *     version ("3\n"), .data/serialization_id; storage keys "0".. in first-use order, one
 *     storage per distinct data pointer (tensors sharing a pointer share a storage). Tensor
 *     bytes come from mg_pk_tensor.data (storage_nbytes bytes) or, when data is NULL, from
 *     opts->direct (file ranges), opts->gather (pieces of memory written by pwritev) or
 *     opts->fill in chunks (streaming). Output goes through mg_out (atomic rename).
 */
#ifndef MG_TORCHFILE_H
#define MG_TORCHFILE_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"
#include "mg/file.h"
#include "mg/pickle.h"

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

/* ---- torch.save files ---- */

typedef struct mg_torch_file mg_torch_file;

mg_status mg_torch_open(mg_torch_file **f, const char *path);
/* Same over caller-owned bytes (kept alive by the caller; label names them in errors). */
mg_status mg_torch_open_mem(mg_torch_file **f, const uint8_t *data, size_t size,
                            const char *label);
void mg_torch_close(mg_torch_file *f); /* accepts NULL */
/* The whole file's mapping (byte i is byte i of the file) of a file opened by path, with
 * its size in *size; NULL (and 0) for mg_torch_open_mem. */
const uint8_t *mg_torch_mapping(const mg_torch_file *f, size_t *size);
mg_pk_obj *mg_torch_root(const mg_torch_file *f);
mg_pk_graph *mg_torch_graph(const mg_torch_file *f);
const char *mg_torch_archive_name(const mg_torch_file *f); /* "model_optim_rng", "archive" */

/* Bytes [offset, offset + len) of tensor t's storage, for tensors written without data. */
typedef mg_status (*mg_torch_fill_fn)(void *ctx, const mg_pk_tensor *t, uint64_t offset,
                                      void *buf, size_t len);

/* Optional: how many bytes (<= max) from offset on of t's storage are, unconverted, bytes
 * of an open file, which *fd and *file_off name; 0 when none (fill is used). */
typedef size_t (*mg_torch_direct_fn)(void *ctx, const mg_pk_tensor *t, uint64_t offset,
                                     size_t max, int *fd, uint64_t *file_off);

/* Optional: how many bytes (<= max) from offset on of t's storage lie, unconverted, in
 * memory: *iov lists them in order (*niov pieces, owned by ctx and valid until its next
 * callback); 0 when none (fill is used). */
typedef size_t (*mg_torch_gather_fn)(void *ctx, const mg_pk_tensor *t, uint64_t offset,
                                     size_t max, const struct iovec **iov, int *niov);

typedef struct {
    const char *archive_name; /* NULL: the file name without directory and extension */
    mg_torch_fill_fn fill;    /* for tensors whose data is NULL */
    mg_torch_direct_fn direct; /* NULL: fill only; else tried first, per piece */
    mg_torch_gather_fn gather; /* NULL: none; else tried after direct, per piece */
    void *ctx;
} mg_torch_save_opts;

/* Writes root to path (atomically). opts may be NULL. */
mg_status mg_torch_save(const char *path, const mg_pk_obj *root, const mg_torch_save_opts *opts);
/* Appends the same archive to out at its current offset (the archive's offsets count from
 * there, as in DCP data files); archive_name NULL: "archive". Does not commit out. */
mg_status mg_torch_save_to(mg_out *out, const mg_pk_obj *root, const mg_torch_save_opts *opts);

#endif /* MG_TORCHFILE_H */

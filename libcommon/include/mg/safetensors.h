/* mg/safetensors.h — safetensors files (Hugging Face), read and write.
 *
 * Format (docs/FORMATS.md §6.1, huggingface/safetensors src/tensor.rs):
 *   u64 LE N | N bytes of UTF-8 JSON object | data section.
 *   The JSON maps tensor names to {"dtype": "F32", "shape": [..], "data_offsets": [b, e]}
 *   (offsets relative to the data section), plus an optional "__metadata__" object of
 *   string values.
 *
 * Reader contract (mg_st_open): maps the file read-only and validates it the way the
 * reference library does: N <= 100,000,000 and 8 + N <= file size; the header is a JSON
 * object (duplicate keys rejected; the reference keeps the last one); every tensor entry
 * is an object with a known dtype, a shape of non-negative integers and data_offsets
 * [b, e] of two integers; sorted by (b, e) the tensors cover the data section exactly:
 * the first begins at 0, each begins where the previous one ended, and the last end is
 * the file's end; e - b equals prod(shape) * element size (overflow-checked). Extra
 * members inside a tensor entry are ignored (as serde does). Empty tensors and 0-dim
 * scalars are allowed. A failure is MG_ERR_FORMAT (MG_ERR_UNSUPPORTED for a valid
 * safetensors dtype that mg_tdtype lacks, e.g. F4, C64) with a message naming the file,
 * the tensor and what is wrong.
 *   Tensors are listed in file order (by data offset; ties keep the header order). Data is
 *   zero-copy: mg_st_tensor.data points into the mapping. Every pointer the reader returns
 *   (names, shapes, data, metadata strings) is owned by the mg_st_file and valid until
 *   mg_st_close. Data is aligned only as far as the file aligns it (files written by the
 *   library or by mg_st_writer have 8-byte aligned data sections and tensors sorted by
 *   alignment).
 *
 * Writer contract (streaming, bounded memory): create, declare every tensor (name, dtype,
 * shape) and the metadata, then mg_st_writer_begin() fixes the layout exactly as the
 * Python library's save_file does (tensors sorted by descending dtype alignment in the
 * library's dtype order, then by name bytewise; header = compact JSON like serde_json,
 * "__metadata__" first, padded with spaces to a multiple of 8) and writes the header.
 * Then the tensor bytes are written in that order (mg_st_writer_next() says which tensor
 * is due), in one call or in pieces. mg_st_writer_finish() checks everything was written
 * and commits the file atomically (mg/file.h). Output is byte-identical to
 * safetensors.torch.save_file / safetensors.numpy.save_file for the same tensors and
 * metadata when the metadata has at most one key (the library writes several keys in Rust
 * HashMap order, which is random; this writer keeps the declaration order).
 * Without finish (or after an error) mg_st_writer_free removes the temporary file.
 * The writer copies every name, shape and metadata string it is given; names it returns
 * (next, order) are owned by the writer and valid until mg_st_writer_free.
 */
#ifndef MG_SAFETENSORS_H
#define MG_SAFETENSORS_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"
#include "mg/tensor.h"

struct iovec; /* <sys/uio.h> */

/* The reference reader's limit on N. */
#define MG_ST_MAX_HEADER 100000000u

typedef struct {
    const char *name;     /* NUL-terminated UTF-8 */
    mg_tdtype dtype;
    int ndim;             /* 0 for a scalar */
    const int64_t *shape; /* ndim entries */
    uint64_t numel;       /* prod(shape) (1 for a scalar) */
    uint64_t offset;      /* begin, relative to the data section */
    uint64_t nbytes;      /* end - begin */
    const void *data;     /* into the mapping; nbytes readable bytes */
} mg_st_tensor;

typedef struct mg_st_file mg_st_file; /* opaque */

/* Maps and validates path. *f is NULL on failure. */
mg_status mg_st_open(mg_st_file **f, const char *path);
/* Same validation on a caller-owned buffer (must outlive *f); label names it in errors. */
mg_status mg_st_open_mem(mg_st_file **f, const void *buf, size_t len, const char *label);
void mg_st_close(mg_st_file *f); /* accepts NULL */

const char *mg_st_path(const mg_st_file *f);
size_t mg_st_count(const mg_st_file *f);
/* i-th tensor in file order, i < mg_st_count(f). */
const mg_st_tensor *mg_st_at(const mg_st_file *f, size_t i);
/* Tensor by name, NULL if absent (no error set). */
const mg_st_tensor *mg_st_find(const mg_st_file *f, const char *name);
/* Like mg_st_find, but a missing name is MG_ERR_NOTFOUND naming the file and tensor. */
mg_status mg_st_get(const mg_st_file *f, const char *name, const mg_st_tensor **t);
/* Header length N and the data section's file offset (8 + N). */
uint64_t mg_st_header_len(const mg_st_file *f);

/* "__metadata__" entries in header order. */
size_t mg_st_meta_count(const mg_st_file *f);
void mg_st_meta_at(const mg_st_file *f, size_t i, const char **key, const char **value);
/* Value of key, NULL if absent. */
const char *mg_st_meta_get(const mg_st_file *f, const char *key);

typedef struct mg_st_writer mg_st_writer; /* opaque */

/* Opens the atomic output for path. *w is NULL on failure. */
mg_status mg_st_writer_create(mg_st_writer **w, const char *path);
/* Adds a metadata entry (before begin; UTF-8). A repeated key is MG_ERR_ARG. No entries:
 * no "__metadata__" in the header (the library's metadata=None). */
mg_status mg_st_writer_meta(mg_st_writer *w, const char *key, const char *value);
/* Declares a tensor (before begin). Names must be valid UTF-8, not "__metadata__" and
 * unique (a duplicate is reported by mg_st_writer_begin, MG_ERR_ARG); dims non-negative;
 * the byte size must fit in 64 bits (MG_ERR_LIMIT otherwise). */
mg_status mg_st_writer_declare(mg_st_writer *w, const char *name, mg_tdtype dtype, int ndim,
                               const int64_t *shape);
/* Fixes the layout and writes the header. */
mg_status mg_st_writer_begin(mg_st_writer *w);
/* After begin: the i-th tensor of the layout (the order data is due in), NULL when
 * i >= the number of tensors or before begin. */
const char *mg_st_writer_order(const mg_st_writer *w, size_t i);
/* After begin: the tensor whose bytes are due next (NULL when all are written) and its
 * byte size; *remaining (optional) receives the bytes of it still missing. */
const char *mg_st_writer_next(const mg_st_writer *w, uint64_t *nbytes, uint64_t *remaining);
/* Appends bytes to the data section; they may span tensor boundaries. Writing past the
 * declared total is MG_ERR_ARG. */
mg_status mg_st_writer_write(mg_st_writer *w, const void *data, size_t len);
/* Same for bytes [src_off, src_off + len) of the open file src_fd, copied file to file
 * (mg_out_copy_from: copy_file_range where the kernel can). */
mg_status mg_st_writer_copy(mg_st_writer *w, int src_fd, uint64_t src_off, uint64_t len);
/* Same for the n pieces of iov, in order, written from the caller's memory by pwritev()
 * (mg_out_writev: no copy through the output buffer). */
mg_status mg_st_writer_writev(mg_st_writer *w, const struct iovec *iov, int n);
/* Writes a whole tensor: name must be the one due next and len its full byte size
 * (MG_ERR_ARG naming the expected tensor otherwise). Empty tensors are never due (next()
 * skips them); writing one with len 0 is accepted at any time and does nothing. */
mg_status mg_st_writer_tensor(mg_st_writer *w, const char *name, const void *data, size_t len);
/* Checks every byte was written, commits the file. */
mg_status mg_st_writer_finish(mg_st_writer *w);
void mg_st_writer_free(mg_st_writer *w); /* accepts NULL; removes an uncommitted file */

/* ---- sharded checkpoints: model.safetensors.index.json ----
 *
 * {"metadata": {"total_parameters": P, "total_size": S}, "weight_map": {name: file, ...}}
 * Reader: the root must be an object with a "weight_map" object of string values; each
 * file must be a plain file name (no '/', not "." or ".."); "metadata" is optional, and
 * "total_size"/"total_parameters" in it, when present, must be non-negative integers (other
 * metadata members are ignored). MG_ERR_FORMAT naming the index file otherwise.
 * Writer: byte-identical to transformers' save_pretrained (json.dumps(index, indent=2,
 * sort_keys=True) + "\n", ASCII-only with \uXXXX escapes), atomic (mg/file.h).
 * Strings returned by the reader are owned by the index, valid until mg_st_index_free. */
typedef struct mg_st_index mg_st_index; /* opaque */

mg_status mg_st_index_open(mg_st_index **ix, const char *path);
void mg_st_index_free(mg_st_index *ix); /* accepts NULL */
/* Entries sorted by tensor name (bytewise). */
size_t mg_st_index_count(const mg_st_index *ix);
void mg_st_index_at(const mg_st_index *ix, size_t i, const char **name, const char **file);
/* Shard file of a tensor, NULL if absent. */
const char *mg_st_index_file_of(const mg_st_index *ix, const char *name);
/* Distinct shard files, sorted bytewise. */
size_t mg_st_index_nfiles(const mg_st_index *ix);
const char *mg_st_index_file(const mg_st_index *ix, size_t i);
/* metadata.total_size / total_parameters, -1 when absent. */
int64_t mg_st_index_total_size(const mg_st_index *ix);
int64_t mg_st_index_total_parameters(const mg_st_index *ix);

/* Writes the index for n (name, file) pairs (any order; names unique, else MG_ERR_ARG).
 * total_parameters < 0 leaves it out (older transformers wrote only total_size). */
mg_status mg_st_index_write(const char *path, const char *const *names,
                            const char *const *files, size_t n, uint64_t total_size,
                            int64_t total_parameters);
/* HF shard file name "model-%05d-of-%05d.safetensors" (index 1-based) into buf; MG_ERR_ARG
 * if 1 <= index <= count does not hold, MG_ERR_LIMIT if buf is too small. */
mg_status mg_st_shard_name(char *buf, size_t cap, int index, int count);

#endif /* MG_SAFETENSORS_H */

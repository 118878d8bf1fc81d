/* mg/torchfile.h — torch.save files (.pt): a ZIP container (mg/zip.h) holding the pickled
 * object graph (mg/pickle.h) and the tensor storages.
 *
 * Contract:
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
#include "mg/zip.h"

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

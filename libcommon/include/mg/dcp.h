/* mg/dcp.h — PyTorch distributed checkpoints (torch.distributed.checkpoint, "DCP") as
 * Megatron's `torch_dist` format stores them: the pickled `.metadata` (read and written) and
 * the `__R_K.distcp` data files (read; written by the callers through mg_torch_save_to).
 *
 * Contract:
 *   - mg_dcp_meta holds the two maps of a DCP Metadata joined: every key of
 *     state_dict_metadata is an item, a tensor (dtype, global shape, chunks) or a byte
 *     object (one blob); every chunk and blob carries its storage (file, offset, length)
 *     from storage_data. All memory (items, chunks, strings) is owned by the meta.
 *   - mg_dcp_meta_load runs the pickle (any protocol, mg/pickle.h) and checks it: the root
 *     is a Metadata, every value a TensorStorageMetadata or BytesStorageMetadata, every
 *     storage entry a _StorageInfo without transforms naming a plain file name; chunks lie
 *     inside their tensor, do not overlap and cover it exactly; every chunk and blob has
 *     exactly one storage entry and every storage entry names an item. Classes the reader
 *     does not need (Megatron's extras, SavePlans) are ignored. Class paths are matched by
 *     class name, so both PyTorch module layouts load. Errors are MG_ERR_FORMAT
 *     "LABEL: pickle offset N: what" or "LABEL: KEY: what"; a dtype we lack is
 *     MG_ERR_UNSUPPORTED.
 *   - mg_dcp_meta_dump writes the pickle PyTorch reads back with pickle.load (protocol 2,
 *     torch.distributed.checkpoint.metadata/filesystem classes, TensorProperties' 5-tuple
 *     state, version "1.0.0"), items and chunks in the meta's order.
 *   - mg_dcp_dir maps a checkpoint folder's data files read-only and resolves every chunk:
 *     its bytes must lie inside the file and form a torch.save archive of one contiguous
 *     tensor of the chunk's shape and the item's dtype (then chunk->data points at its
 *     first element, inside the mapping, valid until mg_dcp_dir_close). Errors name the
 *     data file, the item's byte offset in it and the key.
 */
#ifndef MG_DCP_H
#define MG_DCP_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"
#include "mg/file.h"
#include "mg/pickle.h"
#include "mg/tensor.h"
#include "mg/torchfile.h"

#define MG_DCP_MAX_DIMS 8

typedef struct {
    int64_t off[MG_DCP_MAX_DIMS], len[MG_DCP_MAX_DIMS]; /* box in global coordinates */
    uint32_t file;             /* index into mg_dcp_meta.files */
    uint64_t offset, length;   /* the stored item: bytes [offset, offset + length) */
    const uint8_t *data;       /* mg_dcp_dir: first element of the chunk (C order) */
} mg_dcp_chunk;

typedef struct {
    char *key;
    int is_bytes;              /* BytesStorageMetadata: chunks[0] is the blob (no box) */
    mg_tdtype dtype;
    int ndim;
    int64_t size[MG_DCP_MAX_DIMS]; /* global shape */
    mg_dcp_chunk *chunks;
    size_t nchunks, cap;
    size_t at;                 /* loaded metas: pickle offset of its storage metadata */
} mg_dcp_item;

typedef struct {
    mg_dcp_item *items;
    size_t nitems, cap;
    char **files;              /* relative data file names ("__0_0.distcp") */
    size_t nfiles, fcap;
} mg_dcp_meta;

/* Parses a .metadata pickle; *m is NULL on failure. */
mg_status mg_dcp_meta_load(mg_dcp_meta **m, const uint8_t *data, size_t len, const char *label);
/* An empty meta to fill with the adders below; NULL (message set) when out of memory. */
mg_dcp_meta *mg_dcp_meta_create(void);
void mg_dcp_meta_free(mg_dcp_meta *m); /* accepts NULL */

/* Adders (the pointers they return stay valid until the next adder of the same kind). */
mg_dcp_item *mg_dcp_add_tensor(mg_dcp_meta *m, const char *key, mg_tdtype dtype, int ndim,
                               const int64_t *size);
mg_dcp_item *mg_dcp_add_bytes(mg_dcp_meta *m, const char *key);
/* A chunk (box off/len of it->ndim entries; none for a byte item), storage unset. */
mg_dcp_chunk *mg_dcp_add_chunk(mg_dcp_item *it, const int64_t *off, const int64_t *len);
/* Index of data file `name`, added when new; -1 when out of memory. */
int64_t mg_dcp_file_index(mg_dcp_meta *m, const char *name);

/* The item with key `key`, or NULL. */
const mg_dcp_item *mg_dcp_find(const mg_dcp_meta *m, const char *key);
/* Elements of a box or shape of ndim entries. */
int64_t mg_dcp_volume(int ndim, const int64_t *len);

/* The .metadata pickle of m (malloc'd into *out, *out_len bytes; caller frees). */
mg_status mg_dcp_meta_dump(const mg_dcp_meta *m, uint8_t **out, size_t *out_len);

/* One writer's items and chunks (storage included) as flat bytes (malloc'd into *out) for
 * the writer of the .metadata, which merges each into its meta: a new key is added, a
 * known one gains the chunks (its kind, dtype and shape must agree: MG_ERR_FORMAT naming
 * label and the byte offset otherwise). The merged meta's coverage is the caller's. */
mg_status mg_dcp_meta_pack(const mg_dcp_meta *m, uint8_t **out, size_t *out_len);
mg_status mg_dcp_meta_merge(mg_dcp_meta *m, const uint8_t *data, size_t len, const char *label);

/* ---- writing data files ---- */

/* Appends one stored item to a data file: zeros up to a 64-byte offset, then the torch.save
 * archive of root (mg_torch_save_to with so, which may be NULL); c->offset and c->length
 * are set to where it lies. */
mg_status mg_dcp_write_item(mg_out *out, const mg_pk_obj *root, const mg_torch_save_opts *so,
                            mg_dcp_chunk *c);
/* Writes m's .metadata pickle to path (atomically). */
mg_status mg_dcp_write_meta(const mg_dcp_meta *m, const char *path);

/* ---- checkpoint folders ---- */

typedef struct mg_dcp_dir mg_dcp_dir;

/* Opens DIR/.metadata and maps the data files it names; resolves every tensor chunk. */
mg_status mg_dcp_dir_open(mg_dcp_dir **d, const char *dir);
void mg_dcp_dir_close(mg_dcp_dir *d); /* accepts NULL */
const mg_dcp_meta *mg_dcp_dir_meta(const mg_dcp_dir *d);
/* The stored bytes of chunk c (a blob, or a chunk's whole torch.save archive). */
const uint8_t *mg_dcp_dir_bytes(const mg_dcp_dir *d, const mg_dcp_chunk *c);
/* The mapping of data file i (its size in *size) and a read-only descriptor of it (-1 when
 * it could not be opened a second time). */
const uint8_t *mg_dcp_dir_file(const mg_dcp_dir *d, size_t i, size_t *size, int *fd);

/* Copies the box [off, off + len) of item it's global tensor (C order, it->dtype) from its
 * resolved chunks (chunk->data set, as by mg_dcp_dir_open) into dst. The chunks cover the
 * tensor (mg_dcp_meta_load checks it), so every element of the box is written. */
void mg_dcp_read_box(const mg_dcp_item *it, const int64_t *off, const int64_t *len, void *dst);

/* Checks one stored tensor item: bytes[0..len) must be a torch.save archive of one
 * contiguous tensor of dtype dt and shape len_[0..ndim); *data = its first element.
 * label names the item in errors ("FILE: offset N: KEY"). Used by mg_dcp_dir_open and the
 * fuzz target. */
mg_status mg_dcp_chunk_check(const uint8_t *bytes, size_t len, mg_tdtype dt, int ndim,
                             const int64_t *shape, const char *label, const uint8_t **data);

#endif /* MG_DCP_H */

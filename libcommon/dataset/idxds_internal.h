/* idxds_internal.h — private helpers shared by idxds_reader.c, idxds_writer.c,
 * idxds_merge.c, idxds_spill.c and idxds_view.c. Never included by the tools.
 *
 * Contract:
 *   - MG_IDX_MAGIC / MG_IDX_HEADER_SIZE: the fixed 34-byte .idx header (docs/FORMATS.md §1.2).
 *   - mg_idx_path_alloc(): malloc'd "prefix" + "suffix" (caller frees); NULL with
 *     MG_ERR_NOMEM set on failure.
 *   - mg_idx_is_multimodal(): whether an opened dataset carries a modes array (inferred from
 *     the .idx size at open).
 *   - mg_spill (idxds_spill.c): an append-only byte array kept in a buffer of at most `cap`
 *     bytes and spilled to an unlinked temporary file beyond that; streamed back in order.
 *   - mg_idx_view (idxds_view.c): a dataset mapped and validated like mg_idx_open, with its
 *     arrays left in the mapping (unaligned little-endian bytes), for streaming.
 *   - mg_idx_writer_set_spill_bytes(): the writer's per-array buffer size (tests use a tiny
 *     one to force spilling); a multiple of 8, at least 8. mg_idx_writer_spilled_bytes():
 *     how much went to spill files (tests check that spilling happened, or did not).
 *   - idxds_convert.c: the range check and narrowing of token ids (declared below).
 *   - The .idx/.bin bytes are little-endian; the code stores host integers directly, so it
 *     refuses to compile on a big-endian host.
 */
#ifndef MG_IDXDS_INTERNAL_H
#define MG_IDXDS_INTERNAL_H

#include "mg/file.h"
#include "mg/idxds.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "the indexed dataset code assumes a little-endian host");

#define MG_IDX_MAGIC "MMIDIDX\0\0"
#define MG_IDX_MAGIC_SIZE 9
#define MG_IDX_HEADER_SIZE 34

char *mg_idx_path_alloc(const char *prefix, const char *suffix);

/* ---- idxds_convert.c: ids -> dtype, as numpy.array(ids, dtype) ---- */

/* Whether numpy.array([v], dtype) keeps v (numpy >= 2 raises otherwise); for all n ids. */
int mg_idx_id_fits(mg_dtype dt, int64_t v);
int mg_idx_ids_fit(mg_dtype dt, const int64_t *t, size_t n);
/* The n ids (all fitting) as dtype values at dst (n * element size bytes, unaligned). */
void mg_idx_ids_convert(mg_dtype dt, const int64_t *src, size_t n, uint8_t *dst);
/* mg_idx_ids_convert and mg_idx_ids_fit in one pass where the CPU allows: 1 if all ids fit
 * (dst written as mg_idx_ids_convert writes it), 0 if not (dst then holds anything). */
int mg_idx_ids_convert_checked(mg_dtype dt, const int64_t *src, size_t n, uint8_t *dst);
/* The portable loops (the reference of the tests) and, on x86-64 with GCC or clang, the
 * AVX-512 path for uint16 and int32 (0 when the dtype or the CPU does not have one). */
void mg_idx_ids_convert_portable(mg_dtype dt, const int64_t *src, size_t n, uint8_t *dst);
#if defined(__x86_64__) && defined(__GNUC__)
#define MG_IDX_AVX512 1
int mg_idx_ids_convert_avx512(mg_dtype dt, const int64_t *src, size_t n, uint8_t *dst);
/* mg_idx_ids_convert_checked's AVX-512 path: 0 when there is none, else 1 with *fit set. */
int mg_idx_ids_convert_checked_avx512(mg_dtype dt, const int64_t *src, size_t n, uint8_t *dst,
                                      int *fit);
#else
#define MG_IDX_AVX512 0
#endif

/* ---- idxds_spill.c ---- */

#define MG_SPILL_DEFAULT_CAP ((size_t)1 << 20)

typedef struct {
    char *name;          /* spill file name without ".tmp.XXXXXX" (owned) */
    uint8_t *buf;        /* the in-memory tail: `used` of `alloc` bytes, alloc <= cap */
    size_t used, alloc, cap;
    int fd;              /* the unlinked spill file, -1 until the first spill */
    uint64_t file_bytes; /* bytes in the spill file (they precede buf) */
} mg_spill;

/* Chunk consumer for mg_spill_stream: len bytes of whole elements. */
typedef mg_status (*mg_spill_fn)(void *ctx, const void *data, size_t len);

/* name = prefix + tag; allocates nothing else (the buffer grows on demand). */
mg_status mg_spill_init(mg_spill *s, const char *prefix, const char *tag);
/* Closes (so deletes) the spill file; accepts any s passed to mg_spill_init, even a failed one. */
void mg_spill_free(mg_spill *s);
void mg_spill_set_cap(mg_spill *s, size_t bytes);
/* Appends len bytes from data, or len zero bytes if data is NULL. */
mg_status mg_spill_append(mg_spill *s, const void *data, size_t len);
mg_status mg_spill_stream(const mg_spill *s, mg_spill_fn fn, void *ctx);
static inline uint64_t mg_spill_size(const mg_spill *s) { return s->file_bytes + s->used; }

/* ---- idxds_view.c ---- */

typedef struct {
    char *path; /* "P.idx" (owned) */
    mg_map idx, bin;
    mg_dtype dtype;
    size_t elem_size;
    uint64_t n_sequences, n_doc_indices;
    int multimodal;
} mg_idx_view;

mg_status mg_idx_view_open(mg_idx_view *v, const char *prefix);
void mg_idx_view_close(mg_idx_view *v); /* accepts a view whose open failed */
const uint8_t *mg_idx_view_lengths(const mg_idx_view *v);   /* int32 [S] */
const uint8_t *mg_idx_view_doc_index(const mg_idx_view *v); /* int64 [D] */
const uint8_t *mg_idx_view_modes(const mg_idx_view *v);     /* int8 [S] or NULL */

/* ---- idxds_writer.c ---- */

void mg_idx_writer_set_spill_bytes(mg_idx_writer *w, size_t bytes);
/* Bytes the writer has moved to its spill files so far (0 for a small dataset). */
uint64_t mg_idx_writer_spilled_bytes(const mg_idx_writer *w);

static inline int mg_idx_is_multimodal(const mg_idx *d) { return d->modes != NULL; }

#endif

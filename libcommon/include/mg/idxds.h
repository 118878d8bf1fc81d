/* mg/idxds.h — Megatron indexed datasets (.bin/.idx, "MMIDIDX" version 1).
 *
 * Byte layout: docs/FORMATS.md §1 (megatron/core/datasets/indexed_dataset.py).
 * A dataset is a path prefix P with files P.bin (raw tokens, little-endian) and P.idx.
 *
 * Writer contract (mirrors IndexedDatasetBuilder):
 *   - mg_idx_writer_create(prefix, dtype): opens P.bin and P.idx as atomic outputs
 *     (mg/file.h): nothing appears under the final names until mg_idx_writer_finish().
 *   - add_document(tokens, n_tokens, lengths, n_lengths) == Megatron add_document: writes the
 *     tokens, appends the sequence lengths, appends one document index. An empty document
 *     (n_lengths == 0) appends a document index equal to the previous one.
 *     sum(lengths) must equal n_tokens (MG_ERR_ARG otherwise).
 *   - tokens are int64 values converted to the dataset dtype exactly like
 *     numpy.array(x, dtype) on a list would (values out of range are MG_ERR_LIMIT naming the
 *     value, since numpy >= 2 raises there).
 *   - add_index(prefix) == Megatron add_index: appends another dataset (same dtype required,
 *     MG_ERR_FORMAT naming both otherwise); its .bin is streamed, not loaded. Modes: the output
 *     gets a modes array as soon as one added dataset has one (sequences from plain datasets
 *     or add_document get mode 0), i.e. merge_datasets.py --multimodal for multimodal inputs.
 *   - finish(): writes P.idx (pointers recomputed from lengths), commits P.bin then P.idx.
 *   - free() without finish removes the temporaries.
 *   - Memory is bounded (a few MiB per writer) whatever the number of documents: the index
 *     arrays are buffered and, past 1 MiB each, spilled to temporary files beside P that
 *     are unlinked as soon as they are created (never visible, never left behind);
 *     add_index streams the other dataset's arrays too. Small datasets never spill.
 *
 * Reader contract: mg_idx_open maps both files, validates the header, the sizes against the
 * file lengths, pointers (monotone, consistent with lengths) and document indices
 * (monotone, first 0, last == S), and reports the first inconsistency as MG_ERR_FORMAT
 * naming the file, the byte offset and what was expected. The modes array is detected from
 * the .idx size (34+12S+8D plain, 34+13S+8D with modes). The .idx arrays are copied into
 * aligned memory (in the file they are misaligned), the .bin stays mapped.
 */
#ifndef MG_IDXDS_H
#define MG_IDXDS_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"

/* Megatron DType codes. */
typedef enum {
    MG_DT_UINT8 = 1,
    MG_DT_INT8 = 2,
    MG_DT_INT16 = 3,
    MG_DT_INT32 = 4,
    MG_DT_INT64 = 5,
    MG_DT_FLOAT64 = 6,
    MG_DT_FLOAT32 = 7,
    MG_DT_UINT16 = 8,
} mg_dtype;

/* Bytes per element of a dtype code, 0 for an invalid code. */
size_t mg_dtype_size(int code);
/* numpy name of a dtype code ("uint16"), "invalid" for an invalid code. */
const char *mg_dtype_name(int code);
/* DType.optimal_dtype(vocab_size): UINT16 if vocab_size < 65500, else INT32. */
mg_dtype mg_dtype_for_vocab(int64_t vocab_size);

typedef struct mg_idx_writer mg_idx_writer;

mg_status mg_idx_writer_create(mg_idx_writer **w, const char *prefix, mg_dtype dtype);
/* The same with P.bin written by direct I/O where the filesystem takes it
 * (mg_out_create_direct): for a dataset that is not read back right away. */
mg_status mg_idx_writer_create_direct(mg_idx_writer **w, const char *prefix, mg_dtype dtype);
mg_status mg_idx_writer_add_document(mg_idx_writer *w, const int64_t *tokens, size_t n_tokens,
                                     const int32_t *lengths, size_t n_lengths);
mg_status mg_idx_writer_add_index(mg_idx_writer *w, const char *prefix);
mg_status mg_idx_writer_finish(mg_idx_writer *w);
void mg_idx_writer_free(mg_idx_writer *w); /* accepts NULL */
/* Counts so far. */
uint64_t mg_idx_writer_sequences(const mg_idx_writer *w);
uint64_t mg_idx_writer_documents(const mg_idx_writer *w);
uint64_t mg_idx_writer_tokens(const mg_idx_writer *w);

typedef struct mg_idx {
    mg_dtype dtype;
    size_t elem_size;
    uint64_t n_sequences;     /* S */
    uint64_t n_doc_indices;   /* D (documents + 1) */
    const int32_t *lengths;   /* [S], aligned copy of the .idx array (owned by the mg_idx) */
    const int64_t *pointers;  /* [S] */
    const int64_t *doc_index; /* [D] */
    const int8_t *modes;      /* [S] if multimodal, else NULL */
    const uint8_t *bin;       /* mapped .bin */
    uint64_t bin_size;
    void *priv_;
} mg_idx;

/* Opens and fully validates prefix.idx/.bin. */
mg_status mg_idx_open(mg_idx *d, const char *prefix);
void mg_idx_close(mg_idx *d);
/* Token j of sequence i, widened to int64. */
int64_t mg_idx_token(const mg_idx *d, uint64_t seq, uint64_t j);

/* tools/merge_datasets.py: every regular file in dir must have a .bin/.idx sibling pair;
 * prefixes sorted by byte order; the output takes the first dataset's dtype. */
mg_status mg_idx_merge_dir(const char *dir, const char *out_prefix);

#endif

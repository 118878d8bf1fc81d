/* gptds_internal.h — what gptds.c, gptds_data.c and gptds_cache.c share: the GPTDataset
 * struct and the index caches of --data-cache-path (megatron-core 0.16.1
 * GPTDataset._build_document_sample_shuffle_indices and BlendedDataset._build_indices).
 * Never included by the tools.
 *
 * Cache contract (facts: docs/FORMATS.md §3.10; code: gptds_cache.c):
 *   - Names: "{md5(description)}-{GPTDataset|MockGPTDataset|BlendedDataset}-{split}-"
 *     + description.txt | document_index.npy | sample_index.npy | shuffle_index.npy
 *     (BlendedDataset: dataset_index.npy | dataset_sample_index.npy), where description is
 *     json.dumps(unique_identifiers, indent=4) byte for byte.
 *   - Directory: mg_gpt_cache.dir; NULL: "<prefix>/cache/GPTDataset_indices" for a
 *     GPTDataset of an .idx (Megatron's default), nothing for a blend or mock data; "":
 *     nothing (Python treats the empty path as false).
 *   - When every file of a dataset exists (Megatron's os.path.isfile test) the indices are
 *     read from them; otherwise they are built and written (temporary file + rename each,
 *     directories created as os.makedirs does). A cached file that does not match (its
 *     description differs from ours, a dtype Megatron would not write there, a shape other
 *     than the one this dataset must have, a value that would index out of bounds, a broken
 *     .npy) is refused with MG_ERR_FORMAT naming the file — Megatron would use it (and crash
 *     or train on something else); delete the file to rebuild it.
 */
#ifndef MG_GPTDS_INTERNAL_H
#define MG_GPTDS_INTERNAL_H

#include "mg/gptds.h"
#include "mg/strbuf.h"

struct mg_gptds {
    mg_gpt_source src;
    mg_gptds_config cfg;
    int64_t epochs;
    int separate;
    int32_t *doc_index;
    size_t n_doc_index;
    int64_t *sample_index; /* rows x 2 */
    size_t rows;
    int64_t *shuffle_index; /* rows - 1 */
    int64_t num_samples;    /* as requested (< 0: None) */
};

/* The number of samples helpers.cpp build_sample_idx makes (gptds.c). */
int64_t mg_gpt_sample_count(int64_t epochs, int64_t tokens_per_epoch, int64_t seq_length,
                            int drop_last, int extra);

/* What every dataset description of one build shares (the config's key attributes). */
typedef struct mg_gpt_desc_ctx {
    const mg_gpt_cache *cache;
    uint64_t seed;
    int64_t seq_length;
    const char *split;             /* config.split; NULL with per-split blends */
    const mg_split_matrix *matrix; /* config.split_matrix; NULL with per-split blends */
    int mock;                      /* MockGPTDataset (dataset_path null, no default dir) */
} mg_gpt_desc_ctx;

/* One GPTDataset's identity (mg_gptds_config.ident). */
struct mg_gptds_ident {
    const mg_gpt_desc_ctx *ctx;
    const char *dataset_path; /* the prefix (NULL for mock data) */
    int index_split;
};

typedef mg_status (*mg_gptds_build_fn)(mg_gptds *ds, uint64_t beg, uint64_t end,
                                       int64_t num_samples, mg_nprandom *rs);

/* The indices of ds (ds->src, ds->cfg set; cfg.ident not NULL): read from the cache, or
 * built by build (gptds.c's own builder) and written to it. Sets ds->num_samples. */
mg_status mg_gptds_cache_indices(mg_gptds *ds, uint64_t beg, uint64_t end, int64_t num_samples,
                                 mg_nprandom *rs, mg_gptds_build_fn build);

/* One BlendedDataset's identity. */
typedef struct mg_blend_desc {
    const mg_gpt_desc_ctx *ctx;   /* NULL: no cache */
    int index_split;
    char *const *prefixes;        /* [n], the datasets' dataset_path */
    mg_gptds *const *ds;          /* [n] */
    size_t n;
    const double *weights;        /* self.weights (normalized); NULL: exhaustive */
    const int64_t *lengths;       /* [n] dataset lengths: the weights when exhaustive */
    int64_t size;                 /* < 0: None */
} mg_blend_desc;

/* *loaded = 1 when the cache held both indices of count entries (read into the arrays),
 * 0 when they must be built (then call mg_blend_cache_save). */
mg_status mg_blend_cache_load(const mg_blend_desc *b, int16_t *ds_index, int64_t *ds_sample,
                              uint64_t count, int *loaded);
mg_status mg_blend_cache_save(const mg_blend_desc *b, const int16_t *ds_index,
                              const int64_t *ds_sample, uint64_t count);

/* The JSON text being built (t.nomem: an allocation failed) and json.dumps(indent=4)'s
 * nesting state. */
typedef struct mg_jbuf {
    mg_strbuf t;
    int depth;
    int items[8]; /* whether the container open at each depth has items */
} mg_jbuf;
void mg_jbuf_free(mg_jbuf *b);

/* The descriptions (gptds_desc.c): out is initialised here and freed by the caller. */
mg_status mg_gptds_description(const mg_gpt_desc_ctx *x, const char *dataset_path,
                               int64_t num_samples, int index_split, mg_jbuf *out);
mg_status mg_blend_description(const mg_blend_desc *d, mg_jbuf *out);

/* Python's repr(float) into out[32] (shortest round-trip digits; json.dumps spelling of
 * nan/inf: NaN, Infinity, -Infinity). */
void mg_py_float_repr(double v, char out[32]);

#endif

/* mg/gptds.h — Megatron's GPT sample order: split ranges, document/sample/shuffle indices,
 * blends, and the tokens of a sample (megatron-core GPTDataset, BlendedDataset,
 * BlendedMegatronDatasetBuilder, helpers.cpp).
 *
 * Facts: docs/FORMATS.md §3-§4. Everything here reproduces megatron-core
 * 0.16.1 exactly (same numbers, same numpy RandomState stream, same float/double rounding),
 * so that for the same files, --split, --seq-length, --seed and sample counts the samples are
 * Megatron's, in Megatron's order. The index caches (--data-cache-path, Megatron's .npy
 * files and descriptions) are read and written as megatron-core does (section 2b). Not
 * covered: --multiple-validation-sets.
 *
 * Layers:
 *   1. Pure functions (split string, numpy sum/normalize, epochs, the three GPT indices, the
 *      blend sizes and blending indices) — each documented below with its Megatron name.
 *   2. mg_gptds: one GPTDataset (one low-level dataset — an .idx or the mock documents of
 *      MockGPTLowLevelDataset — one split range, num_samples or "None").
 *   3. mg_gpt_data: what BlendedMegatronDatasetBuilder(GPTDataset, sizes, config).build()
 *      returns for `blend` + `split` (--data-path) or `blend_per_split` (--train-data-path
 *      ...): per split either one GPTDataset or a BlendedDataset.
 * Index storage: document index int32 (as Megatron), sample index int64 pairs, shuffle index
 * int64 (Megatron: int32-or-int64 / uint32-or-int64; the values are the same).
 */
#ifndef MG_GPTDS_H
#define MG_GPTDS_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"
#include "mg/idxds.h"
#include "mg/nprandom.h"
#include "mg/tokenizer.h"

enum { MG_SPLIT_TRAIN = 0, MG_SPLIT_VALID = 1, MG_SPLIT_TEST = 2, MG_SPLIT_COUNT = 3 };

/* "train" / "valid" / "test" (Megatron's Split names). */
const char *mg_split_name(int k);

/* ---- 1. pure functions ------------------------------------------------------------- */

/* numpy.sum of a float64 array (pairwise summation, blocks of 8). */
double mg_np_sum(const double *a, size_t n);
/* megatron.core.datasets.utils.normalize: out[i] = w[i] / numpy.sum(w) (out may be w). */
void mg_np_normalize(const double *w, size_t n, double *out);

/* parse_and_normalize_split + convert_split_vector_to_split_matrix: the numbers are the
 * matches of [.0-9]+ in split (Python float() each; "1.2.3" or "." are MG_ERR_ARG), padded
 * with 0 to three (more than three is MG_ERR_ARG), normalized; bookends (a, b) as running
 * double sums starting at 0; a split with b <= a is absent. A zero sum is MG_ERR_ARG. */
typedef struct mg_split_matrix {
    int present[MG_SPLIT_COUNT];
    double beg[MG_SPLIT_COUNT], end[MG_SPLIT_COUNT];
} mg_split_matrix;
mg_status mg_split_parse(const char *split, mg_split_matrix *m);

/* Sequence range [beg, end) of split k (present) over n_seq sequences:
 * int(round(bookend * float(n_seq))) with round-half-to-even. */
void mg_split_range(const mg_split_matrix *m, int k, uint64_t n_seq, uint64_t *beg,
                    uint64_t *end);

/* GPTDataset._get_num_epochs: smallest E with E*T >= num_samples*S + extra; E = 1 when
 * num_samples < 0 ("None"). T == 0 with samples requested is MG_ERR_ARG (Megatron loops
 * forever). */
mg_status mg_gpt_num_epochs(int64_t tokens_per_epoch, int64_t num_samples, int64_t seq_length,
                            int extra, int64_t *epochs);

/* Whether the last epoch is shuffled separately, and the samples of the first E-1 epochs
 * (num_samples_sans_final_epoch); *separate = 0 and *sans = 0 when E == 1. MG_ERR_ARG when
 * Megatron's asserts on the final-epoch count would fail. */
mg_status mg_gpt_separate_final_epoch(int64_t tokens_per_epoch, int64_t num_samples,
                                      int64_t seq_length, int extra, int64_t epochs,
                                      int *separate, int64_t *sans);

/* _build_document_index over documents beg..beg+n-1: out[epochs*n] (int32). */
void mg_gpt_build_document_index(mg_nprandom *rs, int32_t beg, size_t n, int64_t epochs,
                                 int separate_final_epoch, int32_t *out);

/* helpers.cpp build_sample_idx: *rows = num_samples + 1 pairs (document-index position,
 * token offset) in a malloc'd array the caller frees. The non-drop sample count is computed
 * in single precision, as the C++ does; integer division truncates toward zero, so an empty
 * split gives 0 samples (the C++ asserts are compiled out in megatron-core's wheel).
 * MG_ERR_ARG for seq_length < 1. */
mg_status mg_gpt_build_sample_index(const int32_t *seq_lengths, const int32_t *doc_index,
                                    size_t n_doc_index, int64_t seq_length, int64_t epochs,
                                    int64_t tokens_per_epoch, int drop_last, int extra,
                                    int64_t **pairs, size_t *rows);

/* _build_shuffle_index(n, total): arange(0, n) shuffled, then arange(n, total) shuffled. */
void mg_gpt_build_shuffle_index(mg_nprandom *rs, size_t n, size_t total, int64_t *out);

/* _get_size_per_split_per_dataset for one split size:
 * int(ceil(ceil(size * w) * (1 + surplus))) in double. */
int64_t mg_blend_dataset_size(int64_t size, double weight, double surplus);

/* helpers.cpp build_blending_indices (weights as given, not normalized here); size entries
 * into each output. MG_ERR_NOMEM is the only failure. */
mg_status mg_blend_build_indices(const double *weights, size_t n, int64_t size,
                                 int16_t *dataset_index, int64_t *dataset_sample_index);
/* helpers.cpp build_exhaustive_blending_indices: sum(sizes) entries (sizes > 0). */
mg_status mg_blend_build_exhaustive(const int64_t *sizes, size_t n, int16_t *dataset_index,
                                    int64_t *dataset_sample_index);

/* ---- 2. one GPTDataset -------------------------------------------------------------- */

/* The low-level dataset a GPTDataset reads: n_sequences lengths (int32, borrowed) and token
 * j < lengths[seq] of sequence seq. ctx and lengths are borrowed and must outlive every
 * dataset built on the source. */
typedef struct mg_gpt_source {
    uint64_t n_sequences;
    const int32_t *lengths;
    int64_t (*token)(const void *ctx, uint64_t seq, uint64_t j);
    const void *ctx;
} mg_gpt_source;

/* The source view of an opened indexed dataset (ctx = idx). */
mg_gpt_source mg_gpt_source_of_idx(const mg_idx *idx);

/* megatron-core's MockGPTLowLevelDataset: 100000 documents whose lengths are
 * numpy.random.default_rng(0).integers(1, 4096, size=100000, dtype=int32) (mg/npgenerator.h);
 * document of length L holds (1, 2, ..., L-1) % vocab_size, then eod. vocab_size is the
 * tokenizer's (unpadded) vocab_size and must be positive (MG_ERR_ARG). */
#define MG_GPT_MOCK_DOCUMENTS 100000
#define MG_GPT_MOCK_MAX_LENGTH 4096
typedef struct mg_gpt_mock mg_gpt_mock;
mg_status mg_gpt_mock_create(mg_gpt_mock **out, int64_t vocab_size, int64_t eod);
void mg_gpt_mock_free(mg_gpt_mock *m); /* accepts NULL */
/* The source view of m (borrowed: m must outlive its users). */
mg_gpt_source mg_gpt_mock_source(const mg_gpt_mock *m);

typedef struct mg_gptds_config {
    uint64_t seed;       /* --seed (random_seed) */
    int64_t seq_length;  /* --seq-length */
    int add_extra_token; /* add_extra_token_to_sequence (Megatron: always 1) */
    int drop_last;       /* 1 except valid split with drop_last_partial_validation_sequence=0 */
    /* cache identity, set by mg_gpt_data (NULL: indices built in memory only); borrowed
     * during create */
    const struct mg_gptds_ident *ident;
} mg_gptds_config;

typedef struct mg_gptds mg_gptds;

/* GPTDataset(idx, indices = [beg, end), num_samples (< 0: None)). idx is borrowed and must
 * outlive the dataset. */
mg_status mg_gptds_create(mg_gptds **out, const mg_idx *idx, uint64_t beg, uint64_t end,
                          int64_t num_samples, const mg_gptds_config *cfg);
/* The same over any low-level dataset (copied; what it points to stays borrowed). */
mg_status mg_gptds_create_source(mg_gptds **out, const mg_gpt_source *src, uint64_t beg,
                                 uint64_t end, int64_t num_samples, const mg_gptds_config *cfg);
void mg_gptds_free(mg_gptds *ds); /* accepts NULL */

uint64_t mg_gptds_len(const mg_gptds *ds); /* len(sample_index) - 1 */
int64_t mg_gptds_epochs(const mg_gptds *ds);
int mg_gptds_separate_final_epoch(const mg_gptds *ds);
/* The indices (owned by ds). */
const int32_t *mg_gptds_document_index(const mg_gptds *ds, size_t *n);
const int64_t *mg_gptds_sample_index(const mg_gptds *ds, size_t *rows); /* rows x 2 */
const int64_t *mg_gptds_shuffle_index(const mg_gptds *ds, size_t *n);

/* Tokens of sample i (GPTDataset._query_document_sample_shuffle_indices): seq_length +
 * add_extra_token values into out, padded with pad_id. i >= len is MG_ERR_ARG. */
mg_status mg_gptds_sample(const mg_gptds *ds, uint64_t i, int64_t pad_id, int64_t *out);

/* ---- 2b. index caches (--data-cache-path) --------------------------------------------- */

/* Where mg_gpt_data keeps Megatron's index caches, and the tokenizer part of the dataset
 * descriptions they are named after (rules: libcommon/gptds_internal.h). */
typedef struct mg_gpt_cache {
    const char *dir;  /* --data-cache-path; NULL: Megatron's default (<prefix>/cache/
                       * GPTDataset_indices for GPTDatasets, blends not cached); "": none */
    char **tokenizer; /* 2 x n_tokenizer strings: key, value (NULL value: JSON null); owned */
    size_t n_tokenizer;
} mg_gpt_cache;

/* The tokenizer's unique_identifiers as megatron-core 0.16.1 (build_tokenizer +
 * MegatronTokenizerText) makes them for these flags, with every other tokenizer flag at its
 * default (--tokenizer-hf-use-fast, --trust-remote-code, ... off); no --tokenizer-type is
 * taken as NullTokenizer with --vocab-size. MG_ERR_UNSUPPORTED for another type. */
mg_status mg_gpt_cache_set_tokenizer(mg_gpt_cache *c, const mg_tok_opts *t);
void mg_gpt_cache_clear_tokenizer(mg_gpt_cache *c); /* frees c->tokenizer */

/* ---- 3. the builder: --data-path + --split -------------------------------------------- */

/* get_blend_from_list: odd count -> all prefixes, no weights; even count -> (weight, prefix)
 * pairs, unless a weight is not a number, in which case all are prefixes (Megatron's
 * any()/all() iterator rule: after the first non-number every later weight must also fail,
 * else MG_ERR_ARG). Prefixes are whitespace-stripped. */
typedef struct mg_gpt_blend {
    char **prefixes;
    double *weights; /* NULL when no weights */
    size_t n;
} mg_gpt_blend;
mg_status mg_gpt_blend_parse(mg_gpt_blend *b, const char *const *args, size_t n_args);
void mg_gpt_blend_clear(mg_gpt_blend *b); /* frees the contents; accepts an empty blend */

typedef struct mg_gpt_data_config {
    const mg_gpt_blend *blend; /* --data-path; borrowed during create; NULL: per split */
    const char *split;         /* --split, e.g. "969, 30, 1" (only with blend) */
    int64_t sizes[MG_SPLIT_COUNT]; /* samples per split; < 0: None */
    uint64_t seed;
    int64_t seq_length;
    int add_extra_token;                   /* 1 in Megatron */
    int drop_last_partial_validation;      /* 1 in Megatron */
    double surplus;                        /* --mid-level-dataset-surplus, 0.005 */
    /* --train/valid/test-data-path when blend is NULL (NULL: split not built) */
    const mg_gpt_blend *blend_per_split[MG_SPLIT_COUNT];
    const mg_gpt_cache *cache; /* NULL: no cache file is read or written */
    /* --mock-data (blend and blend_per_split unused): MockGPTDataset splits, see below */
    int mock;
    int64_t mock_vocab_size, mock_eod; /* tokenizer.vocab_size (unpadded), tokenizer.eod */
} mg_gpt_data_config;

typedef struct mg_gpt_data mg_gpt_data;

/* Opens every prefix and builds every present split: one prefix without weight -> plain
 * GPTDataset with num_samples = size; weights -> GPTDatasets of size
 * ceil(ceil(size*w)*(1+surplus)) blended by build_blending_indices over sum(ceil(size*w))
 * samples (weights normalized twice, as the builder and BlendedDataset do); several prefixes
 * without weights -> one-epoch GPTDatasets blended by their lengths (exhaustive if size is
 * None). Per-split blends: split k alone over whole datasets with the same rules, except
 * that one prefix is a plain GPTDataset even with a weight. A weighted blend needs
 * sizes >= 0 (Megatron: TypeError). A blend that draws more samples from a dataset than it
 * has is MG_ERR_ARG (Megatron's IndexError). Every .idx is opened once per use (a prefix
 * named in two per-split blends is opened twice).
 * Mock (cfg->mock): the builder's mock branch — one MockGPTLowLevelDataset shared by the
 * splits of split "1,1,1" (megatron-core's GPTDatasetConfig replaces any --split by "1,1,1"
 * when there is no blend), a plain MockGPTDataset of num_samples = sizes[k] per split. */
mg_status mg_gpt_data_create(mg_gpt_data **out, const mg_gpt_data_config *cfg);
void mg_gpt_data_free(mg_gpt_data *d); /* accepts NULL */

int mg_gpt_data_has_split(const mg_gpt_data *d, int k);
uint64_t mg_gpt_data_len(const mg_gpt_data *d, int k); /* 0 for an absent split */
/* Number of prefixes of split k, and its GPTDataset for prefix p (NULL if absent). */
size_t mg_gpt_data_n_datasets(const mg_gpt_data *d, int k);
const mg_gptds *mg_gpt_data_dataset(const mg_gpt_data *d, int k, size_t p);
/* Sample i of split k: tokens (seq_length + extra values) and, if dataset_id is not NULL,
 * the index of the split's prefix it came from (0 without a blend). */
mg_status mg_gpt_data_sample(const mg_gpt_data *d, int k, uint64_t i, int64_t pad_id,
                             int64_t *out, int *dataset_id);

#endif

/* preprocess/output.h — the output datasets of a run: PREFIX_{key}_{level}.bin/.idx per key,
 * level "document", or "sentence" with --split-sentences (Megatron's names).
 *
 * With partitions P > 1 (Megatron's round-robin --partitions) each key has P writers: the
 * document of global input line n goes to partition n % P; pp_outputs_finish() finishes the
 * partitions under temporary prefixes "PREFIX_{key}_{level}.part{i}-{pid}", merges them in
 * order 0..P-1 with add_index (as preprocess_data.py does) into the final prefix and removes
 * them. Megatron keeps its partition files; we do not.
 *
 * Nothing appears under a final name unless pp_outputs_finish() succeeds; pp_outputs_free()
 * without a successful finish removes every temporary file.
 */
#ifndef MG_PP_OUTPUT_H
#define MG_PP_OUTPUT_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"
#include "mg/idxds.h"

typedef struct pp_outputs pp_outputs;

/* direct: the final .bin files by direct I/O (mg_idx_writer_create_direct); partition
 * datasets, read back by the merge, always through the page cache. */
mg_status pp_outputs_create(pp_outputs **o, const char *prefix, const char *const *keys,
                            size_t n_keys, const char *level, size_t partitions, mg_dtype dtype,
                            int direct);
/* Adds the document of global input line `line` for key index k: n ids in n_lens sequences
 * of the given lengths (their sum is n), or an empty document when n_lens == 0 (Megatron
 * add_document(ids, lens) / ([], [])). */
mg_status pp_outputs_add(pp_outputs *o, size_t k, uint64_t line, const int64_t *ids, size_t n,
                         const int32_t *lens, size_t n_lens);
mg_status pp_outputs_finish(pp_outputs *o);
void pp_outputs_free(pp_outputs *o); /* accepts NULL */

/* The final prefix of key k ("PREFIX_text_document"). */
const char *pp_outputs_prefix(const pp_outputs *o, size_t k);

#endif

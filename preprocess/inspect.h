/* preprocess/inspect.h — `mg-preprocess --inspect PREFIX [--decode SPEC] [tokenizer flags]`.
 *
 * Contract:
 *   - Opens PREFIX.bin/.idx with the validating reader (mg/idxds.h mg_idx_open: header magic,
 *     version and dtype; .idx size against the counts; lengths and pointers consistent and
 *     monotone; document indices monotone, first 0, last = the sequence count; .bin size =
 *     the tokens the index describes). The first inconsistency is reported as
 *     "mg-preprocess: error: P.idx: byte OFFSET: ..." and the exit status is 1.
 *   - A consistent dataset: the summary on stdout (dtype, documents, sequences, tokens,
 *     sequence and document length statistics: min, p50, p90, p99, max, mean; percentiles
 *     are nearest-rank: sorted[ceil(p/100 * n) - 1]), exit status 0.
 *   - --decode SPEC: SPEC is a comma-separated list of document indices and ranges
 *     ("0,5,10-12", ranges inclusive); each document is printed after the summary, every
 *     sequence decoded (mg_tokenizer_decode) on its own line(s), under a header line
 *     "=== document D: S sequences, T tokens ===". Needs the tokenizer flags (usage error,
 *     exit 2, otherwise, and for a malformed SPEC or an index >= the document count).
 *     A token id the tokenizer cannot decode is a runtime failure (exit 1) naming the
 *     document, the sequence and the id's position.
 */
#ifndef MG_PP_INSPECT_H
#define MG_PP_INSPECT_H

#include "preprocess.h"

int pp_run_inspect(const struct mg_preprocess_opts *o);

#endif

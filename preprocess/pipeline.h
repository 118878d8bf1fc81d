/* preprocess/pipeline.h — the reading -> tokenizing -> writing pipeline.
 *
 * Threads: one reader (mg_instream lines -> batches), n encoder threads (pp_encoder each,
 * any batch), and the calling thread, which writes batches strictly in input order (a
 * reorder buffer over the batch slots). A fixed number of batch slots (workers + min(workers,
 * 8) + 2) of bounded size circulate: the reader waits for a free slot, so memory does not grow with
 * the corpus. Output bytes do not depend on the number of workers.
 *
 * pp_pipeline_run() returns MG_OK, or the first failure in input order with its message in
 * this thread's mg_last_error(): an invalid line ("FILE:LINE: reason", MG_ERR_FORMAT), a
 * read error (corrupt compressed stream, I/O), or a write error. All threads are joined
 * before it returns.
 */
#ifndef MG_PP_PIPELINE_H
#define MG_PP_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include "encode.h"
#include "mg/instream.h"
#include "mg/progress.h"
#include "output.h"

typedef struct {
    mg_instream *in;       /* read by the reader thread only */
    pp_encoder **encoders; /* one per encoder thread */
    size_t n_workers;
    size_t n_keys;
    pp_outputs *out;       /* written by the calling thread only */
    mg_progress *progress; /* may be NULL */
} pp_pipeline_cfg;

typedef struct {
    uint64_t lines;     /* input lines read */
    uint64_t documents; /* lines written (one document per key each) */
    uint64_t skipped;   /* invalid lines skipped (--skip-invalid) */
    uint64_t tokens;    /* ids written, all keys */
    uint64_t bytes;     /* uncompressed input bytes */
} pp_pipeline_stats;

mg_status pp_pipeline_run(const pp_pipeline_cfg *cfg, pp_pipeline_stats *stats);

#endif

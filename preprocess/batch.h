/* preprocess/batch.h — a batch of consecutive input lines and, once encoded, their ids.
 *
 * The reader fills a batch (pp_batch_add_line), one encoder thread encodes it
 * (encode.c), the writer consumes it in input order, then the batch is reset and reused: its
 * buffers keep their capacity, so memory is bounded by the number of batches in flight
 * times the batch size limit.
 *
 * Lines are stored concatenated in `text` (each followed by a NUL); line i is
 * text[off[i], off[i] + len[i]). Each line keeps its input position (name index + 1-based
 * line number) for messages and its global index (first_line + i) for --partitions.
 *
 * Result of encoding: for line i and key k, the ids are ids.v[end[i*nk+k-1] .. end[i*nk+k])
 * (start 0 for the first) and their sequence lengths seq_len[seq_end[i*nk+k-1] ..
 * seq_end[i*nk+k]) (none for an empty document; several when the value was a list of
 * sentences); a line that was invalid and skipped has status[i] = 1, no ids, no lengths.
 * A batch whose line `fail_line` is invalid without --skip-invalid has failed = 1 and
 * fail_msg set ("FILE:LINE: reason"); lines after it are not encoded.
 */
#ifndef MG_PP_BATCH_H
#define MG_PP_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"
#include "mg/tokenizer.h"

/* Messages kept per batch for skipped lines (only the first 10 of a run are printed). */
#define PP_SKIP_MSGS 10

typedef struct {
    uint64_t seq;        /* batch number in input order */
    uint64_t first_line; /* global index of line 0 (all inputs, skipped lines included) */
    uint64_t bytes;      /* uncompressed input bytes of these lines (newlines included) */
    uint64_t pos;        /* on-disk input bytes consumed after the last line */

    char *text;
    size_t text_len, text_cap;
    size_t *off, *len;
    uint64_t *line_no;
    uint32_t *name_idx;
    size_t n_lines, lines_cap;
    char **names;
    size_t n_names, names_cap;

    size_t n_keys;
    mg_ids ids;
    size_t *end;       /* [n_lines * n_keys] */
    int32_t *seq_len;  /* sequence lengths of all documents, in order */
    size_t n_seq, seq_cap;
    size_t *seq_end;   /* [n_lines * n_keys] */
    uint8_t *status;   /* [n_lines]: 0 ok, 1 skipped */
    size_t ends_cap;
    size_t n_skipped;
    size_t n_skip_msgs;
    char skip_msg[PP_SKIP_MSGS][MG_ERROR_MAX];
    int failed;
    mg_status fail_status;
    size_t fail_line;
    char fail_msg[MG_ERROR_MAX];
} pp_batch;

pp_batch *pp_batch_create(size_t n_keys);
void pp_batch_free(pp_batch *b); /* accepts NULL */
/* Empties the batch for reuse (keeps the buffers). */
void pp_batch_reset(pp_batch *b);
/* Appends one line read at `name`:`line_no` (name copied if it differs from the last). */
mg_status pp_batch_add_line(pp_batch *b, const char *line, size_t len, const char *name,
                            uint64_t line_no);
/* Makes room for the results of all lines (called by the encoder before encoding). */
mg_status pp_batch_prepare_results(pp_batch *b);
/* Appends a sequence length (ids of one sequence: MG_ERR_LIMIT above INT32_MAX). */
mg_status pp_batch_push_seq(pp_batch *b, size_t len);
/* "FILE:LINE" of line i into buf. */
void pp_batch_where(const pp_batch *b, size_t i, char *buf, size_t size);

#endif

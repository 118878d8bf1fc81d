/* mg/megatron_layout.h — the directory layout of a Megatron `torch`-format checkpoint, the one
 * place mg-convert and mg-train learn it from:
 *
 *   DIR/latest_checkpointed_iteration.txt      the tracker: "release" or the iteration N
 *   DIR/release/ or DIR/iter_%07d/             the iteration folder the tracker names
 *       mp_rank_TT/model_optim_rng.pt          tensor rank TT, without pipeline parallelism
 *       mp_rank_TT_PPP/model_optim_rng.pt      tensor rank TT, pipeline rank PPP (PP > 1)
 *
 * Contract (megatron/training/checkpointing.py: read_metadata, get_checkpoint_name,
 * get_checkpoint_tracker_filename):
 *   - The tracker rule is Megatron's read_metadata: the text is stripped of surrounding
 *     whitespace (Python's str.strip over ASCII: space, \t \n \v \f \r and \x1c-\x1f), then
 *     read as a Python int (an optional sign, decimal digits, single underscores between
 *     digits) that must not be negative, or else must be exactly "release" (iteration 0).
 *     Anything else — an empty file, "release2", "12abc", "-3", non-ASCII digits or spaces —
 *     is MG_ERR_FORMAT naming the tracker file. A number beyond int64 is MG_ERR_LIMIT.
 *   - mg_megatron_tracker_read also requires the iteration folder it names to exist
 *     (MG_ERR_NOTFOUND naming that folder and the tracker): Megatron fails there too, when
 *     it opens the rank files. A missing or unreadable tracker is the error of reading it
 *     (MG_ERR_NOTFOUND for a missing one).
 *   - mg_megatron_tracker_write writes "release" or the decimal iteration, no newline (as
 *     Megatron's str(iteration)), atomically (mg_out): write it after the folder it names.
 *   - Folder names are formatted into caller buffers of MG_MEGATRON_NAME_MAX bytes; paths
 *     into buffers of MG_PATH_MAX bytes (mg/file.h), MG_ERR_LIMIT when they do not fit.
 */
#ifndef MG_MEGATRON_LAYOUT_H
#define MG_MEGATRON_LAYOUT_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"

#define MG_MEGATRON_TRACKER "latest_checkpointed_iteration.txt"
#define MG_MEGATRON_RANK_FILE "model_optim_rng.pt"
#define MG_MEGATRON_RANK_PREFIX "mp_rank_" /* every rank folder name starts so */
#define MG_MEGATRON_NAME_MAX 48 /* "iter_%07lld" or "mp_rank_%02lld_%03lld" of any int64 */

typedef struct {
    int64_t iteration; /* 0 for release */
    int release;       /* 1: the folder is "release" */
} mg_megatron_iter;

/* Parses tracker text (len bytes, need not be NUL-terminated); label names it in errors. */
mg_status mg_megatron_tracker_parse(const char *text, size_t len, const char *label,
                                    mg_megatron_iter *it);

/* Reads DIR's tracker, parses it and checks that the iteration folder exists. */
mg_status mg_megatron_tracker_read(const char *dir, mg_megatron_iter *it);

/* Writes DIR's tracker naming it (atomic rename). */
mg_status mg_megatron_tracker_write(const char *dir, const mg_megatron_iter *it);

/* "release" or "iter_%07lld" into name (MG_MEGATRON_NAME_MAX bytes). */
void mg_megatron_iter_name(const mg_megatron_iter *it, char *name);

/* "mp_rank_%02lld" (pipeline 0) or "mp_rank_%02lld_%03lld" (pipeline 1: PP > 1) into name
 * (MG_MEGATRON_NAME_MAX bytes). */
void mg_megatron_rank_name(int64_t tp_rank, int64_t pp_rank, int pipeline, char *name);

/* "ITER/RANK/model_optim_rng.pt" (relative to the checkpoint folder) into rel (cap bytes);
 * MG_ERR_LIMIT when it does not fit. */
mg_status mg_megatron_rank_file(const mg_megatron_iter *it, int64_t tp_rank, int64_t pp_rank,
                                int pipeline, char *rel, size_t cap);

#endif /* MG_MEGATRON_LAYOUT_H */

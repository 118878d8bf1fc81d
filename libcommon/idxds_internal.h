/* idxds_internal.h — private helpers shared by idxds_reader.c, idxds_writer.c and
 * idxds_merge.c. Never included by the tools.
 *
 * Contract:
 *   - MG_IDX_MAGIC / MG_IDX_HEADER_SIZE: the fixed 34-byte .idx header (spec §1.2).
 *   - mg_idx_path_alloc(): malloc'd "prefix" + "suffix" (caller frees); NULL with
 *     MG_ERR_NOMEM set on failure.
 *   - mg_idx_is_multimodal(): whether an opened dataset carries a modes array (inferred from
 *     the .idx size at open).
 *   - The .idx/.bin bytes are little-endian; the code stores host integers directly, so it
 *     refuses to compile on a big-endian host.
 */
#ifndef MG_IDXDS_INTERNAL_H
#define MG_IDXDS_INTERNAL_H

#include "mg/idxds.h"

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__,
               "the indexed dataset code assumes a little-endian host");

#define MG_IDX_MAGIC "MMIDIDX\0\0"
#define MG_IDX_MAGIC_SIZE 9
#define MG_IDX_HEADER_SIZE 34

char *mg_idx_path_alloc(const char *prefix, const char *suffix);

static inline int mg_idx_is_multimodal(const mg_idx *d) { return d->modes != NULL; }

#endif

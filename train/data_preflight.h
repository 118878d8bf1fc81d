/* data_preflight.h — mg-train's check of --data-path before any dataset is built: each
 * prefix must name PREFIX.bin and PREFIX.idx (Megatron's --data-path takes prefixes).
 *
 * Contract:
 *   - mg_train_data_preflight: MG_OK with --mock-data or when every prefix of the blend
 *     (mg_gpt_blend_parse: weights skipped) has its .idx and .bin. Otherwise MG_ERR_ARG
 *     naming the first bad entry and the fix: a PREFIX.bin/PREFIX.idx given for the prefix
 *     ("it takes the prefix: --data-path PREFIX"), a folder ("it takes a prefix; the
 *     prefixes there: ..."), or a missing file (the prefixes its folder holds, if any).
 *     At most 8 prefixes are listed, then their count.
 */
#ifndef MG_TRAIN_DATA_PREFLIGHT_H
#define MG_TRAIN_DATA_PREFLIGHT_H

#include "options.h"

mg_status mg_train_data_preflight(const mg_train_opts *o);

#endif

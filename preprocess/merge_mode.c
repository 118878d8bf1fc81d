/* merge_mode.c — `mg-preprocess --merge --input DIR --output-prefix P`, the equivalent of
 * tools/merge_datasets.py: every dataset in DIR (sorted by name) appended with add_index
 * into P.bin/P.idx (mg_idx_merge_dir). Nothing is left under P.* on failure. */
#include <stdio.h>

#include "mg/cli.h"
#include "mg/idxds.h"
#include "mg/file.h"
#include "preprocess.h"

int pp_run_merge(const struct mg_preprocess_opts *o)
{
    const char *dir = o->inputs[0];
    if (!mg_is_dir(dir)) mg_die(MG_EXIT_FAILURE, "--input %s: not a directory", dir);
    double t0 = mg_now();
    mg_status st = mg_idx_merge_dir(dir, o->output_prefix);
    if (st != MG_OK) mg_die_status(st);
    if (!o->quiet)
        mg_note("merged %s into %s.bin, %s.idx in %.2f s", dir, o->output_prefix,
                o->output_prefix, mg_now() - t0);
    return MG_EXIT_OK;
}

/* main.c — mg-preprocess: Megatron's tools/preprocess_data.py and tools/merge_datasets.py
 * as one C tool. Parses the flags (options.c) and runs the chosen mode. Exit status: 0 done,
 * 1 runtime failure (bad input, I/O), 2 usage error or unsupported feature. */
#include <stdio.h>

#include "inspect.h"
#include "mg/cli.h"
#include "preprocess.h"

int main(int argc, char **argv)
{
    mg_cli_init("mg-preprocess");
    struct mg_preprocess_opts o;
    pp_parse_options(&o, argc, argv);
    int rc;
    if (o.help) {
        pp_print_help();
        rc = MG_EXIT_OK;
    } else if (o.version) {
        mg_cli_print_version();
        rc = MG_EXIT_OK;
    } else {
        rc = o.inspect ? pp_run_inspect(&o) : o.merge ? pp_run_merge(&o) : pp_run_preprocess(&o);
    }
    pp_opts_free(&o);
    return rc;
}

/* train_cmdline.h — for the mg-train unit tests: parses a space-separated command line (no
 * quoting, at most 254 words, 4 KiB) with mg-train's option parser, as if typed after
 * "mg-train". Header-only; not thread-safe (one static buffer). */
#ifndef MG_TEST_TRAIN_CMDLINE_H
#define MG_TEST_TRAIN_CMDLINE_H

#include <stdio.h>
#include <string.h>

#include "options.h"

static mg_status train_cmdline_parse(mg_train_opts *o, const char *cmd)
{
    static char buf[4096], prog[] = "mg-train";
    char *argv[256];
    int argc = 0;
    snprintf(buf, sizeof buf, "%s", cmd);
    argv[argc++] = prog;
    for (char *w = strtok(buf, " "); w && argc < 255; w = strtok(NULL, " ")) argv[argc++] = w;
    argv[argc] = NULL;
    return mg_train_parse(o, argc, argv);
}

#endif

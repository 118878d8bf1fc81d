/* cli.c — die/warn/usage messages, exit codes and flag-value parsing for the tools;
 * see mg/cli.h. */
#include "mg/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char *prog_name = "mg";

void mg_cli_init(const char *prog)
{
    prog_name = prog;
}

const char *mg_cli_prog(void)
{
    return prog_name;
}

static void vreport(const char *kind, const char *fmt, va_list ap)
{
    char msg[MG_ERROR_MAX + 256];
    vsnprintf(msg, sizeof msg, fmt, ap);
    fprintf(stderr, "%s: %s%s\n", prog_name, kind, msg);
    fflush(stderr);
}

void mg_die(int exit_code, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport("error: ", fmt, ap);
    va_end(ap);
    exit(exit_code);
}

void mg_warn(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport("warning: ", fmt, ap);
    va_end(ap);
}

void mg_note(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport("", fmt, ap);
    va_end(ap);
}

void mg_usage_error(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vreport("error: ", fmt, ap);
    va_end(ap);
    fprintf(stderr, "Try '%s --help' for more information.\n", prog_name);
    exit(MG_EXIT_USAGE);
}

int mg_exit_code(mg_status st)
{
    if (st == MG_OK) return MG_EXIT_OK;
    if (st == MG_ERR_ARG || st == MG_ERR_UNSUPPORTED) return MG_EXIT_USAGE;
    return MG_EXIT_FAILURE;
}

void mg_die_status(mg_status st)
{
    const char *msg = mg_last_error();
    if (!*msg) msg = mg_strerror(st);
    if (st == MG_ERR_UNSUPPORTED) {
        fprintf(stderr, "%s: %s\n", prog_name, msg);
        exit(mg_exit_code(st));
    }
    mg_die(mg_exit_code(st), "%s", msg);
}

int mg_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out)
{
    if (!s || !*s) return -1;
    char *end = NULL;
    errno = 0;
    long long v = strtoll(s, &end, 10);
    if (errno || *end || v < min || v > max) return -1;
    *out = (int64_t)v;
    return 0;
}

double mg_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

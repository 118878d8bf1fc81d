/* cli.c — die/warn/usage messages, exit codes and flag-value parsing for the tools;
 * see mg/cli.h. */
#include "mg/cli.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mg/version.h"

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

/* The features whose built flag is `built`, comma-separated, or "(none)". */
static void print_features(const char *label, int built)
{
    size_t n, shown = 0;
    const mg_feature *f = mg_features(&n);
    printf("%s:", label);
    for (size_t i = 0; i < n; i++)
        if (f[i].built == built) printf("%s %s", shown++ ? "," : "", f[i].name);
    printf("%s\n", shown ? "" : " (none)");
}

void mg_cli_print_version(void)
{
    printf("%s (mgtools) %s\n", prog_name, MG_VERSION);
    printf("revision: %s\n", mg_revision());
    print_features("built with", 1);
    print_features("built without", 0);
}

/* 1 if name is in the NULL-terminated list (NULL: empty). */
static int listed(const char *const *list, const char *name)
{
    for (; list && *list; list++)
        if (strcmp(*list, name) == 0) return 1;
    return 0;
}

/* Every name of a path list must be a flag of the table (a typo would lose completion). */
static void check_listed(const mg_argv_spec *spec, const char *const *list)
{
    for (; list && *list; list++) {
        size_t i = 0;
        while (i < spec->n && strcmp(spec->flags[i].name, *list) != 0) i++;
        MG_ASSERT(i < spec->n);
    }
}

void mg_cli_list_flags(const mg_argv_spec *spec)
{
    static const char *const nargs[] = {
        [MG_ARGV_SWITCH] = "0", [MG_ARGV_ONE] = "1", [MG_ARGV_LIST] = "+", [MG_ARGV_ANY] = "*"};
    check_listed(spec, spec->files);
    check_listed(spec, spec->dirs);
    if (spec->help >= 0) printf("-h 0\n");
    for (size_t i = 0; i < spec->n; i++) {
        const mg_argv_flag *f = &spec->flags[i];
        const char *value = listed(spec->dirs, f->name)    ? "dir"
                            : listed(spec->files, f->name) ? "file"
                                                           : "text";
        if (f->nargs == MG_ARGV_SWITCH) printf("%s 0\n", f->name);
        else printf("%s %s %s\n", f->name, nargs[f->nargs], value);
    }
}

double mg_now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

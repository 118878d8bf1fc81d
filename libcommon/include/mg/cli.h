/* mg/cli.h — helpers for the tools' command-line layer (mg-preprocess, mg-convert, mg-train).
 *
 * Contract:
 *   - This is the only libcommon module (with mg/progress.h) that prints or exits; library
 *     modules never include it. The tools call mg_cli_init(argv[0]-independent name) first.
 *   - Messages go to stderr as "<prog>: error: <message>", "<prog>: warning: <message>",
 *     or, for MG_ERR_UNSUPPORTED, "<prog>: <message>" (the library message already reads
 *     "not supported yet: X").
 *   - Exit codes shared by all tools: MG_EXIT_OK 0, MG_EXIT_FAILURE 1 (runtime failure: bad
 *     input, I/O), MG_EXIT_USAGE 2 (bad flags, unsupported feature).
 *   - The program name is kept in a static set once at start-up, before any thread starts
 *     (the only mutable global; read-only afterwards).
 */
#ifndef MG_CLI_H
#define MG_CLI_H

#include <stdint.h>

#include "mg/argv.h"
#include "mg/error.h"

#define MG_VERSION "0.1.0"

enum { MG_EXIT_OK = 0, MG_EXIT_FAILURE = 1, MG_EXIT_USAGE = 2 };

/* Sets the name used in messages ("mg-preprocess"). Call once, before threads start. */
void mg_cli_init(const char *prog);
/* The name given to mg_cli_init ("mg" before). */
const char *mg_cli_prog(void);

/* Prints "<prog>: error: <fmt...>" and exits with exit_code. */
__attribute__((noreturn, format(printf, 2, 3))) void mg_die(int exit_code, const char *fmt, ...);
/* Prints "<prog>: warning: <fmt...>". */
__attribute__((format(printf, 1, 2))) void mg_warn(const char *fmt, ...);
/* Prints "<prog>: <fmt...>" (plain informational line on stderr). */
__attribute__((format(printf, 1, 2))) void mg_note(const char *fmt, ...);

/* Usage error: prints "<prog>: error: <fmt...>" and "Try '<prog> --help' for more
 * information.", exits with MG_EXIT_USAGE. */
__attribute__((noreturn, format(printf, 1, 2))) void mg_usage_error(const char *fmt, ...);

/* The exit code a library status maps to: MG_ERR_ARG and MG_ERR_UNSUPPORTED -> 2,
 * other failures -> 1, MG_OK -> 0. */
int mg_exit_code(mg_status st);
/* Reports this thread's library message for status st (unsupported: "<prog>: <msg>",
 * otherwise "<prog>: error: <msg>") and exits with mg_exit_code(st). */
__attribute__((noreturn)) void mg_die_status(mg_status st);

/* Strict number parsing for flag values: the whole string must be a base-10 integer in
 * [min, max]. Returns 0 on success, -1 otherwise. */
int mg_parse_i64(const char *s, int64_t min, int64_t max, int64_t *out);

/* Prints --version on stdout: "<prog> (mgtools) MG_VERSION", "revision: REV", "built with:
 * A, B, ..." and "built without: C, ..." ("(none)" for an empty list); mg/version.h. */
void mg_cli_print_version(void);

/* Prints --list-flags on stdout: one line per flag of the table, "NAME NARGS [VALUE]" with
 * NARGS 0 (a switch), 1, + (one or more) or * (zero or more) and, for flags with values,
 * VALUE file or dir (the spec's files and dirs lists) or text; "-h 0" first when the table
 * has a help flag. A name in files/dirs that is not in the table aborts (a bug).
 * scripts/gen-completion.sh and the documentation tests read it. */
void mg_cli_list_flags(const mg_argv_spec *spec);

/* Monotonic clock in seconds. */
double mg_now(void);

#endif

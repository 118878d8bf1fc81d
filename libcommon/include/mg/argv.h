/* mg/argv.h — the one command-line scanner of the three tools: a table of flags, argparse's
 * word rules, and events the tool turns into its own fields and messages.
 *
 * Contract:
 *   - A flag word starts with '-' and is not "-" alone (stdin) nor a negative number ("-1",
 *     "-.5"); other words are values or positionals.
 *   - "--name=value" gives the flag one value (everything after the first '='); "-h" is the
 *     help flag when the table names one (help >= 0).
 *   - Lookup is exact, or with abbrev (argparse's allow_abbrev) a unique prefix longer than
 *     two characters; several prefixes matching is MG_ARGV_AMBIGUOUS (candidates listed).
 *   - Values: MG_ARGV_ONE takes the next word, which must not be a flag word unless the
 *     table says any_value (then any next word, as mg-convert reads it); MG_ARGV_LIST takes
 *     every following non-flag word and needs one at least, MG_ARGV_ANY takes zero or more.
 *     A switch given "=value" is MG_ARGV_EXPLICIT; a value flag without its value is
 *     MG_ARGV_MISSING; a word that is not a flag where a flag is expected is
 *     MG_ARGV_POSITIONAL.
 *   - Values point into argv (or, for "=value", into the word): valid as long as argv.
 *     The scanner neither prints nor exits.
 *   - Messages, one wording for the three tools (argparse's): mg_argv_error() words a
 *     scanner error as MG_ERR_ARG ("unrecognized arguments: --num-layer (did you mean
 *     --num-layers?)", "argument --x: expected one argument", ...); mg_argv_choice() finds
 *     a value among the valid ones or is MG_ERR_ARG "argument --x: invalid choice: 'v'
 *     (did you mean w? choose from a, b, c)". The closest name: one the word is a prefix of
 *     (the shortest), else the nearest by edit distance (ASCII case folded) within a third
 *     of the word's length; none when nothing is that close or the word has under 4
 *     characters.
 */
#ifndef MG_ARGV_H
#define MG_ARGV_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"

typedef enum { MG_ARGV_SWITCH, MG_ARGV_ONE, MG_ARGV_LIST, MG_ARGV_ANY } mg_argv_nargs;

typedef struct {
    const char *name;     /* "--flag" */
    mg_argv_nargs nargs;
} mg_argv_flag;

typedef struct {
    const mg_argv_flag *flags; /* a flag's id is its index */
    size_t n;
    int abbrev;                /* unique prefixes accepted (argparse allow_abbrev) */
    int any_value;             /* MG_ARGV_ONE takes the next word whatever it looks like */
    int help;                  /* id that "-h" selects, -1: none */
    /* For shell completion only (mg_cli_list_flags), the scanner does not look at them:
     * NULL-terminated names of the flags whose value is a file or a path prefix (files),
     * or a directory (dirs); NULL: none. Every name must be a flag of the table. */
    const char *const *files;
    const char *const *dirs;
} mg_argv_spec;

typedef enum {
    MG_ARGV_FLAG,       /* id, values, nvalues set */
    MG_ARGV_END,        /* every word consumed */
    MG_ARGV_POSITIONAL, /* word: not a flag word */
    MG_ARGV_UNKNOWN,    /* word: no such flag */
    MG_ARGV_AMBIGUOUS,  /* word, name_len, candidates ("--a, --b") */
    MG_ARGV_EXPLICIT,   /* id, word: a switch with "=value" (value = after '=') */
    MG_ARGV_MISSING,    /* id, word: the flag's value is missing */
} mg_argv_event;

typedef struct {
    const mg_argv_spec *spec;
    int argc, i;
    char **argv;
    /* the last event's details */
    int id;
    const char *word;      /* the word the event is about */
    size_t name_len;       /* length of the flag part of word (before '=') */
    const char *value;     /* after '=' in word, or NULL */
    const char *const *values;
    size_t nvalues;
    char candidates[512];
} mg_argv;

/* Scans argv[1..argc-1]. */
void mg_argv_init(mg_argv *a, const mg_argv_spec *spec, int argc, char **argv);
/* The next flag with its values, the end, or the first error (scanning stops there). */
mg_argv_event mg_argv_next(mg_argv *a);
/* 1 if w is a flag word (see above). */
int mg_argv_is_flag_word(const char *w);

/* The message of event ev (not MG_ARGV_FLAG or MG_ARGV_END) of a's last word: MG_ERR_ARG. */
mg_status mg_argv_error(const mg_argv *a, mg_argv_event ev);
/* *index = the position of v in names[0..n); else MG_ERR_ARG listing them for flag. */
mg_status mg_argv_choice(const char *flag, const char *v, const char *const *names, size_t n,
                         int *index);
/* *out = v as an integer in [min, max]; else MG_ERR_ARG "argument FLAG: invalid value 'V'
 * (expected an integer >= MIN)" (or "in [MIN, MAX]" when max < INT64_MAX). */
mg_status mg_argv_int(const char *flag, const char *v, int64_t min, int64_t max, int64_t *out);
/* The name among names[0..n) closest to word[0..len) (see above), or NULL. */
const char *mg_argv_closest(const char *word, size_t len, const char *const *names, size_t n);

#endif /* MG_ARGV_H */

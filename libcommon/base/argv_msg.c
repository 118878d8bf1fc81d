/* argv_msg.c — mg/argv.h's messages: the scanner's errors and invalid choices in one wording
 * for the three tools (argparse's), with the closest valid name. */
#include "mg/argv.h"
#include "mg/cli.h"

#include <ctype.h>
#include <stdint.h>
#include <strings.h>
#include <stdio.h>
#include <string.h>

#define MAX_NAME 64

/* Levenshtein distance of a[0..la) and b[0..lb), ASCII case folded; names longer than
 * MAX_NAME are far from everything. */
static size_t distance(const char *a, size_t la, const char *b, size_t lb)
{
    size_t row[MAX_NAME + 1];
    if (la > MAX_NAME || lb > MAX_NAME) return (size_t)-1;
    for (size_t j = 0; j <= lb; j++) row[j] = j;
    for (size_t i = 1; i <= la; i++) {
        size_t diag = row[0];
        row[0] = i;
        for (size_t j = 1; j <= lb; j++) {
            size_t up = row[j];
            int same = tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1]);
            size_t best = diag + !same;
            if (up + 1 < best) best = up + 1;
            if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
            row[j] = best;
            diag = up;
        }
    }
    return row[lb];
}

/* The closest of n names (name i at base + i * stride): a name word is a prefix of (the
 * shortest), else the smallest edit distance within a third of the word's length; none for
 * a word under 4 characters. */
static const char *closest(const char *word, size_t len, const char *base, size_t stride,
                           size_t n)
{
    const char *best = NULL;
    if (len < 4) return NULL; /* "--", "-x": too short to guess */
    size_t best_d = len / 3 > 0 ? len / 3 : 1, best_prefix = (size_t)-1;
    for (size_t i = 0; i < n; i++) {
        const char *name = *(const char *const *)(const void *)(base + i * stride);
        size_t ln = strlen(name);
        if (ln > len && strncasecmp(name, word, len) == 0) {
            if (ln < best_prefix) best_prefix = ln, best = name;
            continue;
        }
        if (best_prefix != (size_t)-1) continue;
        size_t d = distance(word, len, name, ln);
        if (d < best_d || (d == best_d && !best)) best_d = d, best = name;
    }
    return best;
}

const char *mg_argv_closest(const char *word, size_t len, const char *const *names, size_t n)
{
    return closest(word, len, (const char *)names, sizeof *names, n);
}

mg_status mg_argv_error(const mg_argv *a, mg_argv_event ev)
{
    const mg_argv_spec *s = a->spec;
    const char *name = a->id >= 0 ? s->flags[a->id].name : "";
    const char *near;
    switch (ev) {
    case MG_ARGV_AMBIGUOUS:
        return mg_error_set(MG_ERR_ARG, "ambiguous option: %.*s could match %s",
                            (int)a->name_len, a->word, a->candidates);
    case MG_ARGV_EXPLICIT:
        return mg_error_set(MG_ERR_ARG, "argument %s: ignored explicit argument '%s'", name,
                            a->value);
    case MG_ARGV_MISSING:
        return mg_error_set(MG_ERR_ARG, "argument %s: expected %s", name,
                            s->flags[a->id].nargs == MG_ARGV_ONE ? "one argument"
                                                                 : "at least one argument");
    case MG_ARGV_UNKNOWN:
        near = closest(a->word, a->name_len, (const char *)&s->flags[0].name, sizeof *s->flags,
                       s->n);
        if (near)
            return mg_error_set(MG_ERR_ARG, "unrecognized arguments: %s (did you mean %s?)",
                                a->word, near);
        return mg_error_set(MG_ERR_ARG, "unrecognized arguments: %s", a->word);
    default: return mg_error_set(MG_ERR_ARG, "unrecognized arguments: %s", a->word);
    }
}

mg_status mg_argv_choice(const char *flag, const char *v, const char *const *names, size_t n,
                         int *index)
{
    char list[1024];
    size_t at = 0;
    for (size_t i = 0; i < n; i++) {
        if (!strcmp(v, names[i])) {
            *index = (int)i;
            return MG_OK;
        }
        if (at < sizeof list)
            at += (size_t)snprintf(list + at, sizeof list - at, "%s%s", i ? ", " : "", names[i]);
    }
    const char *near = mg_argv_closest(v, strlen(v), names, n);
    for (size_t i = 0; i < n; i++) /* another case ("HF"): short values too */
        if (!strcasecmp(v, names[i])) near = names[i];
    if (near)
        return mg_error_set(MG_ERR_ARG, "argument %s: invalid choice: '%s' (did you mean %s? "
                            "choose from %s)", flag, v, near, list);
    return mg_error_set(MG_ERR_ARG, "argument %s: invalid choice: '%s' (choose from %s)", flag,
                        v, list);
}

mg_status mg_argv_int(const char *flag, const char *v, int64_t min, int64_t max, int64_t *out)
{
    if (mg_parse_i64(v, min, max, out) == 0) return MG_OK;
    if (max == INT64_MAX)
        return mg_error_set(MG_ERR_ARG, "argument %s: invalid value '%s' (expected an integer "
                            ">= %lld)", flag, v, (long long)min);
    return mg_error_set(MG_ERR_ARG, "argument %s: invalid value '%s' (expected an integer in "
                        "[%lld, %lld])", flag, v, (long long)min, (long long)max);
}

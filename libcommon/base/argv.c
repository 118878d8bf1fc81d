/* argv.c — mg/argv.h: the table-driven command-line scanner. */
#include "mg/argv.h"

#include <stdio.h>
#include <string.h>

int mg_argv_is_flag_word(const char *w)
{
    if (w[0] != '-' || w[1] == 0) return 0;                   /* "-" (stdin) is a value */
    if ((w[1] >= '0' && w[1] <= '9') || w[1] == '.') return 0; /* a negative number */
    return 1;
}

void mg_argv_init(mg_argv *a, const mg_argv_spec *spec, int argc, char **argv)
{
    memset(a, 0, sizeof *a);
    a->spec = spec;
    a->argc = argc;
    a->argv = argv;
    a->i = 1;
}

/* Exact name, or a unique prefix with abbrev; -1 unknown, -2 ambiguous. */
static int lookup(mg_argv *a, const char *name, size_t len)
{
    const mg_argv_spec *s = a->spec;
    if (s->help >= 0 && len == 2 && strncmp(name, "-h", 2) == 0) return s->help;
    int found = -1, n_prefix = 0;
    a->candidates[0] = 0;
    for (size_t i = 0; i < s->n; i++) {
        if (strncmp(s->flags[i].name, name, len) != 0) continue;
        if (s->flags[i].name[len] == 0) return (int)i;
        found = (int)i;
        n_prefix++;
        size_t used = strlen(a->candidates);
        snprintf(a->candidates + used, sizeof a->candidates - used, "%s%s", used ? ", " : "",
                 s->flags[i].name);
    }
    if (!s->abbrev || len <= 2 || n_prefix == 0) return -1;
    return n_prefix == 1 ? found : -2;
}

static int takes_value(const mg_argv *a, const char *w)
{
    return a->spec->any_value || !mg_argv_is_flag_word(w);
}

/* Consumes the values of flag f that follow the flag word. */
static mg_argv_event values(mg_argv *a, const mg_argv_flag *f)
{
    a->values = (const char *const *)&a->argv[a->i];
    if (f->nargs == MG_ARGV_ONE) {
        if (a->i >= a->argc || !takes_value(a, a->argv[a->i])) return MG_ARGV_MISSING;
        a->nvalues = 1;
        a->i++;
        return MG_ARGV_FLAG;
    }
    while (a->i < a->argc && !mg_argv_is_flag_word(a->argv[a->i])) a->nvalues++, a->i++;
    return a->nvalues == 0 && f->nargs == MG_ARGV_LIST ? MG_ARGV_MISSING : MG_ARGV_FLAG;
}

mg_argv_event mg_argv_next(mg_argv *a)
{
    a->id = -1;
    a->value = NULL;
    a->values = NULL;
    a->nvalues = 0;
    if (a->i >= a->argc) return MG_ARGV_END;
    const char *w = a->word = a->argv[a->i];
    if (!mg_argv_is_flag_word(w)) return MG_ARGV_POSITIONAL;
    const char *eq = strncmp(w, "--", 2) == 0 ? strchr(w, '=') : NULL;
    a->name_len = eq ? (size_t)(eq - w) : strlen(w);
    a->value = eq ? eq + 1 : NULL;
    int id = lookup(a, w, a->name_len);
    if (id == -2) return MG_ARGV_AMBIGUOUS;
    if (id < 0) return MG_ARGV_UNKNOWN;
    a->id = id;
    a->i++;
    const mg_argv_flag *f = &a->spec->flags[id];
    if (f->nargs == MG_ARGV_SWITCH) return eq ? MG_ARGV_EXPLICIT : MG_ARGV_FLAG;
    if (!eq) return values(a, f);
    a->values = &a->value;
    a->nvalues = 1;
    return MG_ARGV_FLAG;
}

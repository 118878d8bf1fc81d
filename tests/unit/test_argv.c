/* test_argv.c — mg/argv.h: flag words, "--name=value", exact and abbreviated lookup, value
 * counts per nargs, any_value, "-h", and each error event with its details. */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "mg/argv.h"

enum { F_INPUT, F_INSPECT, F_KEYS, F_QUIET, F_PATHS, F_HELP, F_N };

static const mg_argv_flag flags[F_N] = {
    [F_INPUT] = {"--input", MG_ARGV_ONE},    [F_INSPECT] = {"--inspect", MG_ARGV_ONE},
    [F_KEYS] = {"--keys", MG_ARGV_LIST},     [F_QUIET] = {"--quiet", MG_ARGV_SWITCH},
    [F_PATHS] = {"--paths", MG_ARGV_ANY},    [F_HELP] = {"--help", MG_ARGV_SWITCH},
};

/* Scans words (NULL-terminated) and returns the n-th event (0-based). */
static mg_argv_event nth(mg_argv *a, const mg_argv_spec *spec, const char **words, int n)
{
    static char store[16][32], *argv[16];
    int argc = 0;
    for (const char *w = "prog"; w && argc < 16; w = words[argc - 1]) {
        snprintf(store[argc], sizeof store[argc], "%s", w);
        argv[argc] = store[argc];
        argc++;
    }
    mg_argv_init(a, spec, argc, argv);
    mg_argv_event ev = mg_argv_next(a);
    for (int i = 0; i < n && ev == MG_ARGV_FLAG; i++) ev = mg_argv_next(a);
    return ev;
}

MG_TEST(argv_flag_words)
{
    MG_CHECK(t, mg_argv_is_flag_word("--x") && mg_argv_is_flag_word("-h") &&
                    mg_argv_is_flag_word("--"));
    MG_CHECK(t, !mg_argv_is_flag_word("-") && !mg_argv_is_flag_word("-5") &&
                    !mg_argv_is_flag_word("-.5") && !mg_argv_is_flag_word("x"));
}

MG_TEST(argv_values_by_nargs)
{
    mg_argv_spec spec = {flags, F_N, 0, 0, F_HELP, NULL, NULL};
    mg_argv a;
    const char *w1[] = {"--keys", "a", "b", "--quiet", "--paths", "--input=x=y", "-h", NULL};
    MG_CHECK_EQ_INT(t, nth(&a, &spec, w1, 0), MG_ARGV_FLAG);
    MG_CHECK(t, a.id == F_KEYS && a.nvalues == 2 && !strcmp(a.values[1], "b"));
    MG_CHECK_EQ_INT(t, mg_argv_next(&a), MG_ARGV_FLAG);
    MG_CHECK(t, a.id == F_QUIET && a.nvalues == 0);
    MG_CHECK_EQ_INT(t, mg_argv_next(&a), MG_ARGV_FLAG);
    MG_CHECK(t, a.id == F_PATHS && a.nvalues == 0); /* nargs '*' */
    MG_CHECK_EQ_INT(t, mg_argv_next(&a), MG_ARGV_FLAG);
    MG_CHECK(t, a.id == F_INPUT && a.nvalues == 1 && !strcmp(a.values[0], "x=y"));
    MG_CHECK_EQ_INT(t, mg_argv_next(&a), MG_ARGV_FLAG);
    MG_CHECK_EQ_INT(t, a.id, F_HELP);
    MG_CHECK_EQ_INT(t, mg_argv_next(&a), MG_ARGV_END);
    const char *w2[] = {"--input", "-", "--input", "-3", NULL}; /* values, not flags */
    MG_CHECK_EQ_INT(t, nth(&a, &spec, w2, 1), MG_ARGV_FLAG);
    MG_CHECK_EQ_STR(t, a.values[0], "-3");
}

MG_TEST(argv_errors)
{
    mg_argv_spec spec = {flags, F_N, 0, 0, -1, NULL, NULL};
    mg_argv a;
    const char *w1[] = {"--quiet=1", NULL};
    MG_CHECK_EQ_INT(t, nth(&a, &spec, w1, 0), MG_ARGV_EXPLICIT);
    MG_CHECK(t, a.id == F_QUIET && !strcmp(a.value, "1"));
    const char *w2[] = {"--input", "--quiet", NULL};
    MG_CHECK_EQ_INT(t, nth(&a, &spec, w2, 0), MG_ARGV_MISSING);
    MG_CHECK_EQ_INT(t, a.id, F_INPUT);
    const char *w3[] = {"--keys", NULL};
    MG_CHECK_EQ_INT(t, nth(&a, &spec, w3, 0), MG_ARGV_MISSING);
    const char *w4[] = {"stray", NULL};
    MG_CHECK_EQ_INT(t, nth(&a, &spec, w4, 0), MG_ARGV_POSITIONAL);
    MG_CHECK_EQ_STR(t, a.word, "stray");
    const char *w5[] = {"--inp", NULL}; /* no abbreviations without abbrev */
    MG_CHECK_EQ_INT(t, nth(&a, &spec, w5, 0), MG_ARGV_UNKNOWN);
    const char *w6[] = {"-h", NULL}; /* no help flag named */
    MG_CHECK_EQ_INT(t, nth(&a, &spec, w6, 0), MG_ARGV_UNKNOWN);
}

MG_TEST(argv_abbreviations_and_any_value)
{
    mg_argv_spec spec = {flags, F_N, 1, 0, F_HELP, NULL, NULL};
    mg_argv a;
    const char *w1[] = {"--inp=v", "--q", NULL};
    MG_CHECK_EQ_INT(t, nth(&a, &spec, w1, 0), MG_ARGV_FLAG);
    MG_CHECK(t, a.id == F_INPUT && !strcmp(a.values[0], "v"));
    MG_CHECK_EQ_INT(t, mg_argv_next(&a), MG_ARGV_FLAG);
    MG_CHECK_EQ_INT(t, a.id, F_QUIET);
    const char *w2[] = {"--in=x", NULL};
    MG_CHECK_EQ_INT(t, nth(&a, &spec, w2, 0), MG_ARGV_AMBIGUOUS);
    MG_CHECK(t, a.name_len == 4 && !strcmp(a.candidates, "--input, --inspect"));
    const char *w3[] = {"--", NULL}; /* two characters: never a prefix */
    MG_CHECK_EQ_INT(t, nth(&a, &spec, w3, 0), MG_ARGV_UNKNOWN);
    spec = (mg_argv_spec){flags, F_N, 0, 1, F_HELP, NULL, NULL};
    const char *w4[] = {"--input", "--quiet", NULL};
    MG_CHECK_EQ_INT(t, nth(&a, &spec, w4, 0), MG_ARGV_FLAG);
    MG_CHECK(t, a.id == F_INPUT && !strcmp(a.values[0], "--quiet"));
    MG_CHECK_EQ_INT(t, mg_argv_next(&a), MG_ARGV_END);
}

/* The message of event ev for words: checks the status and the text. */
static void check_message(mg_test_ctx *t, const char **words, const char *want)
{
    const mg_argv_spec spec = {flags, F_N, 0, 0, F_HELP, NULL, NULL};
    mg_argv a;
    mg_argv_event ev = nth(&a, &spec, words, 9);
    MG_CHECK_EQ_INT(t, mg_argv_error(&a, ev), MG_ERR_ARG);
    MG_CHECK_EQ_STR(t, mg_last_error(), want);
}

MG_TEST(argv_messages_name_the_closest_flag)
{
    check_message(t, (const char *[]){"--inputs", "x", NULL},
                  "unrecognized arguments: --inputs (did you mean --input?)");
    check_message(t, (const char *[]){"--INSPECT", NULL},
                  "unrecognized arguments: --INSPECT (did you mean --inspect?)");
    check_message(t, (const char *[]){"--pat", NULL},
                  "unrecognized arguments: --pat (did you mean --paths?)");
    check_message(t, (const char *[]){"--zebra", NULL}, "unrecognized arguments: --zebra");
    check_message(t, (const char *[]){"--", NULL}, "unrecognized arguments: --");
    check_message(t, (const char *[]){"--quiet=1", NULL},
                  "argument --quiet: ignored explicit argument '1'");
    check_message(t, (const char *[]){"--keys", NULL},
                  "argument --keys: expected at least one argument");
    check_message(t, (const char *[]){"--input", NULL}, "argument --input: expected one argument");
    check_message(t, (const char *[]){"stray", NULL}, "unrecognized arguments: stray");
}

MG_TEST(argv_choice_lists_the_valid_values)
{
    static const char *const names[] = {"megatron", "hf"};
    int i = -1;
    MG_CHECK_OK(t, mg_argv_choice("--saver", "hf", names, 2, &i));
    MG_CHECK_EQ_INT(t, i, 1);
    MG_CHECK_EQ_INT(t, mg_argv_choice("--saver", "HF", names, 2, &i), MG_ERR_ARG);
    MG_CHECK_EQ_STR(t, mg_last_error(),
                    "argument --saver: invalid choice: 'HF' (did you mean hf? choose from "
                    "megatron, hf)");
    MG_CHECK_EQ_INT(t, mg_argv_choice("--saver", "megatorn", names, 2, &i), MG_ERR_ARG);
    MG_CHECK_EQ_STR(t, mg_last_error(), "argument --saver: invalid choice: 'megatorn' (did you "
                    "mean megatron? choose from megatron, hf)");
    MG_CHECK(t, mg_argv_closest("xyzzy", 5, names, 2) == NULL);
}

MG_TEST(argv_int_values)
{
    int64_t x = 0;
    MG_CHECK_OK(t, mg_argv_int("--workers", "4", 1, INT64_MAX, &x));
    MG_CHECK_EQ_INT(t, x, 4);
    MG_CHECK_EQ_INT(t, mg_argv_int("--workers", "0", 1, INT64_MAX, &x), MG_ERR_ARG);
    MG_CHECK_EQ_STR(t, mg_last_error(),
                    "argument --workers: invalid value '0' (expected an integer >= 1)");
    MG_CHECK_EQ_INT(t, mg_argv_int("--tp", "x", 1, 4096, &x), MG_ERR_ARG);
    MG_CHECK_EQ_STR(t, mg_last_error(),
                    "argument --tp: invalid value 'x' (expected an integer in [1, 4096])");
}

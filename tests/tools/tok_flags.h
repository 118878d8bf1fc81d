/* tok_flags.h — the command line of the tokenizer test programs (tokenize.c,
 * decode_ids.c): mg-preprocess's tokenizer flags plus --keep-going. Header-only (static
 * functions), included by each program's .c file.
 *
 * Flags: --tokenizer-type, --vocab-file, --merge-file, --tokenizer-model, --vocab-size,
 * --tiktoken-pattern, --tiktoken-num-special-tokens, --tokenizer-special-tokens S... (until
 * the next --flag), --null-tokenizer-eod-id, --tokenizer-hf-no-include-special-tokens,
 * --keep-going; a program's own one-value flags go to its `extra` callback (returns 1 when
 * it took the flag). An unknown flag, a missing value or a malformed integer prints
 * "PROG: error: ..." to stderr and exits with status 2.
 */
#ifndef MG_TESTS_TOK_FLAGS_H
#define MG_TESTS_TOK_FLAGS_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/tokenizer.h"

typedef struct {
    mg_tok_opts tok;
    int keep_going;
} tok_flags;

typedef int (*tok_flags_extra)(void *ctx, const char *flag, const char *value);

static __attribute__((noreturn)) void tok_flags_usage(const char *prog, const char *msg,
                                                      const char *arg)
{
    fprintf(stderr, "%s: error: %s%s\n", prog, msg, arg ? arg : "");
    exit(2);
}

static int64_t tok_flags_int(const char *prog, const char *s)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end) tok_flags_usage(prog, "not an integer: ", s);
    return v;
}

/* Handles the tokenizer flags that take one value; returns 0 if flag is not one of them. */
static int tok_flags_value(tok_flags *f, const char *prog, const char *flag, const char *v)
{
    mg_tok_opts *t = &f->tok;
    if (!strcmp(flag, "--tokenizer-type")) t->type = v;
    else if (!strcmp(flag, "--vocab-file")) t->vocab_file = v;
    else if (!strcmp(flag, "--merge-file")) t->merge_file = v;
    else if (!strcmp(flag, "--tokenizer-model")) t->model = v;
    else if (!strcmp(flag, "--vocab-size")) t->vocab_size = tok_flags_int(prog, v);
    else if (!strcmp(flag, "--tiktoken-pattern")) t->tiktoken_pattern = v;
    else if (!strcmp(flag, "--tiktoken-num-special-tokens"))
        t->tiktoken_num_special = tok_flags_int(prog, v);
    else if (!strcmp(flag, "--null-tokenizer-eod-id")) t->null_eod_id = tok_flags_int(prog, v);
    else return 0;
    return 1;
}

/* Parses argv into f (mg_tok_opts_init defaults first); extra may be NULL. */
static void tok_flags_parse(tok_flags *f, const char *prog, int argc, char **argv,
                            tok_flags_extra extra, void *ctx)
{
    mg_tok_opts_init(&f->tok);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--keep-going")) {
            f->keep_going = 1;
        } else if (!strcmp(a, "--tokenizer-hf-no-include-special-tokens")) {
            f->tok.hf_no_include_special = 1;
        } else if (!strcmp(a, "--tokenizer-special-tokens")) {
            int first = i + 1;
            while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) i++;
            f->tok.special_tokens = (const char *const *)(argv + first);
            f->tok.n_special_tokens = (size_t)(i + 1 - first);
        } else if (i + 1 < argc && (tok_flags_value(f, prog, a, argv[i + 1]) ||
                                    (extra && extra(ctx, a, argv[i + 1])))) {
            i++;
        } else {
            tok_flags_usage(prog, "unknown flag or missing value: ", a);
        }
    }
}

#endif

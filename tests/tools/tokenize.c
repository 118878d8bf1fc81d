/* tokenize.c — test program for the tokenizer interop tests (mg/tokenizer.h).
 *
 *   tokenize [tokenizer flags as mg-preprocess] [--json-key K] [--keep-going] < in.jsonl
 *
 * Tokenizer flags: --tokenizer-type, --vocab-file, --merge-file, --tokenizer-model,
 * --vocab-size, --tiktoken-pattern, --tiktoken-num-special-tokens,
 * --tokenizer-special-tokens S... (until the next --flag), --null-tokenizer-eod-id,
 * --tokenizer-hf-no-include-special-tokens.
 * Prints "vocab_size=V eod=E" and then the describe line to stderr, then for each input line
 * ({"text": "..."}, decoded with jansson) one line of space-separated ids on stdout.
 * A tokenizer error stops with exit status 1, or with --keep-going prints
 * "error: MESSAGE" as that line's output and goes on. Exit status 2 on a usage error.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/tokenizer.h"

typedef struct {
    mg_tok_opts tok;
    const char *key;
    int keep_going;
} tool_opts;

static __attribute__((noreturn)) void usage(const char *msg, const char *arg)
{
    fprintf(stderr, "tokenize: error: %s%s\n", msg, arg ? arg : "");
    exit(2);
}

static int64_t int_arg(const char *s)
{
    char *end;
    long long v = strtoll(s, &end, 10);
    if (!*s || *end) usage("not an integer: ", s);
    return v;
}

/* Handles the flags that take one value; returns 0 if flag is not one of them. */
static int value_flag(tool_opts *o, const char *flag, const char *v)
{
    if (!strcmp(flag, "--tokenizer-type")) o->tok.type = v;
    else if (!strcmp(flag, "--vocab-file")) o->tok.vocab_file = v;
    else if (!strcmp(flag, "--merge-file")) o->tok.merge_file = v;
    else if (!strcmp(flag, "--tokenizer-model")) o->tok.model = v;
    else if (!strcmp(flag, "--vocab-size")) o->tok.vocab_size = int_arg(v);
    else if (!strcmp(flag, "--tiktoken-pattern")) o->tok.tiktoken_pattern = v;
    else if (!strcmp(flag, "--tiktoken-num-special-tokens")) o->tok.tiktoken_num_special = int_arg(v);
    else if (!strcmp(flag, "--null-tokenizer-eod-id")) o->tok.null_eod_id = int_arg(v);
    else if (!strcmp(flag, "--json-key")) o->key = v;
    else return 0;
    return 1;
}

static void parse_args(tool_opts *o, int argc, char **argv)
{
    mg_tok_opts_init(&o->tok);
    o->key = "text";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--keep-going")) {
            o->keep_going = 1;
        } else if (!strcmp(a, "--tokenizer-hf-no-include-special-tokens")) {
            o->tok.hf_no_include_special = 1;
        } else if (!strcmp(a, "--tokenizer-special-tokens")) {
            int first = i + 1;
            while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) i++;
            o->tok.special_tokens = (const char *const *)(argv + first);
            o->tok.n_special_tokens = (size_t)(i + 1 - first);
        } else if (i + 1 < argc && value_flag(o, a, argv[i + 1])) {
            i++;
        } else {
            usage("unknown flag or missing value: ", a);
        }
    }
}

static void print_ids(const mg_ids *ids)
{
    for (size_t i = 0; i < ids->n; i++) printf(i ? " %" PRId64 : "%" PRId64, ids->v[i]);
    putchar('\n');
}

/* Tokenizes one JSON line; returns 0, or 1 after a failure (message printed). */
static int do_line(const tool_opts *o, mg_encoder *enc, const char *line, size_t len,
                   size_t line_no, mg_ids *ids)
{
    json_error_t jerr;
    json_t *root = json_loadb(line, len, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
    const json_t *v = root ? json_object_get(root, o->key) : NULL;
    if (!v || !json_is_string(v)) {
        fprintf(stderr, "tokenize: error: line %zu: no string \"%s\" (%s)\n", line_no, o->key,
                root ? "missing key" : jerr.text);
        json_decref(root);
        exit(1);
    }
    ids->n = 0;
    mg_status st = mg_encode(enc, json_string_value(v), json_string_length(v), ids);
    json_decref(root);
    if (st == MG_OK) {
        print_ids(ids);
        return 0;
    }
    if (!o->keep_going) {
        fprintf(stderr, "tokenize: error: line %zu: %s\n", line_no, mg_last_error());
        return 1;
    }
    printf("error: %s\n", mg_last_error());
    return 0;
}

int main(int argc, char **argv)
{
    tool_opts o = {0};
    parse_args(&o, argc, argv);
    mg_tokenizer *tk;
    mg_encoder *enc;
    if (mg_tokenizer_create(&tk, &o.tok) != MG_OK || mg_encoder_create(&enc, tk) != MG_OK) {
        fprintf(stderr, "tokenize: error: %s\n", mg_last_error());
        return 1;
    }
    fprintf(stderr, "vocab_size=%" PRId64 " eod=%" PRId64 "\n", mg_tokenizer_vocab_size(tk),
            mg_tokenizer_eod(tk));
    fprintf(stderr, "%s\n", mg_tokenizer_describe(tk));
    char *line = NULL;
    size_t cap = 0, line_no = 0;
    ssize_t n;
    mg_ids ids = {0};
    int rc = 0;
    while (rc == 0 && (n = getline(&line, &cap, stdin)) >= 0) {
        line_no++;
        rc = do_line(&o, enc, line, (size_t)n, line_no, &ids);
    }
    free(line);
    mg_ids_free(&ids);
    mg_encoder_free(enc);
    mg_tokenizer_free(tk);
    return rc;
}

/* decode_ids.c — test program for the decode interop tests (mg_tokenizer_decode).
 *
 *   decode_ids [tokenizer flags as mg-preprocess] [--keep-going] < ids.txt
 *
 * Tokenizer flags: as tests/tools/tokenize.c (--tokenizer-type, --vocab-file, --merge-file,
 * --tokenizer-model, --vocab-size, --tiktoken-pattern, --tiktoken-num-special-tokens,
 * --tokenizer-special-tokens S..., --null-tokenizer-eod-id,
 * --tokenizer-hf-no-include-special-tokens).
 * Each input line holds space-separated ids (an empty line = no ids); for each one line is
 * printed: the decoded text as a JSON string (so newlines and NUL survive), or with
 * --keep-going {"error": MESSAGE} when decoding fails (without it: exit status 1).
 * Exit status 2 on a usage error or a malformed id.
 */
#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/tokenizer.h"

typedef struct {
    mg_tok_opts tok;
    int keep_going;
} tool_opts;

static __attribute__((noreturn)) void usage(const char *msg, const char *arg)
{
    fprintf(stderr, "decode_ids: error: %s%s\n", msg, arg ? arg : "");
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
    else if (!strcmp(flag, "--tiktoken-num-special-tokens"))
        o->tok.tiktoken_num_special = int_arg(v);
    else if (!strcmp(flag, "--null-tokenizer-eod-id")) o->tok.null_eod_id = int_arg(v);
    else return 0;
    return 1;
}

static void parse_args(tool_opts *o, int argc, char **argv)
{
    mg_tok_opts_init(&o->tok);
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

/* Parses the ids of one line into *ids. */
static void parse_ids(const char *line, size_t line_no, mg_ids *ids)
{
    ids->n = 0;
    const char *p = line;
    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r') p++;
        if (!*p) return;
        char *end;
        errno = 0;
        long long v = strtoll(p, &end, 10);
        if (end == p || errno) {
            fprintf(stderr, "decode_ids: error: line %zu: not an id: %.20s\n", line_no, p);
            exit(2);
        }
        if (mg_ids_push(ids, v) != MG_OK) exit(1);
        p = end;
    }
}

/* Prints s as one JSON value on its own line. */
static void print_json(json_t *v)
{
    char *s = json_dumps(v, JSON_ENCODE_ANY | JSON_COMPACT);
    json_decref(v);
    if (!s) exit(1);
    puts(s);
    free(s);
}

int main(int argc, char **argv)
{
    tool_opts o = {0};
    parse_args(&o, argc, argv);
    mg_tokenizer *tk;
    if (mg_tokenizer_create(&tk, &o.tok) != MG_OK) {
        fprintf(stderr, "decode_ids: error: %s\n", mg_last_error());
        return 1;
    }
    char *line = NULL;
    size_t cap = 0, line_no = 0;
    mg_ids ids = {0};
    mg_text text = {0};
    int rc = 0;
    while (rc == 0 && getline(&line, &cap, stdin) >= 0) {
        parse_ids(line, ++line_no, &ids);
        text.n = 0;
        if (mg_tokenizer_decode(tk, ids.v, ids.n, &text) == MG_OK) {
            print_json(json_stringn(text.n ? text.p : "", text.n));
        } else if (o.keep_going) {
            print_json(json_pack("{s:s}", "error", mg_last_error()));
        } else {
            fprintf(stderr, "decode_ids: error: line %zu: %s\n", line_no, mg_last_error());
            rc = 1;
        }
    }
    free(line);
    mg_ids_free(&ids);
    mg_text_free(&text);
    mg_tokenizer_free(tk);
    return rc;
}

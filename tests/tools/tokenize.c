/* tokenize.c — test program for the tokenizer interop tests (mg/tokenizer.h).
 *
 *   tokenize [tokenizer flags as mg-preprocess] [--json-key K] [--keep-going] < in.jsonl
 *
 * Tokenizer flags: see tok_flags.h.
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
#include "tok_flags.h"

typedef struct {
    tok_flags f;
    const char *key;
} tool_opts;

static int key_flag(void *ctx, const char *flag, const char *v)
{
    if (strcmp(flag, "--json-key") != 0) return 0;
    ((tool_opts *)ctx)->key = v;
    return 1;
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
    if (!o->f.keep_going) {
        fprintf(stderr, "tokenize: error: line %zu: %s\n", line_no, mg_last_error());
        return 1;
    }
    printf("error: %s\n", mg_last_error());
    return 0;
}

int main(int argc, char **argv)
{
    tool_opts o = {.key = "text"};
    tok_flags_parse(&o.f, "tokenize", argc, argv, key_flag, &o);
    mg_tokenizer *tk;
    mg_encoder *enc;
    if (mg_tokenizer_create(&tk, &o.f.tok) != MG_OK || mg_encoder_create(&enc, tk) != MG_OK) {
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

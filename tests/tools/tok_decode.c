/* tok_decode.c — test program for the decode interop tests (mg_tokenizer_decode).
 *
 *   tok_decode TOKENIZER_TYPE MODEL < ids.txt
 *
 * Creates the tokenizer (--tokenizer-type TOKENIZER_TYPE --tokenizer-model MODEL), then for
 * each input line of space-separated ids prints the decoded text as one JSON string line
 * (jansson, so any byte sequence the decoder produced shows). A tokenizer error prints
 * "error: MESSAGE" to stderr and exits 1; exit status 2 on a usage error.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/tokenizer.h"

static int parse_ids(char *line, int64_t **ids, size_t *n, size_t *cap)
{
    *n = 0;
    for (char *tok = strtok(line, " \n"); tok; tok = strtok(NULL, " \n")) {
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 64;
            int64_t *v = realloc(*ids, *cap * sizeof *v);
            if (!v) return 0;
            *ids = v;
        }
        (*ids)[(*n)++] = strtoll(tok, NULL, 10);
    }
    return 1;
}

static int print_text(const mg_text *t)
{
    json_t *s = json_stringn_nocheck(t->n ? t->p : "", t->n);
    char *out = s ? json_dumps(s, JSON_ENCODE_ANY) : NULL;
    if (!out) return 0;
    puts(out);
    free(out);
    json_decref(s);
    return 1;
}

static int run(mg_tokenizer *tk)
{
    char *line = NULL;
    size_t lcap = 0, n = 0, cap = 0;
    int64_t *ids = NULL;
    int rc = 0;
    while (rc == 0 && getline(&line, &lcap, stdin) >= 0) {
        mg_text t = {0};
        if (!parse_ids(line, &ids, &n, &cap)) rc = 1;
        else if (mg_tokenizer_decode(tk, ids, n, &t) != MG_OK) {
            fprintf(stderr, "error: %s\n", mg_last_error());
            rc = 1;
        } else if (!print_text(&t)) {
            rc = 1;
        }
        mg_text_free(&t);
    }
    free(line);
    free(ids);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: tok_decode TOKENIZER_TYPE MODEL < ids.txt\n");
        return 2;
    }
    mg_tok_opts o;
    mg_tok_opts_init(&o);
    o.type = argv[1];
    o.model = argv[2];
    mg_tokenizer *tk = NULL;
    if (mg_tokenizer_create(&tk, &o) != MG_OK) {
        fprintf(stderr, "error: %s\n", mg_last_error());
        return 1;
    }
    int rc = run(tk);
    mg_tokenizer_free(tk);
    return rc;
}

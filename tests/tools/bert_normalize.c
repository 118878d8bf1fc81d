/* bert_normalize.c — test program for the WordPiece interop tests: BERT's basic tokenizer
 * (bert_basic.h) and the normalizer steps (normalize.h) on their own.
 *
 *   bert_normalize STEP < in.jsonl
 *
 * STEP: bert-lower (BertNormalizer, all options on) | bert-cased (clean_text + Chinese
 * characters) | nfd | nfkc | nfkd | lowercase | strip-accents.
 * For each input line ({"text": "..."}) prints one JSON line: for the bert-* steps the list
 * of BertPreTokenizer pieces of the normalized text, otherwise the normalized text.
 * Exit status 1 on an error, 2 on a usage error.
 */
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tok/bert_basic.h"
#include "tok/normalize.h"

static int make_normalizer(const char *step, mg_normalizer *nz, int *bert)
{
    static const char *const names[] = {"nfd", "nfkc", "nfkd", "lowercase", "strip-accents"};
    static const mg_norm_step steps[] = {MG_NORM_NFD, MG_NORM_NFKC, MG_NORM_NFKD,
                                         MG_NORM_LOWERCASE, MG_NORM_STRIP_ACCENTS};
    *bert = strncmp(step, "bert-", 5) == 0;
    if (strcmp(step, "bert-lower") == 0)
        return mg_normalizer_add_bert(nz, MG_NORM_BERT_CLEAN | MG_NORM_BERT_CHINESE |
                                              MG_NORM_BERT_STRIP_ACCENTS |
                                              MG_NORM_BERT_LOWERCASE) == MG_OK;
    if (strcmp(step, "bert-cased") == 0)
        return mg_normalizer_add_bert(nz, MG_NORM_BERT_CLEAN | MG_NORM_BERT_CHINESE) == MG_OK;
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        if (strcmp(step, names[i]) == 0) return mg_normalizer_add(nz, steps[i]) == MG_OK;
    fprintf(stderr, "bert_normalize: error: unknown step %s\n", step);
    exit(2);
}

static json_t *result(int bert, const char *t, size_t n)
{
    if (!bert) return json_stringn(t, n);
    mg_spans sp = {0};
    json_t *list = json_array();
    if (mg_bert_pretokenize(t, n, 0, &sp) != MG_OK) return NULL;
    for (size_t i = 0; i < sp.n; i++)
        json_array_append_new(list, json_stringn(t + sp.v[i].off, sp.v[i].len));
    mg_spans_free(&sp);
    return list;
}

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: bert_normalize STEP < in.jsonl\n");
        return 2;
    }
    mg_normalizer nz = {0};
    mg_norm_buf buf = {0};
    int bert;
    if (!make_normalizer(argv[1], &nz, &bert)) {
        fprintf(stderr, "bert_normalize: error: %s\n", mg_last_error());
        return 1;
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, stdin)) > 0) {
        json_error_t err;
        json_t *j = json_loadb(line, (size_t)len, JSON_ALLOW_NUL, &err);
        const json_t *v = json_object_get(j, "text");
        const char *t;
        size_t n;
        if (!json_is_string(v) ||
            mg_normalize(&nz, &buf, json_string_value(v), json_string_length(v), &t, &n) != MG_OK) {
            fprintf(stderr, "bert_normalize: error: %s\n",
                    json_is_string(v) ? mg_last_error() : "bad line");
            return 1;
        }
        json_t *r = result(bert, t, n);
        char *s = json_dumps(r, JSON_ENCODE_ANY | JSON_COMPACT);
        printf("%s\n", s);
        free(s);
        json_decref(r);
        json_decref(j);
    }
    free(line);
    mg_norm_buf_free(&buf);
    mg_normalizer_free(&nz);
    return 0;
}

/* encode_bench.c — benchmark program: the tokenizer alone, like for like with a reference
 * library's encode loop (scripts/bench_tokenizers.py).
 *
 *   encode_bench [tokenizer flags as mg-preprocess] [--json-key K] < in.jsonl
 *
 * Reads every line ({"text": "..."}, decoded with jansson) into memory first, then encodes
 * the texts one after the other with one mg_encoder (as a preprocessing worker does) and
 * prints one line on stdout:
 *   texts=N bytes=B ids=I cpu_s=S
 * where S is the process CPU time (user + system) of the encode loop only: no reading, no
 * JSON, no output. I (the total number of ids) lets the caller check that the reference
 * library produced as many. Exit status 1 on a tokenizer or input error, 2 on a usage error.
 */
#include <inttypes.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mg/tokenizer.h"
#include "tok_flags.h"

typedef struct {
    tok_flags f;
    const char *key;
} tool_opts;

typedef struct {
    char **s;
    size_t *len;
    size_t n, cap, bytes;
} texts;

static int key_flag(void *ctx, const char *flag, const char *v)
{
    if (strcmp(flag, "--json-key") != 0) return 0;
    ((tool_opts *)ctx)->key = v;
    return 1;
}

static __attribute__((noreturn)) void die(const char *what, size_t line_no)
{
    fprintf(stderr, "encode_bench: error: line %zu: %s\n", line_no, what);
    exit(1);
}

static void add_text(texts *t, const char *s, size_t len, size_t line_no)
{
    if (t->n == t->cap) {
        t->cap = t->cap ? 2 * t->cap : 1024;
        t->s = realloc(t->s, t->cap * sizeof *t->s);
        t->len = realloc(t->len, t->cap * sizeof *t->len);
        if (!t->s || !t->len) die("out of memory", line_no);
    }
    if (!(t->s[t->n] = malloc(len + 1))) die("out of memory", line_no);
    memcpy(t->s[t->n], s, len);
    t->s[t->n][len] = 0;
    t->len[t->n++] = len;
    t->bytes += len;
}

static void read_texts(texts *t, const char *key)
{
    char *line = NULL;
    size_t cap = 0, line_no = 0;
    ssize_t n;
    while ((n = getline(&line, &cap, stdin)) >= 0) {
        line_no++;
        json_error_t jerr;
        json_t *root = json_loadb(line, (size_t)n, JSON_DECODE_ANY | JSON_ALLOW_NUL, &jerr);
        const json_t *v = root ? json_object_get(root, key) : NULL;
        if (!v || !json_is_string(v)) die(root ? "no string value for the key" : jerr.text, line_no);
        add_text(t, json_string_value(v), json_string_length(v), line_no);
        json_decref(root);
    }
    free(line);
}

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

int main(int argc, char **argv)
{
    tool_opts o = {.key = "text"};
    tok_flags_parse(&o.f, "encode_bench", argc, argv, key_flag, &o);
    mg_tokenizer *tk;
    mg_encoder *enc;
    if (mg_tokenizer_create(&tk, &o.f.tok) != MG_OK || mg_encoder_create(&enc, tk) != MG_OK) {
        fprintf(stderr, "encode_bench: error: %s\n", mg_last_error());
        return 1;
    }
    texts t = {0};
    read_texts(&t, o.key);
    mg_ids ids = {0};
    uint64_t total = 0;
    double c0 = cpu_seconds();
    for (size_t i = 0; i < t.n; i++) {
        ids.n = 0;
        if (mg_encode(enc, t.s[i], t.len[i], &ids) != MG_OK) die(mg_last_error(), i + 1);
        total += ids.n;
    }
    double secs = cpu_seconds() - c0;
    printf("texts=%zu bytes=%zu ids=%" PRIu64 " cpu_s=%.6f\n", t.n, t.bytes, total, secs);
    for (size_t i = 0; i < t.n; i++) free(t.s[i]);
    free(t.s);
    free(t.len);
    mg_ids_free(&ids);
    mg_encoder_free(enc);
    mg_tokenizer_free(tk);
    return 0;
}

/* encode_bench.c — benchmark program: the tokenizer alone, like for like with a reference
 * library's encode loop (scripts/bench_tokenizers.py).
 *
 *   encode_bench [tokenizer flags as mg-preprocess] [--json-key K] [--passes P]
 *                [--ids-out FILE] < in.jsonl
 *
 * Reads every line ({"text": "..."}, decoded with jansson) into memory first, then encodes
 * the texts one after the other with one mg_encoder (as a preprocessing worker does), P
 * times over (default 1; the passes after the first find the encoder's caches warm, as the
 * common pieces of a multi-GB corpus do), and prints one line on stdout:
 *   texts=N bytes=B ids=I cpu_s=S [warm_cpu_s=W]
 * where S is the process CPU time (user + system) of the first encode loop only: no
 * reading, no JSON, no output; W the fastest of the later passes (each must give the same
 * ids as the first, else exit 1). I (the total number of ids) lets the caller check that
 * the reference library produced as many. --ids-out writes the first pass's ids to FILE
 * (after the timing) as little-endian uint32, one document after the other, preceded by
 * one uint32 count per document (N counts, then I ids), so that a caller can compare every
 * id with a reference library's. Exit status 1 on a tokenizer or input error, 2 on a usage
 * error.
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
    const char *ids_out;
    long passes;
} tool_opts;

typedef struct {
    char **s;
    size_t *len;
    size_t n, cap, bytes;
} texts;

static int own_flag(void *ctx, const char *flag, const char *v)
{
    tool_opts *o = ctx;
    if (strcmp(flag, "--json-key") == 0) o->key = v;
    else if (strcmp(flag, "--ids-out") == 0) o->ids_out = v;
    else if (strcmp(flag, "--passes") == 0) o->passes = (long)tok_flags_int("encode_bench", v);
    else return 0;
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

/* One pass over the texts: the total number of ids; per-document counts and ids kept in
 * *counts / *all when those are not NULL (for --ids-out and for checking later passes). */
static uint64_t encode_pass(mg_encoder *enc, const texts *t, mg_ids *ids, uint32_t *counts,
                            mg_ids *all)
{
    uint64_t total = 0;
    for (size_t i = 0; i < t->n; i++) {
        ids->n = 0;
        if (mg_encode(enc, t->s[i], t->len[i], ids) != MG_OK) die(mg_last_error(), i + 1);
        total += ids->n;
        if (counts) counts[i] = (uint32_t)ids->n;
        for (size_t j = 0; all && j < ids->n; j++)
            if (mg_ids_push(all, ids->v[j]) != MG_OK) die("out of memory", i + 1);
    }
    return total;
}

/* Encodes every text again and compares the ids with the first pass's. */
static double check_pass(mg_encoder *enc, const texts *t, mg_ids *ids, const mg_ids *first)
{
    double c0 = cpu_seconds();
    uint64_t total = encode_pass(enc, t, ids, NULL, NULL);
    double secs = cpu_seconds() - c0;
    mg_ids again = {0};
    encode_pass(enc, t, ids, NULL, &again);
    if (total != first->n || again.n != first->n ||
        memcmp(again.v, first->v, first->n * sizeof *first->v) != 0)
        die("a later pass gave other ids than the first", 0);
    mg_ids_free(&again);
    return secs;
}

static void write_ids(const char *path, const uint32_t *counts, size_t n, const mg_ids *all)
{
    FILE *f = fopen(path, "wb");
    if (!f) die("cannot open the --ids-out file", 0);
    int ok = fwrite(counts, sizeof *counts, n, f) == n;
    for (size_t i = 0; ok && i < all->n; i++) {
        uint32_t v = (uint32_t)all->v[i];
        ok = fwrite(&v, sizeof v, 1, f) == 1;
    }
    if (fclose(f) != 0 || !ok) die("cannot write the --ids-out file", 0);
}

int main(int argc, char **argv)
{
    tool_opts o = {.key = "text", .passes = 1};
    tok_flags_parse(&o.f, "encode_bench", argc, argv, own_flag, &o);
    if (o.passes < 1) tok_flags_usage("encode_bench", "--passes must be >= 1", NULL);
    mg_tokenizer *tk;
    mg_encoder *enc;
    if (mg_tokenizer_create(&tk, &o.f.tok) != MG_OK || mg_encoder_create(&enc, tk) != MG_OK) {
        fprintf(stderr, "encode_bench: error: %s\n", mg_last_error());
        return 1;
    }
    texts t = {0};
    read_texts(&t, o.key);
    mg_ids ids = {0};
    double c0 = cpu_seconds();
    uint64_t total = encode_pass(enc, &t, &ids, NULL, NULL);
    double secs = cpu_seconds() - c0;
    printf("texts=%zu bytes=%zu ids=%" PRIu64 " cpu_s=%.6f", t.n, t.bytes, total, secs);
    if (o.passes > 1 || o.ids_out) {
        /* the ids of the first pass, from a fresh encoder (so its caches start cold too) */
        mg_encoder *fresh;
        if (mg_encoder_create(&fresh, tk) != MG_OK) die(mg_last_error(), 0);
        uint32_t *counts = malloc((t.n ? t.n : 1) * sizeof *counts);
        mg_ids all = {0};
        if (!counts) die("out of memory", 0);
        encode_pass(fresh, &t, &ids, counts, &all);
        mg_encoder_free(fresh);
        double warm = 0;
        for (long p = 1; p < o.passes; p++) {
            double w = check_pass(enc, &t, &ids, &all);
            if (p == 1 || w < warm) warm = w;
        }
        if (o.passes > 1) printf(" warm_cpu_s=%.6f", warm);
        if (o.ids_out) write_ids(o.ids_out, counts, t.n, &all);
        free(counts);
        mg_ids_free(&all);
    }
    printf("\n");
    for (size_t i = 0; i < t.n; i++) free(t.s[i]);
    free(t.s);
    free(t.len);
    mg_ids_free(&ids);
    mg_encoder_free(enc);
    mg_tokenizer_free(tk);
    return 0;
}

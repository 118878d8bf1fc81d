/* pretok_split.c — test program for the pre-tokenizer (mg/pretok.h).
 *
 *   pretok_split STAGE... [--generic] < records
 *   pretok_split STAGE... --bench FILE [SECONDS]
 *
 * Stages, in order (each a Split stage of a Sequence):
 *   --family NAME            a known family (gpt2, cl100k, cl100k-tiktoken, qwen2, o200k,
 *                            megatron-v1, megatron-v2, deepseek-v3-1..3, cl100k-tiktoken-onig)
 *   --regex FILE             the regex text in FILE (bytes as is, no trailing newline)
 *   --literal STRING         a literal pattern
 * Options that apply to the following --regex/--literal stages:
 *   --dialect hf|tiktoken    how the regex is read (default hf)
 *   --behavior isolated|removed|merged_with_previous|merged_with_next|contiguous
 *   --invert 0|1
 * --generic runs every stage on Oniguruma (the oracle). --families prints, for each stage,
 * the family picked for it to stderr.
 * Input: records of a 4-byte little-endian length followed by that many bytes. Output: one
 * line per record, the pieces as "off:len" separated by spaces (empty line: no pieces).
 * --bench splits FILE (whole, then again) for SECONDS (default 2) and prints MB/s to stderr
 * (per wall-clock second and per second of this thread's CPU time).
 * Exit status 1 on a library error (message on stderr), 2 on a usage error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mg/pretok.h"

static __attribute__((noreturn)) void usage(const char *msg, const char *arg)
{
    fprintf(stderr, "pretok_split: error: %s%s\n", msg, arg ? arg : "");
    exit(2);
}

static __attribute__((noreturn)) void fail(mg_status st)
{
    fprintf(stderr, "pretok_split: error: %s (%s)\n", mg_last_error(), mg_strerror(st));
    exit(1);
}

static char *read_all(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) usage("cannot open ", path);
    size_t cap = 1 << 16, n = 0, r;
    char *buf = malloc(cap + 1);
    while (buf && (r = fread(buf + n, 1, cap - n, f)) > 0) {
        n += r;
        if (n == cap) buf = realloc(buf, (cap *= 2) + 1);
    }
    fclose(f);
    if (!buf) usage("out of memory reading ", path);
    buf[n] = 0;
    *len = n;
    return buf;
}

static mg_split_behavior parse_behavior(const char *s)
{
    static const char *names[] = {"isolated", "removed", "merged_with_previous",
                                  "merged_with_next", "contiguous"};
    for (int i = 0; i < 5; i++)
        if (strcmp(s, names[i]) == 0) return (mg_split_behavior)i;
    usage("unknown behavior: ", s);
}

static void bench(const mg_pretok *p, mg_pretok_scratch *sc, const char *path, double secs)
{
    size_t len;
    char *text = read_all(path, &len);
    mg_spans out = {0};
    struct timespec t0, t1, c0, c1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
    double el = 0, cpu, bytes = 0;
    size_t pieces = 0;
    while (el < secs) {
        out.n = 0;
        mg_status st = mg_pretok_split(p, sc, text, len, &out);
        if (st != MG_OK) fail(st);
        bytes += (double)len;
        pieces = out.n;
        clock_gettime(CLOCK_MONOTONIC, &t1);
        el = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    }
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
    cpu = (double)(c1.tv_sec - c0.tv_sec) + 1e-9 * (double)(c1.tv_nsec - c0.tv_nsec);
    fprintf(stderr, "%zu bytes, %zu pieces, %.1f MB/s wall, %.1f MB/s cpu\n", len, pieces,
            bytes / el / 1e6, bytes / cpu / 1e6);
    mg_spans_free(&out);
    free(text);
}

static int read_record(char **buf, size_t *cap, size_t *len)
{
    unsigned char h[4];
    if (fread(h, 1, 4, stdin) != 4) return 0;
    *len = (size_t)h[0] | (size_t)h[1] << 8 | (size_t)h[2] << 16 | (size_t)h[3] << 24;
    if (*len + 1 > *cap) {
        *cap = *len + 1;
        *buf = realloc(*buf, *cap);
        if (!*buf) usage("out of memory", NULL);
    }
    if (fread(*buf, 1, *len, stdin) != *len) usage("truncated record on stdin", NULL);
    return 1;
}

static void run_records(const mg_pretok *p, mg_pretok_scratch *sc)
{
    char *buf = NULL;
    size_t cap = 0, len;
    mg_spans out = {0};
    while (read_record(&buf, &cap, &len)) {
        out.n = 0;
        mg_status st = mg_pretok_split(p, sc, buf, len, &out);
        if (st != MG_OK) fail(st);
        for (size_t i = 0; i < out.n; i++)
            printf("%s%u:%u", i ? " " : "", out.v[i].off, out.v[i].len);
        putchar('\n');
    }
    mg_spans_free(&out);
    free(buf);
}

int main(int argc, char **argv)
{
    mg_pretok *p;
    mg_pretok_scratch *sc;
    if (mg_pretok_create(&p) != MG_OK || mg_pretok_scratch_create(&sc) != MG_OK)
        usage("out of memory", NULL);
    mg_regex_dialect dialect = MG_REGEX_HF;
    mg_split_behavior beh = MG_SPLIT_ISOLATED;
    int invert = 0, generic = 0, show = 0;
    const char *bench_file = NULL;
    double secs = 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        mg_status st = MG_OK;
        if (strcmp(a, "--generic") == 0) { generic = 1; continue; }
        if (strcmp(a, "--families") == 0) { show = 1; continue; }
        if (!v) usage("missing value after ", a);
        i++;
        if (strcmp(a, "--family") == 0) {
            mg_pretok_family f = mg_pretok_family_from_name(v);
            if (f == MG_PRETOK_GENERIC) usage("unknown family: ", v);
            st = mg_pretok_add_family(p, f);
        } else if (strcmp(a, "--regex") == 0) {
            size_t len;
            char *rx = read_all(v, &len);
            st = mg_pretok_add_regex_dialect(p, rx, dialect, beh, invert);
            free(rx);
        } else if (strcmp(a, "--literal") == 0) {
            st = mg_pretok_add_literal(p, v, beh, invert);
        } else if (strcmp(a, "--dialect") == 0) {
            if (strcmp(v, "hf") && strcmp(v, "tiktoken")) usage("unknown dialect: ", v);
            dialect = strcmp(v, "hf") == 0 ? MG_REGEX_HF : MG_REGEX_TIKTOKEN;
        } else if (strcmp(a, "--behavior") == 0) {
            beh = parse_behavior(v);
        } else if (strcmp(a, "--invert") == 0) {
            invert = atoi(v);
        } else if (strcmp(a, "--bench") == 0) {
            bench_file = v;
            if (i + 1 < argc && argv[i + 1][0] != '-') secs = atof(argv[++i]);
        } else {
            usage("unknown option: ", a);
        }
        if (st != MG_OK) fail(st);
    }
    if (generic) mg_pretok_force_generic(p, 1);
    for (size_t k = 0; show && k < mg_pretok_stages(p); k++)
        fprintf(stderr, "stage %zu: %s\n", k, mg_pretok_family_name(mg_pretok_stage_family(p, k)));
    if (bench_file)
        bench(p, sc, bench_file, secs);
    else
        run_records(p, sc);
    mg_pretok_scratch_free(sc);
    mg_pretok_free(p);
    return 0;
}

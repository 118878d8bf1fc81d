/* rank_check.c — rank_check.h: the configuration of every rank compared with rank 0's. */
#include "rank_check.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mg/cli.h"
#include "mg/md5.h"

enum { PART_FLAGS, PART_SEED, PART_DATA, PART_BUILD, NPARTS };
static const char *const part_names[NPARTS] = {"flags", "seed", "data", "build"};

#define IDX_HASH_BYTES (64u << 20)

/* "PATH: N bytes" or "PATH: missing", and for .idx the MD5 of its first 64 MiB. */
static void describe_file(FILE *f, const char *prefix, const char *ext, int digest)
{
    char path[4096];
    snprintf(path, sizeof path, "%s%s", prefix, ext);
    struct stat sb;
    if (stat(path, &sb) != 0) {
        fprintf(f, "%s: missing\n", path);
        return;
    }
    fprintf(f, "%s: %lld bytes", path, (long long)sb.st_size);
    FILE *in = digest ? fopen(path, "rb") : NULL;
    if (in) {
        mg_md5 m;
        mg_md5_init(&m);
        char buf[1 << 16];
        size_t n, total = 0;
        while (total < IDX_HASH_BYTES && (n = fread(buf, 1, sizeof buf, in)) > 0) {
            mg_md5_update(&m, buf, n);
            total += n;
        }
        fclose(in);
        uint8_t d[16];
        mg_md5_final(&m, d);
        fprintf(f, ", md5 of the first %zu bytes ", total);
        for (int i = 0; i < 16; i++) fprintf(f, "%02x", d[i]);
    }
    fputc('\n', f);
}

static mg_status describe(const mg_comm *w, const mg_train_opts *o, int argc, char **argv,
                          int part, char **text)
{
    size_t len = 0;
    *text = NULL;
    FILE *f = open_memstream(text, &len);
    if (!f) return mg_error_errno(errno, "open_memstream");
    if (part == PART_FLAGS)
        for (int i = 1; i < argc; i++) fprintf(f, "%s\n", argv[i]);
    if (part == PART_SEED) fprintf(f, "--seed %lld\n", (long long)o->seed);
    if (part == PART_DATA && o->mock_data)
        fprintf(f, "mock data, vocabulary %lld\n", (long long)o->model.vocab_size);
    for (size_t i = 0; part == PART_DATA && i < o->n_data_path; i++) {
        const char *p = o->data_path[i];
        char *end = NULL;
        strtod(p, &end);
        if (end != p && *end == 0) {
            fprintf(f, "weight %s\n", p); /* a blend weight */
            continue;
        }
        describe_file(f, p, ".bin", 0);
        describe_file(f, p, ".idx", 1);
    }
    if (part == PART_BUILD)
        fprintf(f, "mgtools %s\nbackend %s\n", MG_VERSION, mg_comm_backend_name(w));
    if (fclose(f) != 0) {
        free(*text);
        *text = NULL;
        return MG_ERR_NOMEM;
    }
    return MG_OK;
}

static double digest52(const char *text)
{
    uint8_t d[16];
    mg_md5 m;
    mg_md5_init(&m);
    mg_md5_update(&m, text, strlen(text));
    mg_md5_final(&m, d);
    uint64_t v = 0;
    for (int i = 0; i < 8; i++) v = v << 8 | d[i];
    return (double)(v >> 12);
}

/* Rank `root`'s text of a part, to everyone (malloc'd in *text). */
static mg_status share(mg_comm *w, const char *mine, int64_t root, char **text)
{
    int64_t n = mg_comm_rank(w) == root ? (int64_t)strlen(mine) + 1 : 0;
    *text = NULL;
    MG_FORWARD(mg_comm_broadcast(w, &n, sizeof n, root));
    char *t = mg_malloc((size_t)n);
    if (!t) return MG_ERR_NOMEM;
    if (mg_comm_rank(w) == root) memcpy(t, mine, (size_t)n);
    mg_status st = mg_comm_broadcast(w, t, n, root);
    if (st != MG_OK) {
        free(t);
        return st;
    }
    t[n - 1] = 0;
    *text = t;
    return MG_OK;
}

/* Line i (0-based) of text into buf ("(none)" past the end). */
static void line_of(const char *text, int64_t i, char *buf, size_t n)
{
    for (; i > 0 && text; i--) {
        text = strchr(text, '\n');
        if (text) text++;
    }
    if (!text || !*text) {
        snprintf(buf, n, "(none)");
        return;
    }
    size_t len = strcspn(text, "\n");
    snprintf(buf, n, "%.*s", (int)(len < n - 1 ? len : n - 1), text);
}

static int64_t first_diff_line(const char *a, const char *b)
{
    int64_t line = 0;
    for (; *a && *a == *b; a++, b++)
        if (*a == '\n') line++;
    return line;
}

static mg_status report(mg_comm *w, const mg_train_opts *o, int argc, char **argv,
                        int64_t rank, int part, int64_t others)
{
    char *mine = NULL, *ref = NULL, *theirs = NULL;
    mg_status st = describe(w, o, argc, argv, part, &mine);
    if (st == MG_OK) st = share(w, mine, 0, &ref);
    if (st == MG_OK) st = share(w, mine, rank, &theirs);
    if (st == MG_OK) {
        char a[256], b[256];
        int64_t line = first_diff_line(ref, theirs);
        line_of(theirs, line, a, sizeof a);
        line_of(ref, line, b, sizeof b);
        st = mg_error_set(MG_ERR_ARG, "the ranks do not run the same configuration: rank %lld "
                          "differs from rank 0 in its %s: %s %lld is \"%s\" on rank %lld "
                          "but \"%s\" on rank 0 (%lld more ranks differ)", (long long)rank,
                          part_names[part], part == PART_FLAGS ? "word" : "line",
                          (long long)line + 1, a, (long long)rank, b,
                          (long long)others);
    }
    free(mine);
    free(ref);
    free(theirs);
    return st;
}

mg_status mg_train_check_ranks(mg_comm *w, const mg_train_opts *o, int argc, char **argv)
{
    int64_t n = mg_comm_size(w), me = mg_comm_rank(w);
    if (n == 1) return MG_OK;
    double *table = mg_calloc((size_t)(n * NPARTS), sizeof *table);
    if (!table) return MG_ERR_NOMEM;
    mg_status st = MG_OK;
    for (int p = 0; st == MG_OK && p < NPARTS; p++) {
        char *text = NULL;
        st = describe(w, o, argc, argv, p, &text);
        if (st == MG_OK) table[me * NPARTS + p] = digest52(text);
        free(text);
    }
    if (st == MG_OK) st = mg_comm_allreduce_sum_f64(w, table, n * NPARTS);
    /* the part named: seed before flags (the flags hold --seed too), then data, build */
    static const int priority[NPARTS] = {PART_SEED, PART_DATA, PART_BUILD, PART_FLAGS};
    int64_t bad_rank = -1, others = 0;
    int bad_part = 0;
    for (int64_t r = 1; st == MG_OK && r < n; r++) {
        int part = -1;
        for (int i = NPARTS - 1; i >= 0; i--)
            if (table[r * NPARTS + priority[i]] != table[priority[i]]) part = priority[i];
        if (part < 0) continue;
        if (bad_rank >= 0) {
            others++;
            continue;
        }
        bad_rank = r;
        bad_part = part;
    }
    free(table);
    if (st != MG_OK || bad_rank < 0) return st;
    return report(w, o, argc, argv, bad_rank, bad_part, others);
}

/* gpt_samples.c — test program for mg/gptds.h: Megatron's GPT samples of each split.
 *
 *   gpt_samples --data-path [W1] P1 [[W2] P2 ...] [--split "969, 30, 1"] --seq-length S
 *               (or --train-data-path ... --valid-data-path ... --test-data-path ...)
 *               [--seed 1234] [--train-samples N] [--valid-samples N] [--test-samples N]
 *               [--first N] [--pad-id -1] [--surplus 0.005] [--no-extra-token]
 *               [--keep-partial-validation] [--raw OUT] [--indices]
 *
 * Builds the datasets like BlendedMegatronDatasetBuilder (a missing --X-samples is None),
 * then for each present split prints "SPLIT LEN" and, for the first N samples (all without
 * --first), "SPLIT I DATASET_ID: tok tok ..." (seq_length + 1 tokens). --raw OUT writes the
 * same tokens instead as int64 little-endian, split after split, sample after sample.
 * --indices also prints each GPTDataset's indices: "doc SPLIT P: ...", "sample SPLIT P: b o
 * b o ...", "shuffle SPLIT P: ...", and "epochs SPLIT P: E SEPARATE".
 * RandomState modes (mg/nprandom.h), output raw int64 little-endian:
 *   gpt_samples --np-shuffle SEED N DTYPE OUT    arange(N, dtype) shuffled (i32, u32 or i64)
 *   gpt_samples --np-randint SEED LOW HIGH N OUT randint(LOW, HIGH, size=N)
 * Exit status 0 on success, 1 on a library error, 2 on a usage error.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/gptds.h"
#include "mg/nprandom.h"

typedef struct {
    char **data_path;
    size_t n_data_path;
    char **split_path[MG_SPLIT_COUNT]; /* --train/valid/test-data-path */
    size_t n_split_path[MG_SPLIT_COUNT];
    mg_gpt_data_config cfg;
    int64_t first; /* < 0: all */
    int64_t pad_id;
    const char *raw;
    int indices;
} opts;

static int usage(const char *what)
{
    fprintf(stderr, "gpt_samples: error: %s\n", what);
    return 2;
}

static int needs_value(const char *a)
{
    static const char *const v[] = {"--split", "--seq-length", "--seed", "--train-samples",
                                    "--valid-samples", "--test-samples", "--first", "--pad-id",
                                    "--surplus", "--raw"};
    for (size_t i = 0; i < sizeof v / sizeof v[0]; i++)
        if (strcmp(a, v[i]) == 0) return 1;
    return 0;
}

static void set_value(opts *o, const char *a, const char *v)
{
    if (strcmp(a, "--split") == 0) o->cfg.split = v;
    else if (strcmp(a, "--seq-length") == 0) o->cfg.seq_length = strtoll(v, NULL, 10);
    else if (strcmp(a, "--seed") == 0) o->cfg.seed = strtoull(v, NULL, 10);
    else if (strcmp(a, "--train-samples") == 0) o->cfg.sizes[0] = strtoll(v, NULL, 10);
    else if (strcmp(a, "--valid-samples") == 0) o->cfg.sizes[1] = strtoll(v, NULL, 10);
    else if (strcmp(a, "--test-samples") == 0) o->cfg.sizes[2] = strtoll(v, NULL, 10);
    else if (strcmp(a, "--first") == 0) o->first = strtoll(v, NULL, 10);
    else if (strcmp(a, "--pad-id") == 0) o->pad_id = strtoll(v, NULL, 10);
    else if (strcmp(a, "--surplus") == 0) o->cfg.surplus = strtod(v, NULL);
    else if (strcmp(a, "--raw") == 0) o->raw = v;
}

static int split_path_option(const char *a)
{
    for (int k = 0; k < MG_SPLIT_COUNT; k++) {
        char name[32];
        snprintf(name, sizeof name, "--%s-data-path", mg_split_name(k));
        if (strcmp(a, name) == 0) return k;
    }
    return -1;
}

static int parse(opts *o, int argc, char **argv)
{
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        int k = split_path_option(a);
        if (strcmp(a, "--data-path") == 0) {
            o->data_path = &argv[i + 1];
            while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) i++, o->n_data_path++;
        } else if (k >= 0) {
            o->split_path[k] = &argv[i + 1];
            while (i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0) i++, o->n_split_path[k]++;
        } else if (strcmp(a, "--no-extra-token") == 0) {
            o->cfg.add_extra_token = 0;
        } else if (strcmp(a, "--keep-partial-validation") == 0) {
            o->cfg.drop_last_partial_validation = 0;
        } else if (strcmp(a, "--indices") == 0) {
            o->indices = 1;
        } else if (needs_value(a) && i + 1 < argc) {
            set_value(o, a, argv[++i]);
        } else {
            fprintf(stderr, "gpt_samples: error: unknown or incomplete option \"%s\"\n", a);
            return 2;
        }
    }
    size_t per_split = o->n_split_path[0] + o->n_split_path[1] + o->n_split_path[2];
    if ((o->n_data_path == 0) == (per_split == 0))
        return usage("give --data-path or --{train,valid,test}-data-path");
    if (o->cfg.seq_length <= 0) return usage("--seq-length is required");
    return 0;
}

static void print_indices(const mg_gpt_data *d, int k)
{
    for (size_t p = 0; p < mg_gpt_data_n_datasets(d, k); p++) {
        const mg_gptds *ds = mg_gpt_data_dataset(d, k, p);
        if (!ds) continue;
        size_t n;
        const int32_t *doc = mg_gptds_document_index(ds, &n);
        printf("epochs %s %zu: %" PRId64 " %d\n", mg_split_name(k), p, mg_gptds_epochs(ds),
               mg_gptds_separate_final_epoch(ds));
        printf("doc %s %zu:", mg_split_name(k), p);
        for (size_t i = 0; i < n; i++) printf(" %" PRId32, doc[i]);
        const int64_t *si = mg_gptds_sample_index(ds, &n);
        printf("\nsample %s %zu:", mg_split_name(k), p);
        for (size_t i = 0; i < 2 * n; i++) printf(" %" PRId64, si[i]);
        const int64_t *sh = mg_gptds_shuffle_index(ds, &n);
        printf("\nshuffle %s %zu:", mg_split_name(k), p);
        for (size_t i = 0; i < n; i++) printf(" %" PRId64, sh[i]);
        printf("\n");
    }
}

static int emit_split(const opts *o, const mg_gpt_data *d, int k, int64_t *tok, FILE *raw)
{
    uint64_t len = mg_gpt_data_len(d, k);
    size_t width = (size_t)o->cfg.seq_length + (o->cfg.add_extra_token ? 1 : 0);
    printf("%s %" PRIu64 "\n", mg_split_name(k), len);
    if (o->indices) print_indices(d, k);
    uint64_t n = o->first >= 0 && (uint64_t)o->first < len ? (uint64_t)o->first : len;
    for (uint64_t i = 0; i < n; i++) {
        int id;
        if (mg_gpt_data_sample(d, k, i, o->pad_id, tok, &id) != MG_OK) return 1;
        if (raw) {
            if (fwrite(tok, sizeof *tok, width, raw) != width) return 1;
            continue;
        }
        printf("%s %" PRIu64 " %d:", mg_split_name(k), i, id);
        for (size_t j = 0; j < width; j++) printf(" %" PRId64, tok[j]);
        printf("\n");
    }
    return 0;
}

/* Parses --data-path or the per-split paths into b[0] or b[0..2]. */
static int parse_blends(const opts *o, mg_gpt_blend b[MG_SPLIT_COUNT], mg_gpt_data_config *c)
{
    if (o->n_data_path) {
        c->blend = &b[0];
        return mg_gpt_blend_parse(&b[0], (const char *const *)o->data_path, o->n_data_path);
    }
    for (int k = 0; k < MG_SPLIT_COUNT; k++) {
        if (!o->n_split_path[k]) continue;
        c->blend_per_split[k] = &b[k];
        if (mg_gpt_blend_parse(&b[k], (const char *const *)o->split_path[k],
                               o->n_split_path[k]) != MG_OK)
            return 1;
    }
    return 0;
}

static int run(const opts *o)
{
    mg_gpt_blend b[MG_SPLIT_COUNT];
    memset(b, 0, sizeof b);
    mg_gpt_data *d = NULL;
    mg_gpt_data_config c = o->cfg;
    int rc = parse_blends(o, b, &c);
    if (rc == 0) rc = mg_gpt_data_create(&d, &c) == MG_OK ? 0 : 1;
    int64_t *tok = malloc(((size_t)c.seq_length + 1) * sizeof *tok);
    FILE *raw = o->raw && rc == 0 ? fopen(o->raw, "wb") : NULL;
    if (!tok || (o->raw && rc == 0 && !raw)) {
        mg_error_set(MG_ERR_IO, "%s: cannot write", o->raw ? o->raw : "memory");
        rc = 1;
    }
    for (int k = 0; rc == 0 && k < MG_SPLIT_COUNT; k++)
        if (mg_gpt_data_has_split(d, k)) rc = emit_split(o, d, k, tok, raw);
    if (raw && fclose(raw) != 0) rc = 1;
    free(tok);
    mg_gpt_data_free(d);
    for (int k = 0; k < MG_SPLIT_COUNT; k++) mg_gpt_blend_clear(&b[k]);
    return rc;
}

static int write_raw(const char *path, const int64_t *v, size_t n)
{
    FILE *f = fopen(path, "wb");
    int ok = f && fwrite(v, sizeof *v, n, f) == n;
    if (f && fclose(f) != 0) ok = 0;
    if (!ok) fprintf(stderr, "gpt_samples: error: cannot write %s\n", path);
    return ok ? 0 : 1;
}

/* arange(n) of the given dtype, shuffled, widened to int64. */
static int np_shuffle(char **a)
{
    mg_nprandom rs;
    size_t n = (size_t)strtoull(a[1], NULL, 10);
    int64_t *v = malloc((n ? n : 1) * sizeof *v);
    if (!v || mg_nprandom_seed(&rs, strtoull(a[0], NULL, 10)) != MG_OK) return 1;
    for (size_t i = 0; i < n; i++) v[i] = (int64_t)i;
    if (strcmp(a[2], "i64") == 0) {
        mg_nprandom_shuffle_i64(&rs, v, n);
    } else {
        int32_t *w = malloc((n ? n : 1) * sizeof *w);
        if (!w) return 1;
        for (size_t i = 0; i < n; i++) w[i] = (int32_t)i;
        if (strcmp(a[2], "u32") == 0) mg_nprandom_shuffle_u32(&rs, (uint32_t *)w, n);
        else mg_nprandom_shuffle_i32(&rs, w, n);
        for (size_t i = 0; i < n; i++) v[i] = w[i];
        free(w);
    }
    int rc = write_raw(a[3], v, n);
    free(v);
    return rc;
}

static int np_randint(char **a)
{
    mg_nprandom rs;
    size_t n = (size_t)strtoull(a[3], NULL, 10);
    int64_t *v = malloc((n ? n : 1) * sizeof *v);
    if (!v || mg_nprandom_seed(&rs, strtoull(a[0], NULL, 10)) != MG_OK ||
        mg_nprandom_randint(&rs, strtoll(a[1], NULL, 10), strtoll(a[2], NULL, 10), v, n) != MG_OK) {
        fprintf(stderr, "gpt_samples: error: %s\n", mg_last_error());
        free(v);
        return 1;
    }
    int rc = write_raw(a[4], v, n);
    free(v);
    return rc;
}

int main(int argc, char **argv)
{
    if (argc == 6 && strcmp(argv[1], "--np-shuffle") == 0) return np_shuffle(argv + 2);
    if (argc == 7 && strcmp(argv[1], "--np-randint") == 0) return np_randint(argv + 2);
    opts o = {0};
    o.cfg.split = "969, 30, 1";
    o.cfg.sizes[0] = o.cfg.sizes[1] = o.cfg.sizes[2] = -1;
    o.cfg.seed = 1234;
    o.cfg.add_extra_token = 1;
    o.cfg.drop_last_partial_validation = 1;
    o.cfg.surplus = 0.005;
    o.first = -1;
    o.pad_id = -1;
    int rc = parse(&o, argc, argv);
    if (rc) return rc;
    if (run(&o) != 0) {
        fprintf(stderr, "gpt_samples: error: %s\n", mg_last_error());
        return 1;
    }
    return 0;
}

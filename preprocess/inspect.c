/* inspect.c — `mg-preprocess --inspect PREFIX [--decode SPEC]`: a dataset's summary, its
 * consistency (the reader's checks) and chosen documents decoded; see inspect.h. */
#include "inspect.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/cli.h"
#include "mg/idxds.h"
#include "mg/tokenizer.h"

typedef struct {
    uint64_t first, last; /* inclusive */
} doc_range;

/* ---- statistics ---- */

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

/* Nearest-rank percentile p of n sorted values: index ceil(p/100 * n) - 1. */
static uint64_t rank(uint64_t n, uint64_t p)
{
    return n / 100 * p + (n % 100 * p + 99) / 100 - 1;
}

/* Prints "LABEL min A, p50 B, p90 C, p99 D, max E, mean F" of v[0, n) (sorted in place). */
static void print_stats(const char *label, int64_t *v, uint64_t n)
{
    if (n == 0) {
        printf("%-28s none\n", label);
        return;
    }
    qsort(v, n, sizeof *v, cmp_i64);
    static const int pct[] = {50, 90, 99};
    double sum = 0;
    for (uint64_t i = 0; i < n; i++) sum += (double)v[i];
    printf("%-28s min %" PRId64, label, v[0]);
    for (size_t k = 0; k < sizeof pct / sizeof pct[0]; k++)
        printf(", p%d %" PRId64, pct[k], v[rank(n, (uint64_t)pct[k])]);
    printf(", max %" PRId64 ", mean %.2f\n", v[n - 1], sum / (double)n);
}

static int64_t *alloc_i64(uint64_t n)
{
    int64_t *v = malloc((n ? n : 1) * sizeof *v);
    if (!v) mg_die(MG_EXIT_FAILURE, "out of memory (%" PRIu64 " lengths)", n);
    return v;
}

/* Tokens of document d: the sum of its sequences' lengths. */
static int64_t doc_tokens(const mg_idx *d, uint64_t doc)
{
    int64_t t = 0;
    for (uint64_t s = (uint64_t)d->doc_index[doc]; s < (uint64_t)d->doc_index[doc + 1]; s++)
        t += d->lengths[s];
    return t;
}

static void print_summary(const mg_idx *d, const char *prefix)
{
    uint64_t n_docs = d->n_doc_indices - 1, empty = 0;
    uint64_t tokens = d->bin_size / d->elem_size;
    printf("dataset                      %s (.bin %" PRIu64 " bytes)\n", prefix, d->bin_size);
    printf("dtype                        %s (code %d, %zu bytes)\n", mg_dtype_name(d->dtype),
           (int)d->dtype, d->elem_size);
    printf("documents                    %" PRIu64 "\n", n_docs);
    printf("sequences                    %" PRIu64 "\n", d->n_sequences);
    printf("tokens                       %" PRIu64 "\n", tokens);
    printf("modes                        %s\n", d->modes ? "yes (multimodal)" : "no");
    int64_t *v = alloc_i64(d->n_sequences > n_docs ? d->n_sequences : n_docs);
    for (uint64_t i = 0; i < d->n_sequences; i++) v[i] = d->lengths[i];
    print_stats("sequence length (tokens)", v, d->n_sequences);
    for (uint64_t i = 0; i < n_docs; i++) {
        v[i] = doc_tokens(d, i);
        empty += d->doc_index[i + 1] == d->doc_index[i];
    }
    print_stats("document length (tokens)", v, n_docs);
    for (uint64_t i = 0; i < n_docs; i++) v[i] = d->doc_index[i + 1] - d->doc_index[i];
    print_stats("document length (sequences)", v, n_docs);
    free(v);
    printf("empty documents              %" PRIu64 "\n", empty);
    printf("consistency                  ok (header, sizes, pointers, document indices)\n");
}

/* ---- --decode SPEC ---- */

static int parse_u64(const char *s, size_t n, uint64_t *v)
{
    char buf[32];
    int64_t x;
    if (n == 0 || n >= sizeof buf) return -1;
    memcpy(buf, s, n);
    buf[n] = 0;
    if (mg_parse_i64(buf, 0, INT64_MAX, &x) != 0) return -1;
    *v = (uint64_t)x;
    return 0;
}

/* One comma-separated item "N" or "A-B" (A <= B). */
static int parse_item(const char *s, size_t n, doc_range *r)
{
    const char *dash = memchr(s, '-', n);
    if (!dash) {
        if (parse_u64(s, n, &r->first) != 0) return -1;
        r->last = r->first;
        return 0;
    }
    if (parse_u64(s, (size_t)(dash - s), &r->first) != 0 ||
        parse_u64(dash + 1, n - (size_t)(dash + 1 - s), &r->last) != 0)
        return -1;
    return r->first <= r->last ? 0 : -1;
}

static doc_range *parse_spec(const char *spec, size_t *n_out)
{
    size_t cap = 1;
    for (const char *p = spec; *p; p++) cap += *p == ',';
    doc_range *r = calloc(cap, sizeof *r);
    if (!r) mg_die(MG_EXIT_FAILURE, "out of memory");
    size_t n = 0;
    for (const char *p = spec;;) {
        const char *comma = strchr(p, ',');
        size_t len = comma ? (size_t)(comma - p) : strlen(p);
        if (parse_item(p, len, &r[n]) != 0) {
            free(r);
            mg_usage_error("--decode: invalid document list '%s' (expected indices and "
                           "ranges such as 0,5,10-12)", spec);
        }
        n++;
        if (!comma) break;
        p = comma + 1;
    }
    *n_out = n;
    return r;
}

/* Decodes sequence s of the dataset into *text. */
static mg_status decode_sequence(const mg_idx *d, const mg_tokenizer *tk, uint64_t s,
                                 mg_ids *ids, mg_text *text)
{
    ids->n = 0;
    text->n = 0;
    for (uint64_t j = 0; j < (uint64_t)d->lengths[s]; j++)
        MG_FORWARD(mg_ids_push(ids, mg_idx_token(d, s, j)));
    return mg_tokenizer_decode(tk, ids->v, ids->n, text);
}

static void print_document(const mg_idx *d, const mg_tokenizer *tk, uint64_t doc, mg_ids *ids,
                           mg_text *text)
{
    uint64_t s0 = (uint64_t)d->doc_index[doc], s1 = (uint64_t)d->doc_index[doc + 1];
    printf("=== document %" PRIu64 ": %" PRIu64 " sequences, %" PRId64 " tokens ===\n", doc,
           s1 - s0, doc_tokens(d, doc));
    for (uint64_t s = s0; s < s1; s++) {
        mg_status st = decode_sequence(d, tk, s, ids, text);
        if (st != MG_OK) fflush(stdout); /* the documents before it, then the message */
        if (st == MG_ERR_UNSUPPORTED) mg_die_status(st);
        if (st != MG_OK)
            mg_die(MG_EXIT_FAILURE, "document %" PRIu64 ", sequence %" PRIu64 ": %s", doc, s,
                   mg_last_error());
        fwrite(text->n ? text->p : "", 1, text->n, stdout);
        putchar('\n');
    }
}

typedef struct {
    doc_range *r;
    size_t n;
    mg_tokenizer *tk;
} decode_plan;

/* Checks SPEC against the dataset and builds the tokenizer, before anything is printed. */
static void plan_decode(const struct mg_preprocess_opts *o, const mg_idx *d, decode_plan *p)
{
    p->r = parse_spec(o->decode_spec, &p->n);
    uint64_t n_docs = d->n_doc_indices - 1;
    for (size_t i = 0; i < p->n; i++)
        if (p->r[i].last >= n_docs)
            mg_usage_error("--decode: document %" PRIu64 " does not exist (%s has %" PRIu64
                           " documents)", p->r[i].last, o->inspect, n_docs);
    mg_status st = mg_tokenizer_create(&p->tk, &o->tok);
    if (st != MG_OK) mg_die_status(st);
}

static void decode_documents(const mg_idx *d, const decode_plan *p)
{
    mg_ids ids = {0};
    mg_text text = {0};
    for (size_t i = 0; i < p->n; i++)
        for (uint64_t doc = p->r[i].first; doc <= p->r[i].last; doc++)
            print_document(d, p->tk, doc, &ids, &text);
    mg_ids_free(&ids);
    mg_text_free(&text);
}

int pp_run_inspect(const struct mg_preprocess_opts *o)
{
    mg_idx d;
    mg_status st = mg_idx_open(&d, o->inspect);
    if (st != MG_OK) mg_die(MG_EXIT_FAILURE, "%s", mg_last_error());
    decode_plan plan = {0};
    if (o->decode_spec) plan_decode(o, &d, &plan);
    print_summary(&d, o->inspect);
    if (o->decode_spec) decode_documents(&d, &plan);
    mg_tokenizer_free(plan.tk);
    free(plan.r);
    mg_idx_close(&d);
    return fflush(stdout) == 0 ? MG_EXIT_OK : MG_EXIT_FAILURE;
}

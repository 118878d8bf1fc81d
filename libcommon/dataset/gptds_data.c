/* gptds_data.c — mg_gpt_data: BlendedMegatronDatasetBuilder.build() for `blend` + `split`
 * or `blend_per_split`, and BlendedDataset item lookup (contract in mg/gptds.h; facts in
 * docs/FORMATS.md §3.8).
 *
 * All opened .idx files live in one array; split k uses entries [base[k], base[k] + n[k])
 * (the same entries for every split with --data-path, its own with per-split blends).
 * With --mock-data there is no .idx: every split reads the one mock source.
 */
#include "gptds_internal.h" /* struct mg_gptds, the index caches */

#include <stdlib.h>
#include <string.h>

typedef struct {
    int present;
    int blended;        /* 0: the top level is ds[0] itself */
    uint64_t size;      /* top-level length */
    size_t base, n;     /* the split's datasets: idx[base .. base+n) */
    mg_gptds **ds;      /* [n] */
    int16_t *ds_index;  /* [size] when blended */
    int64_t *ds_sample; /* [size] when blended */
} split_data;

struct mg_gpt_data {
    size_t n_idx, cap_idx;
    mg_idx *idx; /* [n_idx], all opened */
    mg_gpt_mock *mock; /* --mock-data, else NULL */
    const mg_gpt_desc_ctx *desc; /* cache identity during create (NULL: no cache) */
    split_data split[MG_SPLIT_COUNT];
};

void mg_gpt_data_free(mg_gpt_data *d)
{
    if (!d) return;
    for (int k = 0; k < MG_SPLIT_COUNT; k++) {
        split_data *s = &d->split[k];
        for (size_t p = 0; s->ds && p < s->n; p++) mg_gptds_free(s->ds[p]);
        free(s->ds);
        free(s->ds_index);
        free(s->ds_sample);
    }
    for (size_t p = 0; p < d->n_idx; p++) mg_idx_close(&d->idx[p]);
    free(d->idx);
    mg_gpt_mock_free(d->mock);
    free(d);
}

/* Opens the prefixes of b; returns the index of the first in d->idx. The array is sized
 * once in mg_gpt_data_create, so pointers into it stay valid. */
static mg_status open_blend(mg_gpt_data *d, const mg_gpt_blend *b, size_t *base)
{
    *base = d->n_idx;
    MG_ASSERT(d->n_idx + b->n <= d->cap_idx);
    for (size_t p = 0; p < b->n; p++) {
        MG_FORWARD(mg_idx_open(&d->idx[d->n_idx], b->prefixes[p]));
        d->n_idx++;
    }
    return MG_OK;
}

/* Marks the splits of m as built from b (opened at base). */
static mg_status assign_splits(mg_gpt_data *d, const mg_split_matrix *m, size_t base, size_t n)
{
    for (int k = 0; k < MG_SPLIT_COUNT; k++) {
        if (!m->present[k]) continue;
        split_data *s = &d->split[k];
        s->present = 1;
        s->base = base;
        s->n = n;
        s->ds = mg_calloc(n, sizeof *s->ds);
        if (!s->ds) return MG_ERR_NOMEM;
    }
    return MG_OK;
}

/* GPTDataset of prefix p for every present split, num_samples[k] (< 0: None). */
static mg_status build_prefix(mg_gpt_data *d, const mg_gpt_data_config *c,
                              const mg_gpt_blend *b, const mg_split_matrix *m, size_t p,
                              const int64_t *num_samples)
{
    for (int k = 0; k < MG_SPLIT_COUNT; k++) {
        if (!m->present[k]) continue;
        split_data *s = &d->split[k];
        const mg_idx *idx = &d->idx[s->base + p];
        uint64_t beg, end;
        mg_split_range(m, k, idx->n_sequences, &beg, &end);
        struct mg_gptds_ident id = {d->desc, b->prefixes[p], k};
        mg_gptds_config gc = {c->seed, c->seq_length, c->add_extra_token,
                              k == MG_SPLIT_VALID ? c->drop_last_partial_validation : 1,
                              d->desc ? &id : NULL};
        mg_status st = mg_gptds_create(&s->ds[p], idx, beg, end, num_samples[k], &gc);
        if (st != MG_OK) {
            mg_error_prefix("%s split of %s", mg_split_name(k), b->prefixes[p]);
            return st;
        }
    }
    return MG_OK;
}

/* BlendedDataset: after the indices are built, no dataset may be asked for more samples
 * than it has (Megatron's IndexError). Samples of a dataset are drawn 0, 1, 2, ... */
static mg_status check_oversampling(const mg_gpt_data *d, const mg_gpt_blend *b, int k)
{
    const split_data *s = &d->split[k];
    uint64_t *need = mg_calloc(s->n, sizeof *need);
    if (!need) return MG_ERR_NOMEM;
    for (uint64_t i = 0; i < s->size; i++) need[s->ds_index[i]]++;
    mg_status st = MG_OK;
    for (size_t p = 0; st == MG_OK && p < s->n; p++) {
        uint64_t have = mg_gptds_len(s->ds[p]);
        if (need[p] > have)
            st = mg_error_set(MG_ERR_ARG, "the %s blend draws %llu samples from %s, which has "
                              "only %llu (raise --mid-level-dataset-surplus)", mg_split_name(k),
                              (unsigned long long)need[p], b->prefixes[p],
                              (unsigned long long)have);
    }
    free(need);
    return st;
}

static mg_status alloc_blend(split_data *s, uint64_t size)
{
    s->blended = 1;
    s->size = size;
    s->ds_index = mg_malloc((size ? size : 1) * sizeof *s->ds_index);
    s->ds_sample = mg_malloc((size ? size : 1) * sizeof *s->ds_sample);
    return s->ds_index && s->ds_sample ? MG_OK : MG_ERR_NOMEM;
}

/* The blending indices of split k (weights w, or exhaustive over lens when w is NULL; size
 * < 0: None): read from the cache when it holds them (Megatron then skips its oversampling
 * check; the cached values are bounds-checked instead), else built, checked, saved. */
static mg_status blend_indices(mg_gpt_data *d, const mg_gpt_blend *b, int k, const double *w,
                               const int64_t *lens, int64_t size)
{
    split_data *s = &d->split[k];
    uint64_t count = 0;
    for (size_t p = 0; p < s->n && size < 0; p++) count += (uint64_t)lens[p];
    if (size >= 0) count = (uint64_t)size;
    MG_FORWARD(alloc_blend(s, count));
    mg_blend_desc bd = {d->desc, k, b->prefixes, s->ds, s->n, w, lens, size};
    int loaded = 0;
    MG_FORWARD(mg_blend_cache_load(&bd, s->ds_index, s->ds_sample, count, &loaded));
    if (loaded) return MG_OK;
    if (w) MG_FORWARD(mg_blend_build_indices(w, s->n, size, s->ds_index, s->ds_sample));
    else MG_FORWARD(mg_blend_build_exhaustive(lens, s->n, s->ds_index, s->ds_sample));
    MG_FORWARD(check_oversampling(d, b, k));
    return mg_blend_cache_save(&bd, s->ds_index, s->ds_sample, count);
}

/* The BlendedDataset of split k asked for size samples (< 0: None). w: normalized client
 * weights or NULL. */
static mg_status build_blend(mg_gpt_data *d, const mg_gpt_blend *b, int k, const double *w,
                             int64_t want)
{
    split_data *s = &d->split[k];
    size_t n = s->n;
    double *bw = mg_malloc(n * sizeof *bw);
    int64_t *lens = mg_malloc(n * sizeof *lens), total = 0;
    mg_status st = bw && lens ? MG_OK : MG_ERR_NOMEM;
    for (size_t p = 0; st == MG_OK && p < n; p++) {
        lens[p] = (int64_t)mg_gptds_len(s->ds[p]);
        total += lens[p];
        bw[p] = w ? w[p] : (double)lens[p];
        if (!(bw[p] > 0))
            st = mg_error_set(MG_ERR_ARG, "%s split of %s: blend weight %g is not positive",
                              mg_split_name(k), b->prefixes[p], bw[p]);
    }
    if (st == MG_OK && (w || want >= 0)) {
        int64_t size = 0;
        if (w)
            for (size_t p = 0; p < n; p++) size += mg_blend_dataset_size(want, w[p], 0.0);
        else
            size = want < total ? want : total;
        mg_np_normalize(bw, n, bw); /* BlendedDataset normalizes (again) when size is set */
        if (st == MG_OK) st = blend_indices(d, b, k, bw, lens, size);
    } else if (st == MG_OK) {
        st = blend_indices(d, b, k, NULL, lens, -1);
    }
    free(bw);
    free(lens);
    return st;
}

/* Megatron's blend branch for the splits of m with requested sizes[k]. */
static mg_status build_blended(mg_gpt_data *d, const mg_gpt_data_config *c,
                               const mg_gpt_blend *b, const mg_split_matrix *m,
                               const int64_t *sizes)
{
    double *w = NULL;
    mg_status st = MG_OK;
    if (b->weights) {
        w = mg_malloc(b->n * sizeof *w);
        if (!w) return MG_ERR_NOMEM;
        mg_np_normalize(b->weights, b->n, w);
    }
    for (int k = 0; k < MG_SPLIT_COUNT && w; k++)
        if (sizes[k] < 0)
            st = mg_error_set(MG_ERR_ARG, "a weighted blend needs a sample count for every "
                              "split (%s has none)", mg_split_name(k));
    for (size_t p = 0; st == MG_OK && p < b->n; p++) {
        int64_t buffer[MG_SPLIT_COUNT];
        for (int k = 0; k < MG_SPLIT_COUNT; k++)
            buffer[k] = w ? mg_blend_dataset_size(sizes[k], w[p], c->surplus) : -1;
        st = build_prefix(d, c, b, m, p, buffer);
    }
    for (int k = 0; st == MG_OK && k < MG_SPLIT_COUNT; k++)
        if (m->present[k]) st = build_blend(d, b, k, w, sizes[k]);
    free(w);
    return st;
}

/* The splits of m from blend b; single: one prefix gives a plain GPTDataset. */
static mg_status build_from(mg_gpt_data *d, const mg_gpt_data_config *c, const mg_gpt_blend *b,
                            const mg_split_matrix *m, const int64_t *sizes, int single)
{
    size_t base;
    MG_FORWARD(open_blend(d, b, &base));
    MG_FORWARD(assign_splits(d, m, base, b->n));
    if (!single) return build_blended(d, c, b, m, sizes);
    MG_FORWARD(build_prefix(d, c, b, m, 0, sizes));
    for (int k = 0; k < MG_SPLIT_COUNT; k++)
        if (m->present[k]) d->split[k].size = mg_gptds_len(d->split[k].ds[0]);
    return MG_OK;
}

/* blend_per_split: split k alone, over its whole datasets ((0.0, 1.0)), sizes [0, .., size_k]. */
static mg_status build_per_split(mg_gpt_data *d, const mg_gpt_data_config *c, int k)
{
    const mg_gpt_blend *b = c->blend_per_split[k];
    mg_split_matrix m;
    memset(&m, 0, sizeof m);
    m.present[k] = 1;
    m.beg[k] = 0.0;
    m.end[k] = 1.0;
    MG_RETURN_IF(b->weights && c->sizes[k] < 0, MG_ERR_ARG, "a weighted blend needs a sample "
                 "count for every split (%s has none)", mg_split_name(k));
    int64_t sizes[MG_SPLIT_COUNT] = {0, 0, 0};
    sizes[k] = c->sizes[k];
    return build_from(d, c, b, &m, sizes, b->n == 1);
}

static mg_status check_blend(const mg_gpt_blend *b, const char *what)
{
    MG_RETURN_IF(!b || b->n == 0, MG_ERR_ARG, "%s: no dataset prefix given", what);
    MG_RETURN_IF(b->n >= 32767, MG_ERR_ARG, "%s: %zu datasets, a blend holds fewer than 32767",
                 what, b->n);
    return MG_OK;
}

/* The builder's mock branch: one MockGPTLowLevelDataset, split "1,1,1" whatever --split
 * says, one plain MockGPTDataset of sizes[k] samples (< 0: None) per split. */
static mg_status build_mock(mg_gpt_data *d, const mg_gpt_data_config *c)
{
    MG_FORWARD(mg_gpt_mock_create(&d->mock, c->mock_vocab_size, c->mock_eod));
    mg_gpt_source src = mg_gpt_mock_source(d->mock);
    mg_split_matrix m;
    MG_FORWARD(mg_split_parse("1,1,1", &m));
    MG_FORWARD(assign_splits(d, &m, 0, 1));
    for (int k = 0; k < MG_SPLIT_COUNT; k++) {
        split_data *s = &d->split[k];
        uint64_t beg, end;
        mg_split_range(&m, k, src.n_sequences, &beg, &end);
        /* MockGPTDataset caches only in an explicit --data-cache-path (dataset_path None) */
        struct mg_gptds_ident id = {d->desc, NULL, k};
        mg_gptds_config gc;
        memset(&gc, 0, sizeof gc);
        gc.seed = c->seed;
        gc.seq_length = c->seq_length;
        gc.add_extra_token = c->add_extra_token;
        gc.drop_last = k == MG_SPLIT_VALID ? c->drop_last_partial_validation : 1;
        gc.ident = d->desc ? &id : NULL;
        mg_status st = mg_gptds_create_source(&s->ds[0], &src, beg, end, c->sizes[k], &gc);
        if (st != MG_OK) {
            mg_error_prefix("%s split of the mock data", mg_split_name(k));
            return st;
        }
        s->size = mg_gptds_len(s->ds[0]);
    }
    return MG_OK;
}

static mg_status build_all(mg_gpt_data *d, const mg_gpt_data_config *c)
{
    if (c->mock) return build_mock(d, c);
    size_t total = 0;
    if (c->blend) {
        MG_FORWARD(check_blend(c->blend, "--data-path"));
        total = c->blend->n;
    }
    for (int k = 0; !c->blend && k < MG_SPLIT_COUNT; k++)
        if (c->blend_per_split[k]) {
            MG_FORWARD(check_blend(c->blend_per_split[k], mg_split_name(k)));
            total += c->blend_per_split[k]->n;
        }
    MG_RETURN_IF(total == 0, MG_ERR_ARG, "no dataset prefix given");
    d->idx = mg_calloc(total, sizeof *d->idx);
    if (!d->idx) return MG_ERR_NOMEM;
    d->cap_idx = total;
    if (!c->blend) {
        for (int k = 0; k < MG_SPLIT_COUNT; k++)
            if (c->blend_per_split[k]) MG_FORWARD(build_per_split(d, c, k));
        return MG_OK;
    }
    mg_split_matrix m;
    MG_FORWARD(mg_split_parse(c->split, &m));
    return build_from(d, c, c->blend, &m, c->sizes, c->blend->n == 1 && !c->blend->weights);
}

mg_status mg_gpt_data_create(mg_gpt_data **out, const mg_gpt_data_config *cfg)
{
    *out = NULL;
    mg_gpt_data *d = mg_calloc(1, sizeof *d);
    if (!d) return MG_ERR_NOMEM;
    mg_gpt_desc_ctx desc = {cfg->cache, cfg->seed, cfg->seq_length, NULL, NULL, cfg->mock};
    mg_split_matrix m;
    mg_status st = MG_OK;
    if (cfg->cache && (cfg->blend || cfg->mock)) { /* config.split, config.split_matrix */
        desc.split = cfg->mock ? "1,1,1" : cfg->split;
        st = mg_split_parse(desc.split, &m);
        desc.matrix = &m;
    }
    d->desc = cfg->cache ? &desc : NULL;
    if (st == MG_OK) st = build_all(d, cfg);
    d->desc = NULL;
    if (st != MG_OK) {
        mg_gpt_data_free(d);
        return st;
    }
    *out = d;
    return MG_OK;
}

int mg_gpt_data_has_split(const mg_gpt_data *d, int k)
{
    return k >= 0 && k < MG_SPLIT_COUNT && d->split[k].present;
}

uint64_t mg_gpt_data_len(const mg_gpt_data *d, int k)
{
    return mg_gpt_data_has_split(d, k) ? d->split[k].size : 0;
}

size_t mg_gpt_data_n_datasets(const mg_gpt_data *d, int k)
{
    return mg_gpt_data_has_split(d, k) ? d->split[k].n : 0;
}

const mg_gptds *mg_gpt_data_dataset(const mg_gpt_data *d, int k, size_t p)
{
    return mg_gpt_data_has_split(d, k) && p < d->split[k].n ? d->split[k].ds[p] : NULL;
}

mg_status mg_gpt_data_sample(const mg_gpt_data *d, int k, uint64_t i, int64_t pad_id,
                             int64_t *out, int *dataset_id)
{
    MG_RETURN_IF(!mg_gpt_data_has_split(d, k), MG_ERR_ARG, "the %s split is empty (--split)",
                 mg_split_name(k));
    const split_data *s = &d->split[k];
    MG_RETURN_IF(i >= s->size, MG_ERR_ARG, "%s sample %llu: the split has %llu",
                 mg_split_name(k), (unsigned long long)i, (unsigned long long)s->size);
    size_t p = s->blended ? (size_t)s->ds_index[i] : 0;
    uint64_t j = s->blended ? (uint64_t)s->ds_sample[i] : i;
    if (dataset_id) *dataset_id = (int)p;
    return mg_gptds_sample(s->ds[p], j, pad_id, out);
}

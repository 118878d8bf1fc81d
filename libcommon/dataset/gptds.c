/* gptds.c — one Megatron GPTDataset: epochs, the document/sample/shuffle indices and the
 * tokens of a sample (contract in mg/gptds.h; facts in docs/FORMATS.md §3.2-§3.6).
 *
 * RNG order (GPTDataset._build_document_sample_shuffle_indices): one RandomState(seed) per
 * dataset; the document index is shuffled first (one shuffle over all epochs, or one over the
 * first E-1 epochs and one over the last), then the shuffle index (one or two shuffles).
 */
#include "gptds_internal.h" /* struct mg_gptds, the index caches */

#include <math.h>
#include <stdlib.h>
#include <string.h>

mg_status mg_gpt_num_epochs(int64_t tokens_per_epoch, int64_t num_samples, int64_t seq_length,
                            int extra, int64_t *epochs)
{
    *epochs = 1;
    if (num_samples < 0) return MG_OK;
    int64_t need = num_samples * seq_length + extra;
    MG_RETURN_IF(tokens_per_epoch <= 0 && need > 0, MG_ERR_ARG,
                 "%lld samples requested from a split without tokens", (long long)num_samples);
    /* smallest E with E*T >= need (Megatron's loop, in closed form) */
    if (need > tokens_per_epoch) *epochs = (need + tokens_per_epoch - 1) / tokens_per_epoch;
    return MG_OK;
}

/* Python floor division for a possibly negative numerator and a positive divisor. */
static int64_t floor_div(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && a < 0) ? q - 1 : q;
}

mg_status mg_gpt_separate_final_epoch(int64_t tokens_per_epoch, int64_t num_samples,
                                      int64_t seq_length, int extra, int64_t epochs,
                                      int *separate, int64_t *sans)
{
    *separate = 0;
    *sans = 0;
    if (epochs == 1) return MG_OK;
    *sans = floor_div((epochs - 1) * tokens_per_epoch - extra, seq_length);
    int64_t final_epoch = num_samples - *sans;
    int64_t per_epoch = floor_div(tokens_per_epoch - extra, seq_length);
    MG_RETURN_IF(final_epoch < 0 || final_epoch > per_epoch + 1, MG_ERR_ARG,
                 "%lld samples from the final epoch, outside [0, %lld]",
                 (long long)final_epoch, (long long)(per_epoch + 1));
    *separate = final_epoch < (int64_t)(0.80 * (double)per_epoch);
    return MG_OK;
}

static void document_epochs(mg_nprandom *rs, int32_t beg, size_t n, int64_t epochs,
                            int32_t *out)
{
    for (int64_t e = 0; e < epochs; e++)
        for (size_t i = 0; i < n; i++) out[(size_t)e * n + i] = beg + (int32_t)i;
    mg_nprandom_shuffle_i32(rs, out, (size_t)epochs * n);
}

void mg_gpt_build_document_index(mg_nprandom *rs, int32_t beg, size_t n, int64_t epochs,
                                 int separate_final_epoch, int32_t *out)
{
    if (!separate_final_epoch || epochs == 1) {
        document_epochs(rs, beg, n, epochs, out);
        return;
    }
    document_epochs(rs, beg, n, epochs - 1, out);
    document_epochs(rs, beg, n, 1, out + (size_t)(epochs - 1) * n);
}

int64_t mg_gpt_sample_count(int64_t epochs, int64_t tokens_per_epoch, int64_t seq_length,
                            int drop_last, int extra)
{
    int64_t tokens = epochs * tokens_per_epoch - extra;
    if (drop_last) return tokens / seq_length;
    /* helpers.cpp: ceil(float(tokens) / seq_length) in single precision */
    volatile float q = (float)tokens / (float)seq_length;
    return (int64_t)ceilf(q);
}

/* Walks the document stream for one sample of seq_length + extra tokens from (*di, *off). */
static void advance_sample(const int32_t *lengths, const int32_t *doc_index, size_t n_doc,
                           int64_t seq_length, int extra, int64_t *di, int64_t *off)
{
    int64_t remaining = seq_length + extra;
    while (remaining != 0) {
        int64_t len = lengths[doc_index[*di]] - *off;
        remaining -= len;
        if (remaining <= 0) {
            *off += remaining + len - extra;
            return;
        }
        if ((size_t)*di == n_doc - 1) { /* out of documents: only the non-drop last sample */
            *off = lengths[doc_index[*di]] - extra;
            return;
        }
        ++*di;
        *off = 0;
    }
}

mg_status mg_gpt_build_sample_index(const int32_t *seq_lengths, const int32_t *doc_index,
                                    size_t n_doc_index, int64_t seq_length, int64_t epochs,
                                    int64_t tokens_per_epoch, int drop_last, int extra,
                                    int64_t **pairs, size_t *rows)
{
    *pairs = NULL;
    *rows = 0;
    MG_RETURN_IF(seq_length < 1, MG_ERR_ARG, "sequence length %lld: must be positive",
                 (long long)seq_length);
    /* helpers.cpp asserts seq_length > 1 and tokens_per_epoch > 1, but the compiled module
     * megatron-core ships is built with NDEBUG: an empty split simply has 0 samples (C
     * division truncates (0 - 1) / S to 0). */
    int64_t n = mg_gpt_sample_count(epochs, tokens_per_epoch, seq_length, drop_last, extra);
    if (n < 0) n = 0;
    MG_RETURN_IF(n > 0 && n_doc_index == 0, MG_ERR_ARG,
                 "%lld samples requested from an empty document index", (long long)n);
    int64_t *p = mg_malloc(((size_t)n + 1) * 2 * sizeof *p);
    if (!p) return MG_ERR_NOMEM;
    int64_t di = 0, off = 0;
    p[0] = p[1] = 0;
    for (int64_t k = 1; k <= n; k++) {
        advance_sample(seq_lengths, doc_index, n_doc_index, seq_length, extra, &di, &off);
        p[2 * k] = di;
        p[2 * k + 1] = off;
    }
    *pairs = p;
    *rows = (size_t)n + 1;
    return MG_OK;
}

void mg_gpt_build_shuffle_index(mg_nprandom *rs, size_t n, size_t total, int64_t *out)
{
    for (size_t i = 0; i < total; i++) out[i] = (int64_t)i;
    mg_nprandom_shuffle_i64(rs, out, n);
    if (n < total) mg_nprandom_shuffle_i64(rs, out + n, total - n);
}

static int64_t tokens_in_range(const int32_t *lengths, uint64_t beg, uint64_t end)
{
    int64_t t = 0;
    for (uint64_t i = beg; i < end; i++) t += lengths[i];
    return t;
}

/* Epochs, document index and sample index of ds. */
static mg_status build_indices(mg_gptds *ds, uint64_t beg, uint64_t end, int64_t num_samples,
                               mg_nprandom *rs)
{
    const mg_gptds_config *c = &ds->cfg;
    int extra = c->add_extra_token ? 1 : 0;
    int64_t tokens = tokens_in_range(ds->src.lengths, beg, end), sans;
    MG_FORWARD(mg_gpt_num_epochs(tokens, num_samples, c->seq_length, extra, &ds->epochs));
    MG_FORWARD(mg_gpt_separate_final_epoch(tokens, num_samples, c->seq_length, extra,
                                           ds->epochs, &ds->separate, &sans));
    size_t n = (size_t)(end - beg);
    ds->n_doc_index = (size_t)ds->epochs * n;
    ds->doc_index = mg_malloc((ds->n_doc_index ? ds->n_doc_index : 1) * sizeof *ds->doc_index);
    if (!ds->doc_index) return MG_ERR_NOMEM;
    mg_gpt_build_document_index(rs, (int32_t)beg, n, ds->epochs, ds->separate, ds->doc_index);
    MG_FORWARD(mg_gpt_build_sample_index(ds->src.lengths, ds->doc_index, ds->n_doc_index,
                                         c->seq_length, ds->epochs, tokens, c->drop_last, extra,
                                         &ds->sample_index, &ds->rows));
    size_t total = ds->rows - 1;
    ds->shuffle_index = mg_malloc((total ? total : 1) * sizeof *ds->shuffle_index);
    if (!ds->shuffle_index) return MG_ERR_NOMEM;
    mg_gpt_build_shuffle_index(rs, ds->separate ? (size_t)sans : total, total,
                               ds->shuffle_index);
    return MG_OK;
}

static int64_t idx_token(const void *ctx, uint64_t seq, uint64_t j)
{
    return mg_idx_token((const mg_idx *)ctx, seq, j);
}

mg_gpt_source mg_gpt_source_of_idx(const mg_idx *idx)
{
    mg_gpt_source s = {idx->n_sequences, idx->lengths, idx_token, idx};
    return s;
}

mg_status mg_gptds_create(mg_gptds **out, const mg_idx *idx, uint64_t beg, uint64_t end,
                          int64_t num_samples, const mg_gptds_config *cfg)
{
    mg_gpt_source src = mg_gpt_source_of_idx(idx);
    return mg_gptds_create_source(out, &src, beg, end, num_samples, cfg);
}

mg_status mg_gptds_create_source(mg_gptds **out, const mg_gpt_source *src, uint64_t beg,
                                 uint64_t end, int64_t num_samples, const mg_gptds_config *cfg)
{
    *out = NULL;
    MG_RETURN_IF(beg > end || end > src->n_sequences || end > INT32_MAX, MG_ERR_ARG,
                 "sequence range [%llu, %llu) outside the %llu sequences of the dataset",
                 (unsigned long long)beg, (unsigned long long)end,
                 (unsigned long long)src->n_sequences);
    mg_nprandom rs;
    MG_FORWARD(mg_nprandom_seed(&rs, cfg->seed));
    mg_gptds *ds = mg_calloc(1, sizeof *ds);
    if (!ds) return MG_ERR_NOMEM;
    ds->src = *src;
    ds->cfg = *cfg;
    ds->num_samples = num_samples;
    mg_status st = cfg->ident ? mg_gptds_cache_indices(ds, beg, end, num_samples, &rs,
                                                       build_indices)
                              : build_indices(ds, beg, end, num_samples, &rs);
    if (st != MG_OK) {
        mg_gptds_free(ds);
        return st;
    }
    *out = ds;
    return MG_OK;
}

void mg_gptds_free(mg_gptds *ds)
{
    if (!ds) return;
    free(ds->doc_index);
    free(ds->sample_index);
    free(ds->shuffle_index);
    free(ds);
}

uint64_t mg_gptds_len(const mg_gptds *ds)
{
    return ds->rows - 1;
}

int64_t mg_gptds_epochs(const mg_gptds *ds)
{
    return ds->epochs;
}

int mg_gptds_separate_final_epoch(const mg_gptds *ds)
{
    return ds->separate;
}

const int32_t *mg_gptds_document_index(const mg_gptds *ds, size_t *n)
{
    *n = ds->n_doc_index;
    return ds->doc_index;
}

const int64_t *mg_gptds_sample_index(const mg_gptds *ds, size_t *rows)
{
    *rows = ds->rows;
    return ds->sample_index;
}

const int64_t *mg_gptds_shuffle_index(const mg_gptds *ds, size_t *n)
{
    *n = ds->rows - 1;
    return ds->shuffle_index;
}

/* Appends tokens [from, to) of document-index position di to out at *len. */
static mg_status copy_part(const mg_gptds *ds, int64_t di, int64_t from, int64_t to,
                           int64_t *out, size_t cap, size_t *len)
{
    uint64_t seq = (uint64_t)ds->doc_index[di];
    int64_t seq_len = ds->src.lengths[seq];
    MG_RETURN_IF(from < 0 || from > to || to > seq_len || (size_t)(to - from) > cap - *len,
                 MG_ERR_FORMAT, "sample part [%lld, %lld) of sequence %llu (length %lld) "
                 "does not fit the sample", (long long)from, (long long)to,
                 (unsigned long long)seq, (long long)seq_len);
    for (int64_t j = from; j < to; j++)
        out[(*len)++] = ds->src.token(ds->src.ctx, seq, (uint64_t)j);
    return MG_OK;
}

mg_status mg_gptds_sample(const mg_gptds *ds, uint64_t i, int64_t pad_id, int64_t *out)
{
    MG_RETURN_IF(i >= mg_gptds_len(ds), MG_ERR_ARG, "sample %llu: the dataset has %llu",
                 (unsigned long long)i, (unsigned long long)mg_gptds_len(ds));
    int extra = ds->cfg.add_extra_token ? 1 : 0;
    size_t cap = (size_t)ds->cfg.seq_length + (size_t)extra, len = 0;
    const int64_t *row = ds->sample_index + 2 * ds->shuffle_index[i];
    int64_t b = row[0], bo = row[1], e = row[2], eo = row[3];
    for (int64_t di = b; di <= e; di++) {
        int64_t from = di == b ? bo : 0;
        int64_t to = di == e ? eo + extra : ds->src.lengths[ds->doc_index[di]];
        MG_FORWARD(copy_part(ds, di, from, to, out, cap, &len));
    }
    while (len < cap) out[len++] = pad_id;
    return MG_OK;
}

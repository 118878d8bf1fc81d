/* batch.c — batch.h: the run's datasets and Megatron's sample -> micro-batch rules. */
#include "batch.h"

#include <stdlib.h>
#include <string.h>

static void requested_sizes(const mg_train_opts *o, int64_t sizes[MG_SPLIT_COUNT])
{
    int64_t gbs = o->global_batch_size;
    int64_t interval = o->eval_interval > 0 ? o->eval_interval : 1000;
    sizes[MG_SPLIT_TRAIN] = o->train_samples > 0 ? o->train_samples : o->train_iters * gbs;
    sizes[MG_SPLIT_VALID] = (o->train_iters / interval + 1) * o->eval_iters * gbs;
    sizes[MG_SPLIT_TEST] = o->eval_iters * gbs;
}

static mg_status build(mg_train_data *t, const mg_train_opts *o)
{
    mg_gpt_data_config c;
    memset(&c, 0, sizeof c);
    if (o->mock_data) { /* MockGPTDataset: tokenizer.vocab_size (unpadded) and eod */
        c.mock = 1;
        c.mock_vocab_size = o->model.vocab_size;
        c.mock_eod = t->eod;
    } else {
        MG_FORWARD(mg_gpt_blend_parse(&t->blend, o->data_path, o->n_data_path));
        c.blend = &t->blend;
        c.split = o->split;
    }
    memcpy(c.sizes, t->sizes, sizeof c.sizes);
    c.seed = (uint64_t)o->seed;
    c.seq_length = o->model.seq_length;
    c.add_extra_token = 1;
    c.drop_last_partial_validation = 1;
    c.surplus = 0.005;
    /* Megatron's index caches: --data-cache-path, else its default next to each prefix */
    mg_gpt_cache cache = {o->data_cache_path, NULL, 0};
    MG_FORWARD(mg_gpt_cache_set_tokenizer(&cache, &o->tok));
    c.cache = &cache;
    mg_status st = mg_gpt_data_create(&t->d, &c);
    mg_gpt_cache_clear_tokenizer(&cache);
    return st;
}

mg_status mg_train_data_create(mg_train_data **out, const mg_train_opts *o, int64_t eod)
{
    *out = NULL;
    /* options_validate.c already requires --tokenizer-type with --mock-data */
    MG_RETURN_IF(o->mock_data && eod < 0, MG_ERR_ARG, "--mock-data needs a tokenizer with an "
                 "end-of-document id (Megatron's mock documents end with it)");
    MG_RETURN_IF(!o->mock_data && o->n_data_path == 0, MG_ERR_ARG, "training needs --data-path");
    mg_train_data *t = mg_calloc(1, sizeof *t);
    if (!t) return MG_ERR_NOMEM;
    t->seq_length = o->model.seq_length;
    t->eod = eod;
    t->pad_id = -1;
    t->eod_mask_loss = o->eod_mask_loss;
    t->reset_position_ids = o->reset_position_ids;
    t->reset_attention_mask = o->reset_attention_mask;
    requested_sizes(o, t->sizes);
    t->text = mg_malloc((size_t)(t->seq_length + 1) * sizeof *t->text);
    mg_status st = t->text ? build(t, o) : MG_ERR_NOMEM;
    if (st != MG_OK) {
        mg_train_data_free(t);
        return st;
    }
    *out = t;
    return MG_OK;
}

void mg_train_data_free(mg_train_data *d)
{
    if (!d) return;
    mg_gpt_data_free(d->d);
    mg_gpt_blend_clear(&d->blend);
    free(d->text);
    free(d);
}

mg_status mg_train_batch_alloc(mg_train_batch *b, int64_t B, int64_t T)
{
    memset(b, 0, sizeof *b);
    size_t n = (size_t)(B * T);
    b->B = B;
    b->T = T;
    b->ids = mg_malloc(n * sizeof(int32_t));
    b->targets = mg_malloc(n * sizeof(int32_t));
    b->pos = mg_malloc(n * sizeof(int32_t));
    b->seg = mg_malloc(n * sizeof(int32_t));
    b->loss_mask = mg_malloc(n * sizeof(float));
    b->dataset_id = mg_calloc((size_t)B, sizeof(int));
    if (b->ids && b->targets && b->pos && b->seg && b->loss_mask && b->dataset_id) return MG_OK;
    mg_train_batch_release(b);
    return MG_ERR_NOMEM;
}

void mg_train_batch_release(mg_train_batch *b)
{
    free(b->ids);
    free(b->targets);
    free(b->pos);
    free(b->seg);
    free(b->loss_mask);
    free(b->dataset_id);
    memset(b, 0, sizeof *b);
}

/* _get_ltor_masks_and_position_ids + __getitem__'s pad handling for one row. */
static void fill_row(const mg_train_data *d, const int64_t *text, int64_t S, int32_t *ids,
                     int32_t *tgt, int32_t *pos, int32_t *seg, float *mask)
{
    int64_t start = 0, docs = 0;
    for (int64_t i = 0; i < S; i++) {
        int64_t tok = text[i], lab = text[i + 1];
        pos[i] = (int32_t)(d->reset_position_ids ? i - start : i);
        seg[i] = (int32_t)docs;
        mask[i] = d->eod_mask_loss && tok == d->eod ? 0.0f : 1.0f;
        if (d->eod >= 0 && tok == d->eod) {
            start = i + 1;
            docs++;
        }
        if (lab == d->pad_id) mask[i] = 0.0f;
        ids[i] = (int32_t)(tok == d->pad_id ? 0 : tok);
        tgt[i] = (int32_t)(lab == d->pad_id ? 0 : lab);
    }
}

mg_status mg_train_batch_fill(mg_train_batch *b, mg_train_data *d, int k, uint64_t first)
{
    uint64_t len = mg_gpt_data_len(d->d, k);
    MG_RETURN_IF(len == 0, MG_ERR_ARG, "the %s split has no samples (see --split)",
                 mg_split_name(k));
    MG_RETURN_IF(b->T != d->seq_length, MG_ERR_ARG, "batch of %lld tokens for --seq-length %lld",
                 (long long)b->T, (long long)d->seq_length);
    for (int64_t r = 0; r < b->B; r++) {
        uint64_t i = (first + (uint64_t)r) % len;
        MG_FORWARD(mg_gpt_data_sample(d->d, k, i, d->pad_id, d->text, &b->dataset_id[r]));
        int64_t o = r * b->T;
        fill_row(d, d->text, b->T, b->ids + o, b->targets + o, b->pos + o, b->seg + o,
                 b->loss_mask + o);
    }
    return MG_OK;
}

mg_gpt_batch mg_train_batch_view(const mg_train_batch *b, const mg_train_data *d)
{
    mg_gpt_batch v = {b->ids, b->targets, b->loss_mask, b->pos,
                      d->reset_attention_mask ? b->seg : NULL};
    return v;
}

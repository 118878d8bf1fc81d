/* batch.h — mg-train's data: Megatron's per-split datasets (mg/gptds.h) for the run's flags,
 * and micro-batches built from their samples by GPTDataset.__getitem__'s rules.
 *
 * Contract:
 *   - mg_train_data_create() builds what BlendedMegatronDatasetBuilder builds for
 *     --data-path + --split with Megatron's requested sizes: train = train_iters x global
 *     batch size (--train-samples when given), valid = (train_iters // eval_interval + 1) x
 *     eval_iters x global batch size (eval_interval 1000, Megatron's default, when not
 *     given), test = eval_iters x global batch size. --mock-data builds megatron-core's
 *     MockGPTDataset splits instead (split "1,1,1", vocabulary = model.vocab_size, the
 *     unpadded tokenizer.vocab_size, eod the tokenizer's; MG_ERR_ARG without a tokenizer).
 *   - eod is the tokenizer's eod (-1 without --tokenizer-type: no EOD rules apply); pad_id
 *     is -1 (Megatron's value for the GPT-2, Llama-2 and null tokenizers), so no token is
 *     treated as padding.
 *   - A micro-batch row (mg_train_batch_fill) is sample i of a split:
 *     tokens = text[0:S], labels = text[1:S+1]; loss mask 1, 0 where tokens == eod with
 *     --eod-mask-loss; position ids 0..S-1, restarting at 0 after each EOD with
 *     --reset-position-ids (the EOD keeps its document's position); document segments (the
 *     number of EODs before each token) with --reset-attention-mask, which the attention
 *     uses to hide earlier documents; finally loss_mask[labels == pad] = 0 and pad tokens
 *     and labels become 0 (_get_ltor_masks_and_position_ids + __getitem__).
 *   - Sample indices wrap modulo the split's length (the validation iterator cycles).
 */
#ifndef MG_TRAIN_BATCH_H
#define MG_TRAIN_BATCH_H

#include <stdint.h>

#include "mg/gptds.h"
#include "model.h"
#include "options.h"

typedef struct mg_train_data {
    mg_gpt_data *d;
    mg_gpt_blend blend;
    int64_t seq_length, eod, pad_id;
    int eod_mask_loss, reset_position_ids, reset_attention_mask;
    int64_t sizes[MG_SPLIT_COUNT];
    int64_t *text;     /* one sample's S + 1 tokens */
} mg_train_data;

/* Builds the splits for o (vocabulary resolved); eod from the tokenizer (-1 if none). */
mg_status mg_train_data_create(mg_train_data **out, const mg_train_opts *o, int64_t eod);
void mg_train_data_free(mg_train_data *d); /* accepts NULL */

typedef struct {
    int64_t B, T;
    int32_t *ids, *targets, *pos, *seg;
    float *loss_mask;
    int *dataset_id;   /* B entries: the blend's prefix of each row */
} mg_train_batch;

mg_status mg_train_batch_alloc(mg_train_batch *b, int64_t B, int64_t T);
void mg_train_batch_release(mg_train_batch *b);
/* Rows r = 0..B-1 get sample (first + r) mod len of split k (MG_ERR_ARG if it is empty). */
mg_status mg_train_batch_fill(mg_train_batch *b, mg_train_data *d, int k, uint64_t first);
/* The model's view of b (segments only with --reset-attention-mask). */
mg_gpt_batch mg_train_batch_view(const mg_train_batch *b, const mg_train_data *d);

#endif

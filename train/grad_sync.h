/* grad_sync.h — the model-parallel part of Megatron's finalize_model_grads: after the
 * micro-batches' backwards, the gradients that tensor or pipeline parallelism left as
 * partial sums are completed.
 *
 * Contract:
 *   - Sequence parallelism: the gradients of the norms and row-parallel biases
 *     (mg_gpt_tensor_sp_reduced) are summed over the tensor-parallel group
 *     (_allreduce_non_tensor_model_parallel_grads), so they are equal on every TP rank.
 *   - Tied embeddings with PP > 1: the first stage's word-embedding gradient and the last
 *     stage's copy's (output_layer.weight) are replaced by their sum on both stages
 *     (_allreduce_word_embedding_grads over the embedding group), so that the same
 *     optimizer step keeps the two copies bit-identical.
 *   - Every rank of the world calls it together; with one process it changes nothing.
 *   - mg_gpt_sync_grads_of: the same for the tensors j with sel[j] set only (the gradient
 *     buckets of grad_buckets.h: a bucket's tensors before its data-parallel sum, so that each
 *     gradient is summed in the same order as mg_gpt_sync_grads then the data-parallel sum).
 *     Every rank of each group involved calls it with the same selection.
 *   - mg_gpt_tied_synced: the tensor whose gradient the embedding group sums on this stage
 *     (NULL: none).
 */
#ifndef MG_TRAIN_GRAD_SYNC_H
#define MG_TRAIN_GRAD_SYNC_H

#include "comm.h"
#include "model.h"

mg_status mg_gpt_sync_grads(mg_gpt *g, mg_comm *world, int sequence_parallel);
mg_status mg_gpt_sync_grads_of(mg_gpt *g, mg_comm *world, int sequence_parallel,
                               const unsigned char *sel);
const mg_gpt_tensor *mg_gpt_tied_synced(const mg_gpt *g, mg_comm *world);

#endif

/* megatron_param_order.h — megatron-core's optimizer parameter order for one rank's tensors,
 * shared by mg-train (its optimizer state, train/param_order.h) and mg-convert (the Adam
 * moments it reshards): the order of model.parameters() in megatron-core's GPTModel is the
 * layer spec's module registration order, i.e. the schema order (mg/schema.h) with each
 * layer's self_attention.linear_proj tensors moved right before that layer's first
 * self_attention.linear_qkv tensor (Attention builds linear_proj before SelfAttention
 * builds linear_qkv).
 *
 * Contract: tensors 0..n-1 are given in schema order by name_of(ctx, i) (checkpoint names,
 * layer numbers local or global alike) and decay_of(ctx, i) (1: weight decay, i.e. a 2-D
 * tensor; 0: none). mg_megatron_param_order appends the indices of the tensors whose decay
 * flag is `decay` (-1: all) to order[k...] in megatron-core's order and returns the new
 * count. Megatron's optimizer (_get_param_groups) numbers its state group after group (the
 * decay group, then the no-decay group), each in this order.
 */
#ifndef MG_MEGATRON_PARAM_ORDER_H
#define MG_MEGATRON_PARAM_ORDER_H

#include <stddef.h>

typedef struct {
    const char *(*name_of)(const void *ctx, size_t i);
    int (*decay_of)(const void *ctx, size_t i);
    const void *ctx;
    size_t n;
} mg_param_list;

size_t mg_megatron_param_order(const mg_param_list *l, int decay, size_t *order, size_t k);

#endif

/* param_order.h — Megatron's parameter order for mg-train's model, the one place it is
 * worked out: the order of model.parameters() in megatron-core's GPTModel, which its
 * optimizer's parameter groups (checkpoint.c) and its DDP / distributed-optimizer buffers
 * (dist_optim.c) follow. It depends on the layer spec, i.e. on the naming of
 * --transformer-impl.
 *
 * Contract:
 *   - mg_gpt_names() gives g's tensors' checkpoint names in one naming: the TransformerEngine
 *     spec's (the norms fused into linear_qkv / linear_fc1) or the local spec's
 *     (input_layernorm, pre_mlp_layernorm); everything else is named alike (the last
 *     stage's tied embedding copy: output_layer.weight). Layer numbers are local to the
 *     rank's pipeline stage (its layer range). NULL when out of memory; free() it.
 *   - The order is the spec's module registration order: Attention builds linear_proj before
 *     SelfAttention builds linear_qkv; the TE spec's input norm is fused into linear_qkv
 *     (its first parameters), the local spec's input_layernorm is a module of its own before
 *     self_attention. Both are mg-train's model order (g->t, mg/schema.h) with each layer's
 *     linear_proj tensors moved right before that layer's first linear_qkv tensor.
 *     mg_gpt_param_order() appends the indices (into g->t) of the tensors whose decay flag
 *     is `decay` (-1: all) to order[n...] in that order, names being mg_gpt_names() of the
 *     naming, and returns the new count.
 */
#ifndef MG_TRAIN_PARAM_ORDER_H
#define MG_TRAIN_PARAM_ORDER_H

#include <stddef.h>

#include "mg/schema.h"
#include "model.h"

typedef char mg_tname[160]; /* one tensor's checkpoint name */

mg_tname *mg_gpt_names(const mg_gpt *g, mg_names nm);

size_t mg_gpt_param_order(const mg_gpt *g, const mg_tname *names, int decay, size_t *order,
                          size_t n);

#endif

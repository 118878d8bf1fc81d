/* param_order.h — Megatron's parameter order for mg-train's model: the order of
 * model.parameters() in megatron-core's GPTModel with the default TransformerEngine layer
 * spec, which its optimizer's parameter groups and its DDP / distributed-optimizer buffers
 * follow.
 *
 * Contract: the TE spec registers a layer's attention output projection (linear_proj)
 * before its linear_qkv (whose fused input norm comes first), so the order is mg-train's
 * model order (g->t, mg/schema.h) with each layer's linear_proj tensors moved right before
 * that layer's first linear_qkv tensor. mg_gpt_param_order() appends the indices (into
 * g->t) of the tensors whose decay flag is `decay` (-1: all) to order[n...] and returns the
 * new count.
 */
#ifndef MG_TRAIN_PARAM_ORDER_H
#define MG_TRAIN_PARAM_ORDER_H

#include <stddef.h>

#include "model.h"

size_t mg_gpt_param_order(const mg_gpt *g, int decay, size_t *order, size_t n);

#endif

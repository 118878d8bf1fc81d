/* memory_plan.h — parameter counts and the theoretical memory of one training rank.
 *
 * Contract:
 *   - mg_param_count(): the exact number of parameters of the model mg-train builds from m
 *     (the same as transformers' GPT2LMHeadModel / LlamaForCausalLM / Qwen2ForCausalLM with
 *     vocab_size = m->padded_vocab_size): word embeddings Vpad*h, learned positions
 *     max_pos*h, per layer norm weights (+ biases for LayerNorm), QKV h*(q+2k) (+ bias with
 *     add_bias_linear or add_qkv_bias), output projection q*h (+ bias), fc1 h*ffn (x2 for
 *     SwiGLU, + bias), fc2 ffn*h (+ bias), final norm, and an untied output layer Vpad*h.
 *   - mg_param_count_rank(): the same for the most loaded rank of the layout m->tp x m->pp
 *     (TP splits QKV/fc1 weights and biases, proj/fc2 weights and the vocabulary rows; norms,
 *     proj/fc2 biases and positions are replicated; the first stage holds the embeddings,
 *     the last the final norm and the output layer, which with tied weights and PP > 1 is a
 *     copy of the word embeddings as in Megatron).
 *   - mg_megatron_weight_optimizer_bytes() / mg_megatron_activation_bytes(): exactly
 *     megatron/training/theoretical_memory_usage.py (megatron-core 0.16.1):
 *     compute_weight_and_optimizer_memory (Megatron's own parameter count, which leaves out
 *     biases and position embeddings; 18 bytes per parameter, or 6 + 12/DP with the
 *     distributed optimizer) and compute_activation_memory (with sequence parallelism and
 *     selective recompute) or compute_activation_memory_without_sp (otherwise). Both are for
 *     bf16/fp16 mixed precision. Results in bytes, as doubles (Megatron's floats).
 *   - mg_memory_plan(): per-rank bytes by part, for the precision mg-train runs:
 *       MG_PREC_FP32  (CPU): weights 4, gradients 4, optimizer 8 (Adam m and v) bytes per
 *                     parameter of mg_param_count_rank(); activations = Megatron's activation
 *                     formula with 4-byte instead of 2-byte elements (x2). Like Megatron's,
 *                     it leaves out materialised attention scores (the s^2 term).
 *       MG_PREC_MIXED (bf16 weights, fp32 grads, fp32 master weights + m + v): 2 + 4 + 12
 *                     bytes per parameter (2 + 4 + 12/DP with the distributed optimizer);
 *                     activations = Megatron's formula.
 */
#ifndef MG_TRAIN_MEMORY_PLAN_H
#define MG_TRAIN_MEMORY_PLAN_H

#include <stdint.h>

#include "mg/model_desc.h"

typedef struct {
    int64_t micro_batch_size;
    int64_t num_microbatches;        /* per iteration and DP rank; 0 = unknown (None) */
    int64_t data_parallel_size;      /* >= 1 */
    int64_t virtual_pipeline_size;   /* 0 = no interleaving */
    int distributed_optimizer;
    int sequence_parallel_selective; /* --sequence-parallel + selective recompute */
} mg_mem_setup;

typedef struct {
    int64_t embedding;   /* word embeddings */
    int64_t position;    /* learned position embeddings */
    int64_t per_layer;   /* one transformer layer */
    int64_t layers;      /* all layers */
    int64_t final_norm;
    int64_t output;      /* untied output layer, 0 when tied */
    int64_t total;
} mg_param_counts;

typedef enum { MG_PREC_FP32, MG_PREC_MIXED } mg_precision;

typedef struct {
    int64_t params;      /* parameters on the most loaded rank */
    double weights, gradients, optimizer, activations, total; /* bytes */
} mg_mem_plan;

void mg_param_count(const mg_model_desc *m, mg_param_counts *out);
int64_t mg_param_count_rank(const mg_model_desc *m);

double mg_megatron_weight_optimizer_bytes(const mg_model_desc *m, const mg_mem_setup *s);
double mg_megatron_activation_bytes(const mg_model_desc *m, const mg_mem_setup *s);

void mg_memory_plan(const mg_model_desc *m, const mg_mem_setup *s, mg_precision prec,
                    mg_mem_plan *out);

#endif

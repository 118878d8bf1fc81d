/* flops.h — training FLOPs per iteration as Megatron counts them, and throughput helpers.
 *
 * Contract:
 *   - mg_flops_per_batch() is megatron/training/training.py num_floating_point_operations
 *     (megatron-core 0.16.1, transformer_flops(); dense GPT, no MoE/MTP/MLA/linear attention)
 *     for `batch_size` sequences of m->seq_length tokens:
 *         B*s*[ 6*h*ffn*(3 if swiglu else 2)*L
 *             + 6*(h*(q+k+v) + q*s/2*2 + q*h)*L          (q = kv*heads, k = v = kv*groups)
 *             + 6*h*Vpad ]
 *     i.e. 3 GEMM passes (forward, dgrad, wgrad) x 2 FLOPs per multiply-add; core attention
 *     counts the causal half. Norms, activations, softmax and the optimizer are not counted;
 *     the output layer counts the same whether or not it is tied to the embedding. m needs
 *     padded_vocab_size, seq_length, kv_channels and num_query_groups set. Evaluated in double
 *     in Python's operation order (bit-identical to Megatron's float result).
 *   - mg_tflops_per_gpu() is Megatron's "throughput per GPU (TFLOP/s/GPU)" field:
 *     flops / (seconds * 1e12 * world_size).
 *   - mg_mfu() = achieved FLOP/s / peak FLOP/s, or -1 when the peak is unknown (<= 0): callers
 *     print "unknown", never a negative MFU.
 */
#ifndef MG_TRAIN_FLOPS_H
#define MG_TRAIN_FLOPS_H

#include <stdint.h>

#include "mg/model_desc.h"

double mg_flops_per_batch(const mg_model_desc *m, int64_t batch_size);
double mg_tflops_per_gpu(double flops, double seconds, int64_t world_size);
double mg_mfu(double flops_per_second, double peak_flops_per_second);

#endif

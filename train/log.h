/* log.h — mg-train's output: Megatron's per-iteration log line (training.py training_log,
 * docs/TRAINING.md), the validation block, the metrics file
 * (--log-file, JSON lines) and the CPU sgemm peak that MFU is measured against.
 *
 * Contract:
 *   - The iteration line, printed for iteration 1 and every --log-interval iterations:
 *       " [YYYY-mm-dd HH:MM:SS.ffffff] iteration %8d/%8d | consumed samples: %12d |
 *        elapsed time per iteration (ms): %.1f | throughput per GPU (TFLOP/s/GPU): T |
 *        tokens per second: %.1f | MFU: %.2f% | learning rate: %.6E |
 *        global batch size: %5d | lm loss: %.6E | loss scale: %.1f | grad norm: %.3f |
 *        number of skipped iterations: %3d | number of nan iterations: %3d |"
 *     (one line; "skipped samples" is never printed: mg-train skips none). Time, tokens/s,
 *     TFLOP/s and lm loss are averages over the iterations since the last line (skipped
 *     iterations excluded from the loss, as Megatron: the field is left out until an
 *     iteration has advanced, 0 for an interval of skipped iterations, left out when the
 *     mean is not >= 0); lr and grad norm are the last
 *     iteration's, the loss scale the grad scaler's after the last iteration's update
 *     (grad_scaler.h; 1.0 without one), and the grad norm field is left out when the last
 *     iteration was skipped (Megatron's grad_norm is None then). MFU prints "unknown" when
 *     the peak is unknown. The counters count the iterations since the last line. T is %.1f from 10 TFLOP/s up (Megatron's format) and
 *     3 significant digits in fixed notation below (at most 12 decimals), so that a CPU's
 *     throughput does not print as 0.0.
 *   - The validation block is Megatron's evaluate_and_print_results: a dashed line, then
 *     " validation loss at iteration N on validation set | lm loss value: %.6E |
 *     lm loss PPL: %.6E | " (PPL = exp(min(20, loss))), then the dashed line again.
 *   - Every record also goes to the metrics file when one is open: one JSON object per
 *     line, {"kind": "train", "iteration", "consumed_samples", "elapsed_ms",
 *     "tokens_per_s", "tflops", "mfu", "lr", "global_batch_size", "loss", "grad_norm",
 *     "loss_scale", "skipped", "nan"} or {"kind": "valid"|"test", "iteration", "loss",
 *     "ppl"}; every iteration is written to the file (not only the logged ones), flushed
 *     per line.
 */
#ifndef MG_TRAIN_LOG_H
#define MG_TRAIN_LOG_H

#include <stdint.h>
#include <stdio.h>

#include "kernels.h"
#include "mg/error.h"

typedef struct {
    int64_t iteration, train_iters, consumed_samples, global_batch_size, tokens;
    double seconds, flops, lr, loss, grad_norm;
    double loss_scale; /* the grad scaler's scale after this iteration's update */
    int skipped;
} mg_log_iter;

typedef struct mg_train_log mg_train_log;

/* out receives the lines (stdout in the tool); jsonl may be NULL. peak_flops <= 0:
 * unknown. */
mg_status mg_train_log_create(mg_train_log **l, FILE *out, const char *jsonl,
                              int64_t log_interval, double peak_flops);
void mg_train_log_free(mg_train_log *l); /* accepts NULL; closes the metrics file */
/* Records one iteration; prints the line when it is due. */
mg_status mg_train_log_iter(mg_train_log *l, const mg_log_iter *it);
/* --tensorboard-dir: also writes TensorBoard scalars (tb_events.h) every `interval`
 * iterations, Megatron's training_log tags each by iteration and "vs samples":
 * learning-rate, batch-size, lm loss (advanced iterations), loss-scale (unless
 * loss_scale is 0: --no-log-loss-scale-to-tensorboard), grad-norm (not for a skipped
 * iteration);
 * and at each evaluation "lm loss validation" / "lm loss test". */
mg_status mg_train_log_tensorboard(mg_train_log *l, const char *dir, int64_t interval,
                                   int loss_scale);

/* Prints the validation block for split_name "validation" or "test". */
mg_status mg_train_log_eval(mg_train_log *l, int64_t iteration, const char *split_name,
                            double loss);

/* The peak FLOP/s of mgk_gemm on k: the best of repeated 512^3 products for about
 * `seconds` (once at start-up). */
double mg_measure_gemm_peak(const mg_kctx *k, double seconds);

#endif

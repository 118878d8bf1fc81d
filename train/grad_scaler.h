/* grad_scaler.h — Megatron's gradient (loss) scalers: megatron-core 0.16.1
 * optimizer/grad_scaler.py ConstantGradScaler and DynamicGradScaler, chosen as
 * optimizer/__init__.py get_megatron_optimizer chooses them.
 *
 * Contract:
 *   - mg_grad_scaler_init(): the scaler of a run's options. A mixed-precision optimizer
 *     (--fp16, --bf16, or --use-distributed-optimizer) gets the constant scaler with
 *     --loss-scale X (X > 0), else with --fp16 the dynamic one (initial --initial-loss-scale,
 *     floor --min-loss-scale, growth factor 2, backoff factor 0.5, growth interval
 *     --loss-scale-window, hysteresis --hysteresis); otherwise none (fp32's FP32Optimizer and
 *     bf16 without --loss-scale: the scale is 1). The constructor's assertions are MG_ERR_ARG
 *     messages naming the flag: scales > 0, min <= initial, window and hysteresis > 0.
 *   - The scale is a float32 (Megatron's torch.float tensor): every product (backoff,
 *     growth) and the max with the floor are rounded to float as torch rounds them;
 *     mg_grad_scaler_inv() is float(1 / double(scale)) (inv_scale).
 *   - mg_grad_scaler_update(found_inf): DynamicGradScaler.update. An overflow zeroes the
 *     growth tracker and decrements the hysteresis tracker; at <= 0 the scale becomes
 *     max(scale * 0.5, min) (the tracker stays where it is, so every further overflow backs
 *     off again until growth resets it). A clean step counts the growth tracker; when it
 *     reaches the window it resets to 0, the hysteresis tracker to --hysteresis, and the
 *     scale doubles (no ceiling). The constant scaler and none ignore updates.
 *   - The state a checkpoint keeps (DynamicGradScaler.state_dict): scale, growth_tracker,
 *     hysteresis_tracker; the constant scaler keeps nothing (an empty dict).
 */
#ifndef MG_TRAIN_GRAD_SCALER_H
#define MG_TRAIN_GRAD_SCALER_H

#include <stdint.h>

#include "mg/error.h"
#include "options.h"

typedef enum { MG_SCALER_NONE, MG_SCALER_CONSTANT, MG_SCALER_DYNAMIC } mg_scaler_kind;

typedef struct {
    mg_scaler_kind kind;
    float scale;              /* the current loss scale (1 with none) */
    float min_scale;          /* dynamic: the floor */
    int64_t growth_interval;  /* dynamic: clean steps before the scale doubles */
    int64_t hysteresis;       /* dynamic: overflows in a row before it halves */
    int64_t growth_tracker, hysteresis_tracker;
} mg_grad_scaler;

mg_status mg_grad_scaler_init(mg_grad_scaler *s, const mg_train_opts *o);
/* A dynamic scaler from its constructor's arguments (growth 2, backoff 0.5). */
mg_status mg_grad_scaler_dynamic(mg_grad_scaler *s, double initial_scale, double min_scale,
                                 int64_t growth_interval, int64_t hysteresis);
void mg_grad_scaler_update(mg_grad_scaler *s, int found_inf);
float mg_grad_scaler_inv(const mg_grad_scaler *s);
const char *mg_grad_scaler_kind_name(mg_scaler_kind k); /* "none" "constant" "dynamic" */

#endif

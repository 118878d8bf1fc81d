/* lr_schedule.h — Megatron's OptimizerParamScheduler (megatron-core 0.16.1,
 * megatron/core/optimizer_param_scheduler.py): learning rate and weight decay as functions
 * of the scheduler's step counter.
 *
 * Contract:
 *   - Steps count SAMPLES, as in Megatron: mg-train advances the counter by the global batch
 *     size after every iteration (training.py train_step), so the lr used by the optimizer at
 *     iteration k (1-based) is mg_lr_at(k-1 * gbs) and the lr Megatron logs for iteration k
 *     is mg_lr_at(k * gbs).
 *   - Warmup (linear from init_lr to max_lr over warmup_steps, which may be fractional when
 *     it comes from --lr-warmup-fraction), then the decay style: constant, linear, cosine,
 *     inverse-square-root, or WSD (constant until decay_steps - wsd_decay_steps, then the WSD
 *     decay style: exponential, linear, cosine, minus_sqrt); min_lr after decay_steps.
 *   - Weight decay: constant, or linear/cosine increment from start_wd to end_wd over
 *     wd_incr_steps.
 *   - The arithmetic follows Python's evaluation order operation by operation (double, libm
 *     cos/pow), so results are bit-identical to megatron-core's for the same inputs.
 *   - mg_lr_sched_check() applies the constructor's assertions as MG_ERR_ARG messages.
 */
#ifndef MG_TRAIN_LR_SCHEDULE_H
#define MG_TRAIN_LR_SCHEDULE_H

#include <stdint.h>

#include "mg/error.h"

typedef enum { MG_LR_CONSTANT, MG_LR_LINEAR, MG_LR_COSINE, MG_LR_INVSQRT, MG_LR_WSD } mg_lr_style;
typedef enum { MG_WSD_EXPONENTIAL, MG_WSD_LINEAR, MG_WSD_COSINE, MG_WSD_MINUS_SQRT } mg_wsd_style;
typedef enum { MG_WD_CONSTANT, MG_WD_LINEAR, MG_WD_COSINE } mg_wd_style;

typedef struct {
    double init_lr, max_lr, min_lr;
    double warmup_steps;       /* samples (fractional with --lr-warmup-fraction) */
    double decay_steps;        /* samples */
    mg_lr_style style;
    double wsd_decay_steps;    /* samples; < 0 = not given (WSD needs it) */
    mg_wsd_style wsd_style;
    double start_wd, end_wd;
    double wd_incr_steps;      /* samples */
    mg_wd_style wd_style;
} mg_lr_sched;

/* The constructor's checks: min_lr >= 0, max_lr >= min_lr, init_lr <= max_lr,
 * decay_steps > 0, warmup_steps < decay_steps, WSD has wsd_decay_steps, 0 <= start_wd <=
 * end_wd, constant weight decay has start_wd == end_wd. */
mg_status mg_lr_sched_check(const mg_lr_sched *s);

/* Learning rate / weight decay after num_steps samples (get_lr / get_wd). */
double mg_lr_at(const mg_lr_sched *s, double num_steps);
double mg_wd_at(const mg_lr_sched *s, double num_steps);

/* Flag spellings: "constant" "linear" "cosine" "inverse-square-root" "WSD";
 * "exponential" "linear" "cosine" "minus_sqrt"; "constant" "linear" "cosine".
 * Parsers return 0 on success, -1 for an unknown name. */
const char *mg_lr_style_name(mg_lr_style s);
int mg_lr_style_parse(const char *name, mg_lr_style *out);
const char *mg_wsd_style_name(mg_wsd_style s);
int mg_wsd_style_parse(const char *name, mg_wsd_style *out);
const char *mg_wd_style_name(mg_wd_style s);
int mg_wd_style_parse(const char *name, mg_wd_style *out);

#endif

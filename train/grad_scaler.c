/* grad_scaler.c — grad_scaler.h: Megatron's constant and dynamic gradient scalers.
 *
 * Contract (grad_scaler.h). The float arithmetic is torch's on float32 tensors: products
 * rounded to float, torch.max of two floats. */
#include "grad_scaler.h"

#include <string.h>

#define GROWTH_FACTOR 2.0f
#define BACKOFF_FACTOR 0.5f

mg_status mg_grad_scaler_dynamic(mg_grad_scaler *s, double initial_scale, double min_scale,
                                 int64_t growth_interval, int64_t hysteresis)
{
    memset(s, 0, sizeof *s);
    MG_RETURN_IF(!(initial_scale > 0), MG_ERR_ARG, "--initial-loss-scale must be > 0 (got %g)",
                 initial_scale);
    MG_RETURN_IF(!(min_scale > 0), MG_ERR_ARG, "--min-loss-scale must be > 0 (got %g)",
                 min_scale);
    MG_RETURN_IF(!(min_scale <= initial_scale), MG_ERR_ARG,
                 "--min-loss-scale (%g) must not exceed --initial-loss-scale (%g)", min_scale,
                 initial_scale);
    MG_RETURN_IF(growth_interval <= 0, MG_ERR_ARG, "--loss-scale-window must be > 0 (got %lld)",
                 (long long)growth_interval);
    MG_RETURN_IF(hysteresis <= 0, MG_ERR_ARG, "--hysteresis must be > 0 (got %lld)",
                 (long long)hysteresis);
    s->kind = MG_SCALER_DYNAMIC;
    s->scale = (float)initial_scale;
    s->min_scale = (float)min_scale;
    s->growth_interval = growth_interval;
    s->hysteresis = hysteresis;
    s->hysteresis_tracker = hysteresis;
    return MG_OK;
}

mg_status mg_grad_scaler_init(mg_grad_scaler *s, const mg_train_opts *o)
{
    memset(s, 0, sizeof *s);
    s->kind = MG_SCALER_NONE;
    s->scale = 1.0f;
    if (!o->fp16 && !o->bf16 && !o->use_distributed_optimizer) return MG_OK; /* FP32Optimizer */
    if (o->loss_scale != 0) {
        MG_RETURN_IF(!(o->loss_scale > 0), MG_ERR_ARG, "--loss-scale must be > 0 (got %g)",
                     o->loss_scale);
        s->kind = MG_SCALER_CONSTANT;
        s->scale = (float)o->loss_scale;
        return MG_OK;
    }
    if (!o->fp16) return MG_OK;
    return mg_grad_scaler_dynamic(s, o->initial_loss_scale, o->min_loss_scale,
                                  o->loss_scale_window, o->hysteresis);
}

static void on_overflow(mg_grad_scaler *s)
{
    s->growth_tracker = 0;
    s->hysteresis_tracker--;
    if (s->hysteresis_tracker > 0) return;
    float backed = s->scale * BACKOFF_FACTOR;
    s->scale = backed > s->min_scale ? backed : s->min_scale;
}

static void on_clean_step(mg_grad_scaler *s)
{
    s->growth_tracker++;
    if (s->growth_tracker != s->growth_interval) return;
    s->growth_tracker = 0;
    s->hysteresis_tracker = s->hysteresis;
    s->scale = s->scale * GROWTH_FACTOR;
}

void mg_grad_scaler_update(mg_grad_scaler *s, int found_inf)
{
    if (s->kind != MG_SCALER_DYNAMIC) return;
    if (found_inf) on_overflow(s);
    else on_clean_step(s);
}

float mg_grad_scaler_inv(const mg_grad_scaler *s)
{
    return (float)(1.0 / (double)s->scale);
}

const char *mg_grad_scaler_kind_name(mg_scaler_kind k)
{
    switch (k) {
    case MG_SCALER_CONSTANT: return "constant";
    case MG_SCALER_DYNAMIC: return "dynamic";
    default: return "none";
    }
}

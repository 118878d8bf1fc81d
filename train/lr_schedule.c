/* lr_schedule.c — Megatron's OptimizerParamScheduler.get_lr / get_wd (lr_schedule.h).
 * Each expression keeps Python's operand order so that the doubles match bit for bit. */
#include "lr_schedule.h"

#include <math.h>
#include <string.h>

mg_status mg_lr_sched_check(const mg_lr_sched *s)
{
    MG_RETURN_IF(!(s->min_lr >= 0.0), MG_ERR_ARG, "--min-lr must be >= 0 (got %g)", s->min_lr);
    MG_RETURN_IF(!(s->max_lr >= s->min_lr), MG_ERR_ARG,
                 "--lr (%g) must be >= --min-lr (%g)", s->max_lr, s->min_lr);
    MG_RETURN_IF(!(s->init_lr <= s->max_lr), MG_ERR_ARG,
                 "--lr-warmup-init (%g) must be <= --lr (%g)", s->init_lr, s->max_lr);
    MG_RETURN_IF(!(s->decay_steps > 0), MG_ERR_ARG,
                 "the learning rate decay length must be positive (got %.17g samples)",
                 s->decay_steps);
    MG_RETURN_IF(!(s->warmup_steps < s->decay_steps), MG_ERR_ARG,
                 "the warmup (%.17g samples) must be shorter than the decay (%.17g samples)",
                 s->warmup_steps, s->decay_steps);
    MG_RETURN_IF(s->style == MG_LR_WSD && s->wsd_decay_steps < 0, MG_ERR_ARG,
                 "--lr-decay-style WSD needs --lr-wsd-decay-iters (or --lr-wsd-decay-samples)");
    MG_RETURN_IF(!(s->start_wd >= 0.0), MG_ERR_ARG,
                 "the start weight decay must be >= 0 (got %g)", s->start_wd);
    MG_RETURN_IF(!(s->end_wd >= s->start_wd), MG_ERR_ARG,
                 "--end-weight-decay (%g) must be >= --start-weight-decay (%g)", s->end_wd,
                 s->start_wd);
    MG_RETURN_IF(s->wd_style == MG_WD_CONSTANT && s->start_wd != s->end_wd, MG_ERR_ARG,
                 "constant weight decay needs equal start and end weight decay");
    return MG_OK;
}

static double wsd_coeff(const mg_lr_sched *s, double num_steps)
{
    double anneal_start = s->decay_steps - s->wsd_decay_steps;
    if (num_steps <= anneal_start) return 1.0;
    double r = (num_steps - anneal_start) / s->wsd_decay_steps;
    switch (s->wsd_style) {
    case MG_WSD_LINEAR: return 1.0 - r;
    case MG_WSD_COSINE: return 0.5 * (cos(M_PI * r) + 1.0);
    case MG_WSD_EXPONENTIAL: return (2.0 * pow(0.5, r)) - 1.0;
    case MG_WSD_MINUS_SQRT: return 1.0 - sqrt(r);
    }
    return 1.0;
}

double mg_lr_at(const mg_lr_sched *s, double num_steps)
{
    if (s->warmup_steps > 0 && num_steps <= s->warmup_steps)
        return s->init_lr + (s->max_lr - s->init_lr) * num_steps / s->warmup_steps;
    if (s->style == MG_LR_CONSTANT) return s->max_lr;
    if (num_steps > s->decay_steps) return s->min_lr;
    if (s->style == MG_LR_INVSQRT) {
        double w = s->warmup_steps > 1 ? s->warmup_steps : 1;
        double n = num_steps > 1 ? num_steps : 1;
        double lr = s->max_lr * pow(w, 0.5) / pow(n, 0.5);
        return s->min_lr > lr ? s->min_lr : lr;
    }
    double ratio = (num_steps - s->warmup_steps) / (s->decay_steps - s->warmup_steps);
    double delta = s->max_lr - s->min_lr, coeff = 1.0;
    if (s->style == MG_LR_LINEAR) coeff = 1.0 - ratio;
    else if (s->style == MG_LR_COSINE) coeff = 0.5 * (cos(M_PI * ratio) + 1.0);
    else coeff = wsd_coeff(s, num_steps);
    return s->min_lr + coeff * delta;
}

double mg_wd_at(const mg_lr_sched *s, double num_steps)
{
    if (num_steps > s->wd_incr_steps) return s->end_wd;
    if (s->wd_style == MG_WD_CONSTANT) return s->end_wd;
    double r = num_steps / s->wd_incr_steps;
    double coeff = s->wd_style == MG_WD_LINEAR ? r : 0.5 * (cos(M_PI * (1 - r)) + 1.0);
    return s->start_wd + coeff * (s->end_wd - s->start_wd);
}

static int parse_name(const char *const *names, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (name && strcmp(names[i], name) == 0) return i;
    return -1;
}

static const char *const lr_names[] = {"constant", "linear", "cosine", "inverse-square-root",
                                       "WSD"};
static const char *const wsd_names[] = {"exponential", "linear", "cosine", "minus_sqrt"};
static const char *const wd_names[] = {"constant", "linear", "cosine"};

const char *mg_lr_style_name(mg_lr_style s) { return (unsigned)s < 5 ? lr_names[s] : "?"; }
const char *mg_wsd_style_name(mg_wsd_style s) { return (unsigned)s < 4 ? wsd_names[s] : "?"; }
const char *mg_wd_style_name(mg_wd_style s) { return (unsigned)s < 3 ? wd_names[s] : "?"; }

int mg_lr_style_parse(const char *name, mg_lr_style *out)
{
    int i = parse_name(lr_names, 5, name);
    if (i >= 0) *out = (mg_lr_style)i;
    return i >= 0 ? 0 : -1;
}

int mg_wsd_style_parse(const char *name, mg_wsd_style *out)
{
    int i = parse_name(wsd_names, 4, name);
    if (i >= 0) *out = (mg_wsd_style)i;
    return i >= 0 ? 0 : -1;
}

int mg_wd_style_parse(const char *name, mg_wd_style *out)
{
    int i = parse_name(wd_names, 3, name);
    if (i >= 0) *out = (mg_wd_style)i;
    return i >= 0 ? 0 : -1;
}

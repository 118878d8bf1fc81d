/* test_lr_schedule.c — train/lr_schedule.h: Megatron's OptimizerParamScheduler formulas at
 * hand-computed points for every decay style, warmup, min-lr clamping, the WSD annealing
 * styles, weight-decay increments, style names and the constructor's checks. (The
 * bit-for-bit comparison with megatron-core is tests/interop/test_lr_schedule.py.) */
#include <math.h>

#include "harness.h"
#include "lr_schedule.h"

static mg_lr_sched base(mg_lr_style style)
{
    mg_lr_sched s = {0};
    s.init_lr = 0.0;
    s.max_lr = 1e-3;
    s.min_lr = 1e-4;
    s.warmup_steps = 10;
    s.decay_steps = 110;
    s.style = style;
    s.wsd_decay_steps = -1;
    s.start_wd = s.end_wd = 0.1;
    s.wd_incr_steps = 110;
    return s;
}

static int near(double a, double b) { return fabs(a - b) <= 1e-15 + 1e-12 * fabs(b); }

#define CHECK_NEAR(t, a, b)                                                                \
    do {                                                                                   \
        double x_ = (a), y_ = (b);                                                         \
        if (!near(x_, y_)) mg_test_fail((t), __FILE__, __LINE__, "%s = %.17g, expected %.17g", #a, x_, y_); \
    } while (0)

MG_TEST(lr_warmup_then_linear)
{
    mg_lr_sched s = base(MG_LR_LINEAR);
    MG_CHECK_OK(t, mg_lr_sched_check(&s));
    CHECK_NEAR(t, mg_lr_at(&s, 0), 0.0);
    CHECK_NEAR(t, mg_lr_at(&s, 5), 5e-4);
    CHECK_NEAR(t, mg_lr_at(&s, 10), 1e-3);
    CHECK_NEAR(t, mg_lr_at(&s, 60), 1e-4 + 0.5 * 9e-4);
    CHECK_NEAR(t, mg_lr_at(&s, 110), 1e-4);
    CHECK_NEAR(t, mg_lr_at(&s, 1000), 1e-4);
}

MG_TEST(lr_warmup_init_and_fraction)
{
    mg_lr_sched s = base(MG_LR_LINEAR);
    s.init_lr = 2e-4;
    s.warmup_steps = 2.5; /* --lr-warmup-fraction gives fractional warmups */
    CHECK_NEAR(t, mg_lr_at(&s, 0), 2e-4);
    CHECK_NEAR(t, mg_lr_at(&s, 1), 2e-4 + 8e-4 * 1 / 2.5);
    CHECK_NEAR(t, mg_lr_at(&s, 3), 1e-4 + (1 - 0.5 / 107.5) * 9e-4);
}

MG_TEST(lr_cosine_constant_invsqrt)
{
    mg_lr_sched s = base(MG_LR_COSINE);
    CHECK_NEAR(t, mg_lr_at(&s, 60), 1e-4 + 0.5 * 9e-4);
    CHECK_NEAR(t, mg_lr_at(&s, 35), 1e-4 + 0.5 * (cos(M_PI * 0.25) + 1) * 9e-4);
    CHECK_NEAR(t, mg_lr_at(&s, 200), 1e-4);
    s.style = MG_LR_CONSTANT;
    CHECK_NEAR(t, mg_lr_at(&s, 5), 5e-4);
    CHECK_NEAR(t, mg_lr_at(&s, 60), 1e-3);
    CHECK_NEAR(t, mg_lr_at(&s, 5000), 1e-3); /* constant never decays to min_lr */
    s.style = MG_LR_INVSQRT;
    s.warmup_steps = 16;
    s.decay_steps = 1000;
    CHECK_NEAR(t, mg_lr_at(&s, 64), 1e-3 * 4 / 8);
    CHECK_NEAR(t, mg_lr_at(&s, 999), 1e-4 > 1e-3 * 4 / sqrt(999) ? 1e-4 : 1e-3 * 4 / sqrt(999));
    CHECK_NEAR(t, mg_lr_at(&s, 1001), 1e-4);
    s.warmup_steps = 0; /* max(warmup, 1) */
    CHECK_NEAR(t, mg_lr_at(&s, 0), 1e-3);
    CHECK_NEAR(t, mg_lr_at(&s, 4), 5e-4);
}

MG_TEST(lr_wsd_styles)
{
    mg_lr_sched s = base(MG_LR_WSD);
    s.warmup_steps = 0;
    s.decay_steps = 100;
    s.wsd_decay_steps = 20;
    MG_CHECK_OK(t, mg_lr_sched_check(&s));
    CHECK_NEAR(t, mg_lr_at(&s, 0), 1e-3);
    CHECK_NEAR(t, mg_lr_at(&s, 80), 1e-3);
    s.wsd_style = MG_WSD_EXPONENTIAL;
    CHECK_NEAR(t, mg_lr_at(&s, 90), 1e-4 + (2 * sqrt(0.5) - 1) * 9e-4);
    s.wsd_style = MG_WSD_LINEAR;
    CHECK_NEAR(t, mg_lr_at(&s, 90), 1e-4 + 0.5 * 9e-4);
    s.wsd_style = MG_WSD_COSINE;
    CHECK_NEAR(t, mg_lr_at(&s, 85), 1e-4 + 0.5 * (cos(M_PI * 0.25) + 1) * 9e-4);
    s.wsd_style = MG_WSD_MINUS_SQRT;
    CHECK_NEAR(t, mg_lr_at(&s, 90), 1e-4 + (1 - sqrt(0.5)) * 9e-4);
    CHECK_NEAR(t, mg_lr_at(&s, 100), 1e-4);
    CHECK_NEAR(t, mg_lr_at(&s, 101), 1e-4);
}

MG_TEST(lr_weight_decay_increment)
{
    mg_lr_sched s = base(MG_LR_LINEAR);
    CHECK_NEAR(t, mg_wd_at(&s, 50), 0.1);
    s.start_wd = 0.0;
    s.end_wd = 0.2;
    s.wd_incr_steps = 100;
    s.wd_style = MG_WD_LINEAR;
    CHECK_NEAR(t, mg_wd_at(&s, 25), 0.05);
    CHECK_NEAR(t, mg_wd_at(&s, 150), 0.2);
    s.wd_style = MG_WD_COSINE;
    CHECK_NEAR(t, mg_wd_at(&s, 50), 0.1);
    CHECK_NEAR(t, mg_wd_at(&s, 0), 0.0);
    CHECK_NEAR(t, mg_wd_at(&s, 100), 0.2);
}

MG_TEST(lr_style_names)
{
    mg_lr_style st;
    mg_wsd_style ws;
    mg_wd_style wd;
    MG_CHECK(t, mg_lr_style_parse("inverse-square-root", &st) == 0 && st == MG_LR_INVSQRT);
    MG_CHECK(t, mg_lr_style_parse("WSD", &st) == 0 && st == MG_LR_WSD);
    MG_CHECK(t, mg_lr_style_parse("wsd", &st) == -1);
    MG_CHECK(t, mg_wsd_style_parse("minus_sqrt", &ws) == 0 && ws == MG_WSD_MINUS_SQRT);
    MG_CHECK(t, mg_wd_style_parse("cosine", &wd) == 0 && wd == MG_WD_COSINE);
    MG_CHECK(t, mg_wd_style_parse(NULL, &wd) == -1);
    MG_CHECK_EQ_STR(t, mg_lr_style_name(MG_LR_COSINE), "cosine");
    MG_CHECK_EQ_STR(t, mg_wsd_style_name(MG_WSD_EXPONENTIAL), "exponential");
}

MG_TEST(lr_constructor_checks)
{
    mg_lr_sched s = base(MG_LR_LINEAR);
    s.min_lr = 2e-3;
    MG_CHECK_ERR(t, mg_lr_sched_check(&s), MG_ERR_ARG, "must be >= --min-lr");
    s = base(MG_LR_LINEAR);
    s.init_lr = 2e-3;
    MG_CHECK_ERR(t, mg_lr_sched_check(&s), MG_ERR_ARG, "--lr-warmup-init");
    s = base(MG_LR_LINEAR);
    s.warmup_steps = 110;
    MG_CHECK_ERR(t, mg_lr_sched_check(&s), MG_ERR_ARG, "shorter than the decay");
    s = base(MG_LR_WSD);
    MG_CHECK_ERR(t, mg_lr_sched_check(&s), MG_ERR_ARG, "--lr-wsd-decay-iters");
    s = base(MG_LR_LINEAR);
    s.end_wd = 0.2;
    MG_CHECK_ERR(t, mg_lr_sched_check(&s), MG_ERR_ARG, "constant weight decay");
    s.wd_style = MG_WD_LINEAR;
    MG_CHECK_OK(t, mg_lr_sched_check(&s));
    s.start_wd = 0.3;
    MG_CHECK_ERR(t, mg_lr_sched_check(&s), MG_ERR_ARG, "--end-weight-decay");
}

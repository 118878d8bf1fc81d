/* test_grad_scaler.c — train/grad_scaler.h: which scaler the options give (Megatron's
 * get_megatron_optimizer rule), the dynamic scaler's hysteresis, floor and growth on
 * hand-made overflow sequences, and the constructor's checks. (The step-by-step comparison
 * with megatron-core's DynamicGradScaler is tests/interop/test_grad_scaler.py.) */
#include "grad_scaler.h"
#include "harness.h"

static mg_train_opts opts_with(int fp16, int bf16, int dist, double loss_scale)
{
    mg_train_opts o;
    memset(&o, 0, sizeof o);
    o.fp16 = fp16;
    o.bf16 = bf16;
    o.use_distributed_optimizer = dist;
    o.loss_scale = loss_scale;
    o.initial_loss_scale = 4294967296.0;
    o.min_loss_scale = 1.0;
    o.loss_scale_window = 1000;
    o.hysteresis = 2;
    return o;
}

static mg_scaler_kind kind_of(int fp16, int bf16, int dist, double loss_scale, float *scale)
{
    mg_train_opts o = opts_with(fp16, bf16, dist, loss_scale);
    mg_grad_scaler s;
    if (mg_grad_scaler_init(&s, &o) != MG_OK) return (mg_scaler_kind)-1;
    *scale = s.scale;
    return s.kind;
}

MG_TEST(grad_scaler_choice)
{
    float sc = 0;
    MG_CHECK(t, kind_of(0, 0, 0, 0, &sc) == MG_SCALER_NONE && sc == 1.0f);
    MG_CHECK(t, kind_of(0, 0, 0, 8, &sc) == MG_SCALER_NONE && sc == 1.0f); /* FP32Optimizer */
    MG_CHECK(t, kind_of(0, 1, 0, 0, &sc) == MG_SCALER_NONE && sc == 1.0f);
    MG_CHECK(t, kind_of(0, 1, 0, 8, &sc) == MG_SCALER_CONSTANT && sc == 8.0f);
    MG_CHECK(t, kind_of(0, 0, 1, 8, &sc) == MG_SCALER_CONSTANT && sc == 8.0f);
    MG_CHECK(t, kind_of(1, 0, 0, 8, &sc) == MG_SCALER_CONSTANT && sc == 8.0f);
    MG_CHECK(t, kind_of(1, 0, 0, 0, &sc) == MG_SCALER_DYNAMIC && sc == 4294967296.0f);
    MG_CHECK_EQ_STR(t, mg_grad_scaler_kind_name(MG_SCALER_DYNAMIC), "dynamic");
}

MG_TEST(grad_scaler_constant_ignores_updates)
{
    mg_train_opts o = opts_with(0, 1, 0, 3.0);
    mg_grad_scaler s;
    MG_CHECK_OK(t, mg_grad_scaler_init(&s, &o));
    for (int i = 0; i < 5; i++) mg_grad_scaler_update(&s, i % 2);
    MG_CHECK(t, s.scale == 3.0f);
    MG_CHECK(t, mg_grad_scaler_inv(&s) == (float)(1.0 / 3.0));
}

MG_TEST(grad_scaler_hysteresis_and_floor)
{
    mg_grad_scaler s;
    MG_CHECK_OK(t, mg_grad_scaler_dynamic(&s, 16.0, 2.0, 3, 2));
    mg_grad_scaler_update(&s, 1); /* first overflow: hysteresis absorbs it */
    MG_CHECK(t, s.scale == 16.0f && s.hysteresis_tracker == 1 && s.growth_tracker == 0);
    mg_grad_scaler_update(&s, 1);
    MG_CHECK(t, s.scale == 8.0f && s.hysteresis_tracker == 0);
    mg_grad_scaler_update(&s, 1); /* the tracker stays spent: every overflow halves */
    MG_CHECK(t, s.scale == 4.0f && s.hysteresis_tracker == -1);
    mg_grad_scaler_update(&s, 1);
    mg_grad_scaler_update(&s, 1);
    MG_CHECK(t, s.scale == 2.0f); /* the floor */
    mg_grad_scaler_update(&s, 0);
    mg_grad_scaler_update(&s, 0);
    MG_CHECK(t, s.growth_tracker == 2 && s.hysteresis_tracker == -3 && s.scale == 2.0f);
    mg_grad_scaler_update(&s, 0); /* the window: growth, trackers reset */
    MG_CHECK(t, s.scale == 4.0f && s.growth_tracker == 0 && s.hysteresis_tracker == 2);
    mg_grad_scaler_update(&s, 0);
    mg_grad_scaler_update(&s, 1); /* an overflow restarts the window */
    MG_CHECK(t, s.growth_tracker == 0 && s.hysteresis_tracker == 1 && s.scale == 4.0f);
    MG_CHECK(t, mg_grad_scaler_inv(&s) == 0.25f);
}

MG_TEST(grad_scaler_checks)
{
    mg_grad_scaler s;
    MG_CHECK_ERR(t, mg_grad_scaler_dynamic(&s, 0, 1, 1, 1), MG_ERR_ARG, "--initial-loss-scale");
    MG_CHECK_ERR(t, mg_grad_scaler_dynamic(&s, 4, 0, 1, 1), MG_ERR_ARG, "--min-loss-scale");
    MG_CHECK_ERR(t, mg_grad_scaler_dynamic(&s, 4, 8, 1, 1), MG_ERR_ARG, "must not exceed");
    MG_CHECK_ERR(t, mg_grad_scaler_dynamic(&s, 4, 1, 0, 1), MG_ERR_ARG, "--loss-scale-window");
    MG_CHECK_ERR(t, mg_grad_scaler_dynamic(&s, 4, 1, 1, 0), MG_ERR_ARG, "--hysteresis");
    mg_train_opts o = opts_with(0, 1, 0, -2);
    MG_CHECK_ERR(t, mg_grad_scaler_init(&s, &o), MG_ERR_ARG, "--loss-scale");
}

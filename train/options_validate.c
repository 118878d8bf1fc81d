/* options_validate.c — megatron/training/arguments.py validate_args() for the flags mg-train
 * knows, and get_optimizer_param_scheduler()'s conversion of the schedule to samples
 * (options.h). Messages name the flags; MG_ERR_ARG for invalid combinations,
 * MG_ERR_UNSUPPORTED for valid Megatron settings this build does not implement. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "launch_check.h"
#include "mg/schema.h"
#include "options_internal.h"

#define LL(x) ((long long)(x))

static mg_status require_i64(int64_t v, const char *flag)
{
    MG_RETURN_IF(v <= 0, MG_ERR_ARG, "the following arguments are required: %s", flag);
    return MG_OK;
}

static mg_status model_required(const mg_train_opts *o)
{
    MG_FORWARD(require_i64(o->model.num_layers, "--num-layers"));
    MG_FORWARD(require_i64(o->model.hidden_size, "--hidden-size"));
    MG_FORWARD(require_i64(o->model.num_attention_heads, "--num-attention-heads"));
    MG_FORWARD(require_i64(o->model.max_position_embeddings, "--max-position-embeddings"));
    MG_FORWARD(require_i64(o->model.seq_length, "--seq-length"));
    MG_RETURN_IF(!o->model.learned_positions && strcmp(o->pos_type_, "rope") != 0,
                 MG_ERR_UNSUPPORTED, "not supported yet: --position-embedding-type %s",
                 o->pos_type_);
    MG_RETURN_IF(o->hidden_dropout != 0 || o->attention_dropout != 0, MG_ERR_UNSUPPORTED,
                 "not supported yet: dropout (--hidden-dropout %g --attention-dropout %g; "
                 "mg-train trains without dropout, give 0)",
                 o->hidden_dropout, o->attention_dropout);
    MG_RETURN_IF(!(o->init_method_std > 0), MG_ERR_ARG,
                 "--init-method-std must be positive (got %g)", o->init_method_std);
    MG_RETURN_IF(!(o->model.norm_epsilon > 0), MG_ERR_ARG,
                 "--norm-epsilon must be positive (got %g)", o->model.norm_epsilon);
    return MG_OK;
}

/* ffn_hidden_size, kv_channels, num_query_groups as validate_args / TransformerConfig. */
static mg_status model_derive(mg_train_opts *o)
{
    mg_model_desc *m = &o->model;
    if (m->ffn_hidden_size == 0)
        m->ffn_hidden_size = m->swiglu ? (int64_t)((4.0 * (double)m->hidden_size * 2 / 3) / 64) * 64
                                       : 4 * m->hidden_size;
    MG_RETURN_IF(m->ffn_hidden_size <= 0, MG_ERR_ARG,
                 "--swiglu with --hidden-size %lld gives ffn_hidden_size 0: give --ffn-hidden-size",
                 LL(m->hidden_size));
    if (m->kv_channels == 0) {
        MG_RETURN_IF(m->hidden_size % m->num_attention_heads, MG_ERR_ARG,
                     "--hidden-size %lld is not a multiple of --num-attention-heads %lld "
                     "(or give --kv-channels)", LL(m->hidden_size), LL(m->num_attention_heads));
        m->kv_channels = m->hidden_size / m->num_attention_heads;
    }
    if (!o->group_query_attention) m->num_query_groups = m->num_attention_heads;
    MG_RETURN_IF(m->num_attention_heads % m->num_query_groups, MG_ERR_ARG,
                 "--num-attention-heads %lld is not a multiple of --num-query-groups %lld",
                 LL(m->num_attention_heads), LL(m->num_query_groups));
    MG_RETURN_IF(m->num_attention_heads % m->tp || m->num_query_groups % m->tp, MG_ERR_ARG,
                 "--num-attention-heads %lld and the query groups %lld must be multiples of "
                 "--tensor-model-parallel-size %lld", LL(m->num_attention_heads),
                 LL(m->num_query_groups), LL(m->tp));
    MG_RETURN_IF(m->max_position_embeddings < m->seq_length, MG_ERR_ARG,
                 "max_position_embeddings (%lld) must be greater than or equal to seq_length "
                 "(%lld)", LL(m->max_position_embeddings), LL(m->seq_length));
    return MG_OK;
}

/* Megatron's layer placement (get_num_layers_to_build) must give every stage its layers;
 * sequence parallelism needs TP > 1 (validate_args turns it off otherwise) and a
 * sequence that divides over the tensor-parallel ranks. */
static mg_status check_parallel(mg_train_opts *o)
{
    mg_model_desc *m = &o->model;
    MG_RETURN_IF(m->pp == 1 && (m->pp_first || m->pp_last), MG_ERR_ARG,
                 "--decoder-first/last-pipeline-num-layers need "
                 "--pipeline-model-parallel-size > 1");
    for (int64_t p = 0; p < m->pp; p++) {
        int64_t off, n;
        MG_FORWARD(mg_schema_pp_layers(m->num_layers, m->pp, m->pp_first, m->pp_last, p, &off,
                                       &n));
    }
    if (m->tp == 1) o->sequence_parallel = 0;
    MG_RETURN_IF(o->sequence_parallel && m->seq_length % m->tp, MG_ERR_ARG,
                 "--sequence-parallel: --seq-length %lld is not a multiple of "
                 "--tensor-model-parallel-size %lld", LL(m->seq_length), LL(m->tp));
    return MG_OK;
}

static void model_label(mg_train_opts *o)
{
    mg_model_desc *m = &o->model;
    if (m->swiglu && m->rmsnorm && !m->learned_positions)
        m->arch = m->add_qkv_bias && !m->add_bias_linear ? MG_ARCH_QWEN2 : MG_ARCH_LLAMA;
    else
        m->arch = MG_ARCH_GPT2;
    m->dtype = o->bf16 ? MG_TD_BF16 : o->fp16 ? MG_TD_F16 : MG_TD_F32;
}

static mg_status check_batch(mg_train_opts *o)
{
    MG_FORWARD(require_i64(o->micro_batch_size, "--micro-batch-size"));
    int64_t mp = o->model.tp * o->model.pp;
    /* one process (no launcher) plans any layout with DP 1 (--dry-run); training refuses
     * it when the world is made (comm.h) */
    if (o->world_size > 1) MG_FORWARD(mg_train_check_launch(o)); /* too few ranks */
    MG_RETURN_IF(o->world_size > 1 && o->world_size % mp, MG_ERR_ARG,
                 "world size (%lld) is not divisible by tensor model parallel size (%lld) "
                 "times pipeline model parallel size (%lld)", LL(o->world_size),
                 LL(o->model.tp), LL(o->model.pp));
    o->data_parallel_size = o->world_size > 1 ? o->world_size / mp : 1;
    int64_t unit = o->micro_batch_size * o->data_parallel_size;
    if (o->global_batch_size == 0) o->global_batch_size = unit;
    MG_RETURN_IF(o->global_batch_size % unit, MG_ERR_ARG,
                 "global batch size (%lld) is not divisible by micro batch size (%lld) times "
                 "data parallel size (%lld)", LL(o->global_batch_size), LL(o->micro_batch_size),
                 LL(o->data_parallel_size));
    MG_RETURN_IF(o->bf16 && o->fp16, MG_ERR_ARG, "--bf16 and --fp16 cannot be used together");
    return MG_OK;
}

static mg_status check_length(mg_train_opts *o)
{
    MG_RETURN_IF(!o->train_iters && !o->train_samples, MG_ERR_ARG,
                 "either --train-iters or --train-samples should be provided");
    MG_RETURN_IF(o->train_iters && o->train_samples, MG_ERR_ARG,
                 "--train-iters and --train-samples cannot be used together");
    int frac = o->lr_warmup_fraction >= 0;
    if (o->train_iters) {
        MG_RETURN_IF(o->lr_decay_samples, MG_ERR_ARG,
                     "--lr-decay-samples needs sample-based training (--train-samples)");
        MG_RETURN_IF(o->lr_warmup_samples, MG_ERR_ARG,
                     "--lr-warmup-samples needs sample-based training (--train-samples)");
        MG_RETURN_IF(frac && o->lr_warmup_iters, MG_ERR_ARG,
                     "can only specify one of --lr-warmup-fraction and --lr-warmup-iters");
        return MG_OK;
    }
    MG_RETURN_IF(o->lr_decay_iters, MG_ERR_ARG,
                 "--lr-decay-iters needs iteration-based training (--train-iters)");
    MG_RETURN_IF(o->lr_warmup_iters, MG_ERR_ARG,
                 "--lr-warmup-iters needs iteration-based training (--train-iters)");
    MG_RETURN_IF(frac && o->lr_warmup_samples, MG_ERR_ARG,
                 "can only specify one of --lr-warmup-fraction and --lr-warmup-samples");
    o->train_iters = o->train_samples / o->global_batch_size;
    MG_RETURN_IF(o->train_iters == 0, MG_ERR_ARG,
                 "--train-samples %lld is less than one global batch (%lld)",
                 LL(o->train_samples), LL(o->global_batch_size));
    return MG_OK;
}

static mg_status weight_decay(mg_train_opts *o)
{
    int given = o->start_weight_decay >= 0 || o->end_weight_decay >= 0;
    if (o->weight_decay_incr_style == MG_WD_CONSTANT) {
        MG_RETURN_IF(given, MG_ERR_ARG, "--start-weight-decay / --end-weight-decay need "
                     "--weight-decay-incr-style linear or cosine");
        o->start_weight_decay = o->end_weight_decay = o->weight_decay;
        return MG_OK;
    }
    MG_RETURN_IF(o->start_weight_decay < 0 || o->end_weight_decay < 0, MG_ERR_ARG,
                 "--weight-decay-incr-style %s needs --start-weight-decay and "
                 "--end-weight-decay", mg_wd_style_name(o->weight_decay_incr_style));
    return MG_OK;
}

/* get_optimizer_param_scheduler: everything in samples. */
static void schedule_steps(mg_train_opts *o, mg_lr_sched *s)
{
    const double gbs = (double)o->global_batch_size;
    int frac = o->lr_warmup_fraction >= 0;
    if (o->train_samples == 0) {
        if (o->lr_decay_iters == 0) o->lr_decay_iters = o->train_iters;
        s->decay_steps = (double)o->lr_decay_iters * gbs;
        s->wd_incr_steps = (double)o->train_iters * gbs;
        s->wsd_decay_steps = o->lr_wsd_decay_iters >= 0 ? (double)o->lr_wsd_decay_iters * gbs : -1;
        s->warmup_steps = frac ? o->lr_warmup_fraction * s->decay_steps
                               : (double)o->lr_warmup_iters * gbs;
        return;
    }
    if (o->lr_decay_samples == 0) o->lr_decay_samples = o->train_samples;
    s->decay_steps = (double)o->lr_decay_samples;
    s->wd_incr_steps = (double)o->train_samples;
    s->wsd_decay_steps = o->lr_wsd_decay_samples >= 0 ? (double)o->lr_wsd_decay_samples : -1;
    s->warmup_steps = frac ? o->lr_warmup_fraction * s->decay_steps : (double)o->lr_warmup_samples;
}

/* The warmup against the decay in the unit the flags gave (iterations or samples), before
 * mg_lr_sched_check names it in samples; decay: the flag that set the decay length. */
static mg_status check_warmup(const mg_train_opts *o, const mg_lr_sched *s, const char *decay)
{
    if (s->warmup_steps < s->decay_steps) return MG_OK;
    int iters = o->train_samples == 0;
    double unit = iters ? (double)o->global_batch_size : 1.0;
    const char *what = iters ? "iterations" : "samples";
    char warm[96];
    if (o->lr_warmup_fraction >= 0)
        snprintf(warm, sizeof warm, "--lr-warmup-fraction %g (%.17g %s)", o->lr_warmup_fraction,
                 s->warmup_steps / unit, what);
    else
        snprintf(warm, sizeof warm, "%s %.17g", iters ? "--lr-warmup-iters" : "--lr-warmup-samples",
                 s->warmup_steps / unit);
    return mg_error_set(MG_ERR_ARG, "the warmup, %s, must be shorter than the decay, %s %.17g "
                        "(in %s)", warm, decay, s->decay_steps / unit, what);
}

static mg_status check_schedule(mg_train_opts *o)
{
    MG_RETURN_IF(isnan(o->lr), MG_ERR_ARG, "the following arguments are required: --lr");
    MG_RETURN_IF(!(o->min_lr <= o->lr), MG_ERR_ARG, "--min-lr (%g) must be <= --lr (%g)",
                 o->min_lr, o->lr);
    MG_FORWARD(weight_decay(o));
    mg_lr_sched *s = &o->sched;
    s->init_lr = o->lr_warmup_init;
    s->max_lr = o->lr;
    s->min_lr = o->min_lr;
    s->style = o->lr_decay_style;
    s->wsd_style = o->lr_wsd_decay_style;
    s->start_wd = o->start_weight_decay;
    s->end_wd = o->end_weight_decay;
    s->wd_style = o->weight_decay_incr_style;
    const char *decay = o->train_samples ? (o->lr_decay_samples ? "--lr-decay-samples"
                                                                : "--train-samples")
                                         : (o->lr_decay_iters ? "--lr-decay-iters"
                                                              : "--train-iters");
    schedule_steps(o, s);
    MG_FORWARD(check_warmup(o, s, decay));
    return mg_lr_sched_check(s);
}

static mg_status check_adam(const mg_train_opts *o)
{
    MG_RETURN_IF(!(o->adam_beta1 >= 0 && o->adam_beta1 < 1), MG_ERR_ARG,
                 "--adam-beta1 must be in [0, 1) (got %g)", o->adam_beta1);
    MG_RETURN_IF(!(o->adam_beta2 >= 0 && o->adam_beta2 < 1), MG_ERR_ARG,
                 "--adam-beta2 must be in [0, 1) (got %g)", o->adam_beta2);
    MG_RETURN_IF(!(o->adam_eps >= 0), MG_ERR_ARG, "--adam-eps must be >= 0 (got %g)",
                 o->adam_eps);
    MG_RETURN_IF(!(o->clip_grad >= 0), MG_ERR_ARG, "--clip-grad must be >= 0 (got %g)",
                 o->clip_grad);
    MG_RETURN_IF(!(o->weight_decay >= 0), MG_ERR_ARG, "--weight-decay must be >= 0 (got %g)",
                 o->weight_decay);
    return MG_OK;
}

static mg_status check_data_ckpt(mg_train_opts *o)
{
    MG_RETURN_IF(!(o->distributed_timeout_minutes > 0), MG_ERR_ARG,
                 "--distributed-timeout-minutes must be positive (got %g)",
                 o->distributed_timeout_minutes);
    MG_RETURN_IF(o->mock_data && o->n_data_path, MG_ERR_ARG,
                 "a single data source must be provided: --mock-data or --data-path");
    MG_RETURN_IF(o->mock_data && !o->tok.type, MG_ERR_ARG, "--mock-data needs --tokenizer-type "
                 "(Megatron's mock documents end with the tokenizer's eod)");
    if (o->n_data_path && !o->split) o->split = "969, 30, 1"; /* Megatron's legacy default */
    /* --save without --save-interval: at the end only (loop.c), as Megatron */
    MG_RETURN_IF(!isnan(o->peak_tflops) && !(o->peak_tflops > 0), MG_ERR_ARG,
                 "--peak-tflops must be > 0 (got %g)", o->peak_tflops);
    MG_RETURN_IF(o->override_sched && o->use_ckpt_sched, MG_ERR_ARG,
                 "--override-opt_param-scheduler and --use-checkpoint-opt_param-scheduler "
                 "cannot be used together");
    MG_RETURN_IF(o->ckpt_step >= 0 && !o->load, MG_ERR_ARG, "--ckpt-step needs --load");
    MG_RETURN_IF(o->save && o->ckpt_torch_dist && (o->bf16 || o->fp16), MG_ERR_UNSUPPORTED,
                 "not supported yet: --ckpt-format torch_dist with %s (Megatron's "
                 "mixed-precision sharded layout)", o->bf16 ? "--bf16" : "--fp16");
    return MG_OK;
}

mg_status mg_train_validate(mg_train_opts *o)
{
    MG_FORWARD(model_required(o));
    MG_FORWARD(model_derive(o));
    MG_FORWARD(check_parallel(o));
    MG_FORWARD(mg_train_check_recompute(o));
    model_label(o);
    MG_FORWARD(check_batch(o));
    MG_FORWARD(check_length(o));
    MG_FORWARD(check_schedule(o));
    MG_FORWARD(check_adam(o));
    MG_FORWARD(check_data_ckpt(o));
    mg_status st = mg_model_check(&o->model, "mg-train");
    if (st == MG_ERR_FORMAT) st = MG_ERR_ARG;
    return st;
}

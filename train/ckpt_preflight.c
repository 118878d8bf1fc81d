/* ckpt_preflight.c — ckpt_preflight.h: a --load checked against the flags before anything is
 * built, and --use-checkpoint-args. */
#include "ckpt_preflight.h"

#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "checkpoint.h"
#include "ckpt_head.h"
#include "mg/model_desc.h"

#define LL(x) ((long long)(x))

/* Messages listing every difference: "a; b; c" into a bounded buffer. */
typedef struct {
    char text[1536];
    size_t at;
    int n;
} diff_list;

static void diff_add(diff_list *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static void diff_add(diff_list *l, const char *fmt, ...)
{
    if (l->at >= sizeof l->text) return;
    if (l->n++) l->at += (size_t)snprintf(l->text + l->at, sizeof l->text - l->at, "; ");
    if (l->at >= sizeof l->text) return;
    va_list ap;
    va_start(ap, fmt);
    l->at += (size_t)vsnprintf(l->text + l->at, sizeof l->text - l->at, fmt, ap);
    va_end(ap);
}

/* ---- --use-checkpoint-args ---- */

#define M(field) offsetof(mg_model_desc, field)

/* Sizes taken from the checkpoint only when the command line did not give them. */
static const size_t unless_given[] = {M(num_layers), M(hidden_size), M(ffn_hidden_size),
                                      M(num_attention_heads), M(kv_channels), M(seq_length),
                                      M(max_position_embeddings)};

static int64_t *i64_at(mg_model_desc *m, size_t off)
{
    return (int64_t *)(void *)((char *)m + off);
}

static void take_args(mg_train_opts *o, mg_model_desc *c)
{
    mg_model_desc *m = &o->model;
    for (size_t i = 0; i < sizeof unless_given / sizeof *unless_given; i++)
        if (*i64_at(m, unless_given[i]) <= 0)
            *i64_at(m, unless_given[i]) = *i64_at(c, unless_given[i]);
    /* load_args_from_checkpoint's force=True arguments */
    o->group_query_attention = 1;
    m->num_query_groups = c->num_query_groups;
    m->rmsnorm = c->rmsnorm;
    m->norm_epsilon = c->norm_epsilon;
    m->swiglu = c->swiglu;
    m->learned_positions = c->learned_positions;
    o->pos_type_ = c->learned_positions ? "learned_absolute" : "rope";
    m->rotary_base = c->rotary_base;
    m->rope_scaling_factor = c->rope_scaling_factor;
    m->add_bias_linear = c->add_bias_linear;
    m->add_qkv_bias = c->add_qkv_bias;
    m->tied_embeddings = c->tied_embeddings;
    m->make_vocab_size_divisible_by = c->make_vocab_size_divisible_by;
    /* the layout stays the flags' (Megatron takes it only with
     * --use-mp-args-from-checkpoint-args); preflight names a mismatch */
    int null_tok = o->tok.type && !strcmp(o->tok.type, "NullTokenizer");
    if ((!o->tok.type || null_tok) && o->tok.vocab_size <= 0)
        o->tok.vocab_size = c->vocab_size > 0 ? c->vocab_size : c->padded_vocab_size;
}

/* The checkpoint's model description (args must be there). */
static mg_status ckpt_model(const char *dir, const mg_train_ckpt_head *h, mg_model_desc *c)
{
    MG_RETURN_IF(!h->args, MG_ERR_ARG, "--load %s: %s has no 'args' to take the model from",
                 dir, h->path);
    mg_model_init(c);
    return mg_model_from_args(c, h->args, h->path);
}

mg_status mg_train_use_ckpt_args(mg_train_opts *o)
{
    MG_RETURN_IF(!o->load, MG_ERR_ARG, "--use-checkpoint-args needs --load");
    mg_train_ckpt_head h;
    mg_model_desc c;
    memset(&c, 0, sizeof c);
    mg_status s = mg_train_ckpt_head_open(&h, o->load, o->ckpt_step);
    if (s == MG_OK) s = ckpt_model(o->load, &h, &c);
    if (s == MG_OK) take_args(o, &c);
    mg_model_free(&c);
    mg_train_ckpt_head_close(&h);
    return s;
}

/* ---- the checks ---- */

static mg_status check_layout(const mg_train_opts *o, const mg_train_ckpt_head *h)
{
    const mg_model_desc *m = &o->model;
    if (h->dist || (h->tp == m->tp && h->pp == m->pp)) return MG_OK;
    return mg_error_set(MG_ERR_ARG,
                        "--load %s: the checkpoint is --tensor-model-parallel-size %lld x "
                        "--pipeline-model-parallel-size %lld, this run %lld x %lld: reshard it "
                        "with mg-convert --load-dir %s --save-dir %s-tp%lld-pp%lld "
                        "--target-tensor-parallel-size %lld --target-pipeline-parallel-size "
                        "%lld", o->load, LL(h->tp), LL(h->pp), LL(m->tp), LL(m->pp), o->load,
                        o->load, LL(m->tp), LL(m->pp), LL(m->tp), LL(m->pp));
}

/* derived: a size that follows from another (ffn_hidden_size from hidden_size, kv_channels
 * from hidden_size / heads, num_query_groups from heads) is named only when those agree,
 * so that a message names what was given */
static const struct {
    const char *key, *flag;
    size_t off;
    int derived;
} model_ints[] = {
    {"num_layers", "--num-layers", M(num_layers), 0},
    {"hidden_size", "--hidden-size", M(hidden_size), 0},
    {"ffn_hidden_size", "--ffn-hidden-size", M(ffn_hidden_size), 1},
    {"num_attention_heads", "--num-attention-heads", M(num_attention_heads), 0},
    {"num_query_groups", "--num-query-groups", M(num_query_groups), 1},
    {"kv_channels", "--kv-channels", M(kv_channels), 1},
    {"padded_vocab_size", "the padded vocabulary (--vocab-size or the tokenizer, "
                          "--make-vocab-size-divisible-by)", M(padded_vocab_size), 0},
};

static const char *yes(int v) { return v ? "True" : "False"; }

static void compare_variants(diff_list *l, const mg_model_desc *c, const mg_model_desc *m)
{
    static const char *const norm[] = {"LayerNorm", "RMSNorm"};
    static const char *const pos[] = {"rope", "learned_absolute"};
    if (c->rmsnorm != m->rmsnorm)
        diff_add(l, "normalization %s, --normalization %s", norm[c->rmsnorm], norm[m->rmsnorm]);
    if (c->swiglu != m->swiglu)
        diff_add(l, "swiglu %s, --swiglu %s", yes(c->swiglu), m->swiglu ? "given" : "not given");
    if (c->learned_positions != m->learned_positions)
        diff_add(l, "position_embedding_type %s, --position-embedding-type %s",
                 pos[c->learned_positions], pos[m->learned_positions]);
    if (c->tied_embeddings != m->tied_embeddings)
        diff_add(l, "untie_embeddings_and_output_weights %s, "
                 "--untie-embeddings-and-output-weights %s", yes(!c->tied_embeddings),
                 m->tied_embeddings ? "not given" : "given");
    if (c->add_bias_linear != m->add_bias_linear)
        diff_add(l, "add_bias_linear %s, --disable-bias-linear %s", yes(c->add_bias_linear),
                 m->add_bias_linear ? "not given" : "given");
    if (c->add_qkv_bias != m->add_qkv_bias && !m->add_bias_linear)
        diff_add(l, "add_qkv_bias %s, --add-qkv-bias %s", yes(c->add_qkv_bias),
                 m->add_qkv_bias ? "given" : "not given");
}

static mg_status check_model(mg_train_opts *o, const mg_train_ckpt_head *h)
{
    if (!h->args) return MG_OK;
    mg_model_desc c;
    mg_status s = ckpt_model(o->load, h, &c);
    diff_list l = {.at = 0, .n = 0};
    int sizes_agree = 1;
    for (size_t i = 0; s == MG_OK && i < sizeof model_ints / sizeof *model_ints; i++) {
        int64_t cv = *i64_at(&c, model_ints[i].off), mv = *i64_at(&o->model, model_ints[i].off);
        if (cv <= 0 || cv == mv) continue;
        if (!model_ints[i].derived) sizes_agree = 0;
        if (!model_ints[i].derived || sizes_agree)
            diff_add(&l, "%s %lld, %s %lld", model_ints[i].key, LL(cv), model_ints[i].flag, LL(mv));
    }
    if (s == MG_OK) compare_variants(&l, &c, &o->model);
    /* learned positions: the table's rows (check_checkpoint_args compares it too) */
    if (s == MG_OK && c.learned_positions && o->model.learned_positions &&
        c.max_position_embeddings > 0 &&
        c.max_position_embeddings != o->model.max_position_embeddings)
        diff_add(&l, "max_position_embeddings %lld, --max-position-embeddings %lld",
                 LL(c.max_position_embeddings), LL(o->model.max_position_embeddings));
    mg_model_free(&c);
    MG_FORWARD(s);
    MG_RETURN_IF(l.n, MG_ERR_ARG, "--load %s: the model flags contradict the checkpoint "
                 "(--use-checkpoint-args takes its model): checkpoint: %s", o->load, l.text);
    return MG_OK;
}

/* ---- the learning-rate scheduler (OptimizerParamScheduler.load_state_dict) ---- */

static int num_of(const mg_pk_obj *x, double *v)
{
    if (!x) return 0;
    if (x->kind == MG_PK_FLOAT) *v = x->f;
    else if (x->kind == MG_PK_INT || x->kind == MG_PK_BOOL) *v = (double)x->i;
    else return 0;
    return 1;
}

/* steps: a count of samples (Megatron's scheduler counts samples) */
static const struct {
    const char *key, *flags;
    size_t off;
    int steps;
} sched_nums[] = {
    {"max_lr", "--lr", offsetof(mg_lr_sched, max_lr), 0},
    {"min_lr", "--min-lr", offsetof(mg_lr_sched, min_lr), 0},
    {"lr_warmup_steps", "--lr-warmup-iters/samples/fraction",
     offsetof(mg_lr_sched, warmup_steps), 1},
    {"lr_decay_steps", "--lr-decay-iters/samples, else --train-iters/samples",
     offsetof(mg_lr_sched, decay_steps), 1},
    {"start_wd", "--start-weight-decay or --weight-decay", offsetof(mg_lr_sched, start_wd), 0},
    {"end_wd", "--end-weight-decay or --weight-decay", offsetof(mg_lr_sched, end_wd), 0},
    {"wd_incr_steps", "--train-iters/samples", offsetof(mg_lr_sched, wd_incr_steps), 1},
};

/* One difference: a step count also in iterations when the run counts iterations (gbs > 0). */
static void sched_diff(diff_list *l, size_t i, double cv, double mv, double gbs)
{
    const char *key = sched_nums[i].key, *flags = sched_nums[i].flags;
    if (!sched_nums[i].steps)
        diff_add(l, "%s %g, the flags' %g (%s)", key, cv, mv, flags);
    else if (gbs > 0)
        diff_add(l, "%s %g samples = %g iterations, the flags' %g = %g iterations (%s)", key,
                 cv, cv / gbs, mv, mv / gbs, flags);
    else
        diff_add(l, "%s %g samples, the flags' %g (%s)", key, cv, mv, flags);
}

static double *f64_at(mg_lr_sched *s, size_t off) { return (double *)(void *)((char *)s + off); }

static const char *str_of(const mg_pk_obj *x)
{
    return x && x->kind == MG_PK_STR ? x->str : NULL;
}

/* Compares (take = 0) or takes (take = 1) the checkpoint's scheduler values; gbs > 0: the
 * run counts iterations of gbs samples. */
static mg_status sched_pass(const mg_pk_obj *d, mg_lr_sched *s, int take, double gbs,
                            diff_list *l)
{
    for (size_t i = 0; i < sizeof sched_nums / sizeof *sched_nums; i++) {
        double cv, *mv = f64_at(s, sched_nums[i].off);
        if (!num_of(mg_pk_get(d, sched_nums[i].key), &cv) || cv == *mv) continue;
        if (take) *mv = cv;
        else sched_diff(l, i, cv, *mv, gbs);
    }
    const char *ls = str_of(mg_pk_get(d, "lr_decay_style"));
    const char *ws = str_of(mg_pk_get(d, "wd_incr_style"));
    if (ls && strcmp(ls, mg_lr_style_name(s->style))) {
        if (!take)
            diff_add(l, "lr_decay_style %s, --lr-decay-style %s", ls, mg_lr_style_name(s->style));
        else MG_RETURN_IF(mg_lr_style_parse(ls, &s->style), MG_ERR_UNSUPPORTED,
                          "not supported yet: the checkpoint's lr_decay_style %s", ls);
    }
    if (ws && strcmp(ws, mg_wd_style_name(s->wd_style))) {
        if (!take) diff_add(l, "wd_incr_style %s, --weight-decay-incr-style %s", ws,
                            mg_wd_style_name(s->wd_style));
        else MG_RETURN_IF(mg_wd_style_parse(ws, &s->wd_style), MG_ERR_UNSUPPORTED,
                          "not supported yet: the checkpoint's wd_incr_style %s", ws);
    }
    return MG_OK;
}

static mg_status check_sched(mg_train_opts *o, const mg_train_ckpt_head *h)
{
    const mg_pk_obj *d = h->sched;
    int loads = !o->finetune && !o->no_load_optim && !h->it.release;
    if (!loads || !d || (d->kind != MG_PK_DICT && d->kind != MG_PK_ODICT) || o->override_sched)
        return MG_OK;
    diff_list l = {.at = 0, .n = 0};
    double gbs = o->train_samples ? 0 : (double)o->global_batch_size;
    MG_FORWARD(sched_pass(d, &o->sched, o->use_ckpt_sched, gbs, &l));
    MG_RETURN_IF(l.n, MG_ERR_ARG,
                 "--load %s: the learning-rate schedule differs from the checkpoint's "
                 "(checkpoint: %s): give --use-checkpoint-opt_param-scheduler to continue "
                 "the checkpoint's schedule, or --override-opt_param-scheduler to follow the "
                 "flags", o->load, l.text);
    return MG_OK;
}

/* The optimizer classes must match as Megatron's load_state_dict needs them to: the
 * mixed-precision state (fp32_from_fp16_params) for Float16OptimizerWithFloat16Params,
 * torch's AdamW dict for FP32Optimizer (the distributed optimizer's state loads into either). */
static mg_status check_optim(const mg_train_opts *o, const mg_train_ckpt_head *h)
{
    if (o->finetune || o->no_load_optim || h->it.release) return MG_OK;
    int run_mixed = mg_train_ckpt_mixed_optim(o);
    const char *prec = o->bf16 ? "--bf16" : "--fp16";
    MG_RETURN_IF(h->dist && run_mixed, MG_ERR_UNSUPPORTED,
                 "not supported yet: --load %s: the optimizer state of a torch_dist checkpoint "
                 "in a %s run (pass --no-load-optim to load the weights alone)", o->load, prec);
    const mg_pk_obj *od = h->optim;
    if (h->dist || !od || (od->kind != MG_PK_DICT && od->kind != MG_PK_ODICT)) return MG_OK;
    int file_mixed = mg_train_ckpt_optim_is_mixed(od), file_fp32 = mg_pk_get(od, "state") != NULL;
    MG_RETURN_IF(file_mixed && !run_mixed, MG_ERR_ARG,
                 "--load %s: the checkpoint's optimizer state is a --bf16/--fp16 run's "
                 "(Float16OptimizerWithFloat16Params: fp32_from_fp16_params), this run's "
                 "optimizer is %s, which cannot load it (neither can Megatron's): pass "
                 "--no-load-optim or --finetune to load the weights alone", o->load,
                 o->use_distributed_optimizer ? "the distributed optimizer" : "FP32Optimizer");
    MG_RETURN_IF(file_fp32 && run_mixed, MG_ERR_ARG,
                 "--load %s: the checkpoint's optimizer state is an fp32 run's (FP32Optimizer), "
                 "this %s run's optimizer is Float16OptimizerWithFloat16Params, which cannot "
                 "load it (neither can Megatron's): pass --no-load-optim or --finetune to "
                 "load the weights alone", o->load, prec);
    return MG_OK;
}

mg_status mg_train_ckpt_preflight(mg_train_opts *o)
{
    if (!o->load) return MG_OK;
    mg_train_ckpt_head h;
    mg_status s = mg_train_ckpt_head_open(&h, o->load, o->ckpt_step);
    if (s == MG_OK) s = check_layout(o, &h);
    if (s == MG_OK) s = check_model(o, &h);
    if (s == MG_OK) s = check_sched(o, &h);
    if (s == MG_OK) s = check_optim(o, &h);
    mg_train_ckpt_head_close(&h);
    return s;
}

/* loop.c — loop.h: the training loop, evaluation, stop conditions and --dump-samples.
 * Checkpoints (checkpoint.h): --load after the initialisation (iteration, moments, validation
 * position; --finetune: weights only, iteration 0; --no-load-optim: new optimizer); --save
 * after evaluation at every --save-interval iteration, when a stop condition ends the run,
 * and after the last iteration (once per iteration). A checkpoint whose consumed samples are
 * not iteration x --global-batch-size is refused (MG_ERR_UNSUPPORTED): the data position is
 * derived from the iteration. Every collective goes through comm.h on the run's world
 * communicator (the caller's): the training step's (step.h), the validation loss's sum
 * over the data-parallel group and broadcast from the last pipeline stage and, with
 * --exit-signal-handler, the stop flag's sum over the world after every iteration.
 * Data-parallel rank r of D takes, for micro-batch i of a global batch starting at sample
 * s, the samples s + i x mbs x D + r x mbs ... + mbs - 1 (MegatronPretrainingSampler).
 * This rank's part of the model comes from its tensor-parallel rank and pipeline stage
 * (Megatron's layer placement, mg_schema_pp_layers); it keeps one activation arena per
 * micro-batch its stage has in flight (schedule.h). The log lines are the last rank's
 * (Megatron's print_rank_last), the progress notes rank 0's; only data-parallel rank 0 of
 * each model shard writes its mp_rank_TT[_PPP] file of the checkpoint (checkpoint.h's
 * phases, with barriers) — and with --use-distributed-optimizer megatron-core's
 * distrib_optim.pt next to it (dist_optim.h) — and every rank waits for it; every rank
 * loads its shard's file. */
#include "loop.h"

#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "acts_plan.h"
#include "batch.h"
#include "checkpoint.h"
#include "comm.h"
#include "comm_launch.h"
#include "device.h"
#include "device_plan.h"
#include "dist_optim.h"
#include "flops.h"
#include "grad_buckets.h"
#include "grad_scaler.h"
#include "log.h"
#include "mg/cli.h"
#include "mg/file.h"
#include "mg/schema.h"
#include "model.h"
#include "schedule.h"
#include "step.h"

/* Set by the SIGTERM/SIGINT handler (--exit-signal-handler); the one mutable global a
 * signal handler needs. */
static volatile sig_atomic_t stop_signal;

static void on_signal(int sig) { stop_signal = sig; }

static void install_handlers(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = on_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGUSR1, &sa, NULL);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

typedef struct {
    const mg_train_opts *o;
    mg_train_data *data;
    mg_gpt *g;            /* the host model: initialisation, checkpoints */
    mg_gpt *dg;           /* the model the kernels run (device.h; g itself on the CPU) */
    mg_gpt_optim *opt;    /* Adam state in the model layout (NULL with dopt) */
    mg_gpt_optim *dev_opt; /* opt in the device's memory (opt itself on the CPU) */
    mg_device_batches db; /* the micro-batches on the device (--device cuda) */
    char device[300];     /* where the kernels run (device.h) */
    double dev_ms;        /* device time of the iterations after the first (CUDA events) */
    int64_t dev_iters;
    mg_dist_optim *dopt;  /* --use-distributed-optimizer: the sharded state */
    mg_grad_buckets *buckets; /* --overlap-grad-reduce (grad_buckets.h), else NULL */
    mg_gpt_acts **slots;  /* one arena per micro-batch in flight (sched) */
    mg_sched sched;
    mg_kctx k;
    mg_comm *comm;        /* the world (the caller's); its groups carry the collectives */
    int note_rank, log_rank; /* this rank prints the progress notes / the log lines */
    mg_train_log *log;
    mg_train_batch *mb;   /* nmicro micro-batches */
    mg_gpt_batch *views;
    int64_t nmicro;
    uint64_t valid_cursor;
    int64_t start_iter;   /* iteration of the loaded checkpoint (0 without --load) */
    mg_grad_scaler scaler; /* Megatron's loss scaling (grad_scaler.h; kind none: scale 1) */
    int64_t sched_behind; /* samples of the skipped iterations: the lr scheduler's num_steps
                           * is the consumed samples minus this */
    int64_t saved_iter;   /* last iteration saved (-1: none) */
    double flops_so_far;
    /* the comm counters (comm.h) of the last training step, for the measured-volume note */
    int64_t step_calls[MG_COMM_NGROUPS][MG_COMM_NOPS], step_bytes[MG_COMM_NGROUPS][MG_COMM_NOPS];
    int64_t counted_iter;
} run_state;

/* Progress notes: rank 0's only. */
#define NOTE(s, ...)                                                                      \
    do {                                                                                  \
        if ((s)->note_rank) mg_note(__VA_ARGS__);                                         \
    } while (0)

static mg_status tokenizer_eod(const mg_train_opts *o, int64_t *eod)
{
    *eod = -1;
    if (!o->tok.type) return MG_OK;
    mg_tokenizer *tk = NULL;
    MG_FORWARD(mg_tokenizer_create(&tk, &o->tok));
    *eod = mg_tokenizer_eod(tk);
    mg_tokenizer_free(tk);
    return MG_OK;
}

static mg_status open_data(const mg_train_opts *o, mg_train_data **d)
{
    int64_t eod;
    MG_FORWARD(tokenizer_eod(o, &eod));
    return mg_train_data_create(d, o, eod);
}

static mgk_gelu_kind gelu_of(const mg_train_opts *o)
{
    if (o->openai_gelu) return MGK_GELU_TANH;
    if (o->no_bias_gelu_fusion) return MGK_GELU_ERF;
    return mg_gpt_default_gelu(&o->model);
}

static mg_status alloc_batches(run_state *s)
{
    const mg_train_opts *o = s->o;
    s->nmicro = o->global_batch_size / (o->micro_batch_size * o->data_parallel_size);
    s->mb = mg_calloc((size_t)s->nmicro, sizeof *s->mb);
    s->views = mg_calloc((size_t)s->nmicro, sizeof *s->views);
    if (!s->mb || !s->views) return MG_ERR_NOMEM;
    for (int64_t i = 0; i < s->nmicro; i++)
        MG_FORWARD(mg_train_batch_alloc(&s->mb[i], o->micro_batch_size, o->model.seq_length));
    return MG_OK;
}

/* This rank's model shard: its tensor and pipeline ranks (mp_rank_TT[_PPP]). */
static mg_train_ckpt_shard shard_of(mg_comm *w)
{
    mg_train_ckpt_shard sh = {mg_comm_rank(mg_comm_group(w, MG_COMM_TENSOR)),
                              mg_comm_rank(mg_comm_group(w, MG_COMM_PIPELINE)),
                              mg_comm_size(mg_comm_group(w, MG_COMM_PIPELINE))};
    return sh;
}

/* The checkpoint's grad scaler state into the run's dynamic scaler (Megatron's
 * load_state_dict: an fp16 checkpoint without one keeps the initial scale); a constant or
 * no scaler keeps its own. */
static mg_status restore_scaler(run_state *s, const mg_grad_scaler *saved)
{
    if (s->scaler.kind != MG_SCALER_DYNAMIC) return MG_OK;
    if (saved->kind == MG_SCALER_NONE) {
        NOTE(s, "%s has no grad scaler state: starting from --initial-loss-scale", s->o->load);
        return MG_OK;
    }
    MG_RETURN_IF(saved->kind != MG_SCALER_DYNAMIC, MG_ERR_FORMAT,
                 "--load %s: the checkpoint's grad scaler is a constant one (no 'scale'); "
                 "Megatron cannot continue it with a dynamic scaler either", s->o->load);
    s->scaler.scale = saved->scale;
    s->scaler.growth_tracker = saved->growth_tracker;
    s->scaler.hysteresis_tracker = saved->hysteresis_tracker;
    return MG_OK;
}

/* --load: weights, and unless --no-load-optim / --finetune the optimizer and position. */
static mg_status load_checkpoint(run_state *s)
{
    const mg_train_opts *o = s->o;
    s->saved_iter = -1;
    if (!o->load) return MG_OK;
    mg_train_ckpt_state st;
    int optim = !o->no_load_optim && !o->finetune;
    mg_gpt_optim *full = s->opt;
    if (optim && s->dopt) MG_FORWARD(mg_gpt_optim_create(&full, s->g));
    mg_train_ckpt_shard sh = shard_of(s->comm);
    mg_status ls =
        mg_train_ckpt_load_shard(o->load, o->ckpt_step, &sh, s->g, optim ? full : NULL, &st);
    if (ls == MG_OK && optim && s->dopt && st.optim_loaded)
        ls = mg_dist_load_moments(s->dopt, s->g, full);
    if (full != s->opt) mg_gpt_optim_free(full);
    MG_FORWARD(ls);
    if (o->finetune) {
        NOTE(s, "loaded %s for fine-tuning: iteration reset to 0, new optimizer", o->load);
        return MG_OK;
    }
    MG_RETURN_IF(st.consumed_train_samples != 0 &&
                     st.consumed_train_samples != st.iteration * o->global_batch_size,
                 MG_ERR_UNSUPPORTED,
                 "not supported yet: resuming %s (%lld samples in %lld iterations) with another "
                 "--global-batch-size (%lld)", o->load, (long long)st.consumed_train_samples,
                 (long long)st.iteration, (long long)o->global_batch_size);
    s->start_iter = st.iteration;
    /* Megatron loads the scheduler with the optimizer only: without it num_steps starts at 0
     * while the iteration and the consumed samples continue */
    s->sched_behind = st.optim_loaded ? st.sched_behind : st.consumed_train_samples;
    if (st.optim_loaded) MG_FORWARD(restore_scaler(s, &st.scaler));
    s->valid_cursor = (uint64_t)st.consumed_valid_samples;
    s->flops_so_far = st.flops_so_far;
    NOTE(s, "loaded %s at iteration %lld%s", o->load, (long long)st.iteration,
            st.optim_loaded ? "" : " (optimizer not loaded)");
    return MG_OK;
}

/* torch_dist: every rank's part of the .metadata (NULL where it wrote none) to world rank 0,
 * which writes the .metadata; *part is freed. */
static mg_status save_dist_meta(run_state *s, int64_t it, uint8_t **part, size_t len)
{
    mg_comm *w = s->comm;
    int64_t n = mg_comm_size(w), me = mg_comm_rank(w), bytes = (int64_t)len;
    mg_status st = MG_OK;
    if (me != 0) {
        st = mg_comm_send(w, &bytes, sizeof bytes, 0);
        if (st == MG_OK && bytes) st = mg_comm_send(w, *part, bytes, 0);
        free(*part);
        *part = NULL;
        return st;
    }
    uint8_t **parts = mg_calloc((size_t)n, sizeof *parts);
    size_t *lens = mg_calloc((size_t)n, sizeof *lens);
    st = parts && lens ? MG_OK : MG_ERR_NOMEM;
    if (st == MG_OK) parts[0] = *part, lens[0] = len, *part = NULL;
    for (int64_t r = 1; r < n && st == MG_OK; r++) {
        st = mg_comm_recv(w, &bytes, sizeof bytes, r);
        if (st == MG_OK && bytes) st = (parts[r] = mg_malloc((size_t)bytes)) ? MG_OK : MG_ERR_NOMEM;
        if (st == MG_OK && bytes) st = mg_comm_recv(w, parts[r], bytes, r);
        lens[r] = (size_t)bytes;
    }
    if (st == MG_OK)
        st = mg_train_ckpt_write_meta(s->o->save, it, (const uint8_t *const *)parts, lens, (size_t)n);
    for (int64_t r = 0; parts && r < n; r++) free(parts[r]);
    free(parts);
    free(lens);
    return st;
}

static mg_status save_checkpoint(run_state *s, int64_t it)
{
    const mg_train_opts *o = s->o;
    if (!o->save || s->saved_iter == it) return MG_OK;
    mg_train_ckpt_state st = {it, it * o->global_batch_size, (int64_t)s->valid_cursor,
                              s->flops_so_far, 1, s->sched_behind, s->scaler};
    mg_gpt_optim *full = s->opt;
    /* 16-bit parameters: each rank holds its shard's fp32 masters only until gathered */
    mg_status ss = s->dopt ? mg_dist_gather_masters(s->dopt, s->dg, &s->k, s->comm) : MG_OK;
    if (ss == MG_OK) ss = mg_device_to_host(s->g, s->dg, s->opt, s->dev_opt, &s->k);
    if (ss == MG_OK && s->dopt) { /* every DP rank takes part in gathering the moments */
        ss = mg_gpt_optim_create(&full, s->g);
        if (ss == MG_OK) ss = mg_dist_gather_moments(s->dopt, s->g, s->comm, full);
    }
    /* rank 0 prepares the folder, data-parallel rank 0 of each model shard writes its
     * file (torch_dist: its data files, its part of the .metadata sent to rank 0, which
     * writes the .metadata), rank 0 puts the folder in place; a barrier between the phases */
    int first = mg_comm_rank(s->comm) == 0;
    if (ss == MG_OK && first) ss = mg_train_ckpt_begin(o->save, it);
    if (ss == MG_OK) ss = mg_comm_barrier(s->comm);
    mg_train_ckpt_shard sh = shard_of(s->comm);
    uint8_t *part = NULL;
    size_t part_len = 0;
    if (ss == MG_OK && mg_comm_rank(mg_comm_group(s->comm, MG_COMM_DATA)) == 0) {
        ss = mg_train_ckpt_write(o->save, &sh, o, s->g, full, &st, &part, &part_len);
        /* torch_dist holds the moments in its own files, sharded as the model (checkpoint.h) */
        int dist_file = s->dopt && !o->ckpt_torch_dist;
        char p[MG_PATH_MAX];
        if (ss == MG_OK && dist_file)
            ss = mg_train_ckpt_shard_file(p, sizeof p, o->save, it, &sh, "distrib_optim.pt");
        if (ss == MG_OK && dist_file)
            ss = mg_dist_save_state(&s->dopt->lay, s->g, full, o->model.dtype, p);
    }
    if (full != s->opt) mg_gpt_optim_free(full);
    if (ss == MG_OK && o->ckpt_torch_dist) ss = save_dist_meta(s, it, &part, part_len);
    free(part);
    MG_FORWARD(ss);
    MG_FORWARD(mg_comm_barrier(s->comm));
    if (first) MG_FORWARD(mg_train_ckpt_commit(o->save, it));
    MG_FORWARD(mg_comm_barrier(s->comm));
    s->saved_iter = it;
    NOTE(s, "saved checkpoint at iteration %lld to %s", (long long)it, o->save);
    return MG_OK;
}

/* This rank's part of the model from the world's tensor and pipeline groups. */
static mg_status layout_of(const mg_train_opts *o, mg_comm *w, mg_gpt_layout *lay)
{
    const mg_model_desc *m = &o->model;
    mg_comm *tp = mg_comm_group(w, MG_COMM_TENSOR), *pp = mg_comm_group(w, MG_COMM_PIPELINE);
    MG_RETURN_IF(mg_comm_size(tp) != m->tp || mg_comm_size(pp) != m->pp, MG_ERR_ARG,
                 "--tensor-model-parallel-size %lld x --pipeline-model-parallel-size %lld "
                 "needs as many processes per model replica (launch them with mpirun); this "
                 "run's groups have %lld x %lld", (long long)m->tp, (long long)m->pp,
                 (long long)mg_comm_size(tp), (long long)mg_comm_size(pp));
    int64_t stage = mg_comm_rank(pp);
    lay->tp = m->tp;
    lay->tp_rank = mg_comm_rank(tp);
    lay->first_stage = stage == 0;
    lay->last_stage = stage == m->pp - 1;
    return mg_schema_pp_layers(m->num_layers, m->pp, m->pp_first, m->pp_last, stage,
                               &lay->layer_first, &lay->layers);
}

/* The arenas of the micro-batches the stage keeps in flight. */
static mg_status alloc_slots(run_state *s)
{
    const mg_train_opts *o = s->o;
    mg_comm *pp = mg_comm_group(s->comm, MG_COMM_PIPELINE);
    int64_t n = mg_sched_slots(mg_comm_size(pp), mg_comm_rank(pp), s->nmicro);
    mg_gpt_par par = mg_train_model_par(o, mg_comm_group(s->comm, MG_COMM_TENSOR));
    s->slots = mg_calloc((size_t)n, sizeof *s->slots);
    if (!s->slots) return MG_ERR_NOMEM;
    s->sched.slots = s->slots;
    s->sched.nslots = n;
    s->sched.sequence_parallel = o->sequence_parallel;
    for (int64_t i = 0; i < n; i++)
        MG_FORWARD(mg_gpt_acts_create_par(&s->slots[i], s->dg, &s->k, o->micro_batch_size,
                                          o->model.seq_length, &par));
    if (o->recompute_granularity != MG_RC_NONE) /* what --dry-run's arena line plans */
        NOTE(s, "activation arenas with recomputation: %lld x %lld bytes", (long long)n,
             (long long)mg_gpt_acts_bytes(s->slots[0]));
    return MG_OK;
}

/* The kernels' backend (--device) on this rank's GPU (LOCAL_RANK), with what it lacks yet. */
static mg_status open_device(run_state *s)
{
    const mg_train_opts *o = s->o;
    mg_comm_launch l;
    MG_FORWARD(mg_comm_launch_detect(&l));
    MG_FORWARD(mg_device_open(o, l.local_rank, &s->k, s->device, sizeof s->device));
    if (s->k.backend != MGK_CUDA) {
        MG_RETURN_IF(o->bf16 || o->fp16, MG_ERR_UNSUPPORTED, "not supported on CPU: %s",
                     o->bf16 ? "--bf16" : "--fp16");
        return MG_OK;
    }
    /* the collectives follow the kernels on the compute stream (comm.h) */
    mg_comm_set_stream(s->comm, mgk_stream_handle(&s->k));
    return MG_OK;
}

static mg_status setup(run_state *s)
{
    const mg_train_opts *o = s->o;
    MG_FORWARD(open_data(o, &s->data));
    mg_gpt_layout lay;
    MG_FORWARD(layout_of(o, s->comm, &lay));
    MG_FORWARD(open_device(s));
    int64_t stage = mg_comm_rank(mg_comm_group(s->comm, MG_COMM_PIPELINE));
    mg_gpt_opts go = {gelu_of(o), o->init_method_std, (uint64_t)o->seed,
                      o->mask_vocab_padding, mg_ddp_bucket_size(o, stage)};
    MG_FORWARD(mg_gpt_create(&s->g, &o->model, &lay, &go));
    mg_gpt_init_params(s->g);
    if (o->use_distributed_optimizer)
        MG_FORWARD(mg_dist_optim_create(&s->dopt, s->g, s->comm,
                                        o->local_spec ? MG_NAMES_LOCAL : MG_NAMES_TE,
                                        s->k.backend));
    else MG_FORWARD(mg_gpt_optim_create(&s->opt, s->g));
    MG_FORWARD(mg_grad_scaler_init(&s->scaler, o));
    MG_FORWARD(load_checkpoint(s));
    MG_FORWARD(mg_device_model(&s->dg, s->g, &s->k, o->bf16 || o->fp16));
    if (s->dopt && (o->bf16 || o->fp16)) MG_FORWARD(mg_dist_optim_use_params16(s->dopt));
    if (s->opt) MG_FORWARD(mg_device_optim(&s->dev_opt, s->opt, s->g, &s->k));
    if (o->overlap_grad_reduce)
        MG_FORWARD(mg_grad_buckets_create(&s->buckets, s->dg, s->comm,
                                          o->local_spec ? MG_NAMES_LOCAL : MG_NAMES_TE,
                                          o->sequence_parallel, s->dopt));
    s->sched.buckets = s->buckets;
    MG_FORWARD(alloc_batches(s));
    if (s->k.backend == MGK_CUDA)
        MG_FORWARD(mg_device_batches_create(&s->db, &s->k, s->nmicro, o->micro_batch_size,
                                            o->model.seq_length));
    return alloc_slots(s);
}

static void teardown(run_state *s)
{
    for (int64_t i = 0; s->mb && i < s->nmicro; i++) mg_train_batch_release(&s->mb[i]);
    free(s->mb);
    free(s->views);
    mg_train_log_free(s->log);
    for (int64_t i = 0; s->slots && i < s->sched.nslots; i++) mg_gpt_acts_free(s->slots[i]);
    free(s->slots);
    mg_device_batches_free(&s->db);
    if (s->dev_opt != s->opt) mg_gpt_optim_free(s->dev_opt);
    if (s->dg != s->g) mg_gpt_free(s->dg);
    if (s->comm) mg_comm_set_stream(s->comm, NULL); /* the stream goes with the context */
    mgk_ctx_free(&s->k);
    mg_gpt_optim_free(s->opt);
    mg_grad_buckets_free(s->buckets);
    mg_dist_optim_free(s->dopt);
    mg_gpt_free(s->g);
    mg_train_data_free(s->data);
}

/* Fills this data-parallel rank's nmicro micro-batches of the global batch of split k
 * starting at sample `first` (MegatronPretrainingSampler's slices). */
static mg_status fill(run_state *s, int k, uint64_t first)
{
    uint64_t mbs = (uint64_t)s->o->micro_batch_size;
    uint64_t dp = (uint64_t)s->o->data_parallel_size;
    uint64_t r = (uint64_t)mg_comm_rank(mg_comm_group(s->comm, MG_COMM_DATA));
    for (int64_t i = 0; i < s->nmicro; i++) {
        uint64_t at = first + (uint64_t)i * mbs * dp + r * mbs;
        MG_FORWARD(mg_train_batch_fill(&s->mb[i], s->data, k, at));
        s->views[i] = mg_train_batch_view(&s->mb[i], s->data);
    }
    if (s->k.backend != MGK_CUDA) return MG_OK;
    return mg_device_batches_upload(&s->db, &s->k, s->g, s->views);
}

/* The micro-batches as the kernels see them (device copies with --device cuda). */
static const mg_gpt_batch *micro_views(const run_state *s)
{
    return s->k.backend == MGK_CUDA ? s->db.views : s->views;
}

/* Megatron's evaluate(): eval_iters global batches, loss = masked token sum / count (on
 * the last stage, summed over the data-parallel group, then sent to every stage). */
static mg_status evaluate(run_state *s, int k, uint64_t *cursor, double *loss)
{
    double acc[2] = {0, 0}; /* masked token loss sum, token count */
    mg_comm *pp = mg_comm_group(s->comm, MG_COMM_PIPELINE);
    for (int64_t it = 0; it < s->o->eval_iters; it++) {
        MG_FORWARD(fill(s, k, *cursor));
        *cursor += (uint64_t)s->o->global_batch_size;
        MG_FORWARD(mg_sched_eval(s->dg, &s->k, s->comm, &s->sched, micro_views(s), s->nmicro,
                                 acc));
    }
    MG_FORWARD(mg_comm_allreduce_sum_f64(mg_comm_group(s->comm, MG_COMM_DATA), acc, 2));
    MG_FORWARD(mg_comm_broadcast(pp, acc, 2 * (int64_t)sizeof(double), mg_comm_size(pp) - 1));
    *loss = acc[1] > 0 ? acc[0] / acc[1] : NAN;
    return MG_OK;
}

static mg_status eval_split(run_state *s, int k, int64_t iteration, uint64_t *cursor)
{
    if (s->o->eval_iters <= 0 || mg_gpt_data_len(s->data->d, k) == 0) return MG_OK;
    double loss;
    MG_FORWARD(evaluate(s, k, cursor, &loss));
    if (!s->log_rank) return MG_OK;
    return mg_train_log_eval(s->log, iteration, k == MG_SPLIT_TEST ? "test" : "validation",
                             loss);
}

static void snapshot_counts(run_state *s, int64_t it)
{
    for (int g = 0; g < MG_COMM_NGROUPS; g++)
        for (int op = 0; op < MG_COMM_NOPS; op++)
            mg_comm_counts(mg_comm_group(s->comm, (mg_comm_kind)g), (mg_comm_op)op,
                           &s->step_calls[g][op], &s->step_bytes[g][op]);
    s->counted_iter = it;
}

/* What the comm layer counted in the last training step, in --dry-run's "total" form. */
static void note_measured(const run_state *s)
{
    if (!s->note_rank || !s->counted_iter || mg_comm_size(s->comm) == 1) return;
    mg_note("communication measured in iteration %lld on rank 0 (payload bytes):",
            (long long)s->counted_iter);
    for (int g = 0; g < MG_COMM_NGROUPS; g++)
        for (int op = 0; op < MG_COMM_NOPS; op++)
            if (s->step_calls[g][op])
                mg_note("  measured %s %s: %lld calls, %lld bytes",
                        mg_comm_kind_name((mg_comm_kind)g), mg_comm_op_name((mg_comm_op)op),
                        (long long)s->step_calls[g][op], (long long)s->step_bytes[g][op]);
}

static mg_status step(run_state *s, int64_t it, mg_step_result *res)
{
    const mg_train_opts *o = s->o;
    mg_step_hp hp;
    int64_t first = (it - 1) * o->global_batch_size;
    mg_step_hp_of(o, (double)(first - s->sched_behind), &hp);
    hp.loss_scale = s->scaler.scale;
    mg_comm_reset_counts(s->comm);
    MG_FORWARD(fill(s, MG_SPLIT_TRAIN, (uint64_t)first));
    if (s->dopt) {
        MG_FORWARD(mg_gpt_accumulate(s->dg, &s->sched, &s->k, s->comm, micro_views(s),
                                     s->nmicro, hp.loss_scale, &res->loss));
        MG_FORWARD(mg_dist_step(s->dopt, s->dg, &s->k, s->comm, &hp, res));
    } else {
        MG_FORWARD(mg_gpt_train_step_comm(s->dg, s->dev_opt, &s->sched, &s->k, s->comm,
                                          micro_views(s), s->nmicro, &hp, res));
    }
    /* MixedPrecisionOptimizer.step: the scaler sees found_inf; train_step steps the lr
     * scheduler after a successful update only */
    mg_grad_scaler_update(&s->scaler, res->skipped);
    if (res->skipped) s->sched_behind += o->global_batch_size;
    return MG_OK;
}

/* The device time of an iteration between two marks (CUDA events on the compute stream);
 * the first iteration of the run (start-up, allocation) is left out of the total. */
static mg_status device_time(run_state *s, int64_t it, mgk_mark *a, mgk_mark *b)
{
    double ms = 0;
    mg_status st = mgk_mark_elapsed(&s->k, a, b, &ms);
    if (st == MG_OK && it > s->start_iter + 1) {
        s->dev_ms += ms;
        s->dev_iters++;
    }
    return st;
}

/* Megatron's check_for_nan_in_loss_and_grad (pretrain_gpt.py loss_func: a NaN or an Inf
 * loss ends the run), which its validate_args turns off for --fp16 with dynamic loss scaling,
 * where a non-finite loss is the scaler's signal: that iteration is skipped, the scale
 * backs off and the log counts it as a nan iteration. */
static int nan_check(const run_state *s)
{
    return s->scaler.kind != MG_SCALER_DYNAMIC;
}

static mg_status one_iteration(run_state *s, int64_t it, mg_step_result *res, double *secs)
{
    double t0 = now_s();
    mgk_mark a, b;
    mg_status st = mgk_mark_record(&s->k, &a);
    if (st == MG_OK) st = step(s, it, res);
    if (st == MG_OK) st = mgk_mark_record(&s->k, &b);
    if (st == MG_OK) st = device_time(s, it, &a, &b);
    mgk_mark_free(&a);
    mgk_mark_free(&b);
    MG_FORWARD(st);
    *secs = now_s() - t0;
    snapshot_counts(s, it);
    MG_RETURN_IF(!isfinite(res->loss) && nan_check(s), MG_ERR_FORMAT,
                 "NaN/Inf loss at iteration %lld (lm loss %g, grad norm %g); stopping",
                 (long long)it, res->loss, res->grad_norm);
    return MG_OK;
}

static mg_status log_iteration(run_state *s, int64_t it, const mg_step_result *res, double secs)
{
    const mg_train_opts *o = s->o;
    if (!s->log_rank) return MG_OK;
    mg_log_iter li;
    memset(&li, 0, sizeof li);
    li.iteration = it;
    li.train_iters = o->train_iters;
    li.consumed_samples = it * o->global_batch_size;
    li.global_batch_size = o->global_batch_size;
    li.tokens = o->global_batch_size * o->model.seq_length;
    li.seconds = secs;
    /* per rank: the log's TFLOP/s and MFU are per GPU */
    li.flops = mg_flops_per_batch(&o->model, o->global_batch_size) /
               (double)mg_comm_size(s->comm);
    li.lr = mg_lr_at(&o->sched, (double)(li.consumed_samples - s->sched_behind));
    li.loss_scale = s->scaler.scale;
    li.loss = res->loss;
    li.grad_norm = res->grad_norm;
    li.skipped = res->skipped;
    return mg_train_log_iter(s->log, &li);
}

/* --exit-signal-handler: whether any rank got a signal (Megatron's DistributedSignalHandler
 * gathers every rank's flag after each iteration); *sig: the lowest such rank's signal. */
static mg_status signalled(run_state *s, int *sig)
{
    int64_t n = mg_comm_size(s->comm), me = mg_comm_rank(s->comm);
    double *flags = mg_calloc((size_t)n, sizeof *flags);
    if (!flags) return MG_ERR_NOMEM;
    flags[me] = (double)stop_signal;
    mg_status st = mg_comm_allreduce_sum_f64(s->comm, flags, n);
    *sig = 0;
    for (int64_t r = n - 1; st == MG_OK && r >= 0; r--)
        if (flags[r] != 0) *sig = (int)flags[r];
    free(flags);
    return st;
}

/* Whether to stop after iteration it (and why, on stderr). The duration is rank 0's clock,
 * shared with the others, so that every rank stops at the same iteration. */
static mg_status should_stop(run_state *s, int64_t it, double t_start, int *stop)
{
    const mg_train_opts *o = s->o;
    *stop = 1;
    int sig = 0;
    if (o->exit_signal_handler) MG_FORWARD(signalled(s, &sig));
    if (sig) {
        NOTE(s, "exiting program after receiving signal %d at iteration %lld", sig,
             (long long)it);
        return MG_OK;
    }
    if (o->exit_duration_in_mins > 0) {
        double minutes = (now_s() - t_start) / 60.0;
        MG_FORWARD(mg_comm_broadcast(s->comm, &minutes, sizeof minutes, 0));
        if (minutes > (double)o->exit_duration_in_mins) {
            NOTE(s, "exiting program after %lld minutes at iteration %lld",
                 (long long)o->exit_duration_in_mins, (long long)it);
            return MG_OK;
        }
    }
    if (o->exit_interval > 0 && it % o->exit_interval == 0) {
        NOTE(s, "exiting program at iteration %lld", (long long)it);
        return MG_OK;
    }
    *stop = 0;
    return MG_OK;
}

static mg_status train(run_state *s, double t_start)
{
    const mg_train_opts *o = s->o;
    int64_t it = s->start_iter;
    uint64_t test_cursor = 0;
    while (it < o->train_iters) {
        mg_step_result res;
        double secs;
        it++;
        MG_FORWARD(one_iteration(s, it, &res, &secs));
        MG_FORWARD(log_iteration(s, it, &res, secs));
        s->flops_so_far += mg_flops_per_batch(&o->model, o->global_batch_size);
        if (o->eval_interval > 0 && it % o->eval_interval == 0)
            MG_FORWARD(eval_split(s, MG_SPLIT_VALID, it, &s->valid_cursor));
        if (o->save_interval > 0 && it % o->save_interval == 0)
            MG_FORWARD(save_checkpoint(s, it));
        int stop;
        MG_FORWARD(should_stop(s, it, t_start, &stop));
        if (stop) return save_checkpoint(s, it);
    }
    MG_FORWARD(save_checkpoint(s, it));
    /* pretrain(): do_valid / do_test after training (also when the last in-loop
     * evaluation was at this iteration, as Megatron) */
    MG_FORWARD(eval_split(s, MG_SPLIT_VALID, it, &s->valid_cursor));
    return eval_split(s, MG_SPLIT_TEST, it, &test_cursor);
}

/* What MFU is measured against: the CPU's sgemm rate measured here, or the GPU's datasheet
 * peak by its name (device.h; 0 = unknown). desc describes it for the start-up note. */
static double peak_flops(const run_state *s, char *desc, size_t n)
{
    if (s->o->peak_tflops > 0) {
        double peak = s->o->peak_tflops * 1e12;
        snprintf(desc, n, "--peak-tflops peak %.1f GFLOP/s", peak / 1e9);
        return peak;
    }
    if (s->k.backend != MGK_CUDA) {
        double peak = mg_measure_gemm_peak(&s->k, 0.3);
        snprintf(desc, n, "gemm peak %.1f GFLOP/s (%s, %d threads)", peak / 1e9,
                 mgk_gemm_impl(), s->k.nthreads);
        return peak;
    }
    char name[128];
    mgk_cuda_name(name, sizeof name);
    const char *prec = s->o->bf16 ? "bf16" : s->o->fp16 ? "fp16" : "fp32";
    double peak = mg_device_peak_flops(name, s->o->bf16 || s->o->fp16);
    if (peak > 0) snprintf(desc, n, "%s peak %.1f TFLOP/s (datasheet)", prec, peak / 1e12);
    else snprintf(desc, n, "%s peak unknown (no datasheet entry for this device: MFU unknown)",
                  prec);
    return peak;
}

#define MIB (1024.0 * 1024.0)

/* What the device groups took (kernels.h mgk_device_allocated) against the --dry-run plan. */
static mg_status note_device_memory(const run_state *s)
{
    mg_device_plan p;
    mg_train_ckpt_shard sh = shard_of(s->comm);
    MG_FORWARD(mg_device_plan_of(s->o, sh.tp_rank, sh.pp_rank, &p));
    NOTE(s, "device memory: %lld bytes (%.2f MiB) allocated by the groups, planned %lld; "
         "kernel workspaces %.2f MiB", (long long)mgk_device_allocated(),
         (double)mgk_device_allocated() / MIB, (long long)p.allocated, p.workspaces / MIB);
    return MG_OK;
}

static mg_status run(run_state *s, FILE *out)
{
    const mg_train_opts *o = s->o;
    double t_start = now_s();
    NOTE(s, "building datasets and the model");
    MG_FORWARD(setup(s));
    if (s->k.backend == MGK_CUDA) MG_FORWARD(note_device_memory(s));
    char peak_desc[160];
    double peak = peak_flops(s, peak_desc, sizeof peak_desc);
    NOTE(s, "model: %lld parameters, %lld micro-batches of %lld x %lld tokens per iteration "
         "per rank; %lld ranks (TP %lld, PP %lld, DP %lld, %s); device %s; %s",
         (long long)s->g->nparams, (long long)s->nmicro, (long long)o->micro_batch_size,
         (long long)o->model.seq_length, (long long)mg_comm_size(s->comm),
         (long long)o->model.tp, (long long)o->model.pp, (long long)o->data_parallel_size,
         mg_comm_backend_name(s->comm), s->device, peak_desc);
    MG_FORWARD(mg_train_log_create(&s->log, out, o->log_file, o->log_interval, peak));
    if (o->tensorboard_dir && s->log_rank) /* Megatron's writer: the last rank */
        MG_FORWARD(mg_train_log_tensorboard(s->log, o->tensorboard_dir,
                                            o->tensorboard_log_interval,
                                            o->tensorboard_loss_scale));
    if (o->exit_signal_handler) install_handlers();
    MG_FORWARD(train(s, t_start));
    /* the last rank's log lines (the final validation) before rank 0's closing notes */
    if (s->log_rank) fflush(out);
    MG_FORWARD(mg_comm_barrier(s->comm));
    note_measured(s);
    if (s->k.backend == MGK_CUDA && s->dev_iters > 0)
        NOTE(s, "device time per iteration (CUDA events, %lld iterations after the first): "
             "%.1f ms", (long long)s->dev_iters, s->dev_ms / (double)s->dev_iters);
    NOTE(s, "done");
    return MG_OK;
}

mg_status mg_train_run(const mg_train_opts *o, mg_comm *comm, FILE *out)
{
    run_state s;
    memset(&s, 0, sizeof s);
    s.o = o;
    s.comm = comm;
    s.note_rank = mg_comm_rank(comm) == 0;
    s.log_rank = mg_comm_rank(comm) == mg_comm_size(comm) - 1;
    mg_status st = run(&s, out);
    teardown(&s);
    return st;
}

static void print_i32(FILE *out, const char *key, const int32_t *v, int64_t n)
{
    fprintf(out, ", \"%s\": [", key);
    for (int64_t i = 0; i < n; i++) fprintf(out, i ? ", %d" : "%d", v[i]);
    fputc(']', out);
}

static void print_row(FILE *out, const mg_train_batch *b, int64_t i)
{
    int64_t T = b->T;
    fprintf(out, "{\"sample\": %lld, \"dataset\": %d", (long long)i, b->dataset_id[0]);
    print_i32(out, "tokens", b->ids, T);
    print_i32(out, "labels", b->targets, T);
    fprintf(out, ", \"loss_mask\": [");
    for (int64_t j = 0; j < T; j++) fprintf(out, j ? ", %d" : "%d", (int)b->loss_mask[j]);
    fputc(']', out);
    print_i32(out, "position_ids", b->pos, T);
    print_i32(out, "segments", b->seg, T);
    fputs("}\n", out);
}

mg_status mg_train_dump_samples(const mg_train_opts *o, FILE *out)
{
    mg_train_data *d = NULL;
    MG_FORWARD(open_data(o, &d));
    mg_train_batch b;
    mg_status st = mg_train_batch_alloc(&b, 1, o->model.seq_length);
    uint64_t len = mg_gpt_data_len(d->d, MG_SPLIT_TRAIN);
    if (st == MG_OK && (uint64_t)o->dump_samples > len)
        st = mg_error_set(MG_ERR_ARG, "--dump-samples %lld: the train split has %llu samples",
                          (long long)o->dump_samples, (unsigned long long)len);
    for (int64_t i = 0; st == MG_OK && i < o->dump_samples; i++) {
        st = mg_train_batch_fill(&b, d, MG_SPLIT_TRAIN, (uint64_t)i);
        if (st == MG_OK) print_row(out, &b, i);
    }
    if (st == MG_OK && fflush(out) != 0) st = mg_error_errno(errno, "cannot write the samples");
    mg_train_batch_release(&b);
    mg_train_data_free(d);
    return st;
}

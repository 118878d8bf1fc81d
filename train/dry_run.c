/* dry_run.c — the --dry-run report (dry_run.h). */
#include "dry_run.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>

#include "acts_plan.h"
#include "comm_plan.h"
#include "device.h"
#include "device_plan.h"
#include "flops.h"
#include "memory_plan.h"

#define LL(x) ((long long)(x))
#define MIB (1024.0 * 1024.0)

static void print_model(FILE *f, const mg_model_desc *m)
{
    fprintf(f, "model: %s-style, %lld layers, hidden %lld, ffn %lld, %lld heads "
               "(%lld query groups, kv channels %lld), %s, %s, %s, %s embeddings, %s\n",
            mg_arch_name(m->arch), LL(m->num_layers), LL(m->hidden_size),
            LL(m->ffn_hidden_size), LL(m->num_attention_heads), LL(m->num_query_groups),
            LL(m->kv_channels), m->rmsnorm ? "RMSNorm" : "LayerNorm",
            m->swiglu ? "SwiGLU" : "GeLU", m->learned_positions ? "learned positions" : "RoPE",
            m->tied_embeddings ? "tied" : "untied",
            m->add_bias_linear ? "linear biases" : m->add_qkv_bias ? "QKV bias only" : "no biases");
    fprintf(f, "vocabulary: %lld padded to %lld (multiple of %lld x TP %lld)\n",
            LL(m->vocab_size), LL(m->padded_vocab_size), LL(m->make_vocab_size_divisible_by),
            LL(m->tp));
}

static void print_batch(FILE *f, const mg_train_opts *o)
{
    int64_t nmb = o->global_batch_size / (o->micro_batch_size * o->data_parallel_size);
    fprintf(f, "batch: sequence %lld, micro batch %lld, global batch %lld (%lld micro-batches "
               "x DP %lld), %lld tokens per iteration, %lld iterations\n",
            LL(o->model.seq_length), LL(o->micro_batch_size), LL(o->global_batch_size),
            LL(nmb), LL(o->data_parallel_size), LL(o->global_batch_size * o->model.seq_length),
            LL(o->train_iters));
}

static void print_params(FILE *f, const mg_model_desc *m)
{
    mg_param_counts c;
    mg_param_count(m, &c);
    fprintf(f, "parameters: %lld (word embeddings %lld, position embeddings %lld, %lld layers x "
               "%lld, final norm %lld, output layer %lld)\n",
            LL(c.total), LL(c.embedding), LL(c.position), LL(m->num_layers), LL(c.per_layer),
            LL(c.final_norm), LL(c.output));
}

static void print_memory(FILE *f, const mg_train_opts *o)
{
    mg_mem_setup s = {0};
    s.micro_batch_size = o->micro_batch_size;
    s.data_parallel_size = o->data_parallel_size;
    s.distributed_optimizer = o->use_distributed_optimizer;
    s.num_microbatches = o->global_batch_size / (o->micro_batch_size * o->data_parallel_size);
    s.sequence_parallel_selective = o->sequence_parallel &&
                                    o->recompute_granularity == MG_RC_SELECTIVE;
    int mixed = o->bf16 || o->fp16;
    mg_mem_plan p;
    mg_memory_plan(&o->model, &s, mixed ? MG_PREC_MIXED : MG_PREC_FP32, &p);
    fprintf(f, "parameters on the most loaded rank: %lld\n", LL(p.params));
    fprintf(f, "memory per rank (%s): weights %.2f MiB, gradients %.2f MiB, optimizer %.2f MiB "
               "(%s), activations %.2f MiB, total %.2f MiB\n",
            mixed ? (o->bf16 ? "bf16 mixed precision" : "fp16 mixed precision") : "fp32",
            p.weights / MIB, p.gradients / MIB, p.optimizer / MIB,
            mixed ? "fp32 master weights, Adam m and v" : "Adam m and v", p.activations / MIB,
            p.total / MIB);
    double wo = mg_megatron_weight_optimizer_bytes(&o->model, &s) / MIB;
    double act = mg_megatron_activation_bytes(&o->model, &s) / MIB;
    fprintf(f, "Megatron (theoretical_memory_usage.py, mixed precision): Theoretical memory "
               "footprints: weight and optimizer=%.2f MB, activation=%.2f MB, total=%.2f MB\n",
            wo, act, wo + act);
}

static const char *recompute_name(const mg_train_opts *o)
{
    if (o->recompute_granularity == MG_RC_SELECTIVE)
        return "selective recomputation (the core attention's saved state for one layer)";
    return o->recompute_method == MG_RC_BLOCK ? "full recomputation, block" :
                                                "full recomputation, uniform";
}

/* With recomputation on the CPU: the activation arenas of the most loaded stage, as the run
 * allocates them (acts_plan.h), with and without it. */
static mg_status print_arenas(FILE *f, const mg_train_opts *o)
{
    if (o->recompute_granularity == MG_RC_NONE || !mg_device_is_cpu(o)) return MG_OK;
    mg_acts_stage_plan best = {0}, with, without, best_without = {0};
    int64_t stage = 0;
    for (int64_t st = 0; st < o->model.pp; st++) {
        MG_FORWARD(mg_train_acts_plan(o, MGK_CPU_FAST, st, 1, &with));
        MG_FORWARD(mg_train_acts_plan(o, MGK_CPU_FAST, st, 0, &without));
        if (with.nslots * with.arena <= best.nslots * best.arena) continue;
        best = with;
        best_without = without;
        stage = st;
    }
    fprintf(f, "activation arenas per rank (CPU, fp32, as allocated), %s", recompute_name(o));
    if (o->recompute_granularity == MG_RC_FULL)
        fprintf(f, " %lld", LL(o->recompute_num_layers));
    fprintf(f, ": stage %lld (%lld layers): %lld x %lld bytes = %.2f MiB; without "
               "recomputation %lld x %lld bytes = %.2f MiB\n",
            LL(stage), LL(best.layers), LL(best.nslots), LL(best.arena),
            best.nslots * best.arena / MIB, LL(best_without.nslots), LL(best_without.arena),
            best_without.nslots * best_without.arena / MIB);
    return MG_OK;
}

static void print_flops(FILE *f, const mg_train_opts *o)
{
    double fl = mg_flops_per_batch(&o->model, o->global_batch_size);
    double tokens = (double)(o->global_batch_size * o->model.seq_length);
    fprintf(f, "FLOPs per iteration: %.0f (%.4e; %.4e per token; Megatron's "
               "num_floating_point_operations, see --help)\n", fl, fl, fl / tokens);
}

/* The step's communication (comm_plan.h): each purpose, then the totals per group and
 * operation in the form mg-train's measured line takes. */
static mg_status print_comm(FILE *f, const mg_train_opts *o)
{
    mg_comm_plan p;
    MG_FORWARD(mg_comm_plan_step(o, &p));
    fprintf(f, "communication per iteration on rank 0 (payload bytes, as the comm layer "
               "counts them):%s\n", p.n ? "" : " none (one rank)");
    int64_t calls[MG_COMM_NGROUPS][MG_COMM_NOPS] = {{0}}, bytes[MG_COMM_NGROUPS][MG_COMM_NOPS] = {{0}};
    for (int i = 0; i < p.n; i++) {
        const mg_comm_plan_row *r = &p.rows[i];
        fprintf(f, "  %s %s: %lld x %lld bytes = %lld bytes, %s%s\n",
                mg_comm_kind_name(r->group), mg_comm_op_name(r->op), LL(r->calls),
                LL(r->bytes), LL(r->calls * r->bytes), r->what,
                r->exact ? "" : " (textbook volume)");
        calls[r->group][r->op] += r->calls;
        bytes[r->group][r->op] += r->calls * r->bytes;
    }
    for (int g = 0; g < MG_COMM_NGROUPS; g++)
        for (int op = 0; op < MG_COMM_NOPS; op++)
            if (calls[g][op])
                fprintf(f, "  total %s %s: %lld calls, %lld bytes\n",
                        mg_comm_kind_name((mg_comm_kind)g), mg_comm_op_name((mg_comm_op)op),
                        LL(calls[g][op]), LL(bytes[g][op]));
    return MG_OK;
}

static void print_device_stage(FILE *f, const mg_train_opts *o, const mg_device_plan *p,
                               int64_t stage)
{
    char where[64] = "", dist[96] = "";
    if (p->dist_buffers)
        snprintf(dist, sizeof dist, " (the data-parallel shard) + distributed optimizer buffers "
                 "%.2f MiB", p->dist_buffers / MIB);
    if (p->bucket_buffer)
        snprintf(dist, sizeof dist, ", gradient buckets' staging buffer %.2f MiB",
                 p->bucket_buffer / MIB);
    if (o->model.pp > 1)
        snprintf(where, sizeof where, ", pipeline stage %lld of %lld", LL(stage), LL(o->model.pp));
    fprintf(f, "device memory per rank (--device cuda, %s)%s: parameters %.2f MiB, gradients "
               "%.2f MiB, %s weights %.2f MiB, Adam moments %.2f MiB%s, activations %.2f MiB "
               "(%lld x %.2f MiB), inputs %.2f MiB, kernel workspaces %.2f MiB; total %.2f MiB "
               "(the CUDA runtime's own context not counted)\n",
            o->bf16 ? "bf16" : o->fp16 ? "fp16" : "fp32", where, p->params / MIB,
            p->grads / MIB, o->fp16 ? "fp16" : "bf16", p->params16 / MIB, p->moments / MIB, dist,
            p->nslots * p->arena / MIB, LL(p->nslots), p->arena / MIB, p->inputs / MIB, p->workspaces / MIB, p->total / MIB);
}

/* --device cuda, or auto with a GPU: what each process allocates on its GPU (device_plan.h;
 * the tensor- and data-parallel ranks of a stage the same), the largest checked against the
 * device's memory when one is visible. */
static mg_status print_device(FILE *f, const mg_train_opts *o)
{
    if (mg_device_is_cpu(o)) return MG_OK;
    int64_t most = 0;
    for (int64_t stage = 0; stage < o->model.pp; stage++) {
        mg_device_plan p;
        mg_status st = mg_device_plan_of(o, 0, stage, &p);
        if (st == MG_ERR_UNSUPPORTED) {
            fprintf(f, "device memory per rank: no plan: %s\n", mg_last_error());
            return MG_OK;
        }
        MG_FORWARD(st);
        print_device_stage(f, o, &p, stage);
        if (p.total > most) most = p.total;
    }
    if (mgk_cuda_devices() < 1) return MG_OK;
    MG_FORWARD(mgk_cuda_select(0));
    char name[128];
    mgk_cuda_name(name, sizeof name);
    double have = (double)mgk_cuda_memory();
    fprintf(f, "device %s: %.2f MiB: the plan %s\n", name, have / MIB,
            most <= have ? "fits" : "does not fit");
    MG_RETURN_IF(most > have, MG_ERR_NOMEM, "--dry-run: the plan needs %.2f MiB of device "
                 "memory on a rank, %s has %.2f MiB", most / MIB, name, have / MIB);
    return MG_OK;
}

mg_status mg_train_dry_run_report(const mg_train_opts *o, char **text)
{
    size_t len = 0;
    *text = NULL;
    FILE *f = open_memstream(text, &len);
    if (!f) return mg_error_errno(errno, "open_memstream");
    fprintf(f, "mg-train --dry-run: a plan for TP %lld x PP %lld x DP %lld; nothing is "
               "allocated\n", LL(o->model.tp), LL(o->model.pp), LL(o->data_parallel_size));
    print_model(f, &o->model);
    print_batch(f, o);
    print_params(f, &o->model);
    print_memory(f, o);
    print_flops(f, o);
    mg_status st = print_arenas(f, o);
    if (st == MG_OK) st = print_device(f, o);
    if (st == MG_OK) st = print_comm(f, o);
    if (fclose(f) != 0 || st != MG_OK) {
        free(*text);
        *text = NULL;
        return st != MG_OK ? st
                           : mg_error_set(MG_ERR_NOMEM, "out of memory writing the --dry-run "
                                          "report");
    }
    return MG_OK;
}

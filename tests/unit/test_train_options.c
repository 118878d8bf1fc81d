/* test_train_options.c — train/options.h: Megatron's flags, defaults and validate_args()
 * derivations (ffn 4h / SwiGLU rounding, kv_channels, query groups, global batch size,
 * train_iters from samples, the schedule in samples, padded vocabulary), and the usage
 * errors / unsupported settings with their messages. Also the plan modules on the parsed
 * model (exact parameter count of GPT-2 124M, Megatron's FLOPs of it). */
#include <stdlib.h>
#include <string.h>

#include "flops.h"
#include "harness.h"
#include "memory_plan.h"
#include "options.h"
#include "train_cmdline.h"

#define BASE "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 " \
             "--max-position-embeddings 32 --micro-batch-size 2 --train-iters 10 --lr 1e-3 "

/* Splits a space-separated command line (no quoting) and parses it. */
static mg_status parse(mg_train_opts *o, const char *cmd)
{
    return train_cmdline_parse(o, cmd);
}

MG_TEST(train_options_defaults)
{
    mg_train_opts o;
    MG_CHECK_OK(t, parse(&o, BASE "--vocab-size 1000"));
    MG_CHECK_EQ_INT(t, o.model.ffn_hidden_size, 256);
    MG_CHECK_EQ_INT(t, o.model.kv_channels, 16);
    MG_CHECK_EQ_INT(t, o.model.num_query_groups, 4);
    MG_CHECK_EQ_INT(t, o.global_batch_size, 2);
    MG_CHECK(t, o.model.learned_positions && o.model.tied_embeddings && o.model.add_bias_linear);
    MG_CHECK(t, !o.model.rmsnorm && !o.model.swiglu && o.model.arch == MG_ARCH_GPT2);
    MG_CHECK(t, o.weight_decay == 0.01 && o.adam_beta2 == 0.999 && o.clip_grad == 1.0);
    MG_CHECK_EQ_INT(t, o.seed, 1234);
    MG_CHECK_EQ_INT(t, o.log_interval, 100);
    MG_CHECK_EQ_INT(t, o.eval_iters, 100);
    MG_CHECK(t, o.lr_decay_style == MG_LR_LINEAR && o.sched.decay_steps == 20);
    MG_CHECK(t, o.sched.start_wd == 0.01 && o.sched.end_wd == 0.01);
    MG_CHECK_OK(t, mg_train_resolve_vocab(&o));
    MG_CHECK_EQ_INT(t, o.model.padded_vocab_size, 1024);
    mg_train_opts_free(&o);
}

MG_TEST(train_options_llama)
{
    mg_train_opts o;
    MG_CHECK_OK(t, parse(&o, "--num-layers 2 --hidden-size 4096 --num-attention-heads 32 "
                             "--group-query-attention --num-query-groups 8 --swiglu "
                             "--normalization RMSNorm --position-embedding-type rope "
                             "--rotary-base 500000 --untie-embeddings-and-output-weights "
                             "--disable-bias-linear --seq-length 64 --max-position-embeddings 64 "
                             "--micro-batch-size 1 --global-batch-size 4 --train-samples 50 "
                             "--lr 3e-4 --lr-warmup-fraction 0.1 --vocab-size 128256 "
                             "--make-vocab-size-divisible-by 128 --tensor-model-parallel-size 2"));
    MG_CHECK_EQ_INT(t, o.model.ffn_hidden_size, 10880); /* int(4*4096*2/3/64)*64 */
    MG_CHECK_EQ_INT(t, o.model.num_query_groups, 8);
    MG_CHECK(t, o.model.arch == MG_ARCH_LLAMA && o.model.rmsnorm && !o.model.learned_positions);
    MG_CHECK(t, o.model.rotary_base == 500000.0 && !o.model.tied_embeddings);
    MG_CHECK_EQ_INT(t, o.train_iters, 12); /* 50 // 4 */
    MG_CHECK(t, o.sched.decay_steps == 50 && o.sched.warmup_steps == 0.1 * 50);
    MG_CHECK_OK(t, mg_train_resolve_vocab(&o));
    MG_CHECK_EQ_INT(t, o.model.padded_vocab_size, 128256); /* already a multiple of 256 */
    mg_train_opts_free(&o);
}

MG_TEST(train_options_schedule_in_samples)
{
    mg_train_opts o;
    MG_CHECK_OK(t, parse(&o, BASE "--global-batch-size 8 --lr-warmup-iters 3 --lr-decay-iters 7 "
                             "--lr-decay-style WSD --lr-wsd-decay-iters 2 --lr-wsd-decay-style "
                             "cosine --weight-decay-incr-style linear --start-weight-decay 0 "
                             "--end-weight-decay 0.1 --vocab-size 50"));
    MG_CHECK(t, o.sched.warmup_steps == 24 && o.sched.decay_steps == 56);
    MG_CHECK(t, o.sched.wsd_decay_steps == 16 && o.sched.wd_incr_steps == 80);
    MG_CHECK(t, o.sched.style == MG_LR_WSD && o.sched.wsd_style == MG_WSD_COSINE);
    MG_CHECK(t, o.sched.start_wd == 0 && o.sched.end_wd == 0.1);
    mg_train_opts_free(&o);
}

MG_TEST(train_options_flag_forms)
{
    mg_train_opts o;
    MG_CHECK_OK(t, parse(&o, BASE "--lr=2e-3 --seed=7 --data-path 0.3 a 0.7 b --eod-mask-loss "
                             "--save ck --save-interval 5 --lr 5e-4 --vocab-size 10"));
    MG_CHECK(t, o.lr == 5e-4); /* the last occurrence wins */
    MG_CHECK_EQ_INT(t, o.seed, 7);
    MG_CHECK_EQ_INT(t, o.n_data_path, 4);
    MG_CHECK_EQ_STR(t, o.data_path[3], "b");
    MG_CHECK_EQ_STR(t, o.split, "969, 30, 1");
    MG_CHECK(t, o.eod_mask_loss && o.save_interval == 5);
    mg_train_opts_free(&o);
    MG_CHECK_OK(t, parse(&o, BASE "--vocab-size 10 --help"));
    MG_CHECK(t, o.help);
    mg_train_opts_free(&o);
}

static void expect(mg_test_ctx *t, const char *cmd, mg_status st, const char *msg)
{
    mg_train_opts o;
    mg_status got = parse(&o, cmd);
    if (got != st || !strstr(mg_last_error(), msg))
        mg_test_fail(t, __FILE__, __LINE__, "'%s': expected %d \"%s\", got %d \"%s\"", cmd,
                     (int)st, msg, (int)got, mg_last_error());
    mg_train_opts_free(&o);
}

MG_TEST(train_options_errors)
{
    expect(t, BASE "--bogus", MG_ERR_ARG, "unrecognized arguments: --bogus");
    expect(t, BASE "--num-lay 3", MG_ERR_ARG, "unrecognized arguments: --num-lay");
    expect(t, BASE "--num-layers x", MG_ERR_ARG, "argument --num-layers: invalid value 'x'");
    expect(t, BASE "--lr abc", MG_ERR_ARG, "invalid float value: 'abc'");
    expect(t, BASE "--normalization rms", MG_ERR_ARG, "invalid choice: 'rms'");
    expect(t, BASE "--rotary-base 1e4", MG_ERR_ARG, "--rotary-base: invalid value");
    expect(t, BASE "--swiglu=1", MG_ERR_ARG, "ignored explicit argument");
    expect(t, BASE "--seed", MG_ERR_ARG, "--seed: expected one argument");
    expect(t, "--hidden-size 64 --num-attention-heads 4", MG_ERR_ARG, "required: --num-layers");
    expect(t, BASE "--global-batch-size 5", MG_ERR_ARG, "is not divisible by micro batch size");
    expect(t, BASE "--max-position-embeddings 16", MG_ERR_ARG, "greater than or equal to seq_length");
    expect(t, BASE "--num-attention-heads 5", MG_ERR_ARG, "not a multiple of --num-attention-heads");
    expect(t, BASE "--group-query-attention --num-query-groups 3", MG_ERR_ARG, "--num-query-groups 3");
    expect(t, BASE "--train-samples 5", MG_ERR_ARG, "cannot be used together");
    expect(t, BASE "--lr-warmup-fraction 0.1 --lr-warmup-iters 2", MG_ERR_ARG, "only specify one");
    expect(t, BASE "--lr-warmup-samples 4", MG_ERR_ARG, "sample-based training");
    expect(t, BASE "--lr-warmup-iters 10", MG_ERR_ARG,
           "the warmup, --lr-warmup-iters 10, must be shorter than the decay, --train-iters 10 "
           "(in iterations)");
    expect(t, BASE "--min-lr 1", MG_ERR_ARG, "--min-lr (1) must be <= --lr");
    expect(t, BASE "--lr-decay-style WSD", MG_ERR_ARG, "--lr-wsd-decay-iters");
    expect(t, BASE "--start-weight-decay 0.1", MG_ERR_ARG, "--weight-decay-incr-style linear");
    expect(t, BASE "--weight-decay-incr-style cosine", MG_ERR_ARG, "--start-weight-decay and");
    expect(t, BASE "--bf16 --fp16", MG_ERR_ARG, "cannot be used together");
    expect(t, BASE "--mock-data --data-path x", MG_ERR_ARG, "a single data source");
    expect(t, BASE "--tensor-model-parallel-size 3", MG_ERR_ARG, "multiples of --tensor-model");
    expect(t, BASE "--position-embedding-type none", MG_ERR_UNSUPPORTED, "not supported yet: "
           "--position-embedding-type none");
    expect(t, BASE "--hidden-dropout 0.1", MG_ERR_UNSUPPORTED, "not supported yet: dropout");
    expect(t, BASE "--recompute-granularity selective --recompute-method block", MG_ERR_ARG,
           "recompute method is not yet supported for selective recomputing granularity");
    expect(t, BASE "--recompute-activations --recompute-num-layers 1", MG_ERR_ARG,
           "When using recompute_granularity: selective recompute_num_layers must be None.");
    expect(t, BASE "--recompute-granularity full --recompute-num-layers 1", MG_ERR_ARG,
           "Using recompute_granularity: full so recompute_method must be \"block\" or "
           "\"uniform\"");
    expect(t, BASE "--recompute-granularity full --recompute-method uniform", MG_ERR_ARG,
           "recompute_num_layers must be between 1 and num_layers_per_pipeline_rank: 2 "
           "(--recompute-num-layers 0)");
    expect(t, BASE "--recompute-granularity full --recompute-method block "
           "--recompute-num-layers 3", MG_ERR_ARG,
           "recompute_num_layers must be between 1 and num_layers_per_pipeline_rank: 2 "
           "(--recompute-num-layers 3)");
    expect(t, BASE "--overlap-param-gather --overlap-grad-reduce", MG_ERR_ARG,
           "--overlap-param-gather only supported with distributed optimizer");
    expect(t, BASE "--overlap-param-gather --use-distributed-optimizer", MG_ERR_ARG,
           "Must use --overlap-param-gather with --overlap-grad-reduce");
    expect(t, BASE "--recompute-granularity partial", MG_ERR_ARG, "invalid choice: 'partial'");
    expect(t, BASE "--recompute-method chunked", MG_ERR_ARG, "invalid choice: 'chunked'");
    expect(t, BASE "--device tpu", MG_ERR_ARG, "invalid choice: 'tpu'");
    expect(t, "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 "
              "--max-position-embeddings 32 --micro-batch-size 2 --lr 1e-3", MG_ERR_ARG,
           "either --train-iters or --train-samples");
    expect(t, "--num-layers 2 --hidden-size 64 --num-attention-heads 4 --seq-length 32 "
              "--max-position-embeddings 32 --micro-batch-size 2 --train-iters 3", MG_ERR_ARG,
           "required: --lr");
}

/* Megatron's layer placement, uneven stages and sequence parallelism's conditions. */
MG_TEST(train_options_parallel)
{
    expect(t, BASE "--pipeline-model-parallel-size 4", MG_ERR_ARG,
           "2 layers cannot be split evenly over 4 pipeline stages");
    expect(t, BASE "--decoder-first-pipeline-num-layers 1", MG_ERR_ARG,
           "need --pipeline-model-parallel-size > 1");
    expect(t, BASE "--num-layers 6 --pipeline-model-parallel-size 4 "
              "--decoder-first-pipeline-num-layers 1", MG_ERR_ARG,
           "6 layers cannot be placed on 4 pipeline stages with 1 first and 0 last");
    mg_train_opts o;
    MG_CHECK_OK(t, parse(&o, BASE "--tensor-model-parallel-size 2 --save d --save-interval 1 "
                             "--ckpt-format torch_dist")); /* every shard writes its chunks */
    mg_train_opts_free(&o);
    expect(t, BASE "--tensor-model-parallel-size 2 --sequence-parallel --seq-length 31 "
              "--max-position-embeddings 32", MG_ERR_ARG, "--seq-length 31 is not a multiple");
    MG_CHECK_OK(t, parse(&o, BASE "--num-layers 6 --pipeline-model-parallel-size 4 "
                             "--decoder-first-pipeline-num-layers 1 "
                             "--decoder-last-pipeline-num-layers 1 --sequence-parallel"));
    MG_CHECK(t, o.model.pp_first == 1 && o.model.pp_last == 1 && !o.sequence_parallel);
    mg_train_opts_free(&o);
    MG_CHECK_OK(t, parse(&o, BASE "--tensor-model-parallel-size 2 --sequence-parallel"));
    MG_CHECK(t, o.sequence_parallel);
    mg_train_opts_free(&o);
}

MG_TEST(train_options_recompute)
{
    mg_train_opts o;
    MG_CHECK_OK(t, parse(&o, BASE "--recompute-activations"));
    MG_CHECK(t, o.recompute_granularity == MG_RC_SELECTIVE);
    mg_train_opts_free(&o);
    MG_CHECK_OK(t, parse(&o, BASE "--num-layers 8 --pipeline-model-parallel-size 2 "
                             "--recompute-granularity full --recompute-method block "
                             "--recompute-num-layers 4"));
    MG_CHECK(t, o.recompute_granularity == MG_RC_FULL && o.recompute_method == MG_RC_BLOCK &&
                    o.recompute_num_layers == 4);
    mg_train_opts_free(&o);
    /* without a granularity, Megatron ignores the method and the count */
    MG_CHECK_OK(t, parse(&o, BASE "--recompute-method uniform --recompute-num-layers 9"));
    MG_CHECK(t, o.recompute_granularity == MG_RC_NONE);
    mg_train_opts_free(&o);
    expect(t, BASE "--num-layers 8 --pipeline-model-parallel-size 2 --recompute-granularity "
              "full --recompute-method uniform --recompute-num-layers 5", MG_ERR_ARG,
           "num_layers_per_pipeline_rank: 4 (--recompute-num-layers 5)");
}

MG_TEST(train_options_vocab)
{
    mg_train_opts o;
    MG_CHECK_OK(t, parse(&o, BASE));
    MG_CHECK_ERR(t, mg_train_resolve_vocab(&o), MG_ERR_ARG, "vocabulary size is unknown");
    mg_train_opts_free(&o);
    char cmd[1024];
    snprintf(cmd, sizeof cmd, BASE "--tokenizer-type GPT2BPETokenizer --vocab-file "
             "%s/gpt2/gpt2-vocab.json --merge-file %s/gpt2/gpt2-merges.txt --tensor-model-parallel-size 2",
             mg_test_vocab_dir(), mg_test_vocab_dir());
    MG_CHECK_OK(t, parse(&o, cmd));
    MG_CHECK_OK(t, mg_train_resolve_vocab(&o));
    MG_CHECK_EQ_INT(t, o.model.vocab_size, 50257);
    MG_CHECK_EQ_INT(t, o.model.padded_vocab_size, 50432); /* 128 x TP 2 */
    mg_train_opts_free(&o);
}

/* GPT-2 124M: llm.c's 124,475,904 (padded vocabulary 50304) and Megatron's FLOPs per token
 * 72*L*h^2 + 6*L*h*s + 6*h*Vp for ffn = 4h and MHA. */
MG_TEST(train_plan_gpt2_124m)
{
    mg_train_opts o;
    MG_CHECK_OK(t, parse(&o, "--num-layers 12 --hidden-size 768 --num-attention-heads 12 "
                             "--seq-length 1024 --max-position-embeddings 1024 "
                             "--micro-batch-size 4 --train-iters 1 --lr 1e-4 --vocab-size 50257"));
    MG_CHECK_OK(t, mg_train_resolve_vocab(&o));
    mg_param_counts c;
    mg_param_count(&o.model, &c);
    MG_CHECK_EQ_INT(t, c.total, 124475904);
    MG_CHECK_EQ_INT(t, mg_param_count_rank(&o.model), 124475904);
    double per_token = 72.0 * 12 * 768 * 768 + 6.0 * 12 * 768 * 1024 + 6.0 * 768 * 50304;
    MG_CHECK(t, mg_flops_per_batch(&o.model, 4) == per_token * 4 * 1024);
    MG_CHECK(t, mg_mfu(1e12, 0) == -1.0 && mg_mfu(1e12, 4e12) == 0.25);
    MG_CHECK(t, mg_tflops_per_gpu(8e12, 2.0, 2) == 2.0);
    mg_train_opts_free(&o);
}

/* memory_plan.h: bytes per parameter for fp32 and mixed precision, Megatron's 18 bytes per
 * (its own) parameter, and the most loaded rank of a pipeline (tied copy on the last stage). */
MG_TEST(train_plan_memory)
{
    mg_train_opts o;
    MG_CHECK_OK(t, parse(&o, "--num-layers 4 --hidden-size 64 --num-attention-heads 4 "
                             "--normalization RMSNorm --swiglu --ffn-hidden-size 128 "
                             "--position-embedding-type rope --disable-bias-linear "
                             "--seq-length 16 --max-position-embeddings 16 --micro-batch-size 1 "
                             "--train-iters 1 --lr 1e-4 --vocab-size 1000 "
                             "--untie-embeddings-and-output-weights"));
    MG_CHECK_OK(t, mg_train_resolve_vocab(&o));
    mg_mem_setup s = {.micro_batch_size = 1, .num_microbatches = 1, .data_parallel_size = 1};
    mg_mem_plan fp32, mixed;
    mg_memory_plan(&o.model, &s, MG_PREC_FP32, &fp32);
    mg_memory_plan(&o.model, &s, MG_PREC_MIXED, &mixed);
    /* per layer: 2 norms 128 + qkv 64*192 + proj 64*64 + fc1 64*256 + fc2 128*64 */
    int64_t layer = 128 + 64 * 192 + 64 * 64 + 64 * 256 + 128 * 64;
    int64_t n = 4 * layer + 2 * 1024 * 64 + 64;
    MG_CHECK_EQ_INT(t, fp32.params, n);
    MG_CHECK(t, fp32.weights == 4.0 * n && fp32.gradients == 4.0 * n && fp32.optimizer == 8.0 * n);
    MG_CHECK(t, mixed.weights == 2.0 * n && mixed.gradients == 4.0 * n && mixed.optimizer == 12.0 * n);
    MG_CHECK(t, fp32.activations == 2 * mixed.activations && mixed.activations > 0);
    /* no biases, no positions: Megatron's own count equals ours */
    MG_CHECK(t, mg_megatron_weight_optimizer_bytes(&o.model, &s) == 18.0 * (double)n);
    o.model.pp = 2;
    o.model.tied_embeddings = 1;
    /* stage 0: 2 layers + embedding; stage 1: 2 layers + final norm + embedding copy */
    MG_CHECK_EQ_INT(t, mg_param_count_rank(&o.model), 2 * layer + 1024 * 64 + 64);
    mg_train_opts_free(&o);
}

/* A launch with fewer ranks than TP x PP model shards names the processes it needs (here
 * under mpirun's environment); one that TP x PP does not divide keeps Megatron's words. */
MG_TEST(train_options_too_few_ranks)
{
    setenv("OMPI_COMM_WORLD_SIZE", "2", 1);
    setenv("OMPI_COMM_WORLD_RANK", "0", 1);
    setenv("OMPI_COMM_WORLD_LOCAL_RANK", "0", 1);
    expect(t, BASE "--tensor-model-parallel-size 2 --pipeline-model-parallel-size 2", MG_ERR_ARG,
           "--tensor-model-parallel-size 2 x --pipeline-model-parallel-size 2 needs 4 processes "
           "(one per model shard), this launch has 2: run mpirun -np 4 mg-train");
    setenv("OMPI_COMM_WORLD_SIZE", "3", 1);
    expect(t, BASE "--tensor-model-parallel-size 2", MG_ERR_ARG,
           "world size (3) is not divisible by tensor model parallel size (2)");
    unsetenv("OMPI_COMM_WORLD_SIZE");
    unsetenv("OMPI_COMM_WORLD_RANK");
    unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
}

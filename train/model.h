/* model.h — mg-train's GPT model: parameters, gradients, initialisation, forward and
 * backward, and Hugging Face safetensors load/save.
 *
 * Contract:
 *   - A model (mg_gpt) is built from a model description (mg/model_desc.h) and a layout: the
 *     tensor-parallel size and rank and the pipeline stage's global layer range. It holds
 *     this rank's shards of the parameters of mg/schema.h (Megatron module order) in ONE
 *     contiguous fp32 buffer (params) and the gradients in a second buffer of the same
 *     layout (grads). Each tensor is a named view (mg_gpt_tensor): its Megatron-Core name
 *     (TransformerEngine spec, layer numbers local to the stage), shard shape, offset in the
 *     buffers (multiples of 16 floats) and whether weight decay applies (2-D weights; not
 *     biases and norms, as Megatron). Vocabulary tensors hold the padded vocabulary
 *     (m->padded_vocab_size rows, split over TP ranks); the padding rows are parameters like
 *     the others (Megatron's), or stay zero with opt.mask_vocab_padding.
 *   - Initialisation (model_init.c) is Megatron's: weights ~ N(0, init_std), the output
 *     projections (linear_proj, linear_fc2) ~ N(0, init_std / sqrt(2 * num_layers)), biases
 *     0, norm weights 1; every row of the embedding and output layer, the padding rows
 *     included, is drawn (Megatron's init_method runs over the whole padded table:
 *     megatron-core's VocabParallelEmbedding / ColumnParallelLinear), except with
 *     mask_vocab_padding (padding rows 0). Each value is a pure function of (seed, the
 *     parameter's canonical name with its GLOBAL layer, the element's index in the canonical
 *     unsplit tensor; a vocabulary tensor's canonical rows continue past V into the padding)
 *     through a counter-based generator (Philox4x32-10 + Box-Muller), so that every TP/PP
 *     layout with the same padded vocabulary holds slices of the same model.
 *   - A last pipeline stage that is not the first holds, with tied embeddings, a copy of
 *     the word-embedding shard named output_layer.weight (tied_copy = 1; Megatron-Core's
 *     duplicate of the shared weight): same values at initialisation; the training step
 *     keeps it equal by summing its gradient with the first stage's (the embedding group).
 *   - Forward/backward (forward.c, backward.c, model_tp.c) run one pipeline stage of one
 *     tensor-parallel rank for one micro-batch. Model code calls kernels only through
 *     kernels.h with the caller's context and communicates only through comm.h on the
 *     tensor-parallel group given to mg_gpt_acts_create_par (Megatron's tensor_parallel
 *     math, docs/DISTRIBUTED.md): column-parallel QKV / fc1 / output layer, row-
 *     parallel proj / fc2 with their reduction before the (replicated) bias is added once,
 *     local attention heads and query groups, vocabulary-parallel embedding (partial rows,
 *     then the sum) and cross-entropy (max by all-gather, then the sums of exp and of the
 *     target logits, over the columns of mg_gpt_loss_vocab). With sequence parallelism the
 *     residual stream holds N / tp rows
 *     (this rank's contiguous chunk of the B*T token rows: with micro-batch 1 exactly
 *     Megatron's chunk of the sequence): all-gather before each column-parallel layer,
 *     reduce-scatter after each row-parallel one and after the word embedding, and the
 *     gradients of the replicated norm weights / row-parallel biases are partial sums that
 *     the step adds over the group (mg_gpt_tensor_sp_reduced). With tp = 1 the calls and
 *     their order are the single-process ones (bit-identical results).
 *     Activations saved for backward live in one arena (mg_gpt_acts) per in-flight micro-
 *     batch, sized up front for (B, T); with full recomputation (mg_gpt_recompute) it holds
 *     the recomputed chunks' inputs and one chunk's working set, and the backward re-runs
 *     each chunk's forward (bit-identical: the passes are deterministic). A stage that is not the first takes its input
 *     residual stream in mg_gpt_stage_input(); one that is not the last leaves its output in
 *     mg_gpt_stage_output(), takes the gradient of that output in mg_gpt_stage_dout() and
 *     gives the gradient of its input in mg_gpt_stage_din().
 *   - The loss is the mean token cross-entropy over EVERY column of the padded vocabulary,
 *     as Megatron's vocab_parallel_cross_entropy (it masks nothing), or over the V real
 *     columns with opt.mask_vocab_padding (Hugging Face's): sum(loss_i * mask_i) /
 *     sum(mask_i) with an optional loss mask, or the plain mean over B*T tokens without one
 *     (Megatron's masked mean). Backward ADDS
 *     grad_scale * dloss/dparam into grads (micro-batch accumulation); zero them with
 *     mg_gpt_zero_grads.
 *   - GeLU: transformers' GPT-2 uses the tanh form (gelu_new); Megatron uses the tanh form
 *     through its default bias-gelu fusion when linear layers have biases and the erf form
 *     otherwise. mg_gpt_default_gelu() gives the latter rule (mg-train's default).
 *   - Safetensors I/O (model_io.c) uses Hugging Face names and transforms (mg/schema.h):
 *     GPT-2 Conv1D transposes and the fused c_attn, Llama's separate q/k/v and gate/up.
 *     HF vocabulary tensors hold the true vocabulary (V rows). Load accepts F32, BF16 and
 *     F16 tensors, names with or without the "transformer." / "model." prefix (base-model
 *     files such as the original gpt2 checkpoint), and works for any layout; save needs the
 *     full layout.
 *   - Library code: never prints or exits; errors are mg_status with mg_error_set().
 */
#ifndef MG_TRAIN_MODEL_H
#define MG_TRAIN_MODEL_H

#include <stddef.h>
#include <stdint.h>

#include "kernels.h"
#include "mg/error.h"
#include "mg/model_desc.h"
#include "mg/schema.h"

typedef struct {
    int64_t tp, tp_rank;          /* tensor-parallel size and this rank */
    int64_t layer_first, layers;  /* the stage's global layer range [first, first + layers) */
    int first_stage, last_stage;  /* holds the embeddings / the final norm and output */
} mg_gpt_layout;

typedef struct {
    mgk_gelu_kind gelu;
    double init_std;              /* --init-method-std */
    uint64_t seed;                /* --seed */
    int mask_vocab_padding;       /* --mask-vocab-padding: padding columns out of the loss,
                                   * padding rows initialised to 0 */
    int64_t ddp_bucket_size;      /* the stage's gradient buckets (grad_buckets.h
                                   * mg_ddp_bucket_size; 0: one bucket) */
} mg_gpt_opts;

typedef enum { MG_INIT_NORMAL, MG_INIT_SCALED, MG_INIT_ZERO, MG_INIT_ONE } mg_gpt_init_kind;

typedef struct {
    char name[160];               /* Megatron-Core name (TE spec, local layer) */
    mg_param param;               /* schema entry: spec, global layer, canonical shape */
    int ndim;
    int64_t shape[2];             /* this rank's shard (cols = 1 for vectors) */
    int64_t offset, numel;        /* in floats, in params and grads */
    int64_t row0;                 /* first canonical row (vocab / column / qkv shards) */
    int decay;                    /* weight decay applies (2-D weights) */
    int tied_copy;                /* last stage's copy of the tied word embeddings */
    mg_gpt_init_kind init;
} mg_gpt_tensor;

typedef struct mg_gpt {
    mg_model_desc m;              /* copy (owned) */
    mg_gpt_layout lay;
    mg_gpt_opts opt;
    mg_gpt_tensor *t;
    size_t nt;
    int64_t numel;                /* buffer length in floats (with alignment padding) */
    int64_t nparams;              /* sum of tensor sizes */
    float *params, *grads;        /* in the memory of backend `mem` (kernels.h mgk_alloc) */
    mgk_backend mem;              /* host (a CPU backend, mg_gpt_create) or MGK_CUDA */
    /* --bf16/--fp16 on the device (device.h): the 16-bit copy (of the kernel context's kind,
     * kernels.h mgk_half) of params the forward and backward
     * read (numel entries, same offsets), refreshed by every optimizer step; else NULL */
    mgk_h16 *params16;
    /* --overlap-grad-reduce (grad_buckets.h): while set, the backward calls it after the
     * output head (progress = INT64_MAX), after each layer (its global index) and at its end
     * (-1): every gradient of a tensor of level >= progress is then final
     * (mg_gpt_grads_ready); NULL: not called */
    mg_status (*grads_ready)(void *ctx, int64_t progress);
    void *grads_ready_ctx;
} mg_gpt;

/* The backward's progress report (see grads_ready). */
static inline mg_status mg_gpt_grads_ready(mg_gpt *g, int64_t progress)
{
    return g->grads_ready ? g->grads_ready(g->grads_ready_ctx, progress) : MG_OK;
}

/* The full single-process layout (TP = 1, all layers). */
mg_gpt_layout mg_gpt_layout_full(const mg_model_desc *m);
/* Megatron's default activation for m (tanh with linear biases, erf without). */
mgk_gelu_kind mg_gpt_default_gelu(const mg_model_desc *m);

/* Builds the views and allocates zeroed params and grads. m needs vocab_size and
 * padded_vocab_size. */
mg_status mg_gpt_create(mg_gpt **g, const mg_model_desc *m, const mg_gpt_layout *lay,
                        const mg_gpt_opts *opt);
/* The same with params and grads in the memory of backend mem (device.h: the GPU's). */
mg_status mg_gpt_create_on(mg_gpt **g, const mg_model_desc *m, const mg_gpt_layout *lay,
                           const mg_gpt_opts *opt, mgk_backend mem);
/* The views alone (params and grads NULL): shapes and offsets for planning (--dry-run). */
mg_status mg_gpt_create_views(mg_gpt **g, const mg_model_desc *m, const mg_gpt_layout *lay);
void mg_gpt_free(mg_gpt *g); /* accepts NULL */
/* The view with Megatron-Core name `name`, NULL if absent. */
const mg_gpt_tensor *mg_gpt_find(const mg_gpt *g, const char *name);
void mg_gpt_zero_grads(mg_gpt *g);
/* Whether t's gradient counts in the global norm: not a tensor-parallel duplicate (a
 * replicated tensor counts on TP rank 0 only) and not the tied copy (Megatron's
 * param_is_not_shared / param_is_not_tensor_parallel_duplicate). */
int mg_gpt_tensor_in_norm(const mg_gpt *g, const mg_gpt_tensor *t);
/* Whether t's gradient is a partial sum over the sequence chunk under sequence parallelism
 * (norms and row-parallel biases: Megatron's `sequence_parallel` parameters). */
int mg_gpt_tensor_sp_reduced(const mg_gpt_tensor *t);

/* model_init.c: Megatron's initialisation of every tensor (see the contract). */
void mg_gpt_init_params(mg_gpt *g);
/* Columns of the softmax: the padded vocabulary, or the true one with mask_vocab_padding. */
int64_t mg_gpt_loss_vocab(const mg_gpt *g);
/* The canonical (unsplit) element of a shard element: row and column in the canonical
 * tensor; *pad = 1 for a padded vocabulary row (*R >= V: no Hugging Face element). */
void mg_gpt_canonical_index(const mg_gpt *g, const mg_gpt_tensor *t, int64_t r, int64_t c,
                            int64_t *R, int64_t *C, int *pad);
/* Philox4x32-10 normal N(0, 1) for (seed, stream, counter): exposed for the tests. */
double mg_gpt_normal(uint64_t seed, uint64_t stream, uint64_t counter);

/* ---- activations and the passes (forward.c, backward.c) ---- */

typedef struct mg_gpt_acts mg_gpt_acts; /* opaque arena for one micro-batch shape */

struct mg_comm;
/* Full activation recomputation (--recompute-granularity full): Megatron-Core's
 * TransformerBlock._checkpointed_forward on the stage's layers. UNIFORM: the layers in
 * chunks of `recompute_layers` (the last one shorter), BLOCK: the first `recompute_layers`
 * layers each a chunk of one, the others kept whole. Of a chunk the arena keeps only its
 * input residual stream; the backward re-runs the chunk's forward into one chunk's working
 * set (shared by all chunks) before going back through it. */
typedef enum { MG_RECOMPUTE_NONE, MG_RECOMPUTE_UNIFORM, MG_RECOMPUTE_BLOCK } mg_gpt_recompute;

typedef struct {
    struct mg_comm *tp;           /* tensor-parallel group (size g->lay.tp); NULL if tp = 1 */
    int sequence_parallel;        /* --sequence-parallel (needs tp > 1; N % tp == 0) */
    mg_gpt_recompute recompute;   /* --recompute-method with --recompute-granularity full */
    int64_t recompute_layers;     /* --recompute-num-layers (>= 1 with a method) */
    int recompute_attention;      /* --recompute-granularity selective: the core attention's
                                   * saved state (kernels.h mgk_attn_saved_numel) in one
                                   * buffer for all layers, the attention's forward re-run
                                   * just before its backward (Megatron's core_attn) */
} mg_gpt_par;

/* Sizes the arena for micro-batches of B sequences of T tokens (T <= seq_length) and
 * reserves the kernel scratch the backward needs in k. The arena belongs to g: passing it
 * with another model is a bug (MG_ASSERT). */
mg_status mg_gpt_acts_create(mg_gpt_acts **a, const mg_gpt *g, mg_kctx *k, int64_t B,
                             int64_t T);
/* The same on a tensor-parallel group (par NULL: tp must be 1). */
mg_status mg_gpt_acts_create_par(mg_gpt_acts **a, const mg_gpt *g, mg_kctx *k, int64_t B,
                                 int64_t T, const mg_gpt_par *par);
void mg_gpt_acts_free(mg_gpt_acts *a); /* accepts NULL */
/* Bytes of the arena (saved activations + backward work buffers). */
int64_t mg_gpt_acts_bytes(const mg_gpt_acts *a);
/* Arena bytes for (B, T) without allocating. */
int64_t mg_gpt_acts_plan_bytes(const mg_gpt *g, const mg_kctx *k, int64_t B, int64_t T);
/* The same for an arena of 16-bit activations (h16: a model with params16) or fp32 ones, with
 * par's sequence parallelism and recomputation (par NULL: neither): exactly
 * mg_gpt_acts_bytes() of the arena mg_gpt_acts_create_par(g, k, B, T, par) allocates. */
int64_t mg_gpt_acts_plan_bytes_par(const mg_gpt *g, const mg_kctx *k, int64_t B, int64_t T,
                                   int h16, const mg_gpt_par *par);
/* Pipeline stage boundaries: the residual stream's floats (rows of this rank x hidden),
 * the input a stage that is not the first reads, the output a stage that is not the last
 * writes, the gradient of that output (written by the caller before mg_gpt_backward) and
 * the gradient of the input (after mg_gpt_backward on a stage that is not the first). */
int64_t mg_gpt_stage_numel(const mg_gpt_acts *a);
/* Their bytes: 16-bit values in an arena of 16-bit activations (--bf16/--fp16), else fp32. */
int64_t mg_gpt_stage_bytes(const mg_gpt_acts *a);
float *mg_gpt_stage_input(mg_gpt_acts *a);
const float *mg_gpt_stage_output(const mg_gpt_acts *a);
float *mg_gpt_stage_dout(mg_gpt_acts *a);
const float *mg_gpt_stage_din(const mg_gpt_acts *a);
/* Loss denominator of the last forward (the masked token count; last stage only). */
double mg_gpt_loss_denom(const mg_gpt_acts *a);

typedef struct {
    const int32_t *ids;       /* (B, T) token ids < vocab_size */
    const int32_t *targets;   /* (B, T) next tokens < vocab_size */
    const float *loss_mask;   /* (B, T) or NULL (all ones) */
    const int32_t *pos;       /* (B, T) position ids or NULL (0 .. T-1) */
    const int32_t *seg;       /* (B, T) document segments (--reset-attention-mask) or NULL */
} mg_gpt_batch;

/* ids and targets in [0, vocab_size), positions in [0, max_position_embeddings) for the N
 * tokens of b (host memory). mg_gpt_forward checks it on host backends; a device caller
 * checks the host batch before uploading it (device.h). */
mg_status mg_gpt_check_batch(const mg_gpt *g, const mg_gpt_batch *b, int64_t N);
/* Runs the forward pass of the stage; on the last stage *loss receives the mean masked
 * cross-entropy (double), elsewhere 0. The batch pointers must stay valid until
 * mg_gpt_backward. Every rank of the tensor-parallel group calls it together. */
mg_status mg_gpt_forward(const mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k,
                         const mg_gpt_batch *b, double *loss);
/* Logits (B, T, padded vocab / tp: this rank's columns) of the last forward on the last
 * stage, in k's memory; overwritten by mg_gpt_backward. */
const float *mg_gpt_logits(const mg_gpt_acts *a);
/* Adds grad_scale * d(loss)/d(params) into g->grads. Needs the forward just before. */
mg_status mg_gpt_backward(mg_gpt *g, mg_gpt_acts *a, const mg_kctx *k, double grad_scale);

/* ---- Hugging Face safetensors (model_io.c) ---- */

/* Loads every tensor of this rank from an HF-named file (missing tensor, shape or dtype
 * mismatch: MG_ERR_FORMAT naming the file and tensor). */
mg_status mg_gpt_load_hf(mg_gpt *g, const char *path);
/* Writes buf (g->params or g->grads) with HF names (full layout only). */
mg_status mg_gpt_save_hf(const mg_gpt *g, const float *buf, const char *path);

#endif

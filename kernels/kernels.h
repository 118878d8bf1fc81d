/* kernels.h — the one API of mg-train's compute kernels (fp32), whatever the backend.
 *
 * Contract:
 *   - Every op takes an explicit context `const mg_kctx *k` first, then outputs, then inputs,
 *     then sizes. The backend in the context picks the implementation: MGK_CPU_REF (plain
 *     loops that define each op's meaning and stay forever), MGK_CPU_FAST (OpenMP + BLAS, same
 *     signature, tested against the reference with explicit tolerances), MGK_CUDA (the same
 *     functions on device pointers, kernels/cuda/; the reductions returning double copy their
 *     result back). Model code calls only these functions.
 *   - Kernels know nothing of files, flags or processes. They never print, exit or allocate;
 *     the only fallible calls are mgk_ctx_init/mgk_ctx_reserve (mg_status). Shape errors are
 *     bugs (MG_ASSERT).
 *   - Tensors are plain fp32 pointers, row-major and contiguous unless a leading dimension is
 *     given; all sizes are int64_t. Token/position/segment ids are int32_t.
 *   - Backward functions ADD into every gradient output (d* += ...): the caller zeroes
 *     gradients once, so residual branches and micro-batch accumulation need no extra
 *     buffers. Exception: mgk_xent_bwd WRITES dlogits (which may alias logits).
 *   - Outputs must not alias inputs unless the function says so.
 *   - Tensor parallelism: ops that reduce over a sharded dimension return partial results
 *     (mgk_xent_partial: per-row max / sum-exp / target logit of a vocabulary shard;
 *     mgk_sumsq: a sum of squares) that the communication layer combines; the embedding
 *     takes the shard's first row so out-of-shard ids contribute zero.
 *   - Determinism: for a fixed backend and thread count every op is deterministic; the
 *     reductions mgk_sumsq and mgk_sum are independent of the thread count.
 */
#ifndef MG_KERNELS_H
#define MG_KERNELS_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"

typedef enum {
    MGK_CPU_REF = 0,  /* reference loops, single thread */
    MGK_CPU_FAST = 1, /* OpenMP + BLAS (falls back to plain OpenMP loops without BLAS) */
    MGK_CUDA = 2,     /* device pointers; without CUDA (a build without nvcc or the emulator)
                         mgk_ctx_init answers MG_ERR_UNSUPPORTED */
} mgk_backend;

/* The 16-bit floating-point type of a context's *_h16 ops (mixed precision on MGK_CUDA). */
typedef enum {
    MGK_HALF_BF16 = 0, /* bfloat16 (--bf16) */
    MGK_HALF_FP16 = 1, /* IEEE binary16 (--fp16) */
} mgk_half;

struct mgk_cuda_state; /* opaque: stream, cuBLASLt handle, workspaces (kernels/cuda/) */

/* The kernel context. Plain struct owned by the caller; fill it with mgk_ctx_init and
 * release it with mgk_ctx_free. */
typedef struct mg_kctx {
    mgk_backend backend;
    int nthreads;          /* OpenMP threads used by the fast backend's own loops (>= 1) */
    float *scratch;        /* owned workspace (mgk_ctx_reserve); NULL until reserved; device
                              memory for MGK_CUDA */
    int64_t scratch_numel; /* its size in floats */
    struct mgk_cuda_state *cuda; /* MGK_CUDA only, else NULL */
    mgk_half half;               /* what the *_h16 ops' mgk_h16 values are (fixed at init) */
} mg_kctx;

/* nthreads <= 0 means omp_get_max_threads() (1 without OpenMP). BLAS threads follow
 * OMP_NUM_THREADS (OpenBLAS OpenMP build). */
mg_status mgk_ctx_init(mg_kctx *k, mgk_backend backend, int nthreads);
/* The same with the 16-bit type of the *_h16 ops (mgk_ctx_init: MGK_HALF_BF16). */
mg_status mgk_ctx_init_half(mg_kctx *k, mgk_backend backend, int nthreads, mgk_half half);
const char *mgk_half_name(mgk_half h); /* "bf16", "fp16" */
/* Grows the scratch to at least numel floats (never shrinks). */
mg_status mgk_ctx_reserve(mg_kctx *k, int64_t numel);
void mgk_ctx_free(mg_kctx *k); /* accepts NULL */
const char *mgk_backend_name(mgk_backend b);
/* "openblas" when the fast backend multiplies with BLAS, "loops" otherwise. */
const char *mgk_gemm_impl(void);

/* ---- dense algebra --------------------------------------------------------------------- */

/* C = alpha * op(A) * op(B) + beta * C, row-major. op(A) is M x K, op(B) is K x N, C is M x N.
 * ta: A is stored K x M (transposed); tb: B is stored N x K. lda/ldb/ldc are row strides of
 * the stored matrices (>= their stored column counts). beta == 0 ignores C's old contents. */
void mgk_gemm(const mg_kctx *k, float *C, int64_t ldc, const float *A, int64_t lda,
              const float *B, int64_t ldb, int64_t M, int64_t N, int64_t K, int ta, int tb,
              float alpha, float beta);

/* out (N, OUT) = inp (N, IN) * W^T + bias; W is (OUT, IN) (PyTorch layout); bias may be NULL. */
void mgk_linear_fwd(const mg_kctx *k, float *out, const float *inp, const float *W,
                    const float *bias, int64_t N, int64_t IN, int64_t OUT);
/* dinp += dout * W, dW += dout^T * inp, dbias += colsum(dout). Any of dinp/dW/dbias may be
 * NULL (not wanted). */
void mgk_linear_bwd(const mg_kctx *k, float *dinp, float *dW, float *dbias, const float *dout,
                    const float *inp, const float *W, int64_t N, int64_t IN, int64_t OUT);
/* x (N, C) += bias (C) per row. */
void mgk_bias_add(const mg_kctx *k, float *x, const float *bias, int64_t N, int64_t C);
/* dbias (C) += sum over rows of dout (N, C). */
void mgk_bias_grad(const mg_kctx *k, float *dbias, const float *dout, int64_t N, int64_t C);

/* ---- elementwise and reductions --------------------------------------------------------- */

void mgk_zero(const mg_kctx *k, float *x, int64_t n);
/* dst = src, n floats of k's memory (not overlapping). */
void mgk_copy(const mg_kctx *k, float *dst, const float *src, int64_t n);
/* out = a + b (out may alias a or b). */
void mgk_add(const mg_kctx *k, float *out, const float *a, const float *b, int64_t n);
/* y += x. */
void mgk_accumulate(const mg_kctx *k, float *y, const float *x, int64_t n);
/* x *= alpha (gradient clipping, loss scaling). */
void mgk_scale(const mg_kctx *k, float *x, int64_t n, float alpha);
/* Sum of x[i]^2 in double, in fixed chunks so the result does not depend on threads. The
 * global gradient norm is sqrt of the sum over tensors (and over ranks). */
double mgk_sumsq(const mg_kctx *k, const float *x, int64_t n);
/* Sum of x[i] * (mask ? mask[i] : 1) in double (loss totals), thread-count independent. */
double mgk_sum(const mg_kctx *k, const float *x, const float *mask, int64_t n);

/* ---- embedding -------------------------------------------------------------------------- */

/* For each of N ids: row = ids[i] - row0; if 0 <= row < nrows, out[i] (=|+=) table[row],
 * otherwise out[i] (=|+=) 0. accumulate selects += (e.g. position embeddings added to token
 * embeddings). table is (nrows, C): a vocabulary shard starting at global row row0. */
void mgk_embedding_fwd(const mg_kctx *k, float *out, const int32_t *ids, const float *table,
                       int64_t N, int64_t C, int64_t row0, int64_t nrows, int accumulate);
/* dtable[ids[i] - row0] += dout[i] for in-shard ids (deterministic: the fast version
 * parallelises over columns and keeps the row order). */
void mgk_embedding_bwd(const mg_kctx *k, float *dtable, const float *dout, const int32_t *ids,
                       int64_t N, int64_t C, int64_t row0, int64_t nrows);

/* ---- normalisation ---------------------------------------------------------------------- */

/* LayerNorm over the last dim (biased variance, eps inside the sqrt, as torch):
 * out = (x - mean) * rstd * w + b. Saves mean (N) and rstd (N) for backward; b may be NULL. */
void mgk_layernorm_fwd(const mg_kctx *k, float *out, float *mean, float *rstd, const float *inp,
                       const float *w, const float *b, int64_t N, int64_t C, float eps);
/* dinp/dw/db += ... (db may be NULL; dw may be NULL to skip parameter grads). */
void mgk_layernorm_bwd(const mg_kctx *k, float *dinp, float *dw, float *db, const float *dout,
                       const float *inp, const float *w, const float *mean, const float *rstd,
                       int64_t N, int64_t C);
/* RMSNorm (torch.nn.RMSNorm / Megatron): out = x * rsqrt(mean(x^2) + eps) * w; saves rstd. */
void mgk_rmsnorm_fwd(const mg_kctx *k, float *out, float *rstd, const float *inp, const float *w,
                     int64_t N, int64_t C, float eps);
void mgk_rmsnorm_bwd(const mg_kctx *k, float *dinp, float *dw, const float *dout,
                     const float *inp, const float *w, const float *rstd, int64_t N, int64_t C);

/* ---- activations ------------------------------------------------------------------------ */

typedef enum {
    MGK_GELU_ERF = 0,  /* exact: torch F.gelu (Megatron without bias fusion) */
    MGK_GELU_TANH = 1, /* tanh approximation: Megatron's fused bias_gelu (its default with
                          biases), --openai-gelu, HF gelu_new, llm.c */
} mgk_gelu_kind;

/* out = gelu(inp), n elements; out may alias inp. */
void mgk_gelu_fwd(const mg_kctx *k, float *out, const float *inp, int64_t n, mgk_gelu_kind kind);
/* dinp += gelu'(inp) * dout. */
void mgk_gelu_bwd(const mg_kctx *k, float *dinp, const float *dout, const float *inp, int64_t n,
                  mgk_gelu_kind kind);
/* SwiGLU (Megatron --swiglu): inp is (N, 2F), each row [gate (F) | up (F)] (fc1's output,
 * also per tensor-parallel shard); out (N, F) = silu(gate) * up. */
void mgk_swiglu_fwd(const mg_kctx *k, float *out, const float *inp, int64_t N, int64_t F);
/* dinp (N, 2F) += ... */
void mgk_swiglu_bwd(const mg_kctx *k, float *dinp, const float *dout, const float *inp,
                    int64_t N, int64_t F);

/* ---- rotary position embedding ---------------------------------------------------------- */

/* RoPE as Megatron (rotate-half, non-interleaved): x is (B, T, H, D); the first rot_dim
 * (even, <= D) features of each head are rotated, the rest pass through. With half = rot_dim/2
 * and inv_freq[i] = 1 / base^(2i / rot_dim) (fp32, as torch), angle = pos * inv_freq[i]:
 *   out[i]      = x[i] cos - x[i+half] sin,  out[i+half] = x[i+half] cos + x[i] sin.
 * pos is (B, T) position ids or NULL for pos = t. out may alias inp. */
void mgk_rope_fwd(const mg_kctx *k, float *out, const float *inp, const int32_t *pos, int64_t B,
                  int64_t T, int64_t H, int64_t D, int64_t rot_dim, float base);
/* dinp += R^T dout (dinp must not alias dout). */
void mgk_rope_bwd(const mg_kctx *k, float *dinp, const float *dout, const int32_t *pos,
                  int64_t B, int64_t T, int64_t H, int64_t D, int64_t rot_dim, float base);

/* ---- causal self-attention (grouped-query) ---------------------------------------------- */

typedef struct mgk_attn_dims {
    int64_t B, T;
    int64_t Hq;  /* query heads */
    int64_t Hkv; /* key/value heads (groups); Hq % Hkv == 0; query head h uses group
                    h / (Hq / Hkv), as Megatron and HF repeat_kv */
    int64_t D;   /* head dim */
    float scale; /* softmax scale, usually 1/sqrt(D) */
} mgk_attn_dims;

/* Megatron-Core's fused QKV projection output (linear_qkv) has per row Hkv groups, each
 * [rep query heads | 1 key head | 1 value head] of D features (rep = Hq / Hkv).
 * mgk_qkv_split copies it (N rows) into q (N, Hq, D), kk and v (N, Hkv, D); mgk_qkv_merge
 * writes the inverse (used on the gradients dq/dk/dv to get d linear_qkv output). */
void mgk_qkv_split(const mg_kctx *k, float *q, float *kk, float *v, const float *qkv, int64_t N,
                   int64_t Hq, int64_t Hkv, int64_t D);
void mgk_qkv_merge(const mg_kctx *k, float *qkv, const float *q, const float *kk, const float *v,
                   int64_t N, int64_t Hq, int64_t Hkv, int64_t D);

/* Floats of the `saved` buffer the forward fills for the backward (backend-specific: the
 * CPU backends keep the probabilities, B*Hq*T*T; CUDA keeps each row's log-sum-exp and a copy
 * of the output, B*Hq*T*(1+D)). */
int64_t mgk_attn_saved_numel(const mg_kctx *k, const mgk_attn_dims *d);
/* Scratch floats the backward needs in k->scratch (mgk_ctx_reserve before calling). */
int64_t mgk_attn_scratch_numel(const mg_kctx *k, const mgk_attn_dims *d);

/* q (B,T,Hq,D), kk and v (B,T,Hkv,D), out (B,T,Hq,D). Key s is visible from query t iff
 * s <= t and (seg == NULL or seg[b,s] == seg[b,t]); seg (B,T) gives document segments for
 * --reset-attention-mask. */
void mgk_attn_fwd(const mg_kctx *k, const mgk_attn_dims *d, float *out, float *saved,
                  const float *q, const float *kk, const float *v, const int32_t *seg);
/* dq/dk/dv += gradients given dout and what the forward saved. */
void mgk_attn_bwd(const mg_kctx *k, const mgk_attn_dims *d, float *dq, float *dk, float *dv,
                  const float *dout, const float *saved, const float *q, const float *kk,
                  const float *v, const int32_t *seg);

/* ---- softmax + cross-entropy over a (padded, possibly sharded) vocabulary ---------------- */

/* logits (N, Vl) hold global columns [col0, col0 + Vl); only global columns < vocab (the real
 * vocabulary) take part: padding columns are masked out. Per row, over the valid columns of
 * this shard: rowmax, rowsum = sum exp(x - rowmax), tgt = logits[target] if the target is
 * in the shard else 0. A shard with no valid column gives rowmax = -inf, rowsum = 0.
 * targets must lie in [0, vocab). */
void mgk_xent_partial(const mg_kctx *k, float *rowmax, float *rowsum, float *tgt,
                      const float *logits, const int32_t *targets, int64_t N, int64_t Vl,
                      int64_t col0, int64_t vocab);
/* Tensor parallel: gmax[i] = the largest of the tp ranks' row maxima all[r * N + i] (the
 * all-gathered rowmax of every rank: the group's all-reduce(max)). */
void mgk_xent_gmax(const mg_kctx *k, float *gmax, const float *all, int64_t tp, int64_t N);
/* Tensor parallel: after the all-reduce(max) of rowmax into gmax, rowsum *= exp(rowmax - gmax)
 * on each rank; then all-reduce(sum) rowsum and tgt and call mgk_xent_finish with gmax. */
void mgk_xent_rescale(const mg_kctx *k, float *rowsum, const float *rowmax, const float *gmax,
                      int64_t N);
/* loss[i] = lse[i] - tgt[i], lse[i] = rowmax[i] + log(rowsum[i]) (saved for backward). */
void mgk_xent_finish(const mg_kctx *k, float *loss, float *lse, const float *rowmax,
                     const float *rowsum, const float *tgt, int64_t N);
/* The whole vocabulary in one shard (single process): partial + finish in one pass. */
void mgk_xent_fwd(const mg_kctx *k, float *loss, float *lse, const float *logits,
                  const int32_t *targets, int64_t N, int64_t Vp, int64_t vocab);
/* dlogits = (softmax - onehot(target)) * scale * (mask ? mask[i] : 1), 0 in padding columns.
 * WRITES dlogits, which may alias logits (in place). lse is the global log-sum-exp. */
void mgk_xent_bwd(const mg_kctx *k, float *dlogits, const float *logits, const float *lse,
                  const int32_t *targets, const float *mask, float scale, int64_t N, int64_t Vl,
                  int64_t col0, int64_t vocab);

/* ---- optimizer -------------------------------------------------------------------------- */

typedef struct mgk_adamw_hp {
    double lr, beta1, beta2, eps; /* double, as the Python scalars torch and Megatron use */
    double weight_decay;          /* decoupled (torch.optim.AdamW): p *= 1 - lr * wd */
    int64_t step;                 /* 1-based step count for bias correction */
    double grad_scale;            /* gradients are multiplied by (float)grad_scale first
                                     (clipping); exactly 1 = none */
} mgk_adamw_hp;

/* One AdamW step over n parameters, as torch.optim.AdamW (bias-corrected, decoupled weight
 * decay) applied to grad * grad_scale. decay = 0 skips weight decay for this tensor (biases
 * and norms, as Megatron). m and v are the moments (zero at step 1). grad is not modified. */
void mgk_adamw(const mg_kctx *k, float *param, float *m, float *v, const float *grad, int64_t n,
               const mgk_adamw_hp *hp, int decay);

/* ---- 16-bit variants (MGK_CUDA only) -------------------------------------------------- */

/* The mixed-precision ops of the GPU training path (--bf16, --fp16): kernels.h's meaning with
 * the type rule of kernels/cuda/kernels_cuda.h (activations and parameters 16-bit floats of the
 * context's kind k->half: the 16 bits of a bfloat16 or of an IEEE half; parameter gradients
 * and saved statistics fp32; arithmetic fp32, each 16-bit result rounded once to
 * nearest-even). kernels/kernels_h16.c forwards them to the CUDA backend; a context of another
 * backend is a bug (MG_ASSERT): the CPU backends compute in fp32 only. */
typedef uint16_t mgk_h16;

void mgk_zero_h16(const mg_kctx *k, mgk_h16 *x, int64_t n);
void mgk_copy_h16(const mg_kctx *k, mgk_h16 *dst, const mgk_h16 *src, int64_t n);
void mgk_add_h16(const mg_kctx *k, mgk_h16 *out, const mgk_h16 *a, const mgk_h16 *b,
                 int64_t n);
void mgk_bias_add_h16(const mg_kctx *k, mgk_h16 *x, const mgk_h16 *bias, int64_t N, int64_t C);
void mgk_bias_grad_h16(const mg_kctx *k, float *dbias, const mgk_h16 *dout, int64_t N,
                       int64_t C);
void mgk_linear_fwd_h16(const mg_kctx *k, mgk_h16 *out, const mgk_h16 *inp, const mgk_h16 *W,
                        const mgk_h16 *bias, int64_t N, int64_t IN, int64_t OUT);
void mgk_linear_bwd_h16(const mg_kctx *k, mgk_h16 *dinp, float *dW, float *dbias,
                        const mgk_h16 *dout, const mgk_h16 *inp, const mgk_h16 *W, int64_t N,
                        int64_t IN, int64_t OUT);
void mgk_embedding_fwd_h16(const mg_kctx *k, mgk_h16 *out, const int32_t *ids,
                           const mgk_h16 *table, int64_t N, int64_t C, int64_t row0,
                           int64_t nrows, int accumulate);
void mgk_embedding_bwd_h16(const mg_kctx *k, float *dtable, const mgk_h16 *dout,
                           const int32_t *ids, int64_t N, int64_t C, int64_t row0, int64_t nrows);
void mgk_layernorm_fwd_h16(const mg_kctx *k, mgk_h16 *out, float *mean, float *rstd,
                           const mgk_h16 *inp, const mgk_h16 *w, const mgk_h16 *b, int64_t N,
                           int64_t C, float eps);
void mgk_layernorm_bwd_h16(const mg_kctx *k, mgk_h16 *dinp, float *dw, float *db,
                           const mgk_h16 *dout, const mgk_h16 *inp, const mgk_h16 *w,
                           const float *mean, const float *rstd, int64_t N, int64_t C);
void mgk_rmsnorm_fwd_h16(const mg_kctx *k, mgk_h16 *out, float *rstd, const mgk_h16 *inp,
                         const mgk_h16 *w, int64_t N, int64_t C, float eps);
void mgk_rmsnorm_bwd_h16(const mg_kctx *k, mgk_h16 *dinp, float *dw, const mgk_h16 *dout,
                         const mgk_h16 *inp, const mgk_h16 *w, const float *rstd, int64_t N,
                         int64_t C);
void mgk_gelu_fwd_h16(const mg_kctx *k, mgk_h16 *out, const mgk_h16 *inp, int64_t n,
                      mgk_gelu_kind kind);
void mgk_gelu_bwd_h16(const mg_kctx *k, mgk_h16 *dinp, const mgk_h16 *dout,
                      const mgk_h16 *inp, int64_t n, mgk_gelu_kind kind);
void mgk_swiglu_fwd_h16(const mg_kctx *k, mgk_h16 *out, const mgk_h16 *inp, int64_t N,
                        int64_t F);
void mgk_swiglu_bwd_h16(const mg_kctx *k, mgk_h16 *dinp, const mgk_h16 *dout,
                        const mgk_h16 *inp, int64_t N, int64_t F);
void mgk_rope_fwd_h16(const mg_kctx *k, mgk_h16 *out, const mgk_h16 *inp, const int32_t *pos,
                      int64_t B, int64_t T, int64_t H, int64_t D, int64_t rot_dim, float base);
void mgk_rope_bwd_h16(const mg_kctx *k, mgk_h16 *dinp, const mgk_h16 *dout,
                      const int32_t *pos, int64_t B, int64_t T, int64_t H, int64_t D,
                      int64_t rot_dim, float base);
void mgk_qkv_split_h16(const mg_kctx *k, mgk_h16 *q, mgk_h16 *kk, mgk_h16 *v,
                       const mgk_h16 *qkv, int64_t N, int64_t Hq, int64_t Hkv, int64_t D);
void mgk_qkv_merge_h16(const mg_kctx *k, mgk_h16 *qkv, const mgk_h16 *q, const mgk_h16 *kk,
                       const mgk_h16 *v, int64_t N, int64_t Hq, int64_t Hkv, int64_t D);
/* saved and the backward's scratch: as mgk_attn_fwd / mgk_attn_bwd (fp32). */
void mgk_attn_fwd_h16(const mg_kctx *k, const mgk_attn_dims *d, mgk_h16 *out, float *saved,
                      const mgk_h16 *q, const mgk_h16 *kk, const mgk_h16 *v,
                      const int32_t *seg);
void mgk_attn_bwd_h16(const mg_kctx *k, const mgk_attn_dims *d, mgk_h16 *dq, mgk_h16 *dk,
                      mgk_h16 *dv, const mgk_h16 *dout, const float *saved, const mgk_h16 *q,
                      const mgk_h16 *kk, const mgk_h16 *v, const int32_t *seg);
void mgk_xent_fwd_h16(const mg_kctx *k, float *loss, float *lse, const mgk_h16 *logits,
                      const int32_t *targets, int64_t N, int64_t Vp, int64_t vocab);
/* mgk_xent_partial on a 16-bit shard of the logits (tensor parallelism). */
void mgk_xent_partial_h16(const mg_kctx *k, float *rowmax, float *rowsum, float *tgt,
                          const mgk_h16 *logits, const int32_t *targets, int64_t N, int64_t Vl,
                          int64_t col0, int64_t vocab);
void mgk_xent_bwd_h16(const mg_kctx *k, mgk_h16 *dlogits, const mgk_h16 *logits,
                      const float *lse, const int32_t *targets, const float *mask, float scale,
                      int64_t N, int64_t Vl, int64_t col0, int64_t vocab);
/* mgk_adamw on the fp32 master weights param, then param16 = param rounded to k->half. */
void mgk_adamw_h16(const mg_kctx *k, float *param, mgk_h16 *param16, float *m, float *v,
                   const float *grad, int64_t n, const mgk_adamw_hp *hp, int decay);

/* ---- memory, streams and the device ---------------------------------------------------- */

/* The memory a backend's tensors live in: host memory (calloc) for the CPU backends, device
 * memory for MGK_CUDA. mgk_alloc returns zeroed memory, or NULL with the message set. The
 * copies are synchronous; host_* buffers are ordinary host memory either way. */
void *mgk_alloc(mgk_backend b, size_t bytes);
/* Bytes mgk_alloc has handed out for MGK_CUDA in this process so far (frees not deducted). */
int64_t mgk_device_allocated(void);
/* Device bytes a context of backend b allocates for itself besides its scratch (0 off CUDA). */
int64_t mgk_ctx_device_bytes(mgk_backend b);
void mgk_free(mgk_backend b, void *p); /* accepts NULL */
mg_status mgk_upload(mgk_backend b, void *dst, const void *src, size_t bytes);
mg_status mgk_download(mgk_backend b, void *dst, const void *src, size_t bytes);
/* Host memory the device copies from without staging (CUDA: pinned; else calloc), zeroed. */
void *mgk_host_alloc(mgk_backend b, size_t bytes);
void mgk_host_free(mgk_backend b, void *p); /* accepts NULL */
/* Host -> k's memory on k's copy stream, ordered before every op queued on k afterwards
 * (CUDA: the copy stream records an event the compute stream waits for; src must stay
 * unchanged until mgk_sync or the next mgk_upload_async waits for it). Host backends: a
 * plain copy. */
mg_status mgk_upload_async(const mg_kctx *k, void *dst, const void *src, size_t bytes);
/* The CUDA stream (cudaStream_t) k's kernels run on, for work that must follow them there
 * (the NCCL collectives, comm.h mg_comm_set_stream); NULL on the host backends. */
void *mgk_stream_handle(const mg_kctx *k);
/* Waits for everything queued on k (copies included); reports an asynchronous failure. */
mg_status mgk_sync(const mg_kctx *k);

/* Stream time: a mark records the point reached by k's stream (CUDA: an event; host
 * backends: the clock). mgk_mark_elapsed waits for b and gives the milliseconds from a. */
typedef struct {
    void *event;  /* cudaEvent_t of MGK_CUDA, else NULL */
    double host_s;
} mgk_mark;
mg_status mgk_mark_record(const mg_kctx *k, mgk_mark *m);
mg_status mgk_mark_elapsed(const mg_kctx *k, const mgk_mark *a, const mgk_mark *b, double *ms);
void mgk_mark_free(mgk_mark *m); /* accepts a never-recorded mark */

typedef enum {
    MGK_CUDA_NONE = 0,     /* built without CUDA */
    MGK_CUDA_REAL = 1,     /* nvcc kernels on the CUDA runtime */
    MGK_CUDA_EMULATED = 2, /* the kernels on the host emulator (docs/CUDA_EMU.md) */
} mgk_cuda_build;
mgk_cuda_build mgk_cuda_built(void);
/* Visible CUDA devices (0 without CUDA or without a device; the emulator has one). */
int mgk_cuda_devices(void);
/* Makes device `ordinal` current for this process (before mgk_ctx_init with MGK_CUDA). */
mg_status mgk_cuda_select(int ordinal);
/* The current device's name ("" without CUDA). */
void mgk_cuda_name(char *buf, size_t n);
/* The current device's memory in bytes (0 without CUDA or a device). */
int64_t mgk_cuda_memory(void);

#endif

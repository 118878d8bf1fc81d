/* kernels_cuda.h — what the CUDA backend offers beyond kernels.h (C API, MG_HAVE_CUDA builds:
 * nvcc or the host emulator): device memory, synchronisation and timing on a context's
 * stream, the device's identity, and the 16-bit variants of the ops the GPU training path runs.
 *
 * Contract:
 *   - Every tensor pointer is device memory (mgk_cuda_alloc). Calls are asynchronous on the
 *     context's stream except mgk_cuda_upload/download (synchronous, device-wide) and
 *     mgk_cuda_sync; a failed kernel launch or an asynchronous device error is a bug or a dead
 *     device and aborts with file:line (kernels never return errors).
 *   - 16-bit variants (suffix _h16) keep the kernels.h argument order and meaning with this
 *     type rule: activations and parameters are 16-bit floats of the context's kind k->half
 *     (mgk_h16: the 16 bits of an __nv_bfloat16 for MGK_HALF_BF16, of an IEEE __half for
 *     MGK_HALF_FP16), parameter gradients and saved statistics (mean, rstd, lse, attention
 *     saves) are fp32; arithmetic is fp32 and each 16-bit result is rounded once
 *     (nearest-even). Backward functions add into their gradients as in kernels.h.
 */
#ifndef MG_KERNELS_CUDA_H
#define MG_KERNELS_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The 16 bits of an __nv_bfloat16 (the mma.sync probe below is bf16 whatever k->half). */
typedef uint16_t mgk_bf16;

/* ---- device memory and timing ------------------------------------------------------------ */

/* Device memory of bytes (> 0); NULL with the message set on failure. */
void *mgk_cuda_alloc(size_t bytes);
void mgk_cuda_free(void *p); /* accepts NULL */
/* Device bytes an MGK_CUDA context allocates for itself (workspaces; the scratch apart). */
size_t mgk_cuda_ctx_bytes(void);
/* Synchronous copies host -> device and device -> host. */
mg_status mgk_cuda_upload(void *dst, const void *src, size_t bytes);
mg_status mgk_cuda_download(void *dst, const void *src, size_t bytes);
/* Zeroes bytes of device memory (synchronous). */
mg_status mgk_cuda_clear(void *dst, size_t bytes);
/* Pinned host memory (cudaMallocHost); NULL with the message set on failure. */
void *mgk_cuda_host_alloc(size_t bytes);
void mgk_cuda_host_free(void *p); /* accepts NULL */
/* Host -> device on k's copy stream; k's stream waits for it (kernels.h mgk_upload_async). */
mg_status mgk_cuda_upload_async(const mg_kctx *k, void *dst, const void *src, size_t bytes);
/* Events on k's stream (kernels.h mgk_mark_*): *ev receives a new event recorded there. */
mg_status mgk_cuda_event_record(const mg_kctx *k, void **ev);
mg_status mgk_cuda_event_elapsed(const void *a, const void *b, double *ms);
void mgk_cuda_event_free(void *ev);
/* Makes device ordinal current. */
mg_status mgk_cuda_set_device(int ordinal);
/* k's compute stream as a cudaStream_t (kernels.h mgk_stream_handle). */
void *mgk_cuda_stream_handle(const mg_kctx *k);
/* Waits for everything queued on k's stream; reports an asynchronous failure. */
mg_status mgk_cuda_sync(const mg_kctx *k);
/* Runs fn(arg) reps times on k's stream between two events; *ms = mean milliseconds per run. */
mg_status mgk_cuda_time(const mg_kctx *k, void (*fn)(void *arg), void *arg, int reps, double *ms);
/* Number of devices (0 when there is none or no driver). */
int mgk_cuda_device_count(void);
/* The current device's memory (cudaDeviceProp.totalGlobalMem). */
mg_status mgk_cuda_device_memory(size_t *bytes);
/* The current device's name, compute capability and multiprocessor count. */
mg_status mgk_cuda_device_info(char *name, size_t name_len, int *cc_major, int *cc_minor,
                               int *num_sms);

/* ---- fused residual add + norm (fp32 and 16-bit) ------------------------------------------- */

/* resid = a + b (rounded to the variant's type), then out = layernorm(resid) exactly as
 * mgk_add followed by mgk_layernorm_fwd / mgk_rmsnorm_fwd, in one pass over the row. The
 * backward needs no fused op: the norms' backward already adds into the residual's gradient. */
void mgk_cuda_residual_layernorm_fwd(const mg_kctx *k, float *resid, float *out, float *mean,
                                     float *rstd, const float *a, const float *b, const float *w,
                                     const float *bias, int64_t N, int64_t C, float eps);
void mgk_cuda_residual_rmsnorm_fwd(const mg_kctx *k, float *resid, float *out, float *rstd,
                                   const float *a, const float *b, const float *w, int64_t N,
                                   int64_t C, float eps);
void mgk_cuda_residual_layernorm_fwd_h16(const mg_kctx *k, mgk_h16 *resid, mgk_h16 *out,
                                         float *mean, float *rstd, const mgk_h16 *a,
                                         const mgk_h16 *b, const mgk_h16 *w,
                                         const mgk_h16 *bias, int64_t N, int64_t C, float eps);
void mgk_cuda_residual_rmsnorm_fwd_h16(const mg_kctx *k, mgk_h16 *resid, mgk_h16 *out,
                                       float *rstd, const mgk_h16 *a, const mgk_h16 *b,
                                       const mgk_h16 *w, int64_t N, int64_t C, float eps);

/* ---- 16-bit variants (kernels.h meaning; type rule above) ------------------------------------ */

void mgk_cuda_zero_h16(const mg_kctx *k, mgk_h16 *x, int64_t n);
void mgk_cuda_copy_h16(const mg_kctx *k, mgk_h16 *dst, const mgk_h16 *src, int64_t n);
void mgk_cuda_add_h16(const mg_kctx *k, mgk_h16 *out, const mgk_h16 *a, const mgk_h16 *b,
                      int64_t n);
void mgk_cuda_bias_add_h16(const mg_kctx *k, mgk_h16 *x, const mgk_h16 *bias, int64_t N,
                           int64_t C);
void mgk_cuda_bias_grad_h16(const mg_kctx *k, float *dbias, const mgk_h16 *dout, int64_t N,
                            int64_t C);
void mgk_cuda_embedding_fwd_h16(const mg_kctx *k, mgk_h16 *out, const int32_t *ids,
                                const mgk_h16 *table, int64_t N, int64_t C, int64_t row0,
                                int64_t nrows, int accumulate);
void mgk_cuda_embedding_bwd_h16(const mg_kctx *k, float *dtable, const mgk_h16 *dout,
                                const int32_t *ids, int64_t N, int64_t C, int64_t row0,
                                int64_t nrows);
void mgk_cuda_layernorm_fwd_h16(const mg_kctx *k, mgk_h16 *out, float *mean, float *rstd,
                                const mgk_h16 *inp, const mgk_h16 *w, const mgk_h16 *b,
                                int64_t N, int64_t C, float eps);
void mgk_cuda_layernorm_bwd_h16(const mg_kctx *k, mgk_h16 *dinp, float *dw, float *db,
                                const mgk_h16 *dout, const mgk_h16 *inp, const mgk_h16 *w,
                                const float *mean, const float *rstd, int64_t N, int64_t C);
void mgk_cuda_rmsnorm_fwd_h16(const mg_kctx *k, mgk_h16 *out, float *rstd, const mgk_h16 *inp,
                              const mgk_h16 *w, int64_t N, int64_t C, float eps);
void mgk_cuda_rmsnorm_bwd_h16(const mg_kctx *k, mgk_h16 *dinp, float *dw, const mgk_h16 *dout,
                              const mgk_h16 *inp, const mgk_h16 *w, const float *rstd,
                              int64_t N, int64_t C);
void mgk_cuda_gelu_fwd_h16(const mg_kctx *k, mgk_h16 *out, const mgk_h16 *inp, int64_t n,
                           mgk_gelu_kind kind);
void mgk_cuda_gelu_bwd_h16(const mg_kctx *k, mgk_h16 *dinp, const mgk_h16 *dout,
                           const mgk_h16 *inp, int64_t n, mgk_gelu_kind kind);
void mgk_cuda_swiglu_fwd_h16(const mg_kctx *k, mgk_h16 *out, const mgk_h16 *inp, int64_t N,
                             int64_t F);
void mgk_cuda_swiglu_bwd_h16(const mg_kctx *k, mgk_h16 *dinp, const mgk_h16 *dout,
                             const mgk_h16 *inp, int64_t N, int64_t F);
void mgk_cuda_rope_fwd_h16(const mg_kctx *k, mgk_h16 *out, const mgk_h16 *inp,
                           const int32_t *pos, int64_t B, int64_t T, int64_t H, int64_t D,
                           int64_t rot_dim, float base);
void mgk_cuda_rope_bwd_h16(const mg_kctx *k, mgk_h16 *dinp, const mgk_h16 *dout,
                           const int32_t *pos, int64_t B, int64_t T, int64_t H, int64_t D,
                           int64_t rot_dim, float base);
void mgk_cuda_qkv_split_h16(const mg_kctx *k, mgk_h16 *q, mgk_h16 *kk, mgk_h16 *v,
                            const mgk_h16 *qkv, int64_t N, int64_t Hq, int64_t Hkv, int64_t D);
void mgk_cuda_qkv_merge_h16(const mg_kctx *k, mgk_h16 *qkv, const mgk_h16 *q,
                            const mgk_h16 *kk, const mgk_h16 *v, int64_t N, int64_t Hq,
                            int64_t Hkv, int64_t D);
/* saved: mgk_attn_saved_numel floats (fp32, as the fp32 variant); scratch as mgk_attn_bwd.
 * Four implementations of the same contract and saved state (any backward follows any
 * forward): the plain names pick the tensor-core mma.sync kernels (attn_mma_*.cu) where they
 * serve (bf16, mgk_cuda_attn_mma_serves, and 16-byte aligned tensors), else the portable ones;
 * the suffixed names select one (the tests and timings compare them). */
void mgk_cuda_attn_fwd_h16(const mg_kctx *k, const mgk_attn_dims *d, mgk_h16 *out, float *saved,
                           const mgk_h16 *q, const mgk_h16 *kk, const mgk_h16 *v,
                           const int32_t *seg);
void mgk_cuda_attn_bwd_h16(const mg_kctx *k, const mgk_attn_dims *d, mgk_h16 *dq, mgk_h16 *dk,
                           mgk_h16 *dv, const mgk_h16 *dout, const float *saved,
                           const mgk_h16 *q, const mgk_h16 *kk, const mgk_h16 *v,
                           const int32_t *seg);
/* CUDA cores, any D <= 256 (attn.cu). */
void mgk_cuda_attn_fwd_h16_portable(const mg_kctx *k, const mgk_attn_dims *d, mgk_h16 *out,
                                    float *saved, const mgk_h16 *q, const mgk_h16 *kk,
                                    const mgk_h16 *v, const int32_t *seg);
void mgk_cuda_attn_bwd_h16_portable(const mg_kctx *k, const mgk_attn_dims *d, mgk_h16 *dq,
                                    mgk_h16 *dk, mgk_h16 *dv, const mgk_h16 *dout,
                                    const float *saved, const mgk_h16 *q, const mgk_h16 *kk,
                                    const mgk_h16 *v, const int32_t *seg);
/* Tensor cores through WMMA (attn_wmma.cu), bf16 with D = 64 or 128 (else: the portable
 * kernels). */
void mgk_cuda_attn_fwd_h16_wmma(const mg_kctx *k, const mgk_attn_dims *d, mgk_h16 *out,
                                float *saved, const mgk_h16 *q, const mgk_h16 *kk,
                                const mgk_h16 *v, const int32_t *seg);
void mgk_cuda_attn_bwd_h16_wmma(const mg_kctx *k, const mgk_attn_dims *d, mgk_h16 *dq,
                                mgk_h16 *dk, mgk_h16 *dv, const mgk_h16 *dout,
                                const float *saved, const mgk_h16 *q, const mgk_h16 *kk,
                                const mgk_h16 *v, const int32_t *seg);
/* Tensor cores through mma.sync/ldmatrix with register accumulators (attn_mma_*.cu; the emulator
 * runs them through mma_sm80.cuh's portable instructions), bf16 only; falls back to the
 * portable kernels for fp16 and where it does not serve. */
int mgk_cuda_attn_mma_serves(const mgk_attn_dims *d); /* D = 64 or 128 on an sm_80+ device */
void mgk_cuda_attn_fwd_h16_mma(const mg_kctx *k, const mgk_attn_dims *d, mgk_h16 *out,
                               float *saved, const mgk_h16 *q, const mgk_h16 *kk,
                               const mgk_h16 *v, const int32_t *seg);
void mgk_cuda_attn_bwd_h16_mma(const mg_kctx *k, const mgk_attn_dims *d, mgk_h16 *dq,
                               mgk_h16 *dk, mgk_h16 *dv, const mgk_h16 *dout,
                               const float *saved, const mgk_h16 *q, const mgk_h16 *kk,
                               const mgk_h16 *v, const int32_t *seg);
/* Test hook (tests/cuda/test_cuda_mma.c): one warp loads a (16 x 16) and b (16 x 8, row-major
 * k x n) bf16 into shared memory, takes fragments with ldmatrix (a plain; b transposed) and
 * writes, per lane, its 4 A registers, 2 B registers (frags: 32 x 6 words) and the product
 * c = a b from mma.sync (c: 32 x 4 floats, lane-major accumulator registers). */
void mgk_cuda_mma_probe(const mg_kctx *k, uint32_t *frags, float *c, const mgk_bf16 *a,
                        const mgk_bf16 *b);
void mgk_cuda_xent_partial_h16(const mg_kctx *k, float *rowmax, float *rowsum, float *tgt,
                               const mgk_h16 *logits, const int32_t *targets, int64_t N,
                               int64_t Vl, int64_t col0, int64_t vocab);
void mgk_cuda_xent_fwd_h16(const mg_kctx *k, float *loss, float *lse, const mgk_h16 *logits,
                           const int32_t *targets, int64_t N, int64_t Vp, int64_t vocab);
void mgk_cuda_xent_bwd_h16(const mg_kctx *k, mgk_h16 *dlogits, const mgk_h16 *logits,
                           const float *lse, const int32_t *targets, const float *mask,
                           float scale, int64_t N, int64_t Vl, int64_t col0, int64_t vocab);
/* mgk_adamw on the fp32 master weights param, then param16 = param rounded to k->half. */
void mgk_cuda_adamw_h16(const mg_kctx *k, float *param, mgk_h16 *param16, float *m, float *v,
                        const float *grad, int64_t n, const mgk_adamw_hp *hp, int decay);

/* Products of 16-bit matrices (fp32 accumulate), the meaning of mgk_gemm: C 16-bit, or fp32 (_f32:
 * the weight gradients accumulate in fp32). */
void mgk_cuda_gemm_h16(const mg_kctx *k, mgk_h16 *C, int64_t ldc, const mgk_h16 *A,
                       int64_t lda, const mgk_h16 *B, int64_t ldb, int64_t M, int64_t N,
                       int64_t K, int ta, int tb, float alpha, float beta);
void mgk_cuda_gemm_h16_f32(const mg_kctx *k, float *C, int64_t ldc, const mgk_h16 *A,
                           int64_t lda, const mgk_h16 *B, int64_t ldb, int64_t M, int64_t N,
                           int64_t K, int ta, int tb, float alpha, float beta);
/* out (N, OUT) = act(inp W^T + bias) with act = identity or (gelu) the tanh GeLU, in
 * cuBLASLt's epilogue; pre (may be NULL) receives the GeLU input for the backward (OUT a
 * multiple of 8). bias may be NULL. */
void mgk_cuda_linear_fwd_h16(const mg_kctx *k, mgk_h16 *out, mgk_h16 *pre,
                             const mgk_h16 *inp, const mgk_h16 *W, const mgk_h16 *bias,
                             int64_t N, int64_t IN, int64_t OUT, int gelu);
/* dinp (16-bit) += dout W, dW (fp32) += dout^T inp, dbias (fp32) += colsum(dout); any may be
 * NULL. */
void mgk_cuda_linear_bwd_h16(const mg_kctx *k, mgk_h16 *dinp, float *dW, float *dbias,
                             const mgk_h16 *dout, const mgk_h16 *inp, const mgk_h16 *W,
                             int64_t N, int64_t IN, int64_t OUT);

#ifdef __cplusplus
}
#endif

#endif

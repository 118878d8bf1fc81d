/* kernels.c — the context and the dispatch of every kernels.h op to its backend.
 *
 * Contract: mgk_ctx_init validates the backend (CUDA without MG_HAVE_CUDA: "not built with
 * CUDA"), resolves the thread count; mgk_ctx_reserve owns the scratch (device memory for
 * CUDA). Each op forwards its arguments unchanged to mgk_ref_NAME, mgk_fast_NAME
 * (kernels/cpu/cpu_internal.h) or mgk_cuda_NAME (kernels/cuda/cuda_internal.h). Checks that
 * read tensor contents run on the host backends only (CUDA tensors are device memory).
 */
#include "kernels.h"

#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "cpu/cpu_internal.h"

#ifndef MG_HAVE_CUDA
#define MG_HAVE_CUDA 0
#endif
#if MG_HAVE_CUDA
#include "cuda/cuda_internal.h"
#include "cuda/kernels_cuda.h"
#define DISPATCH(k, name, args)                                                 \
    ((k)->backend == MGK_CUDA       ? mgk_cuda_##name args                      \
     : (k)->backend == MGK_CPU_FAST ? mgk_fast_##name args                      \
                                    : mgk_ref_##name args)
#else
#define DISPATCH(k, name, args) \
    ((k)->backend == MGK_CPU_FAST ? mgk_fast_##name args : mgk_ref_##name args)
#endif

#if MG_HAVE_OPENMP
#include <omp.h>
#endif

mg_status mgk_ctx_init(mg_kctx *k, mgk_backend backend, int nthreads)
{
    return mgk_ctx_init_half(k, backend, nthreads, MGK_HALF_BF16);
}

const char *mgk_half_name(mgk_half h)
{
    return h == MGK_HALF_FP16 ? "fp16" : "bf16";
}

mg_status mgk_ctx_init_half(mg_kctx *k, mgk_backend backend, int nthreads, mgk_half half)
{
    MG_RETURN_IF(half != MGK_HALF_BF16 && half != MGK_HALF_FP16, MG_ERR_ARG,
                 "kernels: unknown 16-bit type %d", (int)half);
    k->half = half;
    k->backend = backend;
    k->scratch = NULL;
    k->scratch_numel = 0;
    k->nthreads = nthreads;
    k->cuda = NULL;
    if (backend == MGK_CUDA) {
        k->nthreads = 1;
#if MG_HAVE_CUDA
        return mgk_cuda_ctx_init(k);
#else
        return mg_error_set(MG_ERR_UNSUPPORTED, "kernels: not built with CUDA");
#endif
    }
    MG_RETURN_IF(backend != MGK_CPU_REF && backend != MGK_CPU_FAST, MG_ERR_ARG,
                 "kernels: unknown backend %d", (int)backend);
    if (nthreads <= 0) {
#if MG_HAVE_OPENMP
        k->nthreads = omp_get_max_threads();
#else
        k->nthreads = 1;
#endif
    }
    if (backend == MGK_CPU_REF) k->nthreads = 1;
    return MG_OK;
}

mg_status mgk_ctx_reserve(mg_kctx *k, int64_t numel)
{
    if (numel <= k->scratch_numel) return MG_OK;
#if MG_HAVE_CUDA
    if (k->backend == MGK_CUDA) return mgk_cuda_ctx_reserve(k, numel);
#endif
    float *p = realloc(k->scratch, (size_t)numel * sizeof(float));
    MG_RETURN_IF(!p, MG_ERR_NOMEM, "kernels: cannot allocate %lld floats of scratch",
                 (long long)numel);
    k->scratch = p;
    k->scratch_numel = numel;
    return MG_OK;
}

void mgk_ctx_free(mg_kctx *k)
{
    if (!k) return;
#if MG_HAVE_CUDA
    if (k->backend == MGK_CUDA) {
        mgk_cuda_ctx_free(k);
        return;
    }
#endif
    free(k->scratch);
    k->scratch = NULL;
    k->scratch_numel = 0;
}

const char *mgk_backend_name(mgk_backend b)
{
    switch (b) {
    case MGK_CPU_REF: return "cpu_ref";
    case MGK_CPU_FAST: return "cpu_fast";
    case MGK_CUDA: return "cuda";
    }
    return "unknown";
}

const char *mgk_gemm_impl(void)
{
    return MG_HAVE_BLAS ? "openblas" : "loops";
}

int64_t mgk_attn_saved_numel(const mg_kctx *k, const mgk_attn_dims *d)
{
#if MG_HAVE_CUDA
    if (k->backend == MGK_CUDA) return mgk_cuda_attn_saved_numel(d);
#endif
    (void)k;
    return d->B * d->Hq * d->T * d->T;
}

int64_t mgk_attn_scratch_numel(const mg_kctx *k, const mgk_attn_dims *d)
{
#if MG_HAVE_CUDA
    if (k->backend == MGK_CUDA) return mgk_cuda_attn_scratch_numel(d);
#endif
    if (k->backend == MGK_CPU_FAST) return (int64_t)k->nthreads * d->T * d->T;
    return d->T;
}

void mgk_gemm(const mg_kctx *k, float *C, int64_t ldc, const float *A, int64_t lda,
              const float *B, int64_t ldb, int64_t M, int64_t N, int64_t K, int ta, int tb,
              float alpha, float beta)
{
    MG_ASSERT(M <= INT32_MAX && N <= INT32_MAX && K <= INT32_MAX); /* BLAS takes int sizes */
    DISPATCH(k, gemm, (k, C, ldc, A, lda, B, ldb, M, N, K, ta, tb, alpha, beta));
}

void mgk_linear_fwd(const mg_kctx *k, float *out, const float *inp, const float *W,
                    const float *bias, int64_t N, int64_t IN, int64_t OUT)
{
    DISPATCH(k, linear_fwd, (k, out, inp, W, bias, N, IN, OUT));
}

void mgk_linear_bwd(const mg_kctx *k, float *dinp, float *dW, float *dbias, const float *dout,
                    const float *inp, const float *W, int64_t N, int64_t IN, int64_t OUT)
{
    DISPATCH(k, linear_bwd, (k, dinp, dW, dbias, dout, inp, W, N, IN, OUT));
}

void mgk_bias_add(const mg_kctx *k, float *x, const float *bias, int64_t N, int64_t C)
{
    DISPATCH(k, bias_add, (k, x, bias, N, C));
}

void mgk_bias_grad(const mg_kctx *k, float *dbias, const float *dout, int64_t N, int64_t C)
{
    DISPATCH(k, bias_grad, (k, dbias, dout, N, C));
}

void mgk_zero(const mg_kctx *k, float *x, int64_t n)
{
    DISPATCH(k, zero, (k, x, n));
}

void mgk_copy(const mg_kctx *k, float *dst, const float *src, int64_t n)
{
    DISPATCH(k, copy, (k, dst, src, n));
}

void mgk_add(const mg_kctx *k, float *out, const float *a, const float *b, int64_t n)
{
    DISPATCH(k, add, (k, out, a, b, n));
}

void mgk_accumulate(const mg_kctx *k, float *y, const float *x, int64_t n)
{
    DISPATCH(k, accumulate, (k, y, x, n));
}

void mgk_scale(const mg_kctx *k, float *x, int64_t n, float alpha)
{
    DISPATCH(k, scale, (k, x, n, alpha));
}

double mgk_sumsq(const mg_kctx *k, const float *x, int64_t n)
{
    return DISPATCH(k, sumsq, (k, x, n));
}

double mgk_sum(const mg_kctx *k, const float *x, const float *mask, int64_t n)
{
    return DISPATCH(k, sum, (k, x, mask, n));
}

void mgk_embedding_fwd(const mg_kctx *k, float *out, const int32_t *ids, const float *table,
                       int64_t N, int64_t C, int64_t row0, int64_t nrows, int accumulate)
{
    DISPATCH(k, embedding_fwd, (k, out, ids, table, N, C, row0, nrows, accumulate));
}

void mgk_embedding_bwd(const mg_kctx *k, float *dtable, const float *dout, const int32_t *ids,
                       int64_t N, int64_t C, int64_t row0, int64_t nrows)
{
    DISPATCH(k, embedding_bwd, (k, dtable, dout, ids, N, C, row0, nrows));
}

void mgk_layernorm_fwd(const mg_kctx *k, float *out, float *mean, float *rstd, const float *inp,
                       const float *w, const float *b, int64_t N, int64_t C, float eps)
{
    DISPATCH(k, layernorm_fwd, (k, out, mean, rstd, inp, w, b, N, C, eps));
}

void mgk_layernorm_bwd(const mg_kctx *k, float *dinp, float *dw, float *db, const float *dout,
                       const float *inp, const float *w, const float *mean, const float *rstd,
                       int64_t N, int64_t C)
{
    DISPATCH(k, layernorm_bwd, (k, dinp, dw, db, dout, inp, w, mean, rstd, N, C));
}

void mgk_rmsnorm_fwd(const mg_kctx *k, float *out, float *rstd, const float *inp, const float *w,
                     int64_t N, int64_t C, float eps)
{
    DISPATCH(k, rmsnorm_fwd, (k, out, rstd, inp, w, N, C, eps));
}

void mgk_rmsnorm_bwd(const mg_kctx *k, float *dinp, float *dw, const float *dout,
                     const float *inp, const float *w, const float *rstd, int64_t N, int64_t C)
{
    DISPATCH(k, rmsnorm_bwd, (k, dinp, dw, dout, inp, w, rstd, N, C));
}

void mgk_gelu_fwd(const mg_kctx *k, float *out, const float *inp, int64_t n, mgk_gelu_kind kind)
{
    DISPATCH(k, gelu_fwd, (k, out, inp, n, kind));
}

void mgk_gelu_bwd(const mg_kctx *k, float *dinp, const float *dout, const float *inp, int64_t n,
                  mgk_gelu_kind kind)
{
    DISPATCH(k, gelu_bwd, (k, dinp, dout, inp, n, kind));
}

void mgk_swiglu_fwd(const mg_kctx *k, float *out, const float *inp, int64_t N, int64_t F)
{
    DISPATCH(k, swiglu_fwd, (k, out, inp, N, F));
}

void mgk_swiglu_bwd(const mg_kctx *k, float *dinp, const float *dout, const float *inp,
                    int64_t N, int64_t F)
{
    DISPATCH(k, swiglu_bwd, (k, dinp, dout, inp, N, F));
}

void mgk_rope_fwd(const mg_kctx *k, float *out, const float *inp, const int32_t *pos, int64_t B,
                  int64_t T, int64_t H, int64_t D, int64_t rot_dim, float base)
{
    MG_ASSERT(rot_dim % 2 == 0 && rot_dim <= D);
    DISPATCH(k, rope_fwd, (k, out, inp, pos, B, T, H, D, rot_dim, base));
}

void mgk_rope_bwd(const mg_kctx *k, float *dinp, const float *dout, const int32_t *pos,
                  int64_t B, int64_t T, int64_t H, int64_t D, int64_t rot_dim, float base)
{
    MG_ASSERT(rot_dim % 2 == 0 && rot_dim <= D);
    DISPATCH(k, rope_bwd, (k, dinp, dout, pos, B, T, H, D, rot_dim, base));
}

void mgk_qkv_split(const mg_kctx *k, float *q, float *kk, float *v, const float *qkv, int64_t N,
                   int64_t Hq, int64_t Hkv, int64_t D)
{
    MG_ASSERT(Hkv > 0 && Hq % Hkv == 0);
    DISPATCH(k, qkv_split, (k, q, kk, v, qkv, N, Hq, Hkv, D));
}

void mgk_qkv_merge(const mg_kctx *k, float *qkv, const float *q, const float *kk, const float *v,
                   int64_t N, int64_t Hq, int64_t Hkv, int64_t D)
{
    MG_ASSERT(Hkv > 0 && Hq % Hkv == 0);
    DISPATCH(k, qkv_merge, (k, qkv, q, kk, v, N, Hq, Hkv, D));
}

void mgk_attn_fwd(const mg_kctx *k, const mgk_attn_dims *d, float *out, float *saved,
                  const float *q, const float *kk, const float *v, const int32_t *seg)
{
    MG_ASSERT(d->Hkv > 0 && d->Hq % d->Hkv == 0);
    DISPATCH(k, attn_fwd, (k, d, out, saved, q, kk, v, seg));
}

void mgk_attn_bwd(const mg_kctx *k, const mgk_attn_dims *d, float *dq, float *dk, float *dv,
                  const float *dout, const float *saved, const float *q, const float *kk,
                  const float *v, const int32_t *seg)
{
    MG_ASSERT(d->Hkv > 0 && d->Hq % d->Hkv == 0);
    MG_ASSERT(k->scratch_numel >= mgk_attn_scratch_numel(k, d));
    DISPATCH(k, attn_bwd, (k, d, dq, dk, dv, dout, saved, q, kk, v, seg));
}

/* Targets outside the real vocabulary are bugs of the caller (they would index padding).
 * Host backends only: CUDA targets live in device memory. */
static void check_targets(const mg_kctx *k, const int32_t *targets, int64_t N, int64_t vocab)
{
    if (k->backend == MGK_CUDA) return;
    for (int64_t i = 0; i < N; i++) MG_ASSERT(targets[i] >= 0 && targets[i] < vocab);
}

void mgk_xent_partial(const mg_kctx *k, float *rowmax, float *rowsum, float *tgt,
                      const float *logits, const int32_t *targets, int64_t N, int64_t Vl,
                      int64_t col0, int64_t vocab)
{
    check_targets(k, targets, N, vocab);
    DISPATCH(k, xent_partial, (k, rowmax, rowsum, tgt, logits, targets, N, Vl, col0, vocab));
}

void mgk_xent_gmax(const mg_kctx *k, float *gmax, const float *all, int64_t tp, int64_t N)
{
    DISPATCH(k, xent_gmax, (k, gmax, all, tp, N));
}

void mgk_xent_rescale(const mg_kctx *k, float *rowsum, const float *rowmax, const float *gmax,
                      int64_t N)
{
    DISPATCH(k, xent_rescale, (k, rowsum, rowmax, gmax, N));
}

void mgk_xent_finish(const mg_kctx *k, float *loss, float *lse, const float *rowmax,
                     const float *rowsum, const float *tgt, int64_t N)
{
    DISPATCH(k, xent_finish, (k, loss, lse, rowmax, rowsum, tgt, N));
}

void mgk_xent_fwd(const mg_kctx *k, float *loss, float *lse, const float *logits,
                  const int32_t *targets, int64_t N, int64_t Vp, int64_t vocab)
{
    MG_ASSERT(vocab >= 1 && vocab <= Vp);
    check_targets(k, targets, N, vocab);
    DISPATCH(k, xent_fwd, (k, loss, lse, logits, targets, N, Vp, vocab));
}

void mgk_xent_bwd(const mg_kctx *k, float *dlogits, const float *logits, const float *lse,
                  const int32_t *targets, const float *mask, float scale, int64_t N, int64_t Vl,
                  int64_t col0, int64_t vocab)
{
    DISPATCH(k, xent_bwd, (k, dlogits, logits, lse, targets, mask, scale, N, Vl, col0, vocab));
}

void mgk_adamw(const mg_kctx *k, float *param, float *m, float *v, const float *grad, int64_t n,
               const mgk_adamw_hp *hp, int decay)
{
    MG_ASSERT(hp->step >= 1);
    DISPATCH(k, adamw, (k, param, m, v, grad, n, hp, decay));
}

/* ---- memory, streams and the device ---- */

static void *host_zeroed(size_t bytes)
{
    void *p = calloc(1, bytes);
    if (!p) mg_error_set(MG_ERR_NOMEM, "kernels: cannot allocate %zu bytes", bytes);
    return p;
}

static int64_t device_allocated;

int64_t mgk_device_allocated(void) { return device_allocated; }

int64_t mgk_ctx_device_bytes(mgk_backend b)
{
#if MG_HAVE_CUDA
    if (b == MGK_CUDA) return (int64_t)mgk_cuda_ctx_bytes();
#endif
    (void)b;
    return 0;
}

void *mgk_alloc(mgk_backend b, size_t bytes)
{
    if (bytes == 0) bytes = 1;
#if MG_HAVE_CUDA
    if (b == MGK_CUDA) {
        void *p = mgk_cuda_alloc(bytes);
        if (p && mgk_cuda_clear(p, bytes) != MG_OK) {
            mgk_cuda_free(p);
            return NULL;
        }
        if (p) device_allocated += (int64_t)bytes;
        return p;
    }
#endif
    MG_ASSERT(b != MGK_CUDA);
    return host_zeroed(bytes);
}

void mgk_free(mgk_backend b, void *p)
{
#if MG_HAVE_CUDA
    if (b == MGK_CUDA) {
        mgk_cuda_free(p);
        return;
    }
#endif
    (void)b;
    free(p);
}

mg_status mgk_upload(mgk_backend b, void *dst, const void *src, size_t bytes)
{
    if (bytes == 0) return MG_OK;
#if MG_HAVE_CUDA
    if (b == MGK_CUDA) return mgk_cuda_upload(dst, src, bytes);
#endif
    (void)b;
    memcpy(dst, src, bytes);
    return MG_OK;
}

mg_status mgk_download(mgk_backend b, void *dst, const void *src, size_t bytes)
{
    if (bytes == 0) return MG_OK;
#if MG_HAVE_CUDA
    if (b == MGK_CUDA) return mgk_cuda_download(dst, src, bytes);
#endif
    (void)b;
    memcpy(dst, src, bytes);
    return MG_OK;
}

void *mgk_host_alloc(mgk_backend b, size_t bytes)
{
    if (bytes == 0) bytes = 1;
#if MG_HAVE_CUDA
    if (b == MGK_CUDA) return mgk_cuda_host_alloc(bytes);
#endif
    (void)b;
    return host_zeroed(bytes);
}

void mgk_host_free(mgk_backend b, void *p)
{
#if MG_HAVE_CUDA
    if (b == MGK_CUDA) {
        mgk_cuda_host_free(p);
        return;
    }
#endif
    (void)b;
    free(p);
}

mg_status mgk_upload_async(const mg_kctx *k, void *dst, const void *src, size_t bytes)
{
    if (bytes == 0) return MG_OK;
#if MG_HAVE_CUDA
    if (k->backend == MGK_CUDA) return mgk_cuda_upload_async(k, dst, src, bytes);
#endif
    (void)k;
    memcpy(dst, src, bytes);
    return MG_OK;
}

void *mgk_stream_handle(const mg_kctx *k)
{
#if MG_HAVE_CUDA
    if (k->backend == MGK_CUDA) return mgk_cuda_stream_handle(k);
#endif
    (void)k;
    return NULL;
}

mg_status mgk_sync(const mg_kctx *k)
{
#if MG_HAVE_CUDA
    if (k->backend == MGK_CUDA) return mgk_cuda_sync(k);
#endif
    (void)k;
    return MG_OK;
}

static double host_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

mg_status mgk_mark_record(const mg_kctx *k, mgk_mark *m)
{
    m->event = NULL;
    m->host_s = 0;
#if MG_HAVE_CUDA
    if (k->backend == MGK_CUDA) return mgk_cuda_event_record(k, &m->event);
#endif
    (void)k;
    m->host_s = host_seconds();
    return MG_OK;
}

mg_status mgk_mark_elapsed(const mg_kctx *k, const mgk_mark *a, const mgk_mark *b, double *ms)
{
#if MG_HAVE_CUDA
    if (k->backend == MGK_CUDA) return mgk_cuda_event_elapsed(a->event, b->event, ms);
#endif
    (void)k;
    *ms = 1e3 * (b->host_s - a->host_s);
    return MG_OK;
}

void mgk_mark_free(mgk_mark *m)
{
#if MG_HAVE_CUDA
    mgk_cuda_event_free(m->event);
#endif
    m->event = NULL;
}

mgk_cuda_build mgk_cuda_built(void)
{
#if MG_HAVE_CUDA && defined(MGK_CUDA_EMU)
    return MGK_CUDA_EMULATED;
#elif MG_HAVE_CUDA
    return MGK_CUDA_REAL;
#else
    return MGK_CUDA_NONE;
#endif
}

int mgk_cuda_devices(void)
{
#if MG_HAVE_CUDA
    return mgk_cuda_device_count();
#else
    return 0;
#endif
}

mg_status mgk_cuda_select(int ordinal)
{
#if MG_HAVE_CUDA
    return mgk_cuda_set_device(ordinal);
#else
    (void)ordinal;
    return mg_error_set(MG_ERR_UNSUPPORTED, "kernels: not built with CUDA");
#endif
}

int64_t mgk_cuda_memory(void)
{
#if MG_HAVE_CUDA
    size_t bytes = 0;
    if (mgk_cuda_device_memory(&bytes) == MG_OK) return (int64_t)bytes;
#endif
    return 0;
}

void mgk_cuda_name(char *buf, size_t n)
{
    if (n) buf[0] = '\0';
#if MG_HAVE_CUDA
    int major, minor, sms;
    if (mgk_cuda_device_info(buf, n, &major, &minor, &sms) != MG_OK && n) buf[0] = '\0';
#endif
}

/* gemm.cu — matrix products through cuBLASLt: mgk_gemm and the linear layers of kernels.h
 * (fp32 in, fp32 accumulate: CUBLAS_COMPUTE_32F, no TF32), and the 16-bit products of the
 * GPU path (bf16 or fp16 in as k->half says, fp32 accumulate, 16-bit or fp32 out, bias / GeLU
 * epilogues).
 *
 * Row-major C (M x N) = op(A) op(B) is computed as the column-major C^T = op(B)^T op(A)^T, so
 * every operand is passed as stored, with its own leading dimension: cuBLASLt's m = N, n = M.
 * An epilogue bias of length N (the output features) is cuBLASLt's per-row bias. The linear
 * backward accumulates (beta = 1) and leaves the bias gradient to the deterministic column
 * sums of elementwise.cu. Each call asks cuBLASLt's heuristic for one algorithm within the
 * context's 32 MiB workspace.
 */
#include "cuda_portable.h"

#include <stdio.h>

#include "cuda_common.cuh"

/* One product: C = alpha op(A) op(B) + beta C (+ epilogue), row-major, as mgk_gemm. */
struct mm_call {
    void *C;
    int64_t ldc;
    cudaDataType_t ctype;
    const void *A, *B;
    int64_t lda, ldb;
    cudaDataType_t abtype;
    int64_t M, N, K;
    int ta, tb;
    float alpha, beta;
    cublasLtEpilogue_t epi;
    const void *bias; /* N values of C's type, or NULL */
    void *aux;        /* GELU_AUX: the pre-activation, M x N row-major with row stride ldaux */
    int64_t ldaux;
};

static void lt_check_at(cublasStatus_t st, const char *expr, const char *file, int line)
{
    if (st == CUBLAS_STATUS_SUCCESS) return;
    char msg[256];
    snprintf(msg, sizeof msg, "%s: cuBLASLt status %d", expr, (int)st);
    mg_assert_fail(msg, file, line);
}
#define LT_CHECK(expr) lt_check_at((expr), #expr, __FILE__, __LINE__)

static void set_attr(cublasLtMatmulDesc_t d, cublasLtMatmulDescAttributes_t a, const void *v,
                     size_t n)
{
    LT_CHECK(cublasLtMatmulDescSetAttribute(d, a, v, n));
}

static cublasLtMatmulDesc_t make_desc(const mm_call *c)
{
    cublasLtMatmulDesc_t d;
    LT_CHECK(cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    /* column-major view: first operand is B, second is A */
    cublasOperation_t opx = c->tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    cublasOperation_t opy = c->ta ? CUBLAS_OP_T : CUBLAS_OP_N;
    set_attr(d, CUBLASLT_MATMUL_DESC_TRANSA, &opx, sizeof opx);
    set_attr(d, CUBLASLT_MATMUL_DESC_TRANSB, &opy, sizeof opy);
    if (c->epi != CUBLASLT_EPILOGUE_DEFAULT) {
        set_attr(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &c->epi, sizeof c->epi);
        if (c->bias) {
            set_attr(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &c->bias, sizeof c->bias);
            cudaDataType_t bt = c->ctype;
            set_attr(d, CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE, &bt, sizeof bt);
        }
        if (c->aux) {
            int64_t ld = c->ldaux;
            set_attr(d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &c->aux, sizeof c->aux);
            set_attr(d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &ld, sizeof ld);
        }
    }
    return d;
}

static cublasLtMatrixLayout_t make_layout(cudaDataType_t t, int64_t rows, int64_t cols,
                                          int64_t ld)
{
    cublasLtMatrixLayout_t l;
    LT_CHECK(cublasLtMatrixLayoutCreate(&l, t, (uint64_t)rows, (uint64_t)cols, ld));
    return l;
}

static void mm_run(const mg_kctx *k, const mm_call *c)
{
    if (c->M <= 0 || c->N <= 0) return;
    MG_ASSERT(c->K > 0);
    struct mgk_cuda_state *s = k->cuda;
    cublasLtMatmulDesc_t d = make_desc(c);
    /* stored B is, column-major, N x K (tb = 0) or K x N; stored A is K x M (ta = 0) or M x K */
    cublasLtMatrixLayout_t lx = c->tb ? make_layout(c->abtype, c->K, c->N, c->ldb)
                                      : make_layout(c->abtype, c->N, c->K, c->ldb);
    cublasLtMatrixLayout_t ly = c->ta ? make_layout(c->abtype, c->M, c->K, c->lda)
                                      : make_layout(c->abtype, c->K, c->M, c->lda);
    cublasLtMatrixLayout_t lc = make_layout(c->ctype, c->N, c->M, c->ldc);
    cublasLtMatmulPreference_t pref;
    LT_CHECK(cublasLtMatmulPreferenceCreate(&pref));
    LT_CHECK(cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &s->lt_ws_bytes, sizeof s->lt_ws_bytes));
    cublasLtMatmulHeuristicResult_t h;
    int found = 0;
    LT_CHECK(cublasLtMatmulAlgoGetHeuristic(s->lt, d, lx, ly, lc, lc, pref, 1, &h, &found));
    MG_ASSERT(found == 1); /* cuBLASLt has no algorithm for this shape and alignment */
    LT_CHECK(cublasLtMatmul(s->lt, d, &c->alpha, c->B, lx, c->A, ly, &c->beta, c->C, lc, c->C,
                            lc, &h.algo, s->lt_ws, s->lt_ws_bytes, mgk_stream(k)));
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatrixLayoutDestroy(ly);
    cublasLtMatrixLayoutDestroy(lx);
    cublasLtMatmulDescDestroy(d);
}

static mm_call mm_f32(float *C, int64_t ldc, const float *A, int64_t lda, const float *B,
                      int64_t ldb, int64_t M, int64_t N, int64_t K, int ta, int tb, float alpha,
                      float beta)
{
    mm_call c = {C, ldc, CUDA_R_32F, A, B, lda, ldb, CUDA_R_32F, M, N, K, ta, tb, alpha, beta,
                 CUBLASLT_EPILOGUE_DEFAULT, NULL, NULL, 0};
    return c;
}

extern "C" void mgk_cuda_gemm(const mg_kctx *k, float *C, int64_t ldc, const float *A,
                              int64_t lda, const float *B, int64_t ldb, int64_t M, int64_t N,
                              int64_t K, int ta, int tb, float alpha, float beta)
{
    mm_call c = mm_f32(C, ldc, A, lda, B, ldb, M, N, K, ta, tb, alpha, beta);
    mm_run(k, &c);
}

extern "C" void mgk_cuda_linear_fwd(const mg_kctx *k, float *out, const float *inp,
                                    const float *W, const float *bias, int64_t N, int64_t IN,
                                    int64_t OUT)
{
    mm_call c = mm_f32(out, OUT, inp, IN, W, IN, N, OUT, IN, 0, 1, 1.0f, 0.0f);
    if (bias) c.epi = CUBLASLT_EPILOGUE_BIAS, c.bias = bias;
    mm_run(k, &c);
}

extern "C" void mgk_cuda_linear_bwd(const mg_kctx *k, float *dinp, float *dW, float *dbias,
                                    const float *dout, const float *inp, const float *W,
                                    int64_t N, int64_t IN, int64_t OUT)
{
    if (dinp) {
        mm_call c = mm_f32(dinp, IN, dout, OUT, W, IN, N, IN, OUT, 0, 0, 1.0f, 1.0f);
        mm_run(k, &c);
    }
    if (dW) {
        mm_call c = mm_f32(dW, IN, dout, OUT, inp, IN, OUT, IN, N, 1, 0, 1.0f, 1.0f);
        mm_run(k, &c);
    }
    if (dbias) mgk_cuda_bias_grad(k, dbias, dout, N, OUT);
}

/* cuBLASLt's type of k's 16-bit values. */
static cudaDataType_t h16_type(const mg_kctx *k)
{
    return k->half == MGK_HALF_FP16 ? CUDA_R_16F : CUDA_R_16BF;
}

/* A and B of k's 16-bit type; C fp32 (c32) or of that type. */
static mm_call mm_h16(const mg_kctx *k, void *C, int64_t ldc, int c32, const mgk_h16 *A,
                      int64_t lda, const mgk_h16 *B, int64_t ldb, int64_t M, int64_t N, int64_t K,
                      int ta, int tb, float alpha, float beta)
{
    cudaDataType_t ab = h16_type(k);
    mm_call c = {C, ldc, c32 ? CUDA_R_32F : ab, A, B, lda, ldb, ab, M, N, K, ta, tb, alpha, beta,
                 CUBLASLT_EPILOGUE_DEFAULT, NULL, NULL, 0};
    return c;
}

extern "C" void mgk_cuda_gemm_h16(const mg_kctx *k, mgk_h16 *C, int64_t ldc, const mgk_h16 *A,
                                  int64_t lda, const mgk_h16 *B, int64_t ldb, int64_t M,
                                  int64_t N, int64_t K, int ta, int tb, float alpha, float beta)
{
    mm_call c = mm_h16(k, C, ldc, 0, A, lda, B, ldb, M, N, K, ta, tb, alpha, beta);
    mm_run(k, &c);
}

extern "C" void mgk_cuda_gemm_h16_f32(const mg_kctx *k, float *C, int64_t ldc,
                                      const mgk_h16 *A, int64_t lda, const mgk_h16 *B,
                                      int64_t ldb, int64_t M, int64_t N, int64_t K, int ta,
                                      int tb, float alpha, float beta)
{
    mm_call c = mm_h16(k, C, ldc, 1, A, lda, B, ldb, M, N, K, ta, tb, alpha, beta);
    mm_run(k, &c);
}

/* The epilogue of out = act(inp W^T + bias): bias and GeLU (with its input kept in pre). */
static cublasLtEpilogue_t linear_epilogue(int bias, int gelu, int aux)
{
    if (!gelu) return bias ? CUBLASLT_EPILOGUE_BIAS : CUBLASLT_EPILOGUE_DEFAULT;
    if (aux) return bias ? CUBLASLT_EPILOGUE_GELU_AUX_BIAS : CUBLASLT_EPILOGUE_GELU_AUX;
    return bias ? CUBLASLT_EPILOGUE_GELU_BIAS : CUBLASLT_EPILOGUE_GELU;
}

extern "C" void mgk_cuda_linear_fwd_h16(const mg_kctx *k, mgk_h16 *out, mgk_h16 *pre,
                                        const mgk_h16 *inp, const mgk_h16 *W,
                                        const mgk_h16 *bias, int64_t N, int64_t IN,
                                        int64_t OUT, int gelu)
{
    mm_call c = mm_h16(k, out, OUT, 0, inp, IN, W, IN, N, OUT, IN, 0, 1, 1.0f, 0.0f);
    c.epi = linear_epilogue(bias != NULL, gelu, gelu && pre);
    c.bias = bias;
    if (gelu && pre) {
        MG_ASSERT(OUT % 8 == 0); /* cuBLASLt's aux leading dimension */
        c.aux = pre, c.ldaux = OUT;
    }
    mm_run(k, &c);
}

extern "C" void mgk_cuda_linear_bwd_h16(const mg_kctx *k, mgk_h16 *dinp, float *dW,
                                        float *dbias, const mgk_h16 *dout, const mgk_h16 *inp,
                                        const mgk_h16 *W, int64_t N, int64_t IN, int64_t OUT)
{
    if (dinp) {
        mm_call c = mm_h16(k, dinp, IN, 0, dout, OUT, W, IN, N, IN, OUT, 0, 0, 1.0f, 1.0f);
        mm_run(k, &c);
    }
    if (dW) {
        mm_call c = mm_h16(k, dW, IN, 1, dout, OUT, inp, IN, OUT, IN, N, 1, 0, 1.0f, 1.0f);
        mm_run(k, &c);
    }
    if (dbias) mgk_cuda_bias_grad_h16(k, dbias, dout, N, OUT);
}

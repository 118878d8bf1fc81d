/* test_emu_cublaslt.cu — the cuBLASLt shim against a naive GEMM written from cuBLASLt's
 * definitions: column-major unless ROW order, D = epi(alpha op(A) op(B) + beta C). */
#include <cublasLt.h>
#include <math.h>

#include <vector>

#include "emu_test_util.h"

#define LT_OK(t, call) MG_CHECK_EQ_INT((t), (call), CUBLAS_STATUS_SUCCESS)

struct mat {
    int rows, cols, ld, order; /* order: 0 column, 1 row */
    cudaDataType type;
    int batch;
    long long stride;
    std::vector<float> host; /* values as stored (bf16-representable when bf16) */
    void *dev;
};

static size_t mat_at(const mat &m, int r, int c, int b)
{
    return (size_t)b * m.stride + (m.order ? (size_t)r * m.ld + c : r + (size_t)c * m.ld);
}

static size_t mat_numel(const mat &m)
{
    return (size_t)(m.batch - 1) * m.stride + mat_at(m, m.rows - 1, m.cols - 1, 0) + 1;
}

static float bf16_round(float x) { return __bfloat162float(__float2bfloat16_rn(x)); }

/* A matrix with deterministic values, uploaded in its type. */
static mat make_mat(mg_test_ctx *t, int rows, int cols, int ld, int order, cudaDataType type,
                    int batch, long long stride, int seed)
{
    mat m{rows, cols, ld, order, type, batch, stride, {}, nullptr};
    size_t n = mat_numel(m), es = type == CUDA_R_32F ? 4 : 2;
    m.host.resize(n);
    for (size_t i = 0; i < n; i++) {
        float v = (float)((i * 7919 + (size_t)seed * 104729) % 41) / 16.0f - 1.25f;
        m.host[i] = type == CUDA_R_16BF ? bf16_round(v) : v;
    }
    EMU_OK(t, cudaMalloc(&m.dev, n * es));
    std::vector<__nv_bfloat16> hb(n);
    for (size_t i = 0; i < n; i++) hb[i] = __float2bfloat16_rn(m.host[i]);
    EMU_OK(t, cudaMemcpy(m.dev, type == CUDA_R_32F ? (const void *)m.host.data() : hb.data(),
                         n * es, cudaMemcpyHostToDevice));
    return m;
}

static std::vector<float> download(const mat &m)
{
    size_t n = mat_numel(m);
    std::vector<float> out(n);
    if (m.type == CUDA_R_32F) {
        cudaMemcpy(out.data(), m.dev, n * 4, cudaMemcpyDeviceToHost);
    } else {
        std::vector<__nv_bfloat16> hb(n);
        cudaMemcpy(hb.data(), m.dev, n * 2, cudaMemcpyDeviceToHost);
        for (size_t i = 0; i < n; i++) out[i] = __bfloat162float(hb[i]);
    }
    return out;
}

static cublasLtMatrixLayout_t layout(mg_test_ctx *t, const mat &m)
{
    cublasLtMatrixLayout_t l;
    LT_OK(t, cublasLtMatrixLayoutCreate(&l, m.type, m.rows, m.cols, m.ld));
    int32_t order = m.order ? CUBLASLT_ORDER_ROW : CUBLASLT_ORDER_COL, batch = m.batch;
    int64_t stride = m.stride;
    LT_OK(t, cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_ORDER, &order, 4));
    LT_OK(t, cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch, 4));
    LT_OK(t, cublasLtMatrixLayoutSetAttribute(l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET, &stride, 8));
    return l;
}

struct gemm_case {
    int m, n, k, ta, tb, order, batch;
    cudaDataType in, out;
    float alpha, beta;
};

/* Runs one case through the shim and compares D with the naive product. */
static void check_case(mg_test_ctx *t, cublasLtHandle_t h, const gemm_case &g)
{
    int ar = g.ta ? g.k : g.m, ac = g.ta ? g.m : g.k, br = g.tb ? g.n : g.k, bc = g.tb ? g.k : g.n;
    auto ld_of = [&](int r, int c) { return (g.order ? c : r) + 3; };
    auto stride_of = [&](int r, int c) { return (long long)ld_of(r, c) * (g.order ? r : c) + 5; };
    mat A = make_mat(t, ar, ac, ld_of(ar, ac), g.order, g.in, g.batch, stride_of(ar, ac), 1);
    mat B = make_mat(t, br, bc, ld_of(br, bc), g.order, g.in, g.batch, stride_of(br, bc), 2);
    mat C = make_mat(t, g.m, g.n, ld_of(g.m, g.n), g.order, g.out, g.batch, stride_of(g.m, g.n), 3);
    cublasLtMatmulDesc_t d;
    LT_OK(t, cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    int32_t ta = g.ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb = g.tb ? CUBLAS_OP_T : CUBLAS_OP_N;
    LT_OK(t, cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &ta, 4));
    LT_OK(t, cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSB, &tb, 4));
    cublasLtMatrixLayout_t la = layout(t, A), lb = layout(t, B), lc = layout(t, C);
    LT_OK(t, cublasLtMatmul(h, d, &g.alpha, A.dev, la, B.dev, lb, &g.beta, C.dev, lc, C.dev, lc,
                            nullptr, nullptr, 0, 0));
    std::vector<float> got = download(C);
    float tol = g.out == CUDA_R_16BF ? 1e-2f : 1e-4f;
    for (int b = 0; b < g.batch; b++)
        for (int i = 0; i < g.m; i++)
            for (int j = 0; j < g.n; j++) {
                double s = 0;
                for (int l = 0; l < g.k; l++)
                    s += (double)A.host[g.ta ? mat_at(A, l, i, b) : mat_at(A, i, l, b)] *
                         B.host[g.tb ? mat_at(B, j, l, b) : mat_at(B, l, j, b)];
                double want = g.alpha * s + g.beta * C.host[mat_at(C, i, j, b)];
                double have = got[mat_at(C, i, j, b)];
                if (fabs(have - want) > tol * (1 + fabs(want))) {
                    mg_test_fail(t, __FILE__, __LINE__, "m%d n%d k%d ta%d tb%d order%d batch%d: "
                                 "D(%d,%d,%d) = %g, want %g", g.m, g.n, g.k, g.ta, g.tb, g.order,
                                 g.batch, i, j, b, have, want);
                    return;
                }
            }
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(d);
    cudaFree(A.dev);
    cudaFree(B.dev);
    cudaFree(C.dev);
}

MG_TEST(emu_cublaslt_gemm)
{
    cublasLtHandle_t h;
    LT_OK(t, cublasLtCreate(&h));
    for (int order = 0; order < 2; order++)
        for (int ta = 0; ta < 2; ta++)
            for (int tb = 0; tb < 2; tb++) {
                check_case(t, h, {7, 5, 9, ta, tb, order, 1, CUDA_R_32F, CUDA_R_32F, 1.0f, 0.0f});
                check_case(t, h, {4, 6, 3, ta, tb, order, 3, CUDA_R_32F, CUDA_R_32F, 0.5f, 2.0f});
                check_case(t, h, {8, 3, 16, ta, tb, order, 2, CUDA_R_16BF, CUDA_R_32F, 1.0f, 1.0f});
                check_case(t, h, {5, 7, 6, ta, tb, order, 1, CUDA_R_16BF, CUDA_R_16BF, 1.0f, 0.0f});
            }
    LT_OK(t, cublasLtDestroy(h));
}

/* GELU, tanh form, and its derivative, in double. */
static double gelu_ref(double x)
{
    return 0.5 * x * (1.0 + tanh(sqrt(2.0 / M_PI) * (x + 0.044715 * x * x * x)));
}

static double gelu_grad_ref(double x)
{
    double c = sqrt(2.0 / M_PI), u = c * (x + 0.044715 * x * x * x), th = tanh(u);
    return 0.5 * (1.0 + th) + 0.5 * x * (1.0 - th * th) * c * (1.0 + 3.0 * 0.044715 * x * x);
}

/* The operands of the epilogue test: D = epi(A B) for 16x12x8, column-major fp32; X is the
 * GELU input DGELU reads from the aux matrix. */
enum { EM = 16, EN = 12, EK = 8 };
struct epi_fixture {
    mat A, B, D, X, bias, aux;
    std::vector<float> ab; /* A B, column-major */
    cublasLtMatrixLayout_t la, lb, ld;
};

static void epi_setup(mg_test_ctx *t, epi_fixture *f)
{
    f->A = make_mat(t, EM, EK, EM, 0, CUDA_R_32F, 1, 0, 4);
    f->B = make_mat(t, EK, EN, EK, 0, CUDA_R_32F, 1, 0, 5);
    f->D = make_mat(t, EM, EN, EM, 0, CUDA_R_32F, 1, 0, 6);
    f->X = make_mat(t, EM, EN, EM, 0, CUDA_R_32F, 1, 0, 7);
    f->bias = make_mat(t, EM, 1, EM, 0, CUDA_R_32F, 1, 0, 8);
    f->aux = make_mat(t, EM, EN, EM, 0, CUDA_R_32F, 1, 0, 9);
    f->ab.assign(EM * EN, 0.0f);
    for (int i = 0; i < EM; i++)
        for (int j = 0; j < EN; j++)
            for (int l = 0; l < EK; l++) f->ab[i + j * EM] += f->A.host[i + l * EM] * f->B.host[l + j * EK];
    f->la = layout(t, f->A);
    f->lb = layout(t, f->B);
    f->ld = layout(t, f->D);
}

/* cuBLASLt's definition of D(i, j) under epilogue e; *pre gets the GELU input. */
static float epi_expected(const epi_fixture &f, uint32_t e, int i, int j, float *pre)
{
    int idx = i + j * EM;
    float x = f.ab[idx];
    if (e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_GELU_BIAS || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS)
        x += f.bias.host[i];
    *pre = x;
    if (e & CUBLASLT_EPILOGUE_GELU) x = (float)gelu_ref(x);
    if (e & 64) x *= (float)gelu_grad_ref(f.X.host[idx]); /* DGELU: times gelu'(aux) */
    return x;
}

/* The bias gradients: DGELU_BGRAD sums D's rows, BGRADA op(A)'s rows, BGRADB op(B)'s columns. */
static void epi_check_bias_grad(mg_test_ctx *t, const epi_fixture &f, uint32_t e,
                                const std::vector<float> &got, const float *drows)
{
    int len = e == CUBLASLT_EPILOGUE_BGRADB ? EN : EM;
    for (int i = 0; i < len; i++) {
        float want = e == CUBLASLT_EPILOGUE_DGELU_BGRAD ? drows[i] : 0.0f;
        for (int l = 0; l < EK && e == CUBLASLT_EPILOGUE_BGRADA; l++) want += f.A.host[i + l * EM];
        for (int l = 0; l < EK && e == CUBLASLT_EPILOGUE_BGRADB; l++) want += f.B.host[l + i * EK];
        if (fabsf(got[i] - want) > 1e-5f * (1 + fabsf(want)))
            mg_test_fail(t, __FILE__, __LINE__, "epilogue %u bias[%d] = %g, want %g", e, i, got[i], want);
    }
}

static void epi_run(mg_test_ctx *t, cublasLtHandle_t h, epi_fixture &f, uint32_t e)
{
    cublasLtMatmulDesc_t d;
    int64_t aux_ld = EM;
    const float one = 1, zero = 0;
    LT_OK(t, cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    LT_OK(t, cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &e, 4));
    LT_OK(t, cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &f.bias.dev, sizeof(void *)));
    LT_OK(t, cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER, &f.aux.dev, sizeof(void *)));
    LT_OK(t, cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD, &aux_ld, 8));
    cudaMemcpy(f.aux.dev, f.X.host.data(), EM * EN * 4, cudaMemcpyHostToDevice);
    cudaMemcpy(f.bias.dev, f.bias.host.data(), EM * 4, cudaMemcpyHostToDevice);
    LT_OK(t, cublasLtMatmul(h, d, &one, f.A.dev, f.la, f.B.dev, f.lb, &zero, f.D.dev, f.ld, f.D.dev, f.ld,
                            nullptr, nullptr, 0, 0));
    std::vector<float> got = download(f.D), aux = download(f.aux), bias = download(f.bias);
    bool stores_aux = e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS;
    float drows[EM] = {0};
    for (int j = 0; j < EN; j++)
        for (int i = 0; i < EM; i++) {
            float pre, want = epi_expected(f, e, i, j, &pre), have = got[i + j * EM];
            drows[i] += want;
            if (fabsf(have - want) > 1e-5f * (1 + fabsf(want)))
                mg_test_fail(t, __FILE__, __LINE__, "epilogue %u D(%d,%d) = %g, want %g", e, i, j, have, want);
            if (stores_aux && fabsf(aux[i + j * EM] - pre) > 1e-4f * (1 + fabsf(pre)))
                mg_test_fail(t, __FILE__, __LINE__, "epilogue %u aux(%d,%d) = %g, want %g", e, i, j,
                             aux[i + j * EM], pre);
        }
    if (e == CUBLASLT_EPILOGUE_DGELU_BGRAD || e == CUBLASLT_EPILOGUE_BGRADA || e == CUBLASLT_EPILOGUE_BGRADB)
        epi_check_bias_grad(t, f, e, bias, drows);
    cublasLtMatmulDescDestroy(d);
}

MG_TEST(emu_cublaslt_epilogues)
{
    cublasLtHandle_t h;
    LT_OK(t, cublasLtCreate(&h));
    epi_fixture f;
    epi_setup(t, &f);
    for (uint32_t e : {CUBLASLT_EPILOGUE_BIAS, CUBLASLT_EPILOGUE_GELU, CUBLASLT_EPILOGUE_GELU_BIAS,
                       CUBLASLT_EPILOGUE_GELU_AUX, CUBLASLT_EPILOGUE_GELU_AUX_BIAS, CUBLASLT_EPILOGUE_DGELU,
                       CUBLASLT_EPILOGUE_DGELU_BGRAD, CUBLASLT_EPILOGUE_BGRADA, CUBLASLT_EPILOGUE_BGRADB})
        epi_run(t, h, f, e);
    cublasLtMatrixLayoutDestroy(f.la);
    cublasLtMatrixLayoutDestroy(f.lb);
    cublasLtMatrixLayoutDestroy(f.ld);
    for (mat *x : {&f.A, &f.B, &f.D, &f.X, &f.bias, &f.aux}) cudaFree(x->dev);
    LT_OK(t, cublasLtDestroy(h));
}

/* What the contract leaves out is refused, loudly, not computed some other way. */
MG_TEST(emu_cublaslt_refuses)
{
    emu_stderr_muted quiet; /* each refusal prints its reason */
    cublasLtHandle_t h;
    LT_OK(t, cublasLtCreate(&h));
    cublasLtMatmulDesc_t d;
    MG_CHECK_EQ_INT(t, cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F_FAST_TF32, CUDA_R_32F),
                    CUBLAS_STATUS_NOT_SUPPORTED);
    LT_OK(t, cublasLtMatmulDescCreate(&d, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    uint32_t relu = CUBLASLT_EPILOGUE_RELU;
    LT_OK(t, cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_EPILOGUE, &relu, 4));
    mat A = make_mat(t, 4, 4, 4, 0, CUDA_R_32F, 1, 0, 1);
    cublasLtMatrixLayout_t l = layout(t, A), l64;
    const float one = 1, zero = 0;
    MG_CHECK_EQ_INT(t, cublasLtMatmul(h, d, &one, A.dev, l, A.dev, l, &zero, A.dev, l, A.dev, l, nullptr,
                                      nullptr, 0, 0),
                    CUBLAS_STATUS_NOT_SUPPORTED);
    MG_CHECK_EQ_INT(t, cublasLtMatrixLayoutCreate(&l64, CUDA_R_64F, 4, 4, 4), CUBLAS_STATUS_NOT_SUPPORTED);
    int32_t conj = CUBLAS_OP_C;
    MG_CHECK_EQ_INT(t, cublasLtMatmulDescSetAttribute(d, CUBLASLT_MATMUL_DESC_TRANSA, &conj, 4),
                    CUBLAS_STATUS_NOT_SUPPORTED);
    cublasLtMatmulDescDestroy(d);
    cublasLtMatrixLayoutDestroy(l);
    cudaFree(A.dev);
    LT_OK(t, cublasLtDestroy(h));
}

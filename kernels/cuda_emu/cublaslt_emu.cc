/* cublaslt_emu.cc — the cuBLASLt calls of cuda_portable.h's contract on the CPU GEMM
 * (mgk_gemm of the fast CPU backend), with NVIDIA's own declarations (cublasLt.h).
 *
 * Contract:
 *   - D = epilogue(alpha * op(A) op(B) + beta * C) per batch, as cuBLASLt defines it:
 *     column-major unless a layout says CUBLASLT_ORDER_ROW, op = N or T, A and B both
 *     CUDA_R_32F or both CUDA_R_16BF, C and D of one type (CUDA_R_32F, or CUDA_R_16BF with
 *     bf16 inputs), compute CUBLAS_COMPUTE_32F with CUDA_R_32F scales on the host. Products
 *     accumulate in fp32; bf16 results are rounded to nearest even. beta == 0 never reads C;
 *     C may be D.
 *   - Epilogues: DEFAULT, BIAS (bias[m] added to every column), GELU and GELU_BIAS (tanh
 *     form), GELU_AUX and GELU_AUX_BIAS (the GELU input stored in the aux matrix, D's type
 *     and order, ld >= D's leading extent and divisible by 8), DGELU (D *= gelu'(aux)),
 *     DGELU_BGRAD (and bias[m] = sum over columns of that D), BGRADA (bias[m] = row sums of
 *     op(A)), BGRADB (bias[n] = column sums of op(B)). Bias vectors have D's type unless
 *     BIAS_DATA_TYPE says otherwise; epilogues with aux or a bias gradient take one batch.
 *   - Anything else (other types, attributes, epilogues, orders, pointer modes) is refused
 *     with a message on stderr and CUBLAS_STATUS_NOT_SUPPORTED; operands outside cudaMalloc
 *     memory are strict-mode violations.
 */
#include "cuda_emu/emu_internal.h"

#include <cublasLt.h>
#include <stdio.h>
#include <string.h>

#include <vector>

extern "C" {
#include "kernels.h"
}

static const uint32_t DESC_MAGIC = 0x6d67446du, LAYOUT_MAGIC = 0x6d674c6fu,
                      PREF_MAGIC = 0x6d675072u, HANDLE_MAGIC = 0x6d674c74u;

struct cublasLtContext {
    uint32_t magic;
    mg_kctx cpu;
};

namespace mgk_emu {

struct lt_desc {
    uint32_t magic;
    int32_t transa, transb;
    uint32_t epilogue;
    void *bias; /* read (bias) or written (bias gradients) */
    int32_t bias_type; /* -1: D's type */
    void *aux;
    int64_t aux_ld;
};

struct lt_layout {
    uint32_t magic;
    cudaDataType type;
    uint64_t rows, cols;
    int64_t ld;
    int32_t order, batch;
    int64_t stride;
};

struct lt_pref {
    uint32_t magic;
    uint64_t max_workspace;
};

static cublasStatus_t refuse(const char *call, const char *what, long long value)
{
    fprintf(stderr, "mgk-emu: %s: not emulated: %s %lld (kernels/cuda_emu/cublaslt_emu.cc "
                    "serves cuda_portable.h's list)\n", call, what, value);
    return CUBLAS_STATUS_NOT_SUPPORTED;
}

static cublasStatus_t invalid(const char *call, const char *what)
{
    fprintf(stderr, "mgk-emu: %s: %s\n", call, what);
    return CUBLAS_STATUS_INVALID_VALUE;
}

static bool emu_type(int t) { return t == CUDA_R_32F || t == CUDA_R_16BF; }
static size_t type_size(int t) { return t == CUDA_R_32F ? 4 : 2; }

static float load(int t, const void *base, size_t i)
{
    if (t == CUDA_R_32F) return ((const float *)base)[i];
    return __bfloat162float(((const __nv_bfloat16 *)base)[i]);
}

static void store(int t, void *base, size_t i, float v)
{
    if (t == CUDA_R_32F) ((float *)base)[i] = v;
    else ((__nv_bfloat16 *)base)[i] = __float2bfloat16_rn(v);
}

/* Offset of stored element (r, c). */
static size_t elem_at(const lt_layout *l, uint64_t r, uint64_t c)
{
    return l->order == CUBLASLT_ORDER_ROW ? r * (uint64_t)l->ld + c : r + c * (uint64_t)l->ld;
}

/* Bytes a layout spans over all its batches. */
static size_t span(const lt_layout *l)
{
    size_t last = elem_at(l, l->rows - 1, l->cols - 1) + (size_t)(l->batch - 1) * (size_t)l->stride;
    return (last + 1) * type_size(l->type);
}

static void check_operand(const char *name, const void *p, size_t bytes)
{
    if (!device_range(p, bytes))
        strict_violation(site{"cublasLtMatmul", 0}, "operand %s (%p, %zu bytes) is not inside a "
                         "cudaMalloc block", name, p, bytes);
}

/* ---- the problem ------------------------------------------------------------------------ */

struct problem {
    const lt_desc *d;
    const lt_layout *a, *b, *c, *dd;
    uint64_t m, n, k;
    int bias_type;
};

static bool epilogue_known(uint32_t e)
{
    switch (e) {
    case CUBLASLT_EPILOGUE_DEFAULT: case CUBLASLT_EPILOGUE_BIAS: case CUBLASLT_EPILOGUE_GELU:
    case CUBLASLT_EPILOGUE_GELU_BIAS: case CUBLASLT_EPILOGUE_GELU_AUX:
    case CUBLASLT_EPILOGUE_GELU_AUX_BIAS: case CUBLASLT_EPILOGUE_DGELU:
    case CUBLASLT_EPILOGUE_DGELU_BGRAD: case CUBLASLT_EPILOGUE_BGRADA:
    case CUBLASLT_EPILOGUE_BGRADB: return true;
    default: return false;
    }
}

static bool uses_aux(uint32_t e) { return (e & 128) != 0; }
static bool uses_bias(uint32_t e) { return (e & (CUBLASLT_EPILOGUE_BIAS | 16 | 256 | 512)) != 0; }
static bool bias_grad(uint32_t e) { return e == CUBLASLT_EPILOGUE_DGELU_BGRAD || e >= 256; }

static cublasStatus_t check_types(const char *call, const problem *p)
{
    if (p->a->type != p->b->type) return invalid(call, "A and B of different types");
    if (p->c->type != p->dd->type) return invalid(call, "C and D of different types");
    if (p->a->type == CUDA_R_32F && p->dd->type != CUDA_R_32F)
        return refuse(call, "fp32 inputs with output type", p->dd->type);
    if (!emu_type(p->bias_type)) return refuse(call, "bias data type", p->bias_type);
    return CUBLAS_STATUS_SUCCESS;
}

static cublasStatus_t check_epilogue(const char *call, const problem *p)
{
    const lt_desc *d = p->d;
    if (!epilogue_known(d->epilogue)) return refuse(call, "epilogue", d->epilogue);
    if (uses_bias(d->epilogue) && !d->bias) return invalid(call, "epilogue needs BIAS_POINTER");
    if (uses_aux(d->epilogue)) {
        uint64_t extent = p->dd->order == CUBLASLT_ORDER_ROW ? p->n : p->m;
        if (!d->aux) return invalid(call, "epilogue needs EPILOGUE_AUX_POINTER");
        if (d->aux_ld % 8 || (uint64_t)d->aux_ld < extent)
            return invalid(call, "EPILOGUE_AUX_LD must be divisible by 8 and >= D's rows");
    }
    if ((uses_aux(d->epilogue) || bias_grad(d->epilogue)) && p->dd->batch != 1)
        return refuse(call, "aux or bias-gradient epilogue with batch count", p->dd->batch);
    return CUBLAS_STATUS_SUCCESS;
}

/* Fills in p's sizes and checks everything the emulator serves. */
static cublasStatus_t check_problem(const char *call, problem *p)
{
    const lt_layout *a = p->a, *b = p->b, *c = p->c, *d = p->dd;
    if (!p->d || p->d->magic != DESC_MAGIC || !a || !b || !c || !d || a->magic != LAYOUT_MAGIC ||
        b->magic != LAYOUT_MAGIC || c->magic != LAYOUT_MAGIC || d->magic != LAYOUT_MAGIC)
        return invalid(call, "descriptor not created by cublasLt*Create");
    for (const lt_layout *l : {a, b, c, d})
        if (l->ld < (int64_t)(l->order == CUBLASLT_ORDER_ROW ? l->cols : l->rows))
            return invalid(call, "a layout's ld is smaller than its rows (columns in ROW order)");
    p->m = d->rows;
    p->n = d->cols;
    p->k = p->d->transa ? a->rows : a->cols;
    uint64_t am = p->d->transa ? a->cols : a->rows;
    uint64_t bk = p->d->transb ? b->cols : b->rows, bn = p->d->transb ? b->rows : b->cols;
    if (am != p->m || bk != p->k || bn != p->n || c->rows != p->m || c->cols != p->n)
        return invalid(call, "matrix sizes do not match D = op(A) op(B) + C");
    if (a->batch != d->batch || b->batch != d->batch || c->batch != d->batch)
        return invalid(call, "batch counts differ between A, B, C and D");
    if (!p->m || !p->n || !p->k) return invalid(call, "empty matrix");
    p->bias_type = p->d->bias_type >= 0 ? p->d->bias_type : (int)d->type;
    cublasStatus_t st = check_types(call, p);
    return st != CUBLAS_STATUS_SUCCESS ? st : check_epilogue(call, p);
}

/* ---- the computation -------------------------------------------------------------------- */

static float gelu(float x)
{
    const float s = 0.7978845608028654f; /* sqrt(2 / pi) */
    return 0.5f * x * (1.0f + tanhf(s * (x + 0.044715f * x * x * x)));
}

static float gelu_grad(float x)
{
    const float s = 0.7978845608028654f;
    float u = s * (x + 0.044715f * x * x * x), th = tanhf(u);
    return 0.5f * (1.0f + th) + 0.5f * x * (1.0f - th * th) * s * (1.0f + 3.0f * 0.044715f * x * x);
}

/* op(X) of one batch as a rows x cols row-major float matrix. */
static void gather(const lt_layout *l, const void *base, bool trans, uint64_t rows,
                   uint64_t cols, float *out)
{
    for (uint64_t r = 0; r < rows; r++)
        for (uint64_t c = 0; c < cols; c++)
            out[r * cols + c] = load(l->type, base, trans ? elem_at(l, c, r) : elem_at(l, r, c));
}

static size_t batch_offset(const lt_layout *l, int i)
{
    return (size_t)i * (size_t)l->stride * type_size(l->type);
}

/* Bias gradients of BGRADA / BGRADB from the gathered op(A) (m x k) / op(B) (k x n). */
static void bias_grad_inputs(const problem *p, const float *af, const float *bf)
{
    void *bias = p->d->bias;
    if (p->d->epilogue == CUBLASLT_EPILOGUE_BGRADA)
        for (uint64_t i = 0; i < p->m; i++) {
            float s = 0;
            for (uint64_t l = 0; l < p->k; l++) s += af[i * p->k + l];
            store(p->bias_type, bias, i, s);
        }
    if (p->d->epilogue == CUBLASLT_EPILOGUE_BGRADB)
        for (uint64_t j = 0; j < p->n; j++) {
            float s = 0;
            for (uint64_t l = 0; l < p->k; l++) s += bf[l * p->n + j];
            store(p->bias_type, bias, j, s);
        }
}

/* One element of D from its accumulated product; returns the value stored. */
static float epilogue_value(const problem *p, float x, uint64_t i, uint64_t j)
{
    uint32_t e = p->d->epilogue;
    if (e == CUBLASLT_EPILOGUE_BIAS || e == CUBLASLT_EPILOGUE_GELU_BIAS ||
        e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS)
        x += load(p->bias_type, p->d->bias, i);
    size_t aux_at = p->dd->order == CUBLASLT_ORDER_ROW ? i * (uint64_t)p->d->aux_ld + j
                                                       : i + j * (uint64_t)p->d->aux_ld;
    if (e == CUBLASLT_EPILOGUE_GELU_AUX || e == CUBLASLT_EPILOGUE_GELU_AUX_BIAS)
        store(p->dd->type, p->d->aux, aux_at, x);
    if (e & CUBLASLT_EPILOGUE_GELU) x = gelu(x);
    if (e & 64) x *= gelu_grad(load(p->dd->type, p->d->aux, aux_at));
    return x;
}

static void run_batch(cublasLtContext *h, const problem *p, float alpha, const void *A,
                      const void *B, float beta, const void *C, void *D)
{
    std::vector<float> af(p->m * p->k), bf(p->k * p->n), acc(p->m * p->n), colsum(p->m, 0.0f);
    gather(p->a, A, p->d->transa, p->m, p->k, af.data());
    gather(p->b, B, p->d->transb, p->k, p->n, bf.data());
    mgk_gemm(&h->cpu, acc.data(), (int64_t)p->n, af.data(), (int64_t)p->k, bf.data(),
             (int64_t)p->n, (int64_t)p->m, (int64_t)p->n, (int64_t)p->k, 0, 0, 1.0f, 0.0f);
    bias_grad_inputs(p, af.data(), bf.data());
    for (uint64_t j = 0; j < p->n; j++)
        for (uint64_t i = 0; i < p->m; i++) {
            float x = alpha * acc[i * p->n + j];
            if (beta != 0.0f) x += beta * load(p->c->type, C, elem_at(p->c, i, j));
            x = epilogue_value(p, x, i, j);
            store(p->dd->type, D, elem_at(p->dd, i, j), x);
            colsum[i] += load(p->dd->type, D, elem_at(p->dd, i, j));
        }
    if (p->d->epilogue == CUBLASLT_EPILOGUE_DGELU_BGRAD)
        for (uint64_t i = 0; i < p->m; i++) store(p->bias_type, p->d->bias, i, colsum[i]);
}

static void check_operands(const problem *p, const void *A, const void *B, const void *C,
                           float beta, const void *D)
{
    check_operand("A", A, span(p->a));
    check_operand("B", B, span(p->b));
    if (beta != 0.0f) check_operand("C", C, span(p->c));
    check_operand("D", D, span(p->dd));
    uint32_t e = p->d->epilogue;
    if (uses_bias(e))
        check_operand("bias", p->d->bias,
                      (e == CUBLASLT_EPILOGUE_BGRADB ? p->n : p->m) * type_size(p->bias_type));
    if (uses_aux(e)) {
        uint64_t outer = p->dd->order == CUBLASLT_ORDER_ROW ? p->m : p->n;
        uint64_t inner = p->dd->order == CUBLASLT_ORDER_ROW ? p->n : p->m;
        check_operand("aux", p->d->aux,
                      ((outer - 1) * (uint64_t)p->d->aux_ld + inner) * type_size(p->dd->type));
    }
}

/* Frees a descriptor of ours (checked by its magic). */
template <typename T, typename H> static cublasStatus_t destroy(H handle, uint32_t magic)
{
    T *x = reinterpret_cast<T *>(handle);
    if (!x || x->magic != magic) return CUBLAS_STATUS_INVALID_VALUE;
    x->magic = 0;
    delete x;
    return CUBLAS_STATUS_SUCCESS;
}

} /* namespace mgk_emu */

using namespace mgk_emu;

/* ---- handles and descriptors ------------------------------------------------------------ */

cublasStatus_t cublasLtCreate(cublasLtHandle_t *h)
{
    if (!h) return invalid("cublasLtCreate", "NULL handle pointer");
    cublasLtContext *c = new cublasLtContext();
    c->magic = HANDLE_MAGIC;
    if (mgk_ctx_init(&c->cpu, MGK_CPU_FAST, 0) != MG_OK) {
        delete c;
        return CUBLAS_STATUS_NOT_INITIALIZED;
    }
    *h = c;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtDestroy(cublasLtHandle_t h)
{
    if (!h || h->magic != HANDLE_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
    mgk_ctx_free(&h->cpu);
    h->magic = 0;
    delete h;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescCreate(cublasLtMatmulDesc_t *desc, cublasComputeType_t compute,
                                        cudaDataType_t scale)
{
    if (!desc) return invalid("cublasLtMatmulDescCreate", "NULL descriptor pointer");
    if (compute != CUBLAS_COMPUTE_32F)
        return refuse("cublasLtMatmulDescCreate", "compute type", compute);
    if (scale != CUDA_R_32F) return refuse("cublasLtMatmulDescCreate", "scale type", scale);
    lt_desc *d = new lt_desc{DESC_MAGIC, CUBLAS_OP_N, CUBLAS_OP_N, CUBLASLT_EPILOGUE_DEFAULT,
                             nullptr, -1, nullptr, 0};
    *desc = reinterpret_cast<cublasLtMatmulDesc_t>(d);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescDestroy(cublasLtMatmulDesc_t desc)
{
    return destroy<lt_desc>(desc, DESC_MAGIC);
}

/* Copies an attribute value of exactly `want` bytes. */
static bool attr_copy(void *dst, size_t want, const void *buf, size_t size)
{
    if (!buf || size != want) return false;
    memcpy(dst, buf, want);
    return true;
}

static cublasStatus_t desc_attr(lt_desc *d, cublasLtMatmulDescAttributes_t attr, const void *buf,
                                size_t size)
{
    const char *call = "cublasLtMatmulDescSetAttribute";
    bool ok;
    switch (attr) {
    case CUBLASLT_MATMUL_DESC_TRANSA: ok = attr_copy(&d->transa, 4, buf, size); break;
    case CUBLASLT_MATMUL_DESC_TRANSB: ok = attr_copy(&d->transb, 4, buf, size); break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE: ok = attr_copy(&d->epilogue, 4, buf, size); break;
    case CUBLASLT_MATMUL_DESC_BIAS_POINTER: ok = attr_copy(&d->bias, sizeof(void *), buf, size); break;
    case CUBLASLT_MATMUL_DESC_BIAS_DATA_TYPE: ok = attr_copy(&d->bias_type, 4, buf, size); break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_POINTER: ok = attr_copy(&d->aux, sizeof(void *), buf, size); break;
    case CUBLASLT_MATMUL_DESC_EPILOGUE_AUX_LD: ok = attr_copy(&d->aux_ld, 8, buf, size); break;
    default: return refuse(call, "matmul descriptor attribute", attr);
    }
    if (!ok) return invalid(call, "attribute value of the wrong size");
    if (d->transa > CUBLAS_OP_T || d->transb > CUBLAS_OP_T || d->transa < 0 || d->transb < 0)
        return refuse(call, "transpose operation (N and T only)", d->transa > 1 ? d->transa : d->transb);
    if (d->bias_type != -1 && !emu_type(d->bias_type)) return refuse(call, "bias data type", d->bias_type);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulDescSetAttribute(cublasLtMatmulDesc_t desc,
                                              cublasLtMatmulDescAttributes_t attr, const void *buf,
                                              size_t size)
{
    lt_desc *d = reinterpret_cast<lt_desc *>(desc);
    if (!d || d->magic != DESC_MAGIC)
        return invalid("cublasLtMatmulDescSetAttribute", "descriptor not created");
    return desc_attr(d, attr, buf, size);
}

cublasStatus_t cublasLtMatrixLayoutCreate(cublasLtMatrixLayout_t *layout, cudaDataType type,
                                          uint64_t rows, uint64_t cols, int64_t ld)
{
    const char *call = "cublasLtMatrixLayoutCreate";
    if (!layout) return invalid(call, "NULL layout pointer");
    if (!emu_type(type)) return refuse(call, "data type", type);
    lt_layout *l = new lt_layout{LAYOUT_MAGIC, type, rows, cols, ld, CUBLASLT_ORDER_COL, 1, 0};
    *layout = reinterpret_cast<cublasLtMatrixLayout_t>(l);
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatrixLayoutDestroy(cublasLtMatrixLayout_t layout)
{
    return destroy<lt_layout>(layout, LAYOUT_MAGIC);
}

cublasStatus_t cublasLtMatrixLayoutSetAttribute(cublasLtMatrixLayout_t layout,
                                                cublasLtMatrixLayoutAttribute_t attr,
                                                const void *buf, size_t size)
{
    const char *call = "cublasLtMatrixLayoutSetAttribute";
    lt_layout *l = reinterpret_cast<lt_layout *>(layout);
    if (!l || l->magic != LAYOUT_MAGIC) return invalid(call, "layout not created");
    bool ok;
    switch (attr) {
    case CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT: ok = attr_copy(&l->batch, 4, buf, size); break;
    case CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET: ok = attr_copy(&l->stride, 8, buf, size); break;
    case CUBLASLT_MATRIX_LAYOUT_ORDER: ok = attr_copy(&l->order, 4, buf, size); break;
    default: return refuse(call, "matrix layout attribute", attr);
    }
    if (!ok) return invalid(call, "attribute value of the wrong size");
    if (l->order != CUBLASLT_ORDER_COL && l->order != CUBLASLT_ORDER_ROW)
        return refuse(call, "matrix order (ROW and COL only)", l->order);
    if (l->batch < 1 || l->stride < 0) return invalid(call, "batch count < 1 or negative stride");
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceCreate(cublasLtMatmulPreference_t *pref)
{
    if (!pref) return invalid("cublasLtMatmulPreferenceCreate", "NULL preference pointer");
    *pref = reinterpret_cast<cublasLtMatmulPreference_t>(new lt_pref{PREF_MAGIC, 0});
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmulPreferenceDestroy(cublasLtMatmulPreference_t pref)
{
    return destroy<lt_pref>(pref, PREF_MAGIC);
}

cublasStatus_t cublasLtMatmulPreferenceSetAttribute(cublasLtMatmulPreference_t pref,
                                                    cublasLtMatmulPreferenceAttributes_t attr,
                                                    const void *buf, size_t size)
{
    const char *call = "cublasLtMatmulPreferenceSetAttribute";
    lt_pref *p = reinterpret_cast<lt_pref *>(pref);
    if (!p || p->magic != PREF_MAGIC) return invalid(call, "preference not created");
    if (attr != CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES)
        return refuse(call, "preference attribute", attr);
    return attr_copy(&p->max_workspace, 8, buf, size) ? CUBLAS_STATUS_SUCCESS
                                                      : invalid(call, "attribute value of the wrong size");
}

/* ---- heuristics and the product --------------------------------------------------------- */

static problem make_problem(cublasLtMatmulDesc_t desc, cublasLtMatrixLayout_t A,
                            cublasLtMatrixLayout_t B, cublasLtMatrixLayout_t C,
                            cublasLtMatrixLayout_t D)
{
    problem p = {};
    p.d = reinterpret_cast<const lt_desc *>(desc);
    p.a = reinterpret_cast<const lt_layout *>(A);
    p.b = reinterpret_cast<const lt_layout *>(B);
    p.c = reinterpret_cast<const lt_layout *>(C);
    p.dd = reinterpret_cast<const lt_layout *>(D);
    return p;
}

cublasStatus_t cublasLtMatmulAlgoGetHeuristic(cublasLtHandle_t h, cublasLtMatmulDesc_t desc,
                                              cublasLtMatrixLayout_t A, cublasLtMatrixLayout_t B,
                                              cublasLtMatrixLayout_t C, cublasLtMatrixLayout_t D,
                                              cublasLtMatmulPreference_t pref, int requested,
                                              cublasLtMatmulHeuristicResult_t results[],
                                              int *count)
{
    const char *call = "cublasLtMatmulAlgoGetHeuristic";
    if (!h || h->magic != HANDLE_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
    const lt_pref *p = reinterpret_cast<const lt_pref *>(pref);
    if (!p || p->magic != PREF_MAGIC || requested < 1 || !results || !count)
        return invalid(call, "preference, result array or count missing");
    *count = 0;
    problem pb = make_problem(desc, A, B, C, D);
    cublasStatus_t st = check_problem(call, &pb);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    memset(&results[0], 0, sizeof results[0]);
    results[0].state = CUBLAS_STATUS_SUCCESS;
    results[0].wavesCount = 1.0f;
    *count = 1;
    return CUBLAS_STATUS_SUCCESS;
}

cublasStatus_t cublasLtMatmul(cublasLtHandle_t h, cublasLtMatmulDesc_t desc, const void *alpha,
                              const void *A, cublasLtMatrixLayout_t Adesc, const void *B,
                              cublasLtMatrixLayout_t Bdesc, const void *beta, const void *C,
                              cublasLtMatrixLayout_t Cdesc, void *D, cublasLtMatrixLayout_t Ddesc,
                              const cublasLtMatmulAlgo_t *algo, void *workspace,
                              size_t workspace_bytes, cudaStream_t stream)
{
    const char *call = "cublasLtMatmul";
    (void)algo, (void)workspace, (void)workspace_bytes;
    if (!h || h->magic != HANDLE_MAGIC) return CUBLAS_STATUS_NOT_INITIALIZED;
    if (!alpha || !beta) return invalid(call, "alpha and beta are host pointers to floats");
    if (!stream_valid(stream)) return invalid(call, "unknown stream");
    problem p = make_problem(desc, Adesc, Bdesc, Cdesc, Ddesc);
    cublasStatus_t st = check_problem(call, &p);
    if (st != CUBLAS_STATUS_SUCCESS) return st;
    float al = *(const float *)alpha, be = *(const float *)beta;
    check_operands(&p, A, B, C, be, D);
    for (int i = 0; i < p.dd->batch; i++)
        run_batch(h, &p, al, (const char *)A + batch_offset(p.a, i),
                  (const char *)B + batch_offset(p.b, i), be, (const char *)C + batch_offset(p.c, i),
                  (char *)D + batch_offset(p.dd, i));
    return CUBLAS_STATUS_SUCCESS;
}

/* cublaslt_matmul.cc — cublasLtMatmulAlgoGetHeuristic and cublasLtMatmul of the shim
 * (cublaslt_emu.h): checks the problem against what the shim serves, gathers op(A) and op(B)
 * as fp32, multiplies on the CPU GEMM and applies the epilogue element by element.
 */
#include "cuda_emu/cublaslt_emu.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include <vector>

namespace mgk_emu {

static size_t type_size(int t) { return t == CUDA_R_32F ? 4 : 2; }

static float load(int t, const void *base, size_t i)
{
    if (t == CUDA_R_32F) return ((const float *)base)[i];
    if (t == CUDA_R_16F) return __half2float(((const __half *)base)[i]);
    return __bfloat162float(((const __nv_bfloat16 *)base)[i]);
}

static void store(int t, void *base, size_t i, float v)
{
    if (t == CUDA_R_32F) ((float *)base)[i] = v;
    else if (t == CUDA_R_16F) ((__half *)base)[i] = __float2half_rn(v);
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
    if (p->dd->type != CUDA_R_32F && p->dd->type != p->a->type)
        return refuse(call, "16-bit inputs with the other 16-bit output type", p->dd->type);
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

} /* namespace mgk_emu */

using namespace mgk_emu;

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
    stream_catch_up(stream);
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

/* cublaslt_desc.cc — cuBLASLt handles, matmul descriptors, matrix layouts and preferences
 * of the shim (cublaslt_emu.h): they hold the attributes cuda_portable.h lists and refuse the
 * others by name.
 */
#include "cuda_emu/cublaslt_emu.h"

#include <stdio.h>
#include <string.h>

namespace mgk_emu {

cublasStatus_t refuse(const char *call, const char *what, long long value)
{
    fprintf(stderr, "mgk-emu: %s: not emulated: %s %lld (kernels/cuda_emu/cublaslt_emu.h "
                    "serves cuda_portable.h's list)\n", call, what, value);
    return CUBLAS_STATUS_NOT_SUPPORTED;
}

cublasStatus_t invalid(const char *call, const char *what)
{
    fprintf(stderr, "mgk-emu: %s: %s\n", call, what);
    return CUBLAS_STATUS_INVALID_VALUE;
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

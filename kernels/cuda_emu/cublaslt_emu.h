/* cublaslt_emu.h — what the two files of the cuBLASLt shim share (cublaslt_desc.cc: handles
 * and descriptors; cublaslt_matmul.cc: the product). Not for kernels: they see NVIDIA's
 * cublasLt.h through cuda_emu.h.
 *
 * Contract of the shim (cuda_portable.h lists the calls it serves):
 *   - D = epilogue(alpha * op(A) op(B) + beta * C) per batch, as cuBLASLt defines it:
 *     column-major unless a layout says CUBLASLT_ORDER_ROW, op = N or T, A and B both
 *     CUDA_R_32F, both CUDA_R_16BF or both CUDA_R_16F, C and D of one type (CUDA_R_32F, or
 *     the inputs' 16-bit type), compute CUBLAS_COMPUTE_32F with CUDA_R_32F scales on the host.
 *     Products accumulate in fp32 (mgk_gemm of the fast CPU backend); 16-bit results are
 *     rounded to nearest even. beta == 0 never reads C; C may be D.
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
#ifndef MGK_CUBLASLT_EMU_H
#define MGK_CUBLASLT_EMU_H

#include "cuda_emu/emu_internal.h"

extern "C" {
#include "kernels.h"
}

/* Tags of our objects, checked on every use of a handle or descriptor. */
const uint32_t DESC_MAGIC = 0x6d67446du, LAYOUT_MAGIC = 0x6d674c6fu, PREF_MAGIC = 0x6d675072u,
               HANDLE_MAGIC = 0x6d674c74u;

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

/* "not emulated: WHAT VALUE" on stderr; returns CUBLAS_STATUS_NOT_SUPPORTED. */
cublasStatus_t refuse(const char *call, const char *what, long long value);
/* "CALL: WHAT" on stderr; returns CUBLAS_STATUS_INVALID_VALUE. */
cublasStatus_t invalid(const char *call, const char *what);
inline bool emu_type(int t) { return t == CUDA_R_32F || t == CUDA_R_16BF || t == CUDA_R_16F; }

} /* namespace mgk_emu */

#endif

/* cuda_internal.h — private to kernels/: the CUDA implementations behind kernels.h.
 *
 * Contract: for every op NAME of kernel_ops.h there is mgk_cuda_NAME with exactly the public
 * signature, on device pointers (kernels/cuda/NAME.cu, C linkage); kernels.c dispatches to it for
 * an MGK_CUDA context when built with MG_HAVE_CUDA (nvcc, or the host emulator of
 * kernels/cuda_emu/). Also the context hooks kernels.c calls for that backend. Included by
 * kernels.c (C) and by the .cu files (C++): the C declarations it pulls in get C linkage.
 */
#ifndef MG_KERNELS_CUDA_INTERNAL_H
#define MG_KERNELS_CUDA_INTERNAL_H

#include <math.h>
#include <stdint.h>

#ifndef MG_HAVE_OPENMP
#define MG_HAVE_OPENMP 0 /* (cpu_internal.h's OpenMP helpers; unused by the .cu files) */
#endif

#ifdef __cplusplus
extern "C" {
#endif

#include "../cpu/cpu_internal.h" /* kernel_ops.h, and the reference's scalar helpers the
                                     launchers share (mgk_adamw_coefs, mgk_rope_inv_freq) */

/* Creates k->cuda (stream, cuBLASLt handle, workspaces) on the current device. */
mg_status mgk_cuda_ctx_init(mg_kctx *k);
/* Grows k->scratch (device memory) to numel floats. */
mg_status mgk_cuda_ctx_reserve(mg_kctx *k, int64_t numel);
/* Releases the scratch and k->cuda. */
void mgk_cuda_ctx_free(mg_kctx *k);
/* The CUDA attention saves, per (b, h, t), the log-sum-exp and a copy of the output row; its
 * backward needs one float of scratch per (b, h, t). */
int64_t mgk_cuda_attn_saved_numel(const mgk_attn_dims *d);
int64_t mgk_cuda_attn_scratch_numel(const mgk_attn_dims *d);

#define MGK_DECLARE_CUDA(ret, name, params) ret mgk_cuda_##name params;
MGK_OPS(MGK_DECLARE_CUDA)
#undef MGK_DECLARE_CUDA

#ifdef __cplusplus
}
#endif

#endif

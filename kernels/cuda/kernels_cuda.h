/* kernels_cuda.h — what the CUDA backend offers beyond kernels.h (C API, MG_HAVE_CUDA builds:
 * nvcc or the host emulator): device memory, synchronisation and timing on a context's
 * stream, the device's identity, and the bf16 variants of the ops the GPU training path runs.
 *
 * Contract:
 *   - Every tensor pointer is device memory (mgk_cuda_alloc). Calls are asynchronous on the
 *     context's stream except mgk_cuda_upload/download (synchronous, device-wide) and
 *     mgk_cuda_sync; a failed kernel launch or an asynchronous device error is a bug or a dead
 *     device and aborts with file:line (kernels never return errors).
 *   - bf16 variants (suffix _bf16) keep the kernels.h argument order and meaning with this
 *     type rule: activations and parameters are bf16 (mgk_bf16: the 16 bits of an
 *     __nv_bfloat16), parameter gradients and saved statistics (mean, rstd, lse, attention
 *     saves) are fp32; arithmetic is fp32 and each bf16 result is rounded once (nearest-even).
 *     Backward functions add into their gradients as in kernels.h.
 */
#ifndef MG_KERNELS_CUDA_H
#define MG_KERNELS_CUDA_H

#include <stddef.h>
#include <stdint.h>

#include "kernels.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef uint16_t mgk_bf16;

/* ---- device memory and timing ------------------------------------------------------------ */

/* Device memory of bytes (> 0); NULL with the message set on failure. */
void *mgk_cuda_alloc(size_t bytes);
void mgk_cuda_free(void *p); /* accepts NULL */
/* Synchronous copies host -> device and device -> host. */
mg_status mgk_cuda_upload(void *dst, const void *src, size_t bytes);
mg_status mgk_cuda_download(void *dst, const void *src, size_t bytes);
/* Waits for everything queued on k's stream; reports an asynchronous failure. */
mg_status mgk_cuda_sync(const mg_kctx *k);
/* Runs fn(arg) reps times on k's stream between two events; *ms = mean milliseconds per run. */
mg_status mgk_cuda_time(const mg_kctx *k, void (*fn)(void *arg), void *arg, int reps, double *ms);
/* Number of devices (0 when there is none or no driver). */
int mgk_cuda_device_count(void);
/* The current device's name, compute capability and multiprocessor count. */
mg_status mgk_cuda_device_info(char *name, size_t name_len, int *cc_major, int *cc_minor,
                               int *num_sms);

#ifdef __cplusplus
}
#endif

#endif

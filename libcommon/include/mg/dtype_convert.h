/* mg/dtype_convert.h — element type conversion between F32, F64, BF16 and F16 arrays
 * (raw little-endian data, as stored by safetensors and torch.save).
 *
 * Contract (the numbers are torch's: for every non-NaN input the result is bit for bit what
 * torch 2.x gives for tensor.to(dtype) on CPU; tests/interop/test_dtype_convert.py checks it):
 *   - Narrowing rounds to nearest, ties to even (IEEE 754 roundTiesToEven). Values beyond the
 *     largest finite number round to Inf exactly as RNE says (F16: |x| >= 65520 -> Inf; BF16:
 *     |x| >= 0x1.ffp127 -> Inf). Subnormal results are exact: F16 subnormals and gradual
 *     underflow are rounded like any other value, F32 subnormals stay subnormal in BF16 (no
 *     flush to zero anywhere). Signed zeros and infinities keep their sign.
 *   - F64 -> BF16 and F64 -> F16 go through F32 (round to F32 first, then to the target), as
 *     torch does. This is a double rounding: e.g. 1 + 2^-8 + 2^-30 gives BF16 1.0 here and in
 *     torch, where a correctly rounded conversion gives 1.0078125.
 *   - BF16 <-> F16 go through F32, which holds both exactly: one rounding.
 *   - Widening (BF16/F16 -> F32/F64, F32 -> F64) is exact.
 *   - NaN stays NaN with its sign; the result of a narrowing or of a widening other than
 *     BF16 -> F32 is a quiet NaN keeping the top bits of the payload (the quiet bit is set,
 *     the low payload bits are dropped or zero-filled), which is what x86 and ARM hardware
 *     conversions give. BF16 -> F32 is a plain 16-bit shift (a signalling NaN stays
 *     signalling), like torch. Where torch's own NaN bits depend on the CPU path (F32->BF16
 *     gives 0xFFFF, F16->BF16 0x7FC0, F64->BF16 and F16->F32 differ between vector lanes and
 *     the scalar tail) we keep the rule above; everywhere else the NaN bits match torch too.
 *   - Results do not depend on the number of threads or the work split. The fast paths
 *     assume the default floating-point environment (round to nearest; F32 <-> F64 also
 *     FTZ/DAZ off, which nothing in mgtools changes); the reference functions use integer
 *     arithmetic only and depend on nothing.
 *   - Pointers need no alignment. dst and src must not overlap, except dst == src for an
 *     identity conversion (which is then a no-op).
 *   - The host must be little-endian (checked at compile time).
 */
#ifndef MG_DTYPE_CONVERT_H
#define MG_DTYPE_CONVERT_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"
#include "mg/tensor.h"

/* --- Scalar reference conversions (the definition of the results above). BF16 and F16
 * values are their 16-bit patterns. --- */
uint16_t mg_f32_to_bf16(float x);
uint16_t mg_f32_to_f16(float x);
float mg_bf16_to_f32(uint16_t h);
float mg_f16_to_f32(uint16_t h);
float mg_f64_to_f32(double x);  /* RNE; NaN rule above, independent of the hardware */
double mg_f32_to_f64(float x);  /* exact; NaN quieted, payload kept */
uint16_t mg_f64_to_bf16(double x); /* == mg_f32_to_bf16(mg_f64_to_f32(x)) */
uint16_t mg_f64_to_f16(double x);  /* == mg_f32_to_f16(mg_f64_to_f32(x)) */

/* 1 if mg_dtype_convert supports converting src_type to dst_type: any pair of F32, F64,
 * BF16, F16, and the identity (a copy) for every valid type; 0 otherwise. */
int mg_dtype_convert_supported(mg_tdtype dst_type, mg_tdtype src_type);

/* Converts n elements of src (src_type) into dst (dst_type), on the calling thread.
 * @return MG_OK; MG_ERR_UNSUPPORTED ("cannot convert I64 to BF16") for a pair that
 *         mg_dtype_convert_supported() rejects (integer <-> float, F8, BOOL, ...), with dst
 *         untouched; MG_ERR_ARG for NULL pointers with n > 0. */
mg_status mg_dtype_convert(void *dst, mg_tdtype dst_type, const void *src, mg_tdtype src_type,
                           size_t n);

/* The part ith of nth (0 <= ith < nth) of the same conversion: contiguous ranges of whole
 * 64-element blocks, so that nth callers with ith = 0..nth-1 on any threads together convert
 * all n elements, each byte written by exactly one of them. Same returns as mg_dtype_convert
 * (MG_ERR_ARG also for a bad ith/nth). */
mg_status mg_dtype_convert_part(void *dst, mg_tdtype dst_type, const void *src,
                                mg_tdtype src_type, size_t n, int ith, int nth);

/* mg_dtype_convert on nthreads OpenMP threads (nthreads <= 0: OpenMP's default), each doing
 * one mg_dtype_convert_part. Small arrays (under 64 Ki elements) and builds without OpenMP
 * run on the calling thread. Same returns as mg_dtype_convert. */
mg_status mg_dtype_convert_parallel(void *dst, mg_tdtype dst_type, const void *src,
                                    mg_tdtype src_type, size_t n, int nthreads);

#endif /* MG_DTYPE_CONVERT_H */

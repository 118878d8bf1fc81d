/* nccl_reduce.cc — the element types and reduction operators of the NCCL host shim
 * (nccl_emu_internal.h): one pass over the ranks' contributions in rank order.
 *
 * NCCL on a GPU reduces in the order its algorithm (ring, tree, NVLS, ...) and channel split
 * dictate and rounds fp16 / bf16 after every addition; here the order is always rank order,
 * ((x0 + x1) + x2) ..., accumulated in fp32 for fp16, bf16 and fp32 (fp64 for fp64) and rounded
 * once: the same bits as comm_mpi.c's sums for fp32 and fp64, and bf16 sums as exact as fp32
 * accumulation makes them.
 */
#include "nccl_emu/nccl_emu_internal.h"

#include <stdint.h>

#include <cuda_bf16.h>
#include <cuda_fp16.h>

namespace mgk_nccl {

static float widen(__half x) { return __half2float(x); }
static float widen(__nv_bfloat16 x) { return __bfloat162float(x); }
static float widen(float x) { return x; }
static double widen(double x) { return x; }
static void narrow(__half *d, float a) { *d = __float2half_rn(a); }
static void narrow(__nv_bfloat16 *d, float a) { *d = __float2bfloat16_rn(a); }
static void narrow(float *d, float a) { *d = a; }
static void narrow(double *d, double a) { *d = a; }

template <typename A> static A apply(ncclRedOp_t op, A acc, A x)
{
    switch (op) {
    case ncclProd: return acc * x;
    case ncclMax: return x > acc ? x : acc;
    case ncclMin: return x < acc ? x : acc;
    default: return acc + x; /* ncclSum, ncclAvg (inputs pre-multiplied) */
    }
}

template <typename T>
static void reduce_float(T *dst, const T *const *src, int p, size_t n, ncclRedOp_t op)
{
    using A = decltype(widen(T()));
    const A scale = (A)1 / (A)p;
    for (size_t i = 0; i < n; i++) {
        A acc = widen(src[0][i]);
        if (op == ncclAvg) acc *= scale;
        for (int r = 1; r < p; r++) {
            A x = widen(src[r][i]);
            if (op == ncclAvg) x *= scale;
            acc = apply(op, acc, x);
        }
        narrow(&dst[i], acc);
    }
}

/* Sums and products wrap modulo 2^bits, as the GPU's integer units do. */
template <typename T>
static void reduce_int(T *dst, const T *const *src, int p, size_t n, ncclRedOp_t op)
{
    for (size_t i = 0; i < n; i++) {
        T acc = src[0][i];
        for (int r = 1; r < p; r++) {
            T x = src[r][i];
            if (op == ncclMax || op == ncclMin) acc = apply(op, acc, x);
            else if (op == ncclProd) acc = (T)((uint64_t)acc * (uint64_t)x);
            else acc = (T)((uint64_t)acc + (uint64_t)x);
        }
        dst[i] = op == ncclAvg ? (T)(acc / (T)p) : acc;
    }
}

#define CAST(T) (T *)dst, (const T *const *)src, p, n, op
void reduce(void *dst, const void *const *src, int p, size_t n, ncclDataType_t t,
            ncclRedOp_t op)
{
    switch (t) {
    case ncclInt8: reduce_int(CAST(int8_t)); break;
    case ncclUint8: reduce_int(CAST(uint8_t)); break;
    case ncclInt32: reduce_int(CAST(int32_t)); break;
    case ncclUint32: reduce_int(CAST(uint32_t)); break;
    case ncclInt64: reduce_int(CAST(int64_t)); break;
    case ncclUint64: reduce_int(CAST(uint64_t)); break;
    case ncclFloat16: reduce_float(CAST(__half)); break;
    case ncclFloat32: reduce_float(CAST(float)); break;
    case ncclFloat64: reduce_float(CAST(double)); break;
    case ncclBfloat16: reduce_float(CAST(__nv_bfloat16)); break;
    default: break; /* check_type_op refused it */
    }
}
#undef CAST

size_t type_size(ncclDataType_t t)
{
    switch (t) {
    case ncclInt8: case ncclUint8: return 1;
    case ncclFloat16: case ncclBfloat16: return 2;
    case ncclInt32: case ncclUint32: case ncclFloat32: return 4;
    case ncclInt64: case ncclUint64: case ncclFloat64: return 8;
    default: return 0;
    }
}

const char *type_name(ncclDataType_t t)
{
    static const char *const names[] = {"ncclInt8",    "ncclUint8",   "ncclInt32",
                                        "ncclUint32",  "ncclInt64",   "ncclUint64",
                                        "ncclFloat16", "ncclFloat32", "ncclFloat64",
                                        "ncclBfloat16", "ncclFloat8e4m3", "ncclFloat8e5m2"};
    return (int)t >= 0 && (int)t < (int)(sizeof names / sizeof names[0]) ? names[t] : "unknown";
}

ncclResult_t check_type_op(const char *call, ncclDataType_t t, ncclRedOp_t op, bool reduces)
{
    if (!type_size(t))
        return fail(ncclInvalidArgument, call, "data type %d (%s) is not emulated", (int)t,
                    type_name(t));
    if (reduces && ((int)op < 0 || op >= ncclNumOps))
        return fail(ncclInvalidArgument, call, "reduction operator %d is not emulated (only "
                    "ncclSum, ncclProd, ncclMax, ncclMin, ncclAvg)", (int)op);
    return ncclSuccess;
}

} /* namespace mgk_nccl */

/* emu_device.h — device functions of the emulated CUDA subset: atomics, math intrinsics,
 * bit casts, min/max and __ldg. Included by cuda_emu.h only.
 *
 * Contract: blocks run one at a time on one host thread and fibers switch only at
 * synchronisation points, so an atomic is a plain read-modify-write that returns the old
 * value. Float atomics set mgk_emu::g_float_atomics (see emu_control.h). Fast-math
 * intrinsics (__expf, __fdividef, ...) are computed at full precision: kernels state
 * tolerances that cover the GPU's approximations.
 */
#ifndef MGK_EMU_DEVICE_H
#define MGK_EMU_DEVICE_H

/* ---- atomics (the contract's list, with CUDA's signatures) ------------------------------ */

inline int atomicAdd(int *p, int v) { int o = *p; *p = o + v; return o; }
inline unsigned atomicAdd(unsigned *p, unsigned v) { unsigned o = *p; *p = o + v; return o; }
inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v)
{
    unsigned long long o = *p;
    *p = o + v;
    return o;
}
inline float atomicAdd(float *p, float v)
{
    ::mgk_emu::g_float_atomics = true;
    float o = *p;
    *p = o + v;
    return o;
}
inline int atomicMax(int *p, int v) { int o = *p; *p = o > v ? o : v; return o; }
inline unsigned atomicMax(unsigned *p, unsigned v) { unsigned o = *p; *p = o > v ? o : v; return o; }
inline int atomicMin(int *p, int v) { int o = *p; *p = o < v ? o : v; return o; }
inline unsigned atomicMin(unsigned *p, unsigned v) { unsigned o = *p; *p = o < v ? o : v; return o; }
inline int atomicCAS(int *p, int cmp, int v) { int o = *p; if (o == cmp) *p = v; return o; }
inline unsigned atomicCAS(unsigned *p, unsigned cmp, unsigned v)
{
    unsigned o = *p;
    if (o == cmp) *p = v;
    return o;
}
inline unsigned long long atomicCAS(unsigned long long *p, unsigned long long cmp,
                                    unsigned long long v)
{
    unsigned long long o = *p;
    if (o == cmp) *p = v;
    return o;
}
inline int atomicExch(int *p, int v) { int o = *p; *p = v; return o; }
inline unsigned atomicExch(unsigned *p, unsigned v) { unsigned o = *p; *p = v; return o; }
inline unsigned long long atomicExch(unsigned long long *p, unsigned long long v)
{
    unsigned long long o = *p;
    *p = v;
    return o;
}
inline float atomicExch(float *p, float v) { float o = *p; *p = v; return o; }

/* ---- math ------------------------------------------------------------------------------- */

/* glibc's math.h already declares __expf as its own internal function: a macro, not an
 * overload. */
#define __expf(x) ::expf(x)
#define __logf(x) ::logf(x)
#define __fdividef(a, b) ((a) / (b))
inline float rsqrtf(float x) { return 1.0f / ::sqrtf(x); }
inline float __saturatef(float x) { return x < 0.0f ? 0.0f : (x > 1.0f ? 1.0f : x); }

inline int min(int a, int b) { return a < b ? a : b; }
inline int max(int a, int b) { return a > b ? a : b; }
inline unsigned min(unsigned a, unsigned b) { return a < b ? a : b; }
inline unsigned max(unsigned a, unsigned b) { return a > b ? a : b; }
inline long min(long a, long b) { return a < b ? a : b; }
inline long max(long a, long b) { return a > b ? a : b; }
inline unsigned long min(unsigned long a, unsigned long b) { return a < b ? a : b; }
inline unsigned long max(unsigned long a, unsigned long b) { return a > b ? a : b; }
inline long long min(long long a, long long b) { return a < b ? a : b; }
inline long long max(long long a, long long b) { return a > b ? a : b; }
inline unsigned long long min(unsigned long long a, unsigned long long b) { return a < b ? a : b; }
inline unsigned long long max(unsigned long long a, unsigned long long b) { return a > b ? a : b; }
inline float min(float a, float b) { return ::fminf(a, b); }
inline float max(float a, float b) { return ::fmaxf(a, b); }
inline double min(double a, double b) { return ::fmin(a, b); }
inline double max(double a, double b) { return ::fmax(a, b); }

inline int __float_as_int(float x) { return ::mgk_emu::from_bits<int>(::mgk_emu::to_bits(x)); }
inline unsigned __float_as_uint(float x) { return ::mgk_emu::from_bits<unsigned>(::mgk_emu::to_bits(x)); }
inline float __int_as_float(int x) { return ::mgk_emu::from_bits<float>(::mgk_emu::to_bits(x)); }
inline float __uint_as_float(unsigned x) { return ::mgk_emu::from_bits<float>(::mgk_emu::to_bits(x)); }
inline int __popc(unsigned x) { return __builtin_popcount(x); }
inline int __clz(int x) { return x == 0 ? 32 : __builtin_clz((unsigned)x); }
inline int __ffs(int x) { return __builtin_ffs(x); }

template <typename T> inline T __ldg(const T *p) { return *p; }

#endif

/* act.cu — GeLU (exact erf and tanh approximation) and SwiGLU, forward and backward
 * (kernels.h semantics), fp32 and bf16, in fp32 arithmetic (erff, tanhf, expf).
 *
 * Kernels: GeLU is a grid-stride loop (block 256, at most 8192 blocks) over 16-byte vectors on
 * aligned tensors (the n % 4 or n % 8 last elements one per thread); SwiGLU is a rows x F
 * launch (block 256 over the F columns, blockIdx.y over rows), or, when F is a multiple of 16
 * bytes and the tensors are aligned, block 64 over 16-byte vectors of columns and at most 4096
 * row blocks striding over the rows. One pass over the data each.
 */
#include "cuda_portable.h"

#include "cuda_common.cuh"

#define THREADS 256
#define SQRT_2_OVER_PI 0.7978845608028654f
#define GELU_C 0.044715f
#define INV_SQRT_2 0.7071067811865476f
#define INV_SQRT_2PI 0.3989422804014327f

static __device__ inline float gelu_value(float x, int tanh_kind)
{
    if (tanh_kind) return 0.5f * x * (1.0f + tanhf(SQRT_2_OVER_PI * (x + GELU_C * x * x * x)));
    return 0.5f * x * (1.0f + erff(x * INV_SQRT_2));
}

static __device__ inline float gelu_grad(float x, int tanh_kind)
{
    if (tanh_kind) {
        float t = tanhf(SQRT_2_OVER_PI * (x + GELU_C * x * x * x));
        float du = SQRT_2_OVER_PI * (1.0f + 3.0f * GELU_C * x * x);
        return 0.5f * (1.0f + t) + 0.5f * x * (1.0f - t * t) * du;
    }
    return 0.5f * (1.0f + erff(x * INV_SQRT_2)) + x * expf(-0.5f * x * x) * INV_SQRT_2PI;
}

/* W elements at a time (16-byte vectors when W > 1), then the n % W last ones. */
template <typename T, int W>
static __global__ void gelu_fwd_kernel(T *out, const T *inp, int64_t n, int tanh_kind)
{
    MGK_FOR_EACH(v, n / W) {
        float x[W];
        mgk_ldw<T, W>(x, inp + v * W);
        for (int e = 0; e < W; e++) x[e] = gelu_value(x[e], tanh_kind);
        mgk_stw<T, W>(out + v * W, x);
    }
    MGK_FOR_EACH(i, n % W) {
        int64_t j = n / W * W + i;
        mgk_st(out + j, gelu_value(mgk_ld(inp + j), tanh_kind));
    }
}

template <typename T, int W>
static __global__ void gelu_bwd_kernel(T *dinp, const T *dout, const T *inp, int64_t n,
                                       int tanh_kind)
{
    MGK_FOR_EACH(v, n / W) {
        float x[W], dy[W], dx[W];
        mgk_ldw<T, W>(x, inp + v * W);
        mgk_ldw<T, W>(dy, dout + v * W);
        mgk_ldw<T, W>(dx, dinp + v * W);
        for (int e = 0; e < W; e++) dx[e] += gelu_grad(x[e], tanh_kind) * dy[e];
        mgk_stw<T, W>(dinp + v * W, dx);
    }
    MGK_FOR_EACH(i, n % W) {
        int64_t j = n / W * W + i;
        float g = gelu_grad(mgk_ld(inp + j), tanh_kind) * mgk_ld(dout + j);
        mgk_st(dinp + j, mgk_ld(dinp + j) + g);
    }
}

template <typename T, int W>
static __global__ void swiglu_fwd_kernel(T *out, const T *inp, int64_t N, int64_t F)
{
    int64_t j = MGK_COL() * W;
    if (j < F) {
        MGK_FOR_ROWS(r, N) {
            float g[W], up[W];
            mgk_ldw<T, W>(g, inp + r * 2 * F + j);
            mgk_ldw<T, W>(up, inp + r * 2 * F + F + j);
            for (int e = 0; e < W; e++) g[e] = g[e] / (1.0f + expf(-g[e])) * up[e];
            mgk_stw<T, W>(out + r * F + j, g);
        }
    }
}

/* d gate = dout * up * s * (1 + g (1 - s)), d up = dout * g * s, with s = sigmoid(g). */
template <typename T, int W>
static __global__ void swiglu_bwd_kernel(T *dinp, const T *dout, const T *inp, int64_t N,
                                         int64_t F)
{
    int64_t j = MGK_COL() * W;
    if (j < F) {
        MGK_FOR_ROWS(r, N) {
            int64_t o = r * 2 * F + j;
            float g[W], up[W], dy[W], dg[W], du[W];
            mgk_ldw<T, W>(g, inp + o);
            mgk_ldw<T, W>(up, inp + o + F);
            mgk_ldw<T, W>(dy, dout + r * F + j);
            mgk_ldw<T, W>(dg, dinp + o);
            mgk_ldw<T, W>(du, dinp + o + F);
            for (int e = 0; e < W; e++) {
                float s = 1.0f / (1.0f + expf(-g[e]));
                dg[e] += dy[e] * up[e] * s * (1.0f + g[e] * (1.0f - s));
                du[e] += dy[e] * g[e] * s;
            }
            mgk_stw<T, W>(dinp + o, dg);
            mgk_stw<T, W>(dinp + o + F, du);
        }
    }
}

/* Forward (dout == NULL): out = gelu(inp); backward: out += gelu'(inp) * dout. */
template <typename T>
static void gelu_launch(const mg_kctx *k, T *out, const T *dout, const T *inp, int64_t n,
                        mgk_gelu_kind kind)
{
    if (n <= 0) return;
    const int E = vec16<T>::N;
    int tk = kind == MGK_GELU_TANH, vec = mgk_aligned16(out) && mgk_aligned16(dout) &&
                                          mgk_aligned16(inp);
    unsigned grid = vec ? mgk_grid(n / E + 1, THREADS, MGK_GRID_CAP)
                        : mgk_grid(n, THREADS, MGK_GRID_CAP);
    if (dout && vec)
        MGK_LAUNCH((gelu_bwd_kernel<T, E>), grid, THREADS, 0, mgk_stream(k), out, dout, inp, n,
                   tk);
    else if (dout)
        MGK_LAUNCH((gelu_bwd_kernel<T, 1>), grid, THREADS, 0, mgk_stream(k), out, dout, inp, n,
                   tk);
    else if (vec)
        MGK_LAUNCH((gelu_fwd_kernel<T, E>), grid, THREADS, 0, mgk_stream(k), out, inp, n, tk);
    else
        MGK_LAUNCH((gelu_fwd_kernel<T, 1>), grid, THREADS, 0, mgk_stream(k), out, inp, n, tk);
    MGK_LAUNCH_CHECK();
}

template <typename T>
static void swiglu_fwd(const mg_kctx *k, T *out, const T *inp, int64_t N, int64_t F)
{
    if (N <= 0 || F <= 0) return;
    const int E = vec16<T>::N;
    if (mgk_rows_vec_ok(F, E, out, inp))
        MGK_LAUNCH((swiglu_fwd_kernel<T, E>),
                   mgk_grid_rows_cap(N, F / E, MGK_VTHREADS, MGK_VROWS_CAP), MGK_VTHREADS, 0,
                   mgk_stream(k), out, inp, N, F);
    else
        MGK_LAUNCH((swiglu_fwd_kernel<T, 1>), mgk_grid_rows(N, F, THREADS), THREADS, 0,
                   mgk_stream(k), out, inp, N, F);
    MGK_LAUNCH_CHECK();
}

template <typename T>
static void swiglu_bwd(const mg_kctx *k, T *dinp, const T *dout, const T *inp, int64_t N,
                       int64_t F)
{
    if (N <= 0 || F <= 0) return;
    const int E = vec16<T>::N;
    if (mgk_rows_vec_ok(F, E, dinp, dout, inp))
        MGK_LAUNCH((swiglu_bwd_kernel<T, E>),
                   mgk_grid_rows_cap(N, F / E, MGK_VTHREADS, MGK_VROWS_CAP), MGK_VTHREADS, 0,
                   mgk_stream(k), dinp, dout, inp, N, F);
    else
        MGK_LAUNCH((swiglu_bwd_kernel<T, 1>), mgk_grid_rows(N, F, THREADS), THREADS, 0,
                   mgk_stream(k), dinp, dout, inp, N, F);
    MGK_LAUNCH_CHECK();
}

extern "C" void mgk_cuda_gelu_fwd(const mg_kctx *k, float *out, const float *inp, int64_t n,
                                  mgk_gelu_kind kind)
{
    gelu_launch(k, out, (const float *)NULL, inp, n, kind);
}

extern "C" void mgk_cuda_gelu_bwd(const mg_kctx *k, float *dinp, const float *dout,
                                  const float *inp, int64_t n, mgk_gelu_kind kind)
{
    gelu_launch(k, dinp, dout, inp, n, kind);
}

extern "C" void mgk_cuda_swiglu_fwd(const mg_kctx *k, float *out, const float *inp, int64_t N,
                                    int64_t F)
{
    swiglu_fwd(k, out, inp, N, F);
}

extern "C" void mgk_cuda_swiglu_bwd(const mg_kctx *k, float *dinp, const float *dout,
                                    const float *inp, int64_t N, int64_t F)
{
    swiglu_bwd(k, dinp, dout, inp, N, F);
}

extern "C" void mgk_cuda_gelu_fwd_h16(const mg_kctx *k, mgk_h16 *out, const mgk_h16 *inp,
                                      int64_t n, mgk_gelu_kind kind)
{
    MGK_BY_HALF(k, T16,
                gelu_launch(k, mgk_as<T16>(out), (const T16 *)NULL, mgk_as<T16>(inp), n, kind));
}

extern "C" void mgk_cuda_gelu_bwd_h16(const mg_kctx *k, mgk_h16 *dinp, const mgk_h16 *dout,
                                      const mgk_h16 *inp, int64_t n, mgk_gelu_kind kind)
{
    MGK_BY_HALF(k, T16,
                gelu_launch(k, mgk_as<T16>(dinp), mgk_as<T16>(dout), mgk_as<T16>(inp), n, kind));
}

extern "C" void mgk_cuda_swiglu_fwd_h16(const mg_kctx *k, mgk_h16 *out, const mgk_h16 *inp,
                                        int64_t N, int64_t F)
{
    MGK_BY_HALF(k, T16, swiglu_fwd(k, mgk_as<T16>(out), mgk_as<T16>(inp), N, F));
}

extern "C" void mgk_cuda_swiglu_bwd_h16(const mg_kctx *k, mgk_h16 *dinp, const mgk_h16 *dout,
                                        const mgk_h16 *inp, int64_t N, int64_t F)
{
    MGK_BY_HALF(k, T16,
                swiglu_bwd(k, mgk_as<T16>(dinp), mgk_as<T16>(dout), mgk_as<T16>(inp), N, F));
}

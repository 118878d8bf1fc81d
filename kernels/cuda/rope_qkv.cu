/* rope_qkv.cu — rotary position embedding (Megatron's rotate-half) forward and backward, and
 * the fused-QKV layout split / merge (kernels.h semantics), fp32 and bf16.
 *
 * RoPE: one thread per (position, pair i < rot_dim/2) plus one per passed-through feature, over
 * the H heads of the position: a B*T x (rot_dim/2 + D - rot_dim) launch. inv_freq comes from
 * the reference's mgk_rope_inv_freq on the host (by value, at most ROPE_MAX_HALF floats), the
 * angle is pos * inv_freq in fp32 and cos/sin are taken in double and rounded, as the
 * reference does: fp32 results equal it bitwise (up to the device's double cos/sin ulp).
 * QKV: a rows x (Hq + 2 Hkv) D launch; each thread moves one feature, or 16 bytes (4 fp32 or
 * 8 bf16 features) when a head's row is a multiple of 16 bytes and the tensors are aligned.
 */
#include "cuda_portable.h"

#include "cuda_common.cuh"

#define THREADS 256
#define ROPE_MAX_HALF 256

struct rope_freqs {
    float f[ROPE_MAX_HALF];
};

/* dir = +1: y = R x; dir = -1: y += R^T x. One thread per (b t, pair j or passed-through
 * feature) over the H heads of the position: the angle's double cos and sin once per head
 * vector group, not per head. */
template <typename T>
static __global__ void rope_kernel(T *y, const T *x, const int32_t *pos, int64_t rows,
                                   int64_t T_, int64_t H, int64_t D, int64_t nhalf,
                                   const rope_freqs fr, int dir)
{
    int64_t j = MGK_COL(), rot = 2 * nhalf;
    if (j < nhalf + D - rot) {
        MGK_FOR_ROWS(bt, rows) {
            if (j < nhalf) {
                float p = (float)(pos ? pos[bt] : bt % T_), ang = p * fr.f[j];
                float c = (float)cos((double)ang), s = (float)dir * (float)sin((double)ang);
                for (int64_t h = 0; h < H; h++) {
                    int64_t o = (bt * H + h) * D;
                    float x1 = mgk_ld(x + o + j), x2 = mgk_ld(x + o + j + nhalf);
                    float y1 = x1 * c - x2 * s, y2 = x2 * c + x1 * s;
                    if (dir < 0) y1 += mgk_ld(y + o + j), y2 += mgk_ld(y + o + j + nhalf);
                    mgk_st(y + o + j, y1);
                    mgk_st(y + o + j + nhalf, y2);
                }
            } else {
                int64_t i = rot + (j - nhalf);
                for (int64_t h = 0; h < H; h++) {
                    int64_t o = (bt * H + h) * D;
                    float v = mgk_ld(x + o + i);
                    mgk_st(y + o + i, dir < 0 ? mgk_ld(y + o + i) + v : v);
                }
            }
        }
    }
}

template <typename T>
static void rope_launch(const mg_kctx *k, T *y, const T *x, const int32_t *pos, int64_t B,
                        int64_t T_, int64_t H, int64_t D, int64_t rot_dim, float base, int dir)
{
    int64_t nhalf = rot_dim / 2, rows = B * T_, cols = nhalf + D - rot_dim;
    MG_ASSERT(rot_dim % 2 == 0 && rot_dim <= D && nhalf <= ROPE_MAX_HALF);
    if (rows <= 0 || H <= 0 || cols <= 0) return;
    rope_freqs fr;
    for (int64_t i = 0; i < nhalf; i++) fr.f[i] = mgk_rope_inv_freq(i, rot_dim, base);
    /* blocks of 64 threads: a row of D = 128 (64 pairs) is one block */
    MGK_LAUNCH(rope_kernel<T>, mgk_grid_rows(rows, cols, 64), 64, 0, mgk_stream(k), y, x, pos,
               rows, T_, H, D, nhalf, fr, dir);
    MGK_LAUNCH_CHECK();
}

/* Where feature o (< (rep + 2) D) of fused group g lives: 0 = q, 1 = k, 2 = v, at *off of row
 * r of that tensor. */
static __device__ inline int qkv_locate(int64_t g, int64_t o, int64_t rep, int64_t D,
                                        int64_t *off)
{
    if (o < rep * D) return *off = g * rep * D + o, 0;
    if (o < (rep + 1) * D) return *off = g * D + (o - rep * D), 1;
    return *off = g * D + (o - (rep + 1) * D), 2;
}

template <typename T>
static __global__ void qkv_split_kernel(T *q, T *kk, T *v, const T *qkv, int64_t N, int64_t Hq,
                                        int64_t Hkv, int64_t D)
{
    int64_t f = MGK_COL(), rep = Hq / Hkv, gs = (rep + 2) * D, off;
    if (f < Hkv * gs) {
        int which = qkv_locate(f / gs, f % gs, rep, D, &off);
        MGK_FOR_ROWS(r, N) {
            T x = qkv[r * Hkv * gs + f];
            if (which == 0) q[r * Hq * D + off] = x;
            else if (which == 1) kk[r * Hkv * D + off] = x;
            else v[r * Hkv * D + off] = x;
        }
    }
}

template <typename T>
static __global__ void qkv_merge_kernel(T *qkv, const T *q, const T *kk, const T *v, int64_t N,
                                        int64_t Hq, int64_t Hkv, int64_t D)
{
    int64_t f = MGK_COL(), rep = Hq / Hkv, gs = (rep + 2) * D, off;
    if (f < Hkv * gs) {
        int which = qkv_locate(f / gs, f % gs, rep, D, &off);
        MGK_FOR_ROWS(r, N) {
            const T *src = which == 0 ? q + r * Hq * D : (which == 1 ? kk : v) + r * Hkv * D;
            qkv[r * Hkv * gs + f] = src[off];
        }
    }
}

/* The copies can move 16-byte units: a head's row_bytes and every tensor 16-byte aligned. */
static int qkv_vectors(int64_t row_bytes, const void *q, const void *kk, const void *v,
                       const void *qkv)
{
    return row_bytes % 16 == 0 && mgk_aligned16(q) && mgk_aligned16(kk) && mgk_aligned16(v) &&
           mgk_aligned16(qkv);
}

template <typename T>
static void qkv_split(const mg_kctx *k, T *q, T *kk, T *v, const T *qkv, int64_t N, int64_t Hq,
                      int64_t Hkv, int64_t D)
{
    int64_t cols = (Hq + 2 * Hkv) * D;
    MG_ASSERT(Hkv > 0 && Hq % Hkv == 0);
    if (N <= 0 || cols <= 0) return;
    if (qkv_vectors(D * (int64_t)sizeof(T), q, kk, v, qkv)) { /* 16-byte units */
        int64_t Du = D * (int64_t)sizeof(T) / 16;
        MGK_LAUNCH(qkv_split_kernel<uint4>, mgk_grid_rows(N, (Hq + 2 * Hkv) * Du, THREADS),
                   THREADS, 0, mgk_stream(k), (uint4 *)q, (uint4 *)kk, (uint4 *)v,
                   (const uint4 *)qkv, N, Hq, Hkv, Du);
    } else {
        MGK_LAUNCH(qkv_split_kernel<T>, mgk_grid_rows(N, cols, THREADS), THREADS, 0,
                   mgk_stream(k), q, kk, v, qkv, N, Hq, Hkv, D);
    }
    MGK_LAUNCH_CHECK();
}

template <typename T>
static void qkv_merge(const mg_kctx *k, T *qkv, const T *q, const T *kk, const T *v, int64_t N,
                      int64_t Hq, int64_t Hkv, int64_t D)
{
    int64_t cols = (Hq + 2 * Hkv) * D;
    MG_ASSERT(Hkv > 0 && Hq % Hkv == 0);
    if (N <= 0 || cols <= 0) return;
    if (qkv_vectors(D * (int64_t)sizeof(T), q, kk, v, qkv)) {
        int64_t Du = D * (int64_t)sizeof(T) / 16;
        MGK_LAUNCH(qkv_merge_kernel<uint4>, mgk_grid_rows(N, (Hq + 2 * Hkv) * Du, THREADS),
                   THREADS, 0, mgk_stream(k), (uint4 *)qkv, (const uint4 *)q, (const uint4 *)kk,
                   (const uint4 *)v, N, Hq, Hkv, Du);
    } else {
        MGK_LAUNCH(qkv_merge_kernel<T>, mgk_grid_rows(N, cols, THREADS), THREADS, 0,
                   mgk_stream(k), qkv, q, kk, v, N, Hq, Hkv, D);
    }
    MGK_LAUNCH_CHECK();
}

extern "C" void mgk_cuda_rope_fwd(const mg_kctx *k, float *out, const float *inp,
                                  const int32_t *pos, int64_t B, int64_t T, int64_t H, int64_t D,
                                  int64_t rot_dim, float base)
{
    rope_launch(k, out, inp, pos, B, T, H, D, rot_dim, base, 1);
}

extern "C" void mgk_cuda_rope_bwd(const mg_kctx *k, float *dinp, const float *dout,
                                  const int32_t *pos, int64_t B, int64_t T, int64_t H, int64_t D,
                                  int64_t rot_dim, float base)
{
    rope_launch(k, dinp, dout, pos, B, T, H, D, rot_dim, base, -1);
}

extern "C" void mgk_cuda_qkv_split(const mg_kctx *k, float *q, float *kk, float *v,
                                   const float *qkv, int64_t N, int64_t Hq, int64_t Hkv,
                                   int64_t D)
{
    qkv_split(k, q, kk, v, qkv, N, Hq, Hkv, D);
}

extern "C" void mgk_cuda_qkv_merge(const mg_kctx *k, float *qkv, const float *q, const float *kk,
                                   const float *v, int64_t N, int64_t Hq, int64_t Hkv, int64_t D)
{
    qkv_merge(k, qkv, q, kk, v, N, Hq, Hkv, D);
}

extern "C" void mgk_cuda_rope_fwd_h16(const mg_kctx *k, mgk_h16 *out, const mgk_h16 *inp,
                                      const int32_t *pos, int64_t B, int64_t T, int64_t H,
                                      int64_t D, int64_t rot_dim, float base)
{
    MGK_BY_HALF(
        k, T16,
        rope_launch(k, mgk_as<T16>(out), mgk_as<T16>(inp), pos, B, T, H, D, rot_dim, base, 1));
}

extern "C" void mgk_cuda_rope_bwd_h16(const mg_kctx *k, mgk_h16 *dinp, const mgk_h16 *dout,
                                      const int32_t *pos, int64_t B, int64_t T, int64_t H,
                                      int64_t D, int64_t rot_dim, float base)
{
    MGK_BY_HALF(
        k, T16,
        rope_launch(k, mgk_as<T16>(dinp), mgk_as<T16>(dout), pos, B, T, H, D, rot_dim, base, -1));
}

extern "C" void mgk_cuda_qkv_split_h16(const mg_kctx *k, mgk_h16 *q, mgk_h16 *kk, mgk_h16 *v,
                                       const mgk_h16 *qkv, int64_t N, int64_t Hq, int64_t Hkv,
                                       int64_t D)
{
    MGK_BY_HALF(k, T16,
                qkv_split(k, mgk_as<T16>(q), mgk_as<T16>(kk), mgk_as<T16>(v), mgk_as<T16>(qkv), N,
                          Hq, Hkv, D));
}

extern "C" void mgk_cuda_qkv_merge_h16(const mg_kctx *k, mgk_h16 *qkv, const mgk_h16 *q,
                                       const mgk_h16 *kk, const mgk_h16 *v, int64_t N, int64_t Hq,
                                       int64_t Hkv, int64_t D)
{
    MGK_BY_HALF(k, T16,
                qkv_merge(k, mgk_as<T16>(qkv), mgk_as<T16>(q), mgk_as<T16>(kk), mgk_as<T16>(v), N,
                          Hq, Hkv, D));
}

/* emu_wmma.h — nvcuda::wmma for the emulator: bf16 (and half) 16x16x16 fragments with float
 * accumulators. Included by cuda_emu.h only.
 *
 * Contract:
 *   - CUDA leaves the lane layout of a fragment unspecified; here every lane holds the whole
 *     16x16 tile (num_elements = 256, x[] row-major in the tile's own rows and columns), so
 *     an operation applied uniformly to every x[i] means what it means on a GPU.
 *   - load_matrix_sync, store_matrix_sync and mma_sync are warp operations of all 32 lanes
 *     (a lane missing from one is reported like any warp-mask mismatch). A lane stores only
 *     its share of the tile (elements lane, lane + 32, ...), so reading the stored tile
 *     without a __syncwarp() shows up as poisoned values.
 *   - mma_sync accumulates in float, in k order.
 */
#ifndef MGK_EMU_WMMA_H
#define MGK_EMU_WMMA_H

namespace nvcuda {
namespace wmma {

struct matrix_a {};
struct matrix_b {};
struct accumulator {};
struct row_major {};
struct col_major {};
enum layout_t { mem_row_major, mem_col_major };

template <typename Use, int M, int N, int K> struct tile_shape;
template <int M, int N, int K> struct tile_shape<matrix_a, M, N, K> { enum { rows = M, cols = K }; };
template <int M, int N, int K> struct tile_shape<matrix_b, M, N, K> { enum { rows = K, cols = N }; };
template <int M, int N, int K> struct tile_shape<accumulator, M, N, K> { enum { rows = M, cols = N }; };

template <typename Use, int M, int N, int K, typename T, typename Layout = void> struct fragment {
    static_assert(M == 16 && N == 16 && K == 16, "the emulator has the 16x16x16 shape only");
    enum { rows = tile_shape<Use, M, N, K>::rows, cols = tile_shape<Use, M, N, K>::cols };
    enum { num_elements = rows * cols };
    typedef T element_type;
    T x[num_elements];
};

namespace detail {
inline void sync_warp(const char *file, int line)
{
    ::mgk_emu::warp_exchange(::mgk_emu::site{file, line}, ::mgk_emu::WARP_MMA, 0xffffffffu, 0, 0,
                             32);
}
template <typename T> inline float to_f(T v) { return static_cast<float>(v); }
inline unsigned lane(void) { return (threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z)) % 32; }
} /* namespace detail */

template <typename Use, int M, int N, int K, typename T, typename L>
inline void fill_fragment(fragment<Use, M, N, K, T, L> &f, const T &v)
{
    for (int i = 0; i < f.num_elements; i++) f.x[i] = v;
}

/* matrix_a / matrix_b from memory laid out as Layout (row_major: element (r, c) at
 * p[r * ldm + c]; col_major: at p[c * ldm + r]). */
template <typename Use, int M, int N, int K, typename T, typename L>
inline void load_matrix_sync(fragment<Use, M, N, K, T, L> &f, const T *p, unsigned ldm,
                             const char *file = __builtin_FILE(), int line = __builtin_LINE())
{
    static_assert(!std::is_same<Use, accumulator>::value, "accumulators take a layout_t");
    detail::sync_warp(file, line);
    const bool row = std::is_same<L, row_major>::value;
    for (int r = 0; r < f.rows; r++)
        for (int c = 0; c < f.cols; c++)
            f.x[r * f.cols + c] = row ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r];
}

template <int M, int N, int K, typename T>
inline void load_matrix_sync(fragment<accumulator, M, N, K, T> &f, const T *p, unsigned ldm,
                             layout_t layout, const char *file = __builtin_FILE(),
                             int line = __builtin_LINE())
{
    detail::sync_warp(file, line);
    for (int r = 0; r < f.rows; r++)
        for (int c = 0; c < f.cols; c++)
            f.x[r * f.cols + c] =
                layout == mem_row_major ? p[(size_t)r * ldm + c] : p[(size_t)c * ldm + r];
}

template <int M, int N, int K, typename T>
inline void store_matrix_sync(T *p, const fragment<accumulator, M, N, K, T> &f, unsigned ldm,
                              layout_t layout, const char *file = __builtin_FILE(),
                              int line = __builtin_LINE())
{
    detail::sync_warp(file, line);
    for (int e = (int)detail::lane(); e < f.num_elements; e += 32) {
        int r = e / f.cols, c = e % f.cols;
        p[layout == mem_row_major ? (size_t)r * ldm + c : (size_t)c * ldm + r] = f.x[e];
    }
}

/* d = a * b + c (d may be c). */
template <int M, int N, int K, typename TA, typename LA, typename TB, typename LB, typename TC>
inline void mma_sync(fragment<accumulator, M, N, K, TC> &d, const fragment<matrix_a, M, N, K, TA, LA> &a,
                     const fragment<matrix_b, M, N, K, TB, LB> &b,
                     const fragment<accumulator, M, N, K, TC> &c, const char *file = __builtin_FILE(),
                     int line = __builtin_LINE())
{
    detail::sync_warp(file, line);
    TC out[M * N];
    for (int i = 0; i < M; i++)
        for (int j = 0; j < N; j++) {
            float acc = detail::to_f(c.x[i * N + j]);
            for (int k = 0; k < K; k++) acc += detail::to_f(a.x[i * K + k]) * detail::to_f(b.x[k * N + j]);
            out[i * N + j] = static_cast<TC>(acc);
        }
    for (int e = 0; e < M * N; e++) d.x[e] = out[e];
}

} /* namespace wmma */
} /* namespace nvcuda */

#endif

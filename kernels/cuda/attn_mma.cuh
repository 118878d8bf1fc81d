/* attn_mma.cuh — what the tensor-core attention kernels with register accumulators
 * (attn_mma_fwd.cu, attn_mma_bwd.cu) share: tile sizes, the 16-byte cp.async tile loader, the
 * write-back of accumulator rows, and when they serve (D = 64 or 128, 16-byte aligned tensors,
 * an sm_80+ device; else the portable kernels of attn.cu).
 *
 * FlashAttention-2's algorithm with mma.sync m16n8k16 bf16 (fp32 accumulators) and ldmatrix
 * (mma_sm80.cuh), the contract and saved state of the portable kernels (lse, output copy), so
 * any backward follows any forward; the emulator runs them through mma_sm80.cuh's portable
 * versions of the instructions. Blocks of 4 warps; tiles in shared memory as bf16 rows padded to
 * D + 8 elements (the 8 rows an ldmatrix reads fall in distinct banks), loaded by 16-byte
 * cp.async one tile ahead of their use (double buffers). A lane holds rows g and g + 8
 * (g = lane / 4) of every 16 x 8 accumulator tile, columns 2u, 2u + 1 (u = lane % 4); two
 * neighbouring accumulator tiles of S, rounded to bf16, are exactly the A operand of the next
 * product (no shared-memory round trip). No atomics: deterministic. P and dS enter the
 * products rounded to bf16 (the tests' bf16 tolerances).
 */
#ifndef MGK_ATTN_MMA_CUH
#define MGK_ATTN_MMA_CUH

#include "attn_common.cuh"
#include "mma_sm80.cuh"

#define MB 64 /* rows of a tile (queries or keys) */
#define MWARPS 4
#define MTHREADS (32 * MWARPS)
#define MLOG2E 1.4426950408889634f
#define MLN2 0.6931471805599453f

/* Forward tiles: FM query rows per block (FMT = 2 accumulator tiles of 16 rows per warp, so
 * each K and V fragment read from shared memory feeds two products), FN keys per tile. */
#define FMT 2
#define FM (16 * FMT * MWARPS)
#define FN 32

/* rows [row0, row0 + R) (R = 64 unless given) of a (B, T, H, DK) head (src: its (b, 0, head)
 * row, stride elements between rows) into dst (row stride DK + 8) by 16-byte cp.async, zeros
 * past nrows; all threads of the block. */
template <int DK, int R = MB>
static __device__ void tile_async(bf16 *dst, const bf16 *src, int64_t stride, int64_t row0,
                                  int64_t nrows)
{
    const int CH = DK / 8;
    for (int i = threadIdx.x; i < R * CH; i += blockDim.x) {
        int r = i / CH, c = (i - r * CH) * 8;
        int ok = row0 + r < nrows;
        cp_async16(dst + r * (DK + 8) + c, src + (ok ? (row0 + r) * stride + c : 0), ok);
    }
}

/* rows row0 + g (+ 8) (< nrows) of a (B, T, H, DK) head (base: its (b, 0, head) row) +=
 * mul * acc, columns 8n + 2u, 8n + 2u + 1 of acc[n]. */
template <int DK>
static __device__ void add_acc_rows(bf16 *base, int64_t stride, int64_t row0, int64_t nrows,
                                    const float (&acc)[DK / 8][4], float mul)
{
    int lane = threadIdx.x & 31, g = lane >> 2, u = lane & 3;
    for (int hh = 0; hh < 2; hh++) {
        int64_t row = row0 + g + 8 * hh;
        if (row >= nrows) continue;
        __nv_bfloat162 *p = reinterpret_cast<__nv_bfloat162 *>(base + row * stride + 2 * u);
        for (int n = 0; n < DK / 8; n++) {
            float2 o = __bfloat1622float2(p[4 * n]);
            p[4 * n] = __floats2bfloat162_rn(o.x + acc[n][2 * hh] * mul,
                                             o.y + acc[n][2 * hh + 1] * mul);
        }
    }
}

/* The device runs mma.sync (compute capability 8.0 or later), asked once. */
static inline int device_has_mma(void)
{
    static int cached = -1;
    if (cached < 0) {
        int dev = 0, major = 0;
        MGK_CUDA_CHECK(cudaGetDevice(&dev));
        MGK_CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
        cached = major >= 8;
    }
    return cached;
}

/* These kernels serve d (D = 64 or 128, 16-byte aligned tensors, an sm_80+ device). */
static inline int mma_serves(const mgk_attn_dims *d, const void *p0, const void *p1,
                             const void *p2, const void *p3)
{
    return (d->D == 64 || d->D == 128) && mgk_aligned16(p0) && mgk_aligned16(p1) &&
           mgk_aligned16(p2) && mgk_aligned16(p3) && device_has_mma();
}

#endif

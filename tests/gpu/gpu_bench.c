/* gpu_bench.c — timings of the CUDA kernels on one GPU, against its roofline.
 *
 * Shapes: GPT-2 124M training (B*T = 8192 tokens, C = 768, 4C = 3072, padded vocabulary 50304
 * of 50257), AdamW over 124M parameters, attention B = 4, T = 2048, 16 heads of D = 128 (MHA
 * and GQA with 4 kv heads), a 4096^3 product. Inputs are zeros (timing does not depend on
 * values). Each kernel runs twice to warm up, then REPS times between two events.
 * Bytes are the minimum a kernel must move (each input read once, each output written once;
 * read-modify-write counts twice), FLOPs those of the math (attention: 4 B H T^2 D / 2 forward,
 * 2.5x that backward, the causal half, as FlashAttention counts). Peaks: HBM 3.35 TB/s (H100
 * SXM) or 4.8 TB/s (H200), dense bf16 989 TFLOP/s, fp32 CUDA cores 67 TFLOP/s (both cards).
 */
#include "gpu_bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/kernels_cuda.h"

#define REPS 10
#define FP32_PEAK 67e12
#define BF16_PEAK 989e12

typedef struct bargs {
    const mg_kctx *k;
    float *a, *b, *c, *d, *e, *f;
    int32_t *ids;
    int64_t n, N, C, V;
    mgk_attn_dims ad;
    mgk_adamw_hp hp;
} bargs;

typedef struct bench {
    const char *name;
    void (*fn)(void *);
    double bytes, flops; /* per call; flops > 0: compute-bound */
    double flops_peak;
} bench;

static void b_add(void *p) { bargs *x = p; mgk_add(x->k, x->a, x->b, x->c, x->n); }
static void b_scale(void *p) { bargs *x = p; mgk_scale(x->k, x->a, x->n, 0.5f); }
static void b_sumsq(void *p) { bargs *x = p; (void)mgk_sumsq(x->k, x->a, x->n); }
static void b_bias_add(void *p) { bargs *x = p; mgk_bias_add(x->k, x->a, x->b, x->N, x->C); }
static void b_bias_grad(void *p) { bargs *x = p; mgk_bias_grad(x->k, x->b, x->a, x->N, x->C); }
static void b_emb_fwd(void *p)
{
    bargs *x = p;
    mgk_embedding_fwd(x->k, x->a, x->ids, x->b, x->N, x->C, 0, x->V, 0);
}
static void b_emb_bwd(void *p)
{
    bargs *x = p;
    mgk_embedding_bwd(x->k, x->b, x->a, x->ids, x->N, x->C, 0, x->V);
}
static void b_ln_fwd(void *p)
{
    bargs *x = p;
    mgk_layernorm_fwd(x->k, x->b, x->d, x->e, x->a, x->c, x->c, x->N, x->C, 1e-5f);
}
static void b_ln_bwd(void *p)
{
    bargs *x = p;
    mgk_layernorm_bwd(x->k, x->f, x->c, x->c + x->C, x->b, x->a, x->c, x->d, x->e, x->N, x->C);
}
static void b_rms_fwd(void *p)
{
    bargs *x = p;
    mgk_rmsnorm_fwd(x->k, x->b, x->e, x->a, x->c, x->N, x->C, 1e-5f);
}
static void b_rms_bwd(void *p)
{
    bargs *x = p;
    mgk_rmsnorm_bwd(x->k, x->f, x->c, x->b, x->a, x->c, x->e, x->N, x->C);
}
static void b_gelu_fwd(void *p)
{
    bargs *x = p;
    mgk_gelu_fwd(x->k, x->b, x->a, x->n, MGK_GELU_TANH);
}
static void b_gelu_bwd(void *p)
{
    bargs *x = p;
    mgk_gelu_bwd(x->k, x->c, x->b, x->a, x->n, MGK_GELU_TANH);
}
static void b_swiglu_fwd(void *p) { bargs *x = p; mgk_swiglu_fwd(x->k, x->b, x->a, x->N, x->C); }
static void b_swiglu_bwd(void *p)
{
    bargs *x = p;
    mgk_swiglu_bwd(x->k, x->c, x->b, x->a, x->N, x->C);
}
static void b_rope_fwd(void *p)
{
    bargs *x = p;
    mgk_rope_fwd(x->k, x->b, x->a, NULL, x->ad.B, x->ad.T, x->ad.Hq, x->ad.D, x->ad.D, 10000.0f);
}
static void b_qkv_split(void *p)
{
    bargs *x = p;
    mgk_qkv_split(x->k, x->b, x->c, x->d, x->a, x->N, x->ad.Hq, x->ad.Hkv, x->ad.D);
}
static void b_xent_fwd(void *p)
{
    bargs *x = p;
    mgk_xent_fwd(x->k, x->b, x->c, x->a, x->ids, x->N, x->C, x->V);
}
static void b_xent_bwd(void *p)
{
    bargs *x = p;
    mgk_xent_bwd(x->k, x->a, x->a, x->c, x->ids, NULL, 1.0f, x->N, x->C, 0, x->V);
}
static void b_adamw(void *p)
{
    bargs *x = p;
    mgk_adamw(x->k, x->a, x->b, x->c, x->d, x->n, &x->hp, 1);
}
static void b_gemm(void *p)
{
    bargs *x = p;
    mgk_gemm(x->k, x->c, x->n, x->a, x->n, x->b, x->n, x->n, x->n, x->n, 0, 1, 1.0f, 0.0f);
}
static void b_linear_fwd(void *p)
{
    bargs *x = p;
    mgk_linear_fwd(x->k, x->c, x->a, x->b, x->d, x->N, x->C, 4 * x->C);
}
static void b_attn_fwd(void *p)
{
    bargs *x = p;
    mgk_attn_fwd(x->k, &x->ad, x->d, x->e, x->a, x->b, x->c, NULL);
}
static void b_attn_bwd(void *p)
{
    bargs *x = p;
    mgk_attn_bwd(x->k, &x->ad, x->f, x->f, x->f, x->d, x->e, x->a, x->b, x->c, NULL);
}

/* 16-bit variants, bf16 or fp16 as x->k says (buffers are float-sized: 16-bit data uses the
 * first half of each) */
#define BF(p) ((mgk_h16 *)(void *)(p))
static void b_gemm_h16(void *p)
{
    bargs *x = p;
    mgk_cuda_gemm_h16(x->k, BF(x->c), x->n, BF(x->a), x->n, BF(x->b), x->n, x->n, x->n, x->n, 0,
                      1, 1.0f, 0.0f);
}
static void b_linear_gelu_h16(void *p)
{
    bargs *x = p;
    mgk_cuda_linear_fwd_h16(x->k, BF(x->c), BF(x->e), BF(x->a), BF(x->b), BF(x->d), x->N, x->C,
                            4 * x->C, 1);
}
static void b_ln_fwd_bf16(void *p)
{
    bargs *x = p;
    mgk_cuda_layernorm_fwd_h16(x->k, BF(x->b), x->d, x->e, BF(x->a), BF(x->c), BF(x->c), x->N,
                               x->C, 1e-5f);
}
static void b_res_ln_fwd_bf16(void *p)
{
    bargs *x = p;
    mgk_cuda_residual_layernorm_fwd_h16(x->k, BF(x->f), BF(x->b), x->d, x->e, BF(x->a),
                                        BF(x->a) + x->N * x->C, BF(x->c), BF(x->c), x->N, x->C,
                                        1e-5f);
}
static void b_xent_fwd_bf16(void *p)
{
    bargs *x = p;
    mgk_cuda_xent_fwd_h16(x->k, x->b, x->c, BF(x->a), x->ids, x->N, x->C, x->V);
}
#define ATTN_BF16_BENCH(name, fn)                                                        \
    static void b_attn_fwd_##name(void *p)                                               \
    {                                                                                    \
        bargs *x = p;                                                                    \
        mgk_cuda_attn_fwd_h16_##fn(x->k, &x->ad, BF(x->d), x->e, BF(x->a), BF(x->b),    \
                                   BF(x->c), NULL);                                     \
    }                                                                                    \
    static void b_attn_bwd_##name(void *p)                                               \
    {                                                                                    \
        bargs *x = p;                                                                    \
        mgk_cuda_attn_bwd_h16_##fn(x->k, &x->ad, BF(x->f), BF(x->f), BF(x->f), BF(x->d), \
                                   x->e, BF(x->a), BF(x->b), BF(x->c), NULL);           \
    }
ATTN_BF16_BENCH(portable, portable)
ATTN_BF16_BENCH(wmma, wmma)
ATTN_BF16_BENCH(mma, mma)

typedef struct peaks {
    double hbm; /* bytes/s, 0 if unknown */
} peaks;

static void report(const bench *b, double ms, const peaks *pk)
{
    double s = ms * 1e-3;
    if (b->flops > 0) {
        double tf = b->flops / s;
        printf("  %-30s %9.3f ms %9.1f TFLOP/s %6.1f%% of %s peak\n", b->name, ms, tf * 1e-12,
               100.0 * tf / b->flops_peak, b->flops_peak == BF16_PEAK ? "bf16/fp16" : "fp32");
    } else {
        double bw = b->bytes / s;
        if (pk->hbm > 0)
            printf("  %-30s %9.3f ms %9.1f GB/s    %6.1f%% of HBM\n", b->name, ms, bw * 1e-9,
                   100.0 * bw / pk->hbm);
        else
            printf("  %-30s %9.3f ms %9.1f GB/s\n", b->name, ms, bw * 1e-9);
    }
    fflush(stdout);
}

/* Zeroed device buffers: a..f of the given float counts (0: none). */
static int alloc_zero(mg_kctx *k, float **p, int64_t n)
{
    *p = NULL;
    if (n <= 0) return 0;
    *p = mgk_cuda_alloc((size_t)n * sizeof(float));
    if (!*p) return 1;
    mgk_zero(k, *p, n);
    return 0;
}

/* Mean milliseconds of fn after two warm-up calls; -1 (message printed) on failure. */
static double time_ms(mg_kctx *k, const char *name, void (*fn)(void *), bargs *x)
{
    double ms = 0;
    x->k = k;
    fn(x);
    fn(x);
    if (mgk_cuda_time(k, fn, x, REPS, &ms) != MG_OK) {
        printf("  %-30s FAILED: %s\n", name, mg_last_error());
        return -1;
    }
    return ms;
}

static int run_one(mg_kctx *k, const bench *b, bargs *x, const peaks *pk)
{
    double ms = time_ms(k, b->name, b->fn, x);
    if (ms < 0) return 1;
    report(b, ms, pk);
    return 0;
}

/* One row of the bf16 attention table: the three implementations side by side. */
static int attn_row(mg_kctx *k, const char *name, void (*const fn[3])(void *), bargs *x,
                    double flops)
{
    int fail = 0;
    printf("  %-22s", name);
    for (int i = 0; i < 3; i++) {
        double ms = time_ms(k, name, fn[i], x);
        if (ms < 0) {
            fail = 1;
            printf(" %19s", "FAILED");
            continue;
        }
        double tf = flops / (ms * 1e-3);
        printf(" %8.3f ms %5.1f%%", ms, 100.0 * tf / BF16_PEAK);
    }
    printf("\n");
    fflush(stdout);
    return fail;
}

/* The bf16 attention table (buffers as the fp32 group: a..f = q, k, v, out, saved, grads). */
static int attn_bf16_table(mg_kctx *k, const mgk_attn_dims *ad, int gqa, const int64_t sz[6])
{
    static void (*const fwd[3])(void *) = {b_attn_fwd_portable, b_attn_fwd_wmma, b_attn_fwd_mma};
    static void (*const bwd[3])(void *) = {b_attn_bwd_portable, b_attn_bwd_wmma, b_attn_bwd_mma};
    double fl = 4.0 * ad->B * ad->Hq * (double)ad->T * ad->T * ad->D / 2;
    bargs x = {.ad = *ad};
    float **bufs[6] = {&x.a, &x.b, &x.c, &x.d, &x.e, &x.f};
    int fail = 0;
    for (int i = 0; i < 6; i++) fail |= alloc_zero(k, bufs[i], sz[i]);
    if (!fail) {
        fail |= attn_row(k, gqa ? "fwd GQA 16/4" : "fwd MHA 16", fwd, &x, fl);
        fail |= attn_row(k, gqa ? "bwd GQA 16/4" : "bwd MHA 16", bwd, &x, 2.5 * fl);
    } else {
        printf("  attention bf16 FAILED: %s\n", mg_last_error());
    }
    for (int i = 0; i < 6; i++) mgk_cuda_free(*bufs[i]);
    return fail;
}

/* Runs benches [0, n) that share one set of buffers sized na..nf floats. */
static int group(mg_kctx *k, const bench *bs, int n, bargs *x, const int64_t sz[6],
                 const peaks *pk)
{
    float **bufs[6] = {&x->a, &x->b, &x->c, &x->d, &x->e, &x->f};
    int fail = 0;
    for (int i = 0; i < 6; i++) fail |= alloc_zero(k, bufs[i], sz[i]);
    if (fail) {
        printf("  %-30s FAILED: %s\n", bs[0].name, mg_last_error());
    } else {
        for (int i = 0; i < n; i++) fail |= run_one(k, &bs[i], x, pk);
    }
    for (int i = 0; i < 6; i++) mgk_cuda_free(*bufs[i]);
    return fail;
}

static int32_t *upload_ids(int64_t n, int64_t vocab)
{
    int32_t *h = malloc((size_t)n * sizeof(int32_t));
    int32_t *d = mgk_cuda_alloc((size_t)n * sizeof(int32_t));
    uint64_t s = 88172645463325252ull;
    for (int64_t i = 0; i < n; i++) {
        s ^= s << 13, s ^= s >> 7, s ^= s << 17;
        h[i] = (int32_t)(s % (uint64_t)vocab);
    }
    if (d && mgk_cuda_upload(d, h, (size_t)n * sizeof(int32_t)) != MG_OK)
        mgk_cuda_free(d), d = NULL;
    free(h);
    return d;
}

static int bench_memory_bound(mg_kctx *k, const peaks *pk, int32_t *ids)
{
    const int64_t N = 8192, C = 768, F = 3072, V = 50257, Vp = 50304, n = N * F, P = 124000000;
    const double f4 = 4.0;
    int fail = 0;
    bargs x = {.n = n, .N = N, .C = F, .V = V, .ids = ids};
    bench ew[] = {{"add (n=25M)", b_add, 3 * n * f4, 0, 0},
                  {"scale (n=25M)", b_scale, 2 * n * f4, 0, 0},
                  {"bias_add (8192x3072)", b_bias_add, 2 * n * f4, 0, 0},
                  {"bias_grad (8192x3072)", b_bias_grad, n * f4, 0, 0},
                  {"gelu_fwd tanh (n=25M)", b_gelu_fwd, 2 * n * f4, 0, 0},
                  {"gelu_bwd tanh (n=25M)", b_gelu_bwd, 4 * n * f4, 0, 0}};
    fail |= group(k, ew, 6, &x, (int64_t[6]){n, n, n, 0, 0, 0}, pk);
    x = (bargs){.n = P, .ids = ids};
    bench red[] = {{"sumsq (n=124M)", b_sumsq, P * f4, 0, 0}};
    fail |= group(k, red, 1, &x, (int64_t[6]){P, 0, 0, 0, 0, 0}, pk);
    x = (bargs){.N = N, .C = F / 2, .ids = ids};
    bench sw[] = {{"swiglu_fwd (8192x1536)", b_swiglu_fwd, 3 * N * (F / 2) * f4, 0, 0},
                  {"swiglu_bwd (8192x1536)", b_swiglu_bwd, 7 * N * (F / 2) * f4, 0, 0}};
    fail |= group(k, sw, 2, &x, (int64_t[6]){N * F, N * F / 2, N * F, 0, 0, 0}, pk);
    x = (bargs){.N = N, .C = C, .V = V, .ids = ids};
    bench emb[] = {{"embedding_fwd (8192x768)", b_emb_fwd, 2 * N * C * f4, 0, 0},
                   {"embedding_bwd (8192x768)", b_emb_bwd, 3 * N * C * f4, 0, 0}};
    fail |= group(k, emb, 2, &x, (int64_t[6]){N * C, V * C, 0, 0, 0, 0}, pk);
    x = (bargs){.N = N, .C = C, .ids = ids};
    bench nm[] = {{"layernorm_fwd (8192x768)", b_ln_fwd, 2 * N * C * f4, 0, 0},
                  {"layernorm_bwd (8192x768)", b_ln_bwd, 4 * N * C * f4, 0, 0},
                  {"rmsnorm_fwd (8192x768)", b_rms_fwd, 2 * N * C * f4, 0, 0},
                  {"rmsnorm_bwd (8192x768)", b_rms_bwd, 4 * N * C * f4, 0, 0}};
    fail |= group(k, nm, 4, &x, (int64_t[6]){N * C, N * C, 2 * C, N, N, N * C}, pk);
    x = (bargs){.N = N, .C = Vp, .V = V, .ids = ids};
    bench xe[] = {{"xent_fwd (8192x50304)", b_xent_fwd, N * Vp * f4, 0, 0},
                  {"xent_bwd in place (8192x50304)", b_xent_bwd, 2 * N * Vp * f4, 0, 0}};
    fail |= group(k, xe, 2, &x, (int64_t[6]){N * Vp, N, N, 0, 0, 0}, pk);
    x = (bargs){.N = N, .C = C, .ids = ids};
    bench nb[] = {{"layernorm_fwd bf16 (8192x768)", b_ln_fwd_bf16, 2 * N * C * 2.0, 0, 0},
                  {"residual+layernorm bf16 (8192x768)", b_res_ln_fwd_bf16, 4 * N * C * 2.0, 0, 0}};
    fail |= group(k, nb, 2, &x, (int64_t[6]){N * C, N * C, 2 * C, N, N, N * C}, pk);
    x = (bargs){.N = N, .C = Vp, .V = V, .ids = ids};
    bench xb[] = {{"xent_fwd bf16 (8192x50304)", b_xent_fwd_bf16, N * Vp * 2.0, 0, 0}};
    fail |= group(k, xb, 1, &x, (int64_t[6]){N * Vp / 2, N, N, 0, 0, 0}, pk);
    x = (bargs){.n = P, .hp = {3e-4, 0.9, 0.95, 1e-8, 0.1, 1, 1.0}};
    bench ad[] = {{"adamw (n=124M)", b_adamw, 7 * P * f4, 0, 0}};
    fail |= group(k, ad, 1, &x, (int64_t[6]){P, P, P, P, 0, 0}, pk);
    return fail;
}

static int bench_layout(mg_kctx *k, const peaks *pk)
{
    mgk_attn_dims ad = {4, 2048, 32, 8, 128, 0.0f};
    int64_t nq = ad.B * ad.T * ad.Hq * ad.D, nk = ad.B * ad.T * ad.Hkv * ad.D, nf = nq + 2 * nk;
    bargs x = {.N = ad.B * ad.T, .ad = ad};
    bench b[] = {{"rope_fwd (4x2048x32x128)", b_rope_fwd, 2 * nq * 4.0, 0, 0},
                 {"qkv_split (8192 rows, 32/8 heads)", b_qkv_split, 2 * nf * 4.0, 0, 0}};
    return group(k, b, 2, &x, (int64_t[6]){nf, nq, nk, nk, 0, 0}, pk);
}

static int bench_compute_bound(mg_kctx *k, const peaks *pk)
{
    int fail = 0;
    int64_t N = 8192, C = 768;
    bargs x;
    for (int gqa = 0; gqa < 2; gqa++) {
        mgk_attn_dims ad = {4, 2048, 16, gqa ? 4 : 16, 128, 0.08838834764831845f};
        int64_t nq = ad.B * ad.T * ad.Hq * ad.D, nk = ad.B * ad.T * ad.Hkv * ad.D;
        double fl = 4.0 * ad.B * ad.Hq * (double)ad.T * ad.T * ad.D / 2;
        if (mgk_ctx_reserve(k, mgk_attn_scratch_numel(k, &ad)) != MG_OK) return 1;
        x = (bargs){.ad = ad};
        bench a[] = {{gqa ? "attn_fwd fp32 GQA 16/4 D=128" : "attn_fwd fp32 MHA 16 D=128",
                      b_attn_fwd, 0, fl, FP32_PEAK},
                     {gqa ? "attn_bwd fp32 GQA 16/4 D=128" : "attn_bwd fp32 MHA 16 D=128",
                      b_attn_bwd, 0, 2.5 * fl, FP32_PEAK}};
        fail |= group(k, a, 2, &x,
                      (int64_t[6]){nq, nk, nk, nq, mgk_attn_saved_numel(k, &ad), nq}, pk);
    }
    printf("  bf16 attention, B 4, T 2048, D 128 (ms, %% of the dense bf16 peak):\n");
    printf("  %-22s %19s %19s %19s\n", "", "portable", "wmma", "mma.sync");
    for (int gqa = 0; gqa < 2; gqa++) {
        mgk_attn_dims ad = {4, 2048, 16, gqa ? 4 : 16, 128, 0.08838834764831845f};
        int64_t nq = ad.B * ad.T * ad.Hq * ad.D, nk = ad.B * ad.T * ad.Hkv * ad.D;
        if (mgk_ctx_reserve(k, mgk_attn_scratch_numel(k, &ad)) != MG_OK) return 1;
        fail |= attn_bf16_table(k, &ad, gqa,
                                (int64_t[6]){nq, nk, nk, nq, mgk_attn_saved_numel(k, &ad), nq});
    }
    int64_t n = 4096;
    x = (bargs){.n = n};
    bench g[] = {{"gemm fp32 4096^3", b_gemm, 0, 2.0 * n * n * n, FP32_PEAK}};
    fail |= group(k, g, 1, &x, (int64_t[6]){n * n, n * n, n * n, 0, 0, 0}, pk);
    x = (bargs){.N = N, .C = C};
    bench l[] = {
        {"linear_fwd fp32 8192x768->3072", b_linear_fwd, 0, 2.0 * N * C * 4 * C, FP32_PEAK}};
    fail |= group(k, l, 1, &x, (int64_t[6]){N * C, 4 * C * C, N * 4 * C, 4 * C, 0, 0}, pk);
    x = (bargs){.n = n};
    bench gb[] = {{"gemm bf16 4096^3", b_gemm_h16, 0, 2.0 * n * n * n, BF16_PEAK}};
    fail |= group(k, gb, 1, &x, (int64_t[6]){n * n, n * n, n * n, 0, 0, 0}, pk);
    x = (bargs){.N = N, .C = C};
    bench lb[] = {{"linear+gelu bf16 8192x768->3072", b_linear_gelu_h16, 0,
                   2.0 * N * C * 4 * C, BF16_PEAK}};
    fail |= group(k, lb, 1, &x, (int64_t[6]){N * C, 4 * C * C, N * 4 * C, 4 * C, N * 4 * C, 0},
                  pk);
    return fail;
}

/* The 16-bit products again on an fp16 context (the dense fp16 peak is bf16's). */
static int bench_fp16(const peaks *pk)
{
    mg_kctx k;
    if (mgk_ctx_init_half(&k, MGK_CUDA, 1, MGK_HALF_FP16) != MG_OK) {
        printf("  fp16 FAILED: %s\n", mg_last_error());
        return 1;
    }
    int64_t n = 4096, N = 8192, C = 768;
    bargs x = {.n = n};
    bench gb[] = {{"gemm fp16 4096^3", b_gemm_h16, 0, 2.0 * n * n * n, BF16_PEAK}};
    int fail = group(&k, gb, 1, &x, (int64_t[6]){n * n, n * n, n * n, 0, 0, 0}, pk);
    x = (bargs){.N = N, .C = C};
    bench lb[] = {{"linear+gelu fp16 8192x768->3072", b_linear_gelu_h16, 0,
                   2.0 * N * C * 4 * C, BF16_PEAK}};
    fail |= group(&k, lb, 1, &x, (int64_t[6]){N * C, 4 * C * C, N * 4 * C, 4 * C, N * 4 * C, 0},
                  pk);
    mgk_ctx_free(&k);
    return fail;
}

int gpu_bench_run(const char *device_name)
{
    mg_kctx k;
    if (mgk_ctx_init(&k, MGK_CUDA, 1) != MG_OK) {
        printf("  FAILED: %s\n", mg_last_error());
        return 1;
    }
    peaks pk = {strstr(device_name, "H200") ? 4.8e12 : strstr(device_name, "H100") ? 3.35e12 : 0};
    printf("  (peaks: HBM %.2f TB/s, dense bf16 989 TFLOP/s, fp32 67 TFLOP/s)\n", pk.hbm * 1e-12);
    int32_t *ids = upload_ids(8192, 50257);
    int fail = !ids;
    if (ids) {
        fail |= bench_memory_bound(&k, &pk, ids);
        fail |= bench_layout(&k, &pk);
        fail |= bench_compute_bound(&k, &pk);
        fail |= bench_fp16(&pk);
    }
    mgk_cuda_free(ids);
    mgk_ctx_free(&k);
    return fail;
}

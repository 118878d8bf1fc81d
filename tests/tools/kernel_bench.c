/* kernel_bench.c — a microbenchmark of the fast CPU kernels: GFLOP/s of sgemm (through
 * mgk_gemm: OpenBLAS when built with it) on square and GPT-2-124M-shaped products, the best of
 * which is printed as the measured peak (the MFU denominator), and of causal attention
 * forward/backward at GPT-2 124M training shapes.
 *
 * Usage: kernel_bench [seconds-per-case (default 0.5)]
 * FLOP conventions: gemm 2*M*N*K; causal attention forward 2*B*H*T*T*D (QK^T and PV over
 * the causal half), backward twice that. Threads: OMP_NUM_THREADS. Output is informational
 * (the machine may be shared); nothing is asserted.
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "kernels.h"

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static float *randbuf(int64_t n)
{
    float *p = malloc((size_t)n * sizeof(float));
    uint32_t s = 12345;
    for (int64_t i = 0; i < n; i++) {
        s = s * 1664525u + 1013904223u;
        p[i] = (float)(s >> 8) / 16777216.0f - 0.5f;
    }
    return p;
}

typedef void (*bench_fn)(void *arg);

/* Best time of one call over repeated calls filling at least `budget` seconds. */
static double best_time(bench_fn fn, void *arg, double budget)
{
    fn(arg); /* warm-up */
    double best = 1e30, start = now();
    int reps = 0;
    while (reps < 3 || now() - start < budget) {
        double t0 = now();
        fn(arg);
        double dt = now() - t0;
        best = dt < best ? dt : best;
        reps++;
    }
    return best;
}

typedef struct gemm_arg {
    const mg_kctx *k;
    int64_t M, N, K;
    int ta, tb;
    float *A, *B, *C;
} gemm_arg;

static void run_gemm(void *p)
{
    gemm_arg *g = p;
    mgk_gemm(g->k, g->C, g->N, g->A, g->ta ? g->M : g->K, g->B, g->tb ? g->K : g->N, g->M, g->N,
             g->K, g->ta, g->tb, 1.0f, 0.0f);
}

static double bench_gemm(const mg_kctx *k, int64_t M, int64_t N, int64_t K, int ta, int tb,
                         double budget, const char *what)
{
    gemm_arg g = {k, M, N, K, ta, tb, randbuf(M * K), randbuf(K * N), randbuf(M * N)};
    double gf = 2.0 * (double)M * N * K / best_time(run_gemm, &g, budget) / 1e9;
    printf("sgemm %-22s M=%-5lld N=%-5lld K=%-5lld %s%s: %8.1f GFLOP/s\n", what, (long long)M,
           (long long)N, (long long)K, ta ? "T" : "N", tb ? "T" : "N", gf);
    free(g.A), free(g.B), free(g.C);
    return gf;
}

typedef struct attn_arg {
    const mg_kctx *k;
    mgk_attn_dims d;
    float *q, *kk, *v, *out, *saved, *dq, *dk, *dv;
} attn_arg;

static void run_attn_fwd(void *p)
{
    attn_arg *a = p;
    mgk_attn_fwd(a->k, &a->d, a->out, a->saved, a->q, a->kk, a->v, NULL);
}

static void run_attn_bwd(void *p)
{
    attn_arg *a = p;
    mgk_attn_bwd(a->k, &a->d, a->dq, a->dk, a->dv, a->out, a->saved, a->q, a->kk, a->v, NULL);
}

static void bench_attn(mg_kctx *k, mgk_attn_dims d, double budget)
{
    int64_t nq = d.B * d.T * d.Hq * d.D, nkv = d.B * d.T * d.Hkv * d.D;
    if (mgk_ctx_reserve(k, mgk_attn_scratch_numel(k, &d)) != MG_OK) {
        fprintf(stderr, "kernel_bench: %s\n", mg_last_error());
        exit(1);
    }
    attn_arg a = {k, d, randbuf(nq), randbuf(nkv), randbuf(nkv), randbuf(nq),
                  randbuf(mgk_attn_saved_numel(k, &d)), randbuf(nq), randbuf(nkv), randbuf(nkv)};
    double fl = 2.0 * (double)d.B * d.Hq * d.T * d.T * d.D;
    double tf = best_time(run_attn_fwd, &a, budget), tb = best_time(run_attn_bwd, &a, budget);
    printf("attention B=%lld T=%lld Hq=%lld Hkv=%lld D=%lld: fwd %7.1f GFLOP/s (%.2f ms), "
           "bwd %7.1f GFLOP/s (%.2f ms)\n", (long long)d.B, (long long)d.T, (long long)d.Hq,
           (long long)d.Hkv, (long long)d.D, fl / tf / 1e9, tf * 1e3, 2 * fl / tb / 1e9, tb * 1e3);
    free(a.q), free(a.kk), free(a.v), free(a.out), free(a.saved), free(a.dq), free(a.dk);
    free(a.dv);
}

int main(int argc, char **argv)
{
    double budget = argc > 1 ? atof(argv[1]) : 0.5;
    mg_kctx k;
    if (mgk_ctx_init(&k, MGK_CPU_FAST, 0) != MG_OK) return 1;
    printf("backend %s, gemm %s, %d threads\n", mgk_backend_name(k.backend), mgk_gemm_impl(),
           k.nthreads);
    double peak = 0.0, g;
    static const int64_t sq[] = {256, 512, 1024, 2048};
    for (int i = 0; i < 4; i++)
        if ((g = bench_gemm(&k, sq[i], sq[i], sq[i], 0, 0, budget, "square")) > peak) peak = g;
    /* GPT-2 124M at B*T = 1024 tokens: fc1 forward, its input gradient, its weight gradient */
    if ((g = bench_gemm(&k, 1024, 3072, 768, 0, 1, budget, "fc1 fwd (x W^T)")) > peak) peak = g;
    if ((g = bench_gemm(&k, 1024, 768, 3072, 0, 0, budget, "fc1 dx (dy W)")) > peak) peak = g;
    if ((g = bench_gemm(&k, 3072, 768, 1024, 1, 0, budget, "fc1 dW (dy^T x)")) > peak) peak = g;
    printf("sgemm peak: %.1f GFLOP/s\n", peak);
    bench_attn(&k, (mgk_attn_dims){4, 256, 12, 12, 64, 0.125f}, budget);
    bench_attn(&k, (mgk_attn_dims){4, 256, 12, 4, 64, 0.125f}, budget);
    bench_attn(&k, (mgk_attn_dims){1, 1024, 12, 12, 64, 0.125f}, budget);
    mgk_ctx_free(&k);
    return 0;
}

/* kernel_probe.c — runs one kernels.h op (forward and backward) on inputs read from raw
 * little-endian files, for tests/interop/test_kernels_torch.py.
 *
 * Usage: kernel_probe ref|fast OP DIR [key=value ...]
 *   Inputs are DIR/NAME.bin (f32, or i32 for ids/targets/pos/seg), outputs are written as
 *   DIR/NAME.bin (f32; sumsq writes f64). Sizes and options come as key=value (all listed
 *   per op below). Gradient inputs are named dy; backward outputs start zeroed, except the
 *   adamw state. Exit status 0, or 2 with a message on a usage/file error.
 *   linear     N IN OUT bias         x W [b] dy      -> y dx dW [db]
 *   layernorm  N C eps               x w b dy        -> y mean rstd dx dw db
 *   rmsnorm    N C eps               x w dy          -> y rstd dx dw
 *   gelu       n tanh                x dy            -> y dx
 *   swiglu     N F                   x dy            -> y dx
 *   rope       B T H D rot base pos  x [pos] dy      -> y dx
 *   attn       B T Hq Hkv D scale seg  q k v [seg] dy -> y dq dk dv
 *   xent       N Vp V scale mask     logits targets [mask] -> loss lse dlogits
 *   embedding  N C V                 ids table dy    -> y dtable
 *   adamw      n steps lr b1 b2 eps wd decay gscale  p g (steps*n) -> p m v
 *   sumsq      n                     x               -> s (f64)
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "kernels.h"

typedef struct probe {
    mg_kctx k;
    const char *dir;
    int nkv;
    const char *key[24], *val[24];
} probe;

__attribute__((noreturn)) static void die(const char *fmt, const char *arg)
{
    fprintf(stderr, "kernel_probe: error: ");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, "\n");
    exit(2);
}

static double num(const probe *p, const char *key, double def)
{
    for (int i = 0; i < p->nkv; i++)
        if (strcmp(p->key[i], key) == 0) return atof(p->val[i]);
    if (def == def) return def;
    die("missing parameter %s", key);
}
#define NUM(p, key) num((p), (key), NAN)

static void *load(const probe *p, const char *name, int64_t n, size_t elsize)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.bin", p->dir, name);
    FILE *f = fopen(path, "rb");
    if (!f) die("cannot open %s", path);
    void *buf = calloc((size_t)(n > 0 ? n : 1), elsize);
    size_t got = fread(buf, elsize, (size_t)n, f);
    int extra = fgetc(f) != EOF;
    fclose(f);
    if (got != (size_t)n || extra) die("%s: wrong size", path);
    return buf;
}
static float *loadf(const probe *p, const char *name, int64_t n)
{
    return load(p, name, n, sizeof(float));
}
static int32_t *loadi(const probe *p, const char *name, int64_t n)
{
    return load(p, name, n, sizeof(int32_t));
}

static void save(const probe *p, const char *name, const void *buf, int64_t n, size_t elsize)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.bin", p->dir, name);
    FILE *f = fopen(path, "wb");
    if (!f || fwrite(buf, elsize, (size_t)n, f) != (size_t)n || fclose(f) != 0)
        die("cannot write %s", path);
}
static void savef(const probe *p, const char *name, const float *buf, int64_t n)
{
    save(p, name, buf, n, sizeof(float));
}

static float *zeros(int64_t n)
{
    return calloc((size_t)(n > 0 ? n : 1), sizeof(float));
}

static void op_linear(probe *p)
{
    int64_t N = (int64_t)NUM(p, "N"), IN = (int64_t)NUM(p, "IN"), OUT = (int64_t)NUM(p, "OUT");
    int bias = (int)num(p, "bias", 1);
    float *x = loadf(p, "x", N * IN), *W = loadf(p, "W", OUT * IN), *dy = loadf(p, "dy", N * OUT);
    float *b = bias ? loadf(p, "b", OUT) : NULL, *y = zeros(N * OUT);
    float *dx = zeros(N * IN), *dW = zeros(OUT * IN), *db = bias ? zeros(OUT) : NULL;
    mgk_linear_fwd(&p->k, y, x, W, b, N, IN, OUT);
    mgk_linear_bwd(&p->k, dx, dW, db, dy, x, W, N, IN, OUT);
    savef(p, "y", y, N * OUT), savef(p, "dx", dx, N * IN), savef(p, "dW", dW, OUT * IN);
    if (bias) savef(p, "db", db, OUT);
}

static void op_layernorm(probe *p)
{
    int64_t N = (int64_t)NUM(p, "N"), C = (int64_t)NUM(p, "C");
    float *x = loadf(p, "x", N * C), *w = loadf(p, "w", C), *b = loadf(p, "b", C);
    float *dy = loadf(p, "dy", N * C), *y = zeros(N * C), *mean = zeros(N), *rstd = zeros(N);
    float *dx = zeros(N * C), *dw = zeros(C), *db = zeros(C);
    mgk_layernorm_fwd(&p->k, y, mean, rstd, x, w, b, N, C, (float)NUM(p, "eps"));
    mgk_layernorm_bwd(&p->k, dx, dw, db, dy, x, w, mean, rstd, N, C);
    savef(p, "y", y, N * C), savef(p, "mean", mean, N), savef(p, "rstd", rstd, N);
    savef(p, "dx", dx, N * C), savef(p, "dw", dw, C), savef(p, "db", db, C);
}

static void op_rmsnorm(probe *p)
{
    int64_t N = (int64_t)NUM(p, "N"), C = (int64_t)NUM(p, "C");
    float *x = loadf(p, "x", N * C), *w = loadf(p, "w", C), *dy = loadf(p, "dy", N * C);
    float *y = zeros(N * C), *rstd = zeros(N), *dx = zeros(N * C), *dw = zeros(C);
    mgk_rmsnorm_fwd(&p->k, y, rstd, x, w, N, C, (float)NUM(p, "eps"));
    mgk_rmsnorm_bwd(&p->k, dx, dw, dy, x, w, rstd, N, C);
    savef(p, "y", y, N * C), savef(p, "rstd", rstd, N);
    savef(p, "dx", dx, N * C), savef(p, "dw", dw, C);
}

static void op_gelu(probe *p)
{
    int64_t n = (int64_t)NUM(p, "n");
    mgk_gelu_kind kind = NUM(p, "tanh") != 0 ? MGK_GELU_TANH : MGK_GELU_ERF;
    float *x = loadf(p, "x", n), *dy = loadf(p, "dy", n), *y = zeros(n), *dx = zeros(n);
    mgk_gelu_fwd(&p->k, y, x, n, kind);
    mgk_gelu_bwd(&p->k, dx, dy, x, n, kind);
    savef(p, "y", y, n), savef(p, "dx", dx, n);
}

static void op_swiglu(probe *p)
{
    int64_t N = (int64_t)NUM(p, "N"), F = (int64_t)NUM(p, "F");
    float *x = loadf(p, "x", N * 2 * F), *dy = loadf(p, "dy", N * F);
    float *y = zeros(N * F), *dx = zeros(N * 2 * F);
    mgk_swiglu_fwd(&p->k, y, x, N, F);
    mgk_swiglu_bwd(&p->k, dx, dy, x, N, F);
    savef(p, "y", y, N * F), savef(p, "dx", dx, N * 2 * F);
}

static void op_rope(probe *p)
{
    int64_t B = (int64_t)NUM(p, "B"), T = (int64_t)NUM(p, "T"), H = (int64_t)NUM(p, "H");
    int64_t D = (int64_t)NUM(p, "D"), rot = (int64_t)NUM(p, "rot"), n = B * T * H * D;
    float base = (float)NUM(p, "base");
    int32_t *pos = NUM(p, "pos") != 0 ? loadi(p, "pos", B * T) : NULL;
    float *x = loadf(p, "x", n), *dy = loadf(p, "dy", n), *y = zeros(n), *dx = zeros(n);
    mgk_rope_fwd(&p->k, y, x, pos, B, T, H, D, rot, base);
    mgk_rope_bwd(&p->k, dx, dy, pos, B, T, H, D, rot, base);
    savef(p, "y", y, n), savef(p, "dx", dx, n);
}

static void op_attn(probe *p)
{
    mgk_attn_dims d = {(int64_t)NUM(p, "B"), (int64_t)NUM(p, "T"), (int64_t)NUM(p, "Hq"),
                       (int64_t)NUM(p, "Hkv"), (int64_t)NUM(p, "D"), (float)NUM(p, "scale")};
    int64_t nq = d.B * d.T * d.Hq * d.D, nkv = d.B * d.T * d.Hkv * d.D;
    int32_t *seg = NUM(p, "seg") != 0 ? loadi(p, "seg", d.B * d.T) : NULL;
    float *q = loadf(p, "q", nq), *kk = loadf(p, "k", nkv), *v = loadf(p, "v", nkv);
    float *dy = loadf(p, "dy", nq), *y = zeros(nq), *saved = zeros(mgk_attn_saved_numel(&p->k, &d));
    float *dq = zeros(nq), *dk = zeros(nkv), *dv = zeros(nkv);
    if (mgk_ctx_reserve(&p->k, mgk_attn_scratch_numel(&p->k, &d)) != MG_OK)
        die("%s", mg_last_error());
    mgk_attn_fwd(&p->k, &d, y, saved, q, kk, v, seg);
    mgk_attn_bwd(&p->k, &d, dq, dk, dv, dy, saved, q, kk, v, seg);
    savef(p, "y", y, nq), savef(p, "dq", dq, nq), savef(p, "dk", dk, nkv);
    savef(p, "dv", dv, nkv);
}

static void op_xent(probe *p)
{
    int64_t N = (int64_t)NUM(p, "N"), Vp = (int64_t)NUM(p, "Vp"), V = (int64_t)NUM(p, "V");
    float *x = loadf(p, "logits", N * Vp), *mask = NUM(p, "mask") != 0 ? loadf(p, "mask", N) : NULL;
    int32_t *tg = loadi(p, "targets", N);
    float *loss = zeros(N), *lse = zeros(N);
    mgk_xent_fwd(&p->k, loss, lse, x, tg, N, Vp, V);
    savef(p, "loss", loss, N), savef(p, "lse", lse, N);
    mgk_xent_bwd(&p->k, x, x, lse, tg, mask, (float)NUM(p, "scale"), N, Vp, 0, V);
    savef(p, "dlogits", x, N * Vp);
}

static void op_embedding(probe *p)
{
    int64_t N = (int64_t)NUM(p, "N"), C = (int64_t)NUM(p, "C"), V = (int64_t)NUM(p, "V");
    int32_t *ids = loadi(p, "ids", N);
    float *tab = loadf(p, "table", V * C), *dy = loadf(p, "dy", N * C);
    float *y = zeros(N * C), *dt = zeros(V * C);
    mgk_embedding_fwd(&p->k, y, ids, tab, N, C, 0, V, 0);
    mgk_embedding_bwd(&p->k, dt, dy, ids, N, C, 0, V);
    savef(p, "y", y, N * C), savef(p, "dtable", dt, V * C);
}

static void op_adamw(probe *p)
{
    int64_t n = (int64_t)NUM(p, "n"), steps = (int64_t)NUM(p, "steps");
    mgk_adamw_hp hp = {NUM(p, "lr"), NUM(p, "b1"), NUM(p, "b2"), NUM(p, "eps"), NUM(p, "wd"), 1,
                       NUM(p, "gscale")};
    float *w = loadf(p, "p", n), *g = loadf(p, "g", steps * n), *m = zeros(n), *v = zeros(n);
    for (int64_t s = 0; s < steps; s++) {
        hp.step = s + 1;
        mgk_adamw(&p->k, w, m, v, g + s * n, n, &hp, NUM(p, "decay") != 0);
    }
    savef(p, "p", w, n), savef(p, "m", m, n), savef(p, "v", v, n);
}

static void op_sumsq(probe *p)
{
    int64_t n = (int64_t)NUM(p, "n");
    double s = mgk_sumsq(&p->k, loadf(p, "x", n), n);
    save(p, "s", &s, 1, sizeof s);
}

static const struct {
    const char *name;
    void (*run)(probe *p);
} ops[] = {
    {"linear", op_linear}, {"layernorm", op_layernorm}, {"rmsnorm", op_rmsnorm},
    {"gelu", op_gelu},     {"swiglu", op_swiglu},       {"rope", op_rope},
    {"attn", op_attn},     {"xent", op_xent},           {"embedding", op_embedding},
    {"adamw", op_adamw},   {"sumsq", op_sumsq},
};

int main(int argc, char **argv)
{
    if (argc < 4) die("%s", "usage: kernel_probe ref|fast OP DIR [key=value ...]");
    probe p = {.dir = argv[3]};
    mgk_backend be = strcmp(argv[1], "fast") == 0 ? MGK_CPU_FAST : MGK_CPU_REF;
    if (mgk_ctx_init(&p.k, be, 0) != MG_OK) die("%s", mg_last_error());
    for (int i = 4; i < argc && p.nkv < 24; i++) {
        char *eq = strchr(argv[i], '=');
        if (!eq) die("bad parameter %s", argv[i]);
        *eq = '\0';
        p.key[p.nkv] = argv[i], p.val[p.nkv++] = eq + 1;
    }
    for (size_t i = 0; i < sizeof ops / sizeof ops[0]; i++)
        if (strcmp(ops[i].name, argv[2]) == 0) {
            ops[i].run(&p);
            mgk_ctx_free(&p.k);
            return 0;
        }
    die("unknown op %s", argv[2]);
}

/* dtype_tool.c — test program for the dtype conversion (mg/dtype_convert.h).
 *
 *   dtype_tool [--threads N] FROM TO < in.bin > out.bin
 *   dtype_tool --bench FROM TO [ELEMENTS [THREADS [REPEATS]]]
 *
 * FROM and TO are safetensors dtype names (F32, F64, BF16, F16, I64, ...; any case). The
 * first form converts stdin, a raw little-endian array of FROM elements, into TO elements
 * on stdout with mg_dtype_convert_parallel (--threads 0, the default: OpenMP's choice;
 * --threads 1: mg_dtype_convert on this thread). The second converts ELEMENTS (default
 * 2^26) pseudo-random values REPEATS times (default 10) on THREADS threads (default 0) and
 * prints the best time and GB/s (bytes read + bytes written per second) to stdout.
 * Exit status 1 on a library error (message on stderr), 2 on a usage error.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "mg/dtype_convert.h"

static __attribute__((noreturn)) void usage(const char *msg, const char *arg)
{
    fprintf(stderr, "dtype_tool: error: %s%s\n", msg, arg ? arg : "");
    fprintf(stderr, "usage: dtype_tool [--threads N] FROM TO < in > out\n"
                    "       dtype_tool --bench FROM TO [ELEMENTS [THREADS [REPEATS]]]\n");
    exit(2);
}

static __attribute__((noreturn)) void fail(mg_status st)
{
    fprintf(stderr, "dtype_tool: error: %s (%s)\n", mg_last_error(), mg_strerror(st));
    exit(1);
}

static mg_tdtype parse_dtype(const char *s)
{
    char up[32];
    size_t n = strlen(s);
    if (n >= sizeof up) usage("unknown dtype ", s);
    for (size_t i = 0; i <= n; i++) up[i] = (char)toupper((unsigned char)s[i]);
    mg_tdtype t = mg_tdtype_from_name(up);
    if (t == MG_TD_INVALID) usage("unknown dtype ", s);
    return t;
}

static long parse_long(const char *s)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s == 0 || *end != 0 || v < 0) usage("not a count: ", s);
    return v;
}

static unsigned char *read_stdin(size_t *len)
{
    size_t cap = 1 << 20, n = 0, r;
    unsigned char *buf = malloc(cap);
    while (buf && (r = fread(buf + n, 1, cap - n, stdin)) > 0) {
        n += r;
        if (n == cap) buf = realloc(buf, cap *= 2);
    }
    if (!buf || ferror(stdin)) usage("cannot read stdin", NULL);
    *len = n;
    return buf;
}

static int convert_stdio(mg_tdtype from, mg_tdtype to, int threads)
{
    size_t len, ssz = mg_tdtype_size(from), dsz = mg_tdtype_size(to);
    unsigned char *in = read_stdin(&len);
    if (len % ssz) usage("input length is not a multiple of the element size", NULL);
    size_t n = len / ssz;
    unsigned char *out = malloc(n * dsz + 1);
    if (!out) usage("out of memory", NULL);
    mg_status st = threads == 1 ? mg_dtype_convert(out, to, in, from, n)
                                : mg_dtype_convert_parallel(out, to, in, from, n, threads);
    if (st != MG_OK) fail(st);
    if (fwrite(out, dsz, n, stdout) != n || fflush(stdout) != 0) usage("cannot write stdout", NULL);
    free(in);
    free(out);
    return 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Finite random values of moderate range (like weights) for float types, random bytes for
 * the others. */
static void fill_bench(unsigned char *p, mg_tdtype t, size_t n)
{
    uint64_t s = 12345;
    float tmp[4096];
    size_t sz = mg_tdtype_size(t);
    for (size_t i = 0; i < n; i += 4096) {
        size_t m = n - i < 4096 ? n - i : 4096;
        for (size_t j = 0; j < m; j++) {
            s = s * 6364136223846793005u + 1442695040888963407u;
            tmp[j] = (float)(int32_t)(s >> 32) * 0x1p-36f;
        }
        if (!mg_dtype_convert_supported(t, MG_TD_F32))
            for (size_t j = 0; j < m * sz; j++) p[i * sz + j] = ((unsigned char *)tmp)[j % (m * 4)];
        else if (mg_dtype_convert(p + i * sz, t, tmp, MG_TD_F32, m) != MG_OK)
            fail(MG_ERR_ARG);
    }
}

static int bench(mg_tdtype from, mg_tdtype to, size_t n, int threads, int repeats)
{
    size_t ssz = mg_tdtype_size(from), dsz = mg_tdtype_size(to);
    unsigned char *in = malloc(n * ssz), *out = malloc(n * dsz);
    if (!in || !out) usage("out of memory", NULL);
    fill_bench(in, from, n);
    memset(out, 0, n * dsz);
    double best = 1e30;
    for (int r = 0; r < repeats; r++) {
        double t0 = now();
        mg_status st = mg_dtype_convert_parallel(out, to, in, from, n, threads);
        double dt = now() - t0;
        if (st != MG_OK) fail(st);
        if (dt < best) best = dt;
    }
    printf("%s -> %s: %zu elements, %d threads: %.3f ms, %.2f GB/s\n", mg_tdtype_name(from),
           mg_tdtype_name(to), n, threads, best * 1e3, (double)(n * (ssz + dsz)) / best / 1e9);
    free(in);
    free(out);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 4 && strcmp(argv[1], "--bench") == 0) {
        size_t n = argc > 4 ? (size_t)parse_long(argv[4]) : (size_t)1 << 26;
        int threads = argc > 5 ? (int)parse_long(argv[5]) : 0;
        int repeats = argc > 6 ? (int)parse_long(argv[6]) : 10;
        if (argc > 7 || repeats < 1) usage("bad --bench arguments", NULL);
        return bench(parse_dtype(argv[2]), parse_dtype(argv[3]), n, threads, repeats);
    }
    int threads = 0, i = 1;
    if (argc > 2 && strcmp(argv[1], "--threads") == 0) {
        threads = (int)parse_long(argv[2]);
        i = 3;
    }
    if (argc - i != 2) usage("expected FROM and TO", NULL);
    return convert_stdio(parse_dtype(argv[i]), parse_dtype(argv[i + 1]), threads);
}

/* log.c — log.h: Megatron's iteration line, the validation block, metrics.jsonl and the
 * gemm peak. */
#include "log.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <time.h>

#include "flops.h"
#include "tb_events.h"

struct mg_train_log {
    FILE *out, *json;
    mg_tb_writer *tb;          /* --tensorboard-dir, or NULL */
    int tb_loss_scale;         /* write loss-scale (off: --no-log-loss-scale-to-tensorboard) */
    int64_t tb_interval, samples; /* samples: the last iteration's consumed samples */
    int64_t interval;
    double peak;
    /* the interval's sums */
    int64_t iters, advanced, tokens, skipped, nan;
    int loss_seen;             /* an iteration has advanced since the start */
    double seconds, flops, loss;
};

mg_status mg_train_log_create(mg_train_log **out, FILE *o, const char *jsonl,
                              int64_t log_interval, double peak_flops)
{
    *out = NULL;
    mg_train_log *l = mg_calloc(1, sizeof *l);
    if (!l) return MG_ERR_NOMEM;
    l->out = o;
    l->interval = log_interval > 0 ? log_interval : 1;
    l->peak = peak_flops;
    if (jsonl && !(l->json = fopen(jsonl, "w"))) {
        free(l);
        return mg_error_errno(errno, "%s: cannot create the metrics file", jsonl);
    }
    *out = l;
    return MG_OK;
}

void mg_train_log_free(mg_train_log *l)
{
    if (!l) return;
    if (l->json) fclose(l->json);
    mg_tb_free(l->tb);
    free(l);
}

mg_status mg_train_log_tensorboard(mg_train_log *l, const char *dir, int64_t interval,
                                   int loss_scale)
{
    l->tb_loss_scale = loss_scale;
    l->tb_interval = interval > 0 ? interval : 1;
    return mg_tb_create(&l->tb, dir);
}

/* Megatron's training_log scalars: each by iteration and "vs samples". */
static mg_status tb_pair(mg_train_log *l, const char *tag, int64_t it, double v)
{
    char vs[96];
    snprintf(vs, sizeof vs, "%s vs samples", tag);
    MG_FORWARD(mg_tb_scalar(l->tb, tag, it, v));
    return mg_tb_scalar(l->tb, vs, l->samples, v);
}

static mg_status tb_iter(mg_train_log *l, const mg_log_iter *it)
{
    if (!l->tb || it->iteration % l->tb_interval) return MG_OK;
    MG_FORWARD(tb_pair(l, "learning-rate", it->iteration, it->lr));
    MG_FORWARD(tb_pair(l, "batch-size", it->iteration, (double)it->global_batch_size));
    if (!it->skipped && isfinite(it->loss))
        MG_FORWARD(tb_pair(l, "lm loss", it->iteration, it->loss));
    if (l->tb_loss_scale) MG_FORWARD(tb_pair(l, "loss-scale", it->iteration, it->loss_scale));
    if (it->skipped) return MG_OK; /* Megatron's grad norm is None then */
    return tb_pair(l, "grad-norm", it->iteration, it->grad_norm);
}

static double now_s(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* " [2024-04-06 03:02:12.123456]" as Python's str(datetime.now()). */
static void stamp(char *buf, size_t n)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    struct tm tm;
    time_t s = tv.tv_sec;
    localtime_r(&s, &tm);
    char d[32];
    strftime(d, sizeof d, "%Y-%m-%d %H:%M:%S", &tm);
    snprintf(buf, n, " [%s.%06ld]", d, (long)tv.tv_usec);
}

static mg_status json_line(mg_train_log *l, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

static mg_status json_line(mg_train_log *l, const char *fmt, ...)
{
    if (!l->json) return MG_OK;
    va_list ap;
    va_start(ap, fmt);
    int r = vfprintf(l->json, fmt, ap);
    va_end(ap);
    if (r < 0 || fflush(l->json) != 0)
        return mg_error_errno(errno, "cannot write the metrics file");
    return MG_OK;
}

/* JSON has no NaN/Infinity: non-finite numbers are written as null. */
static const char *jnum(char *buf, size_t n, double v)
{
    if (isfinite(v)) snprintf(buf, n, "%.17g", v);
    else snprintf(buf, n, "null");
    return buf;
}

static mg_status json_iter(mg_train_log *l, const mg_log_iter *it, double tps, double tflops,
                           double mfu)
{
    char a[40], b[40], c[40], d[40], e[40], f[40], g[40], h[40];
    return json_line(
        l,
        "{\"kind\": \"train\", \"iteration\": %lld, \"consumed_samples\": %lld, "
        "\"elapsed_ms\": %s, \"tokens_per_s\": %s, \"tflops\": %s, \"mfu\": %s, \"lr\": %s, "
        "\"global_batch_size\": %lld, \"loss\": %s, \"grad_norm\": %s, \"loss_scale\": %s, "
        "\"skipped\": %d, \"nan\": %d}\n",
        (long long)it->iteration, (long long)it->consumed_samples,
        jnum(a, 40, it->seconds * 1e3), jnum(b, 40, tps), jnum(c, 40, tflops),
        mfu < 0 ? "null" : jnum(d, 40, mfu), jnum(e, 40, it->lr),
        (long long)it->global_batch_size, jnum(f, 40, it->loss), jnum(g, 40, it->grad_norm),
        jnum(h, 40, it->loss_scale), it->skipped, !isfinite(it->loss));
}

/* Megatron's %.1f from 10 TFLOP/s up; below, 3 significant digits in fixed notation (at
 * most 12 decimals), so that a CPU's throughput is not printed as 0.0. */
static const char *tflops_text(char *buf, size_t n, double tflops)
{
    int decimals = 1;
    if (tflops > 0 && tflops < 10) decimals = 2 - (int)floor(log10(tflops));
    snprintf(buf, n, "%.*f", decimals > 12 ? 12 : decimals, tflops);
    return buf;
}

/* Megatron's loss field: absent until an iteration has advanced (total_loss_dict has no
 * key yet), then the interval's mean over the advanced iterations (0 when all were
 * skipped), printed when it is >= 0. */
static void loss_field(const mg_train_log *l, char *buf, size_t n)
{
    buf[0] = 0;
    if (!l->loss_seen) return;
    double avg = l->loss / (double)(l->advanced > 0 ? l->advanced : 1);
    if (avg >= 0) snprintf(buf, n, " lm loss: %.6E |", avg);
}

static void print_line(mg_train_log *l, const mg_log_iter *it)
{
    double secs = l->seconds / (double)l->iters;
    double tflops = mg_tflops_per_gpu(l->flops / (double)l->iters, secs, 1);
    double mfu = mg_mfu(l->flops / l->seconds, l->peak);
    char ts[64], mfus[32], tf[32], gn[400] = "", lm[64];
    loss_field(l, lm, sizeof lm);
    stamp(ts, sizeof ts);
    if (mfu < 0) snprintf(mfus, sizeof mfus, "unknown");
    else snprintf(mfus, sizeof mfus, "%.2f%%", 100.0 * mfu);
    if (!it->skipped) snprintf(gn, sizeof gn, " grad norm: %.3f |", it->grad_norm);
    fprintf(l->out,
            "%s iteration %8lld/%8lld | consumed samples: %12lld | elapsed time per iteration "
            "(ms): %.1f | throughput per GPU (TFLOP/s/GPU): %s | tokens per second: %.1f | "
            "MFU: %s | learning rate: %.6E | global batch size: %5lld |%s "
            "loss scale: %.1f |%s number of skipped iterations: %3lld | "
            "number of nan iterations: %3lld |\n",
            ts, (long long)it->iteration, (long long)it->train_iters,
            (long long)it->consumed_samples, secs * 1e3, tflops_text(tf, sizeof tf, tflops),
            (double)l->tokens / l->seconds, mfus, it->lr, (long long)it->global_batch_size,
            lm, it->loss_scale, gn, (long long)l->skipped, (long long)l->nan);
    fflush(l->out);
}

mg_status mg_train_log_iter(mg_train_log *l, const mg_log_iter *it)
{
    double tps = it->seconds > 0 ? (double)it->tokens / it->seconds : 0;
    double tflops = mg_tflops_per_gpu(it->flops, it->seconds, 1);
    double mfu = it->seconds > 0 ? mg_mfu(it->flops / it->seconds, l->peak) : -1;
    MG_FORWARD(json_iter(l, it, tps, tflops, mfu));
    l->samples = it->consumed_samples;
    MG_FORWARD(tb_iter(l, it));
    l->iters++;
    l->seconds += it->seconds;
    l->flops += it->flops;
    l->tokens += it->tokens;
    l->skipped += it->skipped;
    l->nan += !isfinite(it->loss);
    if (!it->skipped && isfinite(it->loss)) {
        l->advanced++;
        l->loss_seen = 1;
        l->loss += it->loss;
    }
    if (it->iteration == 1 || it->iteration % l->interval == 0) {
        print_line(l, it);
        l->iters = l->advanced = l->tokens = l->skipped = l->nan = 0;
        l->seconds = l->flops = l->loss = 0;
    }
    return MG_OK;
}

mg_status mg_train_log_eval(mg_train_log *l, int64_t iteration, const char *split_name,
                            double loss)
{
    char dash[200];
    char line[400];
    double ppl = exp(loss < 20 ? loss : 20);
    int n = snprintf(line, sizeof line,
                     " validation loss at iteration %lld on %s set | lm loss value: %.6E | "
                     "lm loss PPL: %.6E | ",
                     (long long)iteration, split_name, loss, ppl);
    size_t w = (size_t)n + 1 < sizeof dash ? (size_t)n + 1 : sizeof dash - 1;
    memset(dash, '-', w);
    dash[w] = 0;
    fprintf(l->out, "%s\n%s\n%s\n", dash, line, dash);
    fflush(l->out);
    if (l->tb) { /* evaluate_and_print_results: "lm loss validation" / "lm loss test" */
        char tag[64];
        snprintf(tag, sizeof tag, "lm loss %s", split_name);
        MG_FORWARD(tb_pair(l, tag, iteration, loss));
    }
    char a[40], b[40];
    return json_line(l, "{\"kind\": \"%s\", \"iteration\": %lld, \"loss\": %s, \"ppl\": %s}\n",
                     strcmp(split_name, "test") == 0 ? "test" : "valid", (long long)iteration,
                     jnum(a, 40, loss), jnum(b, 40, ppl));
}

double mg_measure_gemm_peak(const mg_kctx *k, double seconds)
{
    const int64_t n = 512;
    float *a = malloc((size_t)(3 * n * n) * sizeof(float));
    if (!a) return -1;
    for (int64_t i = 0; i < 3 * n * n; i++) a[i] = (float)((i * 7919) % 1000) * 1e-3f;
    float *b = a + n * n, *c = b + n * n;
    double best = -1, t_end = now_s() + seconds;
    do {
        double t0 = now_s();
        mgk_gemm(k, c, n, a, n, b, n, n, n, n, 0, 0, 1.0f, 0.0f);
        double dt = now_s() - t0;
        double f = dt > 0 ? 2.0 * (double)(n * n * n) / dt : -1;
        if (f > best) best = f;
    } while (now_s() < t_end);
    free(a);
    return best;
}

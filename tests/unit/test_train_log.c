/* test_train_log.c — train/log.h: Megatron's iteration line (fields, interval averages,
 * MFU "unknown"), the validation block and the metrics file's JSON lines; the gemm peak is
 * positive. (The whole line against a regex and real runs: tests/interop/test_train_run.py.) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "log.h"

static mg_log_iter iter(int64_t i, double loss)
{
    mg_log_iter it;
    memset(&it, 0, sizeof it);
    it.iteration = i;
    it.train_iters = 10;
    it.consumed_samples = 4 * i;
    it.global_batch_size = 4;
    it.tokens = 4 * 16;
    it.seconds = 0.5;
    it.flops = 1e12;
    it.lr = 2.5e-4;
    it.loss = loss;
    it.grad_norm = 1.25;
    it.loss_scale = 1.0;
    return it;
}

MG_TEST(train_log_line_and_metrics)
{
    char *out = NULL;
    size_t outlen = 0;
    FILE *mem = open_memstream(&out, &outlen);
    const char *json = mg_test_path(t, "m.jsonl");
    mg_train_log *l = NULL;
    MG_CHECK_OK(t, mg_train_log_create(&l, mem, json, 2, 4e12));
    mg_log_iter a = iter(1, 3.0), b = iter(2, 2.0), c = iter(3, 4.0), d = iter(4, 1.0);
    MG_CHECK_OK(t, mg_train_log_iter(l, &a)); /* printed: the first iteration */
    MG_CHECK_OK(t, mg_train_log_iter(l, &b)); /* printed: interval 2 = iteration 2 alone */
    MG_CHECK_OK(t, mg_train_log_iter(l, &c));
    MG_CHECK_OK(t, mg_train_log_iter(l, &d)); /* printed: mean of 4.0 and 1.0 */
    MG_CHECK_OK(t, mg_train_log_eval(l, 4, "validation", 25.0));
    mg_train_log_free(l);
    fclose(mem);
    MG_CHECK(t, strstr(out, "] iteration        1/      10 | consumed samples:            4 |"));
    MG_CHECK(t, strstr(out, "elapsed time per iteration (ms): 500.0 | throughput per GPU "
                            "(TFLOP/s/GPU): 2.00 | tokens per second: 128.0 | MFU: 50.00% |"));
    MG_CHECK(t, strstr(out, "learning rate: 2.500000E-04 | global batch size:     4 | "
                            "lm loss: 3.000000E+00 | loss scale: 1.0 | grad norm: 1.250 | "
                            "number of skipped iterations:   0 | number of nan iterations:   0 |\n"));
    MG_CHECK(t, strstr(out, "iteration        4/      10 |"));
    MG_CHECK(t, strstr(out, "lm loss: 2.500000E+00 |"));
    MG_CHECK(t, !strstr(out, "iteration        3/"));
    /* PPL = exp(min(20, loss)); dashes one longer than the line */
    const char *v = " validation loss at iteration 4 on validation set | lm loss value: "
                    "2.500000E+01 | lm loss PPL: 4.851652E+08 | ";
    char block[512];
    memset(block, '-', strlen(v) + 1);
    block[strlen(v) + 1] = 0;
    char want[1200];
    snprintf(want, sizeof want, "%s\n%s\n%s\n", block, v, block);
    MG_CHECK(t, strstr(out, want));
    char *js = mg_test_read_file(json, NULL);
    MG_CHECK(t, js && strstr(js, "{\"kind\": \"train\", \"iteration\": 3, \"consumed_samples\": 12, "
                                 "\"elapsed_ms\": 500, \"tokens_per_s\": 128, \"tflops\": 2, "
                                 "\"mfu\": 0.5, \"lr\": 0.00025000000000000001, "
                                 "\"global_batch_size\": 4, \"loss\": 4, \"grad_norm\": 1.25, "
                                 "\"loss_scale\": 1, \"skipped\": 0, \"nan\": 0}\n"));
    MG_CHECK(t, js && strstr(js, "{\"kind\": \"valid\", \"iteration\": 4, \"loss\": 25, "
                                 "\"ppl\": 485165195.40979028}\n"));
    free(js);
    free(out);
}

MG_TEST(train_log_unknown_peak_and_nan)
{
    char *out = NULL;
    size_t outlen = 0;
    FILE *mem = open_memstream(&out, &outlen);
    const char *json = mg_test_path(t, "m.jsonl");
    mg_train_log *l = NULL;
    MG_CHECK_OK(t, mg_train_log_create(&l, mem, json, 1, -1));
    mg_log_iter a = iter(1, NAN);
    MG_CHECK_OK(t, mg_train_log_iter(l, &a));
    MG_CHECK_OK(t, mg_train_log_eval(l, 1, "test", 1.0));
    mg_train_log_free(l);
    fclose(mem);
    MG_CHECK(t, strstr(out, "| MFU: unknown |"));
    MG_CHECK(t, strstr(out, "number of nan iterations:   1 |"));
    MG_CHECK(t, strstr(out, " validation loss at iteration 1 on test set |"));
    char *js = mg_test_read_file(json, NULL);
    MG_CHECK(t, js && strstr(js, "\"mfu\": null") && strstr(js, "\"loss\": null") &&
                    strstr(js, "\"nan\": 1}") && strstr(js, "{\"kind\": \"test\""));
    free(js);
    free(out);
}

/* fp16 overflows: skipped iterations are counted and left out of the mean loss, the scale
 * is printed with one decimal, a skipped last iteration prints no grad norm (Megatron's
 * grad_norm is None). */
MG_TEST(train_log_skipped_and_loss_scale)
{
    char *out = NULL;
    size_t outlen = 0;
    FILE *mem = open_memstream(&out, &outlen);
    mg_train_log *l = NULL;
    MG_CHECK_OK(t, mg_train_log_create(&l, mem, NULL, 3, -1));
    mg_log_iter a = iter(1, 9.0), b = iter(2, 5.0), c = iter(3, 7.0);
    a.skipped = 1;
    a.loss_scale = 2147483648.0;
    b.loss_scale = c.loss_scale = 0.5;
    c.skipped = 1;
    MG_CHECK_OK(t, mg_train_log_iter(l, &a));
    MG_CHECK_OK(t, mg_train_log_iter(l, &b));
    MG_CHECK_OK(t, mg_train_log_iter(l, &c));
    mg_train_log_free(l);
    fclose(mem);
    /* no lm loss before an iteration has advanced (Megatron's total_loss_dict) */
    MG_CHECK(t, strstr(out, "| global batch size:     4 | loss scale: 2147483648.0 | number of "
                            "skipped iterations:   1 |"));
    MG_CHECK(t, strstr(out, "| lm loss: 5.000000E+00 | loss scale: 0.5 | number of skipped "
                            "iterations:   1 | number of nan iterations:   0 |\n"));
    MG_CHECK(t, !strstr(out, "grad norm"));
    free(out);
}

MG_TEST(train_log_bad_metrics_path)
{
    mg_train_log *l = NULL;
    MG_CHECK_ERR(t, mg_train_log_create(&l, stdout, mg_test_path(t, "no/such/dir/m.jsonl"), 1, 1),
                 MG_ERR_NOTFOUND, "cannot create the metrics file");
    MG_CHECK(t, l == NULL);
}

MG_TEST(train_log_gemm_peak)
{
    mg_kctx k;
    MG_CHECK_OK(t, mgk_ctx_init(&k, MGK_CPU_REF, 1));
    double peak = mg_measure_gemm_peak(&k, 0.01);
    MG_CHECK(t, peak > 1e6 && isfinite(peak));
    mgk_ctx_free(&k);
}

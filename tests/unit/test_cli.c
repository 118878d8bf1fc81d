/* test_cli.c — the tool-side helpers: flag-value parsing, exit codes (mg/cli.h) and the
 * progress helpers (mg/progress.h) that do not print. */
#include "harness.h"
#include "mg/cli.h"
#include "mg/progress.h"

MG_TEST(cli_parse_i64)
{
    int64_t v = -1;
    MG_CHECK_EQ_INT(t, mg_parse_i64("42", 1, 100, &v), 0);
    MG_CHECK_EQ_INT(t, v, 42);
    MG_CHECK_EQ_INT(t, mg_parse_i64("-5", -10, 10, &v), 0);
    MG_CHECK_EQ_INT(t, v, -5);
    MG_CHECK_EQ_INT(t, mg_parse_i64("9223372036854775807", 0, INT64_MAX, &v), 0);
    MG_CHECK_EQ_INT(t, v, INT64_MAX);
    v = 7;
    MG_CHECK_EQ_INT(t, mg_parse_i64("0", 1, 100, &v), -1);    /* below min */
    MG_CHECK_EQ_INT(t, mg_parse_i64("101", 1, 100, &v), -1);  /* above max */
    MG_CHECK_EQ_INT(t, mg_parse_i64("", 0, 100, &v), -1);
    MG_CHECK_EQ_INT(t, mg_parse_i64("12x", 0, 100, &v), -1);
    MG_CHECK_EQ_INT(t, mg_parse_i64("1.5", 0, 100, &v), -1);
    MG_CHECK_EQ_INT(t, mg_parse_i64("99999999999999999999", 0, INT64_MAX, &v), -1);
    MG_CHECK_EQ_INT(t, mg_parse_i64(NULL, 0, 100, &v), -1);
    MG_CHECK_EQ_INT(t, v, 7); /* untouched on failure */
}

MG_TEST(cli_exit_codes)
{
    MG_CHECK_EQ_INT(t, mg_exit_code(MG_OK), MG_EXIT_OK);
    MG_CHECK_EQ_INT(t, mg_exit_code(MG_ERR_ARG), MG_EXIT_USAGE);
    MG_CHECK_EQ_INT(t, mg_exit_code(MG_ERR_UNSUPPORTED), MG_EXIT_USAGE);
    MG_CHECK_EQ_INT(t, mg_exit_code(MG_ERR_FORMAT), MG_EXIT_FAILURE);
    MG_CHECK_EQ_INT(t, mg_exit_code(MG_ERR_IO), MG_EXIT_FAILURE);
    MG_CHECK_EQ_INT(t, mg_exit_code(MG_ERR_NOSPACE), MG_EXIT_FAILURE);
    MG_CHECK_EQ_STR(t, mg_cli_prog(), "mg");
}

MG_TEST(progress_format_hms)
{
    char buf[32];
    MG_CHECK_EQ_STR(t, mg_format_hms(0, buf, sizeof buf), "0:00:00");
    MG_CHECK_EQ_STR(t, mg_format_hms(59.4, buf, sizeof buf), "0:00:59");
    MG_CHECK_EQ_STR(t, mg_format_hms(59.6, buf, sizeof buf), "0:01:00");
    MG_CHECK_EQ_STR(t, mg_format_hms(3600 * 27 + 61, buf, sizeof buf), "27:01:01");
    MG_CHECK_EQ_STR(t, mg_format_hms(-3, buf, sizeof buf), "0:00:00");
}

MG_TEST(progress_null_and_quiet)
{
    /* NULL is how --quiet is done: every call is a no-op. */
    mg_progress_update(NULL, 10, 10, 10);
    MG_CHECK(t, mg_progress_elapsed(NULL) == 0.0);
    mg_progress_free(NULL);
    /* A progress whose interval is never reached prints nothing and measures time. */
    mg_progress *p = NULL;
    MG_CHECK_OK(t, mg_progress_create(&p, "docs", 1000000, 1.0, 0));
    mg_progress_update(p, 5, 100, 0);
    MG_CHECK(t, mg_progress_elapsed(p) >= 0.0);
    double t0 = mg_now();
    MG_CHECK(t, mg_now() >= t0);
    mg_progress_free(p);
}

/* test_megatron_layout.c — mg/megatron_layout.h: the tracker rule (Megatron's read_metadata:
 * strip, Python int or "release", no negative iteration), the iteration folder it names,
 * the tracker written back, and the folder names. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "harness.h"
#include "mg/megatron_layout.h"

static mg_status parse(const char *text, mg_megatron_iter *it)
{
    return mg_megatron_tracker_parse(text, strlen(text), "T", it);
}

MG_TEST(megatron_tracker_numbers_and_release)
{
    static const struct {
        const char *text;
        int64_t iteration;
        int release;
    } ok[] = {
        {"1500", 1500, 0},        {"0", 0, 0},           {"  42\n", 42, 0},
        {"\t\r\n7\r\n", 7, 0},    {"\v\f9\x1c", 9, 0},   {"+12", 12, 0},
        {"-0", 0, 0},             {"1_000", 1000, 0},    {"0007", 7, 0},
        {"release", 0, 1},        {" release\n", 0, 1},  {"9223372036854775807", INT64_MAX, 0},
    };
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        mg_megatron_iter it = {-1, -1};
        MG_CHECK_OK(t, parse(ok[i].text, &it));
        MG_CHECK_EQ_INT(t, it.iteration, ok[i].iteration);
        MG_CHECK_EQ_INT(t, it.release, ok[i].release);
    }
}

MG_TEST(megatron_tracker_refuses_what_megatron_refuses)
{
    static const char *const bad[] = {"", "  \n", "release2", "Release", "rel ease", "12abc",
                                      "1 2", "1__0", "_1", "1_", "0x10", "1.5", "1e3", "--1",
                                      "release\nrelease", "\xc2\xa0" "5"};
    mg_megatron_iter it;
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        MG_CHECK_ERR(t, parse(bad[i], &it), MG_ERR_FORMAT, "T: expected an iteration number");
    MG_CHECK_ERR(t, parse("-3", &it), MG_ERR_FORMAT, "T: negative iteration -3");
    MG_CHECK_ERR(t, parse("9223372036854775808", &it), MG_ERR_LIMIT, "too large");
    MG_CHECK_ERR(t, parse("99999999999999999999999", &it), MG_ERR_LIMIT, "too large");
    /* not NUL-terminated: only len bytes count */
    MG_CHECK_OK(t, mg_megatron_tracker_parse("12345", 2, "T", &it));
    MG_CHECK_EQ_INT(t, it.iteration, 12);
}

MG_TEST(megatron_tracker_read_needs_the_iteration_folder)
{
    mg_megatron_iter it;
    MG_CHECK_ERR(t, mg_megatron_tracker_read(t->dir, &it), MG_ERR_NOTFOUND, MG_MEGATRON_TRACKER);
    mg_test_write_file(t, MG_MEGATRON_TRACKER, " 20\n", 4);
    MG_CHECK_ERR(t, mg_megatron_tracker_read(t->dir, &it), MG_ERR_NOTFOUND,
                 "iter_0000020: no such folder (named by ");
    mkdir(mg_test_path(t, "iter_0000020"), 0777);
    MG_CHECK_OK(t, mg_megatron_tracker_read(t->dir, &it));
    MG_CHECK(t, it.iteration == 20 && !it.release);
    mg_test_write_file(t, MG_MEGATRON_TRACKER, "release", 7);
    MG_CHECK_ERR(t, mg_megatron_tracker_read(t->dir, &it), MG_ERR_NOTFOUND, "release: no such");
    mg_test_write_file(t, MG_MEGATRON_TRACKER, "iter_0000020", 12);
    MG_CHECK_ERR(t, mg_megatron_tracker_read(t->dir, &it), MG_ERR_FORMAT,
                 MG_MEGATRON_TRACKER ": expected an iteration number or 'release'");
}

MG_TEST(megatron_tracker_write_reads_back)
{
    const mg_megatron_iter cases[] = {{1500, 0}, {0, 1}, {0, 0}};
    const char *const text[] = {"1500", "release", "0"};
    for (int i = 0; i < 3; i++) {
        MG_CHECK_OK(t, mg_megatron_tracker_write(t->dir, &cases[i]));
        size_t len = 0;
        char *s = mg_test_read_file(mg_test_path(t, MG_MEGATRON_TRACKER), &len);
        MG_CHECK_EQ_STR(t, s, text[i]);
        mg_megatron_iter back;
        MG_CHECK_OK(t, mg_megatron_tracker_parse(s, len, "T", &back));
        MG_CHECK(t, back.iteration == cases[i].iteration && back.release == cases[i].release);
        free(s);
    }
}

MG_TEST(megatron_folder_names)
{
    char name[MG_MEGATRON_NAME_MAX], rel[64];
    mg_megatron_iter it = {7, 0}, rel_it = {0, 1}, big = {INT64_MAX, 0};
    mg_megatron_iter_name(&it, name);
    MG_CHECK_EQ_STR(t, name, "iter_0000007");
    mg_megatron_iter_name(&rel_it, name);
    MG_CHECK_EQ_STR(t, name, "release");
    mg_megatron_iter_name(&big, name);
    MG_CHECK_EQ_STR(t, name, "iter_9223372036854775807");
    mg_megatron_rank_name(3, 0, 0, name);
    MG_CHECK_EQ_STR(t, name, "mp_rank_03");
    mg_megatron_rank_name(1, 2, 1, name);
    MG_CHECK_EQ_STR(t, name, "mp_rank_01_002");
    mg_megatron_rank_name(INT64_MAX, INT64_MAX, 1, name);
    MG_CHECK_EQ_STR(t, name, "mp_rank_9223372036854775807_9223372036854775807");
    MG_CHECK_OK(t, mg_megatron_rank_file(&it, 0, 1, 1, rel, sizeof rel));
    MG_CHECK_EQ_STR(t, rel, "iter_0000007/mp_rank_00_001/model_optim_rng.pt");
    MG_CHECK_ERR(t, mg_megatron_rank_file(&it, 0, 1, 1, rel, 20), MG_ERR_LIMIT, "too long");
}

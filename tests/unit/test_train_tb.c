/* test_train_tb.c — tb_events.h: the CRC-32C check value, and an event file's framing
 * (record lengths and masked checksums) with the file version first. */
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "tb_events.h"

MG_TEST(train_tb_crc32c_check_value)
{
    MG_CHECK_EQ_INT(t, mg_tb_crc32c("123456789", 9), 0xe3069283u); /* CRC-32C's check */
    MG_CHECK_EQ_INT(t, mg_tb_crc32c("", 0), 0);
}

static uint32_t u32(const unsigned char *p)
{
    return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static uint32_t masked(uint32_t c) { return ((c >> 15) | (c << 17)) + 0xa282ead8u; }

MG_TEST(train_tb_records_are_framed)
{
    const char *dir = mg_test_path(t, "tb");
    mg_tb_writer *w = NULL;
    MG_CHECK_OK(t, mg_tb_create(&w, dir));
    MG_CHECK_OK(t, mg_tb_scalar(w, "lm loss", 3, 2.5));
    mg_tb_free(w);
    char cmd[600], path[512];
    snprintf(cmd, sizeof cmd, "ls %s/events.out.tfevents.*", dir);
    FILE *ls = popen(cmd, "r");
    MG_CHECK(t, ls && fgets(path, sizeof path, ls));
    if (ls) pclose(ls);
    path[strcspn(path, "\n")] = 0;
    unsigned char b[512];
    FILE *f = fopen(path, "rb");
    MG_CHECK(t, f != NULL);
    size_t n = f ? fread(b, 1, sizeof b, f) : 0;
    if (f) fclose(f);
    size_t records = 0;
    for (size_t i = 0; i + 12 <= n; records++) {
        uint64_t len = u32(b + i) | (uint64_t)u32(b + i + 4) << 32;
        MG_CHECK_EQ_INT(t, u32(b + i + 8), masked(mg_tb_crc32c(b + i, 8)));
        MG_CHECK(t, i + 16 + len <= n);
        if (i + 16 + len > n) break;
        MG_CHECK_EQ_INT(t, u32(b + i + 12 + len), masked(mg_tb_crc32c(b + i + 12, len)));
        if (records == 0) MG_CHECK(t, memmem(b + i + 12, len, "brain.Event:2", 13) != NULL);
        else MG_CHECK(t, memmem(b + i + 12, len, "lm loss", 7) != NULL);
        i += 16 + len;
    }
    MG_CHECK_EQ_INT(t, records, 2);
}

/* test_pages.c — mg/pages.h: zeroed writable blocks; from 2 MiB on rounded up to whole
 * 2 MiB pages at a 2 MiB boundary, advised for transparent huge pages where the kernel has
 * them, and returned whole by mg_pages_free (nothing of the rounded range stays mapped). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "harness.h"
#include "mg/pages.h"

#define MIB ((size_t)1 << 20)

/* Is any page of [p, p + len) mapped? (mincore fails with ENOMEM on an unmapped page.) */
static int any_mapped(uint8_t *p, size_t len)
{
    unsigned char v;
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    for (size_t off = 0; off < len; off += page)
        if (mincore(p + off, page, &v) == 0) return 1;
    return 0;
}

/* The VmFlags line of the /proc/self/smaps entry that starts at p, in buf ("" if none). */
static void vm_flags_of(const void *p, char *buf, size_t cap)
{
    char want[32], line[512];
    snprintf(want, sizeof want, "%lx-", (unsigned long)(uintptr_t)p);
    buf[0] = 0;
    FILE *f = fopen("/proc/self/smaps", "r");
    if (!f) return;
    int in = 0;
    while (fgets(line, sizeof line, f)) {
        if (strchr(line, '-') && strncmp(line, want, strlen(want)) == 0) in = 1;
        else if (in && strncmp(line, "VmFlags:", 8) == 0) {
            snprintf(buf, cap, "%s", line);
            break;
        }
    }
    fclose(f);
}

static int all_zero(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (p[i]) return 0;
    return 1;
}

MG_TEST(pages_small_block_is_zeroed_page_aligned)
{
    size_t n = 3 * 4096 + 17;
    uint8_t *p = mg_pages_alloc(n);
    MG_CHECK(t, p != NULL);
    MG_CHECK(t, (uintptr_t)p % (uintptr_t)sysconf(_SC_PAGESIZE) == 0);
    MG_CHECK(t, all_zero(p, n));
    memset(p, 0xAB, n);
    mg_pages_free(p, n);
    MG_CHECK(t, !any_mapped(p, n));
    mg_pages_free(NULL, n); /* nothing */
}

MG_TEST(pages_large_block_is_whole_aligned_huge_pages)
{
    size_t n = 5 * MIB + 1, rounded = 6 * MIB;
    uint8_t *p = mg_pages_alloc(n);
    MG_CHECK(t, p != NULL);
    MG_CHECK(t, (uintptr_t)p % (2 * MIB) == 0);
    MG_CHECK(t, all_zero(p, rounded)); /* the rounding is readable and zero too */
    p[0] = 1;
    p[n - 1] = 2;
    p[rounded - 1] = 3;
    char flags[512];
    vm_flags_of(p, flags, sizeof flags);
    MG_CHECK(t, flags[0] != 0);
    if (access("/sys/kernel/mm/transparent_hugepage/enabled", F_OK) == 0)
        MG_CHECK(t, strstr(flags, " hg") != NULL); /* MADV_HUGEPAGE on the range */
    mg_pages_free(p, n);
    MG_CHECK(t, !any_mapped(p, rounded)); /* the rounding went back too */
}

MG_TEST(pages_blocks_of_exactly_two_mib_and_more)
{
    for (size_t n = 2 * MIB; n <= 4 * MIB; n += MIB) {
        uint8_t *p = mg_pages_alloc(n);
        MG_CHECK(t, p != NULL && (uintptr_t)p % (2 * MIB) == 0);
        p[n - 1] = 7;
        MG_CHECK_EQ_INT(t, p[n - 1], 7);
        size_t rounded = (n + 2 * MIB - 1) / (2 * MIB) * (2 * MIB);
        mg_pages_free(p, n);
        MG_CHECK(t, !any_mapped(p, rounded));
    }
}

/* Shrinking keeps the first m bytes (their contents too) and unmaps the pages past them:
 * huge blocks to huge and to small sizes, a small block to fewer pages. */
MG_TEST(pages_shrink_returns_the_tail)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    const size_t sizes[][2] = {{8 * MIB, 4 * MIB}, {4 * MIB, 1 * MIB}, {5 * page + 100, 2 * page}};
    for (size_t k = 0; k < sizeof sizes / sizeof sizes[0]; k++) {
        size_t n = sizes[k][0], m = sizes[k][1];
        size_t unit = n < 2 * MIB ? page : 2 * MIB, had = (n + unit - 1) / unit * unit;
        uint8_t *p = mg_pages_alloc(n);
        MG_CHECK(t, p != NULL);
        if (!p) continue;
        memset(p, 0x5A, n);
        mg_pages_shrink(p, n, m);
        MG_CHECK(t, p[0] == 0x5A && p[m - 1] == 0x5A);
        MG_CHECK(t, !any_mapped(p + m, had - m));
        mg_pages_free(p, m);
        MG_CHECK(t, !any_mapped(p, m));
    }
}

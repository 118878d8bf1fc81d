/* pages.c — mg/pages.h: zeroed tables mapped from the kernel, in huge pages when large. */
#include "mg/pages.h"

#include <stdint.h>
#include <sys/mman.h>
#include <unistd.h>

#include "mg/error.h"

/* A transparent huge page on x86-64 and most arm64 kernels. */
#define HUGE_BYTES ((size_t)2 << 20)

/* The length mapped for n bytes: n itself, or n rounded up to whole huge pages. */
static size_t mapped_len(size_t n)
{
    if (n == 0) return 1;
    return n < HUGE_BYTES ? n : (n + HUGE_BYTES - 1) & ~(HUGE_BYTES - 1);
}

static void *map_zero(size_t len)
{
    void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

/* len (whole huge pages) at a huge-page boundary: one more huge page is mapped and the
 * parts before and after the aligned range are returned to the kernel. */
static void *map_huge(size_t len)
{
    uint8_t *p = map_zero(len + HUGE_BYTES);
    if (!p) return NULL;
    uint8_t *a = (uint8_t *)(((uintptr_t)p + HUGE_BYTES - 1) & ~(uintptr_t)(HUGE_BYTES - 1));
    if (a > p) munmap(p, (size_t)(a - p));
    munmap(a + len, (size_t)(p + HUGE_BYTES - a));
#ifdef MADV_HUGEPAGE
    madvise(a, len, MADV_HUGEPAGE); /* advice: without it (or THP off) small pages serve */
#endif
    return a;
}

void *mg_pages_alloc(size_t n)
{
    size_t len = mapped_len(n);
    void *p = len < HUGE_BYTES ? map_zero(len) : map_huge(len);
    if (!p) mg_error_set(MG_ERR_NOMEM, "out of memory mapping %zu bytes", n);
    return p;
}

void mg_pages_free(void *p, size_t n)
{
    if (p) munmap(p, mapped_len(n));
}

/* n rounded up to whole pages (what a mapping of n bytes spans). */
static size_t page_up(size_t n)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE);
    return (n + page - 1) & ~(page - 1);
}

void mg_pages_shrink(void *p, size_t n, size_t m)
{
    size_t keep = page_up(mapped_len(m)), had = page_up(mapped_len(n));
    if (p && keep < had) munmap((uint8_t *)p + keep, had - keep);
}

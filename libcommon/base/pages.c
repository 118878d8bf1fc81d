/* pages.c — mg/pages.h: zeroed tables mapped from the kernel. */
#include "mg/pages.h"

#include <sys/mman.h>

#include "mg/error.h"

void *mg_pages_alloc(size_t n)
{
    void *p = mmap(NULL, n ? n : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p != MAP_FAILED) return p;
    mg_error_set(MG_ERR_NOMEM, "out of memory mapping %zu bytes", n);
    return NULL;
}

void mg_pages_free(void *p, size_t n)
{
    if (p) munmap(p, n ? n : 1);
}

/* mg/pages.h — large zeroed tables that cost nothing until they are used, in huge pages.
 *
 * Contract:
 *   - mg_pages_alloc(n) returns n bytes of fresh zero pages straight from the kernel
 *     (page-aligned), so a page is touched, and counts towards the resident size, only
 *     when it is first written. calloc gives that only while glibc's mmap threshold has
 *     not risen past n, which it does after any large block has been freed (a tokenizer's
 *     load frees several): then calloc zeroes, and touches, the whole block at once.
 *   - From 2 MiB on, the block is rounded up to whole 2 MiB pages, aligned to 2 MiB and
 *     advised for transparent huge pages (madvise MADV_HUGEPAGE, which THP's default
 *     "madvise" mode waits for): a table read at random then costs one TLB entry per 2 MiB
 *     instead of per 4 KiB, and the first write into each 2 MiB maps (and counts) all of
 *     it. Where the kernel gives no huge pages the block is ordinary pages, as below 2 MiB.
 *   - On failure it returns NULL with MG_ERR_NOMEM's message set.
 *   - mg_pages_free(p, n) returns them (n as given to mg_pages_alloc; p NULL: nothing).
 *   - mg_pages_shrink(p, n, m) (m <= n) returns the pages past the first m bytes; the block
 *     is then one of m bytes (for mg_pages_free and mg_pages_shrink).
 */
#ifndef MG_PAGES_H
#define MG_PAGES_H

#include <stddef.h>

void *mg_pages_alloc(size_t n);
void mg_pages_free(void *p, size_t n);
void mg_pages_shrink(void *p, size_t n, size_t m);

#endif /* MG_PAGES_H */

/* mg/pages.h — large zeroed tables that cost nothing until they are used.
 *
 * Contract:
 *   - mg_pages_alloc(n) returns n bytes of fresh zero pages straight from the kernel
 *     (page-aligned), so a page is touched, and counts towards the resident size, only
 *     when it is first written. calloc gives that only while glibc's mmap threshold has
 *     not risen past n, which it does after any large block has been freed (a tokenizer's
 *     load frees several): then calloc zeroes, and touches, the whole block at once.
 *   - On failure it returns NULL with MG_ERR_NOMEM's message set.
 *   - mg_pages_free(p, n) returns them (n as given to mg_pages_alloc; p NULL: nothing).
 */
#ifndef MG_PAGES_H
#define MG_PAGES_H

#include <stddef.h>

void *mg_pages_alloc(size_t n);
void mg_pages_free(void *p, size_t n);

#endif /* MG_PAGES_H */

/* mg/grow.h — growable arrays: one helper for every array that grows by doubling.
 *
 * Contract:
 *   - mg_grow(&p, &cap, need, elem, first) makes the array p (cap elements of elem bytes)
 *     hold at least need elements. When need > cap, the capacity doubles from cap (from
 *     first when cap is 0) until it reaches need, and p is reallocated: the first cap
 *     elements are kept, the new ones are uninitialised. On failure (out of memory, or a
 *     byte size beyond SIZE_MAX) it returns MG_ERR_NOMEM with the message set and leaves p
 *     and cap as they were.
 *   - MG_GROW(arr, cap, need, first) is the same for a typed pointer lvalue arr and a
 *     size_t lvalue cap.
 */
#ifndef MG_GROW_H
#define MG_GROW_H

#include <stddef.h>

#include "mg/error.h"

/* pp points at the array pointer (any object pointer type). */
mg_status mg_grow(void *pp, size_t *cap, size_t need, size_t elem, size_t first);

#define MG_GROW(arr, cap, need, first) mg_grow(&(arr), &(cap), (need), sizeof *(arr), (first))

#endif /* MG_GROW_H */

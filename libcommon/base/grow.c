/* grow.c — mg/grow.h: capacity doubling and reallocation of growable arrays. */
#include "mg/grow.h"

#include <stdint.h>
#include <string.h>

mg_status mg_grow(void *pp, size_t *cap, size_t need, size_t elem, size_t first)
{
    if (need <= *cap) return MG_OK;
    size_t c = *cap ? *cap : first ? first : 1;
    while (c < need) {
        if (c > SIZE_MAX / 2) return mg_error_set(MG_ERR_NOMEM, "array of %zu elements too big", need);
        c *= 2;
    }
    if (elem && c > SIZE_MAX / elem)
        return mg_error_set(MG_ERR_NOMEM, "array of %zu elements of %zu bytes too big", c, elem);
    void *p; /* the caller's pointer, whatever its type: copied, not type-punned */
    memcpy(&p, pp, sizeof p);
    void *q = mg_realloc(p, c * elem);
    if (!q) return MG_ERR_NOMEM;
    memcpy(pp, &q, sizeof q);
    *cap = c;
    return MG_OK;
}

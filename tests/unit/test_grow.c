/* test_grow.c — mg/grow.h: capacity doubling from `first` or the current capacity, kept
 * elements, no reallocation when the room is there, and refusal of sizes beyond SIZE_MAX. */
#include <stdint.h>
#include <stdlib.h>

#include "harness.h"
#include "mg/grow.h"

MG_TEST(grow_doubles_and_keeps_elements)
{
    int64_t *a = NULL;
    size_t cap = 0;
    MG_CHECK_OK(t, MG_GROW(a, cap, 1, 4));
    MG_CHECK_EQ_INT(t, cap, 4);
    for (int i = 0; i < 4; i++) a[i] = i * 10;
    int64_t *before = a;
    MG_CHECK_OK(t, MG_GROW(a, cap, 4, 4)); /* room already there: untouched */
    MG_CHECK(t, a == before && cap == 4);
    MG_CHECK_OK(t, MG_GROW(a, cap, 5, 4));
    MG_CHECK_EQ_INT(t, cap, 8);
    MG_CHECK_OK(t, MG_GROW(a, cap, 33, 4));
    MG_CHECK_EQ_INT(t, cap, 64);
    for (int i = 0; i < 4; i++) MG_CHECK_EQ_INT(t, a[i], i * 10);
    free(a);
}

MG_TEST(grow_refuses_sizes_beyond_size_max)
{
    char *b = NULL;
    size_t cap = 0;
    MG_CHECK_ERR(t, MG_GROW(b, cap, SIZE_MAX, 16), MG_ERR_NOMEM, "too big");
    MG_CHECK(t, b == NULL && cap == 0);
    double *d = NULL;
    MG_CHECK_ERR(t, MG_GROW(d, cap, SIZE_MAX / 4, 16), MG_ERR_NOMEM, "too big");
    MG_CHECK(t, d == NULL && cap == 0);
}

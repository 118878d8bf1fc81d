/* test_nprandom.c — mg/nprandom.h against values printed by numpy's RandomState
 * (docs/FORMATS.md §4 vectors, plus numpy 2.4 outputs recorded here). The interop
 * test tests/interop/test_gptds.py compares many more seeds and sizes with numpy itself.
 */
#include <math.h>

#include "harness.h"
#include "mg/nprandom.h"

MG_TEST(nprandom_raw_words)
{
    static const uint32_t s1234[5] = {822569775u, 2137449171u, 2671936806u, 3512589365u,
                                      1880026316u};
    static const uint32_t s0[5] = {2357136044u, 2546248239u, 3071714933u, 3626093760u,
                                   2588848963u};
    mg_nprandom a, b;
    MG_CHECK_OK(t, mg_nprandom_seed(&a, 1234));
    MG_CHECK_OK(t, mg_nprandom_seed(&b, 0));
    for (int i = 0; i < 5; i++) {
        MG_CHECK_EQ_INT(t, mg_nprandom_next32(&a), s1234[i]);
        MG_CHECK_EQ_INT(t, mg_nprandom_next32(&b), s0[i]);
    }
}

MG_TEST(nprandom_seed_range)
{
    mg_nprandom a;
    MG_CHECK_OK(t, mg_nprandom_seed(&a, 0xffffffffu));
    MG_CHECK_ERR(t, mg_nprandom_seed(&a, 0x100000000ull), MG_ERR_ARG, "2**32 - 1");
    int64_t p[12];
    static const int64_t want[12] = {11, 8, 5, 9, 1, 10, 6, 0, 4, 7, 2, 3};
    mg_nprandom_permutation(&a, p, 12);
    for (int i = 0; i < 12; i++) MG_CHECK_EQ_INT(t, p[i], want[i]);
}

MG_TEST(nprandom_shuffle_vectors)
{
    mg_nprandom rs;
    int32_t a[10];
    static const int32_t want[10] = {7, 2, 9, 1, 0, 8, 4, 5, 6, 3};
    for (int i = 0; i < 10; i++) a[i] = i;
    MG_CHECK_OK(t, mg_nprandom_seed(&rs, 1234));
    mg_nprandom_shuffle_i32(&rs, a, 10);
    for (int i = 0; i < 10; i++) MG_CHECK_EQ_INT(t, a[i], want[i]);

    /* seed 99: arange(1000, uint32) shuffled, then randint(0, 1000) continues the stream */
    uint32_t u[1000];
    static const uint32_t head[6] = {890, 983, 107, 609, 113, 350};
    for (int i = 0; i < 1000; i++) u[i] = (uint32_t)i;
    MG_CHECK_OK(t, mg_nprandom_seed(&rs, 99));
    mg_nprandom_shuffle_u32(&rs, u, 1000);
    for (int i = 0; i < 6; i++) MG_CHECK_EQ_INT(t, u[i], head[i]);
    int64_t r;
    MG_CHECK_OK(t, mg_nprandom_randint(&rs, 0, 1000, &r, 1));
    MG_CHECK_EQ_INT(t, r, 876);
}

MG_TEST(nprandom_shuffle_generic_matches_typed)
{
    mg_nprandom a, b;
    int64_t x[257], y[257];
    for (int i = 0; i < 257; i++) x[i] = y[i] = i * 3;
    MG_CHECK_OK(t, mg_nprandom_seed(&a, 5));
    MG_CHECK_OK(t, mg_nprandom_seed(&b, 5));
    mg_nprandom_shuffle(&a, x, 257, sizeof x[0]);
    mg_nprandom_shuffle_i64(&b, y, 257);
    for (int i = 0; i < 257; i++) MG_CHECK_EQ_INT(t, x[i], y[i]);
    mg_nprandom_shuffle(&a, x, 0, 8); /* n <= 1 draws nothing */
    mg_nprandom_shuffle(&a, x, 1, 8);
    MG_CHECK_EQ_INT(t, mg_nprandom_next32(&a), mg_nprandom_next32(&b));
}

MG_TEST(nprandom_randint_vectors)
{
    mg_nprandom rs;
    int64_t v[8];
    static const int64_t small[8] = {3, 6, 5, 4, 8, 9, 1, 7};
    MG_CHECK_OK(t, mg_nprandom_seed(&rs, 1234));
    MG_CHECK_OK(t, mg_nprandom_randint(&rs, 0, 10, v, 8));
    for (int i = 0; i < 8; i++) MG_CHECK_EQ_INT(t, v[i], small[i]);

    static const int64_t big[4] = {752595690687ll, 108744157681ll, 291964244174ll,
                                   309610205524ll};
    MG_CHECK_OK(t, mg_nprandom_seed(&rs, 7));
    MG_CHECK_OK(t, mg_nprandom_randint(&rs, -5, 1ll << 40, v, 4));
    for (int i = 0; i < 4; i++) MG_CHECK_EQ_INT(t, v[i], big[i]);

    /* seed 7: randint(0, 2**32+1, 3), randint(3, 4, 2) (no draws), randint(0, 2**32, 2) */
    static const int64_t mixed[7] = {1322904761, 1133316631, 372560217, 3, 3, 309457262,
                                     1801189930};
    MG_CHECK_OK(t, mg_nprandom_seed(&rs, 7));
    MG_CHECK_OK(t, mg_nprandom_randint(&rs, 0, (1ll << 32) + 1, v, 3));
    MG_CHECK_OK(t, mg_nprandom_randint(&rs, 3, 4, v + 3, 2));
    MG_CHECK_OK(t, mg_nprandom_randint(&rs, 0, 1ll << 32, v + 5, 2));
    for (int i = 0; i < 7; i++) MG_CHECK_EQ_INT(t, v[i], mixed[i]);
    MG_CHECK_ERR(t, mg_nprandom_randint(&rs, 4, 4, v, 1), MG_ERR_ARG, "low 4 >= high 4");
}

MG_TEST(nprandom_regenerates_past_624_words)
{
    mg_nprandom rs;
    int64_t v;
    MG_CHECK_OK(t, mg_nprandom_seed(&rs, 0));
    for (int i = 0; i < 700; i++) MG_CHECK_OK(t, mg_nprandom_randint(&rs, 0, 1ll << 31, &v, 1));
    MG_CHECK_OK(t, mg_nprandom_randint(&rs, 0, 1ll << 31, &v, 1));
    MG_CHECK_EQ_INT(t, v, 625219425);
}

MG_TEST(nprandom_random_sample)
{
    mg_nprandom rs;
    static const double want[3] = {0.1915194503788923, 0.6221087710398319, 0.4377277390071145};
    MG_CHECK_OK(t, mg_nprandom_seed(&rs, 1234));
    for (int i = 0; i < 3; i++) MG_CHECK(t, mg_nprandom_random_sample(&rs) == want[i]);
}

/* test_npgenerator.c — mg/npgenerator.h against numbers printed by numpy 2.4.6
 * (numpy.random.SeedSequence, PCG64, default_rng(seed).integers): several seeds, int32 and
 * int64 ranges including one-value ranges, powers of two, the full 2^32 and 2^64 spans and
 * ranges where Lemire's rejection fires often; after each case the next raw 64-bit output
 * checks that the stream stands where numpy's does.
 */
#include "harness.h"
#include "mg/npgenerator.h"

MG_TEST(npgen_seedseq_generate_state)
{
    static const struct {
        uint64_t entropy;
        uint32_t w32[5];
        uint64_t w64[3];
    } v[] = {
        {0, {0xb0f478be, 0xdb2cd7e7, 0x2c71ba49, 0xabf4641a, 0x9d7b8d41},
         {0xdb2cd7e7b0f478beull, 0xabf4641a2c71ba49ull, 0x20c6ed6d9d7b8d41ull}},
        {12345, {0xa03d837c, 0xb5ae6482, 0xfa1f7a2f, 0xbbe2996f, 0x37158f94},
         {0xb5ae6482a03d837cull, 0xbbe2996ffa1f7a2full, 0x64e39a9f37158f94ull}},
        {(1ull << 40) + 7, {0x0e3d1a15, 0x0d8672e1, 0x4ecfa161, 0x9aef4ada, 0x83dba903},
         {0x0d8672e10e3d1a15ull, 0x9aef4ada4ecfa161ull, 0x999c1c3b83dba903ull}},
        {UINT64_MAX, {0x928cad0d, 0xaebca151, 0x8638dc7a, 0x119c3044, 0x59e642a7},
         {0xaebca151928cad0dull, 0x119c30448638dc7aull, 0x1bbb155659e642a7ull}},
    };
    for (size_t c = 0; c < sizeof v / sizeof v[0]; c++) {
        mg_seedseq s;
        uint32_t w32[5];
        uint64_t w64[3];
        mg_seedseq_init(&s, v[c].entropy);
        mg_seedseq_generate_u32(&s, w32, 5);
        mg_seedseq_generate_u64(&s, w64, 3);
        for (int i = 0; i < 5; i++) MG_CHECK_EQ_INT(t, w32[i], v[c].w32[i]);
        for (int i = 0; i < 3; i++) MG_CHECK(t, w64[i] == v[c].w64[i]);
    }
}

MG_TEST(npgen_seedseq_words)
{
    /* SeedSequence(2**40 + 7) is the word list [7, 256] */
    static const uint32_t words[2] = {7, 256};
    mg_seedseq a, b;
    mg_seedseq_init_words(&a, words, 2);
    mg_seedseq_init(&b, (1ull << 40) + 7);
    for (int i = 0; i < MG_SEEDSEQ_POOL; i++) MG_CHECK_EQ_INT(t, a.pool[i], b.pool[i]);
}

MG_TEST(npgen_pcg64_raw)
{
    static const struct {
        uint64_t seed, raw[4];
    } v[] = {
        {0, {0xa30febcfd9c2825full, 0x4510bdf882d9d721ull, 0x0a7d3da94ecde8b8ull,
             0x043b27b61342f01dull}},
        {1, {0x8306bdf37922e4ffull, 0xf35196bbc152a866ull, 0x24e7a4f608ec18cdull,
             0xf2dab0aed2ac6fd2ull}},
        {42, {0xc621fbcd16d92688ull, 0x705a5661a791ffc1ull, 0xdbcd12c26eda1624ull,
              0xb286b60e1600888dull}},
        {(1ull << 33) + 5, {0x3cdb47f7caf72cceull, 0x6d85b291b606293aull,
                            0x9766dd8e13a0becbull, 0xb392bbc78aa3a409ull}},
    };
    for (size_t c = 0; c < sizeof v / sizeof v[0]; c++) {
        mg_pcg64 g;
        mg_pcg64_seed(&g, v[c].seed);
        for (int i = 0; i < 4; i++) MG_CHECK(t, mg_pcg64_next64(&g) == v[c].raw[i]);
    }
}

MG_TEST(npgen_pcg64_next32_halves)
{
    mg_pcg64 g;
    mg_pcg64_seed(&g, 0);
    MG_CHECK_EQ_INT(t, mg_pcg64_next32(&g), 0xd9c2825fu); /* low half first */
    MG_CHECK_EQ_INT(t, g.has_uint32, 1);
    MG_CHECK_EQ_INT(t, mg_pcg64_next32(&g), 0xa30febcfu);
    MG_CHECK_EQ_INT(t, g.has_uint32, 0);
    MG_CHECK(t, mg_pcg64_next64(&g) == 0x4510bdf882d9d721ull);
}

typedef struct {
    int64_t low, high;
    int bits, endpoint;
    size_t n, first; /* values in want_values[first .. first + n) */
} int_call;

typedef struct {
    const char *name;
    uint64_t seed;
    size_t first, n_calls; /* calls[first .. first + n_calls) on one generator */
    uint64_t next_raw;     /* bit_generator.random_raw() afterwards */
} int_case;

/* Printed by numpy: default_rng(seed).integers(low, high, size=n, dtype=int32|int64,
 * endpoint=...) for each call in turn. */
static const int64_t want_values[] = {
    3484, 2609, 2094, 1105,
    1261, 168, 309, 68,
    718, 3331, 2660, 3738,
    5, 5, 5, 5,
    7, 7, 7, 967,
    640, 700, 918, 592,
    794, 853, 230, 56,
    644602188, 612176794, 1875941739, 1959843384,
    11307155, -1572811698, -1595278832, 1275951719,
    -3101558, 386688124, 445612274, -2074512521,
    455075803, -487503825, -117357736, 1007783089,
    -1973760697, -1252228629, -912566045, -831699355,
    -1725306790, -2001642041, -1990424069, 1071087904,
    -1532286785, -46055649, 269269393, -1392073414,
    -1238333363, -1299535857, -1575002574, 744138328,
    422051938, -1774690486, -124456578, -559345343,
    -2577634, 32285328, -1951624401, 941991719,
    -357783285, -1273076826, -982951887, 686071117,
    -1545428235, -943046111, 655267598, -1048872754,
    -1415239425, -393689309, -3, 2,
    3, -4, -6, -1,
    0, 1, 0, 3848090812LL,
    3714277353LL, 3520779263LL, 3673496329LL, 298568889,
    62, 88, -48, -67,
    -85, 929169561021LL, 176991785499LL, 613246615157LL,
    404708175810LL, 236331188233LL, -1053087378980768256LL, -662565550313467757LL,
    1026958913425984660LL, 2180274827999821464LL, -1468751978022873802LL, 7855902812672099043LL,
    -4171362460625232689LL, -348760310966446484LL, -7650214561934898194LL, -184298819032167163LL,
    2584256571866324975LL, -6207071535640124649LL, 690618002671224883LL, -2711214766543159378LL,
    -3478752520614188640LL, -4392891888712189746LL, -8339951655064140214LL, -2933039235695816026LL,
    -5052748412638031086LL, -1748320339235276321LL, 234131038956816112LL, -579886628418432926LL,
    1051987200610251308LL, -1723905205228694693LL, 2554980304035372356LL, 3768152095724471547LL,
    -9045963448360932965LL, -5718621302469385718LL, -580500732200276885LL, 2494869895072867568LL,
    3789923925341962135LL, -442185324507794615LL, -2337681131980058777LL, -5994811134917949118LL,
    -7008962395209459298LL, -2335208681295313921LL, 1088635549057413526LL, 10,
    10, 10, 4611686018427387904LL, 4611686018427387904LL,
    548, 903, 493, 757427560925762LL,
    532038040440997LL, 67, 354, 710334,
    731157, 41584,
};

static const int_call calls[] = {
    {1, 4096, 32, 0, 12, 0}, /* i32_mock */
    {5, 6, 32, 0, 4, 12}, /* i32_one */
    {7, 7, 32, 1, 3, 16}, /* i32_one */
    {0, 1024, 32, 0, 9, 19}, /* i32_pow2 */
    {0, 2147483648LL, 32, 0, 5, 28}, /* i32_pow2 */
    {-2147483648LL, 2147483648LL, 32, 0, 5, 33}, /* i32_full */
    {-2147483648LL, 1073741824, 32, 0, 40, 38}, /* i32_reject */
    {-7, 3, 32, 1, 9, 78}, /* i32_neg */
    {0, 4294967296LL, 64, 0, 5, 87}, /* i64_32bit */
    {-100, 100, 64, 0, 5, 92}, /* i64_32bit */
    {0, 1099511627776LL, 64, 0, 5, 97}, /* i64_wide */
    {-4611686018427387904LL, 4611686018427387904LL, 64, 0, 4, 102}, /* i64_wide */
    {INT64_MIN, 9223372036854775807LL, 64, 1, 3, 106}, /* i64_full */
    {INT64_MIN, 4611686018427387903LL, 64, 1, 30, 109}, /* i64_reject */
    {10, 11, 64, 0, 3, 139}, /* i64_one */
    {4611686018427387904LL, 4611686018427387904LL, 64, 1, 2, 142}, /* i64_one */
    {0, 1000, 32, 0, 3, 144}, /* mixed */
    {0, 1125899906842624LL, 64, 0, 2, 147}, /* mixed */
    {0, 1000, 32, 0, 2, 149}, /* mixed */
    {0, 1048576, 64, 0, 3, 151}, /* mixed */
};

static const int_case cases[] = {
    {"i32_mock", 0, 0, 1, 0x9b4c7b7180edb27full},
    {"i32_one", 3, 1, 2, 0x15ed1a93cfbec2f8ull},
    {"i32_pow2", 7, 3, 2, 0xd23c068f7ff206ddull},
    {"i32_full", 11, 5, 1, 0x075829b0b650ebd3ull},
    {"i32_reject", 5, 6, 1, 0xdf4833c2e2496b34ull},
    {"i32_neg", 9, 7, 1, 0xea565a00ea4f1b6cull},
    {"i64_32bit", 13, 8, 2, 0xf24b94d5cc888a13ull},
    {"i64_wide", 17, 10, 2, 0x03ea05df0cc955a7ull},
    {"i64_full", 19, 12, 1, 0x0f5f5866e06f9b5bull},
    {"i64_reject", 23, 13, 1, 0x73082950f707cfc2ull},
    {"i64_one", 29, 14, 2, 0x0ccfe0d4ef427731ull},
    {"mixed", 31, 16, 4, 0x0d1c28902f482ab3ull},
};

static void run_call(mg_test_ctx *t, mg_pcg64 *g, const int_call *c, const char *name)
{
    int64_t got[64];
    int32_t got32[64];
    MG_CHECK(t, c->n <= 64);
    if (c->bits == 32) {
        MG_CHECK_OK(t, mg_npgen_integers_i32(g, c->low, c->high, c->endpoint, got32, c->n));
        for (size_t i = 0; i < c->n; i++) got[i] = got32[i];
    } else {
        MG_CHECK_OK(t, mg_npgen_integers_i64(g, c->low, c->high, c->endpoint, got, c->n));
    }
    for (size_t i = 0; i < c->n; i++)
        if (got[i] != want_values[c->first + i])
            mg_test_fail(t, __FILE__, __LINE__, "%s: value %zu is %lld, numpy %lld", name, i,
                         (long long)got[i], (long long)want_values[c->first + i]);
}

MG_TEST(npgen_integers_like_numpy)
{
    for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
        mg_pcg64 g;
        mg_pcg64_seed(&g, cases[k].seed);
        for (size_t c = 0; c < cases[k].n_calls; c++)
            run_call(t, &g, &calls[cases[k].first + c], cases[k].name);
        if (mg_pcg64_next64(&g) != cases[k].next_raw)
            mg_test_fail(t, __FILE__, __LINE__, "%s: the stream position differs",
                         cases[k].name);
    }
}

MG_TEST(npgen_mock_lengths)
{
    /* MockGPTLowLevelDataset: default_rng(0).integers(1, 4096, size=100000, dtype=int32) */
    static int32_t len[100000];
    mg_pcg64 g;
    mg_pcg64_seed(&g, 0);
    MG_CHECK_OK(t, mg_npgen_integers_i32(&g, 1, 4096, 0, len, 100000));
    int64_t sum = 0;
    for (size_t i = 0; i < 100000; i++) sum += len[i];
    MG_CHECK_EQ_INT(t, sum, 204637097);
    MG_CHECK_EQ_INT(t, len[33333], 706);
    MG_CHECK_EQ_INT(t, len[33335], 2074);
    MG_CHECK_EQ_INT(t, len[99997], 61);
    MG_CHECK_EQ_INT(t, len[99999], 769);
}

MG_TEST(npgen_integers_bounds)
{
    mg_pcg64 g, before;
    int32_t a[2] = {-1, -1};
    int64_t b[2] = {-1, -1};
    mg_pcg64_seed(&g, 1);
    before = g;
    MG_CHECK_ERR(t, mg_npgen_integers_i32(&g, 5, 5, 0, a, 2), MG_ERR_ARG, "low >= high");
    MG_CHECK_ERR(t, mg_npgen_integers_i32(&g, 6, 5, 1, a, 2), MG_ERR_ARG, "low > high");
    MG_CHECK_ERR(t, mg_npgen_integers_i32(&g, -2147483649LL, 0, 0, a, 2), MG_ERR_ARG,
                 "low -2147483649 is out of bounds for int32");
    MG_CHECK_ERR(t, mg_npgen_integers_i32(&g, 0, 2147483649LL, 0, a, 2), MG_ERR_ARG,
                 "high 2147483649 is out of bounds for int32");
    MG_CHECK_ERR(t, mg_npgen_integers_i32(&g, 0, 2147483648LL, 1, a, 2), MG_ERR_ARG,
                 "out of bounds for int32");
    MG_CHECK_ERR(t, mg_npgen_integers_i64(&g, INT64_MIN, INT64_MIN, 0, b, 2), MG_ERR_ARG,
                 "low >= high");
    MG_CHECK_EQ_INT(t, a[0], -1);
    MG_CHECK_EQ_INT(t, b[0], -1);
    MG_CHECK(t, mg_pcg64_next64(&g) == mg_pcg64_next64(&before)); /* nothing drawn */
    MG_CHECK_OK(t, mg_npgen_integers_i32(&g, 0, 2147483648LL, 0, a, 0)); /* size 0 */
}

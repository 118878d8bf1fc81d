/* test_idxds_convert.c — idxds_convert.c: the AVX-512 narrowing (where the CPU has it)
 * gives the portable loops' bytes for uint16 and int32 at every length around its 8-id
 * steps and at the ranges' edges; the portable loops give numpy's values for every dtype;
 * the range check accepts exactly each dtype's range, also in the one-pass convert and
 * check of the writer; and a dataset written through mg_out_room across the output
 * buffer's end (direct and buffered) reads back. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness.h"
#include "dataset/idxds_internal.h"
#include "mg/file.h"

static int64_t pick(uint64_t *s, int64_t lo, int64_t hi)
{
    *s = *s * 6364136223846793005ULL + 1442695040888963407ULL;
    return lo + (int64_t)((*s >> 11) % (uint64_t)(hi - lo + 1));
}

MG_TEST(idx_convert_avx512_matches_portable)
{
#if MG_IDX_AVX512
    const mg_dtype dts[2] = {MG_DT_UINT16, MG_DT_INT32};
    const int64_t lo[2] = {0, INT32_MIN}, hi[2] = {65535, INT32_MAX};
    int64_t src[1031];
    uint8_t a[1031 * 4 + 16], b[1031 * 4 + 16];
    uint64_t seed = 7;
    int ran = 0;
    for (int d = 0; d < 2; d++) {
        for (size_t n = 0; n <= 1031; n = n < 40 ? n + 1 : n * 2 + 3) {
            for (size_t i = 0; i < n; i++)
                src[i] = i % 5 == 0 ? (i % 2 ? lo[d] : hi[d]) : pick(&seed, lo[d], hi[d]);
            memset(a, 0xEE, sizeof a);
            memset(b, 0xEE, sizeof b);
            mg_idx_ids_convert_portable(dts[d], src, n, a);
            ran = mg_idx_ids_convert_avx512(dts[d], src, n, b);
            if (!ran) break;
            MG_CHECK(t, memcmp(a, b, sizeof a) == 0); /* the bytes past n untouched too */
        }
    }
    MG_CHECK_EQ_INT(t, mg_idx_ids_convert_avx512(MG_DT_INT64, src, 3, b), 0);
    if (!ran) fprintf(stderr, "  note: %s: this CPU has no AVX-512F\n", t->name);
#else
    fprintf(stderr, "  note: %s: no AVX-512 path on this target\n", t->name);
#endif
}

MG_TEST(idx_convert_portable_values)
{
    const int64_t v[3] = {-2, 1, 300};
    uint8_t out[24];
    mg_idx_ids_convert_portable(MG_DT_INT16, v, 3, out);
    int16_t s16[3];
    memcpy(s16, out, sizeof s16);
    MG_CHECK(t, s16[0] == -2 && s16[1] == 1 && s16[2] == 300);
    const int64_t big[2] = {16777217, -3}; /* float32 through double: 16777216 */
    mg_idx_ids_convert_portable(MG_DT_FLOAT32, big, 2, out);
    float f[2];
    memcpy(f, out, sizeof f);
    MG_CHECK(t, f[0] == 16777216.0f && f[1] == -3.0f);
    const int64_t u[5] = {0, 1, 65534, 65535, 4242};
    mg_idx_ids_convert(MG_DT_UINT16, u, 5, out);
    uint16_t u16[5];
    memcpy(u16, out, sizeof u16);
    MG_CHECK(t, u16[0] == 0 && u16[2] == 65534 && u16[3] == 65535 && u16[4] == 4242);
}

/* The dtypes with a range, and their ranges. */
static const struct {
    mg_dtype dt;
    int64_t lo, hi;
} ranges[] = {{MG_DT_UINT8, 0, 255},       {MG_DT_INT8, -128, 127},
              {MG_DT_INT16, -32768, 32767}, {MG_DT_UINT16, 0, 65535},
              {MG_DT_INT32, INT32_MIN, INT32_MAX}};

MG_TEST(idx_convert_range_edges)
{
    for (size_t k = 0; k < sizeof ranges / sizeof ranges[0]; k++) {
        int64_t lo = ranges[k].lo, hi = ranges[k].hi, ok[9] = {lo, hi, 0, 1, hi, lo, 0, 0, hi};
        MG_CHECK(t, mg_idx_ids_fit(ranges[k].dt, ok, 9));
        for (size_t at = 0; at < 9; at++) {
            int64_t bad[9];
            memcpy(bad, ok, sizeof bad);
            bad[at] = at % 2 ? ranges[k].hi + 1 : ranges[k].lo - 1;
            MG_CHECK(t, !mg_idx_ids_fit(ranges[k].dt, bad, 9));
            MG_CHECK(t, !mg_idx_id_fits(ranges[k].dt, bad[at]));
        }
    }
    const int64_t any[2] = {INT64_MIN, INT64_MAX};
    MG_CHECK(t, mg_idx_ids_fit(MG_DT_INT64, any, 2) && mg_idx_ids_fit(MG_DT_FLOAT64, any, 2));
}

/* The one-pass convert and check: the portable conversion's bytes when every id fits, and
 * 0 for one id out of range at any position (in the AVX-512 path's 8-id steps or the
 * tail), for every dtype with a range. */
MG_TEST(idx_convert_checked_matches_check_and_convert)
{
    int64_t src[37];
    uint8_t a[37 * 4], b[37 * 4];
    uint64_t seed = 11;
    for (size_t k = 0; k < sizeof ranges / sizeof ranges[0]; k++) {
        for (size_t n = 0; n <= 37; n++) {
            for (size_t i = 0; i < n; i++) src[i] = pick(&seed, ranges[k].lo, ranges[k].hi);
            memset(a, 0, sizeof a);
            memset(b, 0, sizeof b);
            mg_idx_ids_convert_portable(ranges[k].dt, src, n, a);
            MG_CHECK(t, mg_idx_ids_convert_checked(ranges[k].dt, src, n, b) == 1);
            MG_CHECK(t, memcmp(a, b, sizeof a) == 0);
            for (size_t at = 0; at < n; at++) {
                int64_t keep = src[at];
                src[at] = at % 2 ? ranges[k].hi + 1 : ranges[k].lo - 1;
                MG_CHECK(t, mg_idx_ids_convert_checked(ranges[k].dt, src, n, b) == 0);
                src[at] = keep;
            }
        }
    }
}

/* A rejected document of 20 ids (its bad one inside the 8-id steps) leaves nothing in the
 * .bin: the next document reads back as written. */
MG_TEST(idx_writer_rejects_in_one_pass)
{
    const char *prefix = mg_test_path(t, "reject");
    mg_idx_writer *w;
    MG_CHECK_OK(t, mg_idx_writer_create(&w, prefix, MG_DT_UINT16));
    int64_t ids[20];
    int32_t len = 20;
    for (size_t i = 0; i < 20; i++) ids[i] = 1000 + (int64_t)i;
    ids[3] = 65536;
    MG_CHECK_ERR(t, mg_idx_writer_add_document(w, ids, 20, &len, 1), MG_ERR_LIMIT,
                 "token id 65536 does not fit in uint16");
    ids[3] = 7;
    MG_CHECK_OK(t, mg_idx_writer_add_document(w, ids + 2, 18, &(int32_t){18}, 1));
    MG_CHECK_OK(t, mg_idx_writer_finish(w));
    mg_idx_writer_free(w);
    mg_idx d;
    MG_CHECK_OK(t, mg_idx_open(&d, prefix));
    MG_CHECK(t, d.bin_size == 36);
    for (size_t i = 0; i < 18 && d.bin_size == 36; i++) {
        uint16_t v;
        memcpy(&v, d.bin + 2 * i, 2);
        MG_CHECK_EQ_INT(t, v, ids[2 + i]);
    }
    mg_idx_close(&d);
}

/* A 5 MB uint16 .bin (more than two direct buffers) through the writer, direct or not. */
static void write_big(mg_test_ctx *t, int direct)
{
    size_t n = 2500001;
    int64_t *ids = malloc(n * sizeof *ids);
    for (size_t i = 0; i < n; i++) ids[i] = (int64_t)((i * 2654435761u) % 65536);
    const char *prefix = mg_test_path(t, direct ? "direct" : "buffered");
    mg_idx_writer *w;
    MG_CHECK_OK(t, direct ? mg_idx_writer_create_direct(&w, prefix, MG_DT_UINT16)
                          : mg_idx_writer_create(&w, prefix, MG_DT_UINT16));
    int32_t len1 = 3, len2 = (int32_t)(n - 3);
    MG_CHECK_OK(t, mg_idx_writer_add_document(w, ids, 3, &len1, 1)); /* an odd offset after */
    MG_CHECK_OK(t, mg_idx_writer_add_document(w, ids + 3, n - 3, &len2, 1));
    MG_CHECK_OK(t, mg_idx_writer_finish(w));
    mg_idx_writer_free(w);
    mg_idx d;
    MG_CHECK_OK(t, mg_idx_open(&d, prefix));
    int same = d.bin_size == 2 * n;
    for (size_t i = 0; same && i < n; i++) {
        uint16_t v;
        memcpy(&v, d.bin + 2 * i, 2);
        same = v == (uint16_t)ids[i];
    }
    MG_CHECK(t, same);
    mg_idx_close(&d);
    free(ids);
}

MG_TEST(idx_writer_through_out_room_direct_and_buffered)
{
    write_big(t, 1);
    write_big(t, 0);
}

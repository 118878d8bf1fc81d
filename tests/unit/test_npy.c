/* test_npy.c — mg/npy.h: the header bytes numpy.save (2.4) writes (copied from numpy's
 * output), write/read round trips with dtype conversion, and every refusal of the reader.
 * tests/interop/test_data_cache.py checks whole cache files against numpy and Megatron. */
#include <stdlib.h>
#include <unistd.h>

#include "harness.h"
#include "mg/npy.h"

/* numpy.save(f, numpy.arange(15, dtype=numpy.int32)): the 128-byte header. */
static const char hdr_i4_15[] = "\x93NUMPY\x01\x00v\x00{'descr': '<i4', 'fortran_order': "
                                "False, 'shape': (15,), }";

static void check_header(mg_test_ctx *t, const char *head, size_t len, const char *dict)
{
    size_t n = 10 + strlen(dict + 10); /* the preamble holds NUL bytes */
    MG_CHECK_EQ_INT(t, len, 128);
    MG_CHECK(t, memcmp(head, dict, n) == 0);
    for (size_t i = n; i < 127; i++) MG_CHECK(t, head[i] == ' ');
    MG_CHECK(t, head[127] == '\n');
}

MG_TEST(npy_header_matches_numpy)
{
    char head[256];
    size_t len = 0;
    uint64_t s1[1] = {15};
    MG_CHECK_OK(t, mg_npy_header(MG_NPY_I4, 1, s1, head, sizeof head, &len));
    check_header(t, head, len, hdr_i4_15);
    uint64_t s2[2] = {7, 2};
    MG_CHECK_OK(t, mg_npy_header(MG_NPY_I8, 2, s2, head, sizeof head, &len));
    check_header(t, head, len, "\x93NUMPY\x01\x00v\x00{'descr': '<i8', 'fortran_order': "
                               "False, 'shape': (7, 2), }");
    uint64_t s3[1] = {1000000};
    MG_CHECK_OK(t, mg_npy_header(MG_NPY_I2, 1, s3, head, sizeof head, &len));
    check_header(t, head, len, "\x93NUMPY\x01\x00v\x00{'descr': '<i2', 'fortran_order': "
                               "False, 'shape': (1000000,), }");
    uint64_t s4[1] = {0};
    MG_CHECK_OK(t, mg_npy_header(MG_NPY_U4, 1, s4, head, sizeof head, &len));
    check_header(t, head, len, "\x93NUMPY\x01\x00v\x00{'descr': '<u4', 'fortran_order': "
                               "False, 'shape': (0,), }");
    MG_CHECK_ERR(t, mg_npy_header(MG_NPY_U4, 3, s2, head, sizeof head, &len), MG_ERR_ARG,
                 "dimensions");
}

MG_TEST(npy_round_trip_with_conversion)
{
    int64_t v[6] = {0, 1, -2, 32767, -32768, 7};
    static const mg_npy_dtype dts[4] = {MG_NPY_I2, MG_NPY_I4, MG_NPY_I8, MG_NPY_U4};
    for (int d = 0; d < 4; d++) {
        const char *path = mg_test_path(t, "a.npy");
        uint64_t shape[2] = {3, 2};
        int64_t w[6];
        memcpy(w, v, sizeof w);
        if (dts[d] == MG_NPY_U4) w[2] = 4000000000LL, w[4] = 5;
        MG_CHECK_OK(t, mg_npy_write(path, dts[d], 2, shape, w, MG_NPY_I8));
        mg_npy_file f;
        MG_CHECK_OK(t, mg_npy_open(&f, path));
        MG_CHECK_EQ_INT(t, f.arr.dtype, dts[d]);
        MG_CHECK_EQ_INT(t, f.arr.ndim, 2);
        MG_CHECK_EQ_INT(t, f.arr.shape[0], 3);
        MG_CHECK_EQ_INT(t, f.arr.shape[1], 2);
        for (uint64_t i = 0; f.arr.data && i < 6; i++) MG_CHECK_EQ_INT(t, mg_npy_get(&f.arr, i), w[i]);
        mg_npy_close(&f);
    }
    int32_t small[3] = {5, -6, 70000};
    uint64_t n = 3;
    const char *p2 = mg_test_path(t, "b.npy");
    MG_CHECK_ERR(t, mg_npy_write(p2, MG_NPY_I2, 1, &n, small, MG_NPY_I4), MG_ERR_LIMIT,
                 "value 70000 at element 2 does not fit <i2");
    MG_CHECK(t, access(p2, F_OK) != 0); /* nothing left under the final name */
    MG_CHECK_OK(t, mg_npy_write(p2, MG_NPY_I4, 1, &n, small, MG_NPY_I4));
    size_t len = 0;
    char *img = mg_test_read_file(p2, &len);
    MG_CHECK_EQ_INT(t, len, 128 + 12);
    MG_CHECK(t, img && memcmp(img + 128, small, 12) == 0);
    free(img);
}

/* Parses text (a header dict) + data bytes as a version-1.0 file named "x.npy". */
static mg_status parse_dict(const char *dict, size_t data_len, mg_npy *a)
{
    static uint8_t buf[512];
    size_t n = strlen(dict);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (uint8_t)(n + 1);
    buf[9] = 0;
    memcpy(buf + 10, dict, n);
    buf[10 + n] = '\n';
    memset(buf + 11 + n, 0, data_len);
    return mg_npy_parse(buf, 11 + n + data_len, "x.npy", a);
}

MG_TEST(npy_reader_accepts_numpy_variants)
{
    mg_npy a;
    MG_CHECK_OK(t, parse_dict("{\"shape\": ( 4 , ), 'descr':'<u4','fortran_order' : True}", 16,
                              &a));
    MG_CHECK_EQ_INT(t, a.count, 4);
    MG_CHECK_EQ_INT(t, a.dtype, MG_NPY_U4);
    MG_CHECK_OK(t, parse_dict("{'descr': '<i8', 'fortran_order': False, 'shape': (0, 2), }", 0,
                              &a));
    MG_CHECK_EQ_INT(t, a.ndim, 2);
    /* version 2.0: a 4-byte header length */
    uint8_t buf[256];
    const char *d = "{'descr': '<i2', 'fortran_order': False, 'shape': (3,), }";
    size_t n = strlen(d);
    memcpy(buf, "\x93NUMPY\x02\x00", 8);
    buf[8] = (uint8_t)(n + 1), buf[9] = buf[10] = buf[11] = 0;
    memcpy(buf + 12, d, n);
    buf[12 + n] = '\n';
    memset(buf + 13 + n, 0, 6);
    MG_CHECK_OK(t, mg_npy_parse(buf, 13 + n + 6, "v2.npy", &a));
    MG_CHECK_EQ_INT(t, a.count, 3);
}

MG_TEST(npy_reader_refusals_name_the_file)
{
    mg_npy a;
    const char *ok = "{'descr': '<i4', 'fortran_order': False, 'shape': (2,), }";
    MG_CHECK_OK(t, parse_dict(ok, 8, &a));
    MG_CHECK_ERR(t, parse_dict(ok, 7, &a), MG_ERR_FORMAT, "x.npy: 7 bytes of data");
    MG_CHECK_ERR(t, parse_dict(ok, 9, &a), MG_ERR_FORMAT, "x.npy: 9 bytes of data");
    MG_CHECK_ERR(t, parse_dict("{'descr': '<f8', 'fortran_order': False, 'shape': (2,), }", 16,
                               &a), MG_ERR_UNSUPPORTED, "x.npy: dtype '<f8' not supported");
    MG_CHECK_ERR(t, parse_dict("{'descr': '>i4', 'fortran_order': False, 'shape': (2,), }", 8,
                               &a), MG_ERR_UNSUPPORTED, "x.npy: big-endian");
    MG_CHECK_ERR(t, parse_dict("{'descr': '<i4', 'fortran_order': False, 'shape': (2, 1, 1)}",
                               8, &a), MG_ERR_UNSUPPORTED, "3-dimensional");
    MG_CHECK_ERR(t, parse_dict("{'descr': '<i4', 'fortran_order': True, 'shape': (2, 2)}", 16,
                               &a), MG_ERR_UNSUPPORTED, "Fortran");
    MG_CHECK_ERR(t, parse_dict("{'descr': '<i4', 'shape': (2,), }", 8, &a), MG_ERR_FORMAT,
                 "missing");
    MG_CHECK_ERR(t, parse_dict("{'descr': '<i4', 'descr': '<i4', 'fortran_order': False, "
                               "'shape': (2,)}", 8, &a), MG_ERR_FORMAT, "duplicate key");
    MG_CHECK_ERR(t, parse_dict("{'descr': '<i4', 'fortran_order': False, 'shape': (2,), "
                               "'x': 1}", 8, &a), MG_ERR_FORMAT, "unexpected key");
    MG_CHECK_ERR(t, parse_dict("{'descr': '<i4', 'fortran_order': 0, 'shape': (2,)}", 8, &a),
                 MG_ERR_FORMAT, "fortran_order");
    MG_CHECK_ERR(t, parse_dict("{'descr': '<i4', 'fortran_order': False, 'shape': [2]}", 8,
                               &a), MG_ERR_FORMAT, "shape is not a tuple");
    MG_CHECK_ERR(t, parse_dict("{'descr': '<i4', 'fortran_order': False, 'shape': "
                               "(99999999999999999999999,)}", 8, &a), MG_ERR_FORMAT, "too large");
    MG_CHECK_ERR(t, parse_dict("{'descr': '<i4', 'fortran_order': False, 'shape': "
                               "(4611686018427387904,)}", 8, &a), MG_ERR_FORMAT, "too large");
    MG_CHECK_ERR(t, parse_dict(ok + 1, 8, &a), MG_ERR_FORMAT, "expected '{'");
    MG_CHECK_ERR(t, mg_npy_parse((const uint8_t *)"\x93NUMPX\x01\x00\x00\x00", 10, "m.npy", &a),
                 MG_ERR_FORMAT, "m.npy: not a .npy file");
    MG_CHECK_ERR(t, mg_npy_parse((const uint8_t *)"\x93NUMPY\x04\x00\x00\x00", 10, "v.npy", &a),
                 MG_ERR_FORMAT, "version 4.0");
    MG_CHECK_ERR(t, mg_npy_parse((const uint8_t *)"\x93NUMPY\x01\x00\xff\x00{", 11, "h.npy", &a),
                 MG_ERR_FORMAT, "runs past the end");
    MG_CHECK_ERR(t, mg_npy_parse((const uint8_t *)"\x93NUMPY\x01\x00\x01\x00}", 11, "n.npy", &a),
                 MG_ERR_FORMAT, "newline");
    MG_CHECK_ERR(t, mg_npy_open((mg_npy_file[]){{{0, 0}, {0}}}, mg_test_path(t, "missing.npy")),
                 MG_ERR_NOTFOUND, "missing.npy");
}

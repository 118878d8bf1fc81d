/* test_torchfile.c — unit tests for mg/torchfile.h: ZIP header encode/decode (ZIP64 fields
 * for > 4 GiB sizes and offsets, without writing 4 GiB), the zip writer/reader round trip
 * (64-byte alignment, CRCs, writev of pieces), torch file save/open (zero-copy tensors,
 * shared storages, streamed storages), and format errors (truncated, wrong magic, offsets past the end,
 * missing records) naming the file and offset. */
#include <stdlib.h>
#include <sys/uio.h>

#include "harness.h"
#include "mg/torchfile.h"
#include "ckptfmt/zip_internal.h"

MG_TEST(zip_crc32_known_value)
{
    MG_CHECK_EQ_INT(t, mg_crc32(0, "123456789", 9), 0xCBF43926u);
    uint32_t c = mg_crc32(0, "1234", 4);
    MG_CHECK_EQ_INT(t, mg_crc32(c, "56789", 5), 0xCBF43926u);
    MG_CHECK_EQ_INT(t, mg_crc32(0, "", 0), 0);
}

MG_TEST(zip_central_zip64_roundtrip)
{
    uint8_t buf[MG_ZIP_HDR_MAX + 16];
    mg_zip_rec r = {.name = "a/data/0", .name_len = 8, .flags = 0x0808, .crc = 0x12345678,
                    .comp = (uint64_t)6 << 30, .uncomp = (uint64_t)6 << 30,
                    .offset = (uint64_t)5 << 30};
    size_t n = mg_zip_central_encode(buf, &r);
    MG_CHECK_EQ_INT(t, n, 46 + 8 + 4 + 24);
    MG_CHECK_EQ_INT(t, mg_rd32(buf + 20), 0xFFFFFFFFu);
    MG_CHECK_EQ_INT(t, mg_rd32(buf + 42), 0xFFFFFFFFu);
    MG_CHECK_EQ_INT(t, mg_rd16(buf + 46 + 8), 0x0001);
    mg_zip_rec d;
    size_t used;
    MG_CHECK_OK(t, mg_zip_central_decode(buf, n, 1000, "x.pt", &d, &used));
    MG_CHECK_EQ_INT(t, used, n);
    MG_CHECK(t, d.comp == r.comp && d.uncomp == r.uncomp && d.offset == r.offset && d.crc == r.crc);
    /* only the offset overflows: the extra holds just the offset */
    r.comp = r.uncomp = 100;
    n = mg_zip_central_encode(buf, &r);
    MG_CHECK_EQ_INT(t, n, 46 + 8 + 4 + 8);
    MG_CHECK_OK(t, mg_zip_central_decode(buf, n, 0, "x.pt", &d, &used));
    MG_CHECK(t, d.comp == 100 && d.uncomp == 100 && d.offset == r.offset);
    /* a 32-bit header: no extra */
    r.offset = 64;
    MG_CHECK_EQ_INT(t, mg_zip_central_encode(buf, &r), 46 + 8);
    /* an entry claiming ZIP64 without the extra */
    r.offset = (uint64_t)5 << 30;
    n = mg_zip_central_encode(buf, &r);
    buf[30] = 0; /* extra length 0 */
    MG_CHECK_ERR(t, mg_zip_central_decode(buf, n, 77, "x.pt", &d, &used), MG_ERR_FORMAT,
                 "x.pt: offset 77: missing ZIP64 extra");
    MG_CHECK_ERR(t, mg_zip_central_decode(buf, 40, 77, "x.pt", &d, &used), MG_ERR_FORMAT,
                 "offset 77: central directory truncated");
}

MG_TEST(zip_local_header_alignment_and_zip64)
{
    uint8_t buf[MG_ZIP_HDR_MAX + 32];
    for (uint64_t off = 0; off < 200; off += 13) {
        mg_zip_rec r = {.name = "model_optim_rng/data/12", .name_len = 23, .uncomp = 5, .comp = 5,
                        .offset = off};
        size_t n = mg_zip_local_encode(buf, &r);
        MG_CHECK_EQ_INT(t, (off + n) % 64, 0);
        MG_CHECK_EQ_INT(t, mg_rd16(buf + 6), 0x0808);
        MG_CHECK_EQ_INT(t, mg_rd16(buf + 30 + 23), 0x4246);
        MG_CHECK_EQ_INT(t, n, 30 + 23 + mg_rd16(buf + 28));
    }
    /* 5 GiB record at a 6 GiB offset: ZIP64 extra (sizes + offset) before the FB padding */
    mg_zip_rec big = {.name = "a/data/0", .name_len = 8, .uncomp = (uint64_t)5 << 30,
                      .comp = (uint64_t)5 << 30, .offset = ((uint64_t)6 << 30) + 3};
    size_t n = mg_zip_local_encode(buf, &big);
    MG_CHECK_EQ_INT(t, (big.offset + n) % 64, 0);
    MG_CHECK_EQ_INT(t, mg_rd16(buf + 38), 0x0001);
    MG_CHECK_EQ_INT(t, mg_rd16(buf + 40), 24);
    MG_CHECK(t, mg_rd64(buf + 42) == big.uncomp && mg_rd64(buf + 58) == big.offset);
    MG_CHECK_EQ_INT(t, mg_rd32(buf + 22), 0xFFFFFFFFu);
    MG_CHECK(t, mg_zip_needs_zip64(&big));
    uint8_t dd[24];
    big.crc = 7;
    MG_CHECK_EQ_INT(t, mg_zip_descriptor_encode(dd, &big, 1), 24);
    MG_CHECK(t, mg_rd32(dd) == 0x08074b50 && mg_rd64(dd + 16) == big.uncomp);
}

MG_TEST(zip_end_records_zip64)
{
    /* end records alone, claiming a directory at 5 GiB: decoded, then refused as past the end */
    uint8_t buf[98];
    mg_zip_end e = {.n_entries = 70000, .cd_offset = (uint64_t)5 << 30, .cd_size = 123456,
                    .end_offset = 0};
    MG_CHECK_EQ_INT(t, mg_zip_end_encode(buf, &e), 98);
    MG_CHECK_EQ_INT(t, mg_rd16(buf + 76 + 10), 0xFFFF);
    MG_CHECK_EQ_INT(t, mg_rd32(buf + 76 + 16), 0xFFFFFFFFu);
    mg_zip_end d;
    MG_CHECK_OK(t, mg_zip_end_decode(buf, sizeof buf, "e.zip", &d));
    MG_CHECK(t, d.n_entries == 70000 && d.cd_offset == e.cd_offset && d.cd_size == 123456);
    mg_zip *z;
    MG_CHECK_ERR(t, mg_zip_open(&z, buf, sizeof buf, "e.zip"), MG_ERR_FORMAT,
                 "e.zip: offset 5368709120: central directory past");
    /* locator pointing past the end */
    buf[56 + 8] = 0xF0;
    MG_CHECK_ERR(t, mg_zip_end_decode(buf, sizeof buf, "e.zip", &d), MG_ERR_FORMAT,
                 "offset 56: ZIP64 end record offset past the end");
}

static mg_status write_zip(const char *path, int n_records)
{
    mg_out *out;
    mg_zip_writer *w = NULL;
    MG_FORWARD(mg_out_create(&out, path));
    mg_status st = mg_zip_writer_create(&w, out);
    char name[32], data[300];
    for (int i = 0; i < n_records && st == MG_OK; i++) {
        snprintf(name, sizeof name, "arc/rec%d", i);
        for (int k = 0; k < i * 7; k++) data[k] = (char)(k * i);
        st = mg_zip_writer_add(w, name, data, (size_t)i * 7);
    }
    if (st == MG_OK) st = mg_zip_writer_finish(w);
    if (st == MG_OK) st = mg_out_commit(out);
    mg_zip_writer_free(w);
    mg_out_free(out);
    return st;
}

MG_TEST(zip_write_read_roundtrip)
{
    const char *path = mg_test_path(t, "a.zip");
    MG_CHECK_OK(t, write_zip(path, 40));
    mg_map m;
    MG_CHECK_OK(t, mg_map_open(&m, path));
    mg_zip *z = NULL;
    MG_CHECK_OK(t, mg_zip_open(&z, m.data, m.size, path));
    if (z) {
        MG_CHECK_EQ_INT(t, mg_zip_count(z), 40);
        for (size_t i = 0; i < mg_zip_count(z); i++) {
            const mg_zip_entry *e = mg_zip_entry_at(z, i);
            MG_CHECK_EQ_INT(t, e->data_offset % 64, 0);
            MG_CHECK_EQ_INT(t, e->size, i * 7);
            MG_CHECK_OK(t, mg_zip_check_crc(z, e));
        }
        const mg_zip_entry *e = mg_zip_find(z, "arc/rec13");
        const uint8_t *p;
        MG_CHECK(t, e && mg_zip_data(z, e, &p) == MG_OK && e->size == 91 && p[5] == (uint8_t)(5 * 13));
        MG_CHECK(t, mg_zip_find(z, "arc/rec40") == NULL);
    }
    mg_zip_free(z);
    mg_map_close(&m);
}

MG_TEST(zip_writer_refuses_wrong_length)
{
    mg_out *out;
    mg_zip_writer *w;
    MG_CHECK_OK(t, mg_out_create(&out, mg_test_path(t, "b.zip")));
    MG_CHECK_OK(t, mg_zip_writer_create(&w, out));
    MG_CHECK_OK(t, mg_zip_writer_begin(w, "a/x", 4));
    MG_CHECK_OK(t, mg_zip_writer_write(w, "ab", 2));
    MG_CHECK_ERR(t, mg_zip_writer_write(w, "abc", 3), MG_ERR_ARG, "longer than announced");
    MG_CHECK_ERR(t, mg_zip_writer_end(w), MG_ERR_ARG, "has 2 of 4 bytes");
    mg_zip_writer_free(w);
    mg_out_free(out);
}

MG_TEST(zip_writer_writev_pieces_and_crc)
{
    size_t len = (1u << 20) + 333;
    uint8_t *data = malloc(len);
    for (size_t i = 0; i < len; i++) data[i] = (uint8_t)(i * 13 + (i >> 8));
    struct iovec v[600];
    size_t at = 0;
    int n = 0;
    for (; at < len; n++) { /* small pieces, empty ones, and one larger than a CRC group */
        size_t k = n == 9 ? (600u << 10) : (size_t)(n % 5) * 977;
        k = k < len - at ? k : len - at;
        v[n] = (struct iovec){data + at, k};
        at += k;
    }
    const char *path = mg_test_path(t, "v.zip");
    mg_out *out;
    mg_zip_writer *w;
    MG_CHECK_OK(t, mg_out_create(&out, path));
    MG_CHECK_OK(t, mg_zip_writer_create(&w, out));
    MG_CHECK_OK(t, mg_zip_writer_begin(w, "a/x", len + 1));
    MG_CHECK_OK(t, mg_zip_writer_write(w, "ab", 2));
    MG_CHECK_ERR(t, mg_zip_writer_writev(w, v, n), MG_ERR_ARG, "longer than announced");
    v[n - 1].iov_len--; /* now the len - 1 bytes left */
    MG_CHECK_OK(t, mg_zip_writer_writev(w, v, n));
    MG_CHECK_OK(t, mg_zip_writer_end(w));
    MG_CHECK_OK(t, mg_zip_writer_finish(w));
    MG_CHECK_OK(t, mg_out_commit(out));
    mg_zip_writer_free(w);
    mg_out_free(out);
    mg_map m;
    MG_CHECK_OK(t, mg_map_open(&m, path));
    mg_zip *z = NULL;
    MG_CHECK_OK(t, mg_zip_open(&z, m.data, m.size, path));
    const mg_zip_entry *e = z ? mg_zip_find(z, "a/x") : NULL;
    const uint8_t *p = NULL;
    MG_CHECK(t, e && e->size == len + 1 && mg_zip_data(z, e, &p) == MG_OK);
    MG_CHECK(t, p && memcmp(p, "ab", 2) == 0 && memcmp(p + 2, data, len - 1) == 0);
    if (e) MG_CHECK_OK(t, mg_zip_check_crc(z, e));
    mg_zip_free(z);
    mg_map_close(&m);
    free(data);
}

/* ---- torch files ---- */

static mg_pk_obj *small_graph(mg_pk_graph *g, float *w, uint16_t *h)
{
    mg_pk_obj *root = mg_pk_container(g, MG_PK_DICT), *model = mg_pk_container(g, MG_PK_ODICT);
    int64_t s23[2] = {2, 3}, s4 = 4, s2 = 2;
    mg_pk_set(g, model, "w", mg_pk_tensor_new(g, MG_TD_F32, 2, s23, w));
    mg_pk_set(g, model, "h", mg_pk_tensor_new(g, MG_TD_BF16, 1, &s4, h));
    mg_pk_obj *view = mg_pk_tensor_new(g, MG_TD_F32, 1, &s2, w); /* w[:, 1] */
    view->tensor->storage_numel = 6, view->tensor->storage_nbytes = 24;
    view->tensor->offset = 1, view->tensor->stride[0] = 3;
    mg_pk_set(g, model, "w_col1", view);
    mg_pk_set(g, model, "streamed", mg_pk_tensor_new(g, MG_TD_I64, 1, &s4, NULL));
    mg_pk_set(g, root, "model", model);
    mg_pk_set(g, root, "iteration", mg_pk_int(g, 10));
    return root;
}

static mg_status fill_i64(void *ctx, const mg_pk_tensor *tt, uint64_t off, void *buf, size_t len)
{
    (void)ctx, (void)tt;
    for (size_t i = 0; i < len; i++) ((uint8_t *)buf)[i] = (uint8_t)((off + i) / 8 + 1) * (((off + i) % 8) == 0);
    return MG_OK;
}

static const char *save_small(mg_test_ctx *t, const char *name)
{
    static float w[6] = {0, 1, 2, 3, 4, 5};
    static uint16_t h[4] = {0x3f80, 0x4000, 0x4040, 0x4080};
    mg_pk_graph *g = mg_pk_graph_create();
    mg_pk_obj *root = small_graph(g, w, h);
    const char *path = mg_test_path(t, name);
    mg_torch_save_opts o = {.fill = fill_i64};
    MG_CHECK_OK(t, mg_torch_save(path, root, &o));
    mg_pk_graph_free(g);
    return path;
}

MG_TEST(torch_save_open_roundtrip)
{
    const char *path = save_small(t, "model_optim_rng.pt");
    mg_torch_file *f = NULL;
    MG_CHECK_OK(t, mg_torch_open(&f, path));
    if (!f) return;
    MG_CHECK_EQ_STR(t, mg_torch_archive_name(f), "model_optim_rng");
    mg_pk_obj *model = mg_pk_get(mg_torch_root(f), "model");
    MG_CHECK(t, model && model->kind == MG_PK_ODICT && mg_pk_len(model) == 4);
    mg_pk_obj *w = model ? mg_pk_get(model, "w") : NULL, *v = model ? mg_pk_get(model, "w_col1") : NULL;
    mg_pk_obj *s = model ? mg_pk_get(model, "streamed") : NULL;
    MG_CHECK(t, w && v && s);
    if (w && v && s) {
        MG_CHECK_EQ_INT(t, (uintptr_t)w->tensor->data % 64, 0);
        MG_CHECK(t, w->tensor->data == v->tensor->data); /* one shared storage */
        MG_CHECK_EQ_STR(t, v->tensor->storage_key, "0");
        float x;
        memcpy(&x, v->tensor->data + 4 * (v->tensor->offset + v->tensor->stride[0]), 4);
        MG_CHECK(t, x == 4.0f);
        int64_t s2;
        memcpy(&s2, s->tensor->data + 16, 8);
        MG_CHECK_EQ_INT(t, s2, 3);
        MG_CHECK_EQ_STR(t, s->tensor->storage_key, "2");
    }
    MG_CHECK_EQ_INT(t, mg_pk_get(mg_torch_root(f), "iteration")->i, 10);
    mg_torch_close(f);
}

static char *read_all(mg_test_ctx *t, const char *path, size_t *len)
{
    char *d = mg_test_read_file(path, len);
    MG_CHECK(t, d != NULL);
    return d;
}

MG_TEST(torch_open_errors)
{
    size_t len;
    const char *path = save_small(t, "x.pt");
    char *d = read_all(t, path, &len);
    if (!d) return;
    mg_torch_file *f;
    /* truncated: the end records are gone */
    MG_CHECK_ERR(t, mg_torch_open(&f, mg_test_write_file(t, "trunc.pt", d, len - 30)),
                 MG_ERR_FORMAT, "trunc.pt: offset");
    /* wrong magic */
    char *bad = malloc(len);
    memcpy(bad, d, len);
    bad[0] = 'X';
    MG_CHECK_ERR(t, mg_torch_open(&f, mg_test_write_file(t, "magic.pt", bad, len)), MG_ERR_FORMAT,
                 "magic.pt: offset 0: not a torch.save file");
    /* legacy format */
    MG_CHECK_ERR(t, mg_torch_open(&f, mg_test_write_file(t, "legacy.pt", "\x80\x02\x8a\x0a", 4)),
                 MG_ERR_UNSUPPORTED, "legacy");
    /* central directory offset past the end (EOCD at len-22, ZIP64 EOCD at len-98) */
    memcpy(bad, d, len);
    bad[len - 98 + 48 + 4] = 0x7f;
    MG_CHECK_ERR(t, mg_torch_open(&f, mg_test_write_file(t, "cd.pt", bad, len)), MG_ERR_FORMAT,
                 "cd.pt: offset");
    /* a local header offset past the end: first central entry's offset field */
    memcpy(bad, d, len);
    uint64_t cd = mg_rd64((const uint8_t *)d + len - 98 + 48);
    bad[cd + 42 + 3] = 0x40;
    MG_CHECK_ERR(t, mg_torch_open(&f, mg_test_write_file(t, "lh.pt", bad, len)), MG_ERR_FORMAT,
                 "local header past the end");
    /* a bad opcode inside data.pkl (its data starts at 64) */
    memcpy(bad, d, len);
    bad[64 + 2] = (char)0xff;
    MG_CHECK_ERR(t, mg_torch_open(&f, mg_test_write_file(t, "op.pt", bad, len)), MG_ERR_FORMAT,
                 "op.pt: x/data.pkl: pickle offset 2: unknown pickle opcode 0xff");
    /* a storage record renamed away */
    memcpy(bad, d, len);
    for (size_t i = 0; i + 8 < len; i++)
        if (memcmp(bad + i, "x/data/1", 8) == 0) bad[i + 7] = '9';
    MG_CHECK_ERR(t, mg_torch_open(&f, mg_test_write_file(t, "miss.pt", bad, len)), MG_ERR_FORMAT,
                 "storage record \"x/data/1\" is missing");
    free(bad);
    free(d);
}

static mg_status fill_fails(void *ctx, const mg_pk_tensor *tt, uint64_t off, void *buf, size_t len)
{
    (void)ctx, (void)tt, (void)off, (void)buf, (void)len;
    return mg_error_set(MG_ERR_IO, "source shard unreadable");
}

MG_TEST(torch_save_failure_leaves_no_file)
{
    mg_pk_graph *g = mg_pk_graph_create();
    mg_pk_obj *root = mg_pk_container(g, MG_PK_DICT);
    int64_t n = 3;
    mg_pk_set(g, root, "x", mg_pk_tensor_new(g, MG_TD_F32, 1, &n, NULL));
    const char *path = mg_test_path(t, "fail.pt");
    mg_torch_save_opts o = {.fill = fill_fails};
    MG_CHECK_ERR(t, mg_torch_save(path, root, &o), MG_ERR_IO, "source shard unreadable");
    MG_CHECK_ERR(t, mg_torch_save(path, root, NULL), MG_ERR_ARG, "no fill callback");
    size_t len;
    char *d = mg_test_read_file(path, &len);
    MG_CHECK(t, d == NULL);
    free(d);
    mg_pk_graph_free(g);
}

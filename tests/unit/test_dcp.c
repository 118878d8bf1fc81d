/* test_dcp.c — unit tests for mg/dcp.h: the .metadata emitter and reader round trip (items,
 * dtypes, shapes, chunk boxes, storage), and the reader's refusals (overlapping chunks,
 * chunks that leave a hole) naming the .metadata and the pickle offset. Files written by
 * megatron-core are read in tests/interop/test_convert_torch_dist.py; here a folder written
 * with mg_dcp_write_item (nested archives at 64-byte offsets) is read back, and a .metadata
 * naming a missing file, an offset past the end or a cut archive is refused. */
#include <stdlib.h>

#include "harness.h"
#include "mg/dcp.h"

/* A meta: "w" [4, 6] F32 in chunks rows [0, first) and [row0, row0 + rows) (1, 1, 3: a cover); "b" a byte object; "n" BF16 [3]. */
static mg_dcp_meta *sample(int64_t first_rows, int64_t second_row0, int64_t second_rows)
{
    mg_dcp_meta *m = mg_dcp_meta_create();
    int64_t size[2] = {4, 6}, o1[2] = {0, 0}, l1[2] = {first_rows, 6}, o2[2] = {second_row0, 0},
            l2[2] = {second_rows, 6}, n = 3, z = 0;
    mg_dcp_item *w = mg_dcp_add_tensor(m, "w", MG_TD_F32, 2, size);
    mg_dcp_chunk *c1 = mg_dcp_add_chunk(w, o1, l1), *c2 = NULL;
    c1->file = (uint32_t)mg_dcp_file_index(m, "__0_0.distcp");
    c1->offset = 0, c1->length = 100;
    c2 = mg_dcp_add_chunk(w, o2, l2);
    c2->file = (uint32_t)mg_dcp_file_index(m, "__1_0.distcp");
    c2->offset = 64, c2->length = 200;
    mg_dcp_chunk *b = mg_dcp_add_chunk(mg_dcp_add_bytes(m, "b"), NULL, NULL);
    b->file = 0, b->offset = 100, b->length = 7;
    mg_dcp_chunk *c3 = mg_dcp_add_chunk(mg_dcp_add_tensor(m, "n", MG_TD_BF16, 1, &n), &z, &n);
    c3->file = 1, c3->offset = 264, c3->length = 50;
    return m;
}

static mg_status dump_load(mg_dcp_meta *m, mg_dcp_meta **back)
{
    uint8_t *p = NULL;
    size_t n = 0;
    mg_status st = mg_dcp_meta_dump(m, &p, &n);
    if (st == MG_OK) st = mg_dcp_meta_load(back, p, n, "dir/.metadata");
    free(p);
    return st;
}

MG_TEST(dcp_meta_roundtrip)
{
    mg_dcp_meta *m = sample(1, 1, 3), *back = NULL;
    MG_CHECK_OK(t, dump_load(m, &back));
    MG_CHECK(t, back && back->nitems == 3 && back->nfiles == 2);
    const mg_dcp_item *w = back ? mg_dcp_find(back, "w") : NULL, *b = back ? mg_dcp_find(back, "b") : NULL;
    const mg_dcp_item *n = back ? mg_dcp_find(back, "n") : NULL;
    MG_CHECK(t, w && !w->is_bytes && w->dtype == MG_TD_F32 && w->ndim == 2 && w->size[1] == 6);
    MG_CHECK(t, w && w->nchunks == 2 && w->chunks[1].off[0] == 1 && w->chunks[1].len[0] == 3 &&
                    w->chunks[1].offset == 64 && w->chunks[1].length == 200);
    MG_CHECK(t, w && !strcmp(back->files[w->chunks[1].file], "__1_0.distcp"));
    MG_CHECK(t, b && b->is_bytes && b->nchunks == 1 && b->chunks[0].offset == 100 && b->chunks[0].length == 7);
    MG_CHECK(t, n && n->dtype == MG_TD_BF16 && n->ndim == 1 && n->size[0] == 3 && n->nchunks == 1);
    mg_dcp_meta_free(back);
    mg_dcp_meta_free(m);
}

/* Writer parts: "w" rows [row0, row0 + rows) of [rows_total, 6] in file `file`. */
static mg_dcp_meta *part(int64_t rows_total, int64_t row0, int64_t rows, const char *file)
{
    mg_dcp_meta *m = mg_dcp_meta_create();
    int64_t size[2] = {rows_total, 6}, off[2] = {row0, 0}, len[2] = {rows, 6};
    mg_dcp_chunk *c = mg_dcp_add_chunk(mg_dcp_add_tensor(m, "w", MG_TD_F32, 2, size), off, len);
    c->file = (uint32_t)mg_dcp_file_index(m, file);
    c->offset = 64 * (uint64_t)row0, c->length = 30;
    return m;
}

static mg_status pack_into(mg_dcp_meta *into, mg_dcp_meta *p, size_t cut)
{
    uint8_t *b = NULL;
    size_t n = 0;
    mg_status st = mg_dcp_meta_pack(p, &b, &n);
    if (st == MG_OK) st = mg_dcp_meta_merge(into, b, n - cut, "writer 1's part");
    free(b);
    mg_dcp_meta_free(p);
    return st;
}

MG_TEST(dcp_meta_parts_merge)
{
    mg_dcp_meta *m = mg_dcp_meta_create(), *back = NULL;
    MG_CHECK_OK(t, pack_into(m, part(4, 1, 3, "__1_0.distcp"), 0));
    MG_CHECK_OK(t, pack_into(m, part(4, 0, 1, "__0_0.distcp"), 0));
    MG_CHECK_OK(t, dump_load(m, &back)); /* the parts together cover "w" */
    const mg_dcp_item *w = back ? mg_dcp_find(back, "w") : NULL;
    MG_CHECK(t, w && w->nchunks == 2);
    for (size_t i = 0; w && i < w->nchunks; i++) { /* each chunk with its own file and offset */
        const mg_dcp_chunk *c = &w->chunks[i];
        MG_CHECK(t, c->offset == 64 * (uint64_t)c->off[0] && c->length == 30 &&
                        !strcmp(back->files[c->file], c->off[0] ? "__1_0.distcp" : "__0_0.distcp"));
    }
    MG_CHECK_ERR(t, pack_into(m, part(5, 0, 1, "__2_0.distcp"), 0), MG_ERR_FORMAT,
                 "writer 1's part: byte 8: item 0 is malformed or disagrees with the same key's");
    MG_CHECK_ERR(t, pack_into(m, part(4, 0, 1, "__2_0.distcp"), 3), MG_ERR_FORMAT,
                 "writer 1's part: byte 8: item 0 is malformed");
    mg_dcp_meta_free(back);
    mg_dcp_meta_free(m);
}

MG_TEST(dcp_meta_overlap_refused)
{
    mg_dcp_meta *m = sample(2, 1, 3), *back = NULL; /* rows [0, 2) overlap rows [1, 4) */
    MG_CHECK_ERR(t, dump_load(m, &back), MG_ERR_FORMAT, "w: chunks [0:2, 0:6] and [1:4, 0:6] overlap");
    MG_CHECK(t, strstr(mg_last_error(), "dir/.metadata: pickle offset "));
    MG_CHECK(t, back == NULL);
    mg_dcp_meta_free(m);
}

MG_TEST(dcp_meta_hole_refused)
{
    mg_dcp_meta *m = sample(1, 2, 2), *back = NULL; /* row 1 is in no chunk */
    MG_CHECK_ERR(t, dump_load(m, &back), MG_ERR_FORMAT, "w: its chunks hold 18 of its 24 elements");
    mg_dcp_meta_free(m);
}

MG_TEST(dcp_meta_not_a_metadata)
{
    static const uint8_t none[] = {0x80, 2, 'N', '.'};
    mg_dcp_meta *m = NULL;
    MG_CHECK_ERR(t, mg_dcp_meta_load(&m, none, sizeof none, "x/.metadata"), MG_ERR_FORMAT,
                 "x/.metadata: pickle offset 2: the root object is a None");
}

/* A [5, 7] tensor whose element (i, j) is 10 * i + j, in three uneven chunks. */
MG_TEST(dcp_read_box_across_chunks)
{
    float a[2 * 7], b[3 * 3], c[3 * 4];
    for (int i = 0; i < 5; i++)
        for (int j = 0; j < 7; j++) {
            float v = (float)(10 * i + j);
            if (i < 2) a[i * 7 + j] = v;
            else if (j < 3) b[(i - 2) * 3 + j] = v;
            else c[(i - 2) * 4 + (j - 3)] = v;
        }
    mg_dcp_meta *m = mg_dcp_meta_create();
    int64_t size[2] = {5, 7}, o[3][2] = {{0, 0}, {2, 0}, {2, 3}}, l[3][2] = {{2, 7}, {3, 3}, {3, 4}};
    mg_dcp_item *it = mg_dcp_add_tensor(m, "x", MG_TD_F32, 2, size);
    const float *data[3] = {a, b, c};
    for (int k = 0; k < 3; k++) mg_dcp_add_chunk(it, o[k], l[k])->data = (const uint8_t *)data[k];
    float out[3 * 5];
    int64_t off[2] = {1, 1}, len[2] = {3, 5};
    mg_dcp_read_box(it, off, len, out);
    int bad = 0;
    for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++) bad += out[i * 5 + j] != (float)(10 * (i + 1) + j + 1);
    MG_CHECK_EQ_INT(t, bad, 0);
    mg_dcp_meta_free(m);
}

/* A torch_dist-like folder in t->dir: data file "__0_0.distcp" with a [2, 3] F32 tensor "w"
 * stored as two chunks (rows 0 and 1, each its own archive at a 64-byte offset) and a byte
 * object "b"; .metadata from m (returned for the caller to break and rewrite). */
static mg_dcp_meta *write_folder(mg_test_ctx *t, const float *w)
{
    mg_dcp_meta *m = mg_dcp_meta_create();
    mg_pk_graph *g = mg_pk_graph_create();
    int64_t size[2] = {2, 3}, len[2] = {1, 3};
    mg_dcp_add_tensor(m, "w", MG_TD_F32, 2, size);
    mg_dcp_add_chunk(mg_dcp_add_bytes(m, "b"), NULL, NULL)->file = 0;
    mg_out *out = NULL;
    MG_CHECK(t, mg_dcp_file_index(m, "__0_0.distcp") == 0);
    MG_CHECK_OK(t, mg_out_create(&out, mg_test_path(t, "__0_0.distcp")));
    MG_CHECK_OK(t, mg_out_write(out, "x", 1)); /* the items do not start at 0 */
    MG_CHECK_OK(t, mg_dcp_write_item(out, mg_pk_none(g), NULL, &m->items[1].chunks[0]));
    for (int r = 0; r < 2; r++) {
        int64_t off[2] = {r, 0};
        mg_dcp_chunk *c = mg_dcp_add_chunk(&m->items[0], off, len);
        c->file = 0;
        MG_CHECK_OK(t, mg_dcp_write_item(out, mg_pk_tensor_new(g, MG_TD_F32, 2, len, w + 3 * r), NULL, c));
        MG_CHECK(t, c->offset % 64 == 0);
    }
    MG_CHECK_OK(t, mg_out_commit(out));
    mg_out_free(out);
    mg_pk_graph_free(g);
    MG_CHECK_OK(t, mg_dcp_write_meta(m, mg_test_path(t, ".metadata")));
    return m;
}

MG_TEST(dcp_dir_reads_nested_archives)
{
    const float w[6] = {1, 2, 3, 4, 5, 6};
    mg_dcp_meta_free(write_folder(t, w));
    mg_dcp_dir *d = NULL;
    MG_CHECK_OK(t, mg_dcp_dir_open(&d, t->dir));
    const mg_dcp_item *it = d ? mg_dcp_find(mg_dcp_dir_meta(d), "w") : NULL;
    float got[6] = {0};
    int64_t off[2] = {0, 0}, len[2] = {2, 3};
    if (it) mg_dcp_read_box(it, off, len, got);
    MG_CHECK(t, it && memcmp(got, w, sizeof w) == 0);
    mg_dcp_dir_close(d);
}

MG_TEST(dcp_dir_refuses_missing_file_and_short_file)
{
    const float w[6] = {1, 2, 3, 4, 5, 6};
    mg_dcp_meta *m = write_folder(t, w);
    mg_dcp_dir *d = NULL;
    free(m->files[0]);
    m->files[0] = strdup("__5_0.distcp");
    MG_CHECK_OK(t, mg_dcp_write_meta(m, mg_test_path(t, ".metadata")));
    MG_CHECK_ERR(t, mg_dcp_dir_open(&d, t->dir), MG_ERR_FORMAT, "is stored in __5_0.distcp, which cannot be read");
    MG_CHECK(t, strstr(mg_last_error(), "/.metadata: pickle offset "));
    free(m->files[0]);
    m->files[0] = strdup("__0_0.distcp");
    m->items[0].chunks[1].offset += 4096; /* past the end of the file */
    MG_CHECK_OK(t, mg_dcp_write_meta(m, mg_test_path(t, ".metadata")));
    MG_CHECK_ERR(t, mg_dcp_dir_open(&d, t->dir), MG_ERR_FORMAT, "end past the end of the file");
    MG_CHECK(t, strstr(mg_last_error(), "__0_0.distcp: offset "));
    m->items[0].chunks[1].offset -= 4096;
    m->items[0].chunks[1].length -= 100; /* the archive cut short: its end records are gone */
    MG_CHECK_OK(t, mg_dcp_write_meta(m, mg_test_path(t, ".metadata")));
    MG_CHECK_ERR(t, mg_dcp_dir_open(&d, t->dir), MG_ERR_FORMAT, "__0_0.distcp: offset ");
    MG_CHECK(t, d == NULL);
    mg_dcp_meta_free(m);
}

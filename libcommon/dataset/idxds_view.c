/* idxds_view.c — a dataset opened for streaming: P.idx and P.bin mapped and validated in
 * place, the arrays never copied (the writer's add_index reads them through this).
 *
 * Contract (declared in idxds_internal.h):
 *   - mg_idx_view_open() accepts exactly the datasets mg_idx_open() accepts and rejects the
 *     others with the same MG_ERR_FORMAT message ("P.idx: byte OFFSET: <found>, expected
 *     <what>", checks in the same order: header, sizes, lengths and pointers, document
 *     indices, .bin size; layout in docs/FORMATS.md §1.2).
 *   - The arrays stay in the mapping, at their unaligned file offsets: mg_idx_view_lengths()
 *     etc. return little-endian bytes that callers read with memcpy. Memory use is the page
 *     cache of the two mappings, nothing proportional to the dataset is allocated.
 *   - mg_idx_view_close() unmaps; it accepts a view whose open failed.
 */
#include "idxds_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static uint64_t load_u64(const uint8_t *p)
{
    uint64_t v;
    memcpy(&v, p, 8);
    return v;
}

static int64_t load_i64(const uint8_t *p) { return (int64_t)load_u64(p); }

static int32_t load_i32(const uint8_t *p)
{
    int32_t v;
    memcpy(&v, p, 4);
    return v;
}

static mg_status check_magic(const mg_idx_view *v)
{
    const uint8_t *data = v->idx.data;
    size_t n = v->idx.size < MG_IDX_MAGIC_SIZE ? v->idx.size : MG_IDX_MAGIC_SIZE;
    for (size_t i = 0; i < n; i++) {
        if (data[i] != (uint8_t)MG_IDX_MAGIC[i])
            return mg_error_set(MG_ERR_FORMAT,
                                "%s: byte %zu: magic byte 0x%02x, expected 0x%02x "
                                "(\"MMIDIDX\\0\\0\": not a Megatron indexed dataset)",
                                v->path, i, data[i], (uint8_t)MG_IDX_MAGIC[i]);
    }
    MG_RETURN_IF(v->idx.size < MG_IDX_HEADER_SIZE, MG_ERR_FORMAT,
                 "%s: byte %zu: file ends inside the header, expected at least %d bytes",
                 v->path, v->idx.size, MG_IDX_HEADER_SIZE);
    return MG_OK;
}

static mg_status check_header(mg_idx_view *v)
{
    MG_FORWARD(check_magic(v));
    const uint8_t *data = v->idx.data;
    uint64_t version = load_u64(data + 9);
    MG_RETURN_IF(version != 1, MG_ERR_FORMAT, "%s: byte 9: version %" PRIu64 ", expected 1",
                 v->path, version);
    int code = data[17];
    MG_RETURN_IF(mg_dtype_size(code) == 0, MG_ERR_FORMAT,
                 "%s: byte 17: dtype code %d, expected 1..8", v->path, code);
    v->dtype = (mg_dtype)code;
    v->elem_size = mg_dtype_size(code);
    v->n_sequences = load_u64(data + 18);
    v->n_doc_indices = load_u64(data + 26);
    MG_RETURN_IF(v->n_doc_indices == 0, MG_ERR_FORMAT,
                 "%s: byte 26: document index count 0, expected at least 1 (the leading 0)",
                 v->path);
    return MG_OK;
}

/* S and D against the file size, without overflow; decides whether modes are present. */
static mg_status check_sizes(mg_idx_view *v)
{
    uint64_t size = v->idx.size, s = v->n_sequences, d = v->n_doc_indices;
    uint64_t avail = size - MG_IDX_HEADER_SIZE;
    MG_RETURN_IF(s > avail / 12, MG_ERR_FORMAT,
                 "%s: byte 18: sequence count %" PRIu64 ", expected at most %" PRIu64
                 " for a %" PRIu64 "-byte file",
                 v->path, s, avail / 12, size);
    uint64_t rest = avail - 12 * s;
    MG_RETURN_IF(d > rest / 8, MG_ERR_FORMAT,
                 "%s: byte 26: document index count %" PRIu64 ", expected at most %" PRIu64
                 " for a %" PRIu64 "-byte file with %" PRIu64 " sequences",
                 v->path, d, rest / 8, size, s);
    uint64_t extra = rest - 8 * d;
    v->multimodal = extra != 0;
    MG_RETURN_IF(extra != 0 && extra != s, MG_ERR_FORMAT,
                 "%s: byte %" PRIu64 ": %" PRIu64 " bytes after the document indices, "
                 "expected 0 (or %" PRIu64 " sequence modes)",
                 v->path, size - extra, extra, s);
    return MG_OK;
}

/* Lengths >= 0 and pointers == running sums; *total receives the .bin size they imply. */
static mg_status check_pointers(const mg_idx_view *v, uint64_t *total)
{
    uint64_t sum = 0, len_off = MG_IDX_HEADER_SIZE, ptr_off = len_off + 4 * v->n_sequences;
    for (uint64_t i = 0; i < v->n_sequences; i++) {
        int32_t len = load_i32(v->idx.data + len_off + 4 * i);
        int64_t ptr = load_i64(v->idx.data + ptr_off + 8 * i);
        MG_RETURN_IF(len < 0, MG_ERR_FORMAT,
                     "%s: byte %" PRIu64 ": length %" PRId32 " of sequence %" PRIu64
                     ", expected >= 0",
                     v->path, len_off + 4 * i, len, i);
        MG_RETURN_IF(ptr < 0 || (uint64_t)ptr != sum, MG_ERR_FORMAT,
                     "%s: byte %" PRIu64 ": pointer %" PRId64 " of sequence %" PRIu64
                     ", expected %" PRIu64 " (the sum of the previous lengths x %zu bytes)",
                     v->path, ptr_off + 8 * i, ptr, i, sum, v->elem_size);
        sum += (uint64_t)len * v->elem_size;
        MG_RETURN_IF(sum > (uint64_t)INT64_MAX, MG_ERR_FORMAT,
                     "%s: byte %" PRIu64 ": the lengths add up to more than 2^63 bytes, "
                     "expected a total that fits in int64",
                     v->path, len_off + 4 * i);
    }
    *total = sum;
    return MG_OK;
}

static mg_status check_doc_index(const mg_idx_view *v)
{
    uint64_t off = MG_IDX_HEADER_SIZE + 12 * v->n_sequences, s = v->n_sequences;
    const uint8_t *di = v->idx.data + off;
    int64_t prev = load_i64(di);
    MG_RETURN_IF(prev != 0, MG_ERR_FORMAT,
                 "%s: byte %" PRIu64 ": first document index %" PRId64 ", expected 0", v->path,
                 off, prev);
    for (uint64_t k = 1; k < v->n_doc_indices; k++) {
        int64_t x = load_i64(di + 8 * k);
        MG_RETURN_IF(x < prev, MG_ERR_FORMAT,
                     "%s: byte %" PRIu64 ": document index %" PRId64 " (entry %" PRIu64
                     ") after %" PRId64 ", expected non-decreasing indices",
                     v->path, off + 8 * k, x, k, prev);
        MG_RETURN_IF((uint64_t)x > s, MG_ERR_FORMAT,
                     "%s: byte %" PRIu64 ": document index %" PRId64 " (entry %" PRIu64
                     "), expected at most %" PRIu64 " (the sequence count)",
                     v->path, off + 8 * k, x, k, s);
        prev = x;
    }
    MG_RETURN_IF((uint64_t)prev != s, MG_ERR_FORMAT,
                 "%s: byte %" PRIu64 ": last document index %" PRId64 ", expected %" PRIu64
                 " (the sequence count)",
                 v->path, off + 8 * (v->n_doc_indices - 1), prev, s);
    return MG_OK;
}

static mg_status check_bin(mg_idx_view *v, const char *prefix, uint64_t expect)
{
    char *path = mg_idx_path_alloc(prefix, ".bin");
    if (!path) return MG_ERR_NOMEM;
    mg_status st = mg_map_open(&v->bin, path);
    if (st == MG_OK && v->bin.size != expect)
        st = mg_error_set(MG_ERR_FORMAT,
                          "%s: file size %zu bytes, expected %" PRIu64
                          " (the sequence lengths in %s.idx x %zu-byte %s)",
                          path, v->bin.size, expect, prefix, v->elem_size,
                          mg_dtype_name(v->dtype));
    free(path);
    return st;
}

static mg_status check_all(mg_idx_view *v, const char *prefix)
{
    uint64_t bin_total = 0;
    MG_FORWARD(mg_map_open(&v->idx, v->path));
    MG_FORWARD(check_header(v));
    MG_FORWARD(check_sizes(v));
    MG_FORWARD(check_pointers(v, &bin_total));
    MG_FORWARD(check_doc_index(v));
    return check_bin(v, prefix, bin_total);
}

mg_status mg_idx_view_open(mg_idx_view *v, const char *prefix)
{
    memset(v, 0, sizeof *v);
    v->path = mg_idx_path_alloc(prefix, ".idx");
    if (!v->path) return MG_ERR_NOMEM;
    mg_status st = check_all(v, prefix);
    if (st != MG_OK) mg_idx_view_close(v);
    return st;
}

void mg_idx_view_close(mg_idx_view *v)
{
    mg_map_close(&v->idx);
    mg_map_close(&v->bin);
    free(v->path);
    memset(v, 0, sizeof *v);
}

const uint8_t *mg_idx_view_lengths(const mg_idx_view *v)
{
    return v->idx.data + MG_IDX_HEADER_SIZE;
}

const uint8_t *mg_idx_view_doc_index(const mg_idx_view *v)
{
    return mg_idx_view_lengths(v) + 12 * v->n_sequences;
}

const uint8_t *mg_idx_view_modes(const mg_idx_view *v)
{
    return v->multimodal ? mg_idx_view_doc_index(v) + 8 * v->n_doc_indices : NULL;
}

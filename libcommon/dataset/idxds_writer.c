/* idxds_writer.c — writes a Megatron indexed dataset like IndexedDatasetBuilder.
 *
 * Contract (mg/idxds.h; layout in docs/FORMATS.md §1.2-§1.3, builder §1.4):
 *   - P.bin and P.idx are atomic outputs (mg/file.h); tokens go to P.bin as they come,
 *     converted to the dataset dtype (little-endian; idxds_convert.c) straight into the
 *     output's buffer (mg_out_room); create_direct writes P.bin with mg_out_create_direct.
 *     A document is checked whole (lengths >= 0, sum(lengths) == n_tokens, every token in
 *     the dtype's range) before any byte of it is written, so a rejected document leaves
 *     the writer usable.
 *   - Memory is bounded whatever the dataset size: sequence lengths (int32), document
 *     indices (int64) and, once a multimodal dataset was added, sequence modes (int8) go to
 *     three mg_spill arrays (idxds_spill.c: a buffer of at most 1 MiB each, spilled to an
 *     unlinked temporary file "P.<array>.tmp.XXXXXX" only when full). finish() writes P.idx
 *     by streaming them: header, lengths, pointers (a running sum of the lengths x element
 *     size, from a second pass over the lengths), document indices, modes; then commits
 *     P.bin, then P.idx. The bytes do not depend on whether anything was spilled.
 *   - add_index maps the other dataset (mg_idx_view: validated like mg_idx_open, nothing
 *     copied), streams its .bin into ours in large chunks and its arrays into the spills.
 *     Sequences added while the writer was not multimodal have mode 0 and are not stored
 *     (modes_from counts them).
 *   - After a failed write the writer refuses further work (MG_ERR_ARG); free() deletes the
 *     temporary files of a writer that was not finished.
 */
#include "idxds_internal.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mg/file.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "idxds_writer.c stores ids with native stores: big-endian hosts unsupported"
#endif

#define CONV_BYTES (256 * 1024)
#define COPY_CHUNK ((size_t)8 << 20)

enum { W_OPEN, W_FINISHED, W_FAILED };

struct mg_idx_writer {
    mg_dtype dtype;
    size_t elem;
    int state;
    mg_out *bin, *idx;
    mg_spill lengths;    /* int32 [S] */
    mg_spill docs;       /* int64 [D], the leading 0 included */
    mg_spill modes;      /* int8 for sequences modes_from..S-1, once multimodal */
    int multimodal;
    uint64_t modes_from; /* sequences added before the first multimodal dataset: mode 0 */
    uint64_t tokens;
    uint8_t *conv;       /* CONV_BYTES of scratch: dtype conversion, pointer blocks */
};

static uint64_t n_seq(const mg_idx_writer *w) { return mg_spill_size(&w->lengths) / 4; }
static uint64_t n_docs(const mg_idx_writer *w) { return mg_spill_size(&w->docs) / 8; }

static mg_status init_spills(mg_idx_writer *w, const char *prefix)
{
    mg_status a = mg_spill_init(&w->lengths, prefix, ".lengths");
    mg_status b = mg_spill_init(&w->docs, prefix, ".docs");
    mg_status c = mg_spill_init(&w->modes, prefix, ".modes");
    return a != MG_OK ? a : b != MG_OK ? b : c;
}

static mg_status open_outputs(mg_idx_writer *w, const char *prefix, int direct)
{
    char *bin = mg_idx_path_alloc(prefix, ".bin");
    char *idx = mg_idx_path_alloc(prefix, ".idx");
    mg_status st = bin && idx ? MG_OK : MG_ERR_NOMEM;
    if (st == MG_OK && direct) st = mg_out_create_direct(&w->bin, bin);
    else if (st == MG_OK) st = mg_out_create(&w->bin, bin);
    if (st == MG_OK) st = mg_out_create(&w->idx, idx);
    free(bin);
    free(idx);
    return st;
}

static mg_status writer_create(mg_idx_writer **out, const char *prefix, mg_dtype dtype,
                               int direct)
{
    *out = NULL;
    MG_RETURN_IF(mg_dtype_size((int)dtype) == 0, MG_ERR_ARG, "%s: invalid dtype code %d",
                 prefix, (int)dtype);
    mg_idx_writer *w = mg_calloc(1, sizeof *w);
    if (!w) return MG_ERR_NOMEM;
    w->dtype = dtype;
    w->elem = mg_dtype_size((int)dtype);
    mg_status st = init_spills(w, prefix);
    if (st == MG_OK) st = open_outputs(w, prefix, direct);
    if (st == MG_OK) st = (w->conv = mg_malloc(CONV_BYTES)) ? MG_OK : MG_ERR_NOMEM;
    const int64_t zero = 0;
    if (st == MG_OK) st = mg_spill_append(&w->docs, &zero, sizeof zero);
    if (st != MG_OK) {
        mg_idx_writer_free(w);
        return st;
    }
    *out = w;
    return MG_OK;
}

mg_status mg_idx_writer_create(mg_idx_writer **out, const char *prefix, mg_dtype dtype)
{
    return writer_create(out, prefix, dtype, 0);
}

mg_status mg_idx_writer_create_direct(mg_idx_writer **out, const char *prefix, mg_dtype dtype)
{
    return writer_create(out, prefix, dtype, 1);
}

void mg_idx_writer_set_spill_bytes(mg_idx_writer *w, size_t bytes)
{
    mg_spill_set_cap(&w->lengths, bytes);
    mg_spill_set_cap(&w->docs, bytes);
    mg_spill_set_cap(&w->modes, bytes);
}

uint64_t mg_idx_writer_spilled_bytes(const mg_idx_writer *w)
{
    return w->lengths.file_bytes + w->docs.file_bytes + w->modes.file_bytes;
}

static mg_status check_usable(const mg_idx_writer *w)
{
    MG_RETURN_IF(w->state == W_FINISHED, MG_ERR_ARG, "%s: dataset writer already finished",
                 mg_out_path(w->idx));
    MG_RETURN_IF(w->state == W_FAILED, MG_ERR_ARG,
                 "%s: dataset writer unusable after an earlier write error", mg_out_path(w->idx));
    return MG_OK;
}

static mg_status check_lengths(const mg_idx_writer *w, size_t n_tokens, const int32_t *lengths,
                               size_t n_lengths)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < n_lengths; i++) {
        MG_RETURN_IF(lengths[i] < 0, MG_ERR_ARG, "%s: negative sequence length %" PRId32,
                     mg_out_path(w->bin), lengths[i]);
        if (sum <= n_tokens) sum += (uint64_t)lengths[i]; /* stops growing once too large */
    }
    MG_RETURN_IF(sum != n_tokens, MG_ERR_ARG,
                 "%s: the sequence lengths add up to %s%" PRIu64 ", expected %zu (the token count)",
                 mg_out_path(w->bin), sum > n_tokens ? "at least " : "", sum, n_tokens);
    return MG_OK;
}

/* The range error of the first token that does not fit the dtype (MG_OK if all fit). */
static mg_status check_ids(const mg_idx_writer *w, const int64_t *tokens, size_t n_tokens)
{
    if (mg_idx_ids_fit(w->dtype, tokens, n_tokens)) return MG_OK;
    for (size_t i = 0; i < n_tokens; i++) {
        MG_RETURN_IF(!mg_idx_id_fits(w->dtype, tokens[i]), MG_ERR_LIMIT,
                     "token id %" PRId64 " does not fit in %s", tokens[i],
                     mg_dtype_name((int)w->dtype));
    }
    return MG_OK;
}

/* The tokens converted straight into the output's buffer (mg_out_room); a token that
 * would straddle the buffer's end goes through conv. */
static mg_status write_tokens(mg_idx_writer *w, const int64_t *tokens, size_t n_tokens)
{
    while (n_tokens > 0) {
        uint8_t *dst;
        size_t room, n;
        MG_FORWARD(mg_out_room(w->bin, &dst, &room));
        n = room / w->elem < n_tokens ? room / w->elem : n_tokens;
        if (n == 0) {
            mg_idx_ids_convert(w->dtype, tokens, 1, w->conv);
            MG_FORWARD(mg_out_write(w->bin, w->conv, w->elem));
            n = 1;
        } else {
            mg_idx_ids_convert(w->dtype, tokens, n, dst);
            mg_out_wrote(w->bin, n * w->elem);
        }
        tokens += n;
        n_tokens -= n;
    }
    return MG_OK;
}

/* The index entries of one document: its lengths, their modes (0), its document index. */
static mg_status append_document(mg_idx_writer *w, const int32_t *lengths, size_t n_lengths)
{
    MG_FORWARD(mg_spill_append(&w->lengths, lengths, n_lengths * sizeof *lengths));
    if (w->multimodal) MG_FORWARD(mg_spill_append(&w->modes, NULL, n_lengths));
    int64_t end = (int64_t)n_seq(w);
    return mg_spill_append(&w->docs, &end, sizeof end);
}

/* The document's tokens: converted into the output's buffer and range-checked in one pass
 * when the buffer has room for all of them (committed only if they all fit), else checked
 * first and written by write_tokens. A range error (MG_ERR_LIMIT) writes nothing and
 * leaves the writer usable (*io 0); any other error is the output's (*io 1). */
static mg_status add_tokens(mg_idx_writer *w, const int64_t *tokens, size_t n_tokens, int *io)
{
    uint8_t *dst;
    size_t room;
    *io = 1;
    MG_FORWARD(mg_out_room(w->bin, &dst, &room));
    *io = 0;
    if (n_tokens <= room / w->elem && mg_idx_ids_convert_checked(w->dtype, tokens, n_tokens, dst)) {
        mg_out_wrote(w->bin, n_tokens * w->elem);
        return MG_OK;
    }
    MG_FORWARD(check_ids(w, tokens, n_tokens)); /* what did not fit, or not in one pass */
    *io = 1;
    return write_tokens(w, tokens, n_tokens);
}

mg_status mg_idx_writer_add_document(mg_idx_writer *w, const int64_t *tokens, size_t n_tokens,
                                     const int32_t *lengths, size_t n_lengths)
{
    MG_FORWARD(check_usable(w));
    MG_FORWARD(check_lengths(w, n_tokens, lengths, n_lengths));
    int io;
    mg_status st = add_tokens(w, tokens, n_tokens, &io);
    if (st != MG_OK && !io) return st;
    if (st == MG_OK) st = append_document(w, lengths, n_lengths);
    if (st != MG_OK) {
        w->state = W_FAILED;
        return st;
    }
    w->tokens += n_tokens;
    return MG_OK;
}

static mg_status copy_bin(mg_idx_writer *w, const mg_idx_view *v)
{
    for (uint64_t at = 0; at < v->bin.size; at += COPY_CHUNK) {
        uint64_t n = v->bin.size - at < COPY_CHUNK ? v->bin.size - at : COPY_CHUNK;
        MG_FORWARD(mg_out_write(w->bin, v->bin.data + at, (size_t)n));
    }
    return MG_OK;
}

/* v's document indices after its leading 0, shifted by `offset` sequences. */
static mg_status append_doc_index(mg_idx_writer *w, const mg_idx_view *v, int64_t offset)
{
    int64_t *block = (int64_t *)(void *)w->conv;
    size_t per = CONV_BYTES / sizeof *block;
    const uint8_t *src = mg_idx_view_doc_index(v) + sizeof *block;
    uint64_t total = v->n_doc_indices - 1;
    for (uint64_t at = 0; at < total; at += per) {
        size_t n = total - at < per ? (size_t)(total - at) : per;
        memcpy(block, src + at * sizeof *block, n * sizeof *block);
        for (size_t i = 0; i < n; i++) block[i] += offset;
        MG_FORWARD(mg_spill_append(&w->docs, block, n * sizeof *block));
    }
    return MG_OK;
}

static mg_status append_view(mg_idx_writer *w, const mg_idx_view *v)
{
    uint64_t offset = n_seq(w), s = v->n_sequences;
    if (v->multimodal && !w->multimodal) {
        w->multimodal = 1;
        w->modes_from = offset;
    }
    MG_FORWARD(copy_bin(w, v));
    MG_FORWARD(mg_spill_append(&w->lengths, mg_idx_view_lengths(v), (size_t)(4 * s)));
    MG_FORWARD(append_doc_index(w, v, (int64_t)offset));
    if (w->multimodal) MG_FORWARD(mg_spill_append(&w->modes, mg_idx_view_modes(v), (size_t)s));
    w->tokens += v->bin.size / v->elem_size;
    return MG_OK;
}

mg_status mg_idx_writer_add_index(mg_idx_writer *w, const char *prefix)
{
    MG_FORWARD(check_usable(w));
    mg_idx_view v;
    MG_FORWARD(mg_idx_view_open(&v, prefix));
    mg_status st = MG_OK;
    if (v.dtype != w->dtype)
        st = mg_error_set(MG_ERR_FORMAT,
                          "%s.idx: dtype %s (code %d) does not match the dtype %s (code %d) of %s",
                          prefix, mg_dtype_name((int)v.dtype), (int)v.dtype,
                          mg_dtype_name((int)w->dtype), (int)w->dtype, mg_out_path(w->idx));
    else if ((st = append_view(w, &v)) != MG_OK)
        w->state = W_FAILED;
    mg_idx_view_close(&v);
    return st;
}

static mg_status write_header(mg_idx_writer *w)
{
    uint8_t h[MG_IDX_HEADER_SIZE];
    uint64_t version = 1, s = n_seq(w), d = n_docs(w);
    memcpy(h, MG_IDX_MAGIC, MG_IDX_MAGIC_SIZE);
    memcpy(h + 9, &version, 8);
    h[17] = (uint8_t)w->dtype;
    memcpy(h + 18, &s, 8);
    memcpy(h + 26, &d, 8);
    return mg_out_write(w->idx, h, sizeof h);
}

static mg_status write_chunk(void *out, const void *data, size_t len)
{
    return mg_out_write(out, data, len);
}

typedef struct {
    mg_idx_writer *w;
    int64_t next; /* pointer of the next sequence */
} pointer_pass;

/* Pointers of one chunk of lengths (docs/FORMATS.md §1.2), written a block at a time. */
static mg_status write_pointer_chunk(void *ctx, const void *data, size_t len)
{
    pointer_pass *pp = ctx;
    int64_t *block = (int64_t *)(void *)pp->w->conv;
    size_t per = CONV_BYTES / sizeof *block, total = len / sizeof(int32_t);
    for (size_t at = 0; at < total; at += per) {
        size_t n = total - at < per ? total - at : per;
        for (size_t i = 0; i < n; i++) {
            int32_t length;
            memcpy(&length, (const uint8_t *)data + (at + i) * sizeof length, sizeof length);
            block[i] = pp->next;
            pp->next += (int64_t)length * (int64_t)pp->w->elem;
        }
        MG_FORWARD(mg_out_write(pp->w->idx, block, n * sizeof *block));
    }
    return MG_OK;
}

static mg_status write_pointers(mg_idx_writer *w)
{
    pointer_pass pp = {w, 0};
    MG_FORWARD(mg_spill_stream(&w->lengths, write_pointer_chunk, &pp));
    MG_ASSERT((uint64_t)pp.next == mg_out_offset(w->bin));
    return MG_OK;
}

/* Mode 0 for the sequences before the first multimodal dataset, then the stored modes. */
static mg_status write_modes(mg_idx_writer *w)
{
    memset(w->conv, 0, CONV_BYTES);
    for (uint64_t at = 0; at < w->modes_from; at += CONV_BYTES) {
        uint64_t n = w->modes_from - at < CONV_BYTES ? w->modes_from - at : CONV_BYTES;
        MG_FORWARD(mg_out_write(w->idx, w->conv, (size_t)n));
    }
    return mg_spill_stream(&w->modes, write_chunk, w->idx);
}

static mg_status write_idx(mg_idx_writer *w)
{
    MG_FORWARD(write_header(w));
    MG_FORWARD(mg_spill_stream(&w->lengths, write_chunk, w->idx));
    MG_FORWARD(write_pointers(w));
    MG_FORWARD(mg_spill_stream(&w->docs, write_chunk, w->idx));
    if (w->multimodal) MG_FORWARD(write_modes(w));
    return MG_OK;
}

mg_status mg_idx_writer_finish(mg_idx_writer *w)
{
    MG_FORWARD(check_usable(w));
    mg_status st = write_idx(w);
    if (st == MG_OK) st = mg_out_commit(w->bin);
    if (st == MG_OK) {
        st = mg_out_commit(w->idx);
        if (st != MG_OK) unlink(mg_out_path(w->bin)); /* never a .bin without its .idx */
    }
    w->state = st == MG_OK ? W_FINISHED : W_FAILED;
    return st;
}

void mg_idx_writer_free(mg_idx_writer *w)
{
    if (!w) return;
    mg_out_free(w->bin);
    mg_out_free(w->idx);
    mg_spill_free(&w->lengths);
    mg_spill_free(&w->docs);
    mg_spill_free(&w->modes);
    free(w->conv);
    free(w);
}

uint64_t mg_idx_writer_sequences(const mg_idx_writer *w) { return n_seq(w); }
uint64_t mg_idx_writer_documents(const mg_idx_writer *w) { return n_docs(w) - 1; }
uint64_t mg_idx_writer_tokens(const mg_idx_writer *w) { return w->tokens; }

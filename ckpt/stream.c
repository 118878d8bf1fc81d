/* stream.c — streaming of planned tensors into a torch.save writer (mg_torch_save_opts
 * callbacks), shared by the Megatron savers (mg_save.c: one model_optim_rng.pt per rank;
 * td_save.c: one archive per torch_dist chunk): rows that lie back to back in an input file
 * are read from that file straight into the writer (direct), rows made of plain pieces of
 * the mapped inputs are written from them (gather; their pages dropped at the next
 * callback, after the write), the others (dtype conversion) gathered through the reader.
 *
 * Contract (ckpt.h): the writer asks for a tensor's bytes in order; the planned tensor is
 * found through pk (pk[i] is the pickled tensor of f->t[i]); a tensor's last byte counts it
 * in the progress.
 */
#include <stdlib.h>

#include "ckpt.h"

/* The planned tensor behind t (they are asked for in order: usually the current one). */
static const ck_tensor *current(ck_stream *c, const mg_pk_tensor *t)
{
    if (!c->pk[c->cur] || c->pk[c->cur]->tensor != t) {
        size_t i = c->cur, k = 0;
        for (; k < c->f->n; k++, i = (i + 1) % c->f->n)
            if (c->pk[i] && c->pk[i]->tensor == t) break;
        MG_ASSERT(k < c->f->n);
        c->cur = i;
    }
    return &c->f->t[c->cur];
}

static void release_done(ck_stream *c)
{
    ck_iov_release(c->iov, c->niov);
    c->niov = 0;
    if (c->done_t) ck_tensor_release(c->s, c->done_t);
    c->done_t = NULL;
}

static mg_status fill(void *ctx, const mg_pk_tensor *t, uint64_t off, void *out, size_t len)
{
    ck_stream *c = ctx;
    release_done(c);
    const ck_tensor *ct = current(c, t);
    MG_FORWARD(ck_reader_read(&c->rd, ct, off, out, len));
    if (off + len == ck_tensor_bytes(ct)) ck_progress_add(c->prog, 1, off + len);
    return MG_OK;
}

#define DIRECT_MIN ((uint64_t)1 << 20) /* smaller contiguous pieces go through fill */

/* Whole rows from off on that lie back to back in an input file, in their own dtype. */
static size_t direct(void *ctx, const mg_pk_tensor *t, uint64_t off, size_t max, int *fd,
                     uint64_t *file_off)
{
    ck_stream *c = ctx;
    release_done(c);
    const ck_tensor *ct = current(c, t);
    uint64_t rowb = (uint64_t)ct->gcols * mg_tdtype_size(ct->dtype);
    if (!c->s->file_of || rowb == 0 || off % rowb) return 0;
    const uint8_t *p = NULL;
    int64_t k = ck_tensor_direct_rows(c->s, ct, (int64_t)(off / rowb), (int64_t)(max / rowb), &p);
    uint64_t len = (uint64_t)k * rowb;
    if (len < DIRECT_MIN || !c->s->file_of(c->s, p, fd, file_off)) return 0;
    if (off + len == ck_tensor_bytes(ct)) {
        c->done_t = ct;
        ck_progress_add(c->prog, 1, off + len);
    }
    return (size_t)len;
}

/* Whole rows from off on (at most max bytes) as pieces of the mapped inputs (c->iov). */
static size_t gather(void *ctx, const mg_pk_tensor *t, uint64_t off, size_t max,
                     const struct iovec **iov, int *niov)
{
    ck_stream *c = ctx;
    release_done(c);
    const ck_tensor *ct = current(c, t);
    uint64_t rowb = (uint64_t)ct->gcols * mg_tdtype_size(ct->dtype);
    if (rowb == 0 || off % rowb) return 0;
    int64_t k = ck_tensor_iov(c->s, ct, (int64_t)(off / rowb), (int64_t)(max / rowb), max,
                              c->iov, CK_IOV_MAX, &c->niov);
    uint64_t len = (uint64_t)k * rowb;
    *iov = c->iov;
    *niov = c->niov;
    if (len > 0 && off + len == ck_tensor_bytes(ct)) {
        c->done_t = ct;
        ck_progress_add(c->prog, 1, off + len);
    }
    return (size_t)len;
}


mg_status ck_stream_init(ck_stream *c, const ck_file *f, const ck_source *s, ck_progress *prog,
                         int threads)
{
    *c = (ck_stream){.f = f, .prog = prog, .rd = {.s = s, .threads = threads}, .s = s};
    c->pk = mg_calloc(f->n ? f->n : 1, sizeof(*c->pk));
    c->iov = mg_malloc(CK_IOV_MAX * sizeof(*c->iov));
    return c->pk && c->iov ? MG_OK : MG_ERR_NOMEM;
}

void ck_stream_opts(ck_stream *c, mg_torch_save_opts *so, const char *archive_name)
{
    *so = (mg_torch_save_opts){.archive_name = archive_name, .fill = fill, .direct = direct,
                               .gather = gather, .ctx = c};
}

void ck_stream_end(ck_stream *c)
{
    release_done(c);
    ck_reader_free(&c->rd);
    free(c->iov);
    free(c->pk);
    c->iov = NULL;
    c->pk = NULL;
}

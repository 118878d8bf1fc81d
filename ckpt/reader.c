/* reader.c — reading of a planned output tensor in its byte order, in pieces the writer
 * chooses (a transposed GPT-2 tensor is held whole, otherwise at most one row), and the
 * page release helper that keeps the mapped inputs out of the resident set.
 *
 * Contract (ckpt.h): ck_reader_read serves any byte range; whole rows of a tensor that is
 * not transposed are gathered straight into the caller's memory (by `threads` threads,
 * each a slice of the rows, when the range holds >= 2 MiB; the first failure is returned),
 * the partial rows at the edges of a range through a one-row buffer kept for the next,
 * sequential, range. When a tensor's last byte is read its sources are released.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ckpt.h"

void ck_release_pages(const void *p, size_t n)
{
    long ps = sysconf(_SC_PAGESIZE);
    uintptr_t page = ps > 0 ? (uintptr_t)ps : 4096;
    uintptr_t a = ((uintptr_t)p + page - 1) & ~(page - 1);
    uintptr_t b = ((uintptr_t)p + n) & ~(page - 1);
    if (b > a) madvise((void *)a, b - a, MADV_DONTNEED);
}

static mg_status grow(ck_reader *r, size_t n)
{
    if (n <= r->cap) return MG_OK;
    uint8_t *p = mg_realloc(r->buf, n);
    if (!p) return MG_ERR_NOMEM;
    r->buf = p;
    r->cap = n;
    return MG_OK;
}

#define PAR_MIN ((uint64_t)2 << 20) /* smallest row range split between threads */

typedef struct {
    const ck_source *s;
    const ck_tensor *t;
    int64_t r0, r1;
    uint8_t *buf;
    mg_status st;
    char msg[MG_ERROR_MAX];
    pthread_t th;
    int started;
} part;

static void *fill_part(void *arg)
{
    part *p = arg;
    p->st = ck_tensor_fill_rows(p->s, p->t, p->r0, p->r1, p->buf);
    if (p->st != MG_OK) mg_error_copy(p->msg);
    return NULL;
}

/* Rows [r0, r1) of t into buf, split between up to `threads` threads when large. */
static mg_status fill_rows(const ck_source *s, const ck_tensor *t, int64_t r0, int64_t r1,
                           uint8_t *buf, int threads)
{
    uint64_t rowb = (uint64_t)t->gcols * mg_tdtype_size(t->dtype);
    int64_t n = r1 - r0;
    if (threads > 8) threads = 8;
    if (threads <= 1 || n < 2 || (uint64_t)n * rowb < PAR_MIN)
        return ck_tensor_fill_rows(s, t, r0, r1, buf);
    if (threads > n) threads = (int)n;
    part ps[8];
    for (int i = 0; i < threads; i++) {
        int64_t a = r0 + n * i / threads, b = r0 + n * (i + 1) / threads;
        ps[i] = (part){.s = s, .t = t, .r0 = a, .r1 = b, .buf = buf + (uint64_t)(a - r0) * rowb};
        if (i > 0) ps[i].started = pthread_create(&ps[i].th, NULL, fill_part, &ps[i]) == 0;
    }
    fill_part(&ps[0]);
    for (int i = 1; i < threads; i++) {
        if (ps[i].started) pthread_join(ps[i].th, NULL);
        else fill_part(&ps[i]);
    }
    for (int i = 0; i < threads; i++)
        if (ps[i].st != MG_OK) {
            mg_error_restore(ps[i].st, ps[i].msg);
            return ps[i].st;
        }
    return MG_OK;
}

/* Loads the whole of a transposed t, or the one row of t holding byte off. */
static mg_status load(ck_reader *r, uint64_t off)
{
    const ck_tensor *t = r->t;
    uint64_t total = ck_tensor_bytes(t);
    if (t->transpose) {
        MG_FORWARD(grow(r, (size_t)total));
        MG_FORWARD(ck_tensor_fill(r->s, t, r->buf, &r->scratch, &r->scratch_cap));
        r->b0 = 0;
        r->b1 = total;
        return MG_OK;
    }
    uint64_t rowb = (uint64_t)t->gcols * mg_tdtype_size(t->dtype);
    int64_t row = (int64_t)(off / rowb);
    MG_FORWARD(grow(r, (size_t)rowb));
    MG_FORWARD(ck_tensor_fill_rows(r->s, t, row, row + 1, r->buf));
    r->b0 = (uint64_t)row * rowb;
    r->b1 = r->b0 + rowb;
    return MG_OK;
}

/* Whole rows [off, off + k * rowb) inside [off, off + len) of a tensor that is not
 * transposed: their bytes (k >= 1), 0 when off is not at a row start or no row fits. */
static uint64_t whole_rows(const ck_tensor *t, uint64_t off, size_t len)
{
    uint64_t rowb = (uint64_t)t->gcols * mg_tdtype_size(t->dtype);
    if (t->transpose || rowb == 0 || off % rowb) return 0;
    return (len / rowb) * rowb;
}

mg_status ck_reader_read(ck_reader *r, const ck_tensor *t, uint64_t off, void *out, size_t len)
{
    if (r->t != t) {
        r->t = t;
        r->b0 = r->b1 = 0;
    }
    uint8_t *o = out;
    while (len > 0) {
        size_t n;
        uint64_t w = off >= r->b0 && off < r->b1 ? 0 : whole_rows(t, off, len);
        if (w > 0) {
            uint64_t rowb = (uint64_t)t->gcols * mg_tdtype_size(t->dtype);
            int64_t r0 = (int64_t)(off / rowb);
            MG_FORWARD(fill_rows(r->s, t, r0, r0 + (int64_t)(w / rowb), o, r->threads));
            n = (size_t)w;
        } else {
            if (off < r->b0 || off >= r->b1) MG_FORWARD(load(r, off));
            n = (size_t)(r->b1 - off) < len ? (size_t)(r->b1 - off) : len;
            memcpy(o, r->buf + (off - r->b0), n);
        }
        o += n;
        off += n;
        len -= n;
    }
    if (off == ck_tensor_bytes(t)) ck_tensor_release(r->s, t);
    return MG_OK;
}

void ck_reader_free(ck_reader *r)
{
    free(r->buf);
    free(r->scratch);
    memset(r, 0, sizeof(*r));
}

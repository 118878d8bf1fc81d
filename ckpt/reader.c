/* reader.c — chunked reading of a planned output tensor in its byte order, so that writers
 * hold at most ~16 MiB of a tensor (a transposed GPT-2 tensor is held whole), and the page
 * release helper that keeps the mapped inputs out of the resident set.
 *
 * Contract (ckpt.h): ck_reader_read serves any byte range; sequential ranges refill the
 * buffer only when they leave it. When a tensor is finished its sources are released.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "ckpt.h"

#define CHUNK ((uint64_t)8 << 20)

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

/* Loads the chunk of t holding byte off. */
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
    uint64_t rows = CHUNK / rowb ? CHUNK / rowb : 1;
    int64_t r0 = (int64_t)(off / rowb), r1 = r0 + (int64_t)rows;
    if (r1 > t->grows) r1 = t->grows;
    MG_FORWARD(grow(r, (size_t)((uint64_t)(r1 - r0) * rowb)));
    MG_FORWARD(ck_tensor_fill_rows(r->s, t, r0, r1, r->buf));
    r->b0 = (uint64_t)r0 * rowb;
    r->b1 = (uint64_t)r1 * rowb;
    return MG_OK;
}

mg_status ck_reader_read(ck_reader *r, const ck_tensor *t, uint64_t off, void *out, size_t len)
{
    if (r->t != t) {
        r->t = t;
        r->b0 = r->b1 = 0;
    }
    uint8_t *o = out;
    while (len > 0) {
        if (off < r->b0 || off >= r->b1) MG_FORWARD(load(r, off));
        size_t n = (size_t)(r->b1 - off) < len ? (size_t)(r->b1 - off) : len;
        memcpy(o, r->buf + (off - r->b0), n);
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

/* idxds_spill.c — an append-only byte array with bounded memory, for the index arrays of a
 * dataset writer (sequence lengths, document indices, modes).
 *
 * Contract (declared in idxds_internal.h):
 *   - Appends go to an in-memory buffer that grows up to `cap` bytes (MG_SPILL_DEFAULT_CAP,
 *     a multiple of 8). When it is full it is written to a spill file and emptied, so
 *     memory stays <= cap whatever the total. A small array never creates a file.
 *   - The spill file is created in the output's directory as "<name>.tmp.XXXXXX"
 *     (mkostemp) and unlinked at once: it never shows in a directory listing and disappears
 *     with its descriptor, after finish, free, an error or a crash alike.
 *   - Callers append whole elements of at most 8 bytes, so every buffer flush, every stream
 *     chunk and the buffer itself hold whole elements (the cap is a multiple of 8).
 *   - mg_spill_stream() hands the whole array, in order, to a callback in chunks: the spill
 *     file read back with pread() in MG_SPILL_CHUNK-byte pieces, then the buffer.
 *   - Errors name the spill file: "<name>.tmp.XXXXXX: write failed: No space left on device".
 */
#include "idxds_internal.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MG_SPILL_CHUNK ((size_t)1 << 20)
#define MG_SPILL_FIRST_ALLOC ((size_t)4096)

mg_status mg_spill_init(mg_spill *s, const char *prefix, const char *tag)
{
    memset(s, 0, sizeof *s);
    s->fd = -1;
    s->cap = MG_SPILL_DEFAULT_CAP;
    s->name = mg_idx_path_alloc(prefix, tag);
    return s->name ? MG_OK : MG_ERR_NOMEM;
}

void mg_spill_free(mg_spill *s)
{
    if (s->fd >= 0) close(s->fd);
    free(s->buf);
    free(s->name);
    memset(s, 0, sizeof *s);
    s->fd = -1;
}

void mg_spill_set_cap(mg_spill *s, size_t bytes)
{
    MG_ASSERT(bytes >= 8 && bytes % 8 == 0);
    s->cap = bytes;
}

/* Creates and at once unlinks the spill file. */
static mg_status open_file(mg_spill *s)
{
    char *path = mg_idx_path_alloc(s->name, ".tmp.XXXXXX");
    if (!path) return MG_ERR_NOMEM;
    s->fd = mkostemp(path, O_CLOEXEC);
    mg_status st = MG_OK;
    if (s->fd < 0)
        st = mg_error_errno(errno, "%s.tmp.XXXXXX: cannot create a temporary file", s->name);
    else unlink(path);
    free(path);
    return st;
}

static mg_status flush(mg_spill *s)
{
    if (s->fd < 0) MG_FORWARD(open_file(s));
    const uint8_t *p = s->buf;
    for (size_t left = s->used; left > 0;) {
        ssize_t n = pwrite(s->fd, p, left, (off_t)s->file_bytes);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            return mg_error_errno(n < 0 ? errno : EIO, "%s.tmp.XXXXXX: write failed", s->name);
        p += n;
        left -= (size_t)n;
        s->file_bytes += (uint64_t)n;
    }
    s->used = 0;
    return MG_OK;
}

/* Room for `len` more bytes in the buffer (up to the cap), growing it geometrically. */
static mg_status grow(mg_spill *s, size_t len)
{
    size_t need = s->used + len < s->cap ? s->used + len : s->cap;
    if (need <= s->alloc) return MG_OK;
    size_t n = s->alloc ? s->alloc : MG_SPILL_FIRST_ALLOC;
    while (n < need) n *= 2;
    if (n > s->cap) n = s->cap;
    uint8_t *p = mg_realloc(s->buf, n);
    if (!p) return MG_ERR_NOMEM;
    s->buf = p;
    s->alloc = n;
    return MG_OK;
}

/* Appends len bytes of data, or len zero bytes when data is NULL. */
mg_status mg_spill_append(mg_spill *s, const void *data, size_t len)
{
    const uint8_t *p = data;
    while (len > 0) {
        if (s->used >= s->cap) MG_FORWARD(flush(s));
        MG_FORWARD(grow(s, len));
        size_t n = s->cap - s->used < len ? s->cap - s->used : len;
        if (p) memcpy(s->buf + s->used, p, n);
        else memset(s->buf + s->used, 0, n);
        s->used += n;
        len -= n;
        if (p) p += n;
    }
    return MG_OK;
}

static mg_status read_at(const mg_spill *s, uint8_t *dst, size_t len, uint64_t at)
{
    while (len > 0) {
        ssize_t n = pread(s->fd, dst, len, (off_t)at);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0)
            return mg_error_errno(n < 0 ? errno : EIO, "%s.tmp.XXXXXX: read failed", s->name);
        dst += n;
        len -= (size_t)n;
        at += (uint64_t)n;
    }
    return MG_OK;
}

static mg_status stream_file(const mg_spill *s, mg_spill_fn fn, void *ctx)
{
    size_t size = s->file_bytes < MG_SPILL_CHUNK ? (size_t)s->file_bytes : MG_SPILL_CHUNK;
    uint8_t *chunk = mg_malloc(size);
    if (!chunk) return MG_ERR_NOMEM;
    mg_status st = MG_OK;
    for (uint64_t at = 0; st == MG_OK && at < s->file_bytes; at += size) {
        size_t n = s->file_bytes - at < size ? (size_t)(s->file_bytes - at) : size;
        st = read_at(s, chunk, n, at);
        if (st == MG_OK) st = fn(ctx, chunk, n);
    }
    free(chunk);
    return st;
}

mg_status mg_spill_stream(const mg_spill *s, mg_spill_fn fn, void *ctx)
{
    if (s->file_bytes) MG_FORWARD(stream_file(s, fn, ctx));
    return s->used ? fn(ctx, s->buf, s->used) : MG_OK;
}

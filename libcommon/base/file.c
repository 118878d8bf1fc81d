/* file.c — read-only mappings, atomic buffered output files, small whole-file reads.
 *
 * Contract (see mg/file.h):
 *   - mg_map_open() maps a regular file read-only (MAP_PRIVATE); an empty file is
 *     {NULL, 0}; a directory or other non-regular file is refused.
 *   - mg_out_create() creates "<path>.tmp.<pid>.<n>" (O_EXCL, first free n) in the same
 *     directory; writes go through a 1 MiB buffer and are flushed with pwrite() at 64-bit
 *     offsets; every 32 MiB written, the writeback of those bytes is started
 *     (sync_file_range, not waited for); mg_out_commit() flushes, fsyncs the file, renames
 *     it over the final path and fsyncs the directory. Any failure leaves the temporary
 *     file for mg_out_abort() (or mg_out_free()) to delete; after the first failed write
 *     every further call fails again, so a caller cannot commit a file with a hole in it.
 *   - mg_out_create_direct() does the same with direct I/O (O_DIRECT) where the filesystem
 *     takes it: the buffer is DIRECT_BUF_SIZE bytes from mg_pages_alloc (aligned), only
 *     whole buffers are written direct (so every direct write is at a multiple of its size),
 *     and the file goes back to buffered I/O (fcntl) for anything else: the tail at commit,
 *     writev, copies, or a direct write the kernel refuses with EINVAL (then retried
 *     buffered). The bytes written do not depend on the path they took.
 *   - mg_out_writev() flushes the buffer and appends the pieces of an iovec array with
 *     pwritev() at the on-disk offset (at most IOV_MAX pieces per system call), resuming
 *     partial writes inside the piece where they stopped.
 *   - mg_out_copy_from() flushes the buffer and appends a range of another file with
 *     copy_file_range() at explicit offsets, falling back to pread() + pwrite() through the
 *     buffer where the kernel refuses (other filesystem, old kernel, special file).
 *   - Errors name the path: "PATH: write failed: No space left on device" (MG_ERR_NOSPACE
 *     for ENOSPC/EDQUOT through mg_error_errno()).
 */
#include "mg/file.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "mg/grow.h"
#include "mg/pages.h"

#define OUT_BUF_SIZE ((size_t)1 << 20)
/* One huge page (mg/pages.h): a multiple of any logical block size, and as fast per byte as
 * larger synchronous direct writes on the disks measured (docs/BENCHMARKS.md). */
#define DIRECT_BUF_SIZE ((size_t)2 << 20)
#define OUT_MAX_TRIES 1000
#define WRITEBACK_STEP ((uint64_t)32 << 20)

struct mg_out {
    int fd;
    int committed;
    int direct;        /* O_DIRECT is set on fd (mg_out_create_direct, until dropped) */
    size_t cap;        /* buffer size: OUT_BUF_SIZE, or DIRECT_BUF_SIZE from mg_pages_alloc */
    mg_status failed;  /* sticky: first write/flush error */
    uint64_t flushed;  /* bytes on disk (the pwrite offset) */
    uint64_t kicked;   /* writeback started for [0, kicked) */
    size_t used;       /* bytes waiting in buf */
    uint8_t *buf;
    char *path;        /* final name */
    char *tmp;         /* temporary name */
};

/* ---- read-only maps -------------------------------------------------------------- */

static mg_status map_fd(mg_map *m, int fd, const char *path)
{
    struct stat st;
    if (fstat(fd, &st) != 0) return mg_error_errno(errno, "%s: stat failed", path);
    if (S_ISDIR(st.st_mode)) return mg_error_errno(EISDIR, "%s: cannot map", path);
    if (!S_ISREG(st.st_mode))
        return mg_error_set(MG_ERR_IO, "%s: cannot map: not a regular file", path);
    if (st.st_size == 0) return MG_OK;
    if ((uint64_t)st.st_size > (uint64_t)SIZE_MAX)
        return mg_error_set(MG_ERR_LIMIT, "%s: file too large to map", path);
    void *p = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) return mg_error_errno(errno, "%s: mmap failed", path);
    m->data = p;
    m->size = (size_t)st.st_size;
    return MG_OK;
}

mg_status mg_map_open(mg_map *m, const char *path)
{
    m->data = NULL;
    m->size = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return mg_error_errno(errno, "%s: cannot open", path);
    mg_status st = map_fd(m, fd, path);
    close(fd); /* the mapping stays valid */
    return st;
}

void mg_map_close(mg_map *m)
{
    if (m->data) munmap((void *)(uintptr_t)m->data, m->size);
    m->data = NULL;
    m->size = 0;
}

/* ---- atomic output ----------------------------------------------------------------- */

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = mg_malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* Creates the first free "<path>.tmp.<pid>.<n>" with O_EXCL. */
static mg_status create_tmp(mg_out *o)
{
    size_t cap = strlen(o->path) + 64;
    o->tmp = mg_malloc(cap);
    if (!o->tmp) return MG_ERR_NOMEM;
    for (int n = 0; n < OUT_MAX_TRIES; n++) {
        snprintf(o->tmp, cap, "%s.tmp.%ld.%d", o->path, (long)getpid(), n);
        o->fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (o->fd >= 0) return MG_OK;
        if (errno != EEXIST) return mg_error_errno(errno, "%s: cannot create", o->tmp);
    }
    return mg_error_set(MG_ERR_IO, "%s: cannot create a temporary file: too many exist",
                        o->path);
}

/* Sets or clears O_DIRECT on o->fd; 0 on success. */
static int set_direct(mg_out *o, int on)
{
#ifdef O_DIRECT
    int fl = fcntl(o->fd, F_GETFL);
    if (fl < 0 || fcntl(o->fd, F_SETFL, on ? fl | O_DIRECT : fl & ~O_DIRECT) != 0) return -1;
    o->direct = on;
    return 0;
#else
    (void)o;
    return on ? -1 : 0;
#endif
}

/* Back to buffered I/O for the rest of the file (a no-op when not direct). */
static mg_status drop_direct(mg_out *o)
{
    if (!o->direct || set_direct(o, 0) == 0) return MG_OK;
    return o->failed = mg_error_errno(errno, "%s: cannot leave direct I/O", o->path);
}

static mg_status out_open(mg_out **out, const char *path, int direct)
{
    *out = NULL;
    mg_out *o = mg_calloc(1, sizeof *o);
    if (!o) return MG_ERR_NOMEM;
    o->fd = -1;
    o->path = dup_str(path);
    o->cap = direct ? DIRECT_BUF_SIZE : OUT_BUF_SIZE;
    o->buf = direct ? mg_pages_alloc(o->cap) : mg_malloc(o->cap);
    mg_status st = (o->path && o->buf) ? create_tmp(o) : MG_ERR_NOMEM;
    /* after the creation: an open(O_CREAT | O_DIRECT) that the filesystem refuses may
     * leave the file behind; a refused fcntl leaves it buffered */
    if (st == MG_OK && direct) (void)set_direct(o, 1);
    if (st != MG_OK) {
        free(o->tmp);
        o->tmp = NULL; /* nothing was created: nothing to unlink */
        mg_out_free(o);
        return st;
    }
    *out = o;
    return MG_OK;
}

mg_status mg_out_create(mg_out **out, const char *path) { return out_open(out, path, 0); }

mg_status mg_out_create_direct(mg_out **out, const char *path)
{
    return out_open(out, path, 1);
}

/* Starts the writeback of what was written since the last start, every WRITEBACK_STEP
 * bytes, without waiting for it: the disk works while we copy, and the fsync of
 * mg_out_commit waits only for the tail. Advisory: a failure here is ignored (the fsync
 * reports any write error). */
static void start_writeback(mg_out *o)
{
    if (o->flushed - o->kicked < WRITEBACK_STEP) return;
    (void)sync_file_range(o->fd, (off_t)o->kicked, (off_t)(o->flushed - o->kicked),
                          SYNC_FILE_RANGE_WRITE);
    o->kicked = o->flushed;
}

/* Writes len bytes at the current on-disk offset, retrying short writes. */
static mg_status write_at(mg_out *o, const uint8_t *p, size_t len)
{
    while (len > 0) {
        size_t chunk = len < ((size_t)1 << 30) ? len : ((size_t)1 << 30);
        ssize_t w = pwrite(o->fd, p, chunk, (off_t)o->flushed);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && errno == EINVAL && o->direct) { /* not direct here after all */
            MG_FORWARD(drop_direct(o));
            continue;
        }
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            o->failed = mg_error_errno(e, "%s: write failed", o->path);
            return o->failed;
        }
        p += w;
        len -= (size_t)w;
        o->flushed += (uint64_t)w;
        start_writeback(o);
    }
    return MG_OK;
}

/* Writes the buffer out. While direct, mg_out_write flushes only a full buffer (so every
 * direct write is at a multiple of the buffer's size); every other caller leaves direct I/O
 * first (drop_direct). */
static mg_status flush_buf(mg_out *o)
{
    mg_status st = write_at(o, o->buf, o->used);
    o->used = 0;
    return st;
}

static mg_status check_writable(const mg_out *o)
{
    if (o->committed)
        return mg_error_set(MG_ERR_ARG, "%s: write after commit", o->path);
    if (o->failed)
        return mg_error_set(o->failed, "%s: an earlier write failed", o->path);
    return MG_OK;
}

mg_status mg_out_write(mg_out *o, const void *data, size_t len)
{
    MG_FORWARD(check_writable(o));
    const uint8_t *p = data;
    while (o->used + len > o->cap) {
        size_t fill = o->cap - o->used;
        memcpy(o->buf + o->used, p, fill);
        o->used = o->cap;
        MG_FORWARD(flush_buf(o));
        p += fill;
        len -= fill;
        /* large writes bypass the buffer, except while direct (aligned memory only) */
        if (len >= o->cap && !o->direct) return write_at(o, p, len);
    }
    if (len) memcpy(o->buf + o->used, p, len);
    o->used += len;
    return MG_OK;
}

/* Drops the pieces of *iov wholly inside the first *done bytes (*done becomes the bytes
 * written of the new first piece); returns the pieces left. */
static int iov_skip(const struct iovec **iov, int n, size_t *done)
{
    while (n > 0 && *done >= (*iov)->iov_len) {
        *done -= (*iov)->iov_len;
        (*iov)++;
        n--;
    }
    return n;
}

mg_status mg_out_writev(mg_out *o, const struct iovec *iov, int n)
{
    MG_FORWARD(check_writable(o));
    MG_FORWARD(drop_direct(o)); /* the caller's memory: no alignment */
    MG_FORWARD(flush_buf(o));
    struct iovec v[IOV_MAX];
    size_t done = 0; /* bytes of iov[0] already written */
    while ((n = iov_skip(&iov, n, &done)) > 0) {
        int nv = n < IOV_MAX ? n : IOV_MAX;
        const struct iovec *p = iov;
        if (done > 0) { /* resume inside iov[0] */
            memcpy(v, iov, (size_t)nv * sizeof(*v));
            v[0].iov_base = (uint8_t *)v[0].iov_base + done;
            v[0].iov_len -= done;
            p = v;
        }
        ssize_t w = pwritev(o->fd, p, nv, (off_t)o->flushed);
        if (w < 0 && errno == EINTR) continue;
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            return o->failed = mg_error_errno(e, "%s: write failed", o->path);
        }
        o->flushed += (uint64_t)w;
        start_writeback(o);
        done += (size_t)w;
    }
    return MG_OK;
}

/* pread + pwrite through the buffer (empty on entry), each piece shown to see() first. */
static mg_status copy_by_read(mg_out *o, int fd, uint64_t off, uint64_t len,
                              void (*see)(void *ctx, const void *p, size_t n), void *ctx)
{
    while (len > 0) {
        size_t chunk = len < o->cap ? (size_t)len : o->cap;
        ssize_t r = pread(fd, o->buf, chunk, (off_t)off);
        if (r < 0 && errno == EINTR) continue;
        if (r <= 0) {
            o->failed = r < 0 ? mg_error_errno(errno, "%s: read of the copy source failed", o->path)
                              : mg_error_set(MG_ERR_IO, "%s: copy source ends early", o->path);
            return o->failed;
        }
        if (see) see(ctx, o->buf, (size_t)r);
        MG_FORWARD(write_at(o, o->buf, (size_t)r));
        off += (uint64_t)r;
        len -= (uint64_t)r;
    }
    return MG_OK;
}

static int copy_unsupported(int e)
{
    return e == EXDEV || e == ENOSYS || e == EINVAL || e == EOPNOTSUPP;
}

mg_status mg_out_copy_from(mg_out *o, int src_fd, uint64_t src_off, uint64_t len)
{
    MG_FORWARD(check_writable(o));
    MG_FORWARD(drop_direct(o)); /* copy_file_range and reads of any length */
    MG_FORWARD(flush_buf(o));
    while (len > 0) {
        loff_t in = (loff_t)src_off, out = (loff_t)o->flushed;
        size_t chunk = len < ((uint64_t)1 << 30) ? (size_t)len : ((size_t)1 << 30);
        ssize_t w = copy_file_range(src_fd, &in, o->fd, &out, chunk, 0);
        if (w < 0 && errno == EINTR) continue;
        if (w < 0 && copy_unsupported(errno))
            return copy_by_read(o, src_fd, src_off, len, NULL, NULL);
        if (w <= 0) {
            o->failed = w < 0 ? mg_error_errno(errno, "%s: copy failed", o->path)
                              : mg_error_set(MG_ERR_IO, "%s: copy source ends early", o->path);
            return o->failed;
        }
        o->flushed += (uint64_t)w;
        start_writeback(o);
        src_off += (uint64_t)w;
        len -= (uint64_t)w;
    }
    return MG_OK;
}

mg_status mg_out_copy_seen(mg_out *o, int src_fd, uint64_t src_off, uint64_t len,
                           void (*see)(void *ctx, const void *p, size_t n), void *ctx)
{
    MG_FORWARD(check_writable(o));
    MG_FORWARD(drop_direct(o));
    MG_FORWARD(flush_buf(o));
    return copy_by_read(o, src_fd, src_off, len, see, ctx);
}

mg_status mg_out_room(mg_out *o, uint8_t **p, size_t *avail)
{
    *p = NULL;
    *avail = 0;
    MG_FORWARD(check_writable(o));
    if (o->used == o->cap) MG_FORWARD(flush_buf(o)); /* a full buffer: direct stays valid */
    *p = o->buf + o->used;
    *avail = o->cap - o->used;
    return MG_OK;
}

void mg_out_wrote(mg_out *o, size_t n)
{
    MG_ASSERT(n <= o->cap - o->used);
    o->used += n;
}

uint64_t mg_out_offset(const mg_out *o) { return o->flushed + o->used; }

int mg_out_is_direct(const mg_out *o) { return o->direct; }

const char *mg_out_path(const mg_out *o) { return o->path; }

/* fsync of the directory holding path, so that the rename itself is durable. */
static mg_status sync_dir(const char *path)
{
    const char *slash = strrchr(path, '/');
    char dir[PATH_MAX];
    if (!slash) snprintf(dir, sizeof dir, ".");
    else if (slash == path) snprintf(dir, sizeof dir, "/");
    else snprintf(dir, sizeof dir, "%.*s", (int)(slash - path), path);
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return mg_error_errno(errno, "%s: cannot open directory", dir);
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    /* Some filesystems cannot fsync a directory: that is not a failure of ours. */
    if (rc != 0 && e != EINVAL && e != ENOTSUP)
        return mg_error_errno(e, "%s: fsync failed", dir);
    return MG_OK;
}

mg_status mg_out_commit(mg_out *o)
{
    MG_FORWARD(check_writable(o));
    MG_FORWARD(drop_direct(o)); /* the tail, of any length */
    MG_FORWARD(flush_buf(o));
    if (fsync(o->fd) != 0) return o->failed = mg_error_errno(errno, "%s: fsync failed", o->path);
    int rc = close(o->fd);
    o->fd = -1;
    if (rc != 0) return o->failed = mg_error_errno(errno, "%s: close failed", o->path);
    if (rename(o->tmp, o->path) != 0)
        return o->failed = mg_error_errno(errno, "%s: cannot rename %s", o->path, o->tmp);
    o->committed = 1;
    return sync_dir(o->path);
}

void mg_out_abort(mg_out *o)
{
    if (!o || o->committed) return;
    if (o->fd >= 0) close(o->fd);
    o->fd = -1;
    if (o->tmp) unlink(o->tmp);
    free(o->tmp);
    o->tmp = NULL;
    o->used = 0;
}

void mg_out_free(mg_out *o)
{
    if (!o) return;
    mg_out_abort(o);
    if (o->fd >= 0) close(o->fd);
    if (o->cap == DIRECT_BUF_SIZE) mg_pages_free(o->buf, o->cap);
    else free(o->buf);
    free(o->tmp);
    free(o->path);
    free(o);
}

/* ---- small files ------------------------------------------------------------------- */

/* Reads fd to its end (works for pipes and /proc files whose size is unknown). */
static mg_status read_all(int fd, const char *path, char **data, size_t *len)
{
    size_t cap = 0, n = 0;
    char *buf = NULL;
    for (;;) {
        if (MG_GROW(buf, cap, n + 2, (size_t)1 << 16) != MG_OK) return free(buf), MG_ERR_NOMEM;
        ssize_t r = read(fd, buf + n, cap - n - 1); /* one byte kept for the NUL */
        if (r < 0 && errno == EINTR) continue;
        if (r < 0) return free(buf), mg_error_errno(errno, "%s: read failed", path);
        if (r == 0) break;
        n += (size_t)r;
    }
    buf[n] = 0;
    *data = buf;
    *len = n;
    return MG_OK;
}

mg_status mg_read_file(const char *path, char **data, size_t *len)
{
    *data = NULL;
    if (len) *len = 0;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0) return mg_error_errno(errno, "%s: cannot open", path);
    struct stat st;
    if (fstat(fd, &st) == 0 && S_ISDIR(st.st_mode)) {
        close(fd);
        return mg_error_errno(EISDIR, "%s: cannot read", path);
    }
    size_t n = 0;
    mg_status s = read_all(fd, path, data, &n);
    close(fd);
    if (len) *len = n;
    return s;
}

int mg_is_dir(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

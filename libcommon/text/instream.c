/* instream.c — lines from files, compressed files, tar/zip archives, directories, stdin.
 *
 * Contract (see mg/instream.h):
 *   - At open, every input is checked (a missing one is MG_ERR_NOTFOUND naming it) and
 *     directories are expanded, recursively, to their corpus files sorted by name
 *     (strcmp; symbolic links to files are followed, links to directories are not); the
 *     other files are kept in the skipped list (mg/instream.h's rule).
 *   - With libarchive each file is read through archive_read_support_filter_all() and the
 *     formats tar, zip, raw (a plain or compressed single stream) and empty: a tar/zip
 *     yields its regular members in archive order, anything else is one stream. Without
 *     libarchive only plain files and stdin are read; a compressed or archive input (by its
 *     magic bytes) is MG_ERR_UNSUPPORTED.
 *   - Each tar/zip member goes through decompression detection too: a second reader
 *     (filter_all, formats raw + empty) is opened over the member's data, pulled block by
 *     block from the outer archive_read_data_block() (no copy), so a .gz/.bz2/.xz/.zst member
 *     is decompressed and a plain one passes through (the "none" filter). There is no
 *     further recursion: an archive inside an archive (a .tar member, or a .tar.gz member
 *     once decompressed) is read as its raw bytes.
 *   - Lines are split on "\n" only. A line that lies inside one block is returned as a
 *     pointer into that block (no copy); a line spanning blocks is assembled in one growing
 *     buffer. No allocation per line.
 *   - Decompression errors are MG_ERR_FORMAT "FILE[:MEMBER]: corrupt or truncated
 *     compressed data after line N (uncompressed byte B): <libarchive's message>", for a
 *     truncated or corrupt archive as for a corrupt compressed member (B counts the
 *     member's decompressed bytes).
 */
#include "mg/grow.h"
#include "mg/instream.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#if MG_HAVE_ARCHIVE
#include <archive.h>
#include <archive_entry.h>
#endif

#define READ_BLOCK ((size_t)1 << 20)
#define DEFAULT_MAX_LINE ((size_t)1 << 30)
#define STDIN_NAME "<stdin>"

struct mg_instream {
    char **files;           /* expanded inputs ("-" = stdin) */
    size_t nfiles, cap_files;
    char **skipped;         /* files in directories that are not corpus files */
    size_t nskipped, cap_skipped;
    size_t next_file;       /* index of the next input to open */
    size_t max_line;
    uint64_t total_hint;
    /* the open input */
    int open;               /* an input is open */
    int in_member;          /* a member (or the single stream) is being read */
    int member_eof;
#if MG_HAVE_ARCHIVE
    struct archive *a;      /* the input */
    struct archive *m;      /* the current archive member's decompressor, or NULL */
    int m_empty;            /* that member has no data at all */
    int m_sparse;           /* the member's data had a hole (reported as unsupported) */
    uint64_t m_packed;      /* bytes of the member taken from a so far */
#else
    int fd;
    int first_block;
    uint8_t *rbuf;
    uint64_t fd_read;       /* bytes read from fd */
#endif
    char *file_name;        /* current input as shown in messages */
    char *where;            /* "file" or "file:member" */
    uint64_t line_no;       /* lines returned from the current member */
    uint64_t member_read;   /* uncompressed bytes delivered by the current member */
    /* the current block and the line being assembled */
    const uint8_t *blk;
    size_t blk_len, blk_pos;
    uint8_t *carry;
    size_t carry_len, carry_cap;
    int carry_returned;     /* carry was handed out: empty it on the next call */
    uint64_t bytes;         /* uncompressed bytes of all lines returned */
    uint64_t done_compressed; /* on-disk bytes of the inputs already closed */
};

/* ---- inputs and directories --------------------------------------------------------- */

static char *concat3(const char *a, const char *sep, const char *b)
{
    size_t la = strlen(a), ls = strlen(sep), lb = strlen(b);
    char *d = mg_malloc(la + ls + lb + 1);
    if (!d) return NULL;
    memcpy(d, a, la);
    memcpy(d + la, sep, ls);
    memcpy(d + la + ls, b, lb + 1);
    return d;
}

/* Appends a copy of path to the list *v of *n entries (capacity *cap). */
static mg_status push_path(char ***v, size_t *n, size_t *cap, const char *path)
{
    if (*n == *cap) {
        size_t c = *cap ? 2 * *cap : 16;
        char **f = mg_realloc(*v, c * sizeof *f);
        if (!f) return MG_ERR_NOMEM;
        *v = f;
        *cap = c;
    }
    (*v)[*n] = concat3(path, "", "");
    if (!(*v)[*n]) return MG_ERR_NOMEM;
    (*n)++;
    return MG_OK;
}

static mg_status add_file(mg_instream *s, const char *path, uint64_t size)
{
    MG_FORWARD(push_path(&s->files, &s->nfiles, &s->cap_files, path));
    s->total_hint += size;
    return MG_OK;
}

static int ends_with(const char *s, size_t n, const char *tail)
{
    size_t k = strlen(tail);
    return n >= k && memcmp(s + n - k, tail, k) == 0;
}

static const char *base_name(const char *path)
{
    const char *b = strrchr(path, '/');
    return b ? b + 1 : path;
}

/* MG_INSTREAM_CORPUS_RULE: NAME.jsonl / NAME.json, each maybe compressed, or an archive. */
static int corpus_name(const char *name)
{
    static const char *const packed[] = {".gz", ".bz2", ".xz", ".zst"};
    static const char *const archives[] = {".tar", ".tgz", ".zip"};
    size_t n = strlen(name);
    if (name[0] == '.') return 0;
    for (size_t i = 0; i < sizeof packed / sizeof *packed; i++)
        if (ends_with(name, n, packed[i])) {
            n -= strlen(packed[i]);
            break;
        }
    for (size_t i = 0; i < sizeof archives / sizeof *archives; i++)
        if (ends_with(name, n, archives[i])) return 1;
    return ends_with(name, n, ".jsonl") || ends_with(name, n, ".json");
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static mg_status add_path(mg_instream *s, const char *path, int top);

static mg_status add_dir(mg_instream *s, const char *dir)
{
    struct dirent **list;
    int n = scandir(dir, &list, NULL, by_name);
    if (n < 0) return mg_error_errno(errno, "%s: cannot read directory", dir);
    mg_status st = MG_OK;
    for (int i = 0; i < n; i++) {
        const char *name = list[i]->d_name;
        if (st == MG_OK && strcmp(name, ".") != 0 && strcmp(name, "..") != 0) {
            char *full = concat3(dir, dir[strlen(dir) - 1] == '/' ? "" : "/", name);
            st = full ? add_path(s, full, 0) : MG_ERR_NOMEM;
            free(full);
        }
        free(list[i]);
    }
    free(list);
    return st;
}

/* top: given by the caller (must exist; may be a link to a directory). */
static mg_status add_path(mg_instream *s, const char *path, int top)
{
    if (top && strcmp(path, "-") == 0) return add_file(s, path, 0);
    struct stat st, lst;
    if (stat(path, &st) != 0) {
        if (!top) return MG_OK; /* a dangling link inside a directory */
        return mg_error_errno(errno, "%s: cannot open", path);
    }
    if (S_ISDIR(st.st_mode)) {
        if (!top && (lstat(path, &lst) != 0 || !S_ISDIR(lst.st_mode))) return MG_OK;
        return add_dir(s, path);
    }
    if (!top && !corpus_name(base_name(path)))
        return push_path(&s->skipped, &s->nskipped, &s->cap_skipped, path);
    if (S_ISREG(st.st_mode)) return add_file(s, path, (uint64_t)st.st_size);
    if (top) return add_file(s, path, 0); /* a fifo or device named explicitly */
    return MG_OK;
}

/* ---- the source: blocks of uncompressed member data ---------------------------------- */

static mg_status set_where(mg_instream *s, const char *member)
{
    free(s->where);
    s->where = member ? concat3(s->file_name, ":", member) : concat3(s->file_name, "", "");
    return s->where ? MG_OK : MG_ERR_NOMEM;
}

#if MG_HAVE_ARCHIVE

static mg_status data_error(const mg_instream *s, const char *why)
{
    return mg_error_set(MG_ERR_FORMAT,
                        "%s: corrupt or truncated compressed data after line %llu "
                        "(uncompressed byte %llu): %s",
                        s->where, (unsigned long long)s->line_no,
                        (unsigned long long)s->member_read, why);
}

static const char *archive_msg(struct archive *a)
{
    const char *m = archive_error_string(a);
    return m ? m : "unknown error";
}

/* Failure while detecting the format or reading an archive header (both decompress). */
static mg_status header_error(const mg_instream *s)
{
    return mg_error_set(MG_ERR_FORMAT, "%s: corrupt or truncated compressed data or archive: %s",
                        s->file_name, archive_msg(s->a));
}

static mg_status src_open(mg_instream *s, const char *path)
{
    s->a = archive_read_new();
    if (!s->a) return mg_error_set(MG_ERR_NOMEM, "%s: cannot create an archive reader", path);
    archive_read_support_filter_all(s->a);
    archive_read_support_format_tar(s->a);
    archive_read_support_format_zip(s->a);
    archive_read_support_format_raw(s->a);
    archive_read_support_format_empty(s->a);
    const char *name = strcmp(path, "-") == 0 ? NULL : path;
    if (archive_read_open_filename(s->a, name, READ_BLOCK) != ARCHIVE_OK) {
        int e = archive_errno(s->a);
        if (e > 0 && e != EILSEQ && e != EINVAL) /* not libarchive's format errors */
            return mg_error_errno(e, "%s: cannot open", s->file_name);
        return header_error(s);
    }
    return MG_OK;
}

/* ---- archive members: a second reader over the member's data ---- */

static void member_close(mg_instream *s)
{
    if (s->m) archive_read_free(s->m);
    s->m = NULL;
}

/* Read callback of the member reader: the next block of the member from the outer archive,
 * passed on without a copy (valid until the next call, as libarchive requires). */
static la_ssize_t member_pull(struct archive *m, void *client, const void **buf)
{
    mg_instream *s = client;
    size_t size;
    la_int64_t offset;
    int r = archive_read_data_block(s->a, buf, &size, &offset);
    if (r == ARCHIVE_EOF) return 0;
    if (r < ARCHIVE_WARN) {
        archive_set_error(m, EILSEQ, "%s", archive_msg(s->a));
        return -1;
    }
    if (offset >= 0 && (uint64_t)offset != s->m_packed) {
        s->m_sparse = 1;
        archive_set_error(m, EILSEQ, "sparse member");
        return -1;
    }
    s->m_packed += size;
    return (la_ssize_t)size;
}

static mg_status member_error(mg_instream *s)
{
    if (s->m_sparse)
        return mg_error_set(MG_ERR_UNSUPPORTED, "%s: sparse archive members are not supported",
                            s->where);
    return data_error(s, archive_msg(s->m));
}

/* Opens the decompressor of the member whose header was just read. */
static mg_status member_open(mg_instream *s)
{
    s->m_empty = s->m_sparse = 0;
    s->m_packed = 0;
    s->line_no = 0; /* for messages from here on */
    s->member_read = 0;
    s->m = archive_read_new();
    if (!s->m) return mg_error_set(MG_ERR_NOMEM, "%s: cannot create an archive reader", s->where);
    archive_read_support_filter_all(s->m);
    archive_read_support_format_raw(s->m);
    archive_read_support_format_empty(s->m);
    if (archive_read_open(s->m, s, NULL, member_pull, NULL) != ARCHIVE_OK)
        return member_error(s);
    struct archive_entry *e;
    int r = archive_read_next_header(s->m, &e);
    if (r == ARCHIVE_EOF) s->m_empty = 1;
    else if (r < ARCHIVE_WARN) return member_error(s);
    return MG_OK;
}

/* 1 if a member is ready, 0 at the end of the input. */
static int src_next_member(mg_instream *s, mg_status *st)
{
    struct archive_entry *e;
    member_close(s);
    for (;;) {
        int r = archive_read_next_header(s->a, &e);
        if (r == ARCHIVE_EOF) return 0;
        if (r < ARCHIVE_WARN) {
            *st = header_error(s);
            return -1;
        }
        if (archive_format(s->a) == ARCHIVE_FORMAT_RAW) {
            *st = set_where(s, NULL);
            return *st == MG_OK ? 1 : -1;
        }
        if (archive_entry_filetype(e) == AE_IFREG) {
            const char *name = archive_entry_pathname(e);
            *st = set_where(s, name ? name : "?");
            if (*st == MG_OK) *st = member_open(s);
            return *st == MG_OK ? 1 : -1;
        }
    }
}

/* Next block of a single stream (no member reader); *len == 0 at its end. */
static mg_status stream_read(mg_instream *s, const uint8_t **blk, size_t *len)
{
    const void *buf;
    size_t size;
    la_int64_t offset;
    int r = archive_read_data_block(s->a, &buf, &size, &offset);
    if (r == ARCHIVE_EOF) {
        *len = 0;
        return MG_OK;
    }
    if (r < ARCHIVE_WARN) return data_error(s, archive_msg(s->a));
    *blk = buf;
    *len = size;
    return MG_OK;
}

/* Next block of the member or stream; *len == 0 at its end. */
static mg_status src_read(mg_instream *s, const uint8_t **blk, size_t *len)
{
    if (!s->m) return stream_read(s, blk, len);
    *len = 0;
    if (s->m_empty) return MG_OK;
    const void *buf;
    size_t size;
    la_int64_t offset;
    int r = archive_read_data_block(s->m, &buf, &size, &offset);
    if (r == ARCHIVE_EOF) return MG_OK;
    if (r < ARCHIVE_WARN) return member_error(s);
    *blk = buf;
    *len = size;
    return MG_OK;
}

static uint64_t src_compressed_pos(const mg_instream *s)
{
    la_int64_t n = s->a ? archive_filter_bytes(s->a, -1) : 0;
    return n > 0 ? (uint64_t)n : 0;
}

static void src_close(mg_instream *s)
{
    member_close(s);
    if (s->a) archive_read_free(s->a);
    s->a = NULL;
}

#else /* !MG_HAVE_ARCHIVE: plain files and stdin only */

static mg_status src_open(mg_instream *s, const char *path)
{
    if (!s->rbuf && !(s->rbuf = mg_malloc(READ_BLOCK))) return MG_ERR_NOMEM;
    s->fd = strcmp(path, "-") == 0 ? 0 : open(path, O_RDONLY | O_CLOEXEC);
    if (s->fd < 0) return mg_error_errno(errno, "%s: cannot open", s->file_name);
    s->first_block = 1;
    s->fd_read = 0;
    return MG_OK;
}

static int src_next_member(mg_instream *s, mg_status *st)
{
    if (!s->first_block) return 0; /* a plain file is a single stream */
    *st = set_where(s, NULL);
    return *st == MG_OK ? 1 : -1;
}

/* gzip, bzip2, xz, zstd, zip or tar ("ustar" at 257) by its first bytes. */
static int looks_packed(const uint8_t *p, size_t n)
{
    static const struct { const char *magic; size_t len; } m[] = {
        {"\x1f\x8b", 2}, {"BZh", 3}, {"\xfd" "7zXZ\0", 6}, {"\x28\xb5\x2f\xfd", 4}, {"PK\3\4", 4}};
    for (size_t i = 0; i < sizeof m / sizeof m[0]; i++)
        if (n >= m[i].len && memcmp(p, m[i].magic, m[i].len) == 0) return 1;
    return n >= 262 && memcmp(p + 257, "ustar", 5) == 0;
}

static mg_status src_read(mg_instream *s, const uint8_t **blk, size_t *len)
{
    ssize_t r;
    do r = read(s->fd, s->rbuf, READ_BLOCK);
    while (r < 0 && errno == EINTR);
    if (r < 0) return mg_error_errno(errno, "%s: read failed", s->where);
    if (s->first_block && looks_packed(s->rbuf, (size_t)r))
        return mg_error_set(MG_ERR_UNSUPPORTED, "%s: compressed or archive input: not built "
                            "with libarchive", s->where);
    s->first_block = 0;
    s->fd_read += (uint64_t)r;
    *blk = s->rbuf;
    *len = (size_t)r;
    return MG_OK;
}

static uint64_t src_compressed_pos(const mg_instream *s) { return s->open ? s->fd_read : 0; }

static void src_close(mg_instream *s)
{
    if (s->fd > 0) close(s->fd);
    s->fd = -1;
}

#endif

/* ---- opening and closing inputs and members ------------------------------------------ */

static void close_input(mg_instream *s)
{
    if (!s->open) return;
    s->done_compressed += src_compressed_pos(s);
    src_close(s);
    s->open = 0;
    s->in_member = 0;
}

static mg_status open_next_input(mg_instream *s)
{
    const char *path = s->files[s->next_file++];
    free(s->file_name);
    s->file_name = concat3(strcmp(path, "-") == 0 ? STDIN_NAME : path, "", "");
    if (!s->file_name) return MG_ERR_NOMEM;
    MG_FORWARD(set_where(s, NULL));
    s->line_no = 0;
    s->member_read = 0;
    mg_status st = src_open(s, path);
    if (st != MG_OK) {
        src_close(s);
        return st;
    }
    s->open = 1;
    return MG_OK;
}

/* Makes a member current; *more == 0 when all inputs are done. */
static mg_status next_member(mg_instream *s, int *more)
{
    for (;;) {
        if (!s->open) {
            if (s->next_file == s->nfiles) return *more = 0, MG_OK;
            MG_FORWARD(open_next_input(s));
        }
        mg_status st = MG_OK;
        int r = src_next_member(s, &st);
        if (r < 0) return st;
        if (r > 0) {
            s->in_member = 1;
            s->member_eof = 0;
            s->line_no = 0;
            s->member_read = 0;
            s->blk_len = s->blk_pos = 0;
            return *more = 1, MG_OK;
        }
        close_input(s);
    }
}

/* ---- lines --------------------------------------------------------------------------- */

static mg_status too_long(const mg_instream *s)
{
    return mg_error_set(MG_ERR_LIMIT, "%s:%llu: line longer than %zu bytes", s->where,
                        (unsigned long long)s->line_no + 1, s->max_line);
}

static mg_status carry_append(mg_instream *s, const uint8_t *p, size_t n)
{
    if (s->carry_len + n > s->max_line) return too_long(s);
    MG_FORWARD(MG_GROW(s->carry, s->carry_cap, s->carry_len + n, 1 << 16));
    memcpy(s->carry + s->carry_len, p, n);
    s->carry_len += n;
    return MG_OK;
}

static void give_line(mg_instream *s, const uint8_t *p, size_t n, size_t consumed,
                      const char **line, size_t *len)
{
    *line = (const char *)p;
    *len = n;
    s->line_no++;
    s->bytes += consumed;
}

/* Tries to finish a line from the current block; 1 if one was returned. */
static int line_from_block(mg_instream *s, const char **line, size_t *len, mg_status *st)
{
    const uint8_t *p = s->blk + s->blk_pos;
    size_t avail = s->blk_len - s->blk_pos;
    const uint8_t *nl = memchr(p, '\n', avail);
    size_t seg = nl ? (size_t)(nl - p) : avail;
    s->blk_pos += nl ? seg + 1 : seg;
    if (nl && s->carry_len == 0) {
        if (seg > s->max_line) return *st = too_long(s), -1;
        give_line(s, p, seg, seg + 1, line, len);
        return 1;
    }
    if ((*st = carry_append(s, p, seg)) != MG_OK) return -1;
    if (!nl) return 0;
    give_line(s, s->carry, s->carry_len, s->carry_len + 1, line, len);
    s->carry_returned = 1;
    return 1;
}

/* At the end of a member: its last line if it had no final newline. */
static int last_line(mg_instream *s, const char **line, size_t *len)
{
    s->in_member = 0;
    if (s->carry_len == 0) return 0;
    give_line(s, s->carry, s->carry_len, s->carry_len, line, len);
    s->carry_returned = 1;
    return 1;
}

mg_status mg_instream_next_line(mg_instream *s, const char **line, size_t *len)
{
    *line = NULL;
    *len = 0;
    if (s->carry_returned) s->carry_len = 0;
    s->carry_returned = 0;
    for (;;) {
        if (!s->in_member) {
            int more;
            MG_FORWARD(next_member(s, &more));
            if (!more) return MG_OK;
        }
        if (s->blk_pos < s->blk_len) {
            mg_status st = MG_OK;
            int r = line_from_block(s, line, len, &st);
            if (r != 0) return r > 0 ? MG_OK : st;
        } else if (s->member_eof) {
            if (last_line(s, line, len)) return MG_OK;
        } else {
            MG_FORWARD(src_read(s, &s->blk, &s->blk_len));
            s->blk_pos = 0;
            s->member_read += s->blk_len;
            s->member_eof = s->blk_len == 0;
        }
    }
}

/* ---- public API ------------------------------------------------------------------------ */

mg_status mg_instream_open(mg_instream **out, const char *const *paths, size_t n, size_t max_line)
{
    *out = NULL;
    mg_instream *s = mg_calloc(1, sizeof *s);
    if (!s) return MG_ERR_NOMEM;
#if !MG_HAVE_ARCHIVE
    s->fd = -1;
#endif
    s->max_line = max_line ? max_line : DEFAULT_MAX_LINE;
    int has_stdin = 0;
    mg_status st = MG_OK;
    for (size_t i = 0; i < n && st == MG_OK; i++) {
        has_stdin |= strcmp(paths[i], "-") == 0;
        st = add_path(s, paths[i], 1);
    }
    if (has_stdin) s->total_hint = 0; /* unknown */
    if (st != MG_OK) {
        mg_instream_free(s);
        return st;
    }
    *out = s;
    return MG_OK;
}

const char *mg_instream_where(const mg_instream *s, uint64_t *line_no)
{
    if (line_no) *line_no = s->line_no;
    return s->where ? s->where : (s->nfiles ? s->files[0] : "");
}

uint64_t mg_instream_bytes(const mg_instream *s) { return s->bytes; }

uint64_t mg_instream_total_hint(const mg_instream *s) { return s->total_hint; }

size_t mg_instream_skipped(const mg_instream *s, const char *const **paths)
{
    *paths = (const char *const *)s->skipped;
    return s->nskipped;
}

uint64_t mg_instream_compressed_pos(const mg_instream *s)
{
    return s->done_compressed + (s->open ? src_compressed_pos(s) : 0);
}

void mg_instream_free(mg_instream *s)
{
    if (!s) return;
    close_input(s);
    for (size_t i = 0; i < s->nfiles; i++) free(s->files[i]);
    free(s->files);
    for (size_t i = 0; i < s->nskipped; i++) free(s->skipped[i]);
    free(s->skipped);
#if !MG_HAVE_ARCHIVE
    free(s->rbuf);
#endif
    free(s->file_name);
    free(s->where);
    free(s->carry);
    free(s);
}

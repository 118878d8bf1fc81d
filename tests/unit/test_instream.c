/* test_instream.c — unit tests for mg/instream.h. Fixtures (gzip, bzip2, xz, zstd, tar,
 * zip) are made in the test's directory with the system tools; a test whose tool is
 * missing fails with the command's exit status. Without libarchive (MG_HAVE_ARCHIVE=0) each
 * test of compressed or archive input checks instead that its inputs are refused with
 * "not built with libarchive". */
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness.h"
#include "mg/instream.h"

/* Runs a shell command inside the test's directory; 0 on success. */
static int sh(mg_test_ctx *t, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int sh(mg_test_ctx *t, const char *fmt, ...)
{
    char cmd[2048];
    int k = snprintf(cmd, sizeof cmd, "cd '%s' && ( ", t->dir);
    va_list ap;
    va_start(ap, fmt);
    k += vsnprintf(cmd + k, sizeof cmd - (size_t)k, fmt, ap);
    va_end(ap);
    snprintf(cmd + k, sizeof cmd - (size_t)k, " ) >/dev/null 2>&1");
    int rc = system(cmd);
    if (rc != 0) mg_test_fail(t, __FILE__, __LINE__, "command failed (%d): %s", rc, cmd);
    return rc;
}

typedef struct {
    char *text;     /* "where:line:content\n" per line */
    size_t len, cap;
    mg_status st;   /* status that ended the reading */
    uint64_t bytes; /* mg_instream_bytes() at the end */
} dump;

static void dump_add(dump *d, const char *p, size_t n)
{
    if (d->len + n + 1 > d->cap) {
        while (d->len + n + 1 > d->cap) d->cap = d->cap ? 2 * d->cap : 4096;
        d->text = realloc(d->text, d->cap);
    }
    memcpy(d->text + d->len, p, n);
    d->len += n;
    d->text[d->len] = 0;
}

/* Reads all inputs; with annotate, each line is prefixed by "where:line:". */
static dump read_all(const char *const *paths, size_t n, size_t max_line, int annotate)
{
    dump d = {NULL, 0, 0, MG_OK, 0};
    dump_add(&d, "", 0);
    mg_instream *s;
    d.st = mg_instream_open(&s, paths, n, max_line);
    if (d.st != MG_OK) return d;
    for (;;) {
        const char *line;
        size_t len;
        d.st = mg_instream_next_line(s, &line, &len);
        if (d.st != MG_OK || !line) break;
        if (annotate) {
            char head[600];
            uint64_t no;
            const char *w = mg_instream_where(s, &no);
            int k = snprintf(head, sizeof head, "%s:%llu:", w, (unsigned long long)no);
            dump_add(&d, head, (size_t)k);
        }
        dump_add(&d, line, len);
        dump_add(&d, "\n", 1);
    }
    d.bytes = mg_instream_bytes(s);
    mg_instream_free(s);
    return d;
}

static dump read_one(const char *path, int annotate)
{
    return read_all(&path, 1, 0, annotate);
}

/* Without libarchive (the tests below then check only this): path is refused, no line out. */
static void check_refused(mg_test_ctx *t, const char *path)
{
    dump d = read_one(path, 0);
    MG_CHECK_EQ_INT(t, d.st, MG_ERR_UNSUPPORTED);
    if (!strstr(mg_last_error(), "not built with libarchive"))
        mg_test_fail(t, __FILE__, __LINE__, "%s: \"%s\"", path, mg_last_error());
    MG_CHECK_EQ_INT(t, d.len, 0);
    free(d.text);
}

/* Deterministic JSONL text of about `size` bytes, lines of varying length. */
static char *make_jsonl(size_t size, size_t *len)
{
    char *b = malloc(size + 4096);
    size_t k = 0;
    for (unsigned i = 0; k < size; i++) {
        k += (size_t)sprintf(b + k, "{\"text\": \"doc %u ", i);
        for (unsigned j = (i * 7919u) % 3000; j > 0; j--) b[k++] = (char)('a' + (i + j) % 26);
        k += (size_t)sprintf(b + k, "\", \"id\": %u}\n", i);
    }
    b[k] = 0;
    *len = k;
    return b;
}

MG_TEST(instream_plain_lines_positions_and_counters)
{
    const char *p = mg_test_write_file(t, "a.jsonl", "a\nbb\n\nccc", 9);
    dump d = read_one(p, 1);
    MG_CHECK_OK(t, d.st);
    char want[2048];
    snprintf(want, sizeof want, "%s:1:a\n%s:2:bb\n%s:3:\n%s:4:ccc\n", p, p, p, p);
    MG_CHECK_EQ_STR(t, d.text, want);
    MG_CHECK_EQ_INT(t, d.bytes, 9);
    free(d.text);

    mg_instream *s;
    MG_CHECK_OK(t, mg_instream_open(&s, &p, 1, 0));
    MG_CHECK_EQ_INT(t, mg_instream_total_hint(s), 9);
    const char *line;
    size_t len;
    MG_CHECK_OK(t, mg_instream_next_line(s, &line, &len));
    MG_CHECK(t, line && len == 1 && line[0] == 'a');
    MG_CHECK_EQ_INT(t, mg_instream_bytes(s), 2);
    while (line) MG_CHECK_OK(t, mg_instream_next_line(s, &line, &len));
    MG_CHECK_EQ_INT(t, mg_instream_compressed_pos(s), 9);
    MG_CHECK_OK(t, mg_instream_next_line(s, &line, &len)); /* stays at the end */
    MG_CHECK(t, line == NULL);
    mg_instream_free(s);
    mg_instream_free(NULL);
}

MG_TEST(instream_crlf_kept_empty_files)
{
    dump d = read_one(mg_test_write_file(t, "crlf", "x\r\ny\r\n\r", 7), 0);
    MG_CHECK_OK(t, d.st);
    MG_CHECK_EQ_STR(t, d.text, "x\r\ny\r\n\r\n");
    free(d.text);
    d = read_one(mg_test_write_file(t, "empty", "", 0), 0);
    MG_CHECK_OK(t, d.st);
    MG_CHECK_EQ_STR(t, d.text, "");
    free(d.text);
    d = read_one(mg_test_write_file(t, "nl", "\n", 1), 0);
    MG_CHECK_OK(t, d.st);
    MG_CHECK_EQ_STR(t, d.text, "\n"); /* one empty line */
    free(d.text);
}

MG_TEST(instream_lines_across_blocks)
{
    size_t n = (5u << 20) + 123;
    char *big = malloc(n);
    for (size_t i = 0; i < n; i++) big[i] = (char)('a' + i % 23);
    /* one 3 MiB line, then short lines straddling the 1 MiB block boundaries */
    for (size_t i = 3u << 20; i < n; i += 1 + (i % 977)) big[i] = '\n';
    const char *p = mg_test_write_file(t, "big.txt", big, n);
    dump d = read_one(p, 0);
    MG_CHECK_OK(t, d.st);
    /* the dump is the input with a final newline added (it has none: n-1 is not '\n') */
    MG_CHECK(t, big[n - 1] != '\n' && d.len == n + 1 && memcmp(d.text, big, n) == 0);
    MG_CHECK_EQ_INT(t, d.bytes, n);
    free(d.text);
    free(big);
}

MG_TEST(instream_max_line)
{
    const char *p = mg_test_write_file(t, "l.jsonl", "0123456789\n0123456789X\n", 23);
    dump d = read_all(&p, 1, 10, 0);
    char want[600];
    snprintf(want, sizeof want, "%s:2: line longer than 10 bytes", p);
    MG_CHECK_EQ_INT(t, d.st, MG_ERR_LIMIT);
    MG_CHECK_EQ_STR(t, mg_last_error(), want);
    MG_CHECK_EQ_STR(t, d.text, "0123456789\n");
    free(d.text);
    p = mg_test_write_file(t, "m.jsonl", "0123456789X", 11); /* no final newline */
    d = read_all(&p, 1, 10, 0);
    MG_CHECK_EQ_INT(t, d.st, MG_ERR_LIMIT);
    free(d.text);
}

MG_TEST(instream_missing_input)
{
    const char *paths[] = {mg_test_write_file(t, "ok", "x\n", 2), mg_test_path(t, "missing.jsonl")};
    mg_instream *s = (mg_instream *)1;
    MG_CHECK_ERR(t, mg_instream_open(&s, paths, 2, 0), MG_ERR_NOTFOUND, paths[1]);
    MG_CHECK(t, s == NULL);
}

MG_TEST(instream_directory_sorted_recursive)
{
    const char *root = mg_test_path(t, "corpus");
    mkdir(root, 0755);
    mkdir(mg_test_path(t, "corpus/sub"), 0755);
    mkdir(mg_test_path(t, "corpus/sub/empty"), 0755);
    mg_test_write_file(t, "corpus/b.jsonl", "b1\nb2\n", 6);
    mg_test_write_file(t, "corpus/a.jsonl", "a1\n", 3);
    mg_test_write_file(t, "corpus/sub/c.jsonl", "c1", 2);
    mg_test_write_file(t, "corpus/B.jsonl", "B1\n", 3);
    dump d = read_one(root, 1);
    MG_CHECK_OK(t, d.st);
    char want[4096];
    snprintf(want, sizeof want, "%s/B.jsonl:1:B1\n%s/a.jsonl:1:a1\n%s/b.jsonl:1:b1\n"
             "%s/b.jsonl:2:b2\n%s/sub/c.jsonl:1:c1\n", root, root, root, root, root);
    MG_CHECK_EQ_STR(t, d.text, want);
    free(d.text);
    mg_instream *s;
    MG_CHECK_OK(t, mg_instream_open(&s, &root, 1, 0));
    MG_CHECK_EQ_INT(t, mg_instream_total_hint(s), 14);
    mg_instream_free(s);
}

/* A directory's other files (an index cache, the .bin/.idx, hidden files) are skipped and
 * listed; the same files named as inputs are read. */
MG_TEST(instream_directory_skips_other_files)
{
    const char *root = mg_test_path(t, "d");
    mkdir(root, 0755);
    mkdir(mg_test_path(t, "d/cache"), 0755);
    mg_test_write_file(t, "d/a.jsonl", "a1\n", 3);
    mg_test_write_file(t, "d/b.json.zst.txt", "x\n", 2);
    mg_test_write_file(t, "d/.c.jsonl", "x\n", 2);
    mg_test_write_file(t, "d/cache/x-description.txt", "{\n", 2);
    mg_test_write_file(t, "d/p_text_document.idx", "x", 1);
    dump d = read_one(root, 1);
    MG_CHECK_OK(t, d.st);
    char want[1024];
    snprintf(want, sizeof want, "%s/a.jsonl:1:a1\n", root);
    MG_CHECK_EQ_STR(t, d.text, want);
    free(d.text);
    mg_instream *s;
    const char *const *skipped;
    MG_CHECK_OK(t, mg_instream_open(&s, &root, 1, 0));
    MG_CHECK_EQ_INT(t, mg_instream_skipped(s, &skipped), 4);
    snprintf(want, sizeof want, "%s/cache/x-description.txt", root);
    MG_CHECK_EQ_STR(t, skipped[2], want);
    mg_instream_free(s);
    const char *named = mg_test_path(t, "d/b.json.zst.txt");
    d = read_one(named, 1);
    MG_CHECK_OK(t, d.st);
    MG_CHECK(t, d.text && strstr(d.text, ":1:x\n") != NULL);
    free(d.text);
}

MG_TEST(instream_several_inputs_in_order)
{
    const char *paths[] = {mg_test_write_file(t, "1", "one\n", 4),
                           mg_test_write_file(t, "2", "", 0),
                           mg_test_write_file(t, "3", "three", 5)};
    dump d = read_all(paths, 3, 0, 0);
    MG_CHECK_OK(t, d.st);
    MG_CHECK_EQ_STR(t, d.text, "one\nthree\n");
    MG_CHECK_EQ_INT(t, d.bytes, 9);
    free(d.text);
}

/* Feeds file path as stdin to an instream on "-". */
static dump read_stdin_from(const char *path)
{
    int saved = dup(0), fd = open(path, O_RDONLY);
    dup2(fd, 0);
    close(fd);
    const char *dash = "-";
    mg_instream *s;
    if (mg_instream_open(&s, &dash, 1, 0) == MG_OK) {
        uint64_t hint = mg_instream_total_hint(s);
        mg_instream_free(s);
        if (hint != 0) { /* stdin has no known size */
            dump bad = {NULL, 0, 0, MG_ERR_ARG, 0};
            return bad;
        }
    }
    dump d = read_all(&dash, 1, 0, 1);
    dup2(saved, 0);
    close(saved);
    return d;
}

MG_TEST(instream_stdin)
{
    dump d = read_stdin_from(mg_test_write_file(t, "in", "s1\ns2", 5));
    MG_CHECK_OK(t, d.st);
    MG_CHECK_EQ_STR(t, d.text, "<stdin>:1:s1\n<stdin>:2:s2\n");
    free(d.text);
}

MG_TEST(instream_compressed_single_streams)
{
    size_t n;
    char *src = make_jsonl(3u << 20, &n);
    mg_test_write_file(t, "d.jsonl", src, n);
    static const char *const cmds[][2] = {
        {"gzip -k d.jsonl", "d.jsonl.gz"}, {"bzip2 -k d.jsonl", "d.jsonl.bz2"},
        {"xz -k d.jsonl", "d.jsonl.xz"},   {"zstd -q d.jsonl", "d.jsonl.zst"},
        {"gzip -c d.jsonl > renamed.bin", "renamed.bin"}}; /* detected by content */
    for (size_t i = 0; i < sizeof cmds / sizeof cmds[0]; i++) {
        if (sh(t, "%s", cmds[i][0])) continue;
        const char *p = mg_test_path(t, cmds[i][1]);
        if (!MG_HAVE_ARCHIVE) {
            check_refused(t, p);
            continue;
        }
        dump d = read_one(p, 0);
        MG_CHECK_OK(t, d.st);
        if (d.len != n || memcmp(d.text, src, n) != 0)
            mg_test_fail(t, __FILE__, __LINE__, "%s: content differs", cmds[i][1]);
        mg_instream *s;
        MG_CHECK_OK(t, mg_instream_open(&s, &p, 1, 0));
        struct stat st;
        stat(p, &st);
        MG_CHECK_EQ_INT(t, mg_instream_total_hint(s), st.st_size);
        const char *line;
        size_t len;
        uint64_t no;
        do MG_CHECK_OK(t, mg_instream_next_line(s, &line, &len));
        while (line);
        MG_CHECK_EQ_STR(t, mg_instream_where(s, &no), p);
        MG_CHECK_EQ_INT(t, mg_instream_compressed_pos(s), st.st_size);
        MG_CHECK_EQ_INT(t, mg_instream_bytes(s), n);
        mg_instream_free(s);
        free(d.text);
    }
    free(src);
}

MG_TEST(instream_gzip_of_empty_and_concatenated_members)
{
    sh(t, "printf '' | gzip > e.gz && printf 'a\\nb' | gzip > ab.gz && "
          "printf 'c\\n' | gzip >> ab.gz");
    if (!MG_HAVE_ARCHIVE) {
        check_refused(t, mg_test_path(t, "e.gz"));
        check_refused(t, mg_test_path(t, "ab.gz"));
        return;
    }
    dump d = read_one(mg_test_path(t, "e.gz"), 0);
    MG_CHECK_OK(t, d.st);
    MG_CHECK_EQ_STR(t, d.text, "");
    free(d.text);
    d = read_one(mg_test_path(t, "ab.gz"), 0);
    MG_CHECK_OK(t, d.st);
    MG_CHECK_EQ_STR(t, d.text, "a\nbc\n"); /* gunzip semantics: members concatenate */
    free(d.text);
}

static void make_members(mg_test_ctx *t)
{
    mkdir(mg_test_path(t, "m"), 0755);
    mkdir(mg_test_path(t, "m/dir"), 0755);
    mg_test_write_file(t, "m/z.jsonl", "z1\nz2\n", 6);
    mg_test_write_file(t, "m/dir/a.jsonl", "a1\r\na2", 6);
    mg_test_write_file(t, "m/empty.jsonl", "", 0);
}

MG_TEST(instream_tar_members_in_archive_order)
{
    make_members(t);
    sh(t, "cd m && tar -cf ../x.tar z.jsonl dir empty.jsonl && cd .. && zstd -q x.tar && "
          "gzip -k x.tar");
    static const char *const names[] = {"x.tar", "x.tar.zst", "x.tar.gz"};
    for (int i = 0; i < 3; i++) {
        const char *p = mg_test_path(t, names[i]);
        if (!MG_HAVE_ARCHIVE) {
            check_refused(t, p);
            continue;
        }
        dump d = read_one(p, 1);
        MG_CHECK_OK(t, d.st);
        char want[4096];
        snprintf(want, sizeof want, "%s:z.jsonl:1:z1\n%s:z.jsonl:2:z2\n%s:dir/a.jsonl:1:a1\r\n"
                 "%s:dir/a.jsonl:2:a2\n", p, p, p, p);
        MG_CHECK_EQ_STR(t, d.text, want);
        free(d.text);
    }
}

MG_TEST(instream_zip_members)
{
    make_members(t);
    sh(t, "cd m && zip -q -r ../x.zip z.jsonl dir empty.jsonl");
    const char *p = mg_test_path(t, "x.zip");
    if (!MG_HAVE_ARCHIVE) {
        check_refused(t, p);
        return;
    }
    dump d = read_one(p, 1);
    MG_CHECK_OK(t, d.st);
    char want[4096];
    snprintf(want, sizeof want, "%s:z.jsonl:1:z1\n%s:z.jsonl:2:z2\n%s:dir/a.jsonl:1:a1\r\n"
             "%s:dir/a.jsonl:2:a2\n", p, p, p, p);
    MG_CHECK_EQ_STR(t, d.text, want);
    free(d.text);
}

MG_TEST(instream_directory_of_mixed_inputs)
{
    make_members(t);
    mkdir(mg_test_path(t, "in"), 0755);
    sh(t, "cd m && tar -cf ../in/1.tar z.jsonl && printf 'g\\n' | gzip > ../in/2.jsonl.gz && "
          "printf 'p' > ../in/3.jsonl");
    const char *p = mg_test_path(t, "in");
    if (!MG_HAVE_ARCHIVE) { /* in/1.tar comes first */
        check_refused(t, p);
        return;
    }
    dump d = read_one(p, 1);
    MG_CHECK_OK(t, d.st);
    char want[4096];
    snprintf(want, sizeof want, "%s/1.tar:z.jsonl:1:z1\n%s/1.tar:z.jsonl:2:z2\n"
             "%s/2.jsonl.gz:1:g\n%s/3.jsonl:1:p\n", p, p, p, p);
    MG_CHECK_EQ_STR(t, d.text, want);
    free(d.text);
}

/* Cuts file to keep bytes, reads it, checks the error and that earlier lines came out. */
static void check_truncated(mg_test_ctx *t, const char *name, off_t keep, const char *src)
{
    const char *p = mg_test_path(t, name);
    if (truncate(p, keep) != 0) mg_test_fail(t, __FILE__, __LINE__, "truncate %s", p);
    dump d = read_one(p, 0);
    char want[600];
    snprintf(want, sizeof want, "%s: corrupt or truncated compressed data after line ", p);
    MG_CHECK_EQ_INT(t, d.st, MG_ERR_FORMAT);
    if (!strstr(mg_last_error(), want) || !strstr(mg_last_error(), "(uncompressed byte "))
        mg_test_fail(t, __FILE__, __LINE__, "%s: message \"%s\"", name, mg_last_error());
    MG_CHECK(t, d.len > 0 && memcmp(d.text, src, d.len) == 0); /* a correct prefix */
    free(d.text);
}

MG_TEST(instream_truncated_compressed_data)
{
    size_t n;
    char *src = make_jsonl(4u << 20, &n);
    mg_test_write_file(t, "d.jsonl", src, n);
    sh(t, "gzip -k d.jsonl && zstd -q d.jsonl && xz -k d.jsonl && bzip2 -k d.jsonl");
    static const char *const names[] = {"d.jsonl.gz", "d.jsonl.zst", "d.jsonl.xz", "d.jsonl.bz2"};
    for (int i = 0; i < 4; i++) {
        struct stat st;
        if (!MG_HAVE_ARCHIVE)
            check_refused(t, mg_test_path(t, names[i]));
        else if (stat(mg_test_path(t, names[i]), &st) == 0)
            check_truncated(t, names[i], st.st_size * 2 / 3, src);
    }
    if (!MG_HAVE_ARCHIVE) {
        free(src);
        return;
    }
    /* a tar.gz cut inside its second member names the member */
    make_members(t);
    sh(t, "cd m && head -c 300000 ../d.jsonl > big.jsonl && tar -czf ../t.tgz z.jsonl big.jsonl");
    struct stat st;
    stat(mg_test_path(t, "t.tgz"), &st);
    truncate(mg_test_path(t, "t.tgz"), st.st_size / 2);
    dump d = read_one(mg_test_path(t, "t.tgz"), 0);
    MG_CHECK_EQ_INT(t, d.st, MG_ERR_FORMAT);
    MG_CHECK(t, strstr(mg_last_error(), "t.tgz:big.jsonl: corrupt or truncated") != NULL);
    free(d.text);
    free(src);
}

/* Flips bytes in the middle of a compressed file. Not for gzip: libarchive does not check
 * the gzip CRC, so damage that still inflates goes unnoticed there (zstd, xz and bzip2
 * streams carry checks that libzstd/liblzma/libbz2 verify). */
MG_TEST(instream_corrupt_compressed_data)
{
    size_t n;
    char *src = make_jsonl(1u << 20, &n);
    mg_test_write_file(t, "c.jsonl", src, n);
    sh(t, "zstd -q c.jsonl && xz -k c.jsonl && bzip2 -k c.jsonl");
    static const char *const names[] = {"c.jsonl.zst", "c.jsonl.xz", "c.jsonl.bz2"};
    for (int k = 0; k < 3; k++) {
        char *z = mg_test_read_file(mg_test_path(t, names[k]), &n);
        if (!z) continue;
        for (size_t i = n / 2; i < n / 2 + 64; i++) z[i] ^= 0x5A;
        const char *p = mg_test_write_file(t, names[k], z, n);
        free(z);
        if (!MG_HAVE_ARCHIVE) {
            check_refused(t, p);
            continue;
        }
        dump d = read_one(p, 0);
        MG_CHECK_EQ_INT(t, d.st, MG_ERR_FORMAT);
        if (!strstr(mg_last_error(), "corrupt or truncated compressed data"))
            mg_test_fail(t, __FILE__, __LINE__, "%s: \"%s\"", names[k], mg_last_error());
        free(d.text);
    }
    free(src);
}

MG_TEST(instream_stdin_compressed)
{
    sh(t, "printf 'q1\\nq2\\n' | zstd -q > in.zst");
    dump d = read_stdin_from(mg_test_path(t, "in.zst"));
    if (MG_HAVE_ARCHIVE) {
        MG_CHECK_OK(t, d.st);
        MG_CHECK_EQ_STR(t, d.text, "<stdin>:1:q1\n<stdin>:2:q2\n");
    } else {
        MG_CHECK_ERR(t, d.st, MG_ERR_UNSUPPORTED, "<stdin>: compressed or archive input: not "
                     "built with libarchive");
        MG_CHECK_EQ_INT(t, d.len, 0);
    }
    free(d.text);
}

MG_TEST(instream_truncated_gzip_header)
{
    /* a complete 10-byte gzip header and the start of a deflate stream */
    const char *p = mg_test_write_file(t, "x.gz", "\x1f\x8b\x08\x00\0\0\0\0\0\x03\xab\x56", 12);
    dump d = read_one(p, 0);
    if (MG_HAVE_ARCHIVE) {
        MG_CHECK_EQ_INT(t, d.st, MG_ERR_FORMAT);
        MG_CHECK(t, strstr(mg_last_error(), p) != NULL);
    } else {
        MG_CHECK_EQ_INT(t, d.st, MG_ERR_UNSUPPORTED);
        MG_CHECK(t, strstr(mg_last_error(), "not built with libarchive") != NULL);
    }
    free(d.text);
}

/* ---- compressed members inside archives ------------------------------------------------ */

/* m2/: a.jsonl.gz, b.jsonl.zst, c.jsonl (plain), d.jsonl.bz2, e.jsonl.xz, empty.gz, empty
 * (plain, 0 bytes), inner.tar (an archive member: read as its raw bytes). */
static void make_compressed_members(mg_test_ctx *t)
{
    mkdir(mg_test_path(t, "m2"), 0755);
    sh(t, "cd m2 && printf 'g1\\ng2\\n' | gzip > a.jsonl.gz && printf 'z1\\nz2' | zstd -q > "
          "b.jsonl.zst && printf 'p1\\r\\np2\\n' > c.jsonl && printf 'b1\\n' | bzip2 > "
          "d.jsonl.bz2 && printf 'x1\\n' | xz > e.jsonl.xz && printf '' | gzip > empty.gz && "
          ": > empty && printf 'in\\n' > in.txt && tar -cf inner.tar in.txt && rm in.txt");
}

MG_TEST(instream_tar_of_compressed_members)
{
    make_compressed_members(t);
    sh(t, "cd m2 && tar -cf ../c.tar a.jsonl.gz b.jsonl.zst c.jsonl d.jsonl.bz2 empty.gz "
          "e.jsonl.xz empty && gzip -c ../c.tar > ../c.tar.gz");
    if (!MG_HAVE_ARCHIVE) {
        check_refused(t, mg_test_path(t, "c.tar"));
        check_refused(t, mg_test_path(t, "c.tar.gz"));
        return;
    }
    static const char *const names[] = {"c.tar", "c.tar.gz"};
    for (int i = 0; i < 2; i++) {
        const char *p = mg_test_path(t, names[i]);
        dump d = read_one(p, 1);
        MG_CHECK_OK(t, d.st);
        char want[4096];
        snprintf(want, sizeof want,
                 "%s:a.jsonl.gz:1:g1\n%s:a.jsonl.gz:2:g2\n%s:b.jsonl.zst:1:z1\n"
                 "%s:b.jsonl.zst:2:z2\n%s:c.jsonl:1:p1\r\n%s:c.jsonl:2:p2\n"
                 "%s:d.jsonl.bz2:1:b1\n%s:e.jsonl.xz:1:x1\n", p, p, p, p, p, p, p, p);
        MG_CHECK_EQ_STR(t, d.text, want);
        MG_CHECK_EQ_INT(t, d.bytes, 6 + 5 + 7 + 3 + 3); /* decompressed bytes */
        free(d.text);
    }
    /* the on-disk position counts the archive itself (libarchive stops at the end-of-archive
     * marker, so the tar's final padding may stay unread) */
    const char *p = mg_test_path(t, "c.tar");
    mg_instream *s;
    MG_CHECK_OK(t, mg_instream_open(&s, &p, 1, 0));
    const char *line;
    size_t len;
    do MG_CHECK_OK(t, mg_instream_next_line(s, &line, &len));
    while (line);
    MG_CHECK(t, mg_instream_compressed_pos(s) > 7 * 512);
    MG_CHECK(t, mg_instream_compressed_pos(s) <= mg_instream_total_hint(s));
    mg_instream_free(s);
}

MG_TEST(instream_archive_member_is_not_recursed)
{
    make_compressed_members(t);
    sh(t, "cd m2 && gzip -k inner.tar && tar -cf ../n.tar inner.tar inner.tar.gz");
    if (!MG_HAVE_ARCHIVE) {
        check_refused(t, mg_test_path(t, "n.tar"));
        return;
    }
    size_t n;
    char *inner = mg_test_read_file(mg_test_path(t, "m2/inner.tar"), &n);
    dump d = read_one(mg_test_path(t, "n.tar"), 0);
    MG_CHECK_OK(t, d.st);
    /* both members yield the inner tar's raw bytes (the .gz one once decompressed): a
     * 512-byte header, the data "in\n" (so one line break), zero padding */
    MG_CHECK(t, inner && n >= 1024 && d.len == 2 * (n + 1));
    MG_CHECK(t, inner && d.len == 2 * (n + 1) && memcmp(d.text, inner, 515) == 0 &&
                memcmp(d.text + n + 1, inner, 515) == 0);
    free(inner);
    free(d.text);
}

MG_TEST(instream_zip_of_gzip_members)
{
    make_compressed_members(t);
    size_t n;
    char *src = make_jsonl(2u << 20, &n);
    mg_test_write_file(t, "m2/big.jsonl", src, n);
    /* stored (-0) and deflated .gz members; a plain member between them */
    sh(t, "cd m2 && gzip big.jsonl && zip -q -0 ../g.zip a.jsonl.gz && zip -q ../g.zip c.jsonl "
          "big.jsonl.gz empty.gz");
    const char *p = mg_test_path(t, "g.zip");
    if (!MG_HAVE_ARCHIVE) {
        check_refused(t, p);
        free(src);
        return;
    }
    dump d = read_one(p, 0);
    MG_CHECK_OK(t, d.st);
    MG_CHECK(t, d.len == 13 + n && memcmp(d.text, "g1\ng2\np1\r\np2\n", 13) == 0 &&
                memcmp(d.text + 13, src, n) == 0);
    free(d.text);
    d = read_one(p, 1);
    char want[600];
    snprintf(want, sizeof want, "%s:big.jsonl.gz:1:{\"text\": \"doc 0 ", p);
    MG_CHECK(t, strstr(d.text, want) != NULL);
    free(d.text);
    free(src);
}

/* Reads path expecting a FORMAT error that names member after a correct prefix of src. */
static void check_member_error(mg_test_ctx *t, const char *path, const char *member,
                               const char *src, size_t src_len)
{
    dump d = read_one(path, 0);
    char want[600];
    snprintf(want, sizeof want, "%s:%s: corrupt or truncated compressed data after line ", path,
             member);
    MG_CHECK_EQ_INT(t, d.st, MG_ERR_FORMAT);
    const char *m = mg_last_error();
    if (strncmp(m, want, strlen(want)) != 0 || !strstr(m, "(uncompressed byte "))
        mg_test_fail(t, __FILE__, __LINE__, "%s: message \"%s\"", path, m);
    /* the lines before the error: the plain member, then a prefix of src */
    MG_CHECK(t, d.len >= 6 && memcmp(d.text, "z1\nz2\n", 6) == 0);
    MG_CHECK(t, d.len - 6 < src_len && memcmp(d.text + 6, src, d.len - 6) == 0);
    /* "after line N (uncompressed byte B)": N lines of src were returned, B >= their bytes */
    unsigned long long line_no = 0, byte = 0;
    const char *at = m + strlen(want);
    MG_CHECK(t, sscanf(at, "%llu (uncompressed byte %llu)", &line_no, &byte) == 2);
    size_t lines = 0;
    for (size_t i = 6; i < d.len; i++) lines += d.text[i] == '\n';
    MG_CHECK_EQ_INT(t, line_no, lines);
    MG_CHECK(t, byte >= d.len - 6 && byte <= src_len);
    free(d.text);
}

MG_TEST(instream_truncated_compressed_member_in_tar)
{
    size_t n;
    char *src = make_jsonl(3u << 20, &n);
    mkdir(mg_test_path(t, "t"), 0755);
    mg_test_write_file(t, "t/big.jsonl", src, n);
    /* a .gz/.zst member cut to half (the tar itself is intact), after a plain member */
    sh(t, "cd t && printf 'z1\\nz2\\n' > a.jsonl && gzip -k big.jsonl && zstd -q big.jsonl && "
          "for z in gz zst; do head -c $(( $(stat -c %%s big.jsonl.$z) / 2 )) big.jsonl.$z > "
          "cut.jsonl.$z; tar -cf ../cut-$z.tar a.jsonl cut.jsonl.$z; done");
    if (!MG_HAVE_ARCHIVE) {
        check_refused(t, mg_test_path(t, "cut-gz.tar"));
        check_refused(t, mg_test_path(t, "cut-zst.tar"));
        free(src);
        return;
    }
    check_member_error(t, mg_test_path(t, "cut-gz.tar"), "cut.jsonl.gz", src, n);
    check_member_error(t, mg_test_path(t, "cut-zst.tar"), "cut.jsonl.zst", src, n);
    /* the tar itself cut inside a .zst member */
    sh(t, "cd t && tar -cf ../whole.tar a.jsonl big.jsonl.zst && head -c $(( $(stat -c %%s "
          "../whole.tar) / 2 )) ../whole.tar > ../short.tar");
    check_member_error(t, mg_test_path(t, "short.tar"), "big.jsonl.zst", src, n);
    free(src);
}

MG_TEST(instream_truncated_member_header_in_tar)
{
    mkdir(mg_test_path(t, "t"), 0755);
    mg_test_write_file(t, "t/a.jsonl", "z1\nz2\nz3\n", 9);
    /* a gzip header and the start of a deflate stream, after a member of 3 lines */
    mg_test_write_file(t, "t/x.gz", "\x1f\x8b\x08\x00\0\0\0\0\0\x03\xab\x56", 12);
    sh(t, "cd t && tar -cf ../h.tar a.jsonl x.gz");
    const char *p = mg_test_path(t, "h.tar");
    if (!MG_HAVE_ARCHIVE) {
        check_refused(t, p);
        return;
    }
    dump d = read_one(p, 0);
    char want[600];
    snprintf(want, sizeof want, "%s:x.gz: corrupt or truncated compressed data after line 0 "
             "(uncompressed byte 0): ", p);
    MG_CHECK_EQ_INT(t, d.st, MG_ERR_FORMAT);
    MG_CHECK(t, strncmp(mg_last_error(), want, strlen(want)) == 0);
    MG_CHECK_EQ_STR(t, d.text, "z1\nz2\nz3\n");
    free(d.text);
}

MG_TEST(instream_corrupt_compressed_member_in_tar)
{
    size_t n;
    char *src = make_jsonl(1u << 20, &n);
    mkdir(mg_test_path(t, "t"), 0755);
    mg_test_write_file(t, "t/c.jsonl", src, n);
    sh(t, "cd t && printf 'z1\\nz2\\n' > a.jsonl && zstd -q c.jsonl");
    size_t zn;
    char *z = mg_test_read_file(mg_test_path(t, "t/c.jsonl.zst"), &zn);
    for (size_t i = zn / 2; z && i < zn / 2 + 64; i++) z[i] ^= 0x5A;
    if (z) mg_test_write_file(t, "t/c.jsonl.zst", z, zn);
    sh(t, "cd t && tar -cf ../bad.tar a.jsonl c.jsonl.zst");
    if (MG_HAVE_ARCHIVE)
        check_member_error(t, mg_test_path(t, "bad.tar"), "c.jsonl.zst", src, n);
    else
        check_refused(t, mg_test_path(t, "bad.tar"));
    free(z);
    free(src);
}

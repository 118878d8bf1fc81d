/* test_file.c — unit tests for mg/file.h: maps, atomic output (commit, abort, write
 * failures, full disk, pwritev of pieces), mg_read_file, mg_is_dir. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness.h"
#include "mg/file.h"

/* Number of entries in dir other than "." and "..". */
static int count_entries(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d) return -1;
    int n = 0;
    for (struct dirent *e; (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, "..")) n++;
    closedir(d);
    return n;
}

MG_TEST(file_map_reads_contents)
{
    const char *p = mg_test_write_file(t, "a.bin", "hello\0world", 11);
    mg_map m;
    MG_CHECK_OK(t, mg_map_open(&m, p));
    MG_CHECK_EQ_INT(t, m.size, 11);
    MG_CHECK(t, m.data && memcmp(m.data, "hello\0world", 11) == 0);
    mg_map_close(&m);
    MG_CHECK(t, m.data == NULL && m.size == 0);
    mg_map_close(&m); /* a zeroed map is accepted */
}

MG_TEST(file_map_empty_missing_dir)
{
    mg_map m;
    MG_CHECK_OK(t, mg_map_open(&m, mg_test_write_file(t, "empty", "", 0)));
    MG_CHECK(t, m.data == NULL && m.size == 0);
    mg_map_close(&m);
    const char *missing = mg_test_path(t, "nope.idx");
    MG_CHECK_ERR(t, mg_map_open(&m, missing), MG_ERR_NOTFOUND, missing);
    MG_CHECK(t, m.data == NULL && m.size == 0);
    MG_CHECK_ERR(t, mg_map_open(&m, t->dir), MG_ERR_IO, "Is a directory");
}

MG_TEST(file_out_commit_large_and_small_writes)
{
    const char *path = mg_test_path(t, "out.bin");
    mg_out *o;
    MG_CHECK_OK(t, mg_out_create(&o, path));
    MG_CHECK_EQ_STR(t, mg_out_path(o), path);
    size_t big = (3u << 20) + 17;
    uint8_t *data = malloc(big);
    for (size_t i = 0; i < big; i++) data[i] = (uint8_t)(i * 31 + (i >> 13));
    /* mixed sizes: tiny, buffer-crossing, larger than the buffer */
    size_t cuts[] = {0, 1, 7, 1000, (1u << 20) - 3, (1u << 20) + 5, (3u << 20), big};
    for (size_t i = 0; i + 1 < sizeof cuts / sizeof cuts[0]; i++)
        MG_CHECK_OK(t, mg_out_write(o, data + cuts[i], cuts[i + 1] - cuts[i]));
    MG_CHECK_EQ_INT(t, mg_out_offset(o), big);
    MG_CHECK(t, access(path, F_OK) != 0); /* not visible before commit */
    MG_CHECK_EQ_INT(t, count_entries(t->dir), 1);
    MG_CHECK_OK(t, mg_out_commit(o));
    MG_CHECK_ERR(t, mg_out_write(o, "x", 1), MG_ERR_ARG, "write after commit");
    mg_out_free(o);
    size_t n = 0;
    char *got = mg_test_read_file(path, &n);
    MG_CHECK(t, got && n == big && memcmp(got, data, big) == 0);
    MG_CHECK_EQ_INT(t, count_entries(t->dir), 1); /* no temporary file left */
    free(got);
    free(data);
}

/* Copies [off, off + len) of src into a new file after a buffered prefix; 1 if it matches. */
static int copy_matches(mg_test_ctx *t, const char *src, const uint8_t *data, uint64_t off,
                        uint64_t len)
{
    const char *path = mg_test_path(t, "copy.bin");
    mg_out *o;
    int fd = open(src, O_RDONLY);
    if (fd < 0 || mg_out_create(&o, path) != MG_OK) return 0;
    int ok = mg_out_write(o, "head", 4) == MG_OK &&
             mg_out_copy_from(o, fd, off, len) == MG_OK && mg_out_offset(o) == 4 + len &&
             mg_out_write(o, "tail", 4) == MG_OK && mg_out_commit(o) == MG_OK;
    mg_out_free(o);
    close(fd);
    size_t n = 0;
    char *got = mg_test_read_file(path, &n);
    ok = ok && got && n == len + 8 && memcmp(got, "head", 4) == 0 &&
         memcmp(got + 4, data + off, len) == 0 && memcmp(got + 4 + len, "tail", 4) == 0;
    free(got);
    return ok;
}

MG_TEST(file_out_copy_from_ranges_and_short_source)
{
    size_t big = (3u << 20) + 11;
    uint8_t *data = malloc(big);
    for (size_t i = 0; i < big; i++) data[i] = (uint8_t)(i * 7 + (i >> 11));
    const char *src = mg_test_write_file(t, "src.bin", data, big);
    MG_CHECK(t, copy_matches(t, src, data, 0, big));
    MG_CHECK(t, copy_matches(t, src, data, 12345, (2u << 20) + 3));
    MG_CHECK(t, copy_matches(t, src, data, 5, 0));
    /* a second filesystem where there is one (/dev/shm): copy_file_range or the fallback */
    char shm[64];
    snprintf(shm, sizeof shm, "/dev/shm/mg-test-copy.%ld", (long)getpid());
    FILE *f = fopen(shm, "wb");
    int written = f && fwrite(data, 1, big, f) == big;
    if (f && fclose(f) == 0 && written) MG_CHECK(t, copy_matches(t, shm, data, 77, big - 77));
    unlink(shm);
    mg_out *o;
    int fd = open(src, O_RDONLY);
    MG_CHECK_OK(t, mg_out_create(&o, mg_test_path(t, "short.bin")));
    MG_CHECK_ERR(t, mg_out_copy_from(o, fd, big - 10, 20), MG_ERR_IO, "ends early");
    MG_CHECK_ERR(t, mg_out_write(o, "x", 1), MG_ERR_IO, "earlier write failed");
    mg_out_free(o);
    close(fd);
    free(data);
}

/* n pieces of data[0..len) cut at pseudo-random places (some empty, some large). */
static int cut_pieces(struct iovec *v, int n, const uint8_t *data, size_t len)
{
    size_t at = 0;
    for (int i = 0; i < n; i++) {
        size_t k = i % 7 == 3 ? 0 : i % 97 == 5 ? (64u << 10) + (size_t)i : (size_t)(i * 13 % 301);
        if (k > len - at || i == n - 1) k = len - at;
        v[i] = (struct iovec){(void *)(uintptr_t)(data + at), k};
        at += k;
    }
    return n;
}

MG_TEST(file_out_writev_mixed_with_write_and_copy)
{
    size_t big = (2u << 20) + 29;
    uint8_t *data = malloc(big);
    for (size_t i = 0; i < big; i++) data[i] = (uint8_t)(i * 11 + (i >> 9));
    const char *src = mg_test_write_file(t, "src.bin", data, big);
    const char *path = mg_test_path(t, "v.bin");
    int n = 3000, fd = open(src, O_RDONLY); /* more pieces than IOV_MAX: several calls */
    struct iovec *v = malloc((size_t)n * sizeof(*v));
    mg_out *o;
    MG_CHECK_OK(t, mg_out_create(&o, path));
    MG_CHECK_OK(t, mg_out_write(o, data, 100));                          /* [0, 100) buffered */
    MG_CHECK_OK(t, mg_out_writev(o, v, cut_pieces(v, 5, data + 100, 900))); /* [100, 1000) */
    MG_CHECK_OK(t, mg_out_copy_from(o, fd, 1000, 5000));                /* [1000, 6000) */
    MG_CHECK_OK(t, mg_out_writev(o, v, cut_pieces(v, n, data + 6000, (1u << 20) - 6000)));
    MG_CHECK_OK(t, mg_out_write(o, data + (1u << 20), 777));
    MG_CHECK_OK(t, mg_out_writev(o, v, 0));
    MG_CHECK_OK(t, mg_out_writev(o, v, cut_pieces(v, 2, data + (1u << 20) + 777,
                                                   big - (1u << 20) - 777)));
    MG_CHECK_EQ_INT(t, mg_out_offset(o), big);
    MG_CHECK_OK(t, mg_out_commit(o));
    MG_CHECK_ERR(t, mg_out_writev(o, v, 1), MG_ERR_ARG, "write after commit");
    mg_out_free(o);
    close(fd);
    size_t got_n = 0;
    char *got = mg_test_read_file(path, &got_n);
    MG_CHECK(t, got && got_n == big && memcmp(got, data, big) == 0);
    free(got);
    free(v);
    free(data);
}

/* In a child under RLIMIT_FSIZE = 1 MiB: pieces of 1.5 MiB after 1000 buffered bytes, so
 * pwritev writes part of them and then fails (EFBIG). Returns 0 when the part on disk is
 * the start of the pieces, the failure names the path and is sticky. */
static int child_writev_fails(const char *path, const uint8_t *data, size_t len)
{
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {1 << 20, 1 << 20};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0) return 10;
    mg_out *o;
    if (mg_out_create(&o, path) != MG_OK) return 11;
    struct iovec v[600];
    if (mg_out_write(o, data, 1000) != MG_OK) return 12;
    mg_status st = mg_out_writev(o, v, cut_pieces(v, 600, data + 1000, len - 1000));
    if (st != MG_ERR_IO || strncmp(mg_last_error(), path, strlen(path)) != 0 ||
        !strstr(mg_last_error(), ": write failed: File too large"))
        return 13;
    if (mg_out_write(o, "x", 1) == MG_OK || mg_out_writev(o, v, 1) == MG_OK) return 14;
    char tmp[700];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld.0", path, (long)getpid());
    size_t n = 0;
    char *got = mg_test_read_file(tmp, &n);
    int ok = got && n == (1u << 20) && memcmp(got, data, n) == 0;
    free(got);
    mg_out_free(o);
    return ok ? 0 : 15;
}

MG_TEST(file_out_writev_partial_write_then_failure)
{
    size_t len = (3u << 19) + 5;
    uint8_t *data = malloc(len);
    for (size_t i = 0; i < len; i++) data[i] = (uint8_t)(i * 5 + (i >> 10));
    const char *path = mg_test_path(t, "pv.bin");
    pid_t pid = fork();
    if (pid == 0) _exit(child_writev_fails(path, data, len));
    int ws = 0;
    waitpid(pid, &ws, 0);
    MG_CHECK(t, WIFEXITED(ws));
    MG_CHECK_EQ_INT(t, WEXITSTATUS(ws), 0);
    MG_CHECK_EQ_INT(t, count_entries(t->dir), 0);
    free(data);
}

MG_TEST(file_out_replaces_existing_file)
{
    const char *path = mg_test_write_file(t, "f.txt", "old contents", 12);
    mg_out *o;
    MG_CHECK_OK(t, mg_out_create(&o, path));
    MG_CHECK_OK(t, mg_out_write(o, "new", 3));
    MG_CHECK_OK(t, mg_out_commit(o));
    mg_out_free(o);
    char *got = mg_test_read_file(path, NULL);
    MG_CHECK_EQ_STR(t, got, "new");
    free(got);
}

MG_TEST(file_out_abort_and_free_remove_temporary)
{
    const char *path = mg_test_path(t, "x.idx");
    mg_out *o;
    MG_CHECK_OK(t, mg_out_create(&o, path));
    MG_CHECK_OK(t, mg_out_write(o, "abc", 3));
    mg_out_abort(o);
    MG_CHECK_EQ_INT(t, count_entries(t->dir), 0);
    mg_out_free(o);
    MG_CHECK_OK(t, mg_out_create(&o, path));
    MG_CHECK_OK(t, mg_out_write(o, "abc", 3));
    mg_out_free(o); /* free without commit aborts */
    MG_CHECK_EQ_INT(t, count_entries(t->dir), 0);
    mg_out_free(NULL);
}

MG_TEST(file_out_two_outputs_same_path_get_distinct_temporaries)
{
    const char *path = mg_test_path(t, "same");
    mg_out *a, *b;
    MG_CHECK_OK(t, mg_out_create(&a, path));
    MG_CHECK_OK(t, mg_out_create(&b, path));
    MG_CHECK_EQ_INT(t, count_entries(t->dir), 2);
    MG_CHECK_OK(t, mg_out_write(b, "b", 1));
    MG_CHECK_OK(t, mg_out_commit(b));
    mg_out_free(a);
    mg_out_free(b);
    char *got = mg_test_read_file(path, NULL);
    MG_CHECK_EQ_STR(t, got, "b");
    free(got);
    MG_CHECK_EQ_INT(t, count_entries(t->dir), 1);
}

MG_TEST(file_out_create_in_missing_dir)
{
    mg_out *o = (mg_out *)1;
    const char *path = mg_test_path(t, "no/such/dir/out.bin");
    MG_CHECK_ERR(t, mg_out_create(&o, path), MG_ERR_NOTFOUND, "no/such/dir/out.bin.tmp.");
    MG_CHECK(t, o == NULL);
}

/* In a child: writes 3 MiB under RLIMIT_FSIZE = 1 MiB (so the write fails with EFBIG),
 * returns 0 if the failure is reported, sticky, and cleaned up. */
static int child_write_fails(const char *dir, const char *path)
{
    signal(SIGXFSZ, SIG_IGN);
    struct rlimit rl = {1 << 20, 1 << 20};
    if (setrlimit(RLIMIT_FSIZE, &rl) != 0) return 10;
    mg_out *o;
    if (mg_out_create(&o, path) != MG_OK) return 11;
    static uint8_t chunk[1 << 16];
    mg_status st = MG_OK;
    for (int i = 0; i < 48 && st == MG_OK; i++) st = mg_out_write(o, chunk, sizeof chunk);
    if (st == MG_OK) st = mg_out_commit(o);
    if (st != MG_ERR_IO || !strstr(mg_last_error(), ": write failed: File too large")) return 12;
    if (strncmp(mg_last_error(), path, strlen(path)) != 0) return 13;
    if (mg_out_commit(o) == MG_OK) return 14; /* the failure is sticky */
    mg_out_free(o);
    if (count_entries(dir) != 0) return 15;
    return 0;
}

MG_TEST(file_out_write_failure_is_reported_and_cleaned)
{
    const char *path = mg_test_path(t, "big.bin");
    pid_t pid = fork();
    if (pid == 0) _exit(child_write_fails(t->dir, path));
    int ws = 0;
    waitpid(pid, &ws, 0);
    MG_CHECK(t, WIFEXITED(ws));
    MG_CHECK_EQ_INT(t, WEXITSTATUS(ws), 0);
}

/* In a child with its own mount namespace: a 64 KiB tmpfs, then a 1 MiB output.
 * Returns 0 on success, 77 when mounting is not permitted (not root / no namespaces). */
static int child_disk_full(const char *mnt)
{
    if (unshare(CLONE_NEWNS) != 0) return 77;
    if (mount("none", "/", NULL, MS_REC | MS_PRIVATE, NULL) != 0) return 77;
    if (mount("tmpfs", mnt, "tmpfs", 0, "size=64k") != 0) return 77;
    char path[600];
    snprintf(path, sizeof path, "%s/full.bin", mnt);
    mg_out *o;
    if (mg_out_create(&o, path) != MG_OK) return 20;
    static uint8_t chunk[1 << 16];
    mg_status st = MG_OK;
    for (int i = 0; i < 16 && st == MG_OK; i++) st = mg_out_write(o, chunk, sizeof chunk);
    if (st == MG_OK) st = mg_out_commit(o);
    char want[700];
    snprintf(want, sizeof want, "%s: write failed: No space left on device", path);
    if (st != MG_ERR_NOSPACE || strcmp(mg_last_error(), want) != 0) return 21;
    mg_out_free(o);
    return count_entries(mnt) == 0 ? 0 : 22;
}

MG_TEST(file_out_disk_full_is_nospace)
{
    const char *mnt = mg_test_path(t, "small");
    mkdir(mnt, 0755);
    pid_t pid = fork();
    if (pid == 0) _exit(child_disk_full(mnt));
    int ws = 0;
    waitpid(pid, &ws, 0);
    MG_CHECK(t, WIFEXITED(ws));
    if (WEXITSTATUS(ws) == 77) {
        fprintf(stderr, "  note: %s: cannot mount a small tmpfs here, disk-full path not "
                        "exercised (errno mapping is tested in test_error.c)\n", t->name);
        return;
    }
    MG_CHECK_EQ_INT(t, WEXITSTATUS(ws), 0);
}

MG_TEST(file_read_file_and_is_dir)
{
    const char *p = mg_test_write_file(t, "cfg.json", "{\"a\": 1}", 8);
    char *data = NULL;
    size_t len = 0;
    MG_CHECK_OK(t, mg_read_file(p, &data, &len));
    MG_CHECK_EQ_INT(t, len, 8);
    MG_CHECK_EQ_STR(t, data, "{\"a\": 1}");
    free(data);
    MG_CHECK_OK(t, mg_read_file(mg_test_write_file(t, "e", "", 0), &data, &len));
    MG_CHECK(t, data && data[0] == 0 && len == 0);
    free(data);
    const char *missing = mg_test_path(t, "missing.json");
    MG_CHECK_ERR(t, mg_read_file(missing, &data, &len), MG_ERR_NOTFOUND, missing);
    MG_CHECK(t, data == NULL);
    MG_CHECK_ERR(t, mg_read_file(t->dir, &data, &len), MG_ERR_IO, "Is a directory");
    MG_CHECK_EQ_INT(t, mg_is_dir(t->dir), 1);
    MG_CHECK_EQ_INT(t, mg_is_dir(p), 0);
    MG_CHECK_EQ_INT(t, mg_is_dir(missing), 0);
}

MG_TEST(file_read_file_large)
{
    size_t n = 300000;
    char *src = malloc(n);
    for (size_t i = 0; i < n; i++) src[i] = (char)('a' + i % 26);
    const char *p = mg_test_write_file(t, "big.txt", src, n);
    char *data = NULL;
    size_t len = 0;
    MG_CHECK_OK(t, mg_read_file(p, &data, &len));
    MG_CHECK(t, len == n && data && memcmp(data, src, n) == 0 && data[n] == 0);
    free(data);
    free(src);
}

/* test_file_direct.c — mg_out_create_direct (mg/file.h): the same bytes as a buffered
 * output for writes of every size around its 2 MiB buffer, direct I/O in use exactly where
 * the filesystem takes O_DIRECT (probed here independently), and the switch back to
 * buffered I/O for the tail, writev and copies. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "harness.h"
#include "mg/file.h"

#define MIB ((size_t)1 << 20)

/* Does the filesystem holding dir take O_DIRECT on a file descriptor? */
static int dir_takes_direct(const char *dir)
{
#ifdef O_DIRECT
    char path[600];
    snprintf(path, sizeof path, "%s/probe.%ld", dir, (long)getpid());
    int fd = open(path, O_WRONLY | O_CREAT | O_EXCL, 0600);
    if (fd < 0) return 0;
    int fl = fcntl(fd, F_GETFL);
    int ok = fl >= 0 && fcntl(fd, F_SETFL, fl | O_DIRECT) == 0;
    close(fd);
    unlink(path);
    return ok;
#else
    (void)dir;
    return 0;
#endif
}

static uint8_t *pattern(size_t n, unsigned mul)
{
    uint8_t *d = malloc(n);
    for (size_t i = 0; d && i < n; i++) d[i] = (uint8_t)(i * mul + (i >> 12));
    return d;
}

/* Is the file at path exactly data[0, n)? */
static int file_is(const char *path, const uint8_t *data, size_t n)
{
    size_t got_n = 0;
    char *got = mg_test_read_file(path, &got_n);
    int ok = got && got_n == n && memcmp(got, data, n) == 0;
    free(got);
    return ok;
}

/* Writes data[0, cuts[last]) in the pieces between consecutive cuts to a direct output in
 * dir; checks the direct state after the pieces (expect_direct) and after the commit (0:
 * the tail is written buffered) and the file's bytes. */
static void write_direct(mg_test_ctx *t, const char *dir, const uint8_t *data,
                         const size_t *cuts, size_t n_cuts, int expect_direct)
{
    char path[600];
    snprintf(path, sizeof path, "%s/direct.bin", dir);
    mg_out *o;
    MG_CHECK_OK(t, mg_out_create_direct(&o, path));
    for (size_t i = 0; i + 1 < n_cuts; i++)
        MG_CHECK_OK(t, mg_out_write(o, data + cuts[i], cuts[i + 1] - cuts[i]));
    size_t n = cuts[n_cuts - 1];
    MG_CHECK_EQ_INT(t, mg_out_offset(o), n);
    MG_CHECK_EQ_INT(t, mg_out_is_direct(o), expect_direct);
    MG_CHECK_OK(t, mg_out_commit(o));
    MG_CHECK_EQ_INT(t, mg_out_is_direct(o), 0);
    mg_out_free(o);
    MG_CHECK(t, file_is(path, data, n));
}

MG_TEST(file_direct_writes_of_every_size_give_the_same_bytes)
{
    int direct = dir_takes_direct(t->dir);
    size_t big = 9 * MIB + 123;
    uint8_t *data = pattern(big, 29);
    /* tiny, crossing the buffer, exactly filling it, one write larger than two buffers */
    size_t cuts[] = {0, 1, 7, 2 * MIB - 3, 2 * MIB, 2 * MIB + 5, 4 * MIB, 9 * MIB, big};
    write_direct(t, t->dir, data, cuts, sizeof cuts / sizeof cuts[0], direct);
    size_t exact[] = {0, 4 * MIB}; /* whole buffers only: the last one waits for the commit */
    write_direct(t, t->dir, data, exact, 2, direct);
    size_t small[] = {0, 100, 5000}; /* never a whole buffer: direct until the commit */
    write_direct(t, t->dir, data, small, 3, direct);
    size_t none[] = {0};
    write_direct(t, t->dir, data, none, 1, direct);
    free(data);
    if (!direct)
        fprintf(stderr, "  note: %s: %s takes no O_DIRECT, the buffered fallback was tested\n",
                t->name, t->dir);
}

MG_TEST(file_direct_then_writev_and_copy_go_buffered)
{
    int direct = dir_takes_direct(t->dir);
    size_t big = 5 * MIB + 77;
    uint8_t *data = pattern(big, 13);
    const char *src = mg_test_write_file(t, "src.bin", data, big);
    const char *path = mg_test_path(t, "mixed.bin");
    int fd = open(src, O_RDONLY);
    MG_CHECK(t, fd >= 0);
    mg_out *o;
    MG_CHECK_OK(t, mg_out_create_direct(&o, path));
    MG_CHECK_OK(t, mg_out_write(o, data, 3 * MIB + 1)); /* one buffer direct, rest kept */
    MG_CHECK_EQ_INT(t, mg_out_is_direct(o), direct);
    struct iovec v[2] = {{data + 3 * MIB + 1, 1000}, {data + 3 * MIB + 1001, 10}};
    MG_CHECK_OK(t, mg_out_writev(o, v, 2));
    MG_CHECK_EQ_INT(t, mg_out_is_direct(o), 0);
    MG_CHECK_OK(t, mg_out_copy_from(o, fd, 3 * MIB + 1011, MIB));
    MG_CHECK_OK(t, mg_out_write(o, data + 4 * MIB + 1011, big - (4 * MIB + 1011)));
    MG_CHECK_OK(t, mg_out_commit(o));
    mg_out_free(o);
    close(fd);
    MG_CHECK(t, file_is(path, data, big));
    free(data);
}

MG_TEST(file_direct_writev_first)
{
    /* nothing buffered yet: writev must leave direct I/O itself (caller memory) */
    size_t n = 3 * MIB + 5;
    uint8_t *data = pattern(n, 17);
    const char *path = mg_test_path(t, "writev.bin");
    mg_out *o;
    MG_CHECK_OK(t, mg_out_create_direct(&o, path));
    struct iovec v[2] = {{data + 1, n - 1}, {data, 1}};
    MG_CHECK_OK(t, mg_out_writev(o, v, 2));
    MG_CHECK_OK(t, mg_out_write(o, data, 3));
    MG_CHECK_OK(t, mg_out_commit(o));
    mg_out_free(o);
    uint8_t *want = malloc(n + 3);
    memcpy(want, data + 1, n - 1);
    memcpy(want + n - 1, data, 1);
    memcpy(want + n, data, 3);
    MG_CHECK(t, file_is(path, want, n + 3));
    free(want);
    free(data);
}

MG_TEST(file_direct_on_a_second_filesystem)
{
    /* /dev/shm where there is one: tmpfs, which takes O_DIRECT from Linux 6.6 on only */
    char dir[64];
    snprintf(dir, sizeof dir, "/dev/shm/mg-test-direct.%ld", (long)getpid());
    if (mkdir(dir, 0700) != 0) {
        fprintf(stderr, "  note: %s: no /dev/shm here, only the test directory tried\n",
                t->name);
        return;
    }
    size_t big = 3 * MIB + 9;
    uint8_t *data = pattern(big, 7);
    size_t cuts[] = {0, 5, 3 * MIB, big};
    write_direct(t, dir, data, cuts, 4, dir_takes_direct(dir));
    char path[600];
    snprintf(path, sizeof path, "%s/direct.bin", dir);
    unlink(path);
    rmdir(dir);
    free(data);
}

MG_TEST(file_out_room_fills_the_buffer_in_place)
{
    /* writes through mg_out_room until past three buffers: each call gives >= 1 byte */
    size_t n = 7 * MIB + 3;
    uint8_t *data = pattern(n, 23);
    for (int direct = 0; direct < 2; direct++) {
        const char *path = mg_test_path(t, direct ? "room-d.bin" : "room-b.bin");
        mg_out *o;
        MG_CHECK_OK(t, direct ? mg_out_create_direct(&o, path) : mg_out_create(&o, path));
        MG_CHECK_OK(t, mg_out_write(o, data, 5)); /* an odd start */
        size_t at = 5, calls = 0, min_room = (size_t)-1;
        while (at < n) {
            uint8_t *p;
            size_t room;
            MG_CHECK_OK(t, mg_out_room(o, &p, &room));
            if (room < min_room) min_room = room;
            if (room == 0) break;
            size_t k = room < n - at ? room : n - at;
            memcpy(p, data + at, k);
            mg_out_wrote(o, k);
            at += k;
            calls++;
        }
        MG_CHECK(t, min_room >= 1 && calls <= 8);
        MG_CHECK_EQ_INT(t, mg_out_offset(o), n);
        if (at < n) {
            mg_out_free(o);
            break;
        }
        MG_CHECK_OK(t, mg_out_commit(o));
        mg_out_free(o);
        MG_CHECK(t, file_is(path, data, n));
    }
    free(data);
}

/* harness.c — runner for the C unit tests; see harness.h. */
#include "harness.h"

#include <ftw.h>
#include <stdarg.h>
#include <stdlib.h>
#include <unistd.h>

#define MG_TEST_ENTRY(name) void mg_test_##name(mg_test_ctx *t);
#include "test_list.h"
#undef MG_TEST_ENTRY

static const struct {
    const char *name;
    void (*fn)(mg_test_ctx *);
} tests[] = {
#define MG_TEST_ENTRY(name) {#name, mg_test_##name},
#include "test_list.h"
#undef MG_TEST_ENTRY
};

void mg_test_fail(mg_test_ctx *t, const char *file, int line, const char *fmt, ...)
{
    va_list ap;
    fprintf(stderr, "  FAIL %s (%s:%d): ", t->name, file, line);
    va_start(ap, fmt);
    vfprintf(stderr, fmt, ap);
    va_end(ap);
    fputc('\n', stderr);
    t->failures++;
}

const char *mg_test_path(mg_test_ctx *t, const char *name)
{
    static _Thread_local char bufs[8][512];
    static _Thread_local int next;
    char *b = bufs[next++ & 7];
    snprintf(b, 512, "%s/%s", t->dir, name);
    return b;
}

const char *mg_test_write_file(mg_test_ctx *t, const char *name, const void *data, size_t len)
{
    const char *p = mg_test_path(t, name);
    FILE *f = fopen(p, "wb");
    if (!f || fwrite(data, 1, len, f) != len) {
        fprintf(stderr, "harness: cannot write %s\n", p);
        exit(2);
    }
    fclose(f);
    return p;
}

char *mg_test_read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc((size_t)n + 1);
    if (!buf || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fclose(f);
        free(buf);
        return NULL;
    }
    buf[n] = 0;
    fclose(f);
    if (len) *len = (size_t)n;
    return buf;
}

const char *mg_test_vocab_dir(void)
{
    const char *d = getenv("MG_VOCAB_DIR");
    return d ? d : "../shared/vocab";
}

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
    (void)sb, (void)flag, (void)ftw;
    return remove(p);
}

static int selected(const char *name, int argc, char **argv)
{
    if (argc < 2) return 1;
    for (int i = 1; i < argc; i++)
        if (strstr(name, argv[i])) return 1;
    return 0;
}

#ifndef MG_TEST_VARIANTS
int mg_test_variant_count(void) { return 1; }
const char *mg_test_variant_begin(int v) { return (void)v, NULL; }
void mg_test_variant_end(mg_test_ctx *t, int v) { (void)t, (void)v; }
#endif

/* Runs test i once per variant; returns nonzero if it failed in any. */
static int run_test(size_t i)
{
    int failed = 0;
    for (int v = 0; v < mg_test_variant_count(); v++) {
        const char *variant = mg_test_variant_begin(v);
        mg_test_ctx t = {.name = tests[i].name};
        snprintf(t.dir, sizeof t.dir, "%s/mgtest-%s-XXXXXX",
                 getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp", tests[i].name);
        if (!mkdtemp(t.dir)) {
            perror("harness: mkdtemp");
            exit(2);
        }
        tests[i].fn(&t);
        mg_test_variant_end(&t, v);
        if (!getenv("MG_KEEP_TMP")) nftw(t.dir, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
        if (t.failures) printf("FAIL %s%s%s\n", t.name, variant ? " " : "", variant ? variant : "");
        failed |= t.failures != 0;
    }
    return failed;
}

int main(int argc, char **argv)
{
    int passed = 0, failed = 0;
    for (size_t i = 0; i < sizeof tests / sizeof tests[0]; i++) {
        if (!selected(tests[i].name, argc, argv)) continue;
        if (run_test(i)) {
            failed++;
        } else {
            passed++;
            if (getenv("MG_VERBOSE")) printf("ok   %s\n", tests[i].name);
        }
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}

/* harness.h — the C unit test harness.
 *
 * A test is `MG_TEST(name) { ... }` at the start of a line in any C file of tests/unit; the
 * Makefile greps those lines into test_list.h, so a test cannot be left unregistered.
 * Checks are non-fatal and counted; each failure prints file:line, the expression and
 * (for MG_CHECK_OK) the library's error message. Every test gets a fresh temporary
 * directory t->dir, removed afterwards unless MG_KEEP_TMP is set.
 * The runner prints "N passed, N failed" and exits non-zero if any test failed.
 * Usage: test-unit [substring ...]   (runs the tests whose name contains a substring)
 * C++ test files (tests/cuda_emu, .cu files) use the same macros; their tests have C linkage.
 * A runner built with -DMG_TEST_VARIANTS (build/test-cuda-emu) runs every test once per
 * variant through the three mg_test_variant_* functions it defines; a test passes when it
 * passes in every variant.
 */
#ifndef MG_TEST_HARNESS_H
#define MG_TEST_HARNESS_H

#include <stdint.h>
#include <stdio.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

#include "mg/error.h"

typedef struct mg_test_ctx {
    const char *name;
    char dir[256]; /* fresh temporary directory for this test */
    int failures;
} mg_test_ctx;

#ifdef __cplusplus
#define MG_TEST_LINKAGE extern "C"
#else
#define MG_TEST_LINKAGE
#endif
#define MG_TEST(name)                                                                      \
    MG_TEST_LINKAGE void mg_test_##name(mg_test_ctx *t);                                   \
    void mg_test_##name(mg_test_ctx *t)

void mg_test_fail(mg_test_ctx *t, const char *file, int line, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));

/* Path inside the test's directory; returns a static buffer (one of 8 rotating). */
const char *mg_test_path(mg_test_ctx *t, const char *name);
/* Writes len bytes to a file in the test's directory; returns its path. */
const char *mg_test_write_file(mg_test_ctx *t, const char *name, const void *data, size_t len);
/* Reads a whole file into a malloc'd buffer (NUL-terminated); NULL if missing. */
char *mg_test_read_file(const char *path, size_t *len);
/* Directory holding the shared vocabularies (../shared/vocab by default, MG_VOCAB_DIR). */
const char *mg_test_vocab_dir(void);

/* Variants (1 unless built with MG_TEST_VARIANTS): begin(v) prepares variant v and returns its
 * name for FAIL lines (NULL: none); end(t, v) runs after the test and may add failures. */
int mg_test_variant_count(void);
const char *mg_test_variant_begin(int v);
void mg_test_variant_end(mg_test_ctx *t, int v);

#define MG_CHECK(t, cond)                                                                  \
    do {                                                                                   \
        if (!(cond)) mg_test_fail((t), __FILE__, __LINE__, "check failed: %s", #cond);     \
    } while (0)

#define MG_CHECK_EQ_INT(t, a, b)                                                           \
    do {                                                                                   \
        long long mg_a_ = (long long)(a), mg_b_ = (long long)(b);                          \
        if (mg_a_ != mg_b_)                                                                \
            mg_test_fail((t), __FILE__, __LINE__, "%s == %s: %lld != %lld", #a, #b, mg_a_, \
                         mg_b_);                                                           \
    } while (0)

#define MG_CHECK_EQ_STR(t, a, b)                                                           \
    do {                                                                                   \
        const char *mg_a_ = (a), *mg_b_ = (b);                                             \
        if (!mg_a_ || !mg_b_ || strcmp(mg_a_, mg_b_) != 0)                                 \
            mg_test_fail((t), __FILE__, __LINE__, "%s == %s: \"%s\" != \"%s\"", #a, #b,    \
                         mg_a_ ? mg_a_ : "(null)", mg_b_ ? mg_b_ : "(null)");              \
    } while (0)

#define MG_CHECK_OK(t, expr)                                                               \
    do {                                                                                   \
        mg_status mg_st_ = (expr);                                                         \
        if (mg_st_ != MG_OK)                                                               \
            mg_test_fail((t), __FILE__, __LINE__, "%s returned %d: %s", #expr, (int)mg_st_, \
                         mg_last_error());                                                 \
    } while (0)

/* Checks that expr fails with status st and that the message contains substring sub. */
#define MG_CHECK_ERR(t, expr, st, sub)                                                     \
    do {                                                                                   \
        mg_status mg_st_ = (expr);                                                         \
        if (mg_st_ != (st) || !strstr(mg_last_error(), (sub)))                             \
            mg_test_fail((t), __FILE__, __LINE__,                                          \
                         "%s: expected status %d with \"%s\", got %d: \"%s\"", #expr,      \
                         (int)(st), (sub), (int)mg_st_, mg_last_error());                  \
    } while (0)

#ifdef __cplusplus
}
#endif

#endif

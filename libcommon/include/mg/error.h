/* mg/error.h — status codes and error messages for all of libmgcommon.
 *
 * Contract:
 *   - Library functions never print and never exit. A function that can fail returns an
 *     mg_status (MG_OK == 0, failures negative) and records a human-readable message,
 *     with the path/line/offset it concerns, in a per-thread buffer read by mg_last_error().
 *   - The message is written by mg_error_set() (printf-style); the status is returned.
 *     A message names "where" first, then "what", lowercase, no trailing period:
 *         "corpus.jsonl:17: missing key \"text\""
 *   - mg_error_prefix() prepends context ("while reading X: ") to the current message.
 *   - Broken invariants (bugs, not bad input) use MG_ASSERT, which prints file:line and
 *     aborts in every build type.
 *   - Status values are pinned: they may be compared and stored.
 */
#ifndef MG_ERROR_H
#define MG_ERROR_H

#include <stddef.h>

typedef enum {
    MG_OK = 0,
    MG_ERR_IO = -1,          /* read/write/open failed (errno in the message) */
    MG_ERR_NOMEM = -2,       /* allocation failed */
    MG_ERR_FORMAT = -3,      /* input does not follow the format (bad JSON, bad .idx, ...) */
    MG_ERR_ARG = -4,         /* invalid argument or option value (a usage error) */
    MG_ERR_UNSUPPORTED = -5, /* valid input we do not support yet ("not supported yet: X") */
    MG_ERR_NOSPACE = -6,     /* disk full (ENOSPC/EDQUOT) */
    MG_ERR_NOTFOUND = -7,    /* a named file/key/entry does not exist */
    MG_ERR_LIMIT = -8,       /* a size or count exceeds what the format can hold */
} mg_status;

/* Short fixed description of a status ("I/O error", ...). Never NULL. */
const char *mg_strerror(mg_status st);

/* Records a formatted message for this thread and returns st (so callers can write
 * `return mg_error_set(MG_ERR_FORMAT, "%s:%zu: ...", path, line);`). */
mg_status mg_error_set(mg_status st, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Like mg_error_set, appending ": <strerror(errnum)>" to the message. Maps ENOSPC and
 * EDQUOT to MG_ERR_NOSPACE, ENOENT to MG_ERR_NOTFOUND, ENOMEM to MG_ERR_NOMEM, anything
 * else to MG_ERR_IO; returns that status. */
mg_status mg_error_errno(int errnum, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));

/* Prepends formatted context followed by ": " to this thread's message. */
void mg_error_prefix(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* This thread's last message ("" if none). Valid until the next mg_error_* call on the
 * same thread. */
const char *mg_last_error(void);

/* Copies this thread's message into another thread's view: used when a worker thread
 * fails and the main thread reports. dst must hold MG_ERROR_MAX bytes. */
#define MG_ERROR_MAX 1024
void mg_error_copy(char *dst);
void mg_error_restore(mg_status st, const char *msg);

/* Helpers for library code. */
#define MG_RETURN_IF(cond, st, ...)                                                        \
    do {                                                                                   \
        if (cond) return mg_error_set((st), __VA_ARGS__);                                  \
    } while (0)

#define MG_FORWARD(expr)                                                                   \
    do {                                                                                   \
        mg_status mg_fwd_st_ = (expr);                                                     \
        if (mg_fwd_st_ != MG_OK) return mg_fwd_st_;                                        \
    } while (0)

/* Invariant check: aborts with file:line and the expression, in every build. */
#define MG_ASSERT(cond)                                                                    \
    do {                                                                                   \
        if (!(cond)) mg_assert_fail(#cond, __FILE__, __LINE__);                            \
    } while (0)

__attribute__((noreturn)) void mg_assert_fail(const char *expr, const char *file, int line);

/* Allocation helpers that abort on failure are NOT provided: allocation failure is an
 * MG_ERR_NOMEM return. These return NULL and set the message. */
void *mg_malloc(size_t n);
void *mg_calloc(size_t count, size_t size);
void *mg_realloc(void *p, size_t n);

#endif /* MG_ERROR_H */

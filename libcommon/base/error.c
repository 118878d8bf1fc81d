/* error.c — per-thread error messages; see mg/error.h. */
#include "mg/error.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Thread_local char tls_msg[MG_ERROR_MAX];

const char *mg_strerror(mg_status st)
{
    switch (st) {
    case MG_OK: return "success";
    case MG_ERR_IO: return "I/O error";
    case MG_ERR_NOMEM: return "out of memory";
    case MG_ERR_FORMAT: return "invalid format";
    case MG_ERR_ARG: return "invalid argument";
    case MG_ERR_UNSUPPORTED: return "not supported yet";
    case MG_ERR_NOSPACE: return "no space left on device";
    case MG_ERR_NOTFOUND: return "not found";
    case MG_ERR_LIMIT: return "limit exceeded";
    }
    return "unknown error";
}

static void set_msg(const char *fmt, va_list ap)
{
    vsnprintf(tls_msg, sizeof tls_msg, fmt, ap);
}

mg_status mg_error_set(mg_status st, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_msg(fmt, ap);
    va_end(ap);
    return st;
}

mg_status mg_error_errno(int errnum, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    set_msg(fmt, ap);
    va_end(ap);
    size_t used = strlen(tls_msg);
    snprintf(tls_msg + used, sizeof tls_msg - used, ": %s", strerror(errnum));
    switch (errnum) {
    case ENOSPC:
#ifdef EDQUOT
    case EDQUOT:
#endif
        return MG_ERR_NOSPACE;
    case ENOENT: return MG_ERR_NOTFOUND;
    case ENOMEM: return MG_ERR_NOMEM;
    default: return MG_ERR_IO;
    }
}

void mg_error_prefix(const char *fmt, ...)
{
    char head[MG_ERROR_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    char old[MG_ERROR_MAX];
    memcpy(old, tls_msg, sizeof old);
    size_t n = strlen(head);
    if (n > sizeof tls_msg - 3) n = sizeof tls_msg - 3;
    memcpy(tls_msg, head, n);
    memcpy(tls_msg + n, ": ", 2);
    size_t rest = sizeof tls_msg - n - 2;
    size_t m = strnlen(old, rest - 1);
    memcpy(tls_msg + n + 2, old, m);
    tls_msg[n + 2 + m] = 0;
}

const char *mg_last_error(void) { return tls_msg; }

void mg_error_copy(char *dst) { memcpy(dst, tls_msg, MG_ERROR_MAX); }

void mg_error_restore(mg_status st, const char *msg)
{
    (void)st;
    snprintf(tls_msg, sizeof tls_msg, "%s", msg);
}

void mg_assert_fail(const char *expr, const char *file, int line)
{
    fprintf(stderr, "mgtools: internal error: assertion failed: %s (%s:%d)\n", expr, file, line);
    abort();
}

void *mg_malloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    if (!p) mg_error_set(MG_ERR_NOMEM, "out of memory allocating %zu bytes", n);
    return p;
}

void *mg_calloc(size_t count, size_t size)
{
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) mg_error_set(MG_ERR_NOMEM, "out of memory allocating %zu x %zu bytes", count, size);
    return p;
}

void *mg_realloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    if (!q) mg_error_set(MG_ERR_NOMEM, "out of memory allocating %zu bytes", n);
    return q;
}

/* workers.c — mg-convert's parallel file writing (a pthread pool over output files; the
 * workers left over when there are fewer files go to the row gathering inside each file,
 * reader.c), the shared progress line, and small file helpers (mkdir -p, atomic files).
 *
 * Contract (ckpt.h): ck_parallel runs fn(ctx, i) once for every i < n, on at most `workers`
 * threads (0: the number of online CPUs, capped by n); it returns the first failure (its
 * message restored on the calling thread) and stops handing out new items after one.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt.h"
#include "mg/file.h"
#include "mg/progress.h"

typedef struct {
    pthread_mutex_t mu;
    size_t next, n;
    mg_status st;
    char msg[MG_ERROR_MAX];
    mg_status (*fn)(void *ctx, size_t i);
    void *ctx;
} pool;

static void *worker(void *arg)
{
    pool *p = arg;
    for (;;) {
        pthread_mutex_lock(&p->mu);
        size_t i = p->st == MG_OK && p->next < p->n ? p->next++ : p->n;
        pthread_mutex_unlock(&p->mu);
        if (i >= p->n) return NULL;
        mg_status st = p->fn(p->ctx, i);
        if (st != MG_OK) {
            pthread_mutex_lock(&p->mu);
            if (p->st == MG_OK) {
                p->st = st;
                mg_error_copy(p->msg);
            }
            pthread_mutex_unlock(&p->mu);
        }
    }
}

static size_t worker_count(int workers)
{
    long cpus = sysconf(_SC_NPROCESSORS_ONLN);
    return workers > 0 ? (size_t)workers : (size_t)(cpus > 0 ? cpus : 1);
}

int ck_threads_per_file(size_t n, int workers)
{
    size_t w = worker_count(workers);
    return n == 0 || w <= n ? 1 : (int)(w / n > 64 ? 64 : w / n);
}

mg_status ck_parallel(size_t n, int workers, mg_status (*fn)(void *ctx, size_t i), void *ctx)
{
    size_t nt = worker_count(workers);
    if (nt > n) nt = n;
    if (nt <= 1) {
        for (size_t i = 0; i < n; i++) MG_FORWARD(fn(ctx, i));
        return MG_OK;
    }
    pool p = {.n = n, .fn = fn, .ctx = ctx};
    pthread_mutex_init(&p.mu, NULL);
    pthread_t *th = mg_calloc(nt, sizeof(*th));
    if (!th) return MG_ERR_NOMEM;
    size_t started = 0;
    for (; started < nt; started++)
        if (pthread_create(&th[started], NULL, worker, &p) != 0) break;
    if (started == 0) worker(&p);
    for (size_t i = 0; i < started; i++) pthread_join(th[i], NULL);
    free(th);
    pthread_mutex_destroy(&p.mu);
    if (p.st != MG_OK) mg_error_restore(p.st, p.msg);
    return p.st;
}

struct ck_progress {
    pthread_mutex_t mu;
    mg_progress *p;
    uint64_t tensors, bytes, total;
};

mg_status ck_progress_create(ck_progress **out, uint64_t total_bytes, int quiet)
{
    *out = NULL;
    if (quiet) return MG_OK;
    ck_progress *p = mg_calloc(1, sizeof(*p));
    if (!p) return MG_ERR_NOMEM;
    pthread_mutex_init(&p->mu, NULL);
    p->total = total_bytes;
    mg_status st = mg_progress_create(&p->p, "tensors", 1, 1.0, total_bytes);
    if (st != MG_OK) {
        free(p);
        return st;
    }
    *out = p;
    return MG_OK;
}

void ck_progress_add(ck_progress *p, uint64_t tensors, uint64_t bytes)
{
    if (!p) return;
    pthread_mutex_lock(&p->mu);
    p->tensors += tensors;
    p->bytes += bytes;
    mg_progress_update(p->p, p->tensors, p->bytes, p->bytes);
    pthread_mutex_unlock(&p->mu);
}

void ck_progress_free(ck_progress *p)
{
    if (!p) return;
    mg_progress_free(p->p);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

mg_status ck_mkdirs_for(const char *path)
{
    char buf[MG_PATH_MAX];
    size_t n = strlen(path);
    MG_RETURN_IF(n >= sizeof buf, MG_ERR_LIMIT, "%s: path too long", path);
    memcpy(buf, path, n + 1);
    for (char *s = buf + 1; *s; s++) {
        if (*s != '/') continue;
        *s = 0;
        if (mkdir(buf, 0777) != 0 && errno != EEXIST)
            return mg_error_errno(errno, "%s: cannot create directory", buf);
        *s = '/';
    }
    return MG_OK;
}

mg_status ck_write_small(const char *path, const void *data, size_t len)
{
    mg_out *o = NULL;
    MG_FORWARD(mg_out_create(&o, path));
    mg_status st = mg_out_write(o, data, len);
    if (st == MG_OK) st = mg_out_commit(o);
    mg_out_free(o);
    return st;
}

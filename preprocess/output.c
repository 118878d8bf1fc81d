/* output.c — per-key (and per-partition) dataset writers, partition merge and clean-up;
 * see output.h. */
#include "output.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct pp_outputs {
    size_t n_keys, parts;
    mg_dtype dtype;
    char **final_prefix;     /* [n_keys] */
    char **part_prefix;      /* [n_keys * parts] (parts > 1 only) */
    mg_idx_writer **writers; /* [n_keys * parts] */
    int finished_parts;      /* partition files exist under part_prefix (to be removed) */
};

__attribute__((format(printf, 1, 2))) static char *str_printf(const char *fmt, ...)
{
    va_list ap, ap2;
    va_start(ap, fmt);
    va_copy(ap2, ap);
    int n = vsnprintf(NULL, 0, fmt, ap);
    char *s = n >= 0 ? mg_malloc((size_t)n + 1) : NULL;
    if (s) vsnprintf(s, (size_t)n + 1, fmt, ap2);
    va_end(ap2);
    va_end(ap);
    return s;
}

static mg_status make_names(pp_outputs *o, const char *prefix, const char *const *keys,
                            const char *level)
{
    for (size_t k = 0; k < o->n_keys; k++) {
        o->final_prefix[k] = str_printf("%s_%s_%s", prefix, keys[k], level);
        if (!o->final_prefix[k]) return MG_ERR_NOMEM;
        for (size_t i = 0; o->parts > 1 && i < o->parts; i++) {
            char **p = &o->part_prefix[k * o->parts + i];
            *p = str_printf("%s.part%zu-%ld", o->final_prefix[k], i, (long)getpid());
            if (!*p) return MG_ERR_NOMEM;
        }
    }
    return MG_OK;
}

static mg_status alloc_arrays(pp_outputs *o)
{
    size_t nw = o->n_keys * o->parts;
    o->final_prefix = mg_calloc(o->n_keys, sizeof *o->final_prefix);
    o->part_prefix = mg_calloc(nw, sizeof *o->part_prefix);
    o->writers = mg_calloc(nw, sizeof *o->writers);
    return o->final_prefix && o->part_prefix && o->writers ? MG_OK : MG_ERR_NOMEM;
}

mg_status pp_outputs_create(pp_outputs **out, const char *prefix, const char *const *keys,
                            size_t n_keys, const char *level, size_t partitions, mg_dtype dtype,
                            int direct)
{
    pp_outputs *o = mg_calloc(1, sizeof *o);
    *out = NULL;
    if (!o) return MG_ERR_NOMEM;
    o->n_keys = n_keys;
    o->parts = partitions ? partitions : 1;
    o->dtype = dtype;
    mg_status st = alloc_arrays(o);
    if (st == MG_OK) st = make_names(o, prefix, keys, level);
    for (size_t w = 0; st == MG_OK && w < n_keys * o->parts; w++) {
        mg_idx_writer **wr = &o->writers[w];
        /* partitions are read back by the merge: page cache */
        if (o->parts > 1) st = mg_idx_writer_create(wr, o->part_prefix[w], dtype);
        else if (direct) st = mg_idx_writer_create_direct(wr, o->final_prefix[w], dtype);
        else st = mg_idx_writer_create(wr, o->final_prefix[w], dtype);
    }
    if (st != MG_OK) {
        pp_outputs_free(o);
        return st;
    }
    *out = o;
    return MG_OK;
}

mg_status pp_outputs_add(pp_outputs *o, size_t k, uint64_t line, const int64_t *ids, size_t n,
                         const int32_t *lens, size_t n_lens)
{
    mg_idx_writer *w = o->writers[k * o->parts + (size_t)(line % o->parts)];
    return mg_idx_writer_add_document(w, ids, n, lens, n_lens);
}

static void remove_dataset(const char *prefix)
{
    size_t n = strlen(prefix);
    char *p = mg_malloc(n + 5);
    if (!p) return;
    memcpy(p, prefix, n);
    memcpy(p + n, ".bin", 5);
    unlink(p);
    memcpy(p + n, ".idx", 5);
    unlink(p);
    free(p);
}

static mg_status merge_parts(pp_outputs *o, size_t k)
{
    mg_idx_writer *w = NULL;
    mg_status st = mg_idx_writer_create(&w, o->final_prefix[k], o->dtype);
    for (size_t i = 0; st == MG_OK && i < o->parts; i++)
        st = mg_idx_writer_add_index(w, o->part_prefix[k * o->parts + i]);
    if (st == MG_OK) st = mg_idx_writer_finish(w);
    mg_idx_writer_free(w);
    return st;
}

/* Removes the final datasets of keys 0..n-1 (a later key failed: all or nothing). */
static mg_status undo_keys(pp_outputs *o, size_t n, mg_status st)
{
    for (size_t k = 0; k < n; k++) remove_dataset(o->final_prefix[k]);
    return st;
}

static mg_status finish_single(pp_outputs *o)
{
    for (size_t k = 0; k < o->n_keys; k++) {
        mg_status st = mg_idx_writer_finish(o->writers[k]);
        if (st != MG_OK) return undo_keys(o, k, st);
    }
    return MG_OK;
}

mg_status pp_outputs_finish(pp_outputs *o)
{
    if (o->parts == 1) return finish_single(o);
    size_t nw = o->n_keys * o->parts;
    o->finished_parts = 1; /* from here on pp_outputs_free removes the partition files */
    for (size_t w = 0; w < nw; w++) MG_FORWARD(mg_idx_writer_finish(o->writers[w]));
    for (size_t k = 0; k < o->n_keys; k++) {
        mg_status st = merge_parts(o, k);
        if (st != MG_OK) return undo_keys(o, k, st);
    }
    return MG_OK;
}

void pp_outputs_free(pp_outputs *o)
{
    if (!o) return;
    size_t nw = o->n_keys * o->parts;
    for (size_t w = 0; o->writers && w < nw; w++) mg_idx_writer_free(o->writers[w]);
    for (size_t w = 0; o->part_prefix && w < nw; w++) {
        if (o->finished_parts && o->part_prefix[w]) remove_dataset(o->part_prefix[w]);
        free(o->part_prefix[w]);
    }
    for (size_t k = 0; o->final_prefix && k < o->n_keys; k++) free(o->final_prefix[k]);
    free(o->writers);
    free(o->part_prefix);
    free(o->final_prefix);
    free(o);
}

const char *pp_outputs_prefix(const pp_outputs *o, size_t k)
{
    return o->final_prefix[k];
}

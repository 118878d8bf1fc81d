/* batch.c — storage of a batch of lines and their ids; see batch.h. */
#include "batch.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

pp_batch *pp_batch_create(size_t n_keys)
{
    pp_batch *b = mg_calloc(1, sizeof *b);
    if (b) b->n_keys = n_keys;
    return b;
}

static void free_names(pp_batch *b)
{
    for (size_t i = 0; i < b->n_names; i++) free(b->names[i]);
    b->n_names = 0;
}

void pp_batch_free(pp_batch *b)
{
    if (!b) return;
    free_names(b);
    free(b->names);
    free(b->text);
    free(b->off);
    free(b->len);
    free(b->line_no);
    free(b->name_idx);
    mg_ids_free(&b->ids);
    free(b->end);
    free(b->seq_end);
    free(b->seq_len);
    free(b->status);
    free(b);
}

void pp_batch_reset(pp_batch *b)
{
    free_names(b);
    b->text_len = 0;
    b->n_lines = 0;
    b->bytes = 0;
    b->ids.n = 0;
    b->n_seq = 0;
    b->n_skipped = 0;
    b->n_skip_msgs = 0;
    b->failed = 0;
}

/* Capacity (in elements) of at least need, doubling from *cap; the array p is resized to it.
 * Returns the new array, or NULL (message set) leaving p and *cap unchanged. */
static void *grow(void *p, size_t sz, size_t need, size_t *cap)
{
    if (need <= *cap) return p;
    size_t n = *cap ? *cap : 64;
    while (n < need) n *= 2;
    void *q = mg_realloc(p, n * sz);
    if (q) *cap = n;
    return q;
}

/* GROW(array, need, cap): grows array in place or returns MG_ERR_NOMEM. */
#define GROW(arr, need, cap)                                                               \
    do {                                                                                   \
        void *grown_ = grow((arr), sizeof *(arr), (need), &(cap));                         \
        if (!grown_) return MG_ERR_NOMEM;                                                  \
        (arr) = grown_;                                                                    \
    } while (0)

static mg_status grow_lines(pp_batch *b)
{
    size_t need = b->n_lines + 1;
    if (need <= b->lines_cap) return MG_OK;
    size_t c1 = b->lines_cap, c2 = c1, c3 = c1, c4 = c1;
    GROW(b->off, need, c1);
    GROW(b->len, need, c2);
    GROW(b->line_no, need, c3);
    GROW(b->name_idx, need, c4);
    b->lines_cap = c1;
    return MG_OK;
}

static mg_status intern_name(pp_batch *b, const char *name)
{
    if (b->n_names && strcmp(b->names[b->n_names - 1], name) == 0) return MG_OK;
    GROW(b->names, b->n_names + 1, b->names_cap);
    size_t n = strlen(name) + 1;
    b->names[b->n_names] = mg_malloc(n);
    if (!b->names[b->n_names]) return MG_ERR_NOMEM;
    memcpy(b->names[b->n_names++], name, n);
    return MG_OK;
}

mg_status pp_batch_add_line(pp_batch *b, const char *line, size_t len, const char *name,
                            uint64_t line_no)
{
    MG_FORWARD(grow_lines(b));
    MG_FORWARD(intern_name(b, name));
    GROW(b->text, b->text_len + len + 1, b->text_cap);
    memcpy(b->text + b->text_len, line, len);
    b->text[b->text_len + len] = 0;
    size_t i = b->n_lines++;
    b->off[i] = b->text_len;
    b->len[i] = len;
    b->line_no[i] = line_no;
    b->name_idx[i] = (uint32_t)(b->n_names - 1);
    b->text_len += len + 1;
    return MG_OK;
}

mg_status pp_batch_prepare_results(pp_batch *b)
{
    size_t need = b->n_lines * b->n_keys;
    if (need > b->ends_cap) {
        size_t c1 = b->ends_cap, c2 = c1, c3 = c1;
        GROW(b->end, need, c1);
        GROW(b->status, need, c2);
        GROW(b->seq_end, need, c3);
        b->ends_cap = c1;
    }
    memset(b->status, 0, b->n_lines);
    return MG_OK;
}

mg_status pp_batch_push_seq(pp_batch *b, size_t len)
{
    if (len > INT32_MAX)
        return mg_error_set(MG_ERR_LIMIT, "sequence of %zu tokens exceeds the int32 length", len);
    GROW(b->seq_len, b->n_seq + 1, b->seq_cap);
    b->seq_len[b->n_seq++] = (int32_t)len;
    return MG_OK;
}

void pp_batch_where(const pp_batch *b, size_t i, char *buf, size_t size)
{
    snprintf(buf, size, "%s:%llu", b->names[b->name_idx[i]],
             (unsigned long long)b->line_no[i]);
}

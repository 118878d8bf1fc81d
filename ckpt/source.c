/* source.c — checkpoint sources: loader choice, the dropped-tensor list, and the block
 * reader that gathers canonical rows from the mapped inputs and converts their dtype.
 *
 * Contract (ckpt.h): ck_read_rows reads strictly through s->locate, element runs that are
 * contiguous are converted in place, strided ones (transposed layouts) are gathered into a
 * small buffer first. Results are bit-identical to mg_dtype_convert of the same values.
 */
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt.h"
#include "mg/mcore_dist.h"
#include "mg/dtype_convert.h"
#include "mg/file.h"

static int exists(const char *dir, const char *name)
{
    char path[MG_PATH_MAX];
    struct stat st;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &st) == 0;
}

/* torch_dist in DIR itself (an iteration folder) or in the folder its tracker names. */
static mg_status open_megatron(ck_source **s, const char *dir, const ck_opts *o)
{
    char path[MG_PATH_MAX], iterdir[MG_MEGATRON_NAME_MAX];
    if (mg_mcore_dist_is(dir)) return ck_td_open(s, dir, dir, o);
    if (exists(dir, MG_MEGATRON_TRACKER)) {
        mg_megatron_iter it;
        MG_FORWARD(mg_megatron_tracker_read(dir, &it));
        mg_megatron_iter_name(&it, iterdir);
        snprintf(path, sizeof path, "%s/%s", dir, iterdir);
        if (mg_mcore_dist_is(path)) return ck_td_open(s, path, iterdir, o);
    }
    return ck_mg_open(s, dir, o);
}

mg_status ck_source_open(ck_source **s, const char *dir, const ck_opts *o, int loader)
{
    *s = NULL;
    MG_RETURN_IF(!mg_is_dir(dir), MG_ERR_NOTFOUND, "%s: no such directory", dir);
    if (loader == CK_AUTO) {
        if (exists(dir, "config.json")) loader = CK_HF;
        else if (exists(dir, MG_MEGATRON_TRACKER) || exists(dir, "metadata.json"))
            loader = CK_MEGATRON;
        else
            return mg_error_set(MG_ERR_FORMAT,
                                "%s: neither config.json (Hugging Face) nor "
                                MG_MEGATRON_TRACKER " (Megatron) found",
                                dir);
    }
    return loader == CK_HF ? ck_hf_open(s, dir, o) : open_megatron(s, dir, o);
}

ck_source *ck_source_alloc(size_t impl_size)
{
    ck_source *s = mg_calloc(1, sizeof(*s));
    void *impl = mg_calloc(1, impl_size);
    if (!s || !impl) {
        free(s);
        free(impl);
        return NULL;
    }
    mg_model_init(&s->m);
    s->impl = impl;
    return s;
}

void ck_source_free(ck_source *s)
{
    if (!s) return;
    if (s->close) s->close(s);
    for (size_t i = 0; i < s->ndropped; i++) free(s->dropped[i]);
    free(s->dropped);
    free(s->drop_notable);
    free(s->params);
    mg_model_free(&s->m);
    free(s);
}

static mg_status drop_v(ck_source *s, int notable, const char *fmt, va_list ap)
{
    char buf[1024];
    vsnprintf(buf, sizeof buf, fmt, ap);
    char **d = mg_realloc(s->dropped, (s->ndropped + 1) * sizeof(*d));
    if (!d) return MG_ERR_NOMEM;
    s->dropped = d;
    unsigned char *nb = mg_realloc(s->drop_notable, s->ndropped + 1);
    if (!nb) return MG_ERR_NOMEM;
    s->drop_notable = nb;
    d[s->ndropped] = mg_malloc(strlen(buf) + 1);
    if (!d[s->ndropped]) return MG_ERR_NOMEM;
    nb[s->ndropped] = (unsigned char)notable;
    strcpy(d[s->ndropped++], buf);
    return MG_OK;
}

mg_status ck_source_drop(ck_source *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mg_status st = drop_v(s, 0, fmt, ap);
    va_end(ap);
    return st;
}

mg_status ck_source_drop_notable(ck_source *s, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    mg_status st = drop_v(s, 1, fmt, ap);
    va_end(ap);
    return st;
}

int64_t ck_vocab_row(const ck_source *s, int64_t row)
{
    if (s->vocab_rows <= 0) return row < s->m.vocab_size ? row : -1;
    return row < s->vocab_rows ? row : s->vocab_rows - 1;
}

mg_names ck_target_names(const ck_source *s, const ck_opts *o)
{
    if (o->te >= 0) return o->te ? MG_NAMES_TE : MG_NAMES_LOCAL;
    return s->names == MG_NAMES_LOCAL ? MG_NAMES_LOCAL : MG_NAMES_TE;
}

mg_status ck_source_params(ck_source *s)
{
    free(s->params);
    s->params = NULL;
    return mg_schema_params(&s->m, &s->params, &s->nparams);
}

#define RELEASE_MIN ((size_t)1 << 20)

/* Contiguous input bytes read so far; released in >= 1 MiB spans so that one huge tensor
 * does not keep all of its input resident. */
typedef struct {
    const uint8_t *a, *b;
} span;

static void span_add(span *sp, const ck_loc *loc, int64_t n)
{
    size_t es = mg_tdtype_size(loc->dtype);
    if (loc->step != (int64_t)es) return;
    const uint8_t *p = loc->p, *e = p + (size_t)n * es;
    if (sp->b != p) {
        if (sp->b - sp->a >= (ptrdiff_t)RELEASE_MIN) ck_release_pages(sp->a, (size_t)(sp->b - sp->a));
        sp->a = p;
    }
    sp->b = e;
    if (sp->b - sp->a >= (ptrdiff_t)(4 * RELEASE_MIN)) {
        ck_release_pages(sp->a, (size_t)(sp->b - sp->a));
        sp->a = sp->b;
    }
}

static void span_end(span *sp)
{
    if (sp->b - sp->a >= (ptrdiff_t)RELEASE_MIN) ck_release_pages(sp->a, (size_t)(sp->b - sp->a));
}

static mg_status gather_run(const ck_loc *loc, int64_t n, uint8_t *out, mg_tdtype dt,
                            uint8_t **tmp, size_t *tmp_cap)
{
    size_t es = mg_tdtype_size(loc->dtype);
    if (loc->step == (int64_t)es) {
        return mg_dtype_convert(out, dt, loc->p, loc->dtype, (size_t)n);
    }
    size_t need = (size_t)n * es;
    if (need > *tmp_cap) {
        uint8_t *t = mg_realloc(*tmp, need);
        if (!t) return MG_ERR_NOMEM;
        *tmp = t;
        *tmp_cap = need;
    }
    const uint8_t *p = loc->p;
    for (int64_t i = 0; i < n; i++, p += loc->step) memcpy(*tmp + (size_t)i * es, p, es);
    return mg_dtype_convert(out, dt, *tmp, loc->dtype, (size_t)n);
}

mg_status ck_read_rows(const ck_source *s, size_t pi, int64_t row0, int64_t nrows,
                       int64_t col0, int64_t ncols, void *dst, mg_tdtype dt)
{
    size_t des = mg_tdtype_size(dt);
    uint8_t *tmp = NULL;
    size_t tmp_cap = 0;
    span sp = {NULL, NULL};
    mg_status st = MG_OK;
    for (int64_t i = 0; i < nrows && st == MG_OK; i++) {
        uint8_t *out = (uint8_t *)dst + (size_t)(i * ncols) * des;
        for (int64_t c = col0; c < col0 + ncols && st == MG_OK;) {
            ck_loc loc;
            s->locate(s, pi, row0 + i, c, &loc);
            int64_t n = col0 + ncols - c < loc.avail ? col0 + ncols - c : loc.avail;
            st = gather_run(&loc, n, out, dt, &tmp, &tmp_cap);
            span_add(&sp, &loc, n);
            out += (size_t)n * des;
            c += n;
        }
    }
    span_end(&sp);
    free(tmp);
    return st;
}

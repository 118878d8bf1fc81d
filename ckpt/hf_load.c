/* hf_load.c — Hugging Face loader: config.json + model.safetensors or sharded safetensors
 * with model.safetensors.index.json, else pytorch_model.bin or its shards with
 * pytorch_model.bin.index.json (read through hf_bin.h), mapped read-only. Safetensors win
 * when both are present (as in transformers).
 *
 * Contract (ckpt.h): every tensor of the files is either a schema parameter (shape and
 * dtype checked: a mismatch is MG_ERR_FORMAT naming file and tensor), a known buffer that is
 * dropped and listed (GPT-2 attn.bias/masked_bias, rotary inv_freq, a tied lm_head copy), or
 * a refusal (MG_ERR_UNSUPPORTED naming it). Both formats are read in place (zero copy) and
 * offer file-to-file copies (file_of).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt.h"
#include "hf_bin.h"
#include "mg/file.h"
#include "mg/hf_map.h"
#include "mg/safetensors.h"

typedef struct {
    int fd;               /* -1: not opened (no file-to-file copies from it) */
    const uint8_t *base;  /* the data section in the mapping */
    uint64_t len, off;    /* its length, and its offset in the file */
} hf_extent;

/* One input file: exactly one of st, bin is set. */
typedef struct {
    mg_st_file *st;
    ck_bin *bin;
    hf_extent ext;
} hf_file;

typedef struct {
    hf_file *files;
    size_t nfiles;
    const mg_st_tensor *(*pt)[3]; /* per parameter */
} hf_impl;

static int64_t dim(const mg_st_tensor *t, int i) { return i < t->ndim ? t->shape[i] : 1; }

static size_t f_count(const hf_file *f)
{
    return f->st ? mg_st_count(f->st) : ck_bin_count(f->bin);
}

static const char *f_path(const hf_file *f)
{
    return f->st ? mg_st_path(f->st) : ck_bin_path(f->bin);
}

static const mg_st_tensor *f_at(const hf_file *f, size_t i)
{
    return f->st ? mg_st_at(f->st, i) : ck_bin_at(f->bin, i);
}

static const mg_st_tensor *f_find(const hf_file *f, const char *name)
{
    return f->st ? mg_st_find(f->st, name) : ck_bin_find(f->bin, name);
}

static void hf_locate(const ck_source *s, size_t pi, int64_t row, int64_t col, ck_loc *loc)
{
    const hf_impl *h = s->impl;
    const mg_param *p = &s->params[pi];
    mg_hf_elem e = mg_hf_locate(&s->m, p, row, col);
    const mg_st_tensor *t = h->pt[pi][e.k];
    size_t es = mg_tdtype_size(t->dtype);
    loc->p = (const uint8_t *)t->data + (size_t)e.off * es;
    loc->step = (int64_t)es * e.step;
    loc->avail = p->cols - col;
    loc->dtype = t->dtype;
}

static void hf_release(const ck_source *s, size_t pi)
{
    const hf_impl *h = s->impl;
    for (int k = 0; k < 3; k++)
        if (h->pt[pi][k]) ck_release_pages(h->pt[pi][k]->data, (size_t)h->pt[pi][k]->nbytes);
}

static int hf_file_of(const ck_source *s, const uint8_t *p, int *fd, uint64_t *off)
{
    const hf_impl *h = s->impl;
    for (size_t i = 0; i < h->nfiles; i++) {
        const hf_extent *e = &h->files[i].ext;
        if (e->fd < 0 || !e->base || p < e->base || p >= e->base + e->len) continue;
        *fd = e->fd;
        *off = e->off + (uint64_t)(p - e->base);
        return 1;
    }
    return 0;
}

static void hf_close(ck_source *s)
{
    hf_impl *h = s->impl;
    if (!h) return;
    for (size_t i = 0; i < h->nfiles; i++) {
        mg_st_close(h->files[i].st);
        ck_bin_close(h->files[i].bin);
        if (h->files[i].ext.fd >= 0) close(h->files[i].ext.fd);
    }
    free(h->files);
    free(h->pt);
    free(h);
}

/* The data section of a safetensors file in memory and in the file. */
static void st_extent(hf_extent *e, const mg_st_file *f)
{
    e->off = 8 + mg_st_header_len(f);
    for (size_t i = 0; i < mg_st_count(f); i++) {
        const mg_st_tensor *t = mg_st_at(f, i);
        if (t->nbytes == 0 || !t->data) continue;
        e->base = (const uint8_t *)t->data - t->offset;
        if (t->offset + t->nbytes > e->len) e->len = t->offset + t->nbytes;
    }
}

/* Opens DIR/NAME (a pytorch_model.bin file when bin) and its extent, with a descriptor for
 * copies; fd -1 when the file cannot be opened again (then its bytes are written from the
 * mapping). */
static mg_status open_file(hf_impl *h, const char *dir, const char *name, int bin)
{
    char path[MG_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    hf_file *f = mg_realloc(h->files, (h->nfiles + 1) * sizeof(*f));
    if (!f) return MG_ERR_NOMEM;
    h->files = f;
    f = &h->files[h->nfiles];
    *f = (hf_file){.ext = {.fd = -1}};
    h->nfiles++;
    if (bin) {
        size_t size = 0;
        MG_FORWARD(ck_bin_open(&f->bin, path));
        f->ext.base = ck_bin_mapping(f->bin, &size);
        f->ext.len = size;
    } else {
        MG_FORWARD(mg_st_open(&f->st, path));
        st_extent(&f->ext, f->st);
    }
    if (f->ext.base) f->ext.fd = open(path, O_RDONLY | O_CLOEXEC);
    return MG_OK;
}

static mg_status open_index(hf_impl *h, const char *dir, const char *path, int bin)
{
    mg_st_index *ix = NULL;
    MG_FORWARD(mg_st_index_open(&ix, path));
    mg_status rc = MG_OK;
    for (size_t i = 0; i < mg_st_index_nfiles(ix) && rc == MG_OK; i++)
        rc = open_file(h, dir, mg_st_index_file(ix, i), bin);
    mg_st_index_free(ix);
    return rc;
}

/* The index or the single file, safetensors first; s->format says which was read. */
static mg_status open_files(ck_source *s, hf_impl *h, const char *dir)
{
    static const char *const names[2][2] = {
        {"model.safetensors.index.json", "model.safetensors"},
        {"pytorch_model.bin.index.json", "pytorch_model.bin"},
    };
    char path[MG_PATH_MAX];
    struct stat st;
    for (int bin = 0; bin < 2; bin++) {
        snprintf(s->format, sizeof s->format, bin ? "hf pytorch_model.bin" : "hf safetensors");
        snprintf(path, sizeof path, "%s/%s", dir, names[bin][0]);
        if (stat(path, &st) == 0) return open_index(h, dir, path, bin);
        snprintf(path, sizeof path, "%s/%s", dir, names[bin][1]);
        if (stat(path, &st) == 0) return open_file(h, dir, names[bin][1], bin);
    }
    snprintf(s->format, sizeof s->format, "hf safetensors");
    return mg_error_set(MG_ERR_NOTFOUND, "%s: no model.safetensors, pytorch_model.bin or "
                        "their index.json", dir);
}

static const mg_st_tensor *find(const hf_impl *h, const char *name, size_t *fi)
{
    for (size_t i = 0; i < h->nfiles; i++) {
        const mg_st_tensor *t = f_find(&h->files[i], name);
        if (!t && strncmp(name, "transformer.", 12) == 0) t = f_find(&h->files[i], name + 12);
        if (t) {
            *fi = i;
            return t;
        }
    }
    return NULL;
}

static mg_status check_tensor(const ck_source *s, const mg_param *p, int k,
                              const mg_st_tensor *t, const char *file)
{
    int64_t e[2];
    mg_hf_shape(&s->m, p, k, e);
    int vocab = p->spec->split == MG_SPLIT_VOCAB;
    int nd = p->spec->ndim;
    int ok = t->ndim == nd && (vocab ? t->shape[0] >= e[0] : t->shape[0] == e[0]) &&
             (nd == 1 || t->shape[1] == e[1]);
    MG_RETURN_IF(!ok, MG_ERR_FORMAT, "%s: tensor %s: shape [%lld%s%lld] does not match the "
                 "model (expected [%lld%s%lld])", file, t->name, (long long)dim(t, 0),
                 nd == 2 ? ", " : "", nd == 2 ? (long long)dim(t, 1) : 0LL, (long long)e[0],
                 nd == 2 ? ", " : "", nd == 2 ? (long long)e[1] : 0LL);
    MG_RETURN_IF(t->dtype != MG_TD_F32 && t->dtype != MG_TD_BF16 && t->dtype != MG_TD_F16 &&
                     t->dtype != MG_TD_F64, MG_ERR_UNSUPPORTED,
                 "not supported yet: %s: tensor %s has dtype %s", file, t->name,
                 mg_tdtype_name(t->dtype));
    return MG_OK;
}

/* The layer count the tensor names show: 1 + the largest N of "layers.N." / "h.N.". */
static int64_t weight_layers(const hf_impl *h)
{
    int64_t n = 0;
    for (size_t f = 0; f < h->nfiles; f++)
        for (size_t i = 0; i < f_count(&h->files[f]); i++) {
            const char *name = f_at(&h->files[f], i)->name, *at = strstr(name, "layers.");
            long long k;
            if (!at && (at = strstr(name, "h.")) && at != name && at[-1] != '.') at = NULL;
            if (at && sscanf(strchr(at, '.') + 1, "%lld.", &k) == 1 && k + 1 > n) n = k + 1;
        }
    return n;
}

/* config.json against the weights: the layer count and the hidden size (from the word
 * embeddings), named as config.json's keys. */
static mg_status check_config(const ck_source *s, const hf_impl *h, const char *dir)
{
    int64_t layers = weight_layers(h);
    MG_RETURN_IF(layers && layers != s->m.num_layers, MG_ERR_FORMAT,
                 "%s/config.json: num_hidden_layers %lld; the weights have %lld layers", dir,
                 (long long)s->m.num_layers, (long long)layers);
    char names[3][256];
    size_t fi;
    const mg_st_tensor *t = s->nparams && mg_schema_hf_names(&s->params[0], &s->m, names) > 0
                                ? find(h, names[0], &fi) : NULL;
    MG_RETURN_IF(t && s->params[0].spec->split == MG_SPLIT_VOCAB && t->ndim == 2 &&
                     t->shape[1] != s->m.hidden_size, MG_ERR_FORMAT,
                 "%s/config.json: hidden_size %lld; the weights have %lld (%s [%lld, %lld])", dir,
                 (long long)s->m.hidden_size, (long long)t->shape[1], t->name,
                 (long long)t->shape[0], (long long)t->shape[1]);
    return MG_OK;
}

static mg_status bind_params(ck_source *s, hf_impl *h)
{
    h->pt = mg_calloc(s->nparams, sizeof(*h->pt));
    if (!h->pt) return MG_ERR_NOMEM;
    for (size_t i = 0; i < s->nparams; i++) {
        char names[3][256];
        int n = mg_schema_hf_names(&s->params[i], &s->m, names);
        for (int k = 0; k < n; k++) {
            size_t fi = 0;
            const mg_st_tensor *t = find(h, names[k], &fi);
            MG_RETURN_IF(!t, MG_ERR_FORMAT, "%s: tensor %s is missing",
                         h->nfiles ? f_path(&h->files[0]) : "model.safetensors", names[k]);
            MG_FORWARD(check_tensor(s, &s->params[i], k, t, f_path(&h->files[fi])));
            h->pt[i][k] = t;
        }
    }
    return MG_OK;
}

static int cmp_ptr(const void *a, const void *b)
{
    const void *x = *(const void *const *)a, *y = *(const void *const *)b;
    return x < y ? -1 : x > y;
}

static int ends(const char *s, const char *suf)
{
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && strcmp(s + n - k, suf) == 0;
}

static mg_status leftover(ck_source *s, const hf_impl *h, const char *name, const char *file)
{
    if (ends(name, ".attn.bias") || ends(name, ".attn.masked_bias") || ends(name, "inv_freq"))
        return ck_source_drop(s, "%s (%s): buffer, not a parameter", name, file);
    if (strcmp(name, "lm_head.weight") == 0 && s->m.tied_embeddings)
        return ck_source_drop(s, "%s (%s): tied copy of the word embeddings", name, file);
    (void)h;
    return mg_error_set(MG_ERR_UNSUPPORTED, "not supported yet: tensor %s in %s is not part of "
                        "the %s schema", name, file, mg_arch_name(s->m.arch));
}

static mg_status check_leftovers(ck_source *s, const hf_impl *h)
{
    size_t n = s->nparams * 3, k = 0;
    const void **used = mg_calloc(n ? n : 1, sizeof(*used));
    if (!used) return MG_ERR_NOMEM;
    for (size_t i = 0; i < s->nparams; i++)
        for (int j = 0; j < 3; j++)
            if (h->pt[i][j]) used[k++] = h->pt[i][j];
    qsort(used, k, sizeof(*used), cmp_ptr);
    mg_status st = MG_OK;
    for (size_t f = 0; f < h->nfiles && st == MG_OK; f++)
        for (size_t i = 0; i < f_count(&h->files[f]) && st == MG_OK; i++) {
            const mg_st_tensor *t = f_at(&h->files[f], i);
            const void *key = t;
            if (!bsearch(&key, used, k, sizeof(*used), cmp_ptr))
                st = leftover(s, h, t->name, f_path(&h->files[f]));
        }
    free(used);
    return st;
}

static mg_status read_config(ck_source *s, const char *dir, const ck_opts *o)
{
    char path[MG_PATH_MAX];
    snprintf(path, sizeof path, "%s/config.json", dir);
    char *text = NULL;
    size_t len = 0;
    MG_FORWARD(mg_read_file(path, &text, &len));
    mg_status st = mg_model_from_hf_config(&s->m, text, path);
    free(text);
    MG_FORWARD(st);
    if (o->true_vocab > 0) {
        MG_RETURN_IF(o->true_vocab > s->m.vocab_size, MG_ERR_ARG,
                     "--true-vocab-size %lld is larger than the model's vocabulary (%lld)",
                     (long long)o->true_vocab, (long long)s->m.vocab_size);
        s->m.vocab_size = o->true_vocab;
    }
    return MG_OK;
}

mg_status ck_hf_open(ck_source **out, const char *dir, const ck_opts *o)
{
    ck_source *s = ck_source_alloc(sizeof(hf_impl));
    if (!s) return MG_ERR_NOMEM;
    hf_impl *h = s->impl;
    s->locate = hf_locate;
    s->close = hf_close;
    s->release = hf_release;
    s->file_of = hf_file_of;
    snprintf(s->format, sizeof s->format, "hf safetensors");
    s->tp = s->pp = 1;
    mg_status st = read_config(s, dir, o);
    if (st == MG_OK) st = ck_source_params(s);
    if (st == MG_OK) st = open_files(s, h, dir);
    if (st == MG_OK) st = check_config(s, h, dir);
    if (st == MG_OK) st = bind_params(s, h);
    if (st == MG_OK && h->pt[0][0]->dtype != MG_TD_F64) s->m.dtype = h->pt[0][0]->dtype;
    if (st == MG_OK) st = check_leftovers(s, h);
    if (st != MG_OK) {
        ck_source_free(s);
        return st;
    }
    *out = s;
    return MG_OK;
}

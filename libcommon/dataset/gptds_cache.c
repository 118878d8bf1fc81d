/* gptds_cache.c — Megatron's index caches (--data-cache-path): file names, directories,
 * loading with validation, building and saving (contract in gptds_internal.h; megatron-core
 * 0.16.1 gpt_dataset.py _build_document_sample_shuffle_indices, blended_dataset.py
 * _build_indices). Dtypes written as Megatron writes them: document_index int32;
 * sample_index int32 unless the document index has more than 2^31-1 entries (then int64);
 * shuffle_index uint32 unless it has 2^32-2 entries or more (then int64); dataset_index
 * int16; dataset_sample_index int64. Reading accepts exactly those dtypes.
 */
#include "gptds_internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mg/file.h"
#include "mg/md5.h"
#include "mg/npy.h"

/* ---- paths ------------------------------------------------------------------------- */

/* os.path.join(a, b) for a relative b, malloc'd. */
static char *path_join(const char *a, const char *b)
{
    size_t la = strlen(a), lb = strlen(b);
    int sep = la > 0 && a[la - 1] != '/';
    char *p = mg_malloc(la + (size_t)sep + lb + 1);
    if (!p) return NULL;
    memcpy(p, a, la);
    if (sep) p[la] = '/';
    memcpy(p + la + (size_t)sep, b, lb + 1);
    return p;
}

/* os.makedirs(dir, exist_ok=True). */
static mg_status make_dirs(const char *dir)
{
    char *p = mg_malloc(strlen(dir) + 1);
    if (!p) return MG_ERR_NOMEM;
    strcpy(p, dir);
    mg_status st = MG_OK;
    for (char *s = p + 1; st == MG_OK; s++) {
        if (*s != '/' && *s != '\0') continue;
        char c = *s;
        *s = '\0';
        if (mkdir(p, 0777) != 0 && errno != EEXIST)
            st = mg_error_errno(errno, "cannot create the cache directory %s (give a writable "
                                "--data-cache-path)", p);
        else if (!mg_is_dir(p))
            st = mg_error_set(MG_ERR_IO, "cannot create the cache directory %s: a file is in "
                              "the way", p);
        *s = c;
        if (c == '\0') break;
    }
    free(p);
    return st;
}

/* os.path.isfile: exists (following links) and is a regular file. */
static int is_file(const char *path)
{
    struct stat s;
    return stat(path, &s) == 0 && S_ISREG(s.st_mode);
}

/* "<dir>/<md5 of desc>-<cls>-<split>-": the start of every file name of one dataset. */
static char *file_stem(const char *dir, const mg_jbuf *desc, const char *cls, int k)
{
    char hex[33], name[128];
    mg_md5_hex(desc->t.s, desc->t.len, hex);
    snprintf(name, sizeof name, "%s-%s-%s-", hex, cls, mg_split_name(k));
    return path_join(dir, name);
}

typedef struct {
    char *stem;       /* NULL: no cache */
    char *paths[4];   /* description, then the .npy files */
    size_t n;
} cache_files;

static void files_free(cache_files *f)
{
    free(f->stem);
    for (size_t i = 0; i < f->n; i++) free(f->paths[i]);
    memset(f, 0, sizeof *f);
}

/* The n file paths stem + affixes[i]. */
static mg_status files_init(cache_files *f, const char *dir, const mg_jbuf *desc,
                            const char *cls, int k, const char *const *affixes, size_t n)
{
    memset(f, 0, sizeof *f);
    f->stem = file_stem(dir, desc, cls, k);
    if (!f->stem) return MG_ERR_NOMEM;
    for (; f->n < n; f->n++) {
        size_t ls = strlen(f->stem), la = strlen(affixes[f->n]);
        f->paths[f->n] = mg_malloc(ls + la + 1);
        if (!f->paths[f->n]) return MG_ERR_NOMEM;
        memcpy(f->paths[f->n], f->stem, ls);
        memcpy(f->paths[f->n] + ls, affixes[f->n], la + 1);
    }
    return MG_OK;
}

static int files_all_exist(const cache_files *f)
{
    for (size_t i = 0; i < f->n; i++)
        if (!is_file(f->paths[i])) return 0;
    return 1;
}

/* ---- reading ------------------------------------------------------------------------ */

/* The cached description must be ours byte for byte (the name is its md5). */
static mg_status check_description(const char *path, const mg_jbuf *desc)
{
    char *text = NULL;
    size_t len = 0;
    MG_FORWARD(mg_read_file(path, &text, &len));
    int same = len == desc->t.len && memcmp(text, desc->t.s, len) == 0;
    free(text);
    MG_RETURN_IF(!same, MG_ERR_FORMAT, "%s: the cached description is not this dataset's "
                 "(corrupt cache file; delete it to rebuild)", path);
    return MG_OK;
}

/* Opens path and checks dtype (one of dt1, dt2) and shape (rows [x cols]; cols 0: 1-D). */
static mg_status open_npy(mg_npy_file *f, const char *path, mg_npy_dtype dt1, mg_npy_dtype dt2,
                          uint64_t rows, uint64_t cols)
{
    MG_FORWARD(mg_npy_open(f, path));
    const mg_npy *a = &f->arr;
    mg_status st = MG_OK;
    if (a->dtype != dt1 && a->dtype != dt2)
        st = mg_error_set(MG_ERR_FORMAT, "%s: dtype %s, Megatron writes %s here", path,
                          mg_npy_descr(a->dtype), mg_npy_descr(dt1));
    else if (a->ndim != (cols ? 2 : 1) || a->shape[0] != rows || (cols && a->shape[1] != cols))
        st = mg_error_set(MG_ERR_FORMAT, "%s: shape (%llu%s%llu) does not match this dataset "
                          "(%llu%s%llu expected; corrupt or stale cache file)", path,
                          (unsigned long long)a->shape[0], a->ndim == 2 ? ", " : ",",
                          (unsigned long long)(a->ndim == 2 ? a->shape[1] : 0),
                          (unsigned long long)rows, cols ? ", " : ",",
                          (unsigned long long)cols);
    if (st != MG_OK) mg_npy_close(f);
    return st;
}

/* Copies the array into dst (int64) checking lo <= value < hi for the columns in mask
 * (bit c: column c; 1-D arrays: bit 0). */
static mg_status copy_checked(const mg_npy *a, const char *path, int64_t *dst, int64_t lo,
                              int64_t hi, unsigned mask)
{
    uint64_t cols = a->ndim == 2 ? a->shape[1] : 1;
    for (uint64_t i = 0; i < a->count; i++) {
        int64_t v = mg_npy_get(a, i);
        MG_RETURN_IF(((mask >> (i % cols)) & 1u) && (v < lo || v >= hi), MG_ERR_FORMAT,
                     "%s: value %lld at element %llu outside [%lld, %lld) (corrupt cache file)",
                     path, (long long)v, (unsigned long long)i, (long long)lo, (long long)hi);
        dst[i] = v;
    }
    return MG_OK;
}

/* ---- GPTDataset ---------------------------------------------------------------------- */

static const char *const gpt_affixes[4] = {"description.txt", "document_index.npy",
                                           "sample_index.npy", "shuffle_index.npy"};

/* The shapes a cached dataset must have: epochs, separate, the document index length and
 * the number of sample-index rows (computed as gptds.c builds them). */
static mg_status expected_shapes(mg_gptds *ds, uint64_t beg, uint64_t end,
                                 int64_t num_samples, uint64_t *rows)
{
    const mg_gptds_config *c = &ds->cfg;
    int extra = c->add_extra_token ? 1 : 0;
    int64_t tokens = 0, sans;
    for (uint64_t i = beg; i < end; i++) tokens += ds->src.lengths[i];
    MG_FORWARD(mg_gpt_num_epochs(tokens, num_samples, c->seq_length, extra, &ds->epochs));
    MG_FORWARD(mg_gpt_separate_final_epoch(tokens, num_samples, c->seq_length, extra,
                                           ds->epochs, &ds->separate, &sans));
    ds->n_doc_index = (size_t)ds->epochs * (size_t)(end - beg);
    int64_t n = mg_gpt_sample_count(ds->epochs, tokens, c->seq_length, c->drop_last, extra);
    *rows = (uint64_t)(n < 0 ? 0 : n) + 1;
    return MG_OK;
}

static mg_status load_document_index(mg_gptds *ds, const char *path)
{
    mg_npy_file f;
    MG_FORWARD(open_npy(&f, path, MG_NPY_I4, MG_NPY_I4, ds->n_doc_index, 0));
    mg_status st = MG_OK;
    ds->doc_index = mg_malloc((ds->n_doc_index ? ds->n_doc_index : 1) * sizeof *ds->doc_index);
    if (!ds->doc_index) st = MG_ERR_NOMEM;
    for (size_t i = 0; st == MG_OK && i < ds->n_doc_index; i++) {
        int64_t v = mg_npy_get(&f.arr, i);
        if (v < 0 || (uint64_t)v >= ds->src.n_sequences)
            st = mg_error_set(MG_ERR_FORMAT, "%s: document %lld at element %zu is not one of "
                              "the dataset's %llu (corrupt cache file)", path, (long long)v, i,
                              (unsigned long long)ds->src.n_sequences);
        else ds->doc_index[i] = (int32_t)v;
    }
    mg_npy_close(&f);
    return st;
}

static mg_status load_sample_index(mg_gptds *ds, const char *path, uint64_t rows)
{
    mg_npy_file f;
    MG_FORWARD(open_npy(&f, path, MG_NPY_I4, MG_NPY_I8, rows, 2));
    ds->rows = (size_t)rows;
    ds->sample_index = mg_malloc((size_t)rows * 2 * sizeof *ds->sample_index);
    mg_status st = ds->sample_index ? MG_OK : MG_ERR_NOMEM;
    /* positions index the document index (rows > 1: samples exist); offsets are token
     * offsets inside one sequence (checked against its length when a sample is read) */
    int64_t npos = rows > 1 ? (int64_t)ds->n_doc_index : 1;
    if (st == MG_OK) st = copy_checked(&f.arr, path, ds->sample_index, 0, npos, 1u);
    if (st == MG_OK) st = copy_checked(&f.arr, path, ds->sample_index, 0, INT32_MAX, 2u);
    mg_npy_close(&f);
    return st;
}

static mg_status load_shuffle_index(mg_gptds *ds, const char *path)
{
    uint64_t n = ds->rows - 1;
    mg_npy_file f;
    MG_FORWARD(open_npy(&f, path, MG_NPY_U4, MG_NPY_I8, n, 0));
    ds->shuffle_index = mg_malloc((n ? (size_t)n : 1) * sizeof *ds->shuffle_index);
    mg_status st = ds->shuffle_index ? MG_OK : MG_ERR_NOMEM;
    if (st == MG_OK) st = copy_checked(&f.arr, path, ds->shuffle_index, 0, (int64_t)n, 1u);
    mg_npy_close(&f);
    return st;
}

static mg_status gptds_load(mg_gptds *ds, const cache_files *f, const mg_jbuf *desc,
                            uint64_t beg, uint64_t end, int64_t num_samples)
{
    uint64_t rows;
    MG_FORWARD(check_description(f->paths[0], desc));
    MG_FORWARD(expected_shapes(ds, beg, end, num_samples, &rows));
    MG_FORWARD(load_document_index(ds, f->paths[1]));
    MG_FORWARD(load_sample_index(ds, f->paths[2], rows));
    return load_shuffle_index(ds, f->paths[3]);
}

static mg_status write_text(const char *path, const mg_jbuf *text)
{
    mg_out *o = NULL;
    MG_FORWARD(mg_out_create(&o, path));
    mg_status st = mg_out_write(o, text->t.s, text->t.len);
    if (st == MG_OK) st = mg_out_commit(o);
    mg_out_free(o);
    return st;
}

static mg_status gptds_save(const mg_gptds *ds, const cache_files *f, const mg_jbuf *desc,
                            const char *dir)
{
    MG_FORWARD(make_dirs(dir));
    MG_FORWARD(write_text(f->paths[0], desc));
    uint64_t n = ds->n_doc_index, rows[2] = {ds->rows, 2}, total = ds->rows - 1;
    MG_FORWARD(mg_npy_write(f->paths[1], MG_NPY_I4, 1, &n, ds->doc_index, MG_NPY_I4));
    mg_npy_dtype sdt = n <= INT32_MAX ? MG_NPY_I4 : MG_NPY_I8;
    MG_FORWARD(mg_npy_write(f->paths[2], sdt, 2, rows, ds->sample_index, MG_NPY_I8));
    mg_npy_dtype hdt = total < (uint64_t)UINT32_MAX - 1 ? MG_NPY_U4 : MG_NPY_I8;
    return mg_npy_write(f->paths[3], hdt, 1, &total, ds->shuffle_index, MG_NPY_I8);
}

/* The cache directory of a GPTDataset (malloc'd), or NULL in *dir for none. */
static mg_status gptds_dir(const struct mg_gptds_ident *id, char **dir)
{
    const char *d = id->ctx->cache->dir;
    *dir = NULL;
    if (d && !*d) return MG_OK;
    if (!d && (id->ctx->mock || !id->dataset_path)) return MG_OK;
    if (d) {
        *dir = mg_malloc(strlen(d) + 1);
        if (*dir) strcpy(*dir, d);
    } else {
        *dir = path_join(id->dataset_path, "cache/GPTDataset_indices");
    }
    return *dir ? MG_OK : MG_ERR_NOMEM;
}

static mg_status gptds_cached(mg_gptds *ds, uint64_t beg, uint64_t end, int64_t num_samples,
                              mg_nprandom *rs, mg_gptds_build_fn build, const char *dir)
{
    const struct mg_gptds_ident *id = ds->cfg.ident;
    mg_jbuf desc;
    cache_files f;
    memset(&f, 0, sizeof f);
    mg_status st = mg_gptds_description(id->ctx, id->dataset_path, num_samples,
                                        id->index_split, &desc);
    if (st == MG_OK)
        st = files_init(&f, dir, &desc, id->ctx->mock ? "MockGPTDataset" : "GPTDataset",
                        id->index_split, gpt_affixes, 4);
    if (st == MG_OK && files_all_exist(&f)) {
        st = gptds_load(ds, &f, &desc, beg, end, num_samples);
    } else if (st == MG_OK) {
        st = build(ds, beg, end, num_samples, rs);
        if (st == MG_OK) st = gptds_save(ds, &f, &desc, dir);
    }
    files_free(&f);
    mg_jbuf_free(&desc);
    return st;
}

mg_status mg_gptds_cache_indices(mg_gptds *ds, uint64_t beg, uint64_t end, int64_t num_samples,
                                 mg_nprandom *rs, mg_gptds_build_fn build)
{
    ds->num_samples = num_samples;
    char *dir = NULL;
    MG_FORWARD(gptds_dir(ds->cfg.ident, &dir));
    if (!dir) return build(ds, beg, end, num_samples, rs);
    mg_status st = gptds_cached(ds, beg, end, num_samples, rs, build, dir);
    free(dir);
    return st;
}

/* ---- BlendedDataset ------------------------------------------------------------------ */

static const char *const blend_affixes[3] = {"description.txt", "dataset_index.npy",
                                             "dataset_sample_index.npy"};

/* The file names of b's cache (f->stem NULL: b is not cached), and its description. */
static mg_status blend_files(const mg_blend_desc *b, cache_files *f, mg_jbuf *desc)
{
    memset(f, 0, sizeof *f);
    memset(desc, 0, sizeof *desc);
    const char *dir = b->ctx ? b->ctx->cache->dir : NULL;
    if (!dir || !*dir) return MG_OK; /* Megatron: no default directory for blends */
    MG_FORWARD(mg_blend_description(b, desc));
    return files_init(f, dir, desc, "BlendedDataset", b->index_split, blend_affixes, 3);
}

static mg_status blend_load(const mg_blend_desc *b, const cache_files *f, int16_t *ds_index,
                            int64_t *ds_sample, uint64_t count)
{
    mg_npy_file fi, fs;
    MG_FORWARD(open_npy(&fi, f->paths[1], MG_NPY_I2, MG_NPY_I2, count, 0));
    mg_status st = open_npy(&fs, f->paths[2], MG_NPY_I8, MG_NPY_I8, count, 0);
    if (st != MG_OK) {
        mg_npy_close(&fi);
        return st;
    }
    for (uint64_t i = 0; st == MG_OK && i < count; i++) {
        int64_t p = mg_npy_get(&fi.arr, i), j = mg_npy_get(&fs.arr, i);
        if (p < 0 || (uint64_t)p >= b->n)
            st = mg_error_set(MG_ERR_FORMAT, "%s: dataset %lld at element %llu, the blend has "
                              "%zu (corrupt cache file)", f->paths[1], (long long)p,
                              (unsigned long long)i, b->n);
        else if (j < 0 || (uint64_t)j >= mg_gptds_len(b->ds[p]))
            st = mg_error_set(MG_ERR_FORMAT, "%s: sample %lld at element %llu, dataset %lld "
                              "has %llu (corrupt cache file)", f->paths[2], (long long)j,
                              (unsigned long long)i, (long long)p,
                              (unsigned long long)mg_gptds_len(b->ds[p]));
        ds_index[i] = (int16_t)p;
        ds_sample[i] = j;
    }
    mg_npy_close(&fs);
    mg_npy_close(&fi);
    return st;
}

mg_status mg_blend_cache_load(const mg_blend_desc *b, int16_t *ds_index, int64_t *ds_sample,
                              uint64_t count, int *loaded)
{
    *loaded = 0;
    cache_files f;
    mg_jbuf desc;
    mg_status st = blend_files(b, &f, &desc);
    if (st == MG_OK && f.stem && files_all_exist(&f)) {
        st = check_description(f.paths[0], &desc);
        if (st == MG_OK) st = blend_load(b, &f, ds_index, ds_sample, count);
        *loaded = st == MG_OK;
    }
    files_free(&f);
    mg_jbuf_free(&desc);
    return st;
}

mg_status mg_blend_cache_save(const mg_blend_desc *b, const int16_t *ds_index,
                              const int64_t *ds_sample, uint64_t count)
{
    cache_files f;
    mg_jbuf desc;
    mg_status st = blend_files(b, &f, &desc);
    if (st == MG_OK && f.stem) {
        st = make_dirs(b->ctx->cache->dir);
        if (st == MG_OK) st = write_text(f.paths[0], &desc);
        if (st == MG_OK)
            st = mg_npy_write(f.paths[1], MG_NPY_I2, 1, &count, ds_index, MG_NPY_I2);
        if (st == MG_OK)
            st = mg_npy_write(f.paths[2], MG_NPY_I8, 1, &count, ds_sample, MG_NPY_I8);
    }
    files_free(&f);
    mg_jbuf_free(&desc);
    return st;
}

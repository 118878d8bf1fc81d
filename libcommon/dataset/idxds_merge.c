/* idxds_merge.c — mg_idx_merge_dir: Megatron tools/merge_datasets.py.
 *
 * Contract (mg/idxds.h, docs/FORMATS.md §1.4):
 *   - Every regular file (symlinks followed) "NAME.EXT" in dir (EXT split off like Python's
 *     os.path.splitext) must have the sibling "NAME.bin" if EXT is ".idx", else "NAME.idx";
 *     otherwise MG_ERR_FORMAT naming the file and the missing sibling.
 *   - The prefixes dir/NAME are merged in byte order of NAME (= Python's str order for UTF-8
 *     names) into out_prefix, with the dtype of the first one; add_index for each, finish.
 *   - A directory without datasets is MG_ERR_NOTFOUND (Python fails there too).
 */
#include "idxds_internal.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mg/grow.h"

typedef struct {
    char **items;
    size_t n, cap;
} name_list;

static void names_free(name_list *l)
{
    for (size_t i = 0; i < l->n; i++) free(l->items[i]);
    free(l->items);
    memset(l, 0, sizeof *l);
}

static mg_status names_add(name_list *l, const char *s, size_t len)
{
    MG_FORWARD(MG_GROW(l->items, l->cap, l->n + 1, 16));
    char *c = mg_malloc(len + 1);
    if (!c) return MG_ERR_NOMEM;
    memcpy(c, s, len);
    c[len] = 0;
    l->items[l->n++] = c;
    return MG_OK;
}

static int cmp_bytes(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Length of the root of name under os.path.splitext: the last dot starts the extension
 * unless only dots precede it. */
static size_t splitext_root(const char *name)
{
    const char *dot = strrchr(name, '.');
    if (!dot) return strlen(name);
    for (const char *p = name; p < dot; p++)
        if (*p != '.') return (size_t)(dot - name);
    return strlen(name);
}

static int is_regular(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

static char *join3(const char *dir, const char *name, size_t name_len, const char *ext)
{
    size_t a = strlen(dir), c = strlen(ext);
    char *p = mg_malloc(a + 1 + name_len + c + 1);
    if (!p) return NULL;
    memcpy(p, dir, a);
    p[a] = '/';
    memcpy(p + a + 1, name, name_len);
    memcpy(p + a + 1 + name_len, ext, c + 1);
    return p;
}

/* One directory entry: if it is a regular file, checks its sibling and records its root. */
static mg_status visit(name_list *roots, const char *dir, const char *name)
{
    char *path = join3(dir, name, strlen(name), "");
    if (!path) return MG_ERR_NOMEM;
    int reg = is_regular(path);
    free(path);
    if (!reg) return MG_OK;
    size_t root = splitext_root(name);
    const char *pair = strcmp(name + root, ".idx") == 0 ? ".bin" : ".idx";
    char *sib = join3(dir, name, root, pair);
    if (!sib) return MG_ERR_NOMEM;
    mg_status st = MG_OK;
    if (!is_regular(sib))
        st = mg_error_set(MG_ERR_FORMAT, "%s/%s: no %s file %s beside it to merge with", dir,
                          name, pair, sib);
    free(sib);
    return st == MG_OK ? names_add(roots, name, root) : st;
}

static mg_status list_dir(name_list *names, const char *dir)
{
    DIR *dh = opendir(dir);
    if (!dh) return mg_error_errno(errno, "%s: cannot open directory", dir);
    mg_status st = MG_OK;
    struct dirent *e;
    while (st == MG_OK && (e = readdir(dh)) != NULL) {
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            st = names_add(names, e->d_name, strlen(e->d_name));
    }
    closedir(dh);
    return st;
}

/* Sorted, de-duplicated dataset roots of dir. */
static mg_status collect_roots(name_list *roots, const char *dir)
{
    name_list names = {0};
    mg_status st = list_dir(&names, dir);
    if (st == MG_OK && names.n) qsort(names.items, names.n, sizeof *names.items, cmp_bytes);
    for (size_t i = 0; st == MG_OK && i < names.n; i++) st = visit(roots, dir, names.items[i]);
    names_free(&names);
    if (st != MG_OK) return st;
    MG_RETURN_IF(roots->n == 0, MG_ERR_NOTFOUND, "%s: no .bin/.idx datasets to merge", dir);
    qsort(roots->items, roots->n, sizeof *roots->items, cmp_bytes);
    size_t k = 0;
    for (size_t i = 0; i < roots->n; i++) {
        if (k > 0 && strcmp(roots->items[k - 1], roots->items[i]) == 0) free(roots->items[i]);
        else roots->items[k++] = roots->items[i];
    }
    roots->n = k;
    return MG_OK;
}

static mg_status first_dtype(const char *prefix, mg_dtype *dtype)
{
    mg_idx d;
    MG_FORWARD(mg_idx_open(&d, prefix));
    *dtype = d.dtype;
    mg_idx_close(&d);
    return MG_OK;
}

static mg_status merge_roots(const name_list *roots, const char *dir, const char *out_prefix)
{
    char **prefixes = mg_calloc(roots->n, sizeof *prefixes);
    if (!prefixes) return MG_ERR_NOMEM;
    mg_status st = MG_OK;
    for (size_t i = 0; st == MG_OK && i < roots->n; i++) {
        prefixes[i] = join3(dir, roots->items[i], strlen(roots->items[i]), "");
        if (!prefixes[i]) st = MG_ERR_NOMEM;
    }
    mg_dtype dtype = MG_DT_INT32;
    if (st == MG_OK) st = first_dtype(prefixes[0], &dtype);
    mg_idx_writer *w = NULL;
    if (st == MG_OK) st = mg_idx_writer_create(&w, out_prefix, dtype);
    for (size_t i = 0; st == MG_OK && i < roots->n; i++)
        st = mg_idx_writer_add_index(w, prefixes[i]);
    if (st == MG_OK) st = mg_idx_writer_finish(w);
    mg_idx_writer_free(w);
    for (size_t i = 0; i < roots->n; i++) free(prefixes[i]);
    free(prefixes);
    return st;
}

mg_status mg_idx_merge_dir(const char *dir, const char *out_prefix)
{
    name_list roots = {0};
    mg_status st = collect_roots(&roots, dir);
    if (st == MG_OK) st = merge_roots(&roots, dir, out_prefix);
    names_free(&roots);
    return st;
}

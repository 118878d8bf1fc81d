/* dcp_dir.c — mg/dcp.h: a DCP checkpoint folder opened for reading: `.metadata` parsed, the
 * data files it names mapped read-only, every tensor chunk's nested torch.save archive
 * checked and its first element located inside the mapping.
 *
 * Contract (mg/dcp.h): a data file that cannot be opened, an item that ends past its file,
 * an archive that is not one contiguous tensor of the chunk's dtype and shape are errors
 * naming the data file, the item's offset in it and the key (MG_ERR_FORMAT; an unreadable
 * file keeps its errno status). Nothing is copied: chunk data stays in the mappings.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "mg/dcp.h"
#include "mg/file.h"
#include "mg/torchfile.h"

struct mg_dcp_dir {
    mg_dcp_meta *m;
    mg_map *maps;    /* per data file */
    int *fds;        /* per data file, -1 when not open */
    mg_status *open; /* per data file: MG_OK, or why it could not be mapped */
    char **why;      /* per data file: the message of that failure */
    char dir[4096];
};

/* Strides of a C-order tensor, dimensions of size 1 excepted (their stride is free). */
static int contiguous(const mg_pk_tensor *t)
{
    int64_t expect = 1;
    for (int d = t->ndim - 1; d >= 0; d--) {
        if (t->size[d] != 1 && t->stride[d] != expect) return 0;
        expect *= t->size[d];
    }
    return 1;
}

static void shape_text(char *buf, size_t cap, int ndim, const int64_t *v)
{
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (int d = 0; d < ndim && k < cap; d++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", d ? ", " : "", (long long)v[d]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
}

static mg_status check_tensor(const mg_pk_obj *root, mg_tdtype dt, int ndim, const int64_t *shape,
                              const char *label, const uint8_t **data)
{
    MG_RETURN_IF(!root || root->kind != MG_PK_TENSOR, MG_ERR_FORMAT, "%s: the archive holds a "
                 "%s, not a tensor", label, mg_pk_kind_name(root ? root->kind : MG_PK_NONE));
    const mg_pk_tensor *t = root->tensor;
    MG_RETURN_IF(t->dtype != dt, MG_ERR_FORMAT, "%s: the stored tensor is %s, .metadata says %s",
                 label, mg_tdtype_name(t->dtype), mg_tdtype_name(dt));
    int same = t->ndim == ndim;
    for (int d = 0; same && d < ndim; d++) same = t->size[d] == shape[d];
    if (!same) {
        char a[200], b[200];
        shape_text(a, sizeof a, t->ndim, t->size);
        shape_text(b, sizeof b, ndim, shape);
        return mg_error_set(MG_ERR_FORMAT, "%s: the stored tensor has shape %s, .metadata says %s",
                            label, a, b);
    }
    MG_RETURN_IF(!contiguous(t), MG_ERR_UNSUPPORTED, "%s: not supported yet: a stored tensor "
                 "that is not contiguous", label);
    MG_RETURN_IF(!t->data, MG_ERR_FORMAT, "%s: the tensor's storage is missing", label);
    *data = t->data + (size_t)t->offset * mg_tdtype_size(t->dtype);
    return MG_OK;
}

mg_status mg_dcp_chunk_check(const uint8_t *bytes, size_t len, mg_tdtype dt, int ndim,
                             const int64_t *shape, const char *label, const uint8_t **data)
{
    mg_torch_file *f = NULL;
    *data = NULL;
    MG_FORWARD(mg_torch_open_mem(&f, bytes, len, label));
    mg_status st = check_tensor(mg_torch_root(f), dt, ndim, shape, label, data);
    mg_torch_close(f); /* the data stays in the caller's bytes */
    return st;
}

static mg_status map_files(mg_dcp_dir *d)
{
    size_t n = d->m->nfiles ? d->m->nfiles : 1;
    d->maps = mg_calloc(n, sizeof(*d->maps));
    d->fds = mg_malloc(n * sizeof(*d->fds));
    d->open = mg_calloc(n, sizeof(*d->open));
    d->why = mg_calloc(n, sizeof(*d->why));
    if (!d->maps || !d->fds || !d->open || !d->why) return MG_ERR_NOMEM;
    for (size_t i = 0; i < n; i++) d->fds[i] = -1;
    for (size_t i = 0; i < d->m->nfiles; i++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", d->dir, d->m->files[i]);
        d->open[i] = mg_map_open(&d->maps[i], path);
        if (d->open[i] != MG_OK) {
            d->why[i] = strdup(mg_last_error());
            if (!d->why[i]) return MG_ERR_NOMEM;
            continue;
        }
        d->fds[i] = open(path, O_RDONLY | O_CLOEXEC);
    }
    return MG_OK;
}

static mg_status resolve(mg_dcp_dir *d, const mg_dcp_item *it, mg_dcp_chunk *c)
{
    const char *file = d->m->files[c->file];
    MG_RETURN_IF(d->open[c->file] != MG_OK, d->open[c->file] == MG_ERR_NOMEM ? MG_ERR_NOMEM
                 : MG_ERR_FORMAT, "%s/.metadata: pickle offset %zu: %s is stored in %s, which "
                 "cannot be read (%s)", d->dir, it->at, it->key, file, d->why[c->file]);
    size_t size = d->maps[c->file].size;
    MG_RETURN_IF(c->offset > size || c->length > size - c->offset, MG_ERR_FORMAT,
                 "%s/%s: offset %llu: %s: its %llu bytes end past the end of the file (%zu bytes)",
                 d->dir, file, (unsigned long long)c->offset, it->key,
                 (unsigned long long)c->length, size);
    if (it->is_bytes) return MG_OK;
    char label[8400];
    snprintf(label, sizeof label, "%s/%s: offset %llu: %s", d->dir, file,
             (unsigned long long)c->offset, it->key);
    const uint8_t *base = d->maps[c->file].data;
    return mg_dcp_chunk_check(base ? base + c->offset : NULL, (size_t)c->length, it->dtype,
                              it->ndim, c->len, label, &c->data);
}

static mg_status open_all(mg_dcp_dir *d, const char *dir)
{
    char path[8192];
    mg_map md;
    snprintf(d->dir, sizeof d->dir, "%s", dir);
    snprintf(path, sizeof path, "%s/.metadata", dir);
    MG_FORWARD(mg_map_open(&md, path));
    mg_status st = mg_dcp_meta_load(&d->m, md.data, md.size, path);
    mg_map_close(&md);
    MG_FORWARD(st);
    MG_FORWARD(map_files(d));
    for (size_t i = 0; i < d->m->nitems; i++)
        for (size_t c = 0; c < d->m->items[i].nchunks; c++)
            MG_FORWARD(resolve(d, &d->m->items[i], &d->m->items[i].chunks[c]));
    return MG_OK;
}

mg_status mg_dcp_dir_open(mg_dcp_dir **out, const char *dir)
{
    *out = mg_calloc(1, sizeof(**out));
    if (!*out) return MG_ERR_NOMEM;
    mg_status st = open_all(*out, dir);
    if (st != MG_OK) {
        mg_dcp_dir_close(*out);
        *out = NULL;
    }
    return st;
}

void mg_dcp_dir_close(mg_dcp_dir *d)
{
    if (!d) return;
    for (size_t i = 0; d->m && d->maps && d->fds && d->why && i < d->m->nfiles; i++) {
        mg_map_close(&d->maps[i]);
        if (d->fds[i] >= 0) close(d->fds[i]);
        free(d->why[i]);
    }
    free(d->maps);
    free(d->fds);
    free(d->open);
    free(d->why);
    mg_dcp_meta_free(d->m);
    free(d);
}

const mg_dcp_meta *mg_dcp_dir_meta(const mg_dcp_dir *d) { return d->m; }

const uint8_t *mg_dcp_dir_bytes(const mg_dcp_dir *d, const mg_dcp_chunk *c)
{
    const uint8_t *base = d->maps[c->file].data;
    return base ? base + c->offset : NULL;
}

const uint8_t *mg_dcp_dir_file(const mg_dcp_dir *d, size_t i, size_t *size, int *fd)
{
    *size = d->maps[i].size;
    *fd = d->fds[i];
    return d->maps[i].data;
}

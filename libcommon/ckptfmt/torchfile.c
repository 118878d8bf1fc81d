/* torchfile.c — torch.save (.pt) files: open (map + zip + pickle VM + zero-copy storage
 * resolution) and save (pickle emission + streamed storages), per mg/torchfile.h.
 *
 * Contract: see the header. Reading: the archive folder is the part of the first record's
 * name before its first '/'; a "byteorder" record other than "little" is refused; each
 * tensor's storage "<A>/data/<key>" must be stored and hold at least the storage's bytes.
 * Saving: storages are keyed by their data pointer (or, without data, by the tensor), in
 * the order the emitter first meets them; .data/serialization_id is 40 digits derived from
 * the record names and sizes (PyTorch's readers only report it).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "mg/grow.h"
#include "mg/torchfile.h"

#define FILL_CHUNK ((size_t)8 << 20)
#define DIRECT_CHUNK ((size_t)64 << 20) /* largest piece asked of opts->direct */

struct mg_torch_file {
    mg_map map;
    mg_zip *zip;
    mg_pk_graph *g;
    mg_pk_obj *root;
    char archive[256];
    char label[512];
};

/* ---- reading ---- */

static mg_status archive_name(mg_torch_file *f)
{
    const mg_zip_entry *e = mg_zip_entry_at(f->zip, 0);
    if (!e) return mg_error_set(MG_ERR_FORMAT, "%s: empty ZIP archive", f->label);
    const char *slash = strchr(e->name, '/');
    size_t n = slash ? (size_t)(slash - e->name) : 0;
    if (n == 0 || n >= sizeof f->archive)
        return mg_error_set(MG_ERR_FORMAT, "%s: first record \"%s\" is not inside a folder",
                            f->label, e->name);
    memcpy(f->archive, e->name, n);
    f->archive[n] = 0;
    return MG_OK;
}

static const mg_zip_entry *record(const mg_torch_file *f, const char *name)
{
    char full[600];
    snprintf(full, sizeof full, "%s/%s", f->archive, name);
    return mg_zip_find(f->zip, full);
}

static mg_status check_byteorder(const mg_torch_file *f)
{
    const mg_zip_entry *e = record(f, "byteorder");
    const uint8_t *p;
    if (!e) return MG_OK;
    MG_FORWARD(mg_zip_data(f->zip, e, &p));
    if (e->size == 6 && memcmp(p, "little", 6) == 0) return MG_OK;
    return mg_error_set(MG_ERR_UNSUPPORTED, "%s: byteorder is not \"little\"", f->label);
}

static mg_status resolve(mg_torch_file *f, mg_pk_tensor *t)
{
    char name[300];
    snprintf(name, sizeof name, "data/%s", t->storage_key);
    const mg_zip_entry *e = record(f, name);
    if (!e)
        return mg_error_set(MG_ERR_FORMAT, "%s: storage record \"%s/%s\" is missing", f->label,
                            f->archive, name);
    if (e->size < t->storage_nbytes)
        return mg_error_set(MG_ERR_FORMAT, "%s: storage record \"%s/%s\" has %llu bytes, needs %llu",
                            f->label, f->archive, name, (unsigned long long)e->size,
                            (unsigned long long)t->storage_nbytes);
    return mg_zip_data(f->zip, e, &t->data);
}

static mg_status load(mg_torch_file *f, const uint8_t *data, size_t size)
{
    if (size >= 2 && data[0] == 0x80 && data[1] <= 5)
        return mg_error_set(MG_ERR_UNSUPPORTED,
                            "not supported yet: the legacy (non-zip) torch.save format of %s",
                            f->label);
    if (size < 4 || memcmp(data, "PK\3\4", 4) != 0)
        return mg_error_set(MG_ERR_FORMAT, "%s: offset 0: not a torch.save file (no ZIP signature)",
                            f->label);
    MG_FORWARD(mg_zip_open(&f->zip, data, size, f->label));
    MG_FORWARD(archive_name(f));
    MG_FORWARD(check_byteorder(f));
    const mg_zip_entry *pk = record(f, "data.pkl");
    const uint8_t *p;
    if (!pk) return mg_error_set(MG_ERR_FORMAT, "%s: no \"%s/data.pkl\" record", f->label, f->archive);
    MG_FORWARD(mg_zip_data(f->zip, pk, &p));
    f->g = mg_pk_graph_create();
    if (!f->g) return MG_ERR_NOMEM;
    char label[800];
    snprintf(label, sizeof label, "%s: %s/data.pkl", f->label, f->archive);
    MG_FORWARD(mg_pk_load(f->g, p, (size_t)pk->size, label, &f->root));
    for (size_t i = 0; i < mg_pk_tensor_count(f->g); i++)
        MG_FORWARD(resolve(f, mg_pk_tensor_at(f->g, i)->tensor));
    return MG_OK;
}

mg_status mg_torch_open_mem(mg_torch_file **out, const uint8_t *data, size_t size,
                            const char *label)
{
    *out = mg_calloc(1, sizeof(**out));
    if (!*out) return MG_ERR_NOMEM;
    snprintf((*out)->label, sizeof (*out)->label, "%s", label ? label : "torch file");
    mg_status st = load(*out, data, size);
    if (st != MG_OK) {
        mg_torch_close(*out);
        *out = NULL;
    }
    return st;
}

mg_status mg_torch_open(mg_torch_file **out, const char *path)
{
    mg_map m;
    *out = NULL;
    MG_FORWARD(mg_map_open(&m, path));
    mg_status st = mg_torch_open_mem(out, m.data, m.size, path);
    if (st != MG_OK) {
        mg_map_close(&m);
        return st;
    }
    (*out)->map = m;
    return MG_OK;
}

const uint8_t *mg_torch_mapping(const mg_torch_file *f, size_t *size)
{
    *size = f->map.size;
    return f->map.data;
}

void mg_torch_close(mg_torch_file *f)
{
    if (!f) return;
    mg_pk_graph_free(f->g);
    mg_zip_free(f->zip);
    mg_map_close(&f->map);
    free(f);
}

mg_pk_obj *mg_torch_root(const mg_torch_file *f) { return f->root; }
mg_pk_graph *mg_torch_graph(const mg_torch_file *f) { return f->g; }
const char *mg_torch_archive_name(const mg_torch_file *f) { return f->archive; }

/* ---- saving ---- */

typedef struct {
    const void **ids;        /* hash table: identity pointer */
    size_t *slot_key;        /* key index per table slot */
    size_t cap;
    const mg_pk_tensor **reps; /* one tensor per storage key */
    char (*keys)[24];
    size_t n, kcap;
    mg_status st;
    const char *path;
} key_map;

static size_t hash_ptr(const void *p, size_t cap)
{
    uint64_t x = (uint64_t)(uintptr_t)p * 0x9E3779B97F4A7C15ull;
    return (size_t)(x >> 17) & (cap - 1);
}

static int grow_keys(key_map *km)
{
    if (km->n * 2 + 2 > km->cap) {
        size_t cap = km->cap ? km->cap * 2 : 64;
        const void **ids = mg_calloc(cap, sizeof(*ids));
        size_t *sk = mg_calloc(cap, sizeof(*sk));
        if (!ids || !sk) {
            free(ids), free(sk);
            return 0;
        }
        for (size_t i = 0; i < km->cap; i++) {
            if (!km->ids[i]) continue;
            size_t h = hash_ptr(km->ids[i], cap);
            while (ids[h]) h = (h + 1) & (cap - 1);
            ids[h] = km->ids[i];
            sk[h] = km->slot_key[i];
        }
        free(km->ids), free(km->slot_key);
        km->ids = ids, km->slot_key = sk, km->cap = cap;
    }
    size_t rcap = km->kcap; /* reps and keys grow together */
    if (MG_GROW(km->reps, rcap, km->n + 1, 64) != MG_OK) return 0;
    if (MG_GROW(km->keys, km->kcap, km->n + 1, 64) != MG_OK) return 0;
    return 1;
}

static const char *key_of(void *ctx, const mg_pk_obj *o)
{
    key_map *km = ctx;
    const mg_pk_tensor *t = o->tensor;
    const void *id = t->data ? (const void *)t->data : (const void *)t;
    if (!grow_keys(km)) return NULL;
    size_t h = hash_ptr(id, km->cap);
    while (km->ids[h] && km->ids[h] != id) h = (h + 1) & (km->cap - 1);
    if (km->ids[h]) {
        const mg_pk_tensor *rep = km->reps[km->slot_key[h]];
        if (rep->storage_nbytes != t->storage_nbytes) {
            km->st = mg_error_set(MG_ERR_ARG, "%s: tensors share data but differ in storage size",
                                  km->path);
            return NULL;
        }
        return km->keys[km->slot_key[h]];
    }
    km->ids[h] = id;
    km->slot_key[h] = km->n;
    km->reps[km->n] = t;
    snprintf(km->keys[km->n], sizeof km->keys[0], "%zu", km->n);
    return km->keys[km->n++];
}

static void key_map_free(key_map *km)
{
    free(km->ids);
    free(km->slot_key);
    free(km->reps);
    free(km->keys);
}

static void stem_of(const char *path, char *out, size_t cap)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    snprintf(out, cap, "%s", base);
    char *dot = strrchr(out, '.');
    if (dot && dot != out) *dot = 0;
    if (!out[0]) snprintf(out, cap, "archive");
}

typedef struct {
    mg_zip_writer *w;
    char archive[256];
    uint64_t h_names, h_sizes;
} saver;

static void fnv(uint64_t *h, const void *p, size_t n)
{
    const uint8_t *b = p;
    for (size_t i = 0; i < n; i++) *h = (*h ^ b[i]) * 0x100000001b3ull;
}

static mg_status begin_rec(saver *s, const char *name, uint64_t size)
{
    char full[600];
    snprintf(full, sizeof full, "%s/%s", s->archive, name);
    fnv(&s->h_names, full, strlen(full));
    fnv(&s->h_sizes, &size, sizeof size);
    return mg_zip_writer_begin(s->w, full, size);
}

static mg_status add_rec(saver *s, const char *name, const void *p, size_t n)
{
    MG_FORWARD(begin_rec(s, name, n));
    MG_FORWARD(mg_zip_writer_write(s->w, p, n));
    return mg_zip_writer_end(s->w);
}

/* Bytes from off on of t's storage (at most rest) that the direct or gather callback
 * offers, written from that file or memory: *d of them (0 when neither offers any). */
static mg_status write_direct(saver *s, const mg_pk_tensor *t, const mg_torch_save_opts *o,
                              uint64_t off, uint64_t rest, size_t *d)
{
    int fd = -1, niov = 0;
    uint64_t foff = 0;
    const struct iovec *iov = NULL;
    size_t dmax = rest < DIRECT_CHUNK ? (size_t)rest : DIRECT_CHUNK;
    *d = o->direct ? o->direct(o->ctx, t, off, dmax, &fd, &foff) : 0;
    if (*d > 0) return mg_zip_writer_copy(s->w, fd, foff, *d);
    dmax = rest < FILL_CHUNK ? (size_t)rest : FILL_CHUNK;
    *d = o->gather ? o->gather(o->ctx, t, off, dmax, &iov, &niov) : 0;
    return *d > 0 ? mg_zip_writer_writev(s->w, iov, niov) : MG_OK;
}

static mg_status write_storage(saver *s, const char *key, const mg_pk_tensor *t,
                               const mg_torch_save_opts *o, uint8_t **buf)
{
    char name[40];
    snprintf(name, sizeof name, "data/%s", key);
    if (t->data || t->storage_nbytes == 0) return add_rec(s, name, t->data, (size_t)t->storage_nbytes);
    if (!o || !o->fill) return mg_error_set(MG_ERR_ARG, "tensor without data and no fill callback");
    if (!*buf && !(*buf = mg_malloc(FILL_CHUNK))) return MG_ERR_NOMEM;
    MG_FORWARD(begin_rec(s, name, t->storage_nbytes));
    for (uint64_t off = 0; off < t->storage_nbytes;) {
        size_t n = t->storage_nbytes - off < FILL_CHUNK ? (size_t)(t->storage_nbytes - off) : FILL_CHUNK;
        size_t d = 0;
        MG_FORWARD(write_direct(s, t, o, off, t->storage_nbytes - off, &d));
        if (d > 0) {
            off += d;
            continue;
        }
        MG_FORWARD(o->fill(o->ctx, t, off, *buf, n));
        MG_FORWARD(mg_zip_writer_write(s->w, *buf, n));
        off += n;
    }
    return mg_zip_writer_end(s->w);
}

static mg_status write_records(saver *s, const uint8_t *pkl, size_t pkl_len, const key_map *km,
                               const mg_torch_save_opts *o)
{
    MG_FORWARD(add_rec(s, "data.pkl", pkl, pkl_len));
    MG_FORWARD(add_rec(s, ".format_version", "1", 1));
    MG_FORWARD(add_rec(s, ".storage_alignment", "64", 2));
    MG_FORWARD(add_rec(s, "byteorder", "little", 6));
    uint8_t *buf = NULL;
    mg_status st = MG_OK;
    for (size_t i = 0; i < km->n && st == MG_OK; i++)
        st = write_storage(s, km->keys[i], km->reps[i], o, &buf);
    free(buf);
    MG_FORWARD(st);
    MG_FORWARD(add_rec(s, "version", "3\n", 2));
    char id[48];
    snprintf(id, sizeof id, "%020llu%020llu", (unsigned long long)s->h_names,
             (unsigned long long)s->h_sizes);
    MG_FORWARD(add_rec(s, ".data/serialization_id", id, 40));
    return mg_zip_writer_finish(s->w);
}

/* The archive of root appended to out (named archive), offsets counted from its start. */
static mg_status save_to(mg_out *out, const char *archive, const mg_pk_obj *root,
                         const mg_torch_save_opts *opts)
{
    key_map km = {.path = mg_out_path(out)};
    uint8_t *pkl = NULL;
    size_t pkl_len = 0;
    mg_status st = mg_pk_dump(root, key_of, &km, &pkl, &pkl_len);
    if (st != MG_OK && km.st != MG_OK) st = km.st;
    saver s = {.h_names = 0xcbf29ce484222325ull, .h_sizes = 0xcbf29ce484222325ull};
    snprintf(s.archive, sizeof s.archive, "%s", archive);
    if (st == MG_OK) st = mg_zip_writer_create(&s.w, out);
    if (st == MG_OK) st = write_records(&s, pkl, pkl_len, &km, opts);
    mg_zip_writer_free(s.w);
    free(pkl);
    key_map_free(&km);
    return st;
}

mg_status mg_torch_save_to(mg_out *out, const mg_pk_obj *root, const mg_torch_save_opts *opts)
{
    return save_to(out, opts && opts->archive_name ? opts->archive_name : "archive", root, opts);
}

mg_status mg_torch_save(const char *path, const mg_pk_obj *root, const mg_torch_save_opts *opts)
{
    char archive[256];
    if (opts && opts->archive_name) snprintf(archive, sizeof archive, "%s", opts->archive_name);
    else stem_of(path, archive, sizeof archive);
    mg_out *out = NULL;
    mg_status st = mg_out_create(&out, path);
    if (st == MG_OK) st = save_to(out, archive, root, opts);
    if (st == MG_OK) st = mg_out_commit(out);
    mg_out_free(out);
    return st;
}

/* hf_save.c — Hugging Face saver: config.json, model.safetensors or model-0000i-of-0000n
 * shards + model.safetensors.index.json, and tokenizer files from --tokenizer-dir. Shards
 * are written in parallel, each tensor streamed into its file: rows that lie back to back
 * in an input are copied file to file (copy_file_range; from the mapping when the source
 * has no descriptor for them), rows made of plain pieces of the mapped inputs are written
 * straight from them (pwritev, up to 8 MiB a call; their pages dropped after the write),
 * the others (dtype conversion, transposed tensors) gathered in 8 MiB pieces.
 *
 * Contract (ckpt.h): safetensors metadata {"format": "pt"}; tensors of a shard are laid out
 * by the safetensors writer (save_file order); config.json from mg_model_to_hf_config.
 */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt.h"
#include "mg/file.h"
#include "mg/safetensors.h"


static const ck_tensor *by_name(const ck_file *f, const char *name)
{
    for (size_t i = 0; i < f->n; i++)
        if (strcmp(f->t[i].name, name) == 0) return &f->t[i];
    return NULL;
}

#define STAGE ((size_t)8 << 20)
#define DIRECT_MIN ((uint64_t)1 << 20) /* contiguous input written straight from the mapping */
#define DIRECT_MAX ((uint64_t)64 << 20)

/* Rows from byte off of t that lie back to back in an input (>= DIRECT_MIN of them),
 * copied from its file or written from its mapping: their bytes in *len (0: none). */
static mg_status write_direct(const ck_write_ctx *x, const ck_tensor *t, uint64_t off, uint64_t rowb,
                              mg_st_writer *w, uint64_t *len)
{
    const uint8_t *p = NULL;
    int64_t k = ck_tensor_direct_rows(x->s, t, (int64_t)(off / rowb), (int64_t)(DIRECT_MAX / rowb),
                                      &p);
    uint64_t foff = 0;
    int fd = -1;
    *len = (uint64_t)k * rowb;
    if (*len < DIRECT_MIN) return *len = 0, MG_OK;
    mg_status st;
    if (x->s->file_of && x->s->file_of(x->s, p, &fd, &foff))
        st = mg_st_writer_copy(w, fd, foff, *len);
    else
        st = mg_st_writer_write(w, p, (size_t)*len);
    ck_release_pages(p, (size_t)*len);
    return st;
}

/* Rows from byte off of t (up to STAGE bytes) written from pieces of the mapped inputs by
 * pwritev: their bytes in *len (0 when the row at off cannot be). */
static mg_status write_pieces(const ck_write_ctx *x, const ck_tensor *t, uint64_t off, uint64_t rowb,
                              struct iovec *iov, mg_st_writer *w, uint64_t *len)
{
    int niov = 0;
    int64_t rows = (int64_t)((ck_tensor_bytes(t) - off) / rowb);
    int64_t k = ck_tensor_iov(x->s, t, (int64_t)(off / rowb), rows, STAGE, iov, CK_IOV_MAX, &niov);
    *len = (uint64_t)k * rowb;
    if (k == 0) return MG_OK;
    mg_status st = mg_st_writer_writev(w, iov, niov);
    ck_iov_release(iov, niov);
    return st;
}

/* Bytes [off, n) of t: rows that lie back to back in an input file are copied from it
 * (or written straight from the mapping), rows of pieces of the mappings are written from
 * them, the rest go through buf. */
static mg_status write_rows(const ck_write_ctx *x, ck_reader *rd, const ck_tensor *t, uint8_t *buf,
                            struct iovec *iov, mg_st_writer *w)
{
    uint64_t n = ck_tensor_bytes(t), rowb = (uint64_t)t->gcols * mg_tdtype_size(t->dtype);
    uint64_t off = 0, len = 0;
    mg_status st = MG_OK;
    while (off < n && st == MG_OK) {
        st = write_direct(x, t, off, rowb, w, &len);
        if (st == MG_OK && len == 0) st = write_pieces(x, t, off, rowb, iov, w, &len);
        if (st == MG_OK && len == 0) {
            len = n - off < STAGE ? n - off : (STAGE / rowb) * rowb;
            st = ck_reader_read(rd, t, off, buf, (size_t)len);
            if (st == MG_OK) st = mg_st_writer_write(w, buf, (size_t)len);
        }
        off += len;
    }
    return st;
}

static mg_status write_tensors(const ck_write_ctx *x, const ck_file *f, mg_st_writer *w)
{
    ck_reader rd = {.s = x->s, .threads = x->threads};
    uint8_t *buf = mg_malloc(STAGE);
    struct iovec *iov = mg_malloc(CK_IOV_MAX * sizeof(*iov));
    mg_status st = buf && iov ? MG_OK : MG_ERR_NOMEM;
    for (size_t i = 0; st == MG_OK; i++) {
        const char *name = mg_st_writer_order(w, i);
        if (!name) break;
        const ck_tensor *t = by_name(f, name);
        MG_ASSERT(t);
        uint64_t n = ck_tensor_bytes(t), rowb = (uint64_t)t->gcols * mg_tdtype_size(t->dtype);
        if (t->transpose || rowb == 0 || rowb > STAGE) {
            for (uint64_t off = 0; off < n && st == MG_OK; off += STAGE) {
                size_t len = n - off < STAGE ? (size_t)(n - off) : STAGE;
                st = ck_reader_read(&rd, t, off, buf, len);
                if (st == MG_OK) st = mg_st_writer_write(w, buf, len);
            }
        } else {
            st = write_rows(x, &rd, t, buf, iov, w);
        }
        if (st == MG_OK) ck_tensor_release(x->s, t);
        ck_progress_add(x->prog, 1, n);
    }
    free(buf);
    free(iov);
    ck_reader_free(&rd);
    return st;
}

static mg_status save_shard(void *ctx, size_t i)
{
    const ck_write_ctx *x = ctx;
    const ck_file *f = &x->pl->files[i];
    char path[MG_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", x->root, f->path);
    mg_st_writer *w = NULL;
    MG_FORWARD(mg_st_writer_create(&w, path));
    mg_status st = mg_st_writer_meta(w, "format", "pt");
    for (size_t k = 0; k < f->n && st == MG_OK; k++)
        st = mg_st_writer_declare(w, f->t[k].name, f->t[k].dtype, f->t[k].ndim, f->t[k].shape);
    if (st == MG_OK) st = mg_st_writer_begin(w);
    if (st == MG_OK) st = write_tensors(x, f, w);
    if (st == MG_OK) st = mg_st_writer_finish(w);
    mg_st_writer_free(w);
    return st;
}

static mg_status write_index(const ck_plan *pl, const char *root)
{
    size_t n = 0;
    for (size_t f = 0; f < pl->nfiles; f++) n += pl->files[f].n;
    const char **names = mg_calloc(n, sizeof(*names)), **files = mg_calloc(n, sizeof(*files));
    mg_status st = names && files ? MG_OK : MG_ERR_NOMEM;
    int64_t params = 0;
    size_t k = 0;
    for (size_t f = 0; f < pl->nfiles && st == MG_OK; f++)
        for (size_t i = 0; i < pl->files[f].n; i++, k++) {
            names[k] = pl->files[f].t[i].name;
            files[k] = pl->files[f].path;
            params += pl->files[f].t[i].grows * pl->files[f].t[i].gcols;
        }
    char path[MG_PATH_MAX];
    snprintf(path, sizeof path, "%s/model.safetensors.index.json", root);
    if (st == MG_OK) st = mg_st_index_write(path, names, files, n, pl->bytes, params);
    free(names);
    free(files);
    return st;
}

static int tokenizer_file(const char *name)
{
    static const char *const known[] = {"special_tokens_map.json", "vocab.json", "merges.txt",
                                        "added_tokens.json", "vocab.txt", "spiece.model",
                                        "sentencepiece.bpe.model", "chat_template.jinja",
                                        "generation_config.json"};
    if (strncmp(name, "tokenizer", 9) == 0) return 1;
    for (size_t i = 0; i < sizeof known / sizeof known[0]; i++)
        if (strcmp(name, known[i]) == 0) return 1;
    return 0;
}

static mg_status copy_file(const char *src, const char *dst)
{
    mg_map m;
    MG_FORWARD(mg_map_open(&m, src));
    mg_status st = ck_write_small(dst, m.data ? (const void *)m.data : "", m.size);
    mg_map_close(&m);
    return st;
}

static mg_status copy_tokenizer(const char *dir, const char *root)
{
    DIR *d = opendir(dir);
    if (!d) return mg_error_errno(errno, "%s: cannot open the tokenizer directory", dir);
    mg_status st = MG_OK;
    size_t copied = 0;
    for (struct dirent *e; st == MG_OK && (e = readdir(d));) {
        char src[MG_PATH_MAX], dst[MG_PATH_MAX];
        struct stat sb;
        snprintf(src, sizeof src, "%s/%s", dir, e->d_name);
        if (!tokenizer_file(e->d_name) || stat(src, &sb) != 0 || !S_ISREG(sb.st_mode)) continue;
        snprintf(dst, sizeof dst, "%s/%s", root, e->d_name);
        st = copy_file(src, dst);
        copied++;
    }
    closedir(d);
    MG_RETURN_IF(st == MG_OK && copied == 0, MG_ERR_NOTFOUND,
                 "%s: no tokenizer files (tokenizer.json, tokenizer_config.json, vocab.json, "
                 "...)", dir);
    return st;
}

mg_status ck_write_hf(const ck_plan *pl, const ck_source *s, const char *root, const ck_opts *o,
                      ck_progress *prog)
{
    ck_write_ctx x = {pl, s, root, prog, ck_threads_per_file(pl->nfiles, o->workers)};
    MG_FORWARD(ck_parallel(pl->nfiles, o->workers, save_shard, &x));
    if (pl->nfiles > 1) MG_FORWARD(write_index(pl, root));
    if (o->tokenizer_dir) MG_FORWARD(copy_tokenizer(o->tokenizer_dir, root));
    char *cfg = NULL, path[MG_PATH_MAX];
    MG_FORWARD(mg_model_to_hf_config(&pl->m, &cfg));
    snprintf(path, sizeof path, "%s/config.json", root);
    mg_status st = ck_write_small(path, cfg, strlen(cfg));
    free(cfg);
    return st;
}

/* inspect.c — mg-convert --inspect DIR: a plain-text, sorted report of a checkpoint: format,
 * model, TP/PP, every tensor of every file (name, shape, dtype, TP split rule; torch_dist:
 * every key of the .metadata with its global shape and chunk count), total bytes,
 * and the problems the loader finds (missing shards, shape mismatches, replicated tensors
 * that differ between TP ranks, unknown tensors, unsupported features).
 *
 * Contract (ckpt.h): output on stdout, stable for golden tests (files and tensors sorted
 * bytewise); returns 1 when problems were found.
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "ckpt.h"
#include "mg/mcore_dist.h"
#include "hf_bin.h"
#include "mg/dcp.h"
#include "mg/file.h"
#include "mg/grow.h"
#include "mg/megatron_layout.h"
#include "mg/safetensors.h"
#include "mg/torchfile.h"

typedef struct {
    char *name;
    char desc[160];
    uint64_t bytes;
} row;

typedef struct {
    row *r;
    size_t n, cap;
    uint64_t bytes;
    int problems;
    char *prob[64];
    const ck_source *s; /* NULL when the loader failed */
} report;

static void add_row(report *rp, const char *file, const char *name, const char *desc,
                    uint64_t bytes)
{
    if (MG_GROW(rp->r, rp->cap, rp->n + 1, 256) != MG_OK) abort();
    size_t len = strlen(file) + strlen(name) + 4;
    row *r = &rp->r[rp->n++];
    r->name = malloc(len);
    if (!r->name) abort();
    snprintf(r->name, len, "%s  %s", file, name);
    snprintf(r->desc, sizeof r->desc, "%s", desc);
    r->bytes = bytes;
    rp->bytes += bytes;
}

static void problem(report *rp, const char *msg)
{
    for (int i = 0; i < rp->problems && i < 64; i++)
        if (!strcmp(rp->prob[i], msg)) return;
    if (rp->problems < 64) rp->prob[rp->problems] = strdup(msg);
    rp->problems++;
}

static int cmp_row(const void *a, const void *b)
{
    return strcmp(((const row *)a)->name, ((const row *)b)->name);
}

/* Split rule of a Megatron or HF name, "-" when the schema does not know it. */
static const char *split_of(const report *rp, const char *name, int hf)
{
    if (!rp->s) return "?";
    const char *l = strstr(name, "layers.");
    if (!l) l = strstr(name, ".h.");
    long long layer = l ? strtoll(strchr(l, '.') + 1, NULL, 10) : 0;
    for (size_t i = 0; i < rp->s->nparams; i++) {
        const mg_param *p = &rp->s->params[i];
        if (p->layer > 0) continue;
        char buf[512], hfn[3][256];
        if (hf) {
            mg_param q = *p;
            q.layer = p->layer < 0 ? -1 : layer;
            int n = mg_schema_hf_names(&q, &rp->s->m, hfn);
            for (int k = 0; k < n; k++)
                if (!strcmp(hfn[k], name) || (!strncmp(hfn[k], "transformer.", 12) && !strcmp(hfn[k] + 12, name)))
                    return "-";
            continue;
        }
        for (int v = 0; v < 3; v++) {
            mg_schema_mcore_name(p, (mg_names)v, layer, buf, sizeof buf);
            if (!strcmp(buf, name)) return mg_schema_split_name(p->spec->split);
        }
    }
    return hf ? "(not in schema)" : strstr(name, "_extra_state") ? "-" : "(not in schema)";
}

static void shape_str(char *buf, size_t cap, int ndim, const int64_t *shape)
{
    size_t k = (size_t)snprintf(buf, cap, "[");
    for (int i = 0; i < ndim && k < cap; i++)
        k += (size_t)snprintf(buf + k, cap - k, "%s%lld", i ? ", " : "", (long long)shape[i]);
    if (k < cap) snprintf(buf + k, cap - k, "]");
}

static void add_hf_row(report *rp, const char *file, const mg_st_tensor *t)
{
    char desc[160], shp[96];
    shape_str(shp, sizeof shp, t->ndim, t->shape);
    snprintf(desc, sizeof desc, "%s %s %s", shp, mg_tdtype_name(t->dtype), split_of(rp, t->name, 1));
    add_row(rp, file, t->name, desc, t->nbytes);
}

/* The tensors of DIR/FILE: safetensors, or pytorch_model.bin when bin. */
static void list_st(report *rp, const char *dir, const char *file, int bin)
{
    char path[MG_PATH_MAX];
    snprintf(path, sizeof path, "%s/%s", dir, file);
    mg_st_file *f = NULL;
    ck_bin *b = NULL;
    if ((bin ? ck_bin_open(&b, path) : mg_st_open(&f, path)) != MG_OK) {
        problem(rp, mg_last_error());
        return;
    }
    size_t n = bin ? ck_bin_count(b) : mg_st_count(f);
    for (size_t i = 0; i < n; i++) add_hf_row(rp, file, bin ? ck_bin_at(b, i) : mg_st_at(f, i));
    mg_st_close(f);
    ck_bin_close(b);
}

static int has(const char *dir, const char *name)
{
    char path[MG_PATH_MAX];
    struct stat sb;
    snprintf(path, sizeof path, "%s/%s", dir, name);
    return stat(path, &sb) == 0;
}

/* The HF format the loader reads in dir (for when it fails). */
static const char *hf_format(const char *dir)
{
    int st = has(dir, "model.safetensors.index.json") || has(dir, "model.safetensors");
    int bin = has(dir, "pytorch_model.bin.index.json") || has(dir, "pytorch_model.bin");
    return !st && bin ? "hf pytorch_model.bin" : "hf safetensors";
}

/* Files in the loader's order of preference: safetensors (index, file), then .bin. */
static void list_hf(report *rp, const char *dir)
{
    static const char *const names[2][2] = {
        {"model.safetensors.index.json", "model.safetensors"},
        {"pytorch_model.bin.index.json", "pytorch_model.bin"},
    };
    char path[MG_PATH_MAX];
    for (int bin = 0; bin < 2; bin++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[bin][0]);
        mg_st_index *ix = NULL;
        if (has(dir, names[bin][0]) && mg_st_index_open(&ix, path) == MG_OK) {
            for (size_t i = 0; i < mg_st_index_nfiles(ix); i++)
                list_st(rp, dir, mg_st_index_file(ix, i), bin);
            mg_st_index_free(ix);
            return;
        }
        if (has(dir, names[bin][1])) {
            list_st(rp, dir, names[bin][1], bin);
            return;
        }
    }
    list_st(rp, dir, "model.safetensors", 0); /* reported missing */
}

static void list_model(report *rp, const char *file, const mg_pk_obj *d, const char *prefix)
{
    for (size_t i = 0; d && i < d->n; i++) {
        const mg_pk_obj *k = d->items[2 * i], *v = d->items[2 * i + 1];
        if (k->kind != MG_PK_STR) continue;
        char name[1024], desc[160], shp[96];
        snprintf(name, sizeof name, "%s%s%s", prefix, *prefix ? "." : "", k->str);
        if (v->kind == MG_PK_DICT || v->kind == MG_PK_ODICT) {
            list_model(rp, file, v, name);
            continue;
        }
        if (v->kind != MG_PK_TENSOR) {
            snprintf(desc, sizeof desc, "%s -", mg_pk_kind_name(v->kind));
            add_row(rp, file, name, desc, 0);
            continue;
        }
        const mg_pk_tensor *t = v->tensor;
        shape_str(shp, sizeof shp, t->ndim, t->size);
        snprintf(desc, sizeof desc, "%s %s %s", shp, mg_tdtype_name(t->dtype), split_of(rp, name, 0));
        add_row(rp, file, name, desc, (uint64_t)mg_pk_tensor_numel(t) * mg_tdtype_size(t->dtype));
    }
}

static void list_rank(report *rp, const char *dir, const char *iterdir, const char *rank)
{
    char rel[512], path[MG_PATH_MAX];
    snprintf(rel, sizeof rel, "%s/%s/" MG_MEGATRON_RANK_FILE, iterdir, rank);
    snprintf(path, sizeof path, "%s/%s", dir, rel);
    mg_torch_file *f = NULL;
    if (mg_torch_open(&f, path) != MG_OK) {
        problem(rp, mg_last_error());
        return;
    }
    const mg_pk_obj *root = mg_torch_root(f);
    if (root->kind == MG_PK_DICT || root->kind == MG_PK_ODICT) list_model(rp, rel, mg_pk_get(root, "model"), "");
    mg_torch_close(f);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The iteration folder the tracker names; 0 when the tracker does not name one (the
 * loader has reported why). */
static int iter_dir(const char *dir, char *iterdir)
{
    mg_megatron_iter it;
    if (mg_megatron_tracker_read(dir, &it) != MG_OK) return 0;
    mg_megatron_iter_name(&it, iterdir);
    return 1;
}

/* torch_dist: every key of the .metadata with its global shape and chunk count (the data
 * files are the loader's to check). */
static void list_td(report *rp, const char *iterdir, const char *path)
{
    char mpath[4200];
    mg_map map;
    mg_dcp_meta *m = NULL;
    snprintf(mpath, sizeof mpath, "%s/.metadata", path);
    mg_status st = mg_map_open(&map, mpath);
    if (st == MG_OK) st = mg_dcp_meta_load(&m, map.data, map.size, mpath);
    if (st != MG_OK) problem(rp, mg_last_error());
    mg_map_close(&map);
    if (st != MG_OK) return;
    for (size_t i = 0; i < m->nitems; i++) {
        const mg_dcp_item *it = &m->items[i];
        char desc[160], shp[96];
        uint64_t bytes = it->is_bytes ? it->chunks[0].length
                                      : (uint64_t)mg_dcp_volume(it->ndim, it->size) * mg_tdtype_size(it->dtype);
        shape_str(shp, sizeof shp, it->ndim, it->size);
        if (it->is_bytes) snprintf(desc, sizeof desc, "bytes -");
        else snprintf(desc, sizeof desc, "%s %s %zu chunk%s", shp, mg_tdtype_name(it->dtype),
                      it->nchunks, it->nchunks == 1 ? "" : "s");
        add_row(rp, iterdir, it->key, desc, bytes);
    }
    mg_dcp_meta_free(m);
}

static void list_megatron(report *rp, const char *dir)
{
    char path[MG_PATH_MAX], iterdir[MG_MEGATRON_NAME_MAX];
    if (!iter_dir(dir, iterdir)) return;
    snprintf(path, sizeof path, "%s/%s", dir, iterdir);
    if (mg_mcore_dist_is(path)) {
        list_td(rp, iterdir, path);
        return;
    }
    DIR *d = opendir(path);
    char *names[4096];
    size_t n = 0;
    for (struct dirent *e; d && (e = readdir(d)) && n < 4096;)
        if (!strncmp(e->d_name, MG_MEGATRON_RANK_PREFIX, strlen(MG_MEGATRON_RANK_PREFIX)))
            names[n++] = strdup(e->d_name);
    if (d) closedir(d);
    qsort(names, n, sizeof(char *), cmp_str);
    for (size_t i = 0; i < n; i++) {
        list_rank(rp, dir, iterdir, names[i]);
        free(names[i]);
    }
}

static void print_model(const ck_source *s)
{
    const mg_model_desc *m = &s->m;
    printf("model: %s, layers %lld, hidden %lld, ffn %lld, heads %lld, query groups %lld, "
           "kv channels %lld\n", mg_arch_name(m->arch), (long long)m->num_layers,
           (long long)m->hidden_size, (long long)m->ffn_hidden_size,
           (long long)m->num_attention_heads, (long long)m->num_query_groups,
           (long long)m->kv_channels);
    if (!strncmp(s->format, "hf", 2)) /* unpadded rows: Megatron's padding at the target */
        printf("vocab: %lld (Hugging Face: not padded), padded %lld when converted at TP 1 "
               "(divisible by %lld x TP)\n", (long long)m->vocab_size,
               (long long)mg_model_padded_vocab(m, 1), (long long)m->make_vocab_size_divisible_by);
    else
        printf("vocab: %lld%s, padded %lld, divisible by %lld\n", (long long)m->vocab_size,
               s->vocab_unknown ? " (unknown: padded size used)" : "",
               (long long)(m->padded_vocab_size ? m->padded_vocab_size : m->vocab_size),
               (long long)m->make_vocab_size_divisible_by);
    printf("variant: %s, %s, %s positions, biases %s, qkv bias %s, embeddings %s, dtype %s\n",
           m->rmsnorm ? "RMSNorm" : "LayerNorm", m->swiglu ? "SwiGLU" : "GeLU",
           m->learned_positions ? "learned" : "rope", m->add_bias_linear ? "yes" : "no",
           m->add_qkv_bias ? "yes" : "no", m->tied_embeddings ? "tied" : "untied",
           mg_tdtype_name(m->dtype));
    printf("parallel: tp %lld, pp %lld", (long long)s->tp, (long long)s->pp);
    if (m->pp_first) printf(", first stage %lld layers", (long long)m->pp_first);
    if (m->pp_last) printf(", last stage %lld layers", (long long)m->pp_last);
    printf("\n");
}

/* --summary: a row's kind, "NAME-with-layers-as-* DESC\tFILE" (so that sorting groups the
 * kinds, then their files). */
static char *kind_of(const row *r)
{
    const char *sep = strstr(r->name, "  ");
    const char *name = sep ? sep + 2 : r->name;
    size_t flen = sep ? (size_t)(sep - r->name) : 0;
    size_t cap = strlen(r->name) + strlen(r->desc) + 8;
    char *k = malloc(cap), *w = k;
    if (!k) abort();
    for (const char *p = name; *p;) {
        int at_layer = (!strncmp(p, "layers.", 7) || (!strncmp(p, "h.", 2) && p > name &&
                                                       p[-1] == '.'));
        size_t skip = at_layer ? (p[0] == 'l' ? 7 : 2) : 0;
        if (at_layer && p[skip] >= '0' && p[skip] <= '9') {
            memcpy(w, p, skip);
            w += skip;
            *w++ = '*';
            for (p += skip; *p >= '0' && *p <= '9'; p++) {}
            continue;
        }
        *w++ = *p++;
    }
    snprintf(w, cap - (size_t)(w - k), " %s\t%.*s", r->desc, (int)flen, r->name);
    return k;
}

/* One line per kind: "  KIND SHAPE DTYPE SPLIT  xN in F file(s)". */
static void print_summary(const report *rp)
{
    char **k = malloc((rp->n ? rp->n : 1) * sizeof *k);
    if (!k) abort();
    for (size_t i = 0; i < rp->n; i++) k[i] = kind_of(&rp->r[i]);
    qsort(k, rp->n, sizeof *k, cmp_str);
    printf("tensor kinds:\n");
    for (size_t i = 0, j; i < rp->n; i = j) {
        size_t klen = (size_t)(strchr(k[i], '\t') - k[i]), files = 1;
        for (j = i + 1; j < rp->n && !strncmp(k[j], k[i], klen + 1); j++)
            files += strcmp(strchr(k[j], '\t'), strchr(k[j - 1], '\t')) != 0;
        printf("  %.*s  x%zu in %zu file%s\n", (int)klen, k[i], j - i, files,
               files == 1 ? "" : "s");
    }
    for (size_t i = 0; i < rp->n; i++) free(k[i]);
    free(k);
}

/* When the loader fails: the model from args (rank 0) or config.json alone, for the
 * description and the split column. NULL if that fails too. */
static ck_source *describe_only(const char *dir, int hf)
{
    ck_source *s = mg_calloc(1, sizeof(*s));
    if (!s) return NULL;
    mg_model_init(&s->m);
    s->tp = s->pp = 1;
    char path[MG_PATH_MAX], *text = NULL;
    size_t len = 0;
    mg_status st = MG_ERR_FORMAT;
    if (hf) {
        snprintf(path, sizeof path, "%s/config.json", dir);
        if (mg_read_file(path, &text, &len) == MG_OK) st = mg_model_from_hf_config(&s->m, text, path);
        free(text);
        snprintf(s->format, sizeof s->format, "%s", hf_format(dir));
    } else {
        /* torch: args in rank 0's file (without, then with pipeline parallelism);
         * torch_dist: in common.pt */
        mg_megatron_iter it;
        char iterdir[MG_MEGATRON_NAME_MAX] = "", ip[MG_PATH_MAX];
        int named = mg_megatron_tracker_read(dir, &it) == MG_OK;
        if (named) mg_megatron_iter_name(&it, iterdir);
        snprintf(ip, sizeof ip, "%s/%s", dir, iterdir);
        int td = named && mg_mcore_dist_is(ip);
        if (td) snprintf(s->format, sizeof s->format, "megatron torch_dist (%s)", iterdir);
        else snprintf(s->format, sizeof s->format, "megatron torch");
        for (int k = td ? 2 : 0; named && k < (td ? 3 : 2) && st != MG_OK; k++) {
            mg_torch_file *f = NULL;
            char rel[256];
            if (k == 2) snprintf(rel, sizeof rel, "%s/common.pt", iterdir);
            else if (mg_megatron_rank_file(&it, 0, 0, k, rel, sizeof rel) != MG_OK) continue;
            snprintf(path, sizeof path, "%s/%s", dir, rel);
            if (mg_torch_open(&f, path) != MG_OK) continue;
            const mg_pk_obj *root = mg_torch_root(f);
            const mg_pk_obj *args = root->kind == MG_PK_DICT ? mg_pk_get(root, "args") : NULL;
            if (args) st = mg_model_from_args(&s->m, args, path);
            mg_torch_close(f);
            s->tp = s->m.tp;
            s->pp = s->m.pp;
            if (s->m.vocab_size <= 0) s->m.vocab_size = s->m.padded_vocab_size;
        }
    }
    if (st == MG_OK) st = ck_source_params(s);
    if (st != MG_OK) {
        ck_source_free(s);
        return NULL;
    }
    return s;
}

int ck_inspect(const char *dir, const ck_opts *o)
{
    ck_opts io = *o;
    io.drop_optim = 1;
    ck_source *s = NULL;
    report rp = {0};
    mg_status st = ck_source_open(&s, dir, &io, CK_AUTO);
    char err[MG_ERROR_MAX];
    mg_error_copy(err);
    struct stat sb;
    char probe[MG_PATH_MAX];
    snprintf(probe, sizeof probe, "%s/config.json", dir);
    int hf = stat(probe, &sb) == 0;
    if (!s) s = describe_only(dir, hf);
    printf("format: %s\n", s ? s->format : hf ? hf_format(dir) : "megatron torch");
    if (s) {
        print_model(s);
        rp.s = s;
    }
    if (hf) list_hf(&rp, dir);
    else list_megatron(&rp, dir);
    if (rp.n) qsort(rp.r, rp.n, sizeof(row), cmp_row);
    if (o->summary) print_summary(&rp);
    else printf("tensors:\n");
    for (size_t i = 0; i < rp.n; i++) {
        if (!o->summary) printf("  %s %s\n", rp.r[i].name, rp.r[i].desc);
        free(rp.r[i].name);
    }
    free(rp.r);
    printf("total: %zu tensor%s, %llu bytes\n", rp.n, rp.n == 1 ? "" : "s",
           (unsigned long long)rp.bytes);
    for (size_t i = 0; s && i < s->ndropped; i++) printf("not converted: %s\n", s->dropped[i]);
    if (st != MG_OK) problem(&rp, err);
    for (int i = 0; i < rp.problems && i < 64; i++) {
        printf("problem: %s\n", rp.prob[i]);
        free(rp.prob[i]);
    }
    printf("problems: %d\n", rp.problems);
    ck_source_free(s);
    return rp.problems > 0;
}

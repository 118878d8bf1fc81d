/* checkpoint_dist.c — mg-train's Megatron `torch_dist` checkpoints (--ckpt-format
 * torch_dist): the torch file's content (checkpoint.h) split as megatron-core splits it.
 *
 * Contract (checkpoint_internal.h; docs/FORMATS.md §5.10): each model shard (writer
 * w = pp_rank x TP + tp_rank) writes three data files in parallel: __w_0.distcp its extra
 * states (torch.save([None]); tensor rank 0) and its chunks of the model tensors under
 * stacked keys (global shape, one box per layer at its global number, split by the tensor
 * rank as megatron-core's sharded state dict splits it: boxes_of), __w_1 / __w_2.distcp the
 * AdamW moments under "optimizer.state.exp_avg." / "exp_avg_sq." + the parameter's key
 * (same shape and chunks); tensors replicated over the tensor ranks are written by rank 0,
 * the last stage's tied-embedding copy not at all. Writer 0 also writes common.pt with
 * everything else (args, iteration, optimizer param_groups with the step count, scheduler,
 * FLOPs) and metadata.json; the .metadata is merged from every writer's packed part.
 * Loading reads this rank's boxes from any chunking (mg_dcp_read_box), stacked or per-layer
 * keys, common.pt or common_state, rebuilds the torch file's root dict and hands it to
 * mg_train_ckpt_load_root.
 */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "checkpoint_internal.h"
#include "mg/dcp.h"
#include "mg/mcore_dist.h"
#include "mg/torchfile.h"


static const char *const moments[2] = {"exp_avg", "exp_avg_sq"};

void mg_train_ckpt_remove_dist(const char *dir)
{
    static const char *const names[] = {"__0_0.distcp", "__0_1.distcp", "__0_2.distcp", ".metadata",
                                        "common.pt", "metadata.json"};
    char p[8192];
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, names[i]);
        unlink(p);
    }
}

/* ---- the shards of a tensor ---- */

#define MAXBOX 2 /* a SwiGLU fc1 shard is two boxes (its gate and its up half) */

typedef struct {
    int nd;
    int64_t size[3];                  /* the global shape (the layer axis first when stacked) */
    int64_t off[MAXBOX][3], len[MAXBOX][3];
    int64_t row[MAXBOX];              /* the first row of the rank's tensor each box holds */
    int n;
} shard_boxes;

/* Where tensor t of this rank lies in its global (stacked) tensor, as megatron-core's
 * sharded state dict places it: split along the rows (vocabulary, column-parallel, QKV,
 * SwiGLU's two halves each) or the columns (row-parallel) by the tensor-parallel rank, the
 * layer at its global number. */
static void boxes_of(const mg_gpt *g, const mg_gpt_tensor *t, int stacked, shard_boxes *b)
{
    mg_split sp = t->param.spec->split;
    int s = stacked, ax = sp == MG_SPLIT_ROW && t->ndim == 2 ? s + 1 : s;
    b->nd = s + t->ndim;
    b->size[0] = g->m.num_layers;
    for (int d = 0; d < t->ndim; d++) b->size[s + d] = t->shape[d];
    if (sp != MG_SPLIT_REPLICATED) b->size[ax] *= g->lay.tp;
    b->n = sp == MG_SPLIT_SWIGLU ? 2 : 1;
    for (int k = 0; k < b->n; k++) {
        memcpy(b->len[k], b->size, sizeof b->size);
        memset(b->off[k], 0, sizeof b->off[k]);
        if (s) b->off[k][0] = t->param.layer, b->len[k][0] = 1;
        b->row[k] = 0;
        if (sp == MG_SPLIT_REPLICATED) continue;
        int64_t local = t->shape[ax - s] / b->n;
        b->off[k][ax] = k * (b->size[ax] / 2) + g->lay.tp_rank * local;
        b->len[k][ax] = local;
        b->row[k] = k * local;
    }
}

/* This rank writes t: not a tensor-parallel replica of rank 0's, not the last stage's copy
 * of the tied embeddings (megatron-core saves replica 0 only). */
static int writes(const mg_gpt *g, const mg_gpt_tensor *t)
{
    return !t->tied_copy && (t->param.spec->split != MG_SPLIT_REPLICATED || g->lay.tp_rank == 0);
}

/* ---- save ---- */

#define NFILES 3 /* the model, exp_avg, exp_avg_sq: one data file each, written in parallel */

typedef struct {
    size_t item, chunk;   /* in the meta */
    const float *data;
} entry;

typedef struct {
    const char *dir;
    mg_dcp_meta *m;
    uint32_t file;
    entry *e;
    size_t n;
    mg_status st;
    char msg[MG_ERROR_MAX];
} file_job;

/* Tensor t of buffer buf as chunks of its (stacked) key, prefix prepended, in file job j. */
static mg_status plan_tensor(file_job *j, const mg_gpt *g, const mg_gpt_tensor *t,
                             const float *buf, const char *prefix)
{
    char name[512], key[600];
    int stacked = t->param.layer >= 0;
    shard_boxes b;
    mg_mcore_dist_key(&t->param, MG_NAMES_TE, stacked, name, sizeof name);
    snprintf(key, sizeof key, "%s%s", prefix, name);
    boxes_of(g, t, stacked, &b);
    for (int k = 0; k < b.n; k++) {
        const mg_dcp_item *found = mg_dcp_find(j->m, key);
        mg_dcp_item *it = found ? &j->m->items[found - j->m->items]
                                : mg_dcp_add_tensor(j->m, key, MG_TD_F32, b.nd, b.size);
        mg_dcp_chunk *c = it ? mg_dcp_add_chunk(it, b.off[k], b.len[k]) : NULL;
        if (!c) return MG_ERR_NOMEM;
        c->file = j->file;
        const float *data = buf + t->offset + b.row[k] * (t->ndim == 2 ? t->shape[1] : 1);
        j->e[j->n++] = (entry){(size_t)(it - j->m->items), it->nchunks - 1, data};
    }
    return MG_OK;
}

/* The extra states (TE's, None) of the stage's layers: tensor-parallel rank 0's. */
static mg_status plan_extra_states(mg_dcp_meta *m, const mg_gpt *g)
{
    char key[512];
    for (size_t i = 0; g->lay.tp_rank == 0 && mg_mcore_dist_extra_state(g->m.num_layers, i, key, sizeof key); i++) {
        int64_t layer = (int64_t)(i / 4); /* mg_mcore_dist_extra_state: four per layer */
        if (layer < g->lay.layer_first || layer >= g->lay.layer_first + g->lay.layers) continue;
        mg_dcp_item *it = mg_dcp_add_bytes(m, key);
        mg_dcp_chunk *c = it ? mg_dcp_add_chunk(it, NULL, NULL) : NULL;
        if (!c) return MG_ERR_NOMEM;
        c->file = 0;
    }
    return MG_OK;
}

/* Writer w's files __w_0 (the model), __w_1 / __w_2 (the moments). */
static mg_status plan_files(mg_dcp_meta *m, file_job *jobs, const mg_gpt *g,
                            const mg_gpt_optim *opt, int64_t w)
{
    char key[512], prefix[64] = "";
    for (uint32_t k = 0; k < NFILES; k++) {
        snprintf(key, sizeof key, "__%lld_%u.distcp", (long long)w, k);
        jobs[k].e = mg_calloc(2 * g->nt + 1, sizeof(entry));
        if (!jobs[k].e || mg_dcp_file_index(m, key) != (int64_t)k) return MG_ERR_NOMEM;
    }
    MG_FORWARD(plan_extra_states(m, g));
    for (uint32_t k = 0; k < NFILES; k++) {
        const float *buf = k == 0 ? g->params : k == 1 ? opt->m : opt->v;
        if (k > 0) snprintf(prefix, sizeof prefix, "optimizer.state.%s.", moments[k - 1]);
        for (size_t i = 0; i < g->nt; i++)
            if (writes(g, &g->t[i])) MG_FORWARD(plan_tensor(&jobs[k], g, &g->t[i], buf, prefix));
    }
    return MG_OK;
}
static mg_status write_file(file_job *j)
{
    char p[8192];
    snprintf(p, sizeof p, "%s/%s", j->dir, j->m->files[j->file]);
    mg_out *out = NULL;
    mg_pk_graph *pg = mg_pk_graph_create();
    mg_status s = pg ? mg_out_create(&out, p) : MG_ERR_NOMEM;
    if (s == MG_OK) s = mg_mcore_dist_write_extra_states(j->m, j->file, out);
    for (size_t i = 0; i < j->n && s == MG_OK; i++) {
        mg_dcp_chunk *c = &j->m->items[j->e[i].item].chunks[j->e[i].chunk];
        mg_pk_obj *x = mg_pk_tensor_new(pg, MG_TD_F32, j->m->items[j->e[i].item].ndim, c->len, j->e[i].data);
        s = x ? mg_dcp_write_item(out, x, NULL, c) : MG_ERR_NOMEM;
    }
    if (s == MG_OK) s = mg_out_commit(out);
    mg_out_free(out);
    mg_pk_graph_free(pg);
    return s;
}

static void *file_thread(void *arg)
{
    file_job *j = arg;
    j->st = write_file(j);
    if (j->st != MG_OK) mg_error_copy(j->msg);
    return NULL;
}

/* The data files, one thread each; the first failure is returned. */
static mg_status write_data(mg_dcp_meta *m, const char *dir, const mg_gpt *g,
                            const mg_gpt_optim *opt, int64_t w)
{
    file_job jobs[NFILES];
    pthread_t th[NFILES];
    int started[NFILES] = {0};
    for (uint32_t k = 0; k < NFILES; k++) jobs[k] = (file_job){.dir = dir, .m = m, .file = k};
    mg_status s = plan_files(m, jobs, g, opt, w);
    for (int k = 0; k < NFILES && s == MG_OK; k++)
        started[k] = pthread_create(&th[k], NULL, file_thread, &jobs[k]) == 0;
    for (int k = 0; k < NFILES && s == MG_OK; k++) {
        if (started[k]) pthread_join(th[k], NULL);
        else file_thread(&jobs[k]);
    }
    for (int k = 0; k < NFILES; k++) {
        if (s == MG_OK && jobs[k].st != MG_OK) {
            mg_error_restore(jobs[k].st, jobs[k].msg);
            s = jobs[k].st;
        }
        free(jobs[k].e);
    }
    return s;
}

/* The torch file's root without the model and the optimizer's per-parameter state. */
static mg_status common_of(mg_pk_graph *pg, const mg_pk_obj *root, mg_pk_obj **common)
{
    mg_pk_obj *c = *common = mg_pk_container(pg, MG_PK_DICT);
    if (!c) return MG_ERR_NOMEM;
    for (size_t i = 0; i < root->n; i++) {
        mg_pk_obj *k = root->items[2 * i], *v = root->items[2 * i + 1];
        if (!strcmp(k->str, "model")) continue;
        if (!strcmp(k->str, "optimizer")) {
            mg_pk_obj *o = mg_pk_container(pg, MG_PK_DICT);
            if (!o) return MG_ERR_NOMEM;
            MG_FORWARD(mg_pk_set(pg, o, "param_groups", mg_pk_get(v, "param_groups")));
            mg_pk_obj *scaler = mg_pk_get(v, "grad_scaler");
            if (scaler) MG_FORWARD(mg_pk_set(pg, o, "grad_scaler", scaler));
            v = o;
        }
        MG_FORWARD(mg_pk_set_obj(pg, c, k, v));
    }
    return MG_OK;
}

/* common.pt (the root without the sharded state) and metadata.json: writer 0's. */
static mg_status write_common(const char *dir, const mg_train_opts *o, const mg_gpt *g,
                              const mg_gpt_optim *opt, const mg_train_ckpt_state *st,
                              mg_pk_graph *pg, mg_train_save_bufs *b)
{
    char p[8192];
    mg_pk_obj *root = NULL, *common = NULL;
    MG_FORWARD(mg_train_ckpt_build_root(pg, o, g, opt, st, b, &root));
    MG_FORWARD(common_of(pg, root, &common));
    snprintf(p, sizeof p, "%s/common.pt", dir);
    MG_FORWARD(mg_torch_save(p, common, NULL));
    snprintf(p, sizeof p, "%s/metadata.json", dir);
    mg_out *out = NULL;
    mg_status s = mg_out_create(&out, p);
    if (s == MG_OK) s = mg_out_write(out, mg_mcore_dist_json, strlen(mg_mcore_dist_json));
    if (s == MG_OK) s = mg_out_commit(out);
    mg_out_free(out);
    return s;
}

static mg_status write_part(const char *dir, int64_t w, const mg_train_opts *o, const mg_gpt *g,
                            const mg_gpt_optim *opt, const mg_train_ckpt_state *st,
                            mg_dcp_meta *m)
{
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) /* mg_train_ckpt_begin made it */
        return mg_error_errno(errno, "cannot create the directory %s", dir);
    MG_FORWARD(write_data(m, dir, g, opt, w));
    if (w != 0) return MG_OK;
    mg_pk_graph *pg = mg_pk_graph_create();
    mg_train_save_bufs b = {0};
    mg_status s = pg ? mg_train_save_bufs_init(&b, o, g, opt) : MG_ERR_NOMEM;
    if (s == MG_OK) s = write_common(dir, o, g, opt, st, pg, &b);
    mg_train_save_bufs_free(&b);
    mg_pk_graph_free(pg);
    return s;
}

mg_status mg_train_ckpt_write_dist(const char *dir, const mg_train_ckpt_shard *sh,
                                   const mg_train_opts *o, const mg_gpt *g,
                                   const mg_gpt_optim *opt, const mg_train_ckpt_state *st,
                                   uint8_t **part, size_t *part_len)
{
    MG_RETURN_IF(o->bf16 || o->fp16, MG_ERR_UNSUPPORTED,
                 "not supported yet: --ckpt-format torch_dist with %s (Megatron's "
                 "mixed-precision sharded layout)", o->bf16 ? "--bf16" : "--fp16");
    mg_dcp_meta *m = mg_dcp_meta_create();
    mg_status s = m ? write_part(dir, sh->pp_rank * g->lay.tp + sh->tp_rank, o, g, opt, st, m)
                    : MG_ERR_NOMEM;
    if (s == MG_OK) s = mg_dcp_meta_pack(m, part, part_len);
    mg_dcp_meta_free(m);
    return s;
}

/* The merged parts must form a .metadata its reader takes (mg_dcp_meta_load: every tensor's
 * chunks cover it without overlapping), else nothing is written. */
static mg_status check_cover(const mg_dcp_meta *m, const char *label)
{
    uint8_t *pk = NULL;
    size_t n = 0;
    mg_dcp_meta *back = NULL;
    mg_status s = mg_dcp_meta_dump(m, &pk, &n);
    if (s == MG_OK) s = mg_dcp_meta_load(&back, pk, n, label);
    mg_dcp_meta_free(back);
    free(pk);
    return s;
}

mg_status mg_train_ckpt_write_dist_meta(const char *dir, const uint8_t *const *parts,
                                        const size_t *lens, size_t n)
{
    char p[8192];
    mg_dcp_meta *m = mg_dcp_meta_create();
    mg_status s = m ? MG_OK : MG_ERR_NOMEM;
    for (size_t i = 0; i < n && s == MG_OK; i++) {
        snprintf(p, sizeof p, "%s: writer %zu's part of the .metadata", dir, i);
        if (parts[i]) s = mg_dcp_meta_merge(m, parts[i], lens[i], p);
    }
    snprintf(p, sizeof p, "%s/.metadata", dir);
    if (s == MG_OK) s = check_cover(m, p);
    if (s == MG_OK) s = mg_dcp_write_meta(m, p);
    mg_dcp_meta_free(m);
    return s;
}

/* ---- load ---- */

typedef struct {
    const char *dir;
    const mg_dcp_meta *m;
    mg_pk_graph *pg;  /* the common state's graph: the rebuilt root lives there */
    void **bufs;      /* gathered tensors, freed after loading */
    size_t nbufs;
} loader;

/* Tensor t's shard of key `name` (one layer of it when stacked) gathered into a new tensor
 * node, or NULL in *x when the checkpoint lacks it. */
static mg_status gather(loader *l, const mg_gpt *g, const mg_gpt_tensor *t, const char *name,
                        int stacked, mg_pk_obj **x)
{
    const mg_dcp_item *it = mg_dcp_find(l->m, name);
    shard_boxes b;
    *x = NULL;
    if (!it) return MG_OK;
    boxes_of(g, t, stacked, &b);
    int fits = !it->is_bytes && it->ndim == b.nd && mg_tdtype_size(it->dtype) > 0;
    for (int d = 0; fits && d < b.nd; d++)
        fits = d == 0 && stacked ? t->param.layer < it->size[0] : it->size[d] == b.size[d];
    MG_RETURN_IF(!fits, MG_ERR_FORMAT, "%s/.metadata: %s does not have the global shape of "
                 "the parameter %s at tensor-parallel size %lld", l->dir, name, t->name,
                 (long long)g->lay.tp);
    size_t esize = mg_tdtype_size(it->dtype);
    uint8_t *buf = mg_malloc((size_t)t->numel * esize + 1);
    void **nb = mg_realloc(l->bufs, (l->nbufs + 1) * sizeof(*nb));
    if (!buf || !nb) {
        free(buf);
        return MG_ERR_NOMEM;
    }
    l->bufs = nb;
    l->bufs[l->nbufs++] = buf;
    int64_t cols = t->ndim == 2 ? t->shape[1] : 1;
    for (int k = 0; k < b.n; k++) mg_dcp_read_box(it, b.off[k], b.len[k], buf + (size_t)(b.row[k] * cols) * esize);
    *x = mg_pk_tensor_new(l->pg, it->dtype, t->ndim, t->shape, buf);
    return *x ? MG_OK : MG_ERR_NOMEM;
}

static mg_status rebuild_model(loader *l, const mg_gpt *g, mg_pk_obj *root)
{
    mg_pk_obj *model = mg_pk_container(l->pg, MG_PK_ODICT), *x = NULL;
    if (!model) return MG_ERR_NOMEM;
    for (size_t i = 0; i < g->nt; i++) {
        char name[512];
        int stacked = 0;
        if (!mg_mcore_dist_find(l->m, &g->t[i].param, &stacked, name, sizeof name)) continue;
        MG_FORWARD(gather(l, g, &g->t[i], name, stacked, &x));
        MG_FORWARD(mg_pk_set(l->pg, model, g->t[i].name, x)); /* missing ones: load_root says */
    }
    return mg_pk_set(l->pg, root, "model", model);
}

/* optimizer.state {i: {step, exp_avg, exp_avg_sq}} in the optimizer's parameter order. */
static mg_status rebuild_optim(loader *l, const mg_gpt *g, mg_pk_obj *root)
{
    mg_pk_obj *od = mg_pk_get(root, "optimizer"), *state = mg_pk_container(l->pg, MG_PK_DICT);
    if (!od || (od->kind != MG_PK_DICT && od->kind != MG_PK_ODICT)) return MG_OK; /* load_root says */
    mg_pk_obj *groups = mg_pk_get(od, "param_groups");
    mg_pk_obj *g0 = groups && groups->kind == MG_PK_LIST && groups->n ? groups->items[0] : NULL;
    mg_pk_obj *step = g0 && (g0->kind == MG_PK_DICT || g0->kind == MG_PK_ODICT) ? mg_pk_get(g0, "step") : NULL;
    /* rebuild_model names the model dict in TE naming: the TE spec's order */
    size_t *order = mg_calloc(g->nt ? g->nt : 1, sizeof(*order));
    mg_tname *te = mg_gpt_names(g, MG_NAMES_TE);
    mg_status s = state && order && te ? MG_OK : MG_ERR_NOMEM;
    if (s == MG_OK) mg_train_ckpt_param_order(g, te, order);
    for (size_t i = 0; s == MG_OK && i < g->nt && step; i++) {
        char name[512], key[600];
        int stacked = 0;
        const mg_gpt_tensor *t = &g->t[order[i]];
        mg_pk_obj *e = mg_pk_container(l->pg, MG_PK_DICT), *x[2] = {NULL, NULL};
        mg_mcore_dist_find(l->m, &t->param, &stacked, name, sizeof name);
        for (int k = 0; k < 2 && s == MG_OK; k++) {
            snprintf(key, sizeof key, "optimizer.state.%s.%s", moments[k], name);
            s = gather(l, g, t, key, stacked, &x[k]);
        }
        if (s != MG_OK || !x[0] || !x[1]) continue; /* load_root names the missing state */
        s = e ? mg_pk_set(l->pg, e, "step", step) : MG_ERR_NOMEM;
        for (int k = 0; k < 2 && s == MG_OK; k++) s = mg_pk_set(l->pg, e, moments[k], x[k]);
        mg_pk_obj *index = s == MG_OK ? mg_pk_int(l->pg, (int64_t)i) : NULL;
        if (s == MG_OK) s = index ? mg_pk_set_obj(l->pg, state, index, e) : MG_ERR_NOMEM;
    }
    free(order);
    free(te);
    MG_FORWARD(s);
    return mg_pk_set(l->pg, od, "state", state);
}

mg_status mg_train_ckpt_load_dist(const char *iterpath, int release, mg_gpt *g,
                                  mg_gpt_optim *opt, mg_train_ckpt_state *st)
{
    MG_FORWARD(mg_mcore_dist_check(iterpath));
    mg_dcp_dir *d = NULL;
    mg_torch_file *f = NULL;
    mg_pk_obj *root = NULL;
    MG_FORWARD(mg_dcp_dir_open(&d, iterpath));
    mg_status s = mg_mcore_dist_common(iterpath, d, &f, &root);
    loader l = {iterpath, mg_dcp_dir_meta(d), f ? mg_torch_graph(f) : NULL, NULL, 0};
    if (s == MG_OK) s = rebuild_model(&l, g, root);
    if (s == MG_OK && opt) s = rebuild_optim(&l, g, root);
    if (s == MG_OK) s = mg_train_ckpt_load_root(iterpath, root, release, g, opt, st);
    for (size_t i = 0; i < l.nbufs; i++) free(l.bufs[i]);
    free(l.bufs);
    mg_torch_close(f);
    mg_dcp_dir_close(d);
    return s;
}

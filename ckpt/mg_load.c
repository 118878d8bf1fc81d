/* mg_load.c — Megatron `torch`-format loader: tracker file, one model_optim_rng.pt per
 * (TP, PP) rank, mapped read-only; Megatron-Core TE or local names, or legacy names.
 *
 * Contract (ckpt.h): every shard is checked (present, floating dtype, contiguous, shape equal
 * to the schema's shard shape); replicated tensors must be byte-identical on all TP ranks;
 * `_extra_state`, RNG and scheduler state and a tied output-layer copy are dropped and
 * listed; optimizer state is dropped and listed with --drop-optimizer-state or --saver hf,
 * else kept as the source's Adam moments (ck_source.moments, bound by mg_moments.c: torch's
 * optimizer state dict in every rank file, or the distrib_optim.pt beside it) with rank
 * 0's opt_param_scheduler and 'grad_scaler' (a --bf16/--fp16 run's
 * Float16OptimizerWithFloat16Params state also with its fp32 masters, ck_source.masters);
 * other forms (chained optimizers, megatron-core's nested form without distrib_optim.pt,
 * legacy names, a torch_dist target) are refused; anything else outside
 * the schema, virtual pipeline, torch_dist and MoE are refused. Errors name file and tensor.
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ckpt.h"
#include "mg_load_internal.h"
#include "mg/distrib_optim.h"
#include "mg/file.h"
#include "mg/grow.h"
#include "mg/megatron_layout.h"
#include "mg/torchfile.h"

static void mg_locate(const ck_source *s, size_t pi, int64_t row, int64_t col, ck_loc *loc)
{
    const mg_impl *h = s->impl;
    const mg_param *p = ck_param(s, pi);
    int64_t tp = s->tp, r = 0, lr = row, lc = col;
    int64_t R = p->rows / tp, F = p->rows / 2, Fl = F / tp, C = p->cols / tp;
    switch (p->spec->split) {
    case MG_SPLIT_REPLICATED: break;
    case MG_SPLIT_VOCAB: R = h->vp_s / tp; /* fall through */
    case MG_SPLIT_COLUMN:
    case MG_SPLIT_QKV: r = row / R, lr = row % R; break;
    case MG_SPLIT_SWIGLU:
        if (row < F) r = row / Fl, lr = row % Fl;
        else r = (row - F) / Fl, lr = Fl + (row - F) % Fl;
        break;
    case MG_SPLIT_ROW: r = col / C, lc = col % C; break;
    }
    const shard *x = &h->sh[pi * (size_t)tp + (size_t)r];
    size_t es = mg_tdtype_size(x->dtype);
    loc->p = x->p + (size_t)(lr * x->rowlen + lc) * es;
    loc->step = (int64_t)es;
    loc->avail = x->rowlen - lc;
    loc->dtype = x->dtype;
}

static void mg_release(const ck_source *s, size_t pi)
{
    const mg_impl *h = s->impl;
    const mg_param *p = ck_param(s, pi);
    for (int64_t r = 0; r < s->tp; r++) {
        const shard *x = &h->sh[pi * (size_t)s->tp + (size_t)r];
        int64_t rows = p->spec->split == MG_SPLIT_VOCAB ? h->vp_s / s->tp
                       : p->spec->split == MG_SPLIT_ROW || p->spec->split == MG_SPLIT_REPLICATED
                           ? p->rows : p->rows / s->tp;
        ck_release_pages(x->p, (size_t)(rows * x->rowlen) * mg_tdtype_size(x->dtype));
    }
}

static int mg_file_of(const ck_source *s, const uint8_t *p, int *fd, uint64_t *off)
{
    const mg_impl *h = s->impl;
    for (size_t i = 0; i < h->nfiles; i++) {
        size_t n = 0;
        const uint8_t *base = h->files[i].f ? mg_torch_mapping(h->files[i].f, &n) : NULL;
        if (h->files[i].fd1 <= 0 || !base || p < base || p >= base + n) continue;
        *fd = h->files[i].fd1 - 1;
        *off = (uint64_t)(p - base);
        return 1;
    }
    return 0;
}

static void mg_close(ck_source *s)
{
    mg_impl *h = s->impl;
    if (!h) return;
    for (size_t i = 0; i < h->nfiles; i++) {
        mg_torch_close(h->files[i].f);
        mg_torch_close(h->files[i].dopt);
        if (h->files[i].fd1 > 0) close(h->files[i].fd1 - 1);
        free(h->files[i].e);
    }
    free(h->files);
    free(h->sh);
    mg_pk_graph_free(h->names);
    free(h);
}

static int is_file(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0 && S_ISREG(st.st_mode);
}

static mg_status add_entry(rank_file *rf, const char *name, const mg_pk_obj *o)
{
    MG_FORWARD(MG_GROW(rf->e, rf->cap, rf->n + 1, 256));
    rf->e[rf->n++] = (entry){name, o, 0};
    return MG_OK;
}

/* Flattens nested dicts (legacy layout) into "a.b.c" names. */
static mg_status flatten(mg_impl *h, rank_file *rf, const mg_pk_obj *d, const char *prefix,
                         int depth)
{
    MG_RETURN_IF(depth > 8, MG_ERR_FORMAT, "%s: model state nested too deeply", rf->rel);
    for (size_t i = 0; i < d->n; i++) {
        const mg_pk_obj *k = d->items[2 * i], *v = d->items[2 * i + 1];
        MG_RETURN_IF(k->kind != MG_PK_STR, MG_ERR_FORMAT, "%s: non-string key in the model "
                     "state", rf->rel);
        char buf[1024];
        snprintf(buf, sizeof buf, "%s%s%s", prefix, *prefix ? "." : "", k->str);
        mg_pk_obj *name = mg_pk_str(h->names, buf);
        if (!name) return MG_ERR_NOMEM;
        if (v->kind == MG_PK_DICT || v->kind == MG_PK_ODICT) MG_FORWARD(flatten(h, rf, v, name->str, depth + 1));
        else MG_FORWARD(add_entry(rf, name->str, v));
    }
    return MG_OK;
}

static int cmp_entry(const void *a, const void *b)
{
    return strcmp(((const entry *)a)->name, ((const entry *)b)->name);
}

static entry *lookup(rank_file *rf, const char *name)
{
    entry key = {name, NULL, 0};
    if (!rf->n) return NULL;
    return bsearch(&key, rf->e, rf->n, sizeof(entry), cmp_entry);
}

/* Optimizer state that is not dropped: torch's {'state': {i: {exp_avg, exp_avg_sq, step}},
 * 'param_groups'} (Megatron's FP32Optimizer; mg-train's) in every rank file, or nested in a
 * --bf16/--fp16 run's {'optimizer', 'fp32_from_fp16_params'} (with its masters), kept as the
 * source's moments (bind_moments); other forms are refused. */
static mg_status moments_kept(ck_source *s, const rank_file *rf, const mg_pk_obj *opt,
                              const ck_opts *o, int first)
{
    int mixed = opt && opt->kind != MG_PK_LIST && mg_pk_get(opt, "fp32_from_fp16_params");
    const char *why = o->torch_dist ? "into a torch_dist checkpoint"
                      : opt && opt->kind == MG_PK_LIST ? "of several chained optimizers"
                      : mixed && rf->dopt ? "of a --bf16/--fp16 run beside distrib_optim.pt"
                      : opt && !rf->dopt && !mixed && !mg_pk_get(opt, "state") &&
                              mg_pk_get(opt, "optimizer")
                          ? "in megatron-core's nested form without distrib_optim.pt (a "
                            "mixed-precision optimizer)"
                          : NULL;
    MG_RETURN_IF(why, MG_ERR_UNSUPPORTED, "not supported yet: converting optimizer state %s "
                 "(%s); pass --drop-optimizer-state to drop it", why, rf->rel);
    MG_RETURN_IF(!first && !s->moments, MG_ERR_FORMAT, "%s holds optimizer state, rank 0 "
                 "does not", rf->rel);
    MG_RETURN_IF(!first && !rf->dopt != !s->dist_optim, MG_ERR_FORMAT, "%s: %s beside it, "
                 "rank 0's rank file has %s", rf->rel, rf->dopt ? "a distrib_optim.pt" : "no "
                 "distrib_optim.pt", s->dist_optim ? "one" : "none");
    MG_RETURN_IF(!first && mixed != s->masters, MG_ERR_FORMAT, "%s: optimizer state of "
                 "another class than rank 0's (fp32_from_fp16_params %s)", rf->rel,
                 mixed ? "present" : "absent");
    /* the distributed optimizer's groups: DistributedOptimizer.state_dict()'s; a --bf16/--fp16
     * run's torch state: Float16OptimizerWithFloat16Params.state_dict()'s 'optimizer' */
    const mg_pk_obj *inner = (rf->dopt || mixed) && opt ? mg_pk_get(opt, "optimizer") : opt;
    const mg_pk_obj *state = opt ? mg_pk_get(mixed ? inner : opt, "state") : NULL;
    const mg_pk_obj *groups = inner ? mg_pk_get(inner, "param_groups") : NULL;
    MG_RETURN_IF(!rf->dopt && (!state || state->kind != MG_PK_DICT), MG_ERR_FORMAT,
                 "%s: optimizer state without torch's 'state' dict", rf->rel);
    MG_RETURN_IF(!groups || groups->kind != MG_PK_LIST, MG_ERR_FORMAT, "%s: optimizer state "
                 "without a 'param_groups' list", rf->rel);
    if (first) {
        s->moments = 1;
        s->masters = mixed;
        s->dist_optim = rf->dopt != NULL;
        s->optim_groups = groups;
        s->optim_scaler = mg_pk_get(opt, "grad_scaler");
        s->optim_step = -1;
    }
    if (rf->dopt && state)
        MG_FORWARD(ck_source_drop(s, "optimizer.state (%s): mg-train's copy of the moments "
                                  "that distrib_optim.pt holds", rf->rel));
    return MG_OK;
}

static mg_status top_level(ck_source *s, rank_file *rf, const mg_pk_obj *root, const ck_opts *o,
                           int first)
{
    MG_RETURN_IF(root->kind != MG_PK_DICT && root->kind != MG_PK_ODICT, MG_ERR_FORMAT,
                 "%s: the pickled object is a %s, not a dict", rf->rel,
                 mg_pk_kind_name(root->kind));
    MG_RETURN_IF(mg_pk_get(root, "model0"), MG_ERR_UNSUPPORTED,
                 "not supported yet: virtual pipeline checkpoints (%s has model0)", rf->rel);
    const mg_pk_obj *ver = mg_pk_get(root, "checkpoint_version");
    double version = !ver ? 0 : ver->kind == MG_PK_FLOAT ? ver->f : ver->kind == MG_PK_INT ? (double)ver->i : -1;
    MG_RETURN_IF(version < 2.0, MG_ERR_UNSUPPORTED, "not supported yet: checkpoint_version %g "
                 "(%s; the QKV row order changed in 2.0)", version, rf->rel);
    const mg_pk_obj *opt = mg_pk_get(root, "optimizer");
    int has_opt = opt && opt->kind != MG_PK_NONE;
    if (has_opt && ck_drops_optimizer(o))
        MG_FORWARD(ck_source_drop(s, "optimizer (%s): optimizer state", rf->rel));
    else if (has_opt || s->moments)
        MG_FORWARD(moments_kept(s, rf, opt, o, first));
    static const char *const extra[] = {"rng_state", "opt_param_scheduler", "lr_scheduler",
                                        "rerun_state_machine"};
    for (int i = 0; i < 4; i++)
        if (first && mg_pk_get(root, extra[i]) && !(s->moments && i == 1)) /* kept with them */
            MG_FORWARD(ck_source_drop_notable(s, "%s (%s and the other ranks): training state",
                                              extra[i], rf->rel));
    const mg_pk_obj *model = mg_pk_get(root, "model");
    MG_RETURN_IF(!model || (model->kind != MG_PK_DICT && model->kind != MG_PK_ODICT),
                 MG_ERR_FORMAT, "%s: no 'model' state dict", rf->rel);
    return MG_OK;
}

/* Every rank must describe the same model and layout as rank 0. */
static mg_status same_args(const ck_source *s, const rank_file *rf, const mg_pk_obj *root)
{
    static const char *const keys[] = {"num_layers", "hidden_size", "num_attention_heads",
                                       "ffn_hidden_size", "num_query_groups",
                                       "tensor_model_parallel_size",
                                       "pipeline_model_parallel_size", "padded_vocab_size"};
    const mg_pk_obj *args = mg_pk_get(root, "args");
    const int64_t mine[] = {s->m.num_layers, s->m.hidden_size, s->m.num_attention_heads,
                            s->m.ffn_hidden_size, -1, s->tp, s->pp, -1};
    MG_RETURN_IF(!args || args->kind != MG_PK_NAMESPACE, MG_ERR_FORMAT,
                 "%s: no 'args' Namespace", rf->rel);
    for (int i = 0; i < 8; i++) {
        const mg_pk_obj *v = mg_pk_get(args, keys[i]);
        if (mine[i] < 0 || !v || v->kind != MG_PK_INT) continue;
        MG_RETURN_IF(v->i != mine[i], MG_ERR_FORMAT, "%s: args.%s is %lld, rank 0 says %lld",
                     rf->rel, keys[i], (long long)v->i, (long long)mine[i]);
    }
    return MG_OK;
}

static mg_status open_rank(ck_source *s, mg_impl *h, rank_file *rf, const char *dir,
                           const ck_opts *o, int first)
{
    char path[MG_PATH_MAX], dpath[MG_PATH_MAX];
    (void)dir;
    snprintf(path, sizeof path, "%s", rf->rel);
    MG_RETURN_IF(!is_file(path), MG_ERR_NOTFOUND, "%s: missing shard (expected for TP %lld x "
                 "PP %lld)", path, (long long)s->tp, (long long)s->pp);
    snprintf(dpath, sizeof dpath, "%s", path);
    char *slash = strrchr(dpath, '/');
    snprintf(slash + 1, sizeof dpath - (size_t)(slash + 1 - dpath), MG_DISTRIB_OPTIM_FILE);
    if (is_file(dpath) && ck_drops_optimizer(o))
        MG_FORWARD(ck_source_drop(s, "distrib_optim.pt (%s): optimizer state", dpath));
    else if (is_file(dpath))
        MG_FORWARD(mg_torch_open(&rf->dopt, dpath));
    MG_FORWARD(mg_torch_open(&rf->f, path));
    rf->fd1 = open(path, O_RDONLY | O_CLOEXEC) + 1; /* failure: 0, copies from memory */
    const mg_pk_obj *root = mg_torch_root(rf->f);
    MG_FORWARD(top_level(s, rf, root, o, first));
    MG_FORWARD(same_args(s, rf, root));
    MG_FORWARD(flatten(h, rf, mg_pk_get(root, "model"), "", 0));
    if (rf->n) qsort(rf->e, rf->n, sizeof(entry), cmp_entry);
    for (size_t i = 1; i < rf->n; i++)
        MG_RETURN_IF(strcmp(rf->e[i - 1].name, rf->e[i].name) == 0, MG_ERR_FORMAT,
                     "%s: tensor %s appears twice", rf->rel, rf->e[i].name);
    return MG_OK;
}

static mg_status first_file(ck_source *s, const char *dir, const mg_megatron_iter *it,
                            mg_torch_file **f, char *rel, size_t cap)
{
    char path[MG_PATH_MAX], iterdir[MG_MEGATRON_NAME_MAX];
    for (int pipeline = 0; pipeline <= 1; pipeline++) {
        MG_FORWARD(mg_megatron_rank_file(it, 0, 0, pipeline, rel, cap));
        snprintf(path, sizeof path, "%s/%s", dir, rel);
        if (is_file(path)) return mg_torch_open(f, path);
    }
    mg_megatron_iter_name(it, iterdir);
    snprintf(path, sizeof path, "%s/%s/metadata.json", dir, iterdir);
    MG_RETURN_IF(is_file(path), MG_ERR_UNSUPPORTED,
                 "not supported yet: torch_dist checkpoints (%s)", path);
    (void)s;
    return mg_error_set(MG_ERR_NOTFOUND, "%s/%s: no mp_rank_00/model_optim_rng.pt or "
                        "mp_rank_00_000/model_optim_rng.pt", dir, iterdir);
}

/* Reads args from rank 0 and sets the model, its layout and the vocabulary. */
static mg_status read_args(ck_source *s, mg_impl *h, const char *dir, const mg_megatron_iter *it,
                           const ck_opts *o)
{
    mg_torch_file *f = NULL;
    char rel[256];
    MG_FORWARD(first_file(s, dir, it, &f, rel, sizeof rel));
    const mg_pk_obj *root = mg_torch_root(f);
    const mg_pk_obj *args = root->kind == MG_PK_DICT || root->kind == MG_PK_ODICT
                                ? mg_pk_get(root, "args") : NULL;
    char label[MG_PATH_MAX];
    snprintf(label, sizeof label, "%s/%s", dir, rel);
    mg_status st = args ? mg_model_from_args(&s->m, args, label)
                        : mg_error_set(MG_ERR_FORMAT, "%s: no 'args' Namespace", label);
    mg_torch_close(f);
    MG_FORWARD(st);
    s->tp = s->m.tp;
    s->pp = s->m.pp;
    MG_RETURN_IF(s->tp < 1 || s->pp < 1 || s->tp > 4096 || s->pp > 4096, MG_ERR_FORMAT,
                 "%s: bad tensor/pipeline parallel sizes", label);
    st = mg_schema_check_tp(&s->m, s->tp);
    if (st != MG_OK) {
        mg_error_prefix("%s", label);
        return st == MG_ERR_ARG ? MG_ERR_FORMAT : st;
    }
    h->vp_s = s->vocab_rows = s->m.padded_vocab_size;
    if (o->true_vocab > 0) s->m.vocab_size = o->true_vocab;
    if (s->m.vocab_size <= 0) {
        s->vocab_unknown = 1;
        s->m.vocab_size = h->vp_s;
    }
    MG_RETURN_IF(h->vp_s <= 0 || h->vp_s % s->tp || s->m.vocab_size > h->vp_s, MG_ERR_FORMAT,
                 "%s: padded_vocab_size %lld does not fit vocabulary %lld over %lld ranks",
                 label, (long long)h->vp_s, (long long)s->m.vocab_size, (long long)s->tp);
    return MG_OK;
}

/* Stage holding parameter p and its local layer index. */
mg_status ck_mg_stage_of(const ck_source *s, const mg_param *p, int64_t *stage, int64_t *local)
{
    *local = 0;
    if (p->spec->stage == MG_STAGE_FIRST) return *stage = 0, MG_OK;
    if (p->spec->stage == MG_STAGE_LAST) return *stage = s->pp - 1, MG_OK;
    for (int64_t q = 0; q < s->pp; q++) {
        int64_t off, cnt;
        MG_FORWARD(mg_schema_pp_layers(s->m.num_layers, s->pp, s->m.pp_first, s->m.pp_last, q,
                                       &off, &cnt));
        if (p->layer >= off && p->layer < off + cnt) {
            *stage = q;
            *local = p->layer - off;
            return MG_OK;
        }
    }
    return mg_error_set(MG_ERR_FORMAT, "layer %lld is on no pipeline stage", (long long)p->layer);
}

mg_status ck_mg_check_shard(const ck_source *s, const mg_impl *h, const mg_param *p,
                           const rank_file *rf, const entry *e, shard *out)
{
    MG_RETURN_IF(e->obj->kind != MG_PK_TENSOR, MG_ERR_FORMAT, "%s: %s is a %s, not a tensor",
                 rf->rel, e->name, mg_pk_kind_name(e->obj->kind));
    const mg_pk_tensor *t = e->obj->tensor;
    int64_t shape[2];
    int nd;
    mg_schema_shard_shape(p, &s->m, s->tp, h->vp_s, shape, &nd);
    int ok = t->ndim == nd && t->size[0] == shape[0] && (nd == 1 || t->size[1] == shape[1]);
    MG_RETURN_IF(!ok, MG_ERR_FORMAT, "%s: tensor %s: shape [%lld%s%lld] does not match the "
                 "schema (expected [%lld%s%lld] for TP %lld)", rf->rel, e->name,
                 t->ndim > 0 ? (long long)t->size[0] : 0LL, t->ndim > 1 ? ", " : "",
                 t->ndim > 1 ? (long long)t->size[1] : 0LL, (long long)shape[0],
                 nd == 2 ? ", " : "", nd == 2 ? (long long)shape[1] : 0LL, (long long)s->tp);
    MG_RETURN_IF(t->dtype != MG_TD_F32 && t->dtype != MG_TD_BF16 && t->dtype != MG_TD_F16,
                 MG_ERR_UNSUPPORTED, "not supported yet: %s: tensor %s has dtype %s", rf->rel,
                 e->name, mg_tdtype_name(t->dtype));
    int contiguous = t->stride[nd - 1] == 1 && (nd == 1 || t->stride[0] == shape[1]);
    MG_RETURN_IF(!contiguous, MG_ERR_UNSUPPORTED, "not supported yet: %s: tensor %s is not "
                 "contiguous", rf->rel, e->name);
    int64_t numel = shape[0] * shape[1];
    MG_RETURN_IF(!t->data || t->offset < 0 || t->offset + numel > t->storage_numel,
                 MG_ERR_FORMAT, "%s: tensor %s: data outside its storage", rf->rel, e->name);
    *out = (shard){t->data + (size_t)t->offset * mg_tdtype_size(t->dtype), t->dtype,
                   nd == 2 ? shape[1] : 1};
    return MG_OK;
}

/* The entry of p under its TE, local or legacy name; *found: the naming that matched. */
static entry *find_param(rank_file *rf, const mg_param *p, int64_t local, mg_names *found)
{
    static const mg_names order[] = {MG_NAMES_TE, MG_NAMES_LOCAL, MG_NAMES_LEGACY};
    for (int i = 0; i < 3; i++) {
        char name[512];
        mg_schema_mcore_name(p, order[i], local, name, sizeof name);
        entry *e = lookup(rf, name);
        if (e) {
            *found = order[i];
            return e;
        }
    }
    return NULL;
}

/* The source's naming: that of its first tensor whose TE and local names differ (a layer
 * norm); TE when there is none. */
static void note_naming(ck_source *s, const mg_param *p, mg_names found, int *seen)
{
    char te[512], local[512];
    if (*seen) return;
    mg_schema_mcore_name(p, MG_NAMES_TE, 0, te, sizeof te);
    mg_schema_mcore_name(p, MG_NAMES_LOCAL, 0, local, sizeof local);
    if (found == MG_NAMES_LEGACY || strcmp(te, local)) {
        s->names = found;
        *seen = 1;
    }
}

static mg_status same_replica(const mg_param *p, const shard *a, const shard *b,
                              const rank_file *rf, const entry *e)
{
    size_t n = (size_t)(p->rows * p->cols) * mg_tdtype_size(a->dtype);
    MG_RETURN_IF(a->dtype != b->dtype || memcmp(a->p, b->p, n) != 0, MG_ERR_FORMAT,
                 "%s: tensor %s differs from tensor-parallel rank 0 (it must be replicated)",
                 rf->rel, e->name);
    return MG_OK;
}

static mg_status bind_params(ck_source *s, mg_impl *h)
{
    h->sh = mg_calloc(s->nparams * (size_t)s->tp * CK_COPIES(s), sizeof(shard));
    if (!h->sh) return MG_ERR_NOMEM;
    int seen = 0;
    for (size_t i = 0; i < s->nparams; i++) {
        const mg_param *p = &s->params[i];
        int64_t stage = 0, local = 0;
        MG_FORWARD(ck_mg_stage_of(s, p, &stage, &local));
        for (int64_t r = 0; r < s->tp; r++) {
            rank_file *rf = &h->files[stage * s->tp + r];
            mg_names found = MG_NAMES_TE;
            entry *e = find_param(rf, p, local, &found);
            char name[512];
            mg_schema_mcore_name(p, MG_NAMES_TE, local, name, sizeof name);
            MG_RETURN_IF(!e, MG_ERR_FORMAT, "%s: tensor %s is missing", rf->rel, name);
            note_naming(s, p, found, &seen);
            e->used = 1;
            shard *x = &h->sh[i * (size_t)s->tp + (size_t)r];
            MG_FORWARD(ck_mg_check_shard(s, h, p, rf, e, x));
            if (r > 0 && p->spec->split == MG_SPLIT_REPLICATED)
                MG_FORWARD(same_replica(p, &h->sh[i * (size_t)s->tp], x, rf, e));
        }
    }
    return MG_OK;
}

static int ends(const char *s, const char *suf)
{
    size_t n = strlen(s), k = strlen(suf);
    return n >= k && strcmp(s + n - k, suf) == 0;
}

/* A tied output-layer copy on the last stage must equal the embedding shard of its rank. */
static mg_status tied_copy(ck_source *s, mg_impl *h, const rank_file *rf, const entry *e,
                           size_t r)
{
    shard x;
    MG_FORWARD(ck_mg_check_shard(s, h, &s->params[0], rf, e, &x));
    const shard *emb = &h->sh[r];
    size_t n = (size_t)(h->vp_s / s->tp * x.rowlen) * mg_tdtype_size(x.dtype);
    MG_RETURN_IF(x.dtype != emb->dtype || memcmp(x.p, emb->p, n) != 0, MG_ERR_FORMAT,
                 "%s: %s (tied output layer) differs from the word embeddings", rf->rel,
                 e->name);
    return ck_source_drop(s, "%s (%s): tied copy of the word embeddings", e->name, rf->rel);
}

static mg_status leftovers(ck_source *s, mg_impl *h)
{
    size_t extra = 0;
    for (size_t f = 0; f < h->nfiles; f++) {
        rank_file *rf = &h->files[f];
        int last = (int64_t)f / s->tp == s->pp - 1;
        for (size_t i = 0; i < rf->n; i++) {
            entry *e = &rf->e[i];
            if (e->used) continue;
            if (ends(e->name, "._extra_state")) extra++;
            else if (last && s->pp > 1 && s->m.tied_embeddings &&
                     (strcmp(e->name, "output_layer.weight") == 0 ||
                      strcmp(e->name, "word_embeddings_for_head.weight") == 0))
                MG_FORWARD(tied_copy(s, h, rf, e, f % (size_t)s->tp));
            else
                return mg_error_set(MG_ERR_UNSUPPORTED, "not supported yet: tensor %s in %s "
                                    "is not part of the %s schema", e->name, rf->rel,
                                    mg_arch_name(s->m.arch));
        }
    }
    if (extra) MG_FORWARD(ck_source_drop(s, "%zu _extra_state entries (all ranks): "
                                         "TransformerEngine/linear metadata", extra));
    return MG_OK;
}

static mg_status load_all(ck_source *s, mg_impl *h, const char *dir, const ck_opts *o)
{
    char iterdir[MG_MEGATRON_NAME_MAX];
    mg_megatron_iter it;
    MG_FORWARD(mg_megatron_tracker_read(dir, &it));
    mg_megatron_iter_name(&it, iterdir);
    snprintf(s->format, sizeof s->format, "megatron torch (%s)", iterdir);
    h->names = mg_pk_graph_create();
    if (!h->names) return MG_ERR_NOMEM;
    MG_FORWARD(read_args(s, h, dir, &it, o));
    MG_FORWARD(ck_source_params(s));
    h->nfiles = (size_t)(s->tp * s->pp);
    h->files = mg_calloc(h->nfiles, sizeof(rank_file));
    if (!h->files) return MG_ERR_NOMEM;
    for (int64_t p = 0; p < s->pp; p++)
        for (int64_t r = 0; r < s->tp; r++) {
            rank_file *rf = &h->files[p * s->tp + r];
            char rel[512];
            MG_FORWARD(mg_megatron_rank_file(&it, r, p, s->pp > 1, rel, sizeof rel));
            snprintf(rf->rel, sizeof rf->rel, "%s/%s", dir, rel);
            MG_FORWARD(open_rank(s, h, rf, dir, o, p == 0 && r == 0));
        }
    MG_FORWARD(bind_params(s, h));
    if (s->moments) MG_FORWARD(ck_mg_bind_moments(s, h));
    s->iteration = it.release ? -1 : it.iteration;
    s->m.dtype = h->sh[0].dtype; /* what the tensors hold, whatever args say */
    s->root0 = mg_torch_root(h->files[0].f);
    s->args = mg_pk_get(s->root0, "args");
    return leftovers(s, h);
}

mg_status ck_mg_open(ck_source **out, const char *dir, const ck_opts *o)
{
    ck_source *s = ck_source_alloc(sizeof(mg_impl));
    if (!s) return MG_ERR_NOMEM;
    mg_impl *h = s->impl;
    s->locate = mg_locate;
    s->close = mg_close;
    s->release = mg_release;
    s->file_of = mg_file_of;
    mg_status st = load_all(s, h, dir, o);
    if (st != MG_OK) {
        ck_source_free(s);
        return st;
    }
    *out = s;
    return MG_OK;
}

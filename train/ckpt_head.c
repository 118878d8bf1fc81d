/* ckpt_head.c — ckpt_head.h: the iteration folder of a --load, its format and layout, the
 * first model shard's args and scheduler state. */
#include "ckpt_head.h"

#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "mg/mcore_dist.h"

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

static mg_status join(char *buf, const char *dir, const char *name)
{
    MG_RETURN_IF((size_t)snprintf(buf, MG_PATH_MAX, "%s/%s", dir, name) >= MG_PATH_MAX,
                 MG_ERR_LIMIT, "--load: %s/%s: path too long", dir, name);
    return MG_OK;
}

/* The iterations dir holds ("3, 6" or "none"), in the order the folder lists them sorted. */
static void list_iters(const char *dir, char *buf, size_t cap)
{
    int64_t v[64];
    size_t n = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d)) && n < 64;) {
        long long x;
        char tail;
        if (sscanf(e->d_name, "iter_%lld%c", &x, &tail) == 1) v[n++] = (int64_t)x;
    }
    if (d) closedir(d);
    for (size_t i = 1; i < n; i++) /* insertion sort: a handful of folders */
        for (size_t j = i; j > 0 && v[j - 1] > v[j]; j--) {
            int64_t t = v[j];
            v[j] = v[j - 1];
            v[j - 1] = t;
        }
    snprintf(buf, cap, "none");
    for (size_t i = 0, at = 0; i < n && at < cap; i++)
        at += (size_t)snprintf(buf + at, cap - at, "%s%lld", i ? ", " : "", (long long)v[i]);
}

/* A Hugging Face model where a Megatron checkpoint was expected. */
static mg_status not_megatron(const char *dir)
{
    char cfg[MG_PATH_MAX];
    MG_FORWARD(join(cfg, dir, "config.json"));
    MG_RETURN_IF(exists(cfg), MG_ERR_ARG,
                 "--load %s: this is a Hugging Face model (config.json, no %s): convert it "
                 "first with mg-convert --load-dir %s --save-dir %s-megatron, then --load "
                 "%s-megatron", dir, MG_MEGATRON_TRACKER, dir, dir, dir);
    return MG_OK;
}

mg_status mg_train_ckpt_iter(const char *dir, int64_t step, mg_megatron_iter *it)
{
    char tracker[MG_PATH_MAX], folder[MG_PATH_MAX], name[MG_MEGATRON_NAME_MAX], have[512];
    MG_RETURN_IF(!mg_is_dir(dir), MG_ERR_NOTFOUND, "--load %s: no such folder", dir);
    MG_FORWARD(join(tracker, dir, MG_MEGATRON_TRACKER));
    if (step < 0) {
        if (!exists(tracker)) MG_FORWARD(not_megatron(dir));
        return mg_megatron_tracker_read(dir, it);
    }
    *it = (mg_megatron_iter){step, 0};
    mg_megatron_iter_name(it, name);
    MG_FORWARD(join(folder, dir, name));
    list_iters(dir, have, sizeof have);
    MG_RETURN_IF(!mg_is_dir(folder), MG_ERR_NOTFOUND,
                 "--ckpt-step %lld: %s has no %s (its iterations: %s)", (long long)step, dir,
                 name, have);
    return MG_OK;
}

/* The folder's entries, for a message ("a, b, c"). */
static void list_dir(const char *dir, char *buf, size_t cap)
{
    size_t at = 0;
    DIR *d = opendir(dir);
    buf[0] = 0;
    for (struct dirent *e; d && (e = readdir(d)) && at < cap;)
        if (e->d_name[0] != '.')
            at += (size_t)snprintf(buf + at, cap - at, "%s%s", at ? ", " : "", e->d_name);
    if (d) closedir(d);
}

static int64_t int_arg(const mg_pk_obj *args, const char *key)
{
    const mg_pk_obj *v = args ? mg_pk_get(args, key) : NULL;
    return v && v->kind == MG_PK_INT && v->i > 0 ? v->i : 1;
}

/* Every rank file of the layout args name must be there. */
static mg_status check_rank_files(const char *dir, const mg_train_ckpt_head *h)
{
    char rel[MG_PATH_MAX], path[MG_PATH_MAX];
    for (int64_t p = 0; p < h->pp; p++)
        for (int64_t t = 0; t < h->tp; t++) {
            MG_FORWARD(mg_megatron_rank_file(&h->it, t, p, h->pp > 1, rel, sizeof rel));
            MG_FORWARD(join(path, dir, rel));
            MG_RETURN_IF(!exists(path), MG_ERR_FORMAT,
                         "--load %s: the checkpoint's args say tensor_model_parallel_size %lld "
                         "x pipeline_model_parallel_size %lld, but %s is missing (an "
                         "incomplete checkpoint)", dir, (long long)h->tp, (long long)h->pp,
                         rel);
        }
    return MG_OK;
}

/* The `torch` format: the first shard's file, mp_rank_00 or mp_rank_00_000. */
static mg_status open_torch(mg_train_ckpt_head *h, const char *dir, const char *iterdir)
{
    char rel[MG_PATH_MAX], have[512];
    for (int pipeline = 0; pipeline < 2; pipeline++) {
        MG_FORWARD(mg_megatron_rank_file(&h->it, 0, 0, pipeline, rel, sizeof rel));
        MG_FORWARD(join(h->path, dir, rel));
        if (exists(h->path)) break;
    }
    list_dir(iterdir, have, sizeof have);
    MG_RETURN_IF(!exists(h->path), MG_ERR_NOTFOUND,
                 "--load %s: %s holds no mp_rank_00/%s nor mp_rank_00_000/%s (it holds: %s)",
                 dir, iterdir, MG_MEGATRON_RANK_FILE, MG_MEGATRON_RANK_FILE,
                 *have ? have : "nothing");
    MG_FORWARD(mg_torch_open(&h->f, h->path));
    const mg_pk_obj *root = mg_torch_root(h->f);
    MG_RETURN_IF(root->kind != MG_PK_DICT && root->kind != MG_PK_ODICT, MG_ERR_FORMAT,
                 "%s: the pickled object is a %s, not a dict", h->path,
                 mg_pk_kind_name(root->kind));
    h->args = mg_pk_get(root, "args");
    h->sched = mg_pk_get(root, "opt_param_scheduler");
    h->optim = mg_pk_get(root, "optimizer");
    h->tp = int_arg(h->args, "tensor_model_parallel_size");
    h->pp = int_arg(h->args, "pipeline_model_parallel_size");
    return check_rank_files(dir, h);
}

static mg_status open_dist(mg_train_ckpt_head *h)
{
    mg_pk_obj *root = NULL;
    MG_FORWARD(mg_mcore_dist_check(h->path));
    MG_FORWARD(mg_dcp_dir_open(&h->d, h->path));
    MG_FORWARD(mg_mcore_dist_common(h->path, h->d, &h->f, &root));
    h->args = mg_pk_get(root, "args");
    h->sched = mg_pk_get(root, "opt_param_scheduler");
    h->tp = h->pp = 1; /* no rank folders to find: its args layout is checked on load */
    return MG_OK;
}

mg_status mg_train_ckpt_head_open(mg_train_ckpt_head *h, const char *dir, int64_t step)
{
    char name[MG_MEGATRON_NAME_MAX], iterdir[MG_PATH_MAX];
    memset(h, 0, sizeof *h);
    MG_FORWARD(mg_train_ckpt_iter(dir, step, &h->it));
    mg_megatron_iter_name(&h->it, name);
    MG_FORWARD(join(iterdir, dir, name));
    h->dist = mg_mcore_dist_is(iterdir);
    if (!h->dist) return open_torch(h, dir, iterdir);
    memcpy(h->path, iterdir, sizeof h->path);
    return open_dist(h);
}

void mg_train_ckpt_head_close(mg_train_ckpt_head *h)
{
    if (!h) return;
    mg_torch_close(h->f);
    mg_dcp_dir_close(h->d);
    h->f = NULL;
    h->d = NULL;
    h->args = h->sched = h->optim = NULL;
}

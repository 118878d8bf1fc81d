/* mg_distopt.c — distrib_optim.pt of one Megatron output rank file when the source's moments
 * are the distributed optimizer's (ck_source.dist_optim): megatron-core's
 * DistributedOptimizer.save_parameter_state form (mg/distrib_optim.h), so that Megatron
 * with --use-distributed-optimizer (load_parameter_state) and mg-train resume the resharded
 * checkpoint.
 *
 * Contract (ckpt.h, docs/FORMATS.md §5.2): the file's parameter tensors (the stage's, the
 * last stage's tied embedding copy included) are laid out as megatron-core's
 * _ParamAndGradBuffer of the target stage lays them (mg/dist_buffer.h: megatron-core's
 * parameter order reversed, 64-element alignment, a shared embedding in a bucket of its
 * own with tied embeddings and PP > 1, the DDP buckets of ck_args_bucket_size under the
 * output's args), the buckets coalesced at their numel_unpadded; 'param' holds the fp32
 * parameters themselves (an fp32 source's masters are its weights), 'exp_avg' and
 * 'exp_avg_sq' the planned moments, the padding zero; key (torch.float32, torch.float32).
 * A target dtype other than float32 is refused (its masters would be needed; ck_plan_target
 * refuses it before anything is written, fill_world again).
 */
#include <stdlib.h>
#include <string.h>

#include "ckpt.h"
#include "mg/dist_buffer.h"
#include "mg/distrib_optim.h"

/* LanguageModule's shared embedding: with tied embeddings and PP > 1 the first stage's word
 * embedding and the last stage's output layer. */
static int shared_embedding(const ck_plan *pl, const ck_file *f, const char *name)
{
    if (!pl->m.tied_embeddings || pl->m.pp == 1) return 0;
    if (f->pp_rank == 0) return strcmp(name, "embedding.word_embeddings.weight") == 0;
    return f->pp_rank == pl->m.pp - 1 && strcmp(name, "output_layer.weight") == 0;
}

/* The buffer layout of x's parameters (tensor j of x at l->start[j]). */
static mg_status plan_layout(const ck_plan *pl, const ck_file_params *x, const mg_pk_obj *args,
                             mg_dist_layout *l)
{
    size_t *order = mg_calloc(x->n + 1, sizeof *order);
    int64_t *numel = mg_calloc(x->n + 1, sizeof *numel);
    unsigned char *own = mg_calloc(x->n + 1, 1);
    mg_status st = order && numel && own ? MG_OK : MG_ERR_NOMEM;
    if (st == MG_OK) {
        mg_megatron_param_order(&x->list, -1, order, 0);
        for (size_t j = 0; j < x->n; j++) {
            const ck_tensor *t = &x->f->t[x->t[j]];
            numel[j] = t->shape[0] * (t->ndim == 2 ? t->shape[1] : 1);
            own[j] = (unsigned char)shared_embedding(pl, x->f, t->name);
        }
        int64_t total = 0;
        for (size_t j = 0; j < x->n; j++) total += numel[j];
        mg_bucket_cfg cfg = {1, 0, 1}; /* coalesced offsets: the same for any DP */
        st = ck_args_bucket_size(args, x->f->pp_rank, total, x->f->path, &cfg.bucket_size);
        if (st == MG_OK) st = mg_grad_buffer_plan(l, x->n, order, numel, own, &cfg);
    }
    free(order);
    free(numel);
    free(own);
    return st;
}

/* Index in x of file tensor i's parameter (itself, or the one it is a moment of). */
static size_t param_of(const ck_file_params *x, size_t i)
{
    const ck_tensor *t = &x->f->t[i];
    size_t p = t->moment ? t->of : i, j = 0;
    while (j < x->n && x->t[j] != p) j++;
    return j;
}

/* Every planned tensor of x's file into its world tensor at its parameter's offset. */
static mg_status fill_world(const ck_source *s, const ck_file_params *x,
                            const mg_dist_layout *l, float *const world[3])
{
    void *scratch = NULL;
    size_t cap = 0;
    mg_status st = MG_OK;
    for (size_t i = 0; i < x->f->n && st == MG_OK; i++) {
        const ck_tensor *t = &x->f->t[i];
        if (t->none) continue;
        size_t j = param_of(x, i);
        MG_ASSERT(j < x->n && t->moment <= 2);
        st = t->dtype == MG_TD_F32 ? MG_OK : mg_error_set(MG_ERR_UNSUPPORTED, "not supported "
             "yet: %s: writing %s for a %s target (the distributed optimizer's fp32 masters "
             "of 16-bit weights)", x->f->path, MG_DISTRIB_OPTIM_FILE, mg_tdtype_name(t->dtype));
        if (st == MG_OK)
            st = ck_tensor_fill(s, t, world[t->moment] + mg_dist_coalesced_start(l, j),
                                &scratch, &cap);
    }
    free(scratch);
    return st;
}

mg_status ck_megatron_distrib_optim(const ck_source *s, const ck_plan *pl, const ck_file *f,
                                    const mg_pk_obj *args, const char *path)
{
    ck_file_params x;
    mg_dist_layout l = {0};
    float *buf = NULL;
    mg_status st = ck_file_params_init(&x, f);
    if (st == MG_OK) st = plan_layout(pl, &x, args, &l);
    int64_t n = st == MG_OK ? mg_dist_coalesced_numel(&l) : 0;
    if (st == MG_OK && !(buf = mg_calloc(3 * (size_t)(n ? n : 1), sizeof *buf)))
        st = MG_ERR_NOMEM;
    float *const world[3] = {buf, buf + (n ? n : 1), buf + 2 * (n ? n : 1)};
    if (st == MG_OK) st = fill_world(s, &x, &l, world);
    if (st == MG_OK) st = mg_distrib_optim_save(path, MG_TD_F32, n, world);
    free(buf);
    mg_dist_layout_free(&l);
    free(x.t);
    return st;
}

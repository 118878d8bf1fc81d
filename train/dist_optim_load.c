/* dist_optim_load.c — dist_optim.h: megatron-core's distrib_optim.pt (mg/distrib_optim.h)
 * read back into the model layout (mg_dist_read_state).
 *
 * The file holds the buckets of the buffer one after the other, each cut at its
 * numel_unpadded (get_parameter_state_dp_zero). Buckets start at multiples of lcm(DP, 128),
 * a multiple of 128, and parameters at multiples of 64 from there: the coalesced tensors are
 * the same for every data-parallel size, so the layout of DP 1 reads the file of any DP.
 */
#include "dist_optim.h"

#include <stdlib.h>
#include <string.h>

#include "mg/distrib_optim.h"
#include "mg/torchfile.h"

/* The coalesced world tensor src back into the model layout dst (the inverse of coalesce). */
static void uncoalesce(const mg_dist_layout *l, const mg_gpt *g, const uint8_t *src,
                       float *buf, float *dst)
{
    memset(buf, 0, (size_t)l->numel * sizeof(float));
    for (int64_t b = 0, at = 0; b < l->nbuckets; at += l->unpadded[b], b++)
        memcpy(buf + l->bucket[b], src + (size_t)at * sizeof(float),
               (size_t)l->unpadded[b] * sizeof(float));
    for (size_t j = 0; j < g->nt; j++)
        memcpy(dst + g->t[j].offset, buf + l->start[j], (size_t)g->t[j].numel * sizeof(float));
}

static mg_status read_root(const mg_dist_layout *l, const mg_gpt *g, const char *path,
                           const mg_pk_obj *root, float *params, mg_gpt_optim *full)
{
    mg_distrib_optim_world w;
    MG_FORWARD(mg_distrib_optim_read(path, root, &w));
    int64_t n = 0;
    for (int64_t b = 0; b < l->nbuckets; b++) n += l->unpadded[b];
    MG_RETURN_IF(w.n != n, MG_ERR_FORMAT, "%s: numel_unpadded is %lld, the model's buffer "
                 "%lld (a checkpoint of another model or layout)", path, (long long)w.n,
                 (long long)n);
    float *buf = mg_malloc((size_t)(l->numel ? l->numel : 1) * sizeof(float));
    if (!buf) return MG_ERR_NOMEM;
    float *dst[3] = {params, full->m, full->v};
    for (int k = 0; k < 3; k++) uncoalesce(l, g, w.t[k], buf, dst[k]);
    free(buf);
    return MG_OK;
}

mg_status mg_dist_read_state(const mg_gpt *g, mg_names nm, const char *path, float *params,
                             mg_gpt_optim *full)
{
    mg_dist_layout l;
    mg_torch_file *f = NULL;
    MG_FORWARD(mg_dist_layout_build(&l, g, 1, nm));
    mg_status s = mg_torch_open(&f, path);
    if (s == MG_OK) s = read_root(&l, g, path, mg_torch_root(f), params, full);
    mg_torch_close(f);
    mg_dist_layout_free(&l);
    return s;
}

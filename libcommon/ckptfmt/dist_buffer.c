/* dist_buffer.c — mg/dist_buffer.h: megatron-core's gradient buffer layout and buckets. */
#include "mg/dist_buffer.h"

#include <stdlib.h>
#include <string.h>

#include "mg/error.h"

static int64_t pad_to(int64_t x, int64_t d) { return (x + d - 1) / d * d; }

static int64_t gcd(int64_t a, int64_t b) { return b ? gcd(b, a % b) : a; }

/* Ends the open bucket at pos (its numel_unpadded), the next one starting padded. */
static int64_t close_bucket(mg_dist_layout *l, int64_t pos, int64_t div)
{
    l->unpadded[l->nbuckets] = pos - l->bucket[l->nbuckets];
    pos = pad_to(pos, div);
    l->bucket[++l->nbuckets] = pos;
    return pos;
}

int64_t mg_ddp_bucket_size_of(int overlap_grad_reduce, int64_t ddp_bucket_size, int64_t dp,
                              int64_t stage)
{
    if (!overlap_grad_reduce || stage > 0) return 0;
    if (ddp_bucket_size > 0) return ddp_bucket_size;
    return 1000000 * dp > 40000000 ? 1000000 * dp : 40000000;
}

mg_status mg_grad_buffer_plan(mg_dist_layout *l, size_t n, const size_t *order,
                              const int64_t *numel, const unsigned char *own,
                              const mg_bucket_cfg *cfg)
{
    memset(l, 0, sizeof *l);
    l->dp = cfg->dp;
    l->n = n;
    l->start = mg_calloc(n ? n : 1, sizeof *l->start);
    /* at most one bucket closed after each tensor and one before each shared embedding */
    l->bucket = mg_calloc(2 * n + 2, sizeof *l->bucket);
    l->unpadded = mg_calloc(2 * n + 2, sizeof *l->unpadded);
    if (!l->start || !l->bucket || !l->unpadded) {
        mg_dist_layout_free(l);
        return MG_ERR_NOMEM;
    }
    int dist = cfg->distributed;
    int64_t dp = cfg->dp, align = dist ? 64 : 1;
    int64_t div = dist ? dp / gcd(dp, 128) * 128 : 1; /* lcm(DP, 128) */
    int64_t pos = 0, in_bucket = 0;
    for (size_t i = n; i-- > 0;) { /* params[::-1] in Megatron's parameter order */
        size_t j = order[i];
        int split = dist && own[j]; /* _does_param_require_new_bucket */
        pos = pad_to(pos, align);
        if (split && in_bucket) pos = close_bucket(l, pos, div), in_bucket = 0; /* before it */
        l->start[j] = pos;
        pos += numel[j];
        in_bucket++;
        int full = cfg->bucket_size > 0 && pos - l->bucket[l->nbuckets] >= cfg->bucket_size;
        if (full || split) pos = close_bucket(l, pos, div), in_bucket = 0; /* and after it */
    }
    if (in_bucket) {
        l->unpadded[l->nbuckets] = pos - l->bucket[l->nbuckets];
        l->bucket[l->nbuckets + 1] = pad_to(pos, div);
        l->nbuckets++;
    }
    l->numel = l->bucket[l->nbuckets];
    return MG_OK;
}

mg_status mg_dist_layout_plan(mg_dist_layout *l, size_t n, const size_t *order,
                              const int64_t *numel, const unsigned char *own, int64_t dp)
{
    mg_bucket_cfg cfg = {dp, 0, 1};
    return mg_grad_buffer_plan(l, n, order, numel, own, &cfg);
}

void mg_dist_layout_free(mg_dist_layout *l)
{
    free(l->start);
    free(l->bucket);
    free(l->unpadded);
    memset(l, 0, sizeof *l);
}

int64_t mg_dist_coalesced_start(const mg_dist_layout *l, size_t j)
{
    int64_t at = 0, b = 0;
    for (; b + 1 < l->nbuckets && l->start[j] >= l->bucket[b + 1]; b++) at += l->unpadded[b];
    return at + l->start[j] - l->bucket[b];
}

int64_t mg_dist_coalesced_numel(const mg_dist_layout *l)
{
    int64_t n = 0;
    for (int64_t b = 0; b < l->nbuckets; b++) n += l->unpadded[b];
    return n;
}

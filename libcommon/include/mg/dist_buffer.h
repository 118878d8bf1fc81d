/* dist_buffer.h — megatron-core's gradient/parameter buffer layout and its buckets
 * (megatron-core 0.16.1 _ParamAndGradBuffer), shared by mg-train (train/dist_optim.h, the
 * bucketed gradient reduction of train/grad_buckets.h) and mg-convert (the moments of
 * distrib_optim.pt, one bucket).
 *
 * Contract: given one rank's n tensors (numel[j] elements each), their megatron-core
 * parameter order (order[0..n-1], mg/megatron_param_order.h) and which of them is a shared
 * embedding (own[j]: tied embeddings with PP > 1, the first stage's word embedding or the
 * last stage's output layer, a bucket of its own as _does_param_require_new_bucket), the
 * buffer holds the tensors in REVERSE order, each starting at a multiple of 64 elements,
 * each bucket's end padded to a multiple of lcm(DP, 128); start[j] is tensor j's offset,
 * bucket[b] .. bucket[b+1] bucket b, unpadded[b] its length up to the end of its last
 * tensor (numel_unpadded). distrib_optim.pt holds the buckets one after the other, each cut
 * at its numel_unpadded: mg_dist_coalesced_start gives tensor j's offset there, and
 * mg_dist_coalesced_numel their total. mg_dist_layout_plan is that layout with one bucket
 * (no --overlap-grad-reduce: megatron-core's bucket_size None).
 *
 * mg_grad_buffer_plan: the same with cfg->bucket_size > 0 (--ddp-bucket-size with
 * --overlap-grad-reduce; <= 0: one bucket): a bucket is closed after the tensor that brings it
 * to bucket_size elements or more (counted from the bucket's start to that tensor's end,
 * its own 64-alignment padding included). Without the distributed optimizer
 * (cfg->distributed 0) nothing is padded and a shared embedding is not split off: the
 * buckets only cut the tensors, in reverse order, into all-reduce groups.
 */
#ifndef MG_DIST_BUFFER_H
#define MG_DIST_BUFFER_H

#include <stddef.h>
#include <stdint.h>

#include "mg/error.h"

typedef struct {
    int64_t dp, numel;    /* data-parallel size; the padded buffer length */
    int64_t nbuckets;
    int64_t *bucket;      /* nbuckets + 1 boundaries: bucket b = [bucket[b], bucket[b+1]) */
    int64_t *unpadded;    /* per bucket: up to the end of its last parameter (numel_unpadded) */
    int64_t *start;       /* per tensor: its offset in the buffer */
    size_t n;
} mg_dist_layout;

typedef struct {
    int64_t dp;          /* data-parallel size */
    int64_t bucket_size; /* elements; <= 0: one bucket (shared embeddings aside) */
    int distributed;     /* --use-distributed-optimizer: padding and the shared-embedding split */
} mg_bucket_cfg;

/* megatron-core DistributedDataParallel's bucket size of pipeline stage `stage`: none (0)
 * without overlap_grad_reduce or after the first stage, else ddp_bucket_size when > 0, else
 * max(40000000, 1000000 x dp). */
int64_t mg_ddp_bucket_size_of(int overlap_grad_reduce, int64_t ddp_bucket_size, int64_t dp,
                              int64_t stage);

mg_status mg_grad_buffer_plan(mg_dist_layout *l, size_t n, const size_t *order,
                              const int64_t *numel, const unsigned char *own,
                              const mg_bucket_cfg *cfg);
mg_status mg_dist_layout_plan(mg_dist_layout *l, size_t n, const size_t *order,
                              const int64_t *numel, const unsigned char *own, int64_t dp);
void mg_dist_layout_free(mg_dist_layout *l);
int64_t mg_dist_coalesced_start(const mg_dist_layout *l, size_t j);
int64_t mg_dist_coalesced_numel(const mg_dist_layout *l);

#endif

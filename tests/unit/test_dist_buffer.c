/* test_dist_buffer.c — unit tests for mg/dist_buffer.h: megatron-core's distributed-optimizer
 * buffer (reverse parameter order, 64-element starts, buckets padded to lcm(DP, 128), a
 * shared embedding in a bucket of its own) and the coalesced offsets of distrib_optim.pt,
 * which do not depend on DP; buckets of --ddp-bucket-size and the plain (unpadded) buffer. */
#include "harness.h"
#include "mg/dist_buffer.h"

static const size_t order[] = {0, 1, 2};
static const int64_t numel[] = {100, 10, 5};

MG_TEST(dist_buffer_one_bucket)
{
    static const unsigned char none[] = {0, 0, 0};
    mg_dist_layout l;
    MG_CHECK_OK(t, mg_dist_layout_plan(&l, 3, order, numel, none, 3));
    MG_CHECK_EQ_INT(t, l.nbuckets, 1);
    MG_CHECK_EQ_INT(t, l.start[2], 0);   /* reverse order */
    MG_CHECK_EQ_INT(t, l.start[1], 64);
    MG_CHECK_EQ_INT(t, l.start[0], 128);
    MG_CHECK_EQ_INT(t, l.unpadded[0], 228);
    MG_CHECK_EQ_INT(t, l.numel, 384);    /* lcm(3, 128) */
    MG_CHECK_EQ_INT(t, mg_dist_coalesced_start(&l, 0), 128);
    MG_CHECK_EQ_INT(t, mg_dist_coalesced_numel(&l), 228);
    mg_dist_layout_free(&l);
}

MG_TEST(dist_buffer_shared_embedding_bucket)
{
    static const unsigned char own[] = {1, 0, 0}; /* tensor 0: the shared embedding */
    for (int64_t dp = 1; dp <= 3; dp += 2) {
        mg_dist_layout l;
        MG_CHECK_OK(t, mg_dist_layout_plan(&l, 3, order, numel, own, dp));
        int64_t div = dp == 1 ? 128 : 384;
        MG_CHECK_EQ_INT(t, l.nbuckets, 2);
        MG_CHECK_EQ_INT(t, l.unpadded[0], 128); /* up to the 64-aligned start of tensor 0 */
        MG_CHECK_EQ_INT(t, l.start[0], div);
        MG_CHECK_EQ_INT(t, l.unpadded[1], 100);
        MG_CHECK_EQ_INT(t, l.numel, 2 * div);
        MG_CHECK_EQ_INT(t, mg_dist_coalesced_start(&l, 0), 128); /* the same at any DP */
        MG_CHECK_EQ_INT(t, mg_dist_coalesced_start(&l, 1), 64);
        MG_CHECK_EQ_INT(t, mg_dist_coalesced_numel(&l), 228);
        mg_dist_layout_free(&l);
    }
}

/* --ddp-bucket-size: a bucket closes after the tensor that brings it to the size (counted
 * with its 64-alignment under the distributed optimizer); without it nothing is padded. */
MG_TEST(dist_buffer_bucket_size)
{
    static const unsigned char none[] = {0, 0, 0};
    mg_bucket_cfg dist = {1, 70, 1}, plain = {2, 10, 0};
    mg_dist_layout l;
    MG_CHECK_OK(t, mg_grad_buffer_plan(&l, 3, order, numel, none, &dist));
    MG_CHECK_EQ_INT(t, l.nbuckets, 2);  /* [t2 0..5, t1 64..74] closes at 74 >= 70 */
    MG_CHECK_EQ_INT(t, l.unpadded[0], 74);
    MG_CHECK_EQ_INT(t, l.bucket[1], 128);
    MG_CHECK_EQ_INT(t, l.start[0], 128);
    MG_CHECK_EQ_INT(t, l.unpadded[1], 100);
    MG_CHECK_EQ_INT(t, l.numel, 256);
    MG_CHECK_EQ_INT(t, mg_dist_coalesced_start(&l, 0), 74);
    MG_CHECK_EQ_INT(t, mg_dist_coalesced_numel(&l), 174);
    mg_dist_layout_free(&l);
    MG_CHECK_OK(t, mg_grad_buffer_plan(&l, 3, order, numel, none, &plain));
    MG_CHECK_EQ_INT(t, l.nbuckets, 2);  /* [t2 0..5, t1 5..15], [t0 15..115] */
    MG_CHECK_EQ_INT(t, l.start[1], 5);
    MG_CHECK_EQ_INT(t, l.bucket[1], 15);
    MG_CHECK_EQ_INT(t, l.start[0], 15);
    MG_CHECK_EQ_INT(t, l.numel, 115);
    mg_dist_layout_free(&l);
}

/* A shared embedding is split off only under the distributed optimizer. */
MG_TEST(dist_buffer_plain_keeps_shared_embedding)
{
    static const unsigned char own[] = {1, 0, 0};
    mg_bucket_cfg plain = {2, 0, 0};
    mg_dist_layout l;
    MG_CHECK_OK(t, mg_grad_buffer_plan(&l, 3, order, numel, own, &plain));
    MG_CHECK_EQ_INT(t, l.nbuckets, 1);
    MG_CHECK_EQ_INT(t, l.numel, 115);
    mg_dist_layout_free(&l);
}

/* test_comm.c — unit tests of train/comm.h, the single-process communicator: sizes and
 * groups, in-place collectives leaving the data as a one-rank sum/copy, self messages in
 * FIFO order, and the error paths (unknown group, bad counts, bad root, no peer, recv
 * without a send or with the wrong size).
 */
#include <string.h>

#include "comm.h"
#include "harness.h"

MG_TEST(comm_single_groups)
{
    mg_comm *w = NULL;
    MG_CHECK_OK(t, mg_comm_create_single(&w));
    MG_CHECK_EQ_INT(t, mg_comm_size(w), 1);
    MG_CHECK_EQ_INT(t, mg_comm_rank(w), 0);
    MG_CHECK_EQ_STR(t, mg_comm_name(w), "world");
    const char *names[] = {"world", "tensor", "pipeline", "data", "model", "embedding"};
    for (int i = 0; i < MG_COMM_NGROUPS; i++) {
        mg_comm *g = mg_comm_group(w, (mg_comm_kind)i), *byname = NULL;
        MG_CHECK_EQ_STR(t, mg_comm_name(g), names[i]);
        MG_CHECK_EQ_INT(t, mg_comm_size(g), 1);
        MG_CHECK_EQ_INT(t, mg_comm_rank(g), 0);
        MG_CHECK_OK(t, mg_comm_group_by_name(w, names[i], &byname));
        MG_CHECK(t, byname == g);
        /* a group reaches its siblings through the world */
        MG_CHECK(t, mg_comm_group(g, MG_COMM_DATA) == mg_comm_group(w, MG_COMM_DATA));
    }
    MG_CHECK(t, mg_comm_group(w, MG_COMM_WORLD) == w);
    MG_CHECK(t, mg_comm_group(w, MG_COMM_TENSOR) != mg_comm_group(w, MG_COMM_DATA));
    mg_comm *g = w;
    MG_CHECK_EQ_INT(t, mg_comm_group_by_name(w, "expert", &g), MG_ERR_ARG);
    MG_CHECK(t, g == NULL);
    MG_CHECK(t, strstr(mg_last_error(), "expert") != NULL);
    mg_comm_free(w);
    mg_comm_free(NULL);
}

MG_TEST(comm_single_collectives)
{
    mg_comm *w = NULL;
    MG_CHECK_OK(t, mg_comm_create_single(&w));
    mg_comm *dp = mg_comm_group(w, MG_COMM_DATA);
    float f[3] = {1.5f, -2.25f, 1e-30f};
    double d[2] = {0.1, 3e300};
    MG_CHECK_OK(t, mg_comm_allreduce_sum_f32(dp, f, 3));
    MG_CHECK_OK(t, mg_comm_allreduce_sum_f64(w, d, 2));
    MG_CHECK(t, f[0] == 1.5f && f[1] == -2.25f && f[2] == 1e-30f);
    MG_CHECK(t, d[0] == 0.1 && d[1] == 3e300);
    MG_CHECK_OK(t, mg_comm_allreduce_sum_f32(dp, NULL, 0));

    float send[2] = {4, 5}, recv[2] = {0, 0};
    MG_CHECK_OK(t, mg_comm_allgather_f32(w, recv, send, 2));
    MG_CHECK(t, recv[0] == 4 && recv[1] == 5);
    MG_CHECK_OK(t, mg_comm_allgather_f32(w, recv, recv, 2)); /* in place */
    MG_CHECK(t, recv[0] == 4 && recv[1] == 5);
    float rs[2] = {0, 0};
    send[0] = 7;
    MG_CHECK_OK(t, mg_comm_reduce_scatter_sum_f32(w, rs, send, 2));
    MG_CHECK(t, rs[0] == 7 && rs[1] == 5);

    unsigned char bytes[4] = {1, 2, 3, 4};
    MG_CHECK_OK(t, mg_comm_broadcast(mg_comm_group(w, MG_COMM_TENSOR), bytes, 4, 0));
    MG_CHECK(t, bytes[0] == 1 && bytes[3] == 4);
    MG_CHECK_OK(t, mg_comm_barrier(mg_comm_group(w, MG_COMM_PIPELINE)));
    mg_comm_free(w);
}

MG_TEST(comm_single_collective_errors)
{
    mg_comm *w = NULL;
    MG_CHECK_OK(t, mg_comm_create_single(&w));
    float f[2] = {0, 0};
    MG_CHECK_EQ_INT(t, mg_comm_allreduce_sum_f32(w, f, -1), MG_ERR_ARG);
    MG_CHECK(t, strstr(mg_last_error(), "negative count") != NULL);
    MG_CHECK_EQ_INT(t, mg_comm_allreduce_sum_f64(w, NULL, 2), MG_ERR_ARG);
    MG_CHECK(t, strstr(mg_last_error(), "NULL buffer") != NULL);
    MG_CHECK_EQ_INT(t, mg_comm_allgather_f32(w, f, NULL, 1), MG_ERR_ARG);
    MG_CHECK_EQ_INT(t, mg_comm_reduce_scatter_sum_f32(w, NULL, f, 1), MG_ERR_ARG);
    MG_CHECK_EQ_INT(t, mg_comm_broadcast(w, f, sizeof f, 1), MG_ERR_ARG);
    MG_CHECK(t, strstr(mg_last_error(), "no rank 1") != NULL);
    MG_CHECK_EQ_INT(t, mg_comm_broadcast(w, f, sizeof f, -1), MG_ERR_ARG);
    mg_comm_free(w);
}

MG_TEST(comm_single_send_recv)
{
    mg_comm *w = NULL;
    MG_CHECK_OK(t, mg_comm_create_single(&w));
    mg_comm *pp = mg_comm_group(w, MG_COMM_PIPELINE);
    int a = 11, b = 22, r = 0;
    MG_CHECK_EQ_INT(t, mg_comm_send(pp, &a, sizeof a, 1), MG_ERR_ARG);
    MG_CHECK(t, strstr(mg_last_error(), "no peer 1") != NULL);
    MG_CHECK_EQ_INT(t, mg_comm_recv(pp, &r, sizeof r, -1), MG_ERR_ARG);
    MG_CHECK(t, strstr(mg_last_error(), "no peer -1") != NULL);
    MG_CHECK_EQ_INT(t, mg_comm_recv(pp, &r, sizeof r, 0), MG_ERR_ARG); /* nothing sent */
    MG_CHECK(t, strstr(mg_last_error(), "no message sent") != NULL);

    MG_CHECK_OK(t, mg_comm_send(pp, &a, sizeof a, 0));
    MG_CHECK_OK(t, mg_comm_send(pp, &b, sizeof b, 0));
    a = 0; /* the message was copied */
    MG_CHECK_EQ_INT(t, mg_comm_recv(w, &r, sizeof r, 0), MG_ERR_ARG); /* other group */
    char wrong[2];
    MG_CHECK_EQ_INT(t, mg_comm_recv(pp, wrong, sizeof wrong, 0), MG_ERR_ARG);
    MG_CHECK(t, strstr(mg_last_error(), "bytes expected") != NULL);
    MG_CHECK_OK(t, mg_comm_recv(pp, &r, sizeof r, 0));
    MG_CHECK_EQ_INT(t, r, 11);
    MG_CHECK_OK(t, mg_comm_recv(pp, &r, sizeof r, 0));
    MG_CHECK_EQ_INT(t, r, 22);
    MG_CHECK_EQ_INT(t, mg_comm_recv(pp, &r, sizeof r, 0), MG_ERR_ARG);

    /* zero-byte messages and unreceived ones freed with the world */
    MG_CHECK_OK(t, mg_comm_send(pp, NULL, 0, 0));
    MG_CHECK_OK(t, mg_comm_recv(pp, NULL, 0, 0));
    MG_CHECK_OK(t, mg_comm_send(pp, &b, sizeof b, 0));
    MG_CHECK_OK(t, mg_comm_send(w, &b, sizeof b, 0));
    mg_comm_free(w);
}

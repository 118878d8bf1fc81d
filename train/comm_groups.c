/* comm_groups.c — comm_groups.h: megatron-core's rank grid and its groups.
 *
 * The grid's axes in megatron-core's default order tp-cp-ep-dp-pp with cp = ep = 1 reduce
 * to three: tensor (stride 1), data (stride tp), pipeline (stride tp x dp). A group keeps
 * the rank's coordinates on the other axes and runs through its own axes, the first axis
 * of the order fastest (generate_masked_orthogonal_rank_groups' decompose()).
 */
#include "comm_groups.h"

enum { AX_TP, AX_DP, AX_PP, N_AX };

static void axes(const mg_comm_grid *g, int64_t size[N_AX], int64_t stride[N_AX])
{
    size[AX_TP] = g->tp;
    size[AX_DP] = g->dp;
    size[AX_PP] = g->pp;
    stride[AX_TP] = 1;
    stride[AX_DP] = g->tp;
    stride[AX_PP] = g->tp * g->dp;
}

mg_status mg_comm_grid_init(mg_comm_grid *g, int64_t world, int64_t tp, int64_t pp)
{
    MG_RETURN_IF(world < 1 || tp < 1 || pp < 1, MG_ERR_ARG,
                 "parallel layout: world %lld, TP %lld, PP %lld must be positive",
                 (long long)world, (long long)tp, (long long)pp);
    MG_RETURN_IF(world % (tp * pp), MG_ERR_ARG,
                 "world size (%lld) is not divisible by tensor model parallel size (%lld) "
                 "times pipeline model parallel size (%lld)",
                 (long long)world, (long long)tp, (long long)pp);
    g->world = world;
    g->tp = tp;
    g->pp = pp;
    g->dp = world / (tp * pp);
    return MG_OK;
}

int64_t mg_comm_grid_tp_rank(const mg_comm_grid *g, int64_t rank) { return rank % g->tp; }
int64_t mg_comm_grid_dp_rank(const mg_comm_grid *g, int64_t rank) { return rank / g->tp % g->dp; }
int64_t mg_comm_grid_pp_rank(const mg_comm_grid *g, int64_t rank) { return rank / (g->tp * g->dp); }

int mg_comm_grid_in_embedding(const mg_comm_grid *g, int64_t rank)
{
    int64_t p = mg_comm_grid_pp_rank(g, rank);
    return p == 0 || p == g->pp - 1;
}

/* Which axes a group of kind k runs through (the mask of megatron-core's get_ranks). */
static void mask_of(mg_comm_kind k, int mask[N_AX])
{
    mask[AX_TP] = k == MG_COMM_WORLD || k == MG_COMM_TENSOR || k == MG_COMM_MODEL;
    mask[AX_DP] = k == MG_COMM_WORLD || k == MG_COMM_DATA;
    mask[AX_PP] = k == MG_COMM_WORLD || k == MG_COMM_PIPELINE || k == MG_COMM_MODEL ||
                  k == MG_COMM_EMBEDDING;
}

/* The ranks of an orthogonal group: the rank's fixed coordinates plus every combination of
 * the masked axes, the first masked axis fastest. */
static int64_t orthogonal(const mg_comm_grid *g, const int mask[N_AX], int64_t rank,
                          int64_t *ranks)
{
    int64_t size[N_AX], stride[N_AX], base = 0, n = 1;
    axes(g, size, stride);
    for (int a = 0; a < N_AX; a++) {
        if (mask[a]) n *= size[a];
        else base += (rank / stride[a] % size[a]) * stride[a];
    }
    for (int64_t i = 0; i < n; i++) {
        int64_t rest = i, r = base;
        for (int a = 0; a < N_AX; a++) {
            if (!mask[a]) continue;
            r += (rest % size[a]) * stride[a];
            rest /= size[a];
        }
        ranks[i] = r;
    }
    return n;
}

int64_t mg_comm_grid_group(const mg_comm_grid *g, mg_comm_kind kind, int64_t rank,
                           int64_t *ranks, int64_t *index)
{
    int mask[N_AX];
    mask_of(kind, mask);
    int64_t n = orthogonal(g, mask, rank, ranks);
    if (kind == MG_COMM_EMBEDDING) {
        if (!mg_comm_grid_in_embedding(g, rank)) n = 0;
        else if (n > 1) { /* first and last stage of the pipeline */
            ranks[1] = ranks[n - 1];
            n = 2;
        }
        if (n == 0) { /* a middle stage: itself alone */
            ranks[0] = rank;
            n = 1;
        }
    }
    *index = 0;
    for (int64_t i = 0; i < n; i++)
        if (ranks[i] == rank) *index = i;
    return n;
}

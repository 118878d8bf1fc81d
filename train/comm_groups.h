/* comm_groups.h — which world ranks form each parallel group: megatron-core's default rank
 * order, computed without any communication (used by every comm backend, --dry-run and the
 * unit tests).
 *
 * Contract:
 *   - The grid is megatron-core 0.16.1's RankGenerator with its default order
 *     "tp-cp-ep-dp-pp" (megatron/core/parallel_state.py initialize_model_parallel), tensor
 *     fastest: world rank = tp_rank + tp x (cp_rank + cp x (ep_rank + ep x (dp_rank + dp x
 *     pp_rank))). mg-train has no context or expert parallelism, so cp = ep = 1 and
 *     world rank = tp_rank + tp x dp_rank + tp x dp x pp_rank.
 *   - A group of kind k holds the ranks that differ only in k's coordinates
 *     (generate_masked_orthogonal_rank_groups): tensor = tp, data = dp, pipeline = pp,
 *     model = tp-pp (tensor fastest inside the group), world = everything. A rank's index
 *     in its group is its position in that list (ascending, tensor fastest).
 *   - The embedding group (default_embedding_ranks) is the first and the last rank of each
 *     pipeline group ([first] when PP = 1): the stages holding the word embeddings and the
 *     tied output layer. A middle stage belongs to no embedding group: its group is itself
 *     alone (size 1), so a collective on it is a no-op; mg_comm_grid_in_embedding() tells.
 *   - mg_comm_grid_init() checks world = tp x pp x dp (MG_ERR_ARG naming the sizes).
 */
#ifndef MG_TRAIN_COMM_GROUPS_H
#define MG_TRAIN_COMM_GROUPS_H

#include <stdint.h>

#include "comm.h"

typedef struct {
    int64_t world, tp, pp, dp;
} mg_comm_grid;

/* The grid of a world of `world` ranks with tensor size tp and pipeline size pp. */
mg_status mg_comm_grid_init(mg_comm_grid *g, int64_t world, int64_t tp, int64_t pp);

/* Coordinates of a world rank. */
int64_t mg_comm_grid_tp_rank(const mg_comm_grid *g, int64_t rank);
int64_t mg_comm_grid_dp_rank(const mg_comm_grid *g, int64_t rank);
int64_t mg_comm_grid_pp_rank(const mg_comm_grid *g, int64_t rank);
/* Whether the rank is on the first or the last stage of its pipeline. */
int mg_comm_grid_in_embedding(const mg_comm_grid *g, int64_t rank);

/* The world ranks of `rank`'s group of kind `kind` into ranks[] (room for g->world), in
 * group order; returns the group size and sets *index to rank's position in it. */
int64_t mg_comm_grid_group(const mg_comm_grid *g, mg_comm_kind kind, int64_t rank,
                           int64_t *ranks, int64_t *index);

#endif

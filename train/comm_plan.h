/* comm_plan.h — the communication of one training step, predicted from the options: what
 * `mg-train --dry-run` prints and what the comm layer's counters (comm.h) must show.
 *
 * Contract:
 *   - mg_comm_plan_step() lists, for world rank 0 of o's layout (TP x PP x DP), the
 *     collectives and messages of one training step (every micro-batch's forward and
 *     backward, the gradient reduction, the norm and the optimizer), each row a purpose:
 *     group, operation, calls, payload bytes per call (comm.h's counting), exact or not.
 *   - Exact rows (what mg-train's step does today): data parallelism — the lm loss sum and
 *     token count (all-reduce of 2 doubles over DP); the gradients: one all-reduce of the
 *     whole gradient buffer over DP (the model's buffer, alignment padding included), or
 *     with --use-distributed-optimizer one reduce-scatter and one all-gather of each bucket
 *     of the padded buffer (dist_optim.h) plus the shard norm's all-reduce over DP; the
 *     gradient norm's all-reduce over the model-parallel group (TP x PP).
 *   - Model-parallel rows are the textbook volumes (issue 12's Performance section) and are
 *     marked not exact: TP 4 all-reduces of B x S x h floats per layer per micro-batch, PP
 *     one activation and one gradient of B x S x h floats per micro-batch, tied embeddings
 *     with PP > 1 one all-reduce of the word-embedding gradient. (--sequence-parallel's
 *     all-gather / reduce-scatter pairs belong here once the option exists.)
 *   - Rows over a group of one rank are left out (nothing moves; comm.h does not count
 *     them). The vocabulary must be resolved (padded size).
 */
#ifndef MG_TRAIN_COMM_PLAN_H
#define MG_TRAIN_COMM_PLAN_H

#include "comm.h"
#include "options.h"

typedef struct {
    mg_comm_kind group;
    mg_comm_op op;
    int64_t calls, bytes;  /* bytes per call */
    int exact;             /* 0: a textbook volume for code that is not in this step yet */
    const char *what;
} mg_comm_plan_row;

#define MG_COMM_PLAN_MAX 16

typedef struct {
    mg_comm_plan_row rows[MG_COMM_PLAN_MAX];
    int n;
} mg_comm_plan;

mg_status mg_comm_plan_step(const mg_train_opts *o, mg_comm_plan *p);

#endif

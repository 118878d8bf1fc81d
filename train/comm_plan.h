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
 *     of the padded buffer (dist_optim.h; the all-gather of 16-bit parameters with --bf16 /
 *     --fp16) plus the shard norm's all-reduce over DP; the
 *     gradient norm's all-reduce over the model-parallel group (TP x PP).
 *   - Model-parallel rows are exact too, for rank 0's shard (tensor rank 0, the first
 *     pipeline stage with Megatron's layer placement): the tensor-parallel sums of the
 *     model passes (per micro-batch: 4 all-reduces of B x S x h values per layer, the word
 *     embedding's and, on a last stage, the output layer's input gradient's; with
 *     --sequence-parallel the all-gather / reduce-scatter pairs instead and the norm and
 *     bias gradient all-reduces; on a last stage the cross-entropy's row maxima and sums),
 *     the pipeline's activation and gradient messages (B x S x h values, / TP under SP)
 *     and the loss broadcast, and the tied word-embedding gradient's all-reduce. A value
 *     of those activations is 4 bytes, 2 with --bf16 / --fp16 (the cross-entropy's
 *     statistics and every gradient reduction stay fp32).
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

#define MG_COMM_PLAN_MAX 64

typedef struct {
    mg_comm_plan_row rows[MG_COMM_PLAN_MAX];
    int n;
} mg_comm_plan;

mg_status mg_comm_plan_step(const mg_train_opts *o, mg_comm_plan *p);

#endif

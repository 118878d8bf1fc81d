/* acts_plan.h — mg-train's activation arenas from its options: the settings a run gives its
 * model's arenas, and their bytes per pipeline stage for --dry-run.
 *
 * Contract:
 *   - mg_train_model_par(): the mg_gpt_par of a run of o on tensor-parallel group tp
 *     (NULL with TP 1): --sequence-parallel, --recompute-granularity full with its method
 *     and --recompute-num-layers, selective as the attention's recomputation.
 *   - mg_train_acts_plan(): for pipeline stage `stage` of o's layout, the bytes of one
 *     activation arena on tensor-parallel rank 0 with kernels of backend `backend` (forward.c's
 *     plan: exactly mg_gpt_acts_bytes() of the arena the run allocates), the number of arenas
 *     the 1F1B schedule keeps (schedule.h mg_sched_slots) and the stage's layers.
 *     `recompute` 0 plans the same run without any recomputation (for the comparison).
 *   - Library code: never prints or exits.
 */
#ifndef MG_TRAIN_ACTS_PLAN_H
#define MG_TRAIN_ACTS_PLAN_H

#include <stdint.h>

#include "kernels.h"
#include "model.h"
#include "options.h"

typedef struct {
    int64_t layers;  /* the stage's transformer layers */
    int64_t arena;   /* bytes of one arena */
    int64_t nslots;  /* arenas in flight */
} mg_acts_stage_plan;

mg_gpt_par mg_train_model_par(const mg_train_opts *o, struct mg_comm *tp);
mg_status mg_train_acts_plan(const mg_train_opts *o, mgk_backend backend, int64_t stage,
                             int recompute, mg_acts_stage_plan *p);

#endif

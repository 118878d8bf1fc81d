/* launch_check.c — launch_check.h: a process per model shard. */
#include "launch_check.h"

mg_status mg_train_check_launch(const mg_train_opts *o)
{
    int64_t mp = o->model.tp * o->model.pp;
    MG_RETURN_IF(o->world_size < mp, MG_ERR_ARG,
                 "--tensor-model-parallel-size %lld x --pipeline-model-parallel-size %lld "
                 "needs %lld processes (one per model shard), this launch has %lld: run "
                 "mpirun -np %lld mg-train ... (or srun), or --dry-run to plan it",
                 (long long)o->model.tp, (long long)o->model.pp, (long long)mp,
                 (long long)o->world_size, (long long)mp);
    return MG_OK;
}

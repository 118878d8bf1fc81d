/* launch_check.h — mg-train's check that this launch has a process for every model shard,
 * made before any file is read: by the options for a launch of several ranks, by main for
 * one process (which plans any layout: --dry-run, --dump-samples).
 *
 * Contract:
 *   - mg_train_check_launch: MG_ERR_ARG when world_size < TP x PP, naming both sizes, the
 *     processes the layout needs and the launch that gives them (mpirun -np N, srun, or
 *     --dry-run to plan it); MG_OK otherwise (a world that TP x PP does not divide is the
 *     options' error, options.h).
 */
#ifndef MG_TRAIN_LAUNCH_CHECK_H
#define MG_TRAIN_LAUNCH_CHECK_H

#include "options.h"

mg_status mg_train_check_launch(const mg_train_opts *o);

#endif

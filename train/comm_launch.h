/* comm_launch.h — how this process was launched, from its environment: the world size, its
 * rank and what the backends need to find each other.
 *
 * Contract (first match wins):
 *   - torchrun's environment (below) with TORCHELASTIC_RUN_ID, which torchrun always sets:
 *     torchrun started under srun or mpirun inherits their variables (one task per node),
 *     but its processes' ranks are torchrun's.
 *   - mpirun (Open MPI: OMPI_COMM_WORLD_SIZE / OMPI_COMM_WORLD_RANK /
 *     OMPI_COMM_WORLD_LOCAL_RANK), srun job steps (SLURM_STEP_NUM_TASKS / SLURM_PROCID /
 *     SLURM_LOCALID; a batch script outside srun has no SLURM_STEP_NUM_TASKS and is one
 *     process) and other PMI launchers (PMI_SIZE / PMI_RANK): kind MPI, the ranks are MPI's.
 *   - torchrun's environment (WORLD_SIZE, RANK, LOCAL_RANK, MASTER_ADDR, MASTER_PORT): kind
 *     ENV; MASTER_ADDR (default 127.0.0.1) and MASTER_PORT (default 29500, torchrun's) are
 *     where rank 0 hands out the NCCL unique id.
 *   - Otherwise one process (kind SINGLE, size 1).
 *   - Values that are not integers, a rank outside [0, size) or a port outside 1..65535
 *     are MG_ERR_ARG naming the variable.
 */
#ifndef MG_TRAIN_COMM_LAUNCH_H
#define MG_TRAIN_COMM_LAUNCH_H

#include <stdint.h>

#include "mg/error.h"

typedef enum { MG_LAUNCH_SINGLE = 0, MG_LAUNCH_MPI, MG_LAUNCH_ENV } mg_comm_launch_kind;

typedef struct {
    mg_comm_launch_kind kind;
    const char *launcher;      /* "mpirun", "srun", "PMI", "torchrun environment", "none" */
    int64_t world_size, rank, local_rank;
    const char *master_addr;   /* ENV only */
    int master_port;
} mg_comm_launch;

/* A getenv-like lookup (NULL when unset); ctx is passed through. */
typedef const char *(*mg_comm_env_fn)(const char *name, void *ctx);

/* From the process environment. */
mg_status mg_comm_launch_detect(mg_comm_launch *l);
/* From any lookup (tests). */
mg_status mg_comm_launch_from(mg_comm_launch *l, mg_comm_env_fn env, void *ctx);

#endif

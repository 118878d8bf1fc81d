#!/usr/bin/env bash
# scripts/cluster/train.sh — mg-train on several nodes: writes the Slurm batch script that
# launches one mg-train process per rank and submits it (sbatch), or prints it (--dry-run).
# mg-train reads its rank and the world size from the launcher (docs/DISTRIBUTED.md), and the
# data-parallel size is world / (TP x PP), as Megatron's: the script checks that it divides.
#
#   scripts/cluster/train.sh [--dry-run] --nodes N --tasks-per-node T
#       [--launcher srun|mpirun|torchrun] [--hostfile FILE] [--after JOBID] -- MG-TRAIN-FLAGS...
#
#   --after JOBID    start once job JOBID succeeded (the merge job of preprocess.sh)
#   --nodes N, --tasks-per-node T   N x T ranks (CPU: one rank per socket or per node, its
#                    cores for OpenMP: OMP_NUM_THREADS = Slurm's --cpus-per-task when set,
#                    else the node's cores / T)
#   --launcher srun  (default) `srun --mpi=pmix mg-train ...`: Slurm starts the ranks;
#              mpirun  `mpirun -np N*T --map-by ppr:T:node mg-train ...`: Open MPI inside the
#                      allocation; with --hostfile FILE it runs right here, without Slurm;
#              torchrun  `srun` one torchrun per node (--no-python, c10d rendezvous on the
#                      first node) sets WORLD_SIZE/RANK/LOCAL_RANK/MASTER_ADDR/MASTER_PORT:
#                      the bootstrap of the NCCL (GPU) trainer; the CPU trainer needs MPI and
#                      refuses it. mg-train takes torchrun's ranks over the Slurm
#                      variables its processes inherit (torchrun sets TORCHELASTIC_RUN_ID).
#   MG-TRAIN-FLAGS   every mg-train flag, --tensor-model-parallel-size and
#                    --pipeline-model-parallel-size included (default 1)
# Slurm's variables choose partition, account and time (SBATCH_PARTITION, ...); MG_BIN the
# tools (default bin/ of this checkout, on a file system the nodes share).
# Exit status: 0 done (or submitted), 1 a failure, 2 usage error or a layout that does not fit.
set -euo pipefail
. "$(dirname "$0")/common.sh"
USAGE="scripts/cluster/train.sh [--dry-run] --nodes N --tasks-per-node T [--launcher srun|mpirun|torchrun] [--hostfile FILE] [--after JOBID] -- MG-TRAIN-FLAGS..."

nodes= tasks= launcher=srun hostfile= after=
flags=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) cl_dry=1; shift ;;
    --nodes) [ $# -ge 2 ] && [[ $2 =~ ^[1-9][0-9]*$ ]] || cl_usage "$USAGE"; nodes=$2; shift 2 ;;
    --tasks-per-node) [ $# -ge 2 ] && [[ $2 =~ ^[1-9][0-9]*$ ]] || cl_usage "$USAGE"
                      tasks=$2; shift 2 ;;
    --launcher) [ $# -ge 2 ] && [[ $2 =~ ^(srun|mpirun|torchrun)$ ]] || cl_usage "$USAGE"
                launcher=$2; shift 2 ;;
    --hostfile) [ $# -ge 2 ] || cl_usage "$USAGE"; hostfile=$2; shift 2 ;;
    --after) [ $# -ge 2 ] || cl_usage "$USAGE"; after=$2; shift 2 ;;
    --) shift; flags=("$@"); break ;;
    *) cl_usage "$USAGE" ;;
  esac
done
[ -n "$nodes" ] && [ -n "$tasks" ] && [ ${#flags[@]} -gt 0 ] || cl_usage "$USAGE"
[ -z "$hostfile" ] || { [ "$launcher" = mpirun ] && [ -z "$after" ]; } || cl_usage "$USAGE"

# The value of an mg-train flag (--name V or --name=V), else the default.
flag_value() {
  local name=$1 value=$2 i
  for i in "${!flags[@]}"; do
    case "${flags[$i]}" in
      "$name") value=${flags[$((i + 1))]:-} ;;
      "$name="*) value=${flags[$i]#"$name="} ;;
    esac
  done
  echo "$value"
}

world=$((nodes * tasks))
tp=$(flag_value --tensor-model-parallel-size 1)
pp=$(flag_value --pipeline-model-parallel-size 1)
[[ $tp =~ ^[1-9][0-9]*$ && $pp =~ ^[1-9][0-9]*$ ]] || cl_usage "$USAGE"
if [ $((world % (tp * pp))) -ne 0 ]; then
  echo "$(basename "$0"): error: $world ranks ($nodes nodes x $tasks) are not a multiple of" \
       "TP x PP = $tp x $pp" >&2
  exit 2
fi
layout="$world ranks = TP $tp x PP $pp x DP $((world / (tp * pp)))"
train=$(cl_quote "$cl_bin/mg-train" "${flags[@]}")

launch_line() {
  case "$launcher" in
    srun) echo "srun --mpi=pmix $train" ;;
    mpirun) echo "mpirun -np $world --map-by ppr:$tasks:node --bind-to none -x OMP_NUM_THREADS $train" ;;
    torchrun)
      echo 'head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)'
      echo "srun --ntasks-per-node=1 torchrun --no-python --nnodes=$nodes --nproc-per-node=$tasks \\"
      echo "  --rdzv-backend=c10d --rdzv-endpoint=\"\$head:29500\" --rdzv-id=\"\$SLURM_JOB_ID\" \\"
      echo "  $train" ;;
  esac
}

batch_script() {
  echo "#!/bin/bash"
  printf '#SBATCH %s\n' --job-name=mg-train --nodes="$nodes" --ntasks-per-node="$tasks" \
    --exclusive --output=mg-train-%j.log ${after:+"--dependency=afterok:$after"}
  cat <<EOF
# mg-train: $layout ($launcher)
set -euo pipefail
export OMP_NUM_THREADS=\${SLURM_CPUS_PER_TASK:-\$(( \$(nproc) / $tasks ))}
$(launch_line)
EOF
}

if [ -n "$hostfile" ]; then
  # Open MPI without Slurm: the hosts and slots of FILE, run from here.
  echo "# mg-train: $layout (mpirun, hosts of $hostfile)"
  cmd=(mpirun -np "$world" --hostfile "$hostfile" --map-by "ppr:$tasks:node" --bind-to none
       -x OMP_NUM_THREADS "$cl_bin/mg-train" "${flags[@]}")
  cl_run "${cmd[@]}"
elif [ "$cl_dry" = 1 ]; then
  echo "# sbatch reads this batch script from its standard input:"
  batch_script
else
  cl_need_sbatch
  job=$(batch_script | sbatch --parsable)
  echo "submitted: job $job, mg-train: $layout ($launcher); log mg-train-$job.log"
fi

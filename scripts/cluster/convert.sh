#!/usr/bin/env bash
# scripts/cluster/convert.sh — the trained checkpoint to Hugging Face on a Slurm cluster: one
# job on one node runs `mg-convert --saver hf --verify` (every core writes; memory stays at a
# few tensors whatever the model size), after the training job when --after names it.
#
#   scripts/cluster/convert.sh [--dry-run] [--after JOBID] --load-dir CKPT --save-dir HF
#       [-- MG-CONVERT-FLAGS...]
#
#   --after JOBID    start once job JOBID succeeded (sbatch --dependency=afterok:JOBID)
#   --load-dir CKPT  mg-train's --save folder (any TP/PP; torch or torch_dist)
#   --save-dir HF    the Hugging Face folder to write (config.json + safetensors)
#   MG-CONVERT-FLAGS  more flags: --tokenizer-dir DIR, --true-vocab-size V, --target-dtype bf16
# Slurm's variables choose partition, account and time (SBATCH_PARTITION, ...); MG_BIN the
# tools (default bin/ of this checkout, on a file system the nodes share).
# Exit status: 0 submitted (or printed), 1 a failure, 2 usage error.
set -euo pipefail
. "$(dirname "$0")/common.sh"
USAGE="scripts/cluster/convert.sh [--dry-run] [--after JOBID] --load-dir CKPT --save-dir HF [-- MG-CONVERT-FLAGS...]"

after= load= save=
flags=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) cl_dry=1; shift ;;
    --after) [ $# -ge 2 ] || cl_usage "$USAGE"; after=$2; shift 2 ;;
    --load-dir) [ $# -ge 2 ] || cl_usage "$USAGE"; load=$2; shift 2 ;;
    --save-dir) [ $# -ge 2 ] || cl_usage "$USAGE"; save=$2; shift 2 ;;
    --) shift; flags=("$@"); break ;;
    *) cl_usage "$USAGE" ;;
  esac
done
[ -n "$load" ] && [ -n "$save" ] || cl_usage "$USAGE"

dep=()
[ -n "$after" ] && dep=(--dependency="afterok:$after")
[ "$cl_dry" = 1 ] || cl_need_sbatch
job=$(cl_sbatch --job-name=mg-convert "${dep[@]}" --nodes=1 --ntasks=1 --exclusive \
  --output=mg-convert-%j.log --wrap="exec $(cl_quote "$cl_bin/mg-convert" --load-dir "$load" \
  --save-dir "$save" --saver hf --verify "${flags[@]}")")
[ "$cl_dry" = 1 ] || echo "submitted: job $job, $load -> $save (Hugging Face); log mg-convert-$job.log"

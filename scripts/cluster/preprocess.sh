#!/usr/bin/env bash
# scripts/cluster/preprocess.sh — many input shards to one Megatron dataset on a Slurm
# cluster: a job array runs one mg-preprocess per input shard (one node each, every core
# tokenizing), then a job that depends on it merges the shard datasets in input order with
# `mg-preprocess --merge` (Megatron's tools/merge_datasets.py). The merged PREFIX_{key}_
# {document|sentence}.bin/.idx are byte-identical to one mg-preprocess over the same inputs
# in the same order (tests/cli/cl_preprocess_local.sh proves it).
#
#   scripts/cluster/preprocess.sh [--dry-run] [--nodes N | --local]
#       --output-prefix PREFIX INPUT... -- MG-PREPROCESS-FLAGS...
#
#   --nodes N        at most N array tasks at once (sbatch --array=0-(S-1)%N); default: all
#   --dry-run        print the sbatch commands and every task's commands; run nothing
#   --local          run the same tasks one after the other on this machine (no Slurm)
#   INPUT...         the shards: files (or folders) in the order the documents should take
#   MG-PREPROCESS-FLAGS   the tokenizer and the rest (--tokenizer-type ... --append-eod
#                    --json-keys ... --workers ...), as for one mg-preprocess run
#
# Shard i writes PREFIX.shards/shard_%05d_{key}_{level}.bin/.idx; the merge job moves each
# key's shards into PREFIX.shards/{key}/, merges them into PREFIX_{key}_{level} and removes
# PREFIX.shards. The inputs go to PREFIX.inputs (one per line), which the array tasks read.
# Internal entry points (what the jobs run): --task I (shard I) and --merge.
# Paths are kept as given: Slurm runs the jobs in the submitting folder, which must be on a
# file system the nodes share, as must the tools (MG_BIN, default bin/ of this checkout).
# Exit status: 0 done (or submitted), 1 a failure, 2 usage error.
set -euo pipefail
. "$(dirname "$0")/common.sh"
USAGE="scripts/cluster/preprocess.sh [--dry-run] [--nodes N | --local] --output-prefix PREFIX INPUT... -- MG-PREPROCESS-FLAGS..."

mode=submit nodes=0 prefix= task=
inputs=() flags=()
while [ $# -gt 0 ]; do
  case "$1" in
    --dry-run) cl_dry=1; shift ;;
    --local) mode=local; shift ;;
    --nodes) [ $# -ge 2 ] && [[ $2 =~ ^[1-9][0-9]*$ ]] || cl_usage "$USAGE"; nodes=$2; shift 2 ;;
    --output-prefix) [ $# -ge 2 ] || cl_usage "$USAGE"; prefix=$2; shift 2 ;;
    --task) [ $# -ge 2 ] && [[ $2 =~ ^[0-9]+$ ]] || cl_usage "$USAGE"; mode=task task=$2; shift 2 ;;
    --merge) mode=merge; shift ;;
    --) shift; flags=("$@"); break ;;
    -*) cl_usage "$USAGE" ;;
    *) inputs+=("$1"); shift ;;
  esac
done
[ -n "$prefix" ] || cl_usage "$USAGE"
[ "$mode" = local ] && [ "$cl_dry" = 1 ] && cl_usage "$USAGE"
shards=$prefix.shards list=$prefix.inputs

# The dataset names one run writes: {key}_{level} for each --json-keys key.
dataset_names() {
  local keys=() level=document i=0 f
  while [ $i -lt ${#flags[@]} ]; do
    f=${flags[$i]}
    case "$f" in
      --split-sentences) level=sentence ;;
      --json-keys=*) keys+=("${f#--json-keys=}") ;;
      --json-keys)
        while [ $((i + 1)) -lt ${#flags[@]} ] && [[ ${flags[$((i + 1))]} != -* ]]; do
          i=$((i + 1)); keys+=("${flags[$i]}")
        done ;;
    esac
    i=$((i + 1))
  done
  [ ${#keys[@]} -gt 0 ] || keys=(text)
  for f in "${keys[@]}"; do echo "${f}_$level"; done
}

# The commands of array task I (the shard named on line I+1 of the input list).
task_commands() {
  local i=$1 input=$2
  cl_run "$cl_bin/mg-preprocess" --input "$input" \
    --output-prefix "$(printf '%s/shard_%05d' "$shards" "$i")" "${flags[@]}"
}

merge_commands() {
  local name
  for name in $(dataset_names); do
    if [ "$cl_dry" = 1 ]; then
      cl_quote mkdir -p "$shards/$name"
      echo "mv $(printf '%q' "$shards")/shard_*_$name.bin $(printf '%q' "$shards")/shard_*_$name.idx $(printf '%q' "$shards/$name")/"
    else
      mkdir -p "$shards/$name"
      mv "$shards"/shard_*_"$name".bin "$shards"/shard_*_"$name".idx "$shards/$name"/
    fi
    cl_run "$cl_bin/mg-preprocess" --merge --input "$shards/$name" --output-prefix "${prefix}_$name"
  done
  cl_run rm -rf "$shards" "$list"
}

case "$mode" in
  task)
    input=$(sed -n "$((task + 1))p" "$list")
    [ -n "$input" ] || cl_die "no input $task in $list"
    task_commands "$task" "$input"
    exit 0 ;;
  merge) merge_commands; exit 0 ;;
esac

[ ${#inputs[@]} -gt 0 ] || cl_usage "$USAGE"
[ ${#flags[@]} -gt 0 ] || cl_usage "$USAGE"
n=${#inputs[@]}
if [ "$cl_dry" = 0 ]; then
  [ -x "$cl_bin/mg-preprocess" ] || cl_die "'$cl_bin/mg-preprocess' is not built: run make"
  for f in "${inputs[@]}"; do [ -e "$f" ] || cl_die "no input '$f'"; done
  [ "$mode" = local ] && rm -rf "$shards"
  [ -e "$shards" ] && cl_die "'$shards' exists (a job running, or one that failed): remove it"
  mkdir -p "$shards"
  printf '%s\n' "${inputs[@]}" >"$list"
fi

if [ "$mode" = local ]; then
  for i in $(seq 0 $((n - 1))); do task_commands "$i" "${inputs[$i]}"; done
  merge_commands
  exit 0
fi

[ "$cl_dry" = 1 ] || cl_need_sbatch
self=$(cd "$(dirname "$0")" && pwd)/$(basename "$0")
limit=; [ "$nodes" -gt 0 ] && limit=%$nodes
at_once=$n; [ "$nodes" -gt 0 ] && [ "$nodes" -lt "$n" ] && at_once=$nodes
[ "$cl_dry" = 1 ] && echo "# shards: $n, at most $at_once at once (one node each); the inputs listed in $list"
array=$(cl_sbatch --job-name=mg-preprocess --array="0-$((n - 1))$limit" --nodes=1 --ntasks=1 \
  --exclusive --output="$prefix.shard-%a.log" \
  --wrap="exec $(cl_quote "$self" --task)"' "$SLURM_ARRAY_TASK_ID" '"$(cl_quote \
  --output-prefix "$prefix" -- "${flags[@]}")")
merge=$(cl_sbatch --job-name=mg-preprocess-merge --dependency="afterok:$array" --nodes=1 \
  --ntasks=1 --output="$prefix.merge.log" \
  --wrap="exec $(cl_quote "$self" --merge --output-prefix "$prefix" -- "${flags[@]}")")
if [ "$cl_dry" = 1 ]; then
  for i in $(seq 0 $((n - 1))); do
    echo "# array task $i:"
    task_commands "$i" "${inputs[$i]}"
  done
  echo "# merge job (after every array task succeeded):"
  merge_commands
else
  echo "submitted: array job $array ($n shards), merge job $merge -> ${prefix}_*"
fi

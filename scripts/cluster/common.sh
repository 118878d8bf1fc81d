# scripts/cluster/common.sh — sourced by the cluster recipe's scripts (preprocess.sh,
# train.sh, convert.sh); defines:
#   cl_root          the repository root; cl_bin: the tools' folder (MG_BIN, default root/bin)
#   cl_usage MSG     prints "usage: MSG" on stderr and exits 2 (a usage error)
#   cl_die MSG       prints "SCRIPT: error: MSG" on stderr and exits 1
#   cl_quote ARGS    the arguments as one shell-quoted line (single quotes where needed)
#   cl_run ARGS      with cl_dry=1 prints the command (quoted), else runs it
#   cl_sbatch ARGS   sbatch --parsable ARGS: with cl_dry=1 prints it and the job id stands
#                    for it as "JOB_<n>" (n counts the submissions); else submits and prints
#                    the job id (stdout) — for --dependency=afterok:ID
#   cl_need_sbatch   exits 1 when sbatch is missing (the real, not dry, submission)
# Slurm's own variables pick partition, account and time for every submission
# (SBATCH_PARTITION, SBATCH_ACCOUNT, SBATCH_TIMELIMIT, ...: man sbatch, "INPUT ENVIRONMENT
# VARIABLES"); nothing here overrides them.
cl_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cl_bin=${MG_BIN:-$cl_root/bin}
case "$cl_bin" in /*) ;; *) cl_bin=$PWD/$cl_bin ;; esac
cl_dry=0
cl_jobs=0
exec 3>&1  # cl_sbatch's dry print: the caller's stdout, also inside $(...)

cl_usage() { echo "usage: $1" >&2; exit 2; }
cl_die() { echo "$(basename "$0"): error: $*" >&2; exit 1; }

cl_quote() {
  local out="" a
  for a in "$@"; do out+="${out:+ }$(cl_quote1 "$a")"; done
  printf '%s\n' "$out"
}

# One word for the shell: as it is when plain, else in single quotes ('--opt=' stays outside).
cl_quote1() {
  local a=$1 opt=
  if [[ $a =~ ^[A-Za-z0-9_./:=%@+,-]+$ ]]; then printf '%s' "$a"; return; fi
  if [[ $a =~ ^(--[a-z-]+=)(.*)$ ]]; then opt=${BASH_REMATCH[1]} a=${BASH_REMATCH[2]}; fi
  printf "%s'%s'" "$opt" "${a//\'/\'\\\'\'}"
}

cl_run() {
  if [ "$cl_dry" = 1 ]; then cl_quote "$@"; else "$@"; fi
}

cl_need_sbatch() {
  command -v sbatch >/dev/null ||
    cl_die "sbatch not found: run this on a Slurm login node, or use --dry-run to see the commands"
}

cl_sbatch() {
  cl_jobs=$((cl_jobs + 1))
  if [ "$cl_dry" = 1 ]; then
    cl_quote sbatch --parsable "$@" >&3
    echo "JOB_$cl_jobs"
  else
    sbatch --parsable "$@"
  fi
}

#!/usr/bin/env bash
# Spread a hetsim sweep over a Slurm job array: N array tasks each run one shard of the sweep
# (`hetsim sweep ... --shard I/N`), then a job that depends on them merges the shards into the
# CSV (and plot) one unsharded run writes (`hetsim sweep merge`).
#
# Usage:
#   scripts/slurm-sweep.sh [-n SHARDS] [-d DIR] [--local] -o OUT.csv [--plot OUT.svg] -- \
#       SCENARIO.toml [hetsim sweep options: --sched, --vary, --seeds, --set, -j]
#
#   -n SHARDS   array tasks (default 8); a shard runs every SHARDS-th run of the sweep
#   -d DIR      where the shard CSVs and the jobs' logs go (default: OUT.csv's name + .shards/)
#   --local     run the shards one after the other here, then merge (no Slurm: to try a sweep)
#   -o, --plot  the merged CSV and plot
# Environment:
#   HETSIM       the hetsim binary (default: `hetsim` on PATH, as `cargo install --path .` puts it)
#   SBATCH_ARGS  extra sbatch options for every job (account, partition, time limit, ...)
#
# Prints the job ids (array, merge) it submitted; the merge job fails if a shard failed.
set -euo pipefail

shards=8 dir="" local=0 out="" plot=""
while [ $# -gt 0 ]; do
    case "$1" in
        -n) shards="$2"; shift 2 ;;
        -d) dir="$2"; shift 2 ;;
        --local) local=1; shift ;;
        -o|--output) out="$2"; shift 2 ;;
        --plot) plot="$2"; shift 2 ;;
        --) shift; break ;;
        *) echo "slurm-sweep.sh: unknown option $1 (the sweep's own options go after --)" >&2; exit 2 ;;
    esac
done
[ -n "$out" ] || { echo "slurm-sweep.sh: -o OUT.csv is required" >&2; exit 2; }
[ $# -ge 1 ] || { echo "slurm-sweep.sh: give the scenario and sweep options after --" >&2; exit 2; }
case "$shards" in ''|*[!0-9]*|0) echo "slurm-sweep.sh: -n expects a count >= 1, got $shards" >&2; exit 2 ;; esac
hetsim="${HETSIM:-hetsim}"
dir="${dir:-$out.shards}"
mkdir -p "$dir"

# The sweep's arguments, quoted for a shell command line.
sweep_args="$(printf '%q ' "$@")"
merge_args=(-o "$out")
[ -n "$plot" ] && merge_args+=(--plot "$plot")
shard_files() { for i in $(seq 1 "$shards"); do printf '%s\n' "$dir/shard-$i.csv"; done; }

if [ "$local" = 1 ]; then
    for i in $(seq 1 "$shards"); do
        "$hetsim" sweep "$@" --shard "$i/$shards" -o "$dir/shard-$i.csv"
    done
    mapfile -t files < <(shard_files)
    "$hetsim" sweep merge "${files[@]}" "${merge_args[@]}"
    echo "merged $shards shards into $out"
    exit 0
fi

command -v sbatch >/dev/null || { echo "slurm-sweep.sh: sbatch not found (use --local to run here)" >&2; exit 2; }
hetsim_q="$(printf '%q' "$hetsim")"
dir_q="$(printf '%q' "$dir")"
# shellcheck disable=SC2086
array=$(sbatch --parsable ${SBATCH_ARGS:-} --array="1-$shards" --job-name=hetsim-sweep \
    --output="$dir/shard-%a.log" \
    --wrap="$hetsim_q sweep $sweep_args --shard \$SLURM_ARRAY_TASK_ID/$shards -o $dir_q/shard-\$SLURM_ARRAY_TASK_ID.csv")
files_q="$(shard_files | while read -r f; do printf '%q ' "$f"; done)"
merge_q="$(printf '%q ' "${merge_args[@]}")"
# shellcheck disable=SC2086
merge=$(sbatch --parsable ${SBATCH_ARGS:-} --dependency="afterok:$array" --job-name=hetsim-merge \
    --output="$dir/merge.log" \
    --wrap="$hetsim_q sweep merge $files_q $merge_q")
echo "submitted array job $array ($shards shards) and merge job $merge; the CSV will be $out"

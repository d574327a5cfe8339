#!/usr/bin/env bash
# Oracle for hetsim's StarPU trace replay: runs StarPU's own `starpu_replay` (SimGrid mode) on the
# recorded task graphs in traces/starpu/*/tasks.rec and, optionally, the original StarPU example
# that produced each graph, and writes one CSV row per (trace, scheduler, seed).
#
# Needs a StarPU 1.4 build configured with --enable-simgrid (starpu_replay only exists in SimGrid
# builds; see traces/starpu/PROVENANCE.md for the build steps). Nothing here builds StarPU.
#
# Usage:
#   STARPU_REPLAY=<path to starpu_replay> [STARPU_EXAMPLES=<StarPU build dir>/examples] \
#     scripts/oracle-starpu-replay.sh [-o out.csv] [trace ...]
#   (traces default to every directory under traces/starpu holding a tasks.rec or tasks.rec.gz)
#
# Environment (all optional except STARPU_REPLAY):
#   STARPU_REPLAY    the starpu_replay binary
#   STARPU_EXAMPLES  the examples/ directory of the same (SimGrid) StarPU build tree; when set, the
#                    original example is run too (original_sim_ms). The stencil trace needs the
#                    implicit_stencil built with the SimGrid CUDA stubs described in PROVENANCE.md.
#   PERF_MODEL_DIR   STARPU_PERF_MODEL_DIR (default: tests/data/starpu-samples/starpu-sampling);
#                    the extra history files in traces/starpu/perfmodels are overlaid on it
#   MACHINE          STARPU_HOSTNAME (default: mirage)
#   SCHEDS           schedulers (default: "dmda dmdar dmdas ws eager random")
#   SEEDS            STARPU_RAND_SEED values for 'random' (default: "1 2 3"); other schedulers
#                    do not draw random numbers and are run once (seed column empty)
#   NICE             niceness of every run (default: 10)
#   TRACES_DIR       default: traces/starpu
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
out=""
if [[ "${1:-}" == "-o" ]]; then out="$2"; shift 2; fi

: "${STARPU_REPLAY:?set STARPU_REPLAY to the starpu_replay binary of a SimGrid StarPU build}"
STARPU_EXAMPLES="${STARPU_EXAMPLES:-}"
PERF_MODEL_DIR="${PERF_MODEL_DIR:-$root/tests/data/starpu-samples/starpu-sampling}"
MACHINE="${MACHINE:-mirage}"
SCHEDS="${SCHEDS:-dmda dmdar dmdas ws eager random}"
SEEDS="${SEEDS:-1 2 3}"
NICE="${NICE:-10}"
TRACES_DIR="${TRACES_DIR:-$root/traces/starpu}"

# The original StarPU example behind each recorded trace (path under examples/, arguments) and how
# to read its simulated time from its standard output.
example_of() {
  case "$1" in
    cholesky-9600-*)     echo "cholesky/cholesky_implicit -size 9600 -nblocks 10" ;;
    lu-float-9600-*)     echo "lu/lu_implicit_example_float -size 9600 -nblocks 10" ;;
    stencil-32x16-*)     echo "stencil/implicit_stencil -nbz 32 -sizez 4096 -niter 16" ;;
    *)                   echo "" ;;
  esac
}
parse_original() { # stdout of the example -> simulated ms
  awk '/^Computation took:/ {print $3; exit}
       /^[0-9]+\t[0-9.]+\t[0-9.]+/ {print $2; exit}'
}

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT

# Perf-model directory: the given one, plus traces/starpu/perfmodels/codelets/45/* if present.
pmd="$PERF_MODEL_DIR"
if [[ -d "$TRACES_DIR/perfmodels/codelets/45" ]]; then
  pmd="$tmp/perfmodels"
  mkdir -p "$pmd/codelets/45"
  ln -s "$(cd "$PERF_MODEL_DIR" && pwd)/bus" "$pmd/bus"
  for f in "$PERF_MODEL_DIR"/codelets/45/* "$TRACES_DIR"/perfmodels/codelets/45/*; do
    ln -sf "$(cd "$(dirname "$f")" && pwd)/$(basename "$f")" "$pmd/codelets/45/"
  done
fi

have_time=0; [[ -x /usr/bin/time ]] && have_time=1
run_timed() { # $1 = file for "wall_s maxrss_kb", rest = command; stdout/stderr to $tmp/run.{out,err}
  local tf="$1"; shift
  if (( have_time )); then
    /usr/bin/time -f '%e %M' -o "$tf" nice -n "$NICE" "$@" > "$tmp/run.out" 2> "$tmp/run.err" || return 1
  else
    local t0 t1; t0=$(date +%s.%N)
    nice -n "$NICE" "$@" > "$tmp/run.out" 2> "$tmp/run.err" || return 1
    t1=$(date +%s.%N); echo "$(awk -v a="$t0" -v b="$t1" 'BEGIN{printf "%.2f", b-a}') " > "$tf"
  fi
}

rel() { case "$1" in "$root"/*) echo "${1#"$root"/}" ;; *) echo "(outside the repository)" ;; esac; }

if [[ $# -gt 0 ]]; then traces=("$@"); else
  traces=(); for d in "$TRACES_DIR"/*/; do
    [[ -e "$d/tasks.rec" || -e "$d/tasks.rec.gz" ]] && traces+=("$(basename "$d")"); done
fi

unset STARPU_FXT_TRACE STARPU_FXT_PREFIX STARPU_NCPU STARPU_NCUDA STARPU_NOPENCL STARPU_CALIBRATE
export STARPU_HOSTNAME="$MACHINE" STARPU_PERF_MODEL_DIR="$pmd"

{
  pc=$(ls "$(dirname "$(dirname "$STARPU_REPLAY")")"/lib/pkgconfig/starpu-1.*.pc 2>/dev/null | head -1 || true)
  ver=$( [[ -n "$pc" ]] && awk '/^Version:/ {print $2}' "$pc" || echo unknown)
  sg=$(dpkg-query -W -f='${Version}' libsimgrid-dev 2>/dev/null || echo unknown)
  echo "# starpu_replay oracle: StarPU $ver starpu_replay (SimGrid mode, libsimgrid $sg) on the recorded tasks.rec files of $(rel "$TRACES_DIR"),"
  echo "# machine $MACHINE (STARPU_HOSTNAME), perf models $(rel "$PERF_MODEL_DIR") + $(rel "$TRACES_DIR")/perfmodels, default workers; run $(date -u +%Y-%m-%d) on $(nproc) cores, nice $NICE."
  echo "# replay_sim_ms = what starpu_replay prints (simulated ms from before reading tasks.rec to the end of the last task);"
  echo "# original_sim_ms = what the original example prints under the same scheduler/seed (empty if STARPU_EXAMPLES unset): the Cholesky and LU"
  echo "#   examples print whole ms; implicit_stencil (built with the SimGrid CUDA stubs of traces/starpu/PROVENANCE.md) times its iterations only;"
  echo "# ntasks = tasks.rec records with a WorkerId (codelet tasks; internal/empty tasks excluded); seed = STARPU_RAND_SEED (random only);"
  echo "# wall_s, maxrss_kb = wall time and max RSS of the starpu_replay run."
  echo "trace,machine,sched,seed,replay_sim_ms,original_sim_ms,ntasks,wall_s,maxrss_kb"
} > "$tmp/csv"

for tr in "${traces[@]}"; do
  d="$TRACES_DIR/$tr"
  if [[ -e "$d/tasks.rec" ]]; then rec="$d/tasks.rec"; else gzip -dc "$d/tasks.rec.gz" > "$tmp/$tr.tasks.rec"; rec="$tmp/$tr.tasks.rec"; fi
  ntasks=$(grep -c '^WorkerId:' "$rec" || true)
  ex=$(example_of "$tr")
  for sched in $SCHEDS; do
    if [[ "$sched" == random ]]; then seeds="$SEEDS"; else seeds="-"; fi
    for seed in $seeds; do
      if [[ "$seed" == "-" ]]; then unset STARPU_RAND_SEED; seedcol=""; else export STARPU_RAND_SEED="$seed"; seedcol="$seed"; fi
      export STARPU_SCHED="$sched"
      rep=""; wall=""; rss=""
      if run_timed "$tmp/t" "$STARPU_REPLAY" "$rec"; then
        rep=$(awk '/ ms/ {print $1; exit}' "$tmp/run.out")
      else
        echo "starpu_replay failed on $tr ($sched $seedcol):" >&2; tail -3 "$tmp/run.err" >&2
      fi
      read -r wall rss < "$tmp/t" || true
      orig=""
      if [[ -n "$STARPU_EXAMPLES" && -n "$ex" ]]; then
        # shellcheck disable=SC2086
        if run_timed "$tmp/t2" "$STARPU_EXAMPLES"/$ex; then orig=$(parse_original < "$tmp/run.out"); fi
      fi
      echo "$tr,$MACHINE,$sched,$seedcol,$rep,$orig,$ntasks,$wall,$rss" >> "$tmp/csv"
      echo "$tr $sched ${seedcol:--}: replay $rep ms, original ${orig:-?} ms ($wall s)" >&2
    done
  done
done

if [[ -n "$out" ]]; then cp "$tmp/csv" "$out"; else cat "$tmp/csv"; fi

#!/usr/bin/env bash
# Oracle runs of StarPU 1.4's own examples in SimGrid mode, on one node, for hetsim's validation
# (docs/validation/README.md, section "StarPU 1.4 in SimGrid mode (single node)").
#
# It only runs an existing StarPU build; it does not build StarPU. The build must be StarPU 1.4
# configured with --enable-simgrid and examples built (the README section gives the configure line),
# with a BLAS found by configure: without one, examples/mult/xgemm.c has no CPU implementation and
# gemm runs on the CUDA workers only (the header says which).
# Each run is one of StarPU's examples, unmodified:
#   chol  examples/cholesky/cholesky_implicit -size n -nblocks n/tile
#   lu    examples/lu/lu_implicit_example_float -size n -nblocks n/tile      (no pivoting)
#   gemm  examples/mult/sgemm -3d -size n -nblocks n/tile -iter 1              (tiled C += A.B)
# with STARPU_HOSTNAME=<machine>, STARPU_SCHED=<sched> and STARPU_PERF_MODEL_DIR=<sampling dir>.
#
# Usage:
#   scripts/oracle-starpu14.sh --starpu DIR [--sampling DIR] [--gemini-sampling DIR] [--out CSV]
#       [--jobs 1|2] [--phases "A B C CG D E F"] [--apps "chol lu gemm"] [--machines "mirage ..."]
#       [--scheds "dmda ..."] [--random-seeds N] [--cells FILE] [--timeout SECONDS]
#       [--big-timeout SECONDS] [--logs DIR]
#       [--config-log FILE] [--provenance TEXT] [--note TEXT]... [--resume | --rewrite-only] [--list]
#   --starpu DIR     StarPU install prefix (lib/starpu/examples/, bin/) or build tree
#                    (examples/<dir>/<prog>, tools/); env STARPU14_DIR.
#   --sampling DIR   StarPU sampling directory (bus/, codelets/45/) of attila, mirage, idgraf, sirocco,
#                    hannibal, hannibal-pitch; env STARPU_SAMPLING_DIR; default
#                    tests/data/starpu-samples/starpu-sampling of this repository.
#   --gemini-sampling DIR  the ICPP2023 gemini sampling directory; env STARPU_GEMINI_SAMPLING_DIR;
#                    default tests/data/starpu-samples/starpu-sampling-icpp2023-gemini.
#   --out CSV        default docs/validation/starpu14-simgrid.csv of this repository. Rows are appended
#                    as runs end (so a partial file is usable); at the end the file is rewritten with the
#                    header (including what aborted or timed out) and the rows in plan order.
#   --jobs N         runs in parallel (1 or 2; the machine this was measured on has 2 cores).
#   --phases         which parts of the plan (most important first):
#                    A  chol on mirage, attila, sirocco: every scheduler, n = 9600 19200 38400, tile 960
#                    B  lu and gemm on the same machines and sizes
#                    C  idgraf (all apps) and gemini (gemm) at the same sizes
#                    B1, B2, C1, C2: B or C at n = 9600 and 19200 only, or at n = 38400 only (so that the
#                       long n = 38400 runs can come after the other phases, e.g. --phases "A B1 D C1 B2 C2 E F");
#                       B2 = B2L (lu) + B2G (gemm, every scheduler but random) + B2R (gemm, random)
#                    CG gemm on gemini with STARPU_NCPU=0 (gemini's sgemm samples have no CPU entries)
#                    D  variants cpu-only, gpu-only, costs-off, transfers-off: dmda and eager,
#                       n = 9600 19200, mirage and attila, every app
#                    E  the other tile sizes each machine's codelet history files calibrate, at one n
#                       (n = 11520 = 2*5760, the lcm of 320 640 960 1440 1920, when it gives 3 to 100
#                       tiles; otherwise n = 36 tiles), every scheduler
#                    F  n = 76800 for dmda, dmdar, dmdas (with --big-timeout)
#                    G  probes that record which (app, machine) pairs abort (hannibal, hannibal-pitch,
#                       gemini chol/lu); run first whatever the phase list says
#   --random-seeds N  random runs STARPU_RAND_SEED = 0..N-1 (default 5)
#   --cells FILE     keep only the cells listed in FILE, one "app,machine,sched,n,tile,variant" per line
#                    (with --random-seeds and --resume: more seeds for chosen random cells)
#   --config-log FILE  StarPU's config.log, for the configure line in the header (found by itself in a build tree)
#   --provenance TEXT  how the StarPU version is named in the header (e.g. its git tag and commit)
#   --note TEXT      a header line (repeatable)
#   --resume         skip the cells already in --out (same app,machine,sched,n,tile,variant,seed)
#   --rewrite-only   run nothing: rewrite --out with a fresh header (probes included) and its rows in plan order
#   --list           print the plan and exit
# Variants (env set on top of STARPU_HOSTNAME / STARPU_SCHED / STARPU_PERF_MODEL_DIR):
#   default        nothing else
#   cpu-only       STARPU_NCUDA=0
#   gpu-only       STARPU_NCPU=0
#   costs-off      every simulated-overhead switch StarPU 1.4.12 reads, set to 0:
#                  STARPU_SIMGRID_TRANSFER_COST=0 STARPU_SIMGRID_TASK_SUBMIT_COST=0
#                  STARPU_SIMGRID_TASK_PUSH_COST=0 STARPU_SIMGRID_FETCHING_INPUT_COST=0
#                  STARPU_SIMGRID_CUDA_QUEUE_COST=0 STARPU_SIMGRID_CUDA_MALLOC_COST=0
#                  STARPU_SIMGRID_SCHED_COST=0 (already StarPU's default)
#   transfers-off  STARPU_SIMGRID_TRANSFER_COST=0
# random is run with STARPU_RAND_SEED = 0..4, or 0..N-1 with --random-seeds N (in SimGrid mode
# StarPU seeds drand48 with STARPU_RAND_SEED, default 0, instead of time(NULL)); every other row
# runs with the default seed 0.
# Columns: app,machine,sched,ncpu,ncuda,n,nblocks,tile,variant,seed,sim_ms,gflops,starpu_wall_s,starpu_maxrss_kb
#   sim_ms, gflops: what the example prints (simulated ms between submission of the first task and
#   the end of starpu_task_wait_for_all, rounded to 1 ms by the example); ncpu, ncuda: the workers
#   starpu_machine_display lists under the same environment; starpu_wall_s, starpu_maxrss_kb: the
#   example's wall-clock time and peak RSS on this machine (/usr/bin/time -v).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/starpu14-cell.sh
. "$root/scripts/starpu14-cell.sh"
starpu="${STARPU14_DIR:-}"
sampling="${STARPU_SAMPLING_DIR:-$root/tests/data/starpu-samples/starpu-sampling}"
gsampling="${STARPU_GEMINI_SAMPLING_DIR:-$root/tests/data/starpu-samples/starpu-sampling-icpp2023-gemini}"
out="$root/docs/validation/starpu14-simgrid.csv"
jobs=1
phases="A B C CG D E F"
apps_f="chol lu gemm"
machines_f="mirage attila sirocco idgraf gemini hannibal hannibal-pitch"
scheds_f="dmda dmdar dmdas ws lws eager random"
tmo=900
bigtmo=420
logs=""
config_log=""
provenance=""
notes=""
random_seeds=5
cells_file=""
resume=0
rewrite_only=0
list=0
gemini_host="gemini-1-cho_dep_corrected"

# ---------------------------------------------------------------------------------------------
# internal mode: one run (called through xargs)
if [ "${1:-}" = "--run-one" ]; then
    shift
    # timeout idx app machine sched n tile variant seed
    ORACLE_TMO=$1 idx=$2 app=$3 machine=$4 sched=$5 n=$6 tile=$7 variant=$8 seed=$9
    : "${ORACLE_WORK:?}" "${ORACLE_OUT:?}" "${ORACLE_EX:?}"
    nb=$((n / tile))
    starpu14_example "$app" "$n" "$tile" || exit 2
    prog="$ORACLE_EX/$(basename "$example")"; args=("${example_args[@]}")
    if [ "$machine" = gemini ]; then
        pmdir="$ORACLE_WORK/perfmodels-gemini"; host="$ORACLE_GEMINI_HOST"
    else
        pmdir="$ORACLE_WORK/perfmodels"; host="$machine"
    fi
    envs=(STARPU_PERF_MODEL_DIR="$pmdir" STARPU_HOSTNAME="$host" STARPU_SCHED="$sched"
          STARPU_HOME="$ORACLE_WORK/home" STARPU_RAND_SEED="$seed" STARPU_SILENT=1)
    starpu14_variant_env "$variant" || exit 2
    key="$app-$machine-$sched-$n-$tile-$variant-$seed"
    log="$ORACLE_WORK/logs/$key"
    # worker counts, once per (machine, variant)
    wc_file="$ORACLE_WORK/workers/$machine-$variant"
    if [ ! -s "$wc_file" ]; then
        env "${envs[@]}" "$ORACLE_MD" > "$wc_file.tmp" 2>/dev/null || true
        c=$(sed -nE 's/^([0-9]+) CPU workers?:.*/\1/p' "$wc_file.tmp" | head -1)
        g=$(sed -nE 's/^([0-9]+) CUDA workers?:.*/\1/p' "$wc_file.tmp" | head -1)
        grep -q '^No CPU worker' "$wc_file.tmp" && c=0
        grep -q '^No CUDA worker' "$wc_file.tmp" && g=0
        echo "${c:-?},${g:-?}" > "$wc_file"
    fi
    workers=$(cat "$wc_file")
    # a big size whose first run timed out is not tried again for the same app (see --big-timeout)
    if [ "$n" -ge 76800 ] && grep -q "|$app-[^|]*-$n-$tile-$variant-[0-9]*|timed out" "$ORACLE_WORK/failed" 2>/dev/null; then
        ( flock 9; echo "$idx|$key|skipped: another $app run at n = $n timed out" >> "$ORACLE_WORK/failed" ) 9> "$ORACLE_WORK/lock"
        exit 0
    fi
    rc=0
    env "${envs[@]}" timeout "$ORACLE_TMO" /usr/bin/time -v -o "$log.time" \
        "$prog" "${args[@]}" > "$log.out" 2> "$log.err" || rc=$?
    line=$(grep -v '^#' "$log.out" | awk 'NF >= 3 && $1 ~ /^[0-9]+$/' | tail -1 || true)
    if [ "$rc" -ne 0 ] || [ -z "$line" ]; then
        if [ "$rc" -eq 124 ]; then why="timed out after ${ORACLE_TMO} s wall"
        else why="exit $rc: $(grep -v 'INFO\|^$\|simgrid_update\|Warning' "$log.err" | grep -v '^\[' | tail -1 | sed 's/, please re-run.*//' | cut -c1-160)"; fi
        ( flock 9; echo "$idx|$key|$why" >> "$ORACLE_WORK/failed" ) 9> "$ORACLE_WORK/lock"
        echo "FAILED $key: $why" >&2
        exit 0
    fi
    sim_ms=$(echo "$line" | awk '{print $(NF-1)}')
    gflops=$(echo "$line" | awk '{print $NF}')
    wall=$(sed -nE 's/.*Elapsed \(wall clock\) time \(h:mm:ss or m:ss\): (.*)/\1/p' "$log.time" |
           awk -F: '{ if (NF == 3) print $1*3600 + $2*60 + $3; else print $1*60 + $2 }')
    rss=$(sed -nE 's/.*Maximum resident set size \(kbytes\): ([0-9]+)/\1/p' "$log.time")
    row="$app,$machine,$sched,$workers,$n,$nb,$tile,$variant,$seed,$sim_ms,$gflops,$wall,$rss"
    if [ -z "${ORACLE_PROBE:-}" ]; then
        ( flock 9; echo "$row" >> "$ORACLE_OUT"; echo "$idx|$row" >> "$ORACLE_WORK/rows" ) 9> "$ORACLE_WORK/lock"
    fi
    echo "$row"
    exit 0
fi

# ---------------------------------------------------------------------------------------------
while [ $# -gt 0 ]; do
    case "$1" in
        --starpu) starpu="$2"; shift 2 ;;
        --sampling) sampling="$2"; shift 2 ;;
        --gemini-sampling) gsampling="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --jobs) jobs="$2"; shift 2 ;;
        --phases) phases="$2"; shift 2 ;;
        --apps) apps_f="$2"; shift 2 ;;
        --machines) machines_f="$2"; shift 2 ;;
        --scheds) scheds_f="$2"; shift 2 ;;
        --random-seeds) random_seeds="$2"; shift 2 ;;
        --cells) cells_file="$2"; shift 2 ;;
        --timeout) tmo="$2"; shift 2 ;;
        --big-timeout) bigtmo="$2"; shift 2 ;;
        --logs) logs="$2"; shift 2 ;;
        --config-log) config_log="$2"; shift 2 ;;
        --provenance) provenance="$2"; shift 2 ;;
        --note) notes="$notes#   $2\n"; shift 2 ;;
        --resume) resume=1; shift ;;
        --rewrite-only) resume=1; rewrite_only=1; shift ;;
        --list) list=1; shift ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d'; exit 0 ;;
        *) echo "unknown argument: $1" >&2; exit 2 ;;
    esac
done

if [ -z "$starpu" ] && [ "$list" = 0 ]; then
    echo "give the StarPU 1.4 build or install directory with --starpu DIR (or STARPU14_DIR)" >&2; exit 2
fi
ex="" md="" ex_tmp=""
if [ -n "$starpu" ]; then
    starpu="$(cd "$starpu" && pwd)"
    if [ -x "$starpu/lib/starpu/examples/cholesky_implicit" ]; then
        ex="$starpu/lib/starpu/examples"; md="$starpu/bin/starpu_machine_display"
        cfg_h="$starpu/include/starpu/1.4/starpu_config.h"
    elif [ -x "$starpu/examples/cholesky/cholesky_implicit" ]; then
        # build tree: one directory per example; link them side by side
        ex="$(mktemp -d)"; ex_tmp="$ex"; for p in $starpu14_examples; do
            ln -s "$starpu/examples/$p" "$ex/$(basename "$p")"; done
        md="$starpu/tools/starpu_machine_display"; cfg_h="$starpu/include/starpu_config.h"
        [ -z "$config_log" ] && [ -f "$starpu/config.log" ] && config_log="$starpu/config.log"
    else
        echo "no examples under $starpu (neither lib/starpu/examples nor examples/cholesky)" >&2; exit 2
    fi
fi

in_list() { case " $2 " in *" $1 "*) return 0 ;; *) return 1 ;; esac; }

# tiles a machine's history files calibrate for an app (sizes in bytes of the task's data)
tiles_of() { # app machine
    local app=$1 m=$2 dir file host
    if [ "$m" = gemini ]; then dir="$gsampling"; host="$gemini_host"; else dir="$sampling"; host="$m"; fi
    case "$app" in
        chol) file="$dir/codelets/45/chol_model_potrf.$host" ;;   # potrf: one tile, 4*b^2 bytes
        lu) file="$dir/codelets/45/starpu_slu_lu_model_getrf.$host" ;;
        gemm) file="$dir/codelets/45/starpu_sgemm_gemm.$host" ;;  # three tiles: 12*b^2 bytes
    esac
    [ -f "$file" ] || return 0
    awk -v app="$app" '
        /^#[ \t]*hash[ \t]/ { t = 1; next }
        t && NF >= 8 && $1 !~ /^#/ { s = $2
            d = (app == "gemm") ? 12 : 4
            if (s % d == 0) { b = int(sqrt(s / d) + 0.5); if (b * b * d == s) print b } next }
        { t = 0 }' "$file" | sort -n -u | tr '\n' ' '
}

seeds_of() { if [ "$1" = random ]; then seq 0 $((random_seeds - 1)) | tr '\n' ' '; else echo 0; fi; }

plan="$(mktemp)"
probes="$(mktemp)"
work=""
trap 'rm -rf "$plan" "$probes" ${work:+"$work"} ${ex_tmp:+"$ex_tmp"}' EXIT
add() { # app machine sched n tile variant [timeout]
    in_list "$1" "$apps_f" && in_list "$2" "$machines_f" && in_list "$3" "$scheds_f" || return 0
    if [ -n "$cells_file" ]; then grep -qxF "$1,$2,$3,$4,$5,$6" "$cells_file" || return 0; fi
    local s; for s in $(seeds_of "$3"); do echo "$1 $2 $3 $4 $5 $6 $s ${7:-$tmo}" >> "$plan"; done
}
all_scheds="dmda dmdar dmdas ws lws eager random"
sizes="9600 19200 38400"

# G: probes (which pairs abort); the cheapest run of each pair, dmda, n = 9600
for a in chol lu gemm; do for m in mirage attila sirocco idgraf gemini hannibal hannibal-pitch; do
    in_list "$a" "$apps_f" && in_list "$m" "$machines_f" && echo "$a $m" >> "$probes"; done; done

for ph in $phases; do case "$ph" in
A) for m in mirage attila sirocco; do for s in $all_scheds; do for n in $sizes; do
       add chol $m $s $n 960 default; done; done; done ;;
B) for a in lu gemm; do for m in mirage attila sirocco; do for s in $all_scheds; do for n in $sizes; do
       add $a $m $s $n 960 default; done; done; done; done ;;
B1) for a in lu gemm; do for m in mirage attila sirocco; do for s in $all_scheds; do for n in 9600 19200; do
       add $a $m $s $n 960 default; done; done; done; done ;;
B2) for a in lu gemm; do for m in mirage attila sirocco; do for s in $all_scheds; do
       add $a $m $s 38400 960 default; done; done; done ;;
B2L) for m in mirage attila sirocco; do for s in $all_scheds; do add lu $m $s 38400 960 default; done; done ;;
B2G) for m in mirage attila sirocco; do for s in dmda dmdar dmdas ws lws eager; do
       add gemm $m $s 38400 960 default; done; done ;;
B2R) for m in mirage attila sirocco; do add gemm $m random 38400 960 default; done ;;
C) for a in chol lu gemm; do for m in idgraf gemini; do for s in $all_scheds; do for n in $sizes; do
       add $a $m $s $n 960 default; done; done; done; done ;;
C1) for a in chol lu gemm; do for m in idgraf gemini; do for s in $all_scheds; do for n in 9600 19200; do
       add $a $m $s $n 960 default; done; done; done; done ;;
C2) for a in chol lu gemm; do for m in idgraf gemini; do for s in $all_scheds; do
       add $a $m $s 38400 960 default; done; done; done ;;
CG) for s in $all_scheds; do for n in $sizes; do add gemm gemini $s $n 960 gpu-only; done; done ;;
D) for a in chol lu gemm; do for m in mirage attila; do for v in cpu-only gpu-only costs-off transfers-off; do
       for s in dmda eager; do for n in 9600 19200; do add $a $m $s $n 960 $v; done; done; done; done; done ;;
E) for a in chol lu gemm; do for m in mirage attila sirocco idgraf gemini; do
       for b in $(tiles_of $a $m); do
           n=11520; if [ $((n % b)) -ne 0 ] || [ $((n / b)) -lt 3 ] || [ $((n / b)) -gt 100 ]; then n=$((36 * b)); fi
           for s in $all_scheds; do add $a $m $s $n $b default; done
       done; done; done ;;
F) for a in chol lu gemm; do for m in mirage attila sirocco idgraf; do for s in dmda dmdar dmdas; do
       add $a $m $s 76800 960 default "$bigtmo"; done; done; done ;;
G) ;;
*) echo "unknown phase $ph" >&2; exit 2 ;;
esac; done
# a cell listed twice (e.g. tile 960 at n = 11520 is new, 960 at 9600 is not) runs once
awk '!seen[$1" "$2" "$3" "$4" "$5" "$6" "$7]++' "$plan" > "$plan.u" && mv "$plan.u" "$plan"

if [ "$list" = 1 ]; then cat "$probes" | sed 's/^/probe /'; cat "$plan"; echo "$(wc -l < "$plan") runs"; exit 0; fi

work="$(mktemp -d)"
mkdir -p "$work/workers" "$work/home"
if [ -n "$logs" ]; then mkdir -p "$logs"; ln -s "$(cd "$logs" && pwd)" "$work/logs"; else mkdir "$work/logs"; fi
# StarPU reads its models from copies, so that nothing can be written into the sampling directories
cp -r "$sampling" "$work/perfmodels"
[ -d "$gsampling" ] && cp -r "$gsampling" "$work/perfmodels-gemini"
touch "$work/rows" "$work/failed"
export ORACLE_WORK="$work" ORACLE_EX="$ex" ORACLE_MD="$md" ORACLE_GEMINI_HOST="$gemini_host"

# ---- probes: a pair that aborts at its cheapest run is skipped whole
skip_pairs=""
aborted_notes=""
while read -r a m; do
    ORACLE_OUT=/dev/null ORACLE_PROBE=1 "$0" --run-one 120 0 "$a" "$m" dmda 9600 960 default 0 > /dev/null 2>&1 || true
    if grep -q "^0|$a-$m-dmda-9600-960-default-0|" "$work/failed"; then
        why=$(grep "^0|$a-$m-dmda-9600-960-default-0|" "$work/failed" | tail -1 | cut -d'|' -f3-)
        skip_pairs="$skip_pairs $a/$m"
        aborted_notes="$aborted_notes#   $a on $m: StarPU aborts ($why); skipped (gpu-only cells of the pair, if planned, are still run).\n"
    fi
done < "$probes"
: > "$work/failed"

# ---- header
sg_version="$(pkg-config --modversion simgrid 2>/dev/null || echo unknown)"
sg_pkg="$(dpkg-query -W -f '${Package} ${Version}' libsimgrid-dev 2>/dev/null || true)"
sp_version="unknown"
blas="unknown"
if [ -n "${cfg_h:-}" ] && [ -f "$cfg_h" ]; then
    if grep -q '^#define STARPU_HAVE_BLAS 1' "$cfg_h"; then
        blas="yes (STARPU_HAVE_BLAS: the gemm example's codelets have a CPU implementation)"
    else
        blas="none (no STARPU_HAVE_BLAS: the gemm example's codelets have no CPU implementation, gemm runs on CUDA workers only)"
    fi
    sp_version="$(awk '/define STARPU_MAJOR_VERSION/ {a=$3} /define STARPU_MINOR_VERSION/ {b=$3}
                      /define STARPU_RELEASE_VERSION/ {c=$3} END {print a"."b"."c}' "$cfg_h")"
fi
cfg_line="not recorded (see docs/validation/README.md)"
if [ -n "$config_log" ] && [ -f "$config_log" ]; then
    cfg_line="$(sed -nE 's/^  \$ (.*configure) (.*)$/configure \2/p' "$config_log" | head -1 |
                sed -E 's#=/[^ ]*#=<dir>#g')"
fi
header() {
    cat <<EOF
# StarPU $sp_version in SimGrid simulation mode (single node), measured for hetsim by scripts/oracle-starpu14.sh
#   on $(date -u +%Y-%m-%d) on a $(nproc)-core $(. /etc/os-release 2>/dev/null; echo "${PRETTY_NAME:-Linux}") machine ($(uname -m)), $jobs run(s) at a time.
# StarPU: ${provenance:-version $sp_version (from starpu_config.h)}. SimGrid: $sg_version ($sg_pkg).
# Build: $cfg_line
#   BLAS: $blas. (SimGrid mode: no hwloc, so lws has no proximity list and runs as ws; no FxT.)
# Inputs: StarPU's sampled calibrations (STARPU_PERF_MODEL_DIR): tools/perfmodels/sampling for attila, mirage, idgraf,
#   sirocco, hannibal, hannibal-pitch (STARPU_HOSTNAME = the machine); the papers/ICPP2023 gemini samples for gemini
#   (STARPU_HOSTNAME=$gemini_host). Default workers: every CUDA device with one core driving it, the other cores as CPU workers.
# Programs (unmodified StarPU examples): chol = examples/cholesky/cholesky_implicit -size n -nblocks n/tile;
#   lu = examples/lu/lu_implicit_example_float -size n -nblocks n/tile (no pivoting);
#   gemm = examples/mult/sgemm -3d -size n -nblocks n/tile -iter 1 (tiled C += A.B, one z chain per C tile).
# sim_ms / gflops: what the example prints (simulated ms, rounded to 1 ms by the example; GFlop/s with its flop count:
#   n^3/3 chol, 2n^3/3 lu, 2n^3 gemm). ncpu / ncuda: workers listed by starpu_machine_display under the same env.
#   starpu_wall_s / starpu_maxrss_kb: the example's wall time and peak RSS on this machine (/usr/bin/time -v).
# Variants (env on top of STARPU_HOSTNAME, STARPU_SCHED, STARPU_PERF_MODEL_DIR): default: nothing; cpu-only: STARPU_NCUDA=0;
#   gpu-only: STARPU_NCPU=0; transfers-off: STARPU_SIMGRID_TRANSFER_COST=0; costs-off: STARPU_SIMGRID_TRANSFER_COST=0
#   STARPU_SIMGRID_TASK_SUBMIT_COST=0 STARPU_SIMGRID_TASK_PUSH_COST=0 STARPU_SIMGRID_FETCHING_INPUT_COST=0
#   STARPU_SIMGRID_CUDA_QUEUE_COST=0 STARPU_SIMGRID_CUDA_MALLOC_COST=0 STARPU_SIMGRID_SCHED_COST=0 (every switch 1.4 reads;
#   the 1 us sleeps of each datawizard progress call and of a contended ws/simgrid lock have no switch and stay).
# seed: STARPU_RAND_SEED (SimGrid mode seeds drand48 with it, default 0); random runs seeds 0..$((random_seeds - 1)), other rows the default 0.
#   Every row is deterministic: rerunning a cell gives the same sim_ms.
EOF
    [ -n "$notes" ] && printf "# Notes:\n%b" "$notes"
    if [ -n "$aborted_notes" ] || [ -s "$work/failed" ]; then
        echo "# Aborted or skipped:"
        [ -n "$aborted_notes" ] && printf "%b" "$aborted_notes"
        if [ -s "$work/failed" ]; then
            sort -t'|' -k1,1n "$work/failed" | cut -d'|' -f2- | sed -E 's/^([^|]*)\|(.*)$/#   run \1: \2/'
        fi
    fi
    echo "app,machine,sched,ncpu,ncuda,n,nblocks,tile,variant,seed,sim_ms,gflops,starpu_wall_s,starpu_maxrss_kb"
}

# ---- plan: drop skipped pairs and, with --resume, cells already measured
todo="$work/todo"
i=0
: > "$todo"
if [ "$resume" = 1 ] && [ -f "$out" ]; then
    grep -v '^#' "$out" | tail -n +2 | awk -F, '{print $1" "$2" "$3" "$6" "$8" "$9" "$10}' > "$work/done"
    # keep existing rows (index 0: before the new ones, re-sorted below by plan order when possible)
    grep -v '^#' "$out" | tail -n +2 | sed 's/^/R|/' > "$work/oldrows"
else
    : > "$work/done"; : > "$work/oldrows"
fi
while read -r a m s n b v seed t; do
    i=$((i + 1))
    # a pair whose default run aborts is skipped, except its gpu-only cells (gemini's samples have no
    # CPU entries: with STARPU_NCPU=0 its gemm runs)
    [ "$v" != gpu-only ] && in_list "$a/$m" "$skip_pairs" && continue
    grep -qxF "$a $m $s $n $b $v $seed" "$work/done" && continue
    echo "$i $a $m $s $n $b $v $seed $t" >> "$todo"
done < "$plan"

[ "$rewrite_only" = 1 ] && : > "$todo"
if [ "$resume" = 1 ] && [ -f "$out" ]; then :; else header > "$out"; fi
echo "$(wc -l < "$todo") runs to do, $jobs at a time; rows go to $out" >&2

export ORACLE_OUT="$out"
# one xargs line per run; the timeout is per run
awk '{print $9" "$1" "$2" "$3" "$4" "$5" "$6" "$7" "$8}' "$todo" |
    xargs -r -P "$jobs" -L 1 nice -n 10 "$0" --run-one >&2 || true

# ---- final rewrite: header (with what failed) + rows in plan order (old rows of a resumed file first
#      where they are not in the plan)
{
    header
    # plan index of each row: from the rows file; old rows are placed by their plan index if found
    i=0
    while read -r a m s n b v seed t; do i=$((i + 1)); echo "$a,$m,$s,$n,$b,$v,$seed $i"; done < "$plan" > "$work/planidx"
    { cut -d'|' -f2- "$work/oldrows"; cut -d'|' -f2- "$work/rows"; } | awk -F, '!seen[$0]++' |
    awk -F, 'NR == FNR { split($0, p, " "); idx[p[1]] = p[2]; next }
             { k = $1","$2","$3","$6","$8","$9","$10; print ((k in idx) ? idx[k] : 0) "|" $0 }' "$work/planidx" - |
    sort -t'|' -k1,1n -s | cut -d'|' -f2-
} > "$work/final"
cp "$work/final" "$out"
echo "done: $(grep -vc '^#' "$out") lines (with the column line) in $out; $(wc -l < "$work/failed") runs failed" >&2

#!/usr/bin/env bash
# How much StarPU 1.4 (SimGrid mode) and hetsim move when the calibration moves a little: each
# cell runs once with the sampled models as they are and DRAWS times with every history entry's
# mean multiplied by its own factor, uniform in [1 - W, 1 + W] (W = 0.001 by default: ±0.1 %).
# StarPU gets perturbed copies of the sampling directory (draw k: Python's random.Random(k), one
# factor per entry line, files in sorted order); hetsim gets `--set run.perturb_means=W --seed k`
# (its own generator: the factors differ, their distribution is the same). The figures go to
# docs/validation/starpu14-sensitivity.csv; docs/validation/README.md ("How much a cell moves")
# says what they show.
#
# It only runs an existing StarPU build (as scripts/oracle-starpu14.sh, which says how to make
# one) and this repository's release binary (built if missing).
#
# Usage:
#   scripts/starpu14-sensitivity.sh --starpu DIR [--sampling DIR] [--gemini-sampling DIR]
#       [--width W] [--draws K] [--cells FILE] [--out CSV] [--jobs 1|2] [--provenance TEXT]
#   --starpu DIR     StarPU install prefix (lib/starpu/examples/) or build tree (examples/<dir>/<prog>);
#                    env STARPU14_DIR.
#   --sampling DIR, --gemini-sampling DIR   as scripts/oracle-starpu14.sh (defaults: the copies
#                    under tests/data/starpu-samples/).
#   --width W        relative half-width of the factors (default 0.001).
#   --draws K        perturbed runs per cell on each side (default 10).
#   --cells FILE     the cells, one "app machine sched n tile variant" per line; default: the
#                    cells of docs/validation/starpu14-agreement.csv with n <= 19200 and a
#                    scheduler other than random (random is averaged over seeds already), those
#                    out of their target and every 8th of the others in file order.
#   --out CSV        default docs/validation/starpu14-sensitivity.csv.
#   --jobs N         cells run in parallel (default 2).
#   --provenance TEXT  how the StarPU build is named in the file's header (version, settings).
# Columns: app,machine,sched,n,tile,variant,width,starpu_ms,starpu_perturbed_ms,hetsim_ms,
#   hetsim_perturbed_ms; the perturbed figures are the K draws in order, separated by ';'.
#   StarPU's figures are the example's (whole ms); hetsim's its makespan in ms.
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
# shellcheck source=scripts/starpu14-cell.sh
. "$root/scripts/starpu14-cell.sh"
starpu="${STARPU14_DIR:-}"
sampling="${STARPU_SAMPLING_DIR:-$root/tests/data/starpu-samples/starpu-sampling}"
gsampling="${STARPU_GEMINI_SAMPLING_DIR:-$root/tests/data/starpu-samples/starpu-sampling-icpp2023-gemini}"
gemini_host="gemini-1-cho_dep_corrected"
width=0.001
draws=10
cells_file=""
out="$root/docs/validation/starpu14-sensitivity.csv"
jobs=2
provenance=""

if [ "${1:-}" != "--one" ]; then
    while [ $# -gt 0 ]; do
        case "$1" in
            --starpu) starpu="$2"; shift 2 ;;
            --sampling) sampling="$2"; shift 2 ;;
            --gemini-sampling) gsampling="$2"; shift 2 ;;
            --width) width="$2"; shift 2 ;;
            --draws) draws="$2"; shift 2 ;;
            --cells) cells_file="$2"; shift 2 ;;
            --out) out="$2"; shift 2 ;;
            --jobs) jobs="$2"; shift 2 ;;
            --provenance) provenance="$2"; shift 2 ;;
            *) echo "unknown argument $1 (see the header of $0)" >&2; exit 2 ;;
        esac
    done
    [ -n "$starpu" ] || { echo "--starpu DIR (or STARPU14_DIR) is required" >&2; exit 2; }
    work="$(mktemp -d)"
    trap 'rm -rf "$work"' EXIT
    if [ -z "$cells_file" ]; then
        cells_file="$work/cells"
        python3 - "$root/docs/validation/starpu14-agreement.csv" > "$cells_file" <<'EOF'
import csv, sys
i = 0
for r in csv.DictReader(open(sys.argv[1])):
    if r['sched'] == 'random' or int(r['n']) > 19200:
        continue
    if r['in_target'] == 'true':
        i += 1
        if i % 8:
            continue
    print(r['app'], r['machine'], r['sched'], r['n'], r['tile'], r['variant'])
EOF
    fi
    # The perturbed sampling directories, once per draw.
    python3 - "$sampling" "$gsampling" "$work" "$width" "$draws" <<'EOF'
import os, random, re, shutil, sys
sampling, gsampling, work, width, draws = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), int(sys.argv[5])
entry = re.compile(r'^[0-9a-f]{8}\t')  # hash, size, flops, mean (us), dev, sum, sum2, n
for tag, src in (('s', sampling), ('g', gsampling)):
    for k in range(1, draws + 1):
        rng = random.Random(k)
        dst = os.path.join(work, f'{tag}{k}')
        shutil.copytree(src, dst, symlinks=True)
        for d, dirs, files in sorted(os.walk(os.path.join(dst, 'codelets'))):
            dirs.sort()
            for fn in sorted(files):
                p = os.path.join(d, fn)
                lines = open(p).read().split('\n')
                for i, l in enumerate(lines):
                    if entry.match(l):
                        cols = l.split('\t')
                        cols[3] = '%e   ' % (float(cols[3]) * rng.uniform(1 - width, 1 + width))
                        lines[i] = '\t'.join(cols)
                open(p, 'w').write('\n'.join(lines))
EOF
    (cd "$root" && cargo build --release --quiet --bin hetsim)
    export ORACLE_STARPU="$starpu" ORACLE_SAMPLING="$sampling" ORACLE_GSAMPLING="$gsampling" \
        ORACLE_WORK="$work" ORACLE_WIDTH="$width" ORACLE_DRAWS="$draws" ORACLE_ROOT="$root"
    rev="$(cd "$root" && git rev-parse --short HEAD 2>/dev/null || echo unknown)"
    (cd "$root" && git diff --quiet HEAD 2>/dev/null) || rev="$rev with uncommitted changes"
    {
        echo "# How much StarPU 1.4 (SimGrid mode) and hetsim move when every calibrated duration moves by up to"
        echo "# ±$width: scripts/starpu14-sensitivity.sh, $draws perturbed runs per cell on each side, on $(date -u +%Y-%m-%d)."
        echo "# StarPU: ${provenance:-the build at $starpu}. hetsim: $rev."
        echo "app,machine,sched,n,tile,variant,width,starpu_ms,starpu_perturbed_ms,hetsim_ms,hetsim_perturbed_ms"
    } > "$work/out"
    n=$(wc -l < "$cells_file")
    echo "$n cells, $draws perturbed runs each side, width $width" >&2
    # shellcheck disable=SC2016
    xargs -P "$jobs" -L1 "$0" --one < "$cells_file" > "$work/rows"
    # xargs finishes cells out of order: rows in the cells' order.
    while read -r a m s nn t v; do
        grep "^$a,$m,$s,$nn,$t,$v," "$work/rows"
    done < "$cells_file" >> "$work/out"
    cp "$work/out" "$out"
    echo "wrote $out" >&2
    exit 0
fi

# --one app machine sched n tile variant: one cell, both sides, one CSV row.
shift
app=$1 machine=$2 sched=$3 n=$4 tile=$5 variant=$6
starpu14_example "$app" "$n" "$tile" || exit 2
prog=""
for p in "$ORACLE_STARPU/examples/$example" "$ORACLE_STARPU/lib/starpu/examples/$(basename "$example")"; do
    [ -x "$p" ] && { prog="$p"; break; }
done
[ -n "$prog" ] || { echo "no $example under $ORACLE_STARPU" >&2; exit 2; }
if [ "$machine" = gemini ]; then base="$ORACLE_GSAMPLING"; host="$gemini_host"; tag=g
else base="$ORACLE_SAMPLING"; host="$machine"; tag=s; fi
envs=(STARPU_HOSTNAME="$host" STARPU_SCHED="$sched" STARPU_HOME="$ORACLE_WORK/home" STARPU_SILENT=1)
# hetsim runs with the workers StarPU listed for the cell (as tests/integration/starpu14_cells.rs).
read -r ncpu ncuda < <(awk -F, -v a="$app" -v m="$machine" -v s="$sched" -v n="$n" -v t="$tile" \
    -v v="$variant" '!/^#/ && $1 == a && $2 == m && $3 == s && $6 == n && $8 == t && $9 == v {
    print $4, $5; exit }' "$ORACLE_ROOT/docs/validation/starpu14-simgrid.csv")
[ -n "${ncuda:-}" ] || { echo "$app $machine $sched $n $tile $variant: not in starpu14-simgrid.csv" >&2; exit 2; }
sets=(--set "run.ncpu=$ncpu" --set "run.ncuda=$ncuda")
starpu14_variant_env "$variant" || exit 2
case "$variant" in
    costs-off) sets+=(--set run.runtime_costs=false --set runtime.transfer_cost=false) ;;
    transfers-off) sets+=(--set runtime.transfer_cost=false) ;;
esac
[ "$sched" = lws ] && sets+=(--set scheduler.hwloc=false)
starpu_ms() {
    env "${envs[@]}" STARPU_PERF_MODEL_DIR="$1" "$prog" "${example_args[@]}" 2>&1 |
        awk '/^#.*\tms\t/ { for (i = 1; i <= NF; i++) if ($i == "ms") c = i - 1; next }
             c && /^[0-9]/ { print $c; c = 0 }' | tail -1
}
scenario=$app; [ "$app" = chol ] && scenario=cholesky
hetsim_ms() {
    (cd "$ORACLE_ROOT" && target/release/hetsim run "scenarios/$scenario-mirage.toml" --json \
        --sched "$sched" --set "scenario.machine=calibration/$machine.toml" \
        --set "workload.n=$n" --set "workload.nb=$tile" "${sets[@]}" "$@") |
        python3 -c 'import json, sys; print("%.3f" % (json.load(sys.stdin)["makespan_s"] * 1e3))'
}
s0=$(starpu_ms "$base")
h0=$(hetsim_ms)
sp=() hp=()
for k in $(seq 1 "$ORACLE_DRAWS"); do
    sp+=("$(starpu_ms "$ORACLE_WORK/$tag$k")")
    hp+=("$(hetsim_ms --set "run.perturb_means=$ORACLE_WIDTH" --seed "$k")")
done
join() { local IFS=';'; echo "$*"; }
echo "$app,$machine,$sched,$n,$tile,$variant,$ORACLE_WIDTH,$s0,$(join "${sp[@]}"),$h0,$(join "${hp[@]}")"

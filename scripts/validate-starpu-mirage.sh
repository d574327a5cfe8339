#!/usr/bin/env bash
# Side-by-side table: hetsim against StarPU 1.4 in SimGrid mode for StarPU's Cholesky example on
# mirage (9 CPU + 3 CUDA workers, tiles of 960, n = 9 600, 19 200, 38 400), schedulers dmda,
# dmdar, dmdas, ws, lws, eager, random. GFlop/s are counted as StarPU's example does: n^3/3 over
# the makespan. The StarPU figures come from docs/validation/starpu14-simgrid-mirage-cholesky.csv
# (override with STARPU_CSV=...); without that file only hetsim's column is printed.
# StarPU's lws in SimGrid mode is its ws (no hwloc): hetsim's lws row is compared with StarPU's ws.
# Targets: within 5 % for dmda, dmdar, dmdas; within 10 % for ws, lws, eager.
#
# With --starpu13 the reference is StarPU 1.3.10, measured for hetsim
# (docs/validation/starpu13-simgrid-cholesky.csv), and the machine gets StarPU 1.3's two runtime
# settings that differ from 1.4's: no push cost, and 20 / 10 pending fetches / prefetches per pair.
# That file also has attila, idgraf and sirocco: --machine NAME runs scenarios/cholesky-NAME.toml.
#
# Usage:  scripts/validate-starpu-mirage.sh [--starpu13] [--machine NAME] [extra `hetsim run` options,
#         e.g. --set run.prefetch=false]
# Environment: HETSIM=/path/to/hetsim (default: `cargo build --release`, target/release/hetsim)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [ -z "${HETSIM:-}" ]; then
    cargo build --release --quiet
    HETSIM="$root/target/release/hetsim"
fi
csv="${STARPU_CSV:-$root/docs/validation/starpu14-simgrid-mirage-cholesky.csv}"
starpu13=0
machine=mirage
while [ $# -gt 0 ]; do
    case "$1" in
        --starpu13) starpu13=1; shift ;;
        --machine) machine="${2:?--machine needs a name}"; shift 2 ;;
        *) break ;;
    esac
done
scenario="scenarios/cholesky-$machine.toml"
[ -f "$scenario" ] || { echo "no scenario $scenario" >&2; exit 2; }
if [ "$starpu13" = 1 ]; then
    csv="${STARPU_CSV:-$root/docs/validation/starpu13-simgrid-cholesky.csv}"
    tmp="$(mktemp -d)"
    trap 'rm -rf "$tmp"' EXIT
    { cat "calibration/$machine.toml"; echo; cat docs/validation/starpu13-runtime.toml; } >"$tmp/$machine.toml"
    set -- --set "scenario.machine=$tmp/$machine.toml" "$@"
fi
have_csv=0
if [ -f "$csv" ]; then
    have_csv=1
    echo "StarPU figures: $csv"
else
    echo "StarPU figures not found ($csv): printing hetsim only"
fi

starpu_ms() { # sched n -> sim_ms or empty
    [ "$have_csv" = 1 ] || return 0
    local s="$1"
    [ "$s" = lws ] && s=ws
    awk -F, -v m="$machine" -v s="$s" -v n="$2" '!/^#/ && $2 == m && $3 == s && $6 == n { print $9 }' "$csv"
}

printf '%-7s %6s %10s %10s %8s %8s %8s  %s\n' sched n hetsim_ms starpu_ms diff hetsimGF starpuGF target
for s in dmda dmdar dmdas ws lws eager random; do
    case "$s" in
        dmda | dmdar | dmdas) tol=5 ;;
        ws | lws | eager) tol=10 ;;
        *) tol=- ;;
    esac
    for n in 9600 19200 38400; do
        ms=$("$HETSIM" run "$scenario" --sched "$s" --set "workload.n=$n" --json "$@" |
            jq -r '.makespan_s * 1000')
        ref=$(starpu_ms "$s" "$n")
        gf=$(awk -v n="$n" -v ms="$ms" 'BEGIN { printf "%.1f", n^3 / 3 / (ms / 1000) / 1e9 }')
        if [ -n "$ref" ]; then
            diff=$(awk -v a="$ms" -v b="$ref" 'BEGIN { printf "%+.1f%%", 100 * (a - b) / b }')
            rgf=$(awk -v n="$n" -v ms="$ref" 'BEGIN { printf "%.1f", n^3 / 3 / (ms / 1000) / 1e9 }')
            ok=$(awk -v a="$ms" -v b="$ref" -v t="$tol" 'BEGIN { if (t == "-") print "-"; else { d = 100 * (a - b) / b; if (d < 0) d = -d; print (d <= t ? "ok" : "MISS") " (" t "%)" } }')
        else
            ref=-; diff=-; rgf=-; ok=-
        fi
        printf '%-7s %6s %10.1f %10s %8s %8s %8s  %s\n' "$s" "$n" "$ms" "$ref" "$diff" "$gf" "$rgf" "$ok"
    done
done

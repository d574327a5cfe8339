#!/usr/bin/env bash
# Compare `hetsim net` with SimGrid on random cases, both sharing models, for humans.
#
# Usage:  scripts/oracle/run.sh [N_CASES] [WORKDIR]
#     N_CASES  seeds 1..N_CASES (default 120)
#     WORKDIR  where cases and results go (default: target/oracle); emptied first
# Environment:
#     HETSIM=/path/to/hetsim   binary to test (default: `cargo build --release`, then
#                              target/release/hetsim)
#     JOBS=N                   parallel SimGrid processes (default 2)
#     RTOL=x                   relative tolerance (default 1e-9)
#
# Layout of WORKDIR: cases/NNN.json, simgrid_sleep/, simgrid_native/ (SimGrid's answers),
# hetsim_plain/, hetsim_simgrid/ (hetsim's answers; a failing run leaves NNN.err instead).
# Pairs compared: hetsim --sharing plain   vs SimGrid --latency-mode sleep
#                 hetsim --sharing simgrid vs SimGrid --latency-mode native
# Exit status 0 when every flow agrees, 1 otherwise.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
n_cases="${1:-120}"
work="${2:-$root/target/oracle}"
jobs="${JOBS:-2}"
rtol="${RTOL:-1e-9}"
py=/usr/bin/python3

if ! "$py" -c 'import simgrid' 2>/dev/null; then
    echo "SimGrid is not installed for $py: apt-get install python3-simgrid" >&2
    exit 2
fi
if [ -z "${HETSIM:-}" ]; then
    (cd "$root" && cargo build --release --quiet)
    HETSIM="$root/target/release/hetsim"
fi

rm -rf "$work"
mkdir -p "$work"
usecs() { echo "${EPOCHREALTIME/./}"; }
elapsed() { local d=$(( $(usecs) - $1 )); printf '%d.%01d' $((d / 1000000)) $(((d / 100000) % 10)); }

echo "== generating $n_cases cases in $work/cases"
"$py" "$here/gen_cases.py" --seeds "1..$n_cases" --out "$work/cases"

for mode in sleep native; do
    t0=$(usecs)
    "$py" "$here/run_simgrid.py" --batch "$work/cases" "$work/simgrid_$mode" \
        -j "$jobs" --latency-mode "$mode"
    echo "== SimGrid --latency-mode $mode: $(elapsed "$t0") s"
done

for sharing in plain simgrid; do
    out="$work/hetsim_$sharing"
    mkdir -p "$out"
    failed=0
    t0=$(usecs)
    for case in "$work"/cases/*.json; do
        name="$(basename "$case" .json)"
        if ! "$HETSIM" net "$case" --sharing "$sharing" >"$out/$name.json" 2>"$out/$name.err"; then
            rm -f "$out/$name.json"
            failed=$((failed + 1))
            echo "hetsim failed on $name ($sharing): $(head -c 300 "$out/$name.err")" >&2
        else
            rm -f "$out/$name.err"
        fi
    done
    echo "== hetsim --sharing $sharing: $(elapsed "$t0") s, $failed failed run(s)"
done

status=0
"$py" "$here/compare.py" --rtol "$rtol" --label "plain vs SimGrid sleep" \
    "$work/simgrid_sleep" "$work/hetsim_plain" || status=1
"$py" "$here/compare.py" --rtol "$rtol" --label "simgrid vs SimGrid native" \
    "$work/simgrid_native" "$work/hetsim_simgrid" || status=1
exit "$status"

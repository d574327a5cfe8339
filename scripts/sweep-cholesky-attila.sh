#!/usr/bin/env bash
# The shipped scheduler sweep: Cholesky on attila, every scheduler, matrix orders from one whose
# lower triangle fits in one GPU (n = 28 800) to one twice the three GPUs' memory (n = 96 000),
# in six steps of 14 tiles of 960, three seeds. Writes docs/sweep-cholesky-attila.csv and
# docs/sweep-cholesky-attila.svg (GFlop/s against n, min/max band over seeds).
#
# Usage:  scripts/sweep-cholesky-attila.sh [extra hetsim sweep options, e.g. -j 2]
# Environment:
#     HETSIM=/path/to/hetsim   binary (default: `cargo build --release`, then target/release/hetsim)
#     SEEDS=1..3               seeds
#     OUT=docs/sweep-cholesky-attila   output stem (.csv and .svg are added)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [ -z "${HETSIM:-}" ]; then
    cargo build --release --quiet
    HETSIM="$root/target/release/hetsim"
fi
out="${OUT:-docs/sweep-cholesky-attila}"
scheds="eager,prio,random,dm,dmda,dmdap,dmdar,dmdas,dmdasd,ws,lws,heft"
sizes="28800,42240,55680,69120,82560,96000"

start=$(date +%s)
"$HETSIM" sweep scenarios/sweep-cholesky-attila.toml \
    --sched "$scheds" \
    --vary "workload.n=$sizes" \
    --seeds "${SEEDS:-1..3}" \
    -o "$out.csv" --plot "$out.svg" "$@"
echo "wrote $out.csv and $out.svg in $(( $(date +%s) - start )) s" >&2

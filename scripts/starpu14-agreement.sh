#!/usr/bin/env bash
# hetsim against StarPU 1.4.12 in SimGrid mode, every cell of docs/validation/starpu14-simgrid.csv:
# runs the agreement test (tests/integration/starpu14_cells.rs) one cell at a time, so that the
# wall times it records do not share the cores, and copies the table it writes to
# docs/validation/starpu14-agreement.csv (one row per cell) and starpu14-agreement.md (the
# summary per application, machine and scheduler, with the wall-time ratio).
#
# Usage: scripts/starpu14-agreement.sh
# The test fails if a cell misses its target without being listed in
# docs/validation/starpu14-gaps.csv; the table is written either way.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
cd "$root"
status=0
HETSIM_AGREEMENT_TIMING=1 cargo test --release --test integration starpu14_cells -- --test-threads=1 \
  || status=$?
tmp="$root/target/tmp"
cp "$tmp/starpu14-agreement.csv" docs/validation/starpu14-agreement.csv
cp "$tmp/starpu14-agreement.md" docs/validation/starpu14-agreement.md
echo "wrote docs/validation/starpu14-agreement.csv and .md"
exit "$status"

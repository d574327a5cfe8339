#!/usr/bin/env bash
# Fuzz every parser of hetsim on stable Rust (fuzz/: proptest-drawn structured mutations of the
# repository's own input files), SECONDS per target (default 600), and fail if any input made
# hetsim panic, hang or run out of its memory bound. Crashing inputs are in fuzz/crashes/.
#     scripts/fuzz.sh [SECONDS] [TARGET|all] [SEED]
# .ci/run runs it with a few seconds per target.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
seconds="${1:-600}"
target="${2:-all}"
seed="${3:-1}"
# Profile `fuzz`: the release build with unwinding, which the fuzzer needs to catch a panic.
cargo build --profile fuzz -p hetsim-fuzz
status=0
target/fuzz/hetsim-fuzz "$target" --seconds "$seconds" --seed "$seed" || status=$?
# A target killed by its memory bound leaves the input it was running.
for f in fuzz/crashes/*.current; do
    [ -e "$f" ] || continue
    echo "input that aborted a fuzz target (memory bound?): $f" >&2
    status=1
done
exit "$status"

#!/usr/bin/env bash
# Run the unit tests, and hetsim over the bundled scenarios and every scheduler, built with
# debug assertions.
#
# The README's tests run the release build, where `debug_assert!` compiles to nothing: the
# invariants those assertions state (a worker's bookkeeping in step with the tasks it holds, a
# message's counters, the solver's dates) are checked only here. Each run must exit 0; the
# outputs are not compared (the tests do that). Usage: scripts/debug-checks.sh (from anywhere;
# under a minute after the dev builds).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

cargo test --quiet --workspace --lib
cargo build --quiet --bin hetsim
bin=target/debug/hetsim
failed=0
runs=0

check() { # check ARGS...: one run of the dev build, which must succeed
    runs=$((runs + 1))
    if ! "$bin" "$@" >/dev/null 2>target/debug-checks.err; then
        failed=$((failed + 1))
        echo "FAILED: hetsim $*" >&2
        head -n 5 target/debug-checks.err >&2
    fi
}

for f in scenarios/*.toml; do
    case $f in
    *sweep*) continue ;; # sweep files run through `hetsim sweep`, covered by the tests
    esac
    check run "$f" --quiet
done

# Every scheduler on Cholesky and LU, on a machine with GPUs of its own memory and one whose
# matrix outgrows its GPUs' (attila's 3 GB at n = 48 000: evictions and write-backs).
for sched in eager prio random dm dmda dmdap dmdar dmdas dmdasd ws lws heft peft; do
    for app in cholesky lu; do
        check run "scenarios/$app-mirage.toml" --quiet --sched "$sched" --set workload.n=9600
    done
    check run scenarios/cholesky-attila.toml --quiet --sched "$sched" --set workload.n=48000
done
# Every GPU kernel asynchronous (by default Cholesky's potrf runs on its driver's thread).
check run scenarios/cholesky-mirage.toml --quiet --set run.gpu_sync=false --set workload.n=19200

echo "$runs debug runs, $failed failed"
[ "$failed" -eq 0 ]

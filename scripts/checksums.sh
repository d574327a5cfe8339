#!/usr/bin/env bash
# Checksums of everything hetsim computes for the shipped inputs, to show that a refactoring
# changes no output: every scenario (JSON and text report, every scheduler on the task-graph
# scenarios), the three traces of two runs, the sweeps, the StarPU validation tables, `net`,
# `crosscheck` on the program scenarios, the analytic models' examples, `check` on the shipped
# machine files and `calibrate` (StarPU imports and `show`). One line per output:
# `sha256  name`. Run it before and after a change and diff the two files.
#
# Usage:  scripts/checksums.sh [OUT.txt]        (default: stdout)
# Environment: HETSIM=/path/to/hetsim (default: cargo build --release, target/release/hetsim)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
if [ -z "${HETSIM:-}" ]; then
    cargo build --release --quiet
    HETSIM="$root/target/release/hetsim"
fi
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
out="${1:-/dev/stdout}"

sum() { # sum NAME: checksum of stdin under NAME
    printf '%s  %s\n' "$(sha256sum | cut -d' ' -f1)" "$1"
}
file_sum() { # file_sum NAME FILE
    sha256sum <"$2" | cut -d' ' -f1 | sed "s|\$|  $1|"
}

scheds="eager prio random dm dmda dmdap dmdar dmdas dmdasd ws lws heft"
{
    for s in scenarios/*.toml; do
        name="$(basename "$s" .toml)"
        # Every scenario: JSON and text; task graphs (generated or read from a file) under
        # every scheduler, program workloads against their analytic model.
        "$HETSIM" run "$s" --json | sum "run $name --json"
        "$HETSIM" run "$s" | sum "run $name"
        if grep -qE '^kind = "(cholesky|lu|gemm|taskgraph)"' "$s"; then
            for sched in $scheds; do
                "$HETSIM" run "$s" --sched "$sched" --json | sum "run $name --sched $sched"
            done
        else
            "$HETSIM" crosscheck "$s" --json | sum "crosscheck $name"
        fi
    done

    for s in cholesky-mirage lu-attila; do
        "$HETSIM" run "scenarios/$s.toml" --sched dmda --quiet \
            --paje "$work/t.paje" --chrome "$work/t.json" --gantt "$work/t.svg" >/dev/null
        file_sum "paje $s" "$work/t.paje"
        file_sum "chrome $s" "$work/t.json"
        file_sum "gantt $s" "$work/t.svg"
    done

    # A cluster run: StarPU-MPI's distributed Cholesky on 4 mirage nodes, and 2 ranks per
    # node of 2 GPUs each on a cluster of 2-GPU mirage nodes.
    for set in "machine.nodes=4" "machine.ranks_per_node=2 --set machine.gpus_per_node=2"; do
        # shellcheck disable=SC2086
        "$HETSIM" run scenarios/cholesky-mirage-mpi.toml --sched dmda --quiet --set $set \
            --paje "$work/t.paje" --chrome "$work/t.json" --gantt "$work/t.svg" >/dev/null
        file_sum "paje cholesky-mirage-mpi $set" "$work/t.paje"
        file_sum "chrome cholesky-mirage-mpi $set" "$work/t.json"
        file_sum "gantt cholesky-mirage-mpi $set" "$work/t.svg"
    done
    "$HETSIM" sweep scenarios/cholesky-mirage-mpi.toml --quiet --sched dmda,ws \
        --vary machine.nodes=1,2,4 -o "$work/n.csv" --plot "$work/n.svg"
    file_sum "sweep mirage-mpi csv" "$work/n.csv"
    file_sum "sweep mirage-mpi svg" "$work/n.svg"
    "$HETSIM" sweep scenarios/sweep-cholesky-attila.toml --quiet \
        --sched eager,dmda,dmdas,ws,heft --vary workload.n=28800,42240 --seeds 1..2 \
        -o "$work/s.csv" --plot "$work/s.svg"
    file_sum "sweep attila csv" "$work/s.csv"
    file_sum "sweep attila svg" "$work/s.svg"
    "$HETSIM" sweep scenarios/cholesky-mirage.toml --quiet --sched eager,dmda \
        --vary workload.n=9600,19200 --vary run.prefetch=true,false --seeds 1..2 \
        --set run.noise=lognormal -o "$work/m.csv" --plot "$work/m.svg"
    file_sum "sweep mirage csv" "$work/m.csv"
    file_sum "sweep mirage svg" "$work/m.svg"
    "$HETSIM" sweep scenarios/stencil-diffusion-tsubame2.toml --quiet \
        --vary machine.nodes=2,4,8 -o "$work/c.csv"
    file_sum "sweep stencil csv" "$work/c.csv"

    # The tables name their input files by absolute path: drop the checkout's location.
    HETSIM="$HETSIM" scripts/validate-starpu-mirage.sh | sed "s|$root/||g" |
        sum "validate starpu 1.4 mirage"
    for m in mirage attila idgraf sirocco; do
        HETSIM="$HETSIM" scripts/validate-starpu-mirage.sh --starpu13 --machine "$m" |
            sed "s|$root/||g" | sum "validate starpu 1.3 $m"
    done

    for sharing in plain simgrid; do
        "$HETSIM" net scenarios/net-mirage-pcie.json --sharing "$sharing" | sum "net $sharing"
    done
    # Analytic models (an error message is an output too: stderr is summed with stdout).
    model() { { "$HETSIM" model "$@" --json 2>&1 || true; } | sum "model $*"; }
    model loggp --param bytes=1048576 --param latency_s=2e-6 --param send_overhead_s=4e-6 \
        --param recv_overhead_s=3e-6 --param gap_per_byte_s=1.5e-10
    model mhloggp --param sender=gpu --param receiver=gpu --param bytes=1048576
    model bcast --param procs=8 --param bytes=1048576
    model bcast --param procs=64 --param bytes=1024 --sweep bytes=1,1024,1048576
    model mcl-hpl --from tests/data/analytic/mcl-hpl-p100.toml
    model mmgp-search --from tests/data/analytic/mmgp-pbpi.toml --param n_apu=16
    model roofline --param peak_flops_per_sec=515e9 --param peak_bytes_per_sec=148e9 \
        --param intensity_flops_per_byte=0.8
    model stencil --param nx=192 --param ny=2048 --param nz=2048 --param py=4 --param pz=4 \
        --param flops_per_point=13 --param bytes_per_boundary_point=4 --param gpus_per_node=3 \
        --param single_gpu_flops_per_sec=60e9 --param ib_b0_bytes_per_sec=3.2e9 \
        --param ib_t0_s=20e-6 --param pcie_b0_bytes_per_sec=4.29e9 --param pcie_t0_s=16.9e-6
    for m in calibration/*.toml; do
        "$HETSIM" check "$m" | sum "check $(basename "$m")"
    done
    # The importer's output for every host of StarPU's samples (default options), and `show`.
    for h in mirage attila idgraf sirocco hannibal hannibal-pitch; do
        "$HETSIM" calibrate import-starpu tests/data/starpu-samples/starpu-sampling --host "$h" \
            2>/dev/null | sum "calibrate import-starpu $h"
    done
    "$HETSIM" calibrate import-starpu tests/data/starpu-samples/starpu-sampling-icpp2023-gemini \
        --host gemini-1-cho_dep_corrected 2>/dev/null | sum "calibrate import-starpu gemini"
    for m in mirage gemini; do
        "$HETSIM" calibrate show "calibration/$m.toml" | sum "calibrate show $m"
    done
} >"$out"

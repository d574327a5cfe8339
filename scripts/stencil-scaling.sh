#!/usr/bin/env bash
# Strong and weak scaling of the Shimokawabe et al. 2013 stencils on TSUBAME 2.0 and the Cray XK6m.
#
# 1. Strong scaling, the grids of Shimokawabe et al. 2013 Figs. 7, 8 and 11, both methods: hetsim's simulation
#    (the stencil workload on the cluster files, run by the MPI executor) beside the paper's own
#    model (eqs. 2-5 with its Table 1-2 fits and eq. 1's single-GPU rate), by
#    examples/stencil_scaling.rs. Writes docs/stencil-scaling.csv and
#    docs/stencil-scaling-{diffusion-tsubame2,diffusion-cray-xk6m,lbm-tsubame2}.svg.
# 2. Weak scaling (256^3 per GPU) on the Cray XK6m, both methods, with `hetsim sweep`:
#    docs/stencil-weak-cray-xk6m.csv and .svg.
# 3. The master/worker product on the Dawning TC3600 (Liu et al. 2012 Fig. 5's 2, 4, 8 nodes):
#    docs/matmul-dawning-tc3600.csv.
#
# Usage:  scripts/stencil-scaling.sh
# Environment: STEPS=4 (time steps per strong-scaling run; every step is alike)
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
cargo build --release --quiet --bin hetsim --example stencil_scaling
hetsim="$root/target/release/hetsim"

start=$(date +%s)
"$root/target/release/examples/stencil_scaling" docs/stencil-scaling "${STEPS:-4}"

"$hetsim" sweep scenarios/stencil-diffusion-cray-xk6m.toml \
    --set workload.grid_per_rank=true \
    --set workload.nx=256 --set workload.ny=256 --set workload.nz=256 \
    --vary machine.nodes=1,2,4,8,16,32,40 \
    --vary workload.method=overlapping,non-overlapping \
    -o docs/stencil-weak-cray-xk6m.csv --plot docs/stencil-weak-cray-xk6m.svg

"$hetsim" sweep scenarios/matmul-dawning-tc3600.toml \
    --vary machine.nodes=2,4,8 \
    --vary workload.n=1024,2048,4096,8192 \
    -o docs/matmul-dawning-tc3600.csv
echo "done in $(( $(date +%s) - start )) s" >&2

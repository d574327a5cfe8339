#!/bin/sh
# Calibrate the P100's DGEMM asymptotic efficiency e_max on Kim et al. 2021's single-GPU point ONLY:
# 1 node, 1 GPU, N = 44 000, 3882 GFlop/s measured (validation/seed001_platform.csv).
# Bisection on e_max in (0.5, 1] (40 steps): the simulated GFlop/s increases with e_max. Every
# other figure of scenarios/hpl-hdpex-p100.toml (peaks, PCIe, InfiniBand, s_half, NB) stays as
# it is. Prints the e_max to write into [workload.gpu_dgemm] and the GFlop/s it gives.
set -eu
cd "$(dirname "$0")/.."
target=${TARGET_GFLOPS:-3882}
cargo build --release --quiet --bin hetsim
run() {
  ./target/release/hetsim run scenarios/hpl-hdpex-p100.toml --set machine.nodes=1 \
    --set machine.gpus_per_node=1 --set workload.n=44000 --set workload.gpu_dgemm.e_max="$1" \
    --json | python3 -c 'import json, sys; print(json.load(sys.stdin)["gflops"])'
}
lo=0.5
hi=1.0
i=0
while [ $i -lt 40 ]; do
  mid=$(awk -v a=$lo -v b=$hi 'BEGIN{printf "%.6f", (a+b)/2}')
  g=$(run "$mid")
  if awk -v g="$g" -v t="$target" 'BEGIN{exit !(g < t)}'; then lo=$mid; else hi=$mid; fi
  i=$((i+1))
done
e=$(awk -v a=$lo -v b=$hi 'BEGIN{printf "%.4f", (a+b)/2}')
echo "e_max = $e  ->  $(run "$e") GFlop/s at 1N1G, N = 44000 (target $target)"

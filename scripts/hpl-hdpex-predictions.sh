#!/bin/sh
# hetsim's HPL predictions for the HD-PEX P100 cluster (Kim et al. 2021): 1-4 GPUs per node on 1-4 nodes.
# N as HPL users choose it: about 90 % of the total GPU memory (Kim et al. 2021's calibration point,
# N = 44 000 on one 16 GiB P100, is 90 %), rounded down to a multiple of NB = 384:
#   N = 384 · floor( sqrt(0.90 · K·G · 16 GiB / 8 B) / 384 ).
# P × Q is picked by the workload. Prints a Markdown table (docs/hpl.md). Model:
# scenarios/hpl-hdpex-p100.toml, calibrated on the 1N1G point only (scripts/hpl-calibrate.sh).
set -eu
cd "$(dirname "$0")/.."
cargo build --release --quiet --bin hetsim
echo "| nodes × GPUs | ranks | P × Q | N | GFlop/s | GFlop/s per GPU |"
echo "|---|---|---|---|---|---|"
for k in 1 2 3 4; do
  for g in 1 2 3 4; do
    n=$(awk -v r=$((k*g)) 'BEGIN{ m = 0.90 * r * 16 * 2^30 / 8; printf "%d", int(sqrt(m) / 384) * 384 }')
    ./target/release/hetsim run scenarios/hpl-hdpex-p100.toml --set machine.nodes="$k" \
      --set machine.gpus_per_node="$g" --set workload.n="$n" --json |
      python3 -c '
import json, sys
d = json.load(sys.stdin)
k, g, n = (int(a) for a in sys.argv[1:4])
r = k * g
p = int(r ** 0.5)
while r % p:
    p -= 1
gf = d["gflops"]
print(f"| {k}N{g}G | {r} | {p} × {r // p} | {n} | {gf:.0f} | {gf / r:.0f} |")
' "$k" "$g" "$n"
  done
done

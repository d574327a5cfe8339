#!/bin/sh
# hetsim's HPL predictions for the HD-PEX P100 cluster (seed 001): 1-4 GPUs per node on 1-4 nodes.
# N as HPL users choose it: about 90 % of the total GPU memory (seed 001's calibration point,
# N = 44 000 on one 16 GiB P100, is 90 %), rounded down to a multiple of NB = 384:
#   N = 384 · floor( sqrt(0.90 · K·G · 16 GiB / 8 B) / 384 ).
# Prints a Markdown table (docs/hpl.md). Model: scenarios/hpl-hdpex-p100.toml, calibrated on the
# 1N1G point only (scripts/hpl-calibrate.sh).
set -eu
cd "$(dirname "$0")/.."
cargo build --release --quiet --example hpl_run
echo "| nodes × GPUs | ranks | P × Q | N | GFlop/s | GFlop/s per GPU |"
echo "|---|---|---|---|---|---|"
for k in 1 2 3 4; do
  for g in 1 2 3 4; do
    n=$(awk -v r=$((k*g)) 'BEGIN{ m = 0.90 * r * 16 * 2^30 / 8; printf "%d", int(sqrt(m) / 384) * 384 }')
    ./target/release/examples/hpl_run scenarios/hpl-hdpex-p100.toml "$k" "$g" "$n" |
      awk '{ printf "| %dN%dG | %d | %d × %d | %d | %.0f | %.0f |\n", $1, $2, $1*$2, $3, $4, $5, $6, $6/($1*$2) }'
  done
done

#!/usr/bin/env bash
# Regenerate the imported machine library (calibration/{attila,mirage,idgraf,sirocco,hannibal,
# hannibal-pitch,gemini}.toml) from the copies of StarPU's calibration samples in
# tests/data/starpu-samples/. Run from the
# repository root. tests/integration/calibrate_import.rs checks that the shipped files are exactly what these
# commands produce, so change both together.
set -euo pipefail
cd "$(dirname "$0")/.."
cargo build --release --quiet
H=target/release/hetsim
S=tests/data/starpu-samples/starpu-sampling
G=tests/data/starpu-samples/starpu-sampling-icpp2023-gemini
STANISIC2015="Stanisic et al. 2015 (StarPU over SimGrid), Table 1"
README="tools/perfmodels/README (README.starpu-perfmodels in the samples)"

$H calibrate import-starpu $S --host mirage -o calibration/mirage.toml \
  --ram "36 GiB" --ram-source "$STANISIC2015 gives 2x18GB; DIMM sizes are binary, hence GiB" \
  --cpu-model "Intel Xeon X5650" --note "CPU model: $README (2x Xeon X5650 @2.67GHz; MKL 11.1.3, CUDA 6.0, Magma 1.6.0)."
$H calibrate import-starpu $S --host attila -o calibration/attila.toml \
  --ram "48 GiB" --ram-source "$STANISIC2015 gives 2x24GB; DIMM sizes are binary, hence GiB" \
  --cpu-model "Intel Xeon X5650" --note "CPU model: $README (2x Xeon X5650 @2.67GHz; OpenBLAS 0.2.12-1, CUDA 6.0)."
$H calibrate import-starpu $S --host idgraf -o calibration/idgraf.toml \
  --cpu-model "Intel Xeon X5650" --note "CPU model: $README (2x Xeon X5650 @2.67GHz; MKL 11.1.0, CUDA 6.0)."
$H calibrate import-starpu $S --host sirocco -o calibration/sirocco.toml \
  --cpu-model "Intel Xeon E5-2680" --note "CPU model: $README (2x Xeon E5-2680 @2.50GHz; MKL 11.2, CUDA 6.5)."
$H calibrate import-starpu $S --host hannibal -o calibration/hannibal.toml \
  --ram "48 GiB" --ram-source "$STANISIC2015 gives 2x24GB; DIMM sizes are binary, hence GiB" \
  --cpu-model "Intel Xeon X5550" --note "CPU model: $STANISIC2015 (2x4 cores @2.67GHz)."
$H calibrate import-starpu $S --host hannibal-pitch -o calibration/hannibal-pitch.toml \
  --ram "48 GiB" --ram-source "$STANISIC2015 gives 2x24GB for hannibal; DIMM sizes are binary, hence GiB" \
  --cpu-model "Intel Xeon X5550" --note "CPU model: $STANISIC2015 (hannibal, 2x4 cores @2.67GHz)." \
  --note "hannibal-pitch is hannibal with pitched (2D) RAM<->GPU transfers measured: bandwidths about 3.6x lower."
$H calibrate import-starpu $G --host gemini-1-cho_dep_corrected --name gemini -o calibration/gemini.toml \
  --codelets-from gemini-1-lu_sans_cusolver --gpu-model "Tesla V100-SXM2-32GB" \
  --note "GPU model: PROVENANCE.md of the gemini samples (8x V100-SXM2-32GB, Grid'5000 Lyon)." \
  --note "Host gemini-1-cho_dep_corrected: the calibration whose platform has NVLink peer routes (CUDAi-CUDAj only)" \
  --note "and NUMA0/NUMA1 + Interconnect links, hand-corrected by its authors; the LU codelets come from" \
  --note "gemini-1-lu_sans_cusolver, a calibration of the same node (gemini-1)."

#!/usr/bin/env bash
# Oracle runs of StarPU-MPI's distributed Cholesky example in SimGrid mode (SMPI), for hetsim's
# distributed validation (docs/validation/README.md, section "StarPU-MPI 1.4 on SMPI").
#
# It only runs an existing StarPU-MPI build; it does not build StarPU. The build must be StarPU
# 1.4 configured with --enable-simgrid --enable-mpi --disable-shared (smpicc), with
# mpi/examples/matrix_decomposition/mpi_cholesky_distributed built (see the README section for the
# configure line). Every node of the cluster is the machine STARPU_HOSTNAME of the sampling
# directory; starpu_smpirun merges its bus/<machine>.platform.v4.xml once per rank with the cluster
# file.
#
# Usage:
#   scripts/oracle-starpu-mpi.sh --build BUILD_DIR --sampling SAMPLING_DIR --platform PLATFORM_DIR
#       [--out CSV] [--logs DIR] [--nodes "1 2 4"] [--sched "dmda ws"] [--sizes "9600 19200 38400"]
#       [--tile 960] [--machine mirage] [--net plain|smpi] [--timeout SECONDS] [--app mpi_cholesky_distributed]
#   BUILD_DIR     StarPU build tree (holds tools/starpu_smpirun and mpi/examples/...)
#   SAMPLING_DIR  StarPU sampling directory (bus/, codelets/45/), used as STARPU_PERF_MODEL_DIR
#   PLATFORM_DIR  holds cluster.xml and hostfile (docs/validation/starpu-mpi-platform/); the first
#                 N lines of hostfile are the N ranks
#   --net plain   (default) SMPI's piecewise factors replaced by 1, weight-S 0, no cross-traffic,
#                 no TCP window bound: the plain fluid model, on the inter-node and (since
#                 starpu_smpirun drops the node platform's <config>) the intra-node links too;
#   --net smpi    SimGrid's SMPI defaults.
# Environment equivalents: STARPU_MPI_BUILD, STARPU_PERF_MODEL_DIR, STARPU_MPI_PLATFORM.
# Output: CSV rows (header only when the file is new) app,nodes,grid_p,grid_q,sched,ncpu_per_node,
#   ncuda_per_node,n,nblocks,tile,sim_ms,gflops,wall_s,maxrss_kb,mpi_sends,mpi_bytes
#   sim_ms and gflops are what the example prints (rank 0; timing between two barriers, n^3/3 flops);
#   ncpu/ncuda come from STARPU_WORKER_STATS (workers listed by all ranks / nodes); mpi_sends and
#   mpi_bytes are STARPU_MPI_STATS's nb_sends and TOTAL summed over ranks (data messages only,
#   not the envelopes); wall_s and maxrss_kb come from /usr/bin/time -v.
set -euo pipefail

build="${STARPU_MPI_BUILD:-}"
sampling="${STARPU_PERF_MODEL_DIR:-}"
platform="${STARPU_MPI_PLATFORM:-}"
out=""
logs=""
nodes_list="1 2 4"
scheds="dmda ws"
sizes="9600 19200 38400"
tile=960
machine=mirage
net=plain
tmo=1800
app=mpi_cholesky_distributed
while [ $# -gt 0 ]; do
    case "$1" in
        --build) build="$2"; shift 2 ;;
        --sampling) sampling="$2"; shift 2 ;;
        --platform) platform="$2"; shift 2 ;;
        --out) out="$2"; shift 2 ;;
        --logs) logs="$2"; shift 2 ;;
        --nodes) nodes_list="$2"; shift 2 ;;
        --sched) scheds="$2"; shift 2 ;;
        --sizes) sizes="$2"; shift 2 ;;
        --tile) tile="$2"; shift 2 ;;
        --machine) machine="$2"; shift 2 ;;
        --net) net="$2"; shift 2 ;;
        --timeout) tmo="$2"; shift 2 ;;
        --app) app="$2"; shift 2 ;;
        -h | --help) sed -n '2,30p' "$0"; exit 0 ;;
        *) echo "unknown argument $1" >&2; exit 2 ;;
    esac
done
[ -n "$build" ] && [ -n "$sampling" ] && [ -n "$platform" ] || {
    echo "need --build, --sampling and --platform (see --help)" >&2; exit 2; }
smpirun="$build/tools/starpu_smpirun"
exe="$build/mpi/examples/matrix_decomposition/$app"
[ -x "$smpirun" ] || { echo "no $smpirun" >&2; exit 2; }
[ -x "$exe" ] || { echo "no $exe" >&2; exit 2; }
[ -f "$platform/cluster.xml" ] && [ -f "$platform/hostfile" ] || {
    echo "$platform needs cluster.xml and hostfile" >&2; exit 2; }
[ -f "$sampling/bus/$machine.platform.v4.xml" ] || {
    echo "no $sampling/bus/$machine.platform.v4.xml" >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "needs GNU time (/usr/bin/time)" >&2; exit 2; }

case "$net" in
    plain) netcfg=(--cfg=smpi/bw-factor:0:1 --cfg=smpi/lat-factor:0:1 --cfg=network/weight-S:0
                   --cfg=network/crosstraffic:0 --cfg=network/TCP-gamma:-1) ;;
    smpi) netcfg=() ;;
    *) echo "--net plain|smpi" >&2; exit 2 ;;
esac

tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/home"
[ -z "$logs" ] || mkdir -p "$logs"
header="app,nodes,grid_p,grid_q,sched,ncpu_per_node,ncuda_per_node,n,nblocks,tile,sim_ms,gflops,wall_s,maxrss_kb,mpi_sends,mpi_bytes"
if [ -n "$out" ] && [ ! -s "$out" ]; then echo "$header" >"$out"; fi
[ -n "$out" ] || echo "$header"

for nodes in $nodes_list; do
    grep -v '^$' "$platform/hostfile" | head -n "$nodes" >"$tmp/hostfile"
    [ "$(wc -l <"$tmp/hostfile")" = "$nodes" ] || { echo "hostfile has fewer than $nodes hosts" >&2; exit 2; }
    for sched in $scheds; do
        for n in $sizes; do
            nb=$((n / tile))
            tag="${app}-${machine}-${nodes}n-${sched}-${n}"
            log="$tmp/run.out"
            rc=0
            STARPU_HOME="$tmp/home" STARPU_PERF_MODEL_DIR="$sampling" STARPU_HOSTNAME="$machine" \
                STARPU_SCHED="$sched" STARPU_MPI_STATS=1 STARPU_WORKER_STATS=1 \
                timeout "$tmo" /usr/bin/time -v -o "$tmp/time" nice -n 10 \
                "$smpirun" -platform "$platform/cluster.xml" -hostfile "$tmp/hostfile" \
                "$exe" -size "$n" -nblocks "$nb" "${netcfg[@]}" >"$log" 2>&1 || rc=$?
            [ -z "$logs" ] || { cp "$log" "$logs/$tag.log"; cp "$tmp/time" "$logs/$tag.time" 2>/dev/null || true; }
            if [ "$rc" != 0 ]; then
                echo "# $tag failed (exit $rc)" >&2
                continue
            fi
            sim_ms=$(sed -n 's/^Computation time (in ms): *//p' "$log" | head -1)
            gflops=$(sed -n 's/^Synthetic GFlops : *//p' "$log" | head -1)
            q=$(sed -n 's/.*dblocksx: \([0-9]*\).*/\1/p' "$log" | head -1)
            p=$(sed -n 's/.*dblocksy: \([0-9]*\).*/\1/p' "$log" | head -1)
            ncpu=$(( $(grep -cE '^CPU [0-9]+ ' "$log" || true) / nodes ))
            ncuda=$(( $(grep -cE '^CUDA [0-9]+\.[0-9]+ ' "$log" || true) / nodes ))
            sends=$(awk '/\[starpu_comm_stats\]\[[0-9]+\] nb_sends:/ { s += $NF } END { print s + 0 }' "$log")
            bytes=$(awk -F'\t' '/\[starpu_comm_stats\]\[[0-9]+\] TOTAL:/ { split($2, a, " "); s += a[1] } END { printf "%.0f", s }' "$log")
            wall=$(awk -F': ' '/Elapsed \(wall clock\)/ { n = split($2, t, ":"); s = 0; for (i = 1; i <= n; i++) s = s * 60 + t[i]; printf "%.1f", s }' "$tmp/time")
            rss=$(awk -F': ' '/Maximum resident set size/ { print $2 }' "$tmp/time")
            row="$app,$nodes,$p,$q,$sched,$ncpu,$ncuda,$n,$nb,$tile,$sim_ms,$gflops,$wall,$rss,$sends,$bytes"
            if [ -n "$out" ]; then echo "$row" >>"$out"; fi
            echo "$row"
        done
    done
done

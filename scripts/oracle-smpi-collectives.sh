#!/usr/bin/env bash
# SMPI oracle for hetsim's MPI collectives: times MPI_Bcast, MPI_Reduce, MPI_Allreduce and
# MPI_Alltoall with SimGrid's SMPI (smpirun) on a SimGrid platform that mirrors a hetsim cluster,
# and writes docs/validation/smpi-collectives.csv. See docs/validation/README.md, section
# "SMPI: HPL and MPICH collectives".
#
# Needs SimGrid's SMPI (Debian: apt-get install -y simgrid libsimgrid-dev; smpicc, smpirun) and
# GNU time (Debian package `time`). Builds scripts/oracle/smpi_collectives.c into WORKDIR.
#
# Usage:
#   scripts/oracle-smpi-collectives.sh -w WORKDIR [-p PLATFORM.xml] [-n PLATFORM_NAME]
#       [-o OUT.csv] [-r "2 3 4 8 16 32 64"] [-s "1 8 1024 ..."] [-g GUARD_RANKS]
#   -w  scratch directory (binary, hostfile, logs); required
#   -p  platform (default: scripts/oracle/smpi-platforms/example-cluster.xml beside this script)
#   -n  platform name written in the CSV (default: file name without .xml)
#   -o  output CSV (default: docs/validation/smpi-collectives.csv beside this script)
#   -r  rank counts; -s sizes in bytes (alltoall: bytes sent to each peer)
#   -g  reduce/allreduce of more than 16 MiB run only up to this many ranks (default 16): SMPI's
#       two-level reduce/allreduce memcpy into plain per-rank temporary buffers, R x 256 MiB.
# The platform's hosts must be named node-0, node-1, ... (one rank per host).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
work=""
platform="$here/oracle/smpi-platforms/example-cluster.xml"
pname=""
out="$repo/docs/validation/smpi-collectives.csv"
ranks_list="2 3 4 8 16 32 64"
sizes="1 8 1024 12288 65536 524288 1048576 16777216 268435456"
guard=16
while getopts "w:p:n:o:r:s:g:" opt; do
  case "$opt" in
    w) work="$OPTARG" ;; p) platform="$OPTARG" ;; n) pname="$OPTARG" ;; o) out="$OPTARG" ;;
    r) ranks_list="$OPTARG" ;; s) sizes="$OPTARG" ;; g) guard="$OPTARG" ;;
    *) echo "usage: $0 -w WORKDIR [-p platform.xml] [-n name] [-o out.csv] [-r ranks] [-s sizes]" >&2; exit 2 ;;
  esac
done
[ -n "$work" ] || { echo "$0: -w WORKDIR is required" >&2; exit 2; }
[ -n "$pname" ] || pname="$(basename "$platform" .xml)"
mkdir -p "$work"
work="$(cd "$work" && pwd)"
command -v smpirun >/dev/null || { echo "$0: smpirun not found (apt-get install simgrid libsimgrid-dev)" >&2; exit 2; }
gnutime="$(type -P time || true)"   # GNU time (not the shell keyword), for -v
[ -n "$gnutime" ] || { echo "$0: GNU time not found (apt-get install time)" >&2; exit 2; }

bin="$work/smpi_collectives"
nice -n 10 smpicc -O2 -o "$bin" "$here/oracle/smpi_collectives.c"
maxr=0; for r in $ranks_list; do [ "$r" -gt "$maxr" ] && maxr=$r; done
: > "$work/hosts.txt"
for ((i = 0; i < maxr; i++)); do echo "node-$i" >> "$work/hosts.txt"; done

# SMPI/SimGrid options (why: docs/validation/README.md).
opts=(
  --cfg=network/model:CM02 --cfg=network/latency-factor:1 --cfg=network/bandwidth-factor:1
  --cfg=network/weight-S:0 --cfg=network/TCP-gamma:0 --cfg=network/crosstraffic:0
  --cfg=network/optim:Full --cfg=surf/precision:1e-13
  --cfg=smpi/os:0:0:0 --cfg=smpi/ois:0:0:0 --cfg=smpi/or:0:0:0
  --cfg=smpi/async-small-thresh:65536 --cfg=smpi/send-is-detached-thresh:65536
  --cfg=smpi/simulate-computation:no --cfg=smpi/host-speed:1Gf --cfg=smpi/wtime:0
  --cfg=smpi/iprobe:0 --cfg=smpi/test:0 --cfg=smpi/shared-malloc:local
)
results="$work/results.txt"
timelog="$work/runs.log"
: > "$results"
: > "$timelog"

# run TAG RANKS EXTRA_CFG COLLS SIZES: one smpirun; RESULT lines go to $results tagged with TAG.
run() {
  local tag="$1" r="$2" extra="$3" colls="$4" sz="$5"
  local log="$work/run-$tag-$r-$4-$5.log"
  # An alltoall of B bytes per peer on R ranks has R x B-byte buffers, and SMPI copies each rank's
  # own block (at a different offset per rank) inside them: SMPI_SHARED_MALLOC's local mode then
  # touches R x B bytes of POSIX shared memory (tmpfs), and the global mode maps R x R x B bytes of virtual memory
  # (page tables of several GiB). Cells above 8 GiB per buffer are not run (64 x 256 MiB).
  if [ "$colls" = alltoall ] && [ $((r * sz)) -gt 8589934592 ]; then
    echo "$tag ranks=$r $colls bytes=$sz SKIPPED (alltoall buffers of $((r * sz)) bytes)" >> "$timelog"
    return 0
  fi
  # shellcheck disable=SC2086
  if ! nice -n 10 "$gnutime" -v -o "$log.time" smpirun -np "$r" -platform "$platform" \
      -hostfile "$work/hosts.txt" "${opts[@]}" $extra "$bin" -c "$colls" -m 16777216 -r "$guard" \
      $sz > "$log" 2>&1; then
    echo "run $tag ranks=$r $colls $sz failed (see $log)" >&2
  fi
  local wall rss
  wall=$(awk -F': ' '/Elapsed \(wall clock\)/{print $2}' "$log.time")
  rss=$(awk -F': ' '/Maximum resident set size/{print $2}' "$log.time")
  echo "$tag ranks=$r $colls bytes=$sz wall=$wall maxrss_kb=$rss" >> "$timelog"
  awk -v tag="$tag" '$1 == "RESULT" {print tag, $2, $3, $4, $5}' "$log" >> "$results"
}

# One smpirun per (ranks, algorithm, collective, size): an algorithm that SMPI cannot run for a
# cell (it aborts) loses that cell only.
for r in $ranks_list; do
  for s in $sizes; do
    # 1. What SMPI's MPICH selector does on MPI_COMM_WORLD.
    for c in bcast reduce allreduce alltoall; do
      # SimGrid 3.32's alltoall__mpich picks alltoall__pair for an odd number of ranks and
      # messages >= 32 KiB, and alltoall__pair throws for non-powers of two: skipped.
      if [ "$c" = alltoall ] && [ $((r % 2)) -eq 1 ] && [ $((r & (r - 1))) -ne 0 ] && [ "$s" -ge 32768 ]; then
        continue
      fi
      run sel "$r" "--cfg=smpi/coll-selector:mpich" "$c" "$s"
    done
    # 2. Every MPICH algorithm forced, on the flat communicator (no SMP wrapper).
    for a in binomial_tree scatter_rdb_allgather scatter_LR_allgather; do
      run "bcast:$a" "$r" "--cfg=smpi/bcast:$a" bcast "$s"
    done
    run "reduce:binomial" "$r" "--cfg=smpi/reduce:binomial" reduce "$s"
    run "allreduce:rdb" "$r" "--cfg=smpi/allreduce:rdb" allreduce "$s"
    # Reduce-scatter based algorithms need count >= the largest power of two <= ranks (MPICH
    # never picks them below): sizes of at least 1 KiB only.
    if [ "$s" -ge 1024 ]; then
      run "reduce:scatter_gather" "$r" "--cfg=smpi/reduce:scatter_gather" reduce "$s"
      run "allreduce:rab_rdb" "$r" "--cfg=smpi/allreduce:rab_rdb" allreduce "$s"
    fi
    run "alltoall:ring" "$r" "--cfg=smpi/alltoall:ring" alltoall "$s"
    if [ $((r & (r - 1))) -eq 0 ]; then
      run "alltoall:pair" "$r" "--cfg=smpi/alltoall:pair" alltoall "$s"
    fi
  done
done

# Algorithm names. Selector rows: what SimGrid 3.32's smpi_mpich_selector.cpp resolves to on
# MPI_COMM_WORLD with one rank per host (read from its source; SMPI does not log it).
# Forced rows: "forced:<alg>", plus "[mpich-rule]" when MPICH's own rule (as in MPICH 3.x and
# hetsim's mpich_bcast_algorithm: bcast binomial if bytes < 12288 or ranks < 8, scatter +
# recursive doubling if bytes < 524288 and ranks a power of two, else scatter + ring; reduce
# binomial if count < pof2 or bytes < 2048, else reduce-scatter + gather; allreduce recursive
# doubling if bytes <= 2048 or count < pof2, else Rabenseifner; alltoall Bruck if bytes < 256
# and ranks >= 8, isend/irecv if bytes < 32768, pairwise exchange (pair) if ranks a power of
# two, else ring) would pick it.
mkdir -p "$(dirname "$out")"
{
  echo "# SMPI collectives oracle (SimGrid $(smpirun --version 2>/dev/null | awk '{print $3; exit}'), smpirun), written by scripts/oracle-smpi-collectives.sh"
  echo "# platform $pname: $(basename "$platform") (mirrors calibration/example-cluster.toml without its [overheads]: one rank per node, host buffers)"
  echo "# sim_s: simulated seconds from a common start (all ranks enter the call at the same simulated instant t0, after a warm-up call and a barrier) to the last rank's return (max over ranks of MPI_Wtime() - t0)"
  echo "# bytes: message size (alltoall: bytes sent to each peer); reductions: MPI_SUM on MPI_DOUBLE (MPI_UNSIGNED_CHAR for 1 B), root 0"
  echo "# algorithm_selected: mpich:<...> = --cfg=smpi/coll-selector:mpich (resolution read from SimGrid 3.32 smpi_mpich_selector.cpp);"
  echo "#   forced:<alg> = --cfg=smpi/<collective>:<alg>; [mpich-rule] = MPICH's own decision rule picks <alg> for this cell"
  echo "# options: ${opts[*]}"
  echo "collective,algorithm_selected,ranks,bytes,platform,sim_s"
  awk -v plat="$pname" '
    function pof2(n,  p) { p = 1; while (p * 2 <= n) p *= 2; return p }
    function ispow2(n) { return pof2(n) == n }
    function count(b) { return (b % 8 == 0) ? b / 8 : b }
    function sel(c, r, b) {
      if (c == "bcast") return "mpich:SMP_binomial(=binomial tree at 1 rank/host)"
      if (c == "reduce") return "mpich:mvapich2_two_level>" ((count(b) < pof2(r) || b < 2048) ? "binomial" : "scatter_gather")
      if (c == "allreduce") return "mpich:mvapich2_two_level>rdb"
      if (b < 256 && r >= 8) return "mpich:bruck"
      if (b < 32768) return "mpich:mvapich2_scatter_dest"
      return (r % 2) ? "mpich:pair" : "mpich:ring"
    }
    function rule(c, r, b) {
      if (c == "bcast") return (b < 12288 || r < 8) ? "binomial_tree" : ((b < 524288 && ispow2(r)) ? "scatter_rdb_allgather" : "scatter_LR_allgather")
      if (c == "reduce") return (count(b) < pof2(r) || b < 2048) ? "binomial" : "scatter_gather"
      if (c == "allreduce") return (b <= 2048 || count(b) < pof2(r)) ? "rdb" : "rab_rdb"
      if (b < 256 && r >= 8) return "bruck"
      if (b < 32768) return "mvapich2_scatter_dest"
      return ispow2(r) ? "pair" : "ring"
    }
    {
      tag = $1; c = $2; r = $3; b = $4; t = $5
      if (tag ~ /^sel/) alg = sel(c, r, b)
      else { split(tag, a, ":"); alg = "forced:" a[2]; if (rule(c, r, b) == a[2]) alg = alg "[mpich-rule]" }
      printf "%s,%s,%d,%d,%s,%.9e\n", c, alg, r, b, plat, t
    }' "$results" | sort -t, -k1,1 -k3,3n -k4,4n -k2,2
} > "$out"
echo "wrote $out ($(grep -vc '^#' "$out") lines incl. header); run times in $timelog"

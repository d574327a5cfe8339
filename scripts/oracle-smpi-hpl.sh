#!/usr/bin/env bash
# SMPI-HPL oracle for hetsim's HPL model (src/workload/hpl.rs): runs a given SMPI build of HPL
# (xhpl, built with smpicc from hpcc's hpl/ with its BLAS replaced by hetsim's kernel model; see
# docs/validation/README.md, section "SMPI: HPL and MPICH collectives", for the build and the
# source modifications) under smpirun on a SimGrid platform mirroring
# calibration/hdpex-p100-cluster.toml, one cell at a time, and appends one CSV row per cell.
#
# Usage:
#   scripts/oracle-smpi-hpl.sh -x XHPL -w WORKDIR [-o OUT.csv] [-p PLATFORM.xml]
#       [-f FREE_PLATFORM.xml] [-g GPUS_PER_NODE] [-t] [-c "CELL CELL ..."]
#   -x  the SMPI build of xhpl (required)
#   -w  scratch directory for HPL.dat files, logs and GNU time reports (required)
#   -o  CSV to append to (default: docs/validation/smpi-hpl.csv beside this script; the header
#       is written when the file does not exist)
#   -p  platform (default scripts/oracle/smpi-platforms/hdpex-p100-cluster.xml)
#   -f  communication-free platform (default scripts/oracle/smpi-platforms/hdpex-p100-free.xml)
#   -g  GPUs (= ranks) per node, default 4: rank r runs on host n(r/G)g(r%G), as hetsim places
#       rank r on node r/G, GPU r mod G; the panel factorisation gets 12/G host cores (hetsim)
#   -t  run smpirun in a private mount namespace with a tmpfs on the system's temporary directory
#       (root only): SimGrid 3.32 puts its shared-malloc backing file there (a hard-coded path),
#       and on a disk file system every write fault
#       on the shared matrix costs a file-system call (3x slower runs); results are identical
#   -c  cells, each P x Q : N : BCAST : SWAP : net|free, e.g. "2x2:20000:0:0:net"
#       (BCAST 0=1ring 1=1ringM 2=2ring 3=2ringM 4=long 5=longM; SWAP 0=binary-exchange
#       1=spread-roll 2=mix, threshold 64). Default: the plan below, most important first.
# Needs smpirun (Debian: simgrid) and GNU time (Debian: time).
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/.." && pwd)"
xhpl=""; work=""; out="$repo/docs/validation/smpi-hpl.csv"
platform="$here/oracle/smpi-platforms/hdpex-p100-cluster.xml"
free="$here/oracle/smpi-platforms/hdpex-p100-free.xml"
gpn=4; tmpfs=0; cells=""
while getopts "x:w:o:p:f:g:tc:" opt; do
  case "$opt" in
    x) xhpl="$OPTARG" ;; w) work="$OPTARG" ;; o) out="$OPTARG" ;; p) platform="$OPTARG" ;;
    f) free="$OPTARG" ;; g) gpn="$OPTARG" ;; t) tmpfs=1 ;; c) cells="$OPTARG" ;;
    *) echo "usage: $0 -x XHPL -w WORKDIR [-o out.csv] [-p platform] [-f free] [-g G] [-t] [-c cells]" >&2; exit 2 ;;
  esac
done
[ -n "$xhpl" ] && [ -x "$xhpl" ] || { echo "$0: -x XHPL (an executable SMPI build of HPL) is required" >&2; exit 2; }
[ -n "$work" ] || { echo "$0: -w WORKDIR is required" >&2; exit 2; }
command -v smpirun >/dev/null || { echo "$0: smpirun not found (apt-get install simgrid libsimgrid-dev)" >&2; exit 2; }
gnutime="$(type -P time || true)"   # GNU time (not the shell keyword), for -v
[ -n "$gnutime" ] || { echo "$0: GNU time not found (apt-get install time)" >&2; exit 2; }
mkdir -p "$work"; work="$(cd "$work" && pwd)"
systmp="$(dirname "$(TMPDIR='' mktemp -u)")"   # the system's temporary directory (SimGrid's shared-malloc file)
xhpl="$(cd "$(dirname "$xhpl")" && pwd)/$(basename "$xhpl")"

grids="1x2 2x1 2x2 1x4 4x1 2x4 3x4 4x4"
if [ -z "$cells" ]; then
  # 1. HD-PEX defaults (1ring, binary exchange) at N = 20000, then communication-free,
  # 2. the same at N = 40000, 3. SWAP and BCAST variants (only where they matter: SWAP needs
  # P > 1, BCAST needs Q > 1), 4. the variants at 40000.
  for n in 20000 40000; do
    for g in $grids; do cells="$cells $g:$n:0:0:net"; done
    for g in $grids; do cells="$cells $g:$n:0:0:free"; done
  done
  for n in 20000 40000; do
    for g in $grids; do
      p=${g%x*}; q=${g#*x}
      if [ "$p" -gt 1 ]; then for s in 1 2; do cells="$cells $g:$n:0:$s:net"; done; fi
      if [ "$q" -gt 1 ]; then for b in 1 2 3 4 5; do cells="$cells $g:$n:$b:0:net"; done; fi
    done
  done
fi

# SMPI/SimGrid options (why: docs/validation/README.md).
opts=(
  --cfg=network/model:CM02 --cfg=network/latency-factor:1 --cfg=network/bandwidth-factor:1
  --cfg=network/weight-S:0 --cfg=network/TCP-gamma:0 --cfg=network/crosstraffic:0
  --cfg=network/optim:Full --cfg=surf/precision:1e-13
  --cfg=smpi/os:0:0:0 --cfg=smpi/ois:0:0:0 --cfg=smpi/or:0:0:0
  --cfg=smpi/async-small-thresh:65536 --cfg=smpi/send-is-detached-thresh:65536
  --cfg=smpi/simulate-computation:no --cfg=smpi/host-speed:1Gf --cfg=smpi/wtime:0
  --cfg=smpi/iprobe:1e-6 --cfg=smpi/test:1e-6 --cfg=smpi/grow-injected-times:no
  --cfg=smpi/shared-malloc:global --cfg=smpi/display-timing:yes
)
bname=(1ring 1ringM 2ring 2ringM long longM)
sname=(binary-exchange spread-roll mix)
nb=384; depth=1; pfact=right; rfact=crout; nbmin=4; ndiv=2

if [ ! -s "$out" ]; then
  mkdir -p "$(dirname "$out")"
  {
    echo "# SMPI-HPL oracle: hpcc 1.5.0's HPL 2.0 built with smpicc (SimGrid $(smpirun --version 2>/dev/null | awk '{print $3; exit}')), BLAS replaced by hetsim's kernel model (docs/validation/README.md); written by scripts/oracle-smpi-hpl.sh"
    echo "# platform net = scripts/oracle/smpi-platforms/hdpex-p100-cluster.xml (calibration/hdpex-p100-cluster.toml), free = hdpex-p100-free.xml (no communication cost); rank r on node r/G, GPU r mod G"
    echo "# HPL.dat: NB 384, PMAP row-major, DEPTH 1, PFACT right, RFACT crout, NBMIN 4, NDIV 2, swapping threshold 64, L1/U transposed, equilibration, alignment 8, threshold -16 (no verification)"
    echo "# sim_s, gflops: HPL's own Time and Gflops lines (simulated); t_*: HPL_DETAILED_TIMING max over ranks of the time in rfact (panel factorisation incl. pivot search), pfact (its leaves), mxswp (pivot search messages), update (trailing update incl. laswp and the broadcast polling inside it), laswp (row swaps), bcast (time in HPL_bcast/HPL_bwait, added timer), uptrsv (backward substitution); seconds"
    echo "# wall_s, maxrss_kb: GNU time -v of smpirun (maxrss counts the many mappings of the shared matrix block; physical memory is lower)"
    echo "grid_p,grid_q,n,nb,depth,bcast,swap,pfact,rfact,nbmin,ndiv,sim_s,gflops,wall_s,maxrss_kb,t_rfact,t_pfact,t_mxswp,t_update,t_laswp,t_bcast,t_uptrsv,platform,nodes,gpus_per_node"
  } > "$out"
fi

for cell in $cells; do
  IFS=: read -r grid n b s plat <<< "$cell"
  p=${grid%x*}; q=${grid#*x}; r=$((p * q))
  g=$gpn; [ "$g" -gt "$r" ] && g=$r
  nodes=$(( (r + g - 1) / g ))
  cores=$(( 12 / g )); [ "$cores" -lt 1 ] && cores=1
  case "$plat" in net) xml="$platform" ;; free) xml="$free" ;; *) echo "bad platform in $cell" >&2; continue ;; esac
  dir="$work/${p}x${q}-n$n-b$b-s$s-$plat-g$g"
  mkdir -p "$dir"
  cat > "$dir/HPL.dat" <<EOF
HPLinpack benchmark input file
SMPI oracle for hetsim (scripts/oracle-smpi-hpl.sh)
HPL.out      output file name (if any)
6            device out (6=stdout,7=stderr,file)
1            # of problems sizes (N)
$n           Ns
1            # of NBs
$nb          NBs
0            PMAP process mapping (0=Row-,1=Column-major)
1            # of process grids (P x Q)
$p           Ps
$q           Qs
-16.0        threshold
1            # of panel fact
2            PFACTs (0=left, 1=Crout, 2=Right)
1            # of recursive stopping criterium
$nbmin       NBMINs (>= 1)
1            # of panels in recursion
$ndiv        NDIVs
1            # of recursive panel fact.
1            RFACTs (0=left, 1=Crout, 2=Right)
1            # of broadcast
$b           BCASTs (0=1rg,1=1rM,2=2rg,3=2rM,4=Lng,5=LnM)
1            # of lookahead depth
$depth       DEPTHs (>=0)
$s           SWAP (0=bin-exch,1=long,2=mix)
64           swapping threshold
0            L1 in (0=transposed,1=no-transposed) form
0            U  in (0=transposed,1=no-transposed) form
1            Equilibration (0=no,1=yes)
8            memory alignment in double (> 0)
EOF
  : > "$dir/hosts.txt"
  for ((i = 0; i < r; i++)); do echo "n$((i / g))g$((i % g))" >> "$dir/hosts.txt"; done
  cmd=(smpirun -np "$r" -platform "$xml" -hostfile "$dir/hosts.txt" "${opts[@]}" "$xhpl")
  echo "$(date -u +%H:%M:%S) cell $cell (G=$g, $nodes nodes)" >&2
  (
    cd "$dir"
    export HPL_SMPI_CPU_CORES="$cores"
    if [ "$tmpfs" = 1 ]; then
      nice -n 10 "$gnutime" -v -o time.txt unshare -m --propagation private \
        sh -c 'mount -t tmpfs -o size=16g tmpfs "$0" && exec "$@"' "$systmp" "${cmd[@]}" > out.txt 2>&1
    else
      nice -n 10 "$gnutime" -v -o time.txt "${cmd[@]}" > out.txt 2>&1
    fi
  ) || echo "cell $cell failed (see $dir/out.txt)" >&2
  awk -v p="$p" -v q="$q" -v n="$n" -v nb="$nb" -v depth="$depth" -v b="${bname[$b]}" \
      -v s="${sname[$s]}" -v pf="$pfact" -v rf="$rfact" -v nbmin="$nbmin" -v ndiv="$ndiv" \
      -v plat="$plat" -v nodes="$nodes" -v g="$g" -v tfile="$dir/time.txt" '
    function secs(x,  a, k) { k = split(x, a, ":"); return (k == 3) ? a[1] * 3600 + a[2] * 60 + a[3] : a[1] * 60 + a[2] }
    /^W[RC][0-9]/ { sim = $6; gf = $7 }
    /Max aggregated wall time rfact/ { t["rfact"] = $NF }
    /Max aggregated wall time pfact/ { t["pfact"] = $NF }
    /Max aggregated wall time mxswp/ { t["mxswp"] = $NF }
    /Max aggregated wall time update/ { t["update"] = $NF }
    /Max aggregated wall time laswp/ { t["laswp"] = $NF }
    /Max aggregated wall time bcast/ { t["bcast"] = $NF }
    /Max aggregated wall time up tr sv/ { t["uptrsv"] = $NF }
    END {
      while ((getline line < tfile) > 0) {
        if (line ~ /Elapsed \(wall clock\)/) { sub(/.*: /, "", line); wall = secs(line) }
        if (line ~ /Maximum resident set size/) { sub(/.*: /, "", line); rss = line }
      }
      if (sim == "") { print "no HPL result" > "/dev/stderr"; exit 1 }
      printf "%d,%d,%d,%d,%d,%s,%s,%s,%s,%d,%d,%s,%s,%.2f,%s,%s,%s,%s,%s,%s,%s,%s,%s,%d,%d\n",
        p, q, n, nb, depth, b, s, pf, rf, nbmin, ndiv, sim, gf, wall, rss,
        t["rfact"], t["pfact"], t["mxswp"], t["update"], t["laswp"], t["bcast"], t["uptrsv"],
        plat, nodes, g
    }' "$dir/out.txt" >> "$out" || echo "cell $cell: no result parsed" >&2
done

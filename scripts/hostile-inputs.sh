#!/usr/bin/env bash
# Hostile-input battery: runs a hetsim binary on malformed, extreme and adversarial inputs
# and counts, per class of the robustness contract (docs/robustness.md), how each run ended.
#
#   HETSIM=target/release/hetsim scripts/hostile-inputs.sh [DETAILS.tsv]
#
# Classes: 1 no data loss, 2 no panic whatever the environment, 3 bounded resources,
# 4 no nonsense with exit 0, 5 one exit-code contract. Every input runs alone (no parallel
# runs) under `timeout 10` and `ulimit -v 4000000`, in a temporary copy of the repository's
# scenarios/, calibration/, traces/ and StarPU samples; tracked files are never touched.
# Prints a markdown table; DETAILS.tsv (optional) gets one line per input:
# class, name, outcome, exit status, first line of stderr.
set -u
: "${HETSIM:?set HETSIM to the hetsim binary to try}"
H=$(realpath "$HETSIM")
export H
ROOT=$(cd "$(dirname "$0")/.." && pwd)
DETAILS=${1:-}
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
cp -r "$ROOT/scenarios" "$ROOT/calibration" "$ROOT/traces" "$W/"
cp -r "$ROOT/tests/data/starpu-samples/starpu-sampling" "$W/sp"
RES="$W/results.tsv"
: >"$RES"
cd "$W" || exit 1

# t CLASS EXPECT NAME COMMAND [PROTECTED FILE...]
#   EXPECT: fail  -- the input must be refused: exit 0 counts as nonsense
#           any   -- exit 0 is fine when the output passes the sanity check
#           warn  -- exit 0 is fine only if the output names the problem (warning/error text)
#   PROTECTED: files whose bytes must be the same after the run (else "data lost").
#   MAXGF (environment): the largest believable GFlop/s of the run (default 1e6).
t() {
    local class=$1 expect=$2 name=$3 cmd=$4
    shift 4
    local f sums_before="" sums_after=""
    mkdir -p "$W/keep"
    for f in "$@"; do
        sums_before+=$(sha256sum "$f" 2>/dev/null || echo "missing $f")
        cp -p "$f" "$W/keep/$(echo "$f" | tr / _)" 2>/dev/null
    done
    (
        ulimit -v 4000000
        exec timeout -k 2 10 bash -o pipefail -c "$cmd"
    ) >"$W/out" 2>"$W/err" </dev/null
    local rc=$?
    for f in "$@"; do sums_after+=$(sha256sum "$f" 2>/dev/null || echo "missing $f"); done
    # Put damaged files back so that one loss does not spoil the inputs that follow.
    [ "$sums_before" != "$sums_after" ] && for f in "$@"; do
        cp -p "$W/keep/$(echo "$f" | tr / _)" "$f" 2>/dev/null
    done
    local outcome
    if [ "$rc" = 124 ] || [ "$rc" = 137 ]; then
        outcome=hang
    elif [ "$rc" = 101 ] || grep -q 'panicked' "$W/err"; then
        # A release build aborts on a panic (status 134): the message tells it from a runaway.
        outcome=panic
    elif [ "$rc" = 134 ] || grep -q 'memory allocation of .* failed' "$W/err"; then
        outcome=runaway
    elif [ "$sums_before" != "$sums_after" ]; then
        outcome=data_lost
    elif [ "$rc" = 2 ]; then
        outcome=exit2
    elif [ "$rc" = 1 ]; then
        outcome=exit1
    elif [ "$rc" = 0 ]; then
        if [ "$expect" = fail ]; then
            outcome=nonsense
        elif [ "$expect" = warn ] && ! grep -qiE 'warn|error|ignor|skip' "$W/out" "$W/err"; then
            outcome=nonsense
        elif ! MAXGF=${MAXGF:-1e6} python3 "$W/sane.py" "$W/out"; then
            outcome=nonsense
        else
            outcome=ok
        fi
    elif [ "$rc" = 141 ] && [ ! -s "$W/err" ]; then
        outcome=ok # killed by SIGPIPE, silently: what cat and grep do
    else
        outcome=other
    fi
    local first
    first=$(grep -v '^\s*$' "$W/err" | head -1 | cut -c1-200 | tr '\t' ' ')
    printf '%s\t%s\t%s\t%s\t%s\n' "$class" "$name" "$outcome" "$rc" "$first" >>"$RES"
}

# The output sanity check of a run that ended with exit 0: no NaN or infinity, no negative
# time, no GFlop/s beyond MAXGF.
cat >"$W/sane.py" <<'EOF'
import json, math, os, re, sys
text = open(sys.argv[1], errors="replace").read()
maxgf = float(os.environ["MAXGF"])
bad = []
if re.search(r"(?<![A-Za-z_])(nan|NaN|inf|-inf|infinity|Infinity)(?![A-Za-z_])", text):
    bad.append("NaN/inf in output")
if re.search(r"(?<![\w.])-\d[\d.e+-]*\s*(s|ms|us|µs|ns)\b", text):
    bad.append("negative time")
for m in re.finditer(r"([\d.]+(?:e[+-]?\d+)?)\s*GFlop/s", text):
    if float(m.group(1)) > maxgf:
        bad.append("GFlop/s beyond the machine's peak")
def walk(v, key=""):
    if isinstance(v, dict):
        for k, x in v.items():
            walk(x, k)
    elif isinstance(v, list):
        for x in v:
            walk(x, key)
    elif isinstance(v, (int, float)) and not isinstance(v, bool):
        if not math.isfinite(v):
            bad.append(f"{key} not finite")
        elif key.endswith("_s") and v < 0:
            bad.append(f"{key} negative")
        elif key == "gflops" and v > maxgf:
            bad.append("gflops beyond the machine's peak")
try:
    walk(json.loads(text))
except ValueError:
    pass
if bad:
    print("; ".join(sorted(set(bad))), file=sys.stderr)
    sys.exit(1)
EOF

# --- fixtures -------------------------------------------------------------------------------
CH=scenarios/cholesky-mirage.toml
ST=scenarios/stencil-diffusion-tsubame2.toml
P2P=scenarios/p2p-example-cluster.toml
OFF=scenarios/offload-pbpi.toml
HPL=scenarios/hpl-hdpex-p100.toml
NET=scenarios/net-mirage-pcie.json
MIR=calibration/mirage.toml
LOGGP='model loggp --param bytes=1000 --param latency_s=1e-6 --param send_overhead_s=1e-6 --param recv_overhead_s=1e-6'
mkfifo fifo
mkdir -p emptydir
printf 'precious\n' >precious.txt
truncate -s 8G sparse.toml

# mut NAME SED: calibration/NAME.toml is mirage.toml edited by SED; scenarios/NAME.toml runs
# the Cholesky on it.
mut() {
    sed -E "$2" "$MIR" >"calibration/$1.toml"
    sed "s|../calibration/mirage.toml|../calibration/$1.toml|" "$CH" >"scenarios/$1.toml"
}

# graph NAME JSON: a scenario running the task graph JSON on mirage.
graph() {
    printf '%s\n' "$2" >"$1.json"
    cat >"scenarios/$1.toml" <<EOF
[scenario]
name = "$1"
machine = "../calibration/mirage.toml"
[workload]
kind = "taskgraph"
file = "../$1.json"
format = "json"
[scheduler]
name = "dmda"
EOF
}

# spmut NAME FILE SED: a copy of the StarPU samples with FILE (under sp/) edited by SED.
spmut() {
    rm -rf "sp-$1"
    cp -r sp "sp-$1"
    sed -i -E "$3" "sp-$1/$2"
}

# The other fixtures, made from the copies above.
sed -E 's/^count = 12/count = 1000000000/' "$MIR" >calibration/cpus1e9.toml
sed 's|../calibration/mirage.toml|../fifo|' "$CH" >scenarios/machine-fifo.toml
sed 's|../calibration/mirage.toml|../calibration/nosuch.toml|' "$CH" >scenarios/machine-missing.toml
sed 's|^file = .*|file = "/dev/zero"|' scenarios/replay-stencil-mirage.toml >scenarios/graph-devzero.toml
HDR='"format": "hetsim-taskgraph", "version": 1, "handles": [{"size_bytes": 3686400}]'
DUR='"duration_s": {"cpu": 0.01, "gpu": 0.002}'
graph g-unknown "{$HDR, \"tasks\": [{\"codelet\": \"nosuch\", \"accesses\": [[0, \"RW\"]]}]}"
graph g-cycle "{$HDR, \"tasks\": [{\"codelet\": \"k\", \"accesses\": [], \"after\": [1], $DUR}, {\"codelet\": \"k\", \"accesses\": [], \"after\": [0], $DUR}]}"
graph g-self "{$HDR, \"tasks\": [{\"codelet\": \"k\", \"accesses\": [[0, \"RW\"]], \"after\": [0], $DUR}]}"
graph g-handle "{$HDR, \"tasks\": [{\"codelet\": \"k\", \"accesses\": [[99, \"RW\"]], $DUR}]}"
graph g-huge "{\"format\": \"hetsim-taskgraph\", \"version\": 1, \"handles\": [{\"size_bytes\": 1000000000000000}], \"tasks\": [{\"codelet\": \"k\", \"accesses\": [[0, \"RW\"]], $DUR}]}"
graph g-negdur "{$HDR, \"tasks\": [{\"codelet\": \"k\", \"accesses\": [[0, \"RW\"]], \"duration_s\": {\"cpu\": -1, \"gpu\": -1}}]}"
graph g-flops "{$HDR, \"tasks\": [{\"codelet\": \"k\", \"flops\": 1e999, \"accesses\": [[0, \"RW\"]], $DUR}]}"
graph g-after "{$HDR, \"tasks\": [{\"codelet\": \"k\", \"accesses\": [[0, \"RW\"]], \"after\": [5], $DUR}]}"
graph big '{}'
python3 - <<'EOF'
import json
task = '{"codelet": "k", "accesses": [[0, "RW"]], "duration_s": {"cpu": 0.001, "gpu": 0.001}}'
with open("big.json", "w") as f:
    f.write('{"format": "hetsim-taskgraph", "version": 1, "handles": [{"size_bytes": 8}], "tasks": [')
    f.write(",".join([task] * 1000000))
    f.write("]}")
case = json.load(open("scenarios/net-mirage-pcie.json"))
def net(name, edit):
    c = json.loads(json.dumps(case))
    edit(c)
    with open(f"net-{name}.json", "w") as f:
        f.write(json.dumps(c).replace('"NAN"', "NaN").replace('"BIG"', "1e999"))
net("zero", lambda c: [l.update(bandwidth=0.0) for l in c["links"]])
net("neg", lambda c: c["links"][0].update(bandwidth=-1.0))
net("lat", lambda c: c["links"][1].update(latency=-1.0))
net("bytes", lambda c: c["flows"][0].update(bytes=-5))
net("link", lambda c: c["routes"][0]["links"].append("nosuch"))
net("route", lambda c: c.update(routes=c["routes"][1:]))
net("start", lambda c: c["flows"][0].update(start="NAN"))
net("huge", lambda c: c["flows"][0].update(bytes="BIG"))
EOF
cp -r sp sp-fifo && mkfifo sp-fifo/codelets/45/zz_fifo.mirage
cp -r sp sp-zero && ln -sf /dev/zero sp-zero/codelets/45/zz_zero.mirage
cp -r sp sp-entries && sed -i -E '31s/^4$/1000000000000/' sp-entries/codelets/45/chol_model_gemm.mirage

# --- class 1: no data loss -----------------------------------------------------------------
t 1 fail gantt-is-machine "\$H run $CH --gantt $MIR" $MIR
t 1 fail paje-is-machine "\$H run $CH --paje $MIR" $MIR
t 1 fail chrome-is-machine "\$H run $CH --chrome $MIR" $MIR
t 1 fail gantt-is-scenario "\$H run $CH --gantt $CH" $CH
t 1 fail gantt-is-machine-dotdot "\$H run $CH --gantt calibration/../calibration/mirage.toml" $MIR
t 1 fail chrome-is-graph "\$H run scenarios/replay-stencil-mirage.toml --chrome traces/starpu/stencil-32x16-dmda/tasks.rec.gz" traces/starpu/stencil-32x16-dmda/tasks.rec.gz
t 1 fail paje-is-cluster-node "\$H run $P2P --paje calibration/hdpex-p100-node.toml" calibration/hdpex-p100-node.toml
t 1 fail paje-chrome-same "cp precious.txt x1; \$H run $CH --paje x1 --chrome x1"
t 1 fail paje-gantt-same "\$H run $CH --paje x2 --gantt ./x2"
t 1 fail same-twice-existing "\$H run $CH --chrome precious.txt --gantt precious.txt" precious.txt
t 1 fail sweep-o-is-scenario "\$H sweep $CH -q -o $CH" $CH
t 1 fail sweep-o-is-machine "\$H sweep $CH -q -o $MIR" $MIR
t 1 fail sweep-o-plot-same "\$H sweep $CH -q -o x3 --plot x3"
t 1 fail import-o-is-codelet "\$H calibrate import-starpu sp --host mirage -o sp/codelets/45/chol_model_gemm.mirage" sp/codelets/45/chol_model_gemm.mirage
t 1 fail import-o-is-config "\$H calibrate import-starpu sp --host mirage -o sp/bus/mirage.config" sp/bus/mirage.config
t 1 fail merge-o-is-shard "\$H sweep $CH -q --sched eager,dm --shard 1/1 -o s1.csv && \$H sweep merge s1.csv -o s1.csv" 
t 1 fail export-o-is-graph "\$H export-graph scenarios/replay-stencil-mirage.toml -o traces/starpu/stencil-32x16-dmda/tasks.rec.gz" traces/starpu/stencil-32x16-dmda/tasks.rec.gz
t 1 any gantt-symlink-to-machine "ln -sf $MIR link.svg && \$H run $CH --gantt link.svg" $MIR
t 1 any gantt-hardlink-to-machine "cp $MIR m2.toml && ln -f m2.toml hard.svg && \$H run $CH --gantt hard.svg && cmp -s m2.toml $MIR" $MIR
t 1 any killed-run-keeps-output "timeout 1 \$H run $CH --set workload.n=57600 --set workload.nb=320 --paje precious.txt; test \$? = 124" precious.txt
t 1 fail failed-run-keeps-output "\$H run $CH --set workload.nb=7 --paje precious.txt --chrome precious.txt" precious.txt
t 1 fail full-disk-keeps-output "\$H run $CH --gantt /dev/full" 
t 1 fail gantt-is-directory "\$H run $CH --gantt emptydir" 
t 1 fail sweep-o-missing-dir-plot-existing "\$H sweep $CH -q -o nodir/a.csv --plot precious.txt" precious.txt
t 1 fail import-o-dir "\$H calibrate import-starpu sp --host mirage -o emptydir"

# --- class 2: no panic whatever the environment -------------------------------------------
CMDS=(
    "check $MIR"
    "check calibration/example-cluster.toml"
    "run $CH"
    "run --json $CH"
    "run $P2P"
    "run $ST"
    "net $NET"
    "crosscheck $OFF"
    "crosscheck --json $P2P"
    "$LOGGP"
    "$LOGGP --json"
    "model --help-params loggp"
    "calibrate show $MIR"
    "calibrate import-starpu sp --host mirage"
    "run --help"
    "export-graph $CH"
)
for c in "${CMDS[@]}"; do
    t 2 any "pipe-head: $c" "\$H $c | head -c1 >/dev/null"
    t 2 fail "dev-full: $c" "\$H $c >/dev/full"
    t 2 any "stdout-closed: $c" "\$H $c >&-"
done
t 2 any no-home "env -u HOME \$H run $CH -q"
t 2 any deleted-cwd "mkdir gone && cd gone && rmdir ../gone && \$H run $W/$CH -q"
t 2 any stderr-closed-bad-input "\$H run nosuch.toml 2>&-; test \$? = 2"
t 2 any stderr-full-bad-input "\$H run nosuch.toml 2>/dev/full; test \$? = 2"
t 2 any sweep-stdout-full "\$H sweep $CH -o x4.csv >/dev/full 2>/dev/full; test -s x4.csv"
t 2 any odd-locale "LC_ALL=tr_TR.UTF-8 LANG=xx \$H run -q $CH"

# --- class 3: bounded resources -----------------------------------------------------------
for v in 1000000000 1000000 4294967297 18446744073709551615; do
    t 3 any "nodes=$v" "\$H run $ST --set machine.nodes=$v"
done
t 3 any gpus_per_node=1e9 "\$H run $HPL --set machine.gpus_per_node=1000000000"
t 3 any gpus_per_node=1e6 "\$H run $ST --set machine.gpus_per_node=1000000"
t 3 any cholesky-n=1e9 "\$H run $CH --set workload.n=960000000"
t 3 any cholesky-n=1e18 "\$H run $CH --set workload.n=1000000000000000000"
t 3 any cholesky-nb=1 "\$H run $CH --set workload.nb=1"
t 3 any gemm-n=1e7 "\$H run scenarios/gemm-mirage.toml --set workload.n=9600000"
t 3 any lu-n=1e8 "\$H run scenarios/lu-mirage.toml --set workload.n=96000000"
t 3 any p2p-repeat=1e8 "\$H run $P2P --set workload.repeat=100000000"
t 3 any p2p-bytes=1e18 "\$H run $P2P --set 'workload.bytes=\"1000 PiB\"'"
t 3 any stencil-steps=1e8 "\$H run $ST --set workload.steps=100000000"
t 3 fail stencil-cells-1e18 "\$H run $ST --set workload.nx=1000000 --set workload.ny=1000000 --set workload.nz=1000000"
t 3 any hpl-n=1e9 "\$H run $HPL --set workload.n=1000000000"
t 3 any hpl-nb=1 "\$H run $HPL --set workload.nb=1"
t 3 any offload-phases=1e12 "\$H run $OFF --set workload.phases=1000000000000"
t 3 any offload-threads=1e9 "\$H run $OFF --set workload.hpu_threads=1000000000"
t 3 any bcast-nodes=1e7 "\$H run scenarios/bcast-example-cluster.toml --set machine.nodes=10000000"
t 3 any alltoall-nodes=1e5 "\$H run scenarios/alltoall-example-cluster.toml --set machine.nodes=100000"
t 3 any sweep-j=100000 "\$H sweep $CH -q -j 100000 -o x5.csv --sched eager,dm"
t 3 any sweep-seeds=1e8 "\$H sweep $CH -q --seeds 1..100000000 -o x6.csv"
t 3 any sweep-vary-1e4 "\$H sweep $P2P -q --vary run.seed=\$(seq -s, 1 10000) -o x7.csv"
t 3 any cpus-count=1e9 "\$H check calibration/cpus1e9.toml" 
t 3 any mmgp-search-n_apu=1e15 "\$H model mmgp-search --param t_hpu_s=1 --param t_apu_s=1 --param c_apu_s=1 --param g_s=1 --param n_apu=1000000000000000"
t 3 any loggp-messages=1e18 "\$H $LOGGP --param messages=1000000000000000000"
t 3 any model-sweep-1e4 "\$H $LOGGP --sweep bytes=\$(seq -s, 1 10000)"
t 3 any graph-1e6-tasks "\$H run scenarios/big.toml"
t 3 any starpu-entries-1e12 "\$H calibrate import-starpu sp-entries --host mirage"
for f in /dev/zero fifo emptydir sparse.toml; do
    t 3 any "run $f" "\$H run $f"
    t 3 any "check $f" "\$H check $f"
    t 3 any "net $f" "\$H net $f"
    t 3 any "calibrate-show $f" "\$H calibrate show $f"
    t 3 any "model-from $f" "\$H model loggp --from $f"
done
t 3 any import-fifo-codelet "\$H calibrate import-starpu sp-fifo --host mirage"
t 3 any import-zero-config "\$H calibrate import-starpu sp-zero --host mirage"
t 3 any scenario-machine-fifo "\$H run scenarios/machine-fifo.toml"
t 3 any scenario-graph-devzero "\$H run scenarios/graph-devzero.toml"

# --- class 4: no nonsense with exit 0 -----------------------------------------------------
MUTS=(
    "bw-nan|0,/bandwidth = .*/s//bandwidth = \"nanBps\"/"
    "bw-inf|0,/bandwidth = .*/s//bandwidth = \"infBps\"/"
    "bw-neg|0,/bandwidth = .*/s//bandwidth = \"-5GBps\"/"
    "bw-zero|s/bandwidth = .*/bandwidth = \"0Bps\"/"
    "bw-1e999|0,/bandwidth = .*/s//bandwidth = \"1e999Bps\"/"
    "bw-bare|0,/bandwidth = .*/s//bandwidth = 6517450307/"
    "bw-bare-string|0,/bandwidth = .*/s//bandwidth = \"6517450307\"/"
    "lat-nan|0,/latency = .*/s//latency = \"nan s\"/"
    "lat-neg|0,/latency = .*/s//latency = \"-1 s\"/"
    "lat-1e999|0,/latency = .*/s//latency = \"1e999 s\"/"
    "lat-inf|s/latency = .*/latency = \"inf s\"/"
    "lat-bare|0,/latency = .*/s//latency = 0.00001/"
    "cap-zero|s/capacity = \"5636554752 B\"/capacity = \"0 B\"/"
    "cap-neg|0,/capacity = .*/s//capacity = \"-36 GiB\"/"
    "cap-nan|0,/capacity = .*/s//capacity = \"nan GiB\"/"
    "cap-1e999|0,/capacity = .*/s//capacity = \"1e999 B\"/"
    "cap-bare|0,/capacity = .*/s//capacity = 36/"
    "cpus-zero|s/^count = 12/count = 0/"
    "gpu-mem-unknown|0,/memory = \"CUDA0\"/s//memory = \"CUDA9\"/"
    "link-dup|s/name = \"CUDA0-RAM\"/name = \"Host\"/"
)
for m in "${MUTS[@]}"; do
    mut "${m%%|*}" "${m#*|}"
    t 4 fail "check machine ${m%%|*}" "\$H check calibration/${m%%|*}.toml"
    t 4 fail "run machine ${m%%|*}" "\$H run --json scenarios/${m%%|*}.toml"
done
MAXGF=13000 t 4 any stencil-1e9-cells "\$H run --json $ST --set workload.nx=1000 --set workload.ny=1000 --set workload.nz=1000"
MAXGF=13000 t 4 any stencil-4e9-cells-1-step "\$H run --json $ST --set workload.nx=2048 --set workload.ny=2048 --set workload.nz=1024 --set workload.steps=1"
MAXGF=13000 t 4 fail stencil-weak-huge "\$H run --json $ST --set workload.grid_per_rank=true --set workload.nx=4096 --set workload.ny=4096 --set workload.nz=4096 --set workload.steps=1"
t 4 fail unknown-kind "\$H run $CH --set workload.kind=nosuch"
t 4 fail unknown-precision "\$H run $CH --set workload.precision=quad"
t 4 fail unknown-sched "\$H run $CH --sched nosuch"
t 4 fail unknown-key "\$H run $CH --set workload.nosuch=1"
t 4 fail negative-n "\$H run $CH --set workload.n=-9600"
t 4 fail n-not-multiple "\$H run $CH --set workload.n=9601"
t 4 fail p2p-negative-bytes "\$H run $P2P --set 'workload.bytes=\"-1 MiB\"'"
t 4 fail p2p-src-out "\$H run $P2P --set workload.src=7"
t 4 fail offload-negative-time "\$H run $OFF --set 'workload.t_apu=\"-370 s\"'"
t 4 fail crosscheck-nan-time "\$H crosscheck $OFF --set 'workload.t_apu=\"nan s\"'"
t 4 fail graph-unknown-kernel "\$H run scenarios/g-unknown.toml"
t 4 fail graph-cycle "\$H run scenarios/g-cycle.toml"
t 4 fail graph-self-loop "\$H run scenarios/g-self.toml"
t 4 fail graph-bad-handle "\$H run scenarios/g-handle.toml"
t 4 fail graph-huge-handle "\$H run scenarios/g-huge.toml"
t 4 fail graph-negative-duration "\$H run scenarios/g-negdur.toml"
t 4 fail graph-1e999-flops "\$H run scenarios/g-flops.toml"
t 4 fail graph-after-out "\$H run scenarios/g-after.toml"
t 4 fail net-zero-bw "\$H net net-zero.json"
t 4 fail net-neg-bw "\$H net net-neg.json"
t 4 fail net-neg-lat "\$H net net-lat.json"
t 4 fail net-neg-bytes "\$H net net-bytes.json"
t 4 fail net-unknown-link "\$H net net-link.json"
t 4 fail net-no-route "\$H net net-route.json"
t 4 fail net-nan-start "\$H net net-start.json"
t 4 fail net-1e999-bytes "\$H net net-huge.json"
for s in "codelet-mean-nan|codelets/45/chol_model_gemm.mirage|s/3.262643e\+03/nan/" \
    "codelet-mean-neg|codelets/45/chol_model_gemm.mirage|s/3.262643e\+03/-3.262643e+03/" \
    "codelet-mean-1e999|codelets/45/chol_model_gemm.mirage|s/3.262643e\+03/1e999/" \
    "codelet-size-neg|codelets/45/chol_model_gemm.mirage|s/1228800 /-1228800 /" \
    "codelet-truncated|codelets/45/chol_model_gemm.mirage|40,\$d" \
    "codelet-garbage|codelets/45/chol_model_gemm.mirage|s/^45$/zzz/" \
    "bus-bw-nan|bus/mirage.bandwidth|2s/6030.996807/nan/" \
    "bus-bw-neg|bus/mirage.bandwidth|2s/6030.996807/-6030.996807/" \
    "bus-lat-1e999|bus/mirage.latency|2s/^([^\t]*\t)[^\t]*/\11e999/" \
    "xml-memsize-zero|bus/mirage.platform.v4.xml|s/value=\"5636554752\"/value=\"0\"/" \
    "xml-memsize-neg|bus/mirage.platform.v4.xml|s/value=\"5636554752\"/value=\"-5\"/" \
    "xml-garbage|bus/mirage.platform.v4.xml|5s/.*/<<<</" \
    "config-neg|bus/mirage.config|s/^3 # Number of CUDA/-3 # Number of CUDA/" \
    "config-huge|bus/mirage.config|s/^3 # Number of CUDA/3000000000 # Number of CUDA/"; do
    IFS='|' read -r n f e <<<"$s"
    spmut "$n" "$f" "$e"
    t 4 warn "import $n" "\$H calibrate import-starpu sp-$n --host mirage"
done
t 4 fail host-dotdot "\$H calibrate import-starpu sp --host ../sp/bus/mirage"
t 4 fail host-empty "\$H calibrate import-starpu sp --host ''"
t 4 fail host-slash "\$H calibrate import-starpu sp --host 'a/b'"
t 4 fail host-glob "\$H calibrate import-starpu sp --host '*'"
t 4 fail model-unknown-param "\$H $LOGGP --param nosuch=1"
t 4 fail model-unused-param "\$H model roofline --param peak_flops_per_sec=1e12 --param peak_bytes_per_sec=1e11 --param intensity_flops_per_byte=1 --param flops=10 --param bytes=1"
t 4 fail model-neg-latency "\$H model loggp --param bytes=1000 --param latency_s=-1 --param send_overhead_s=1e-6 --param recv_overhead_s=1e-6"
t 4 fail model-nan "\$H model loggp --param bytes=nan --param latency_s=1e-6 --param send_overhead_s=1e-6 --param recv_overhead_s=1e-6"
t 4 fail model-inf "\$H model loggp --param bytes=inf --param latency_s=1e-6 --param send_overhead_s=1e-6 --param recv_overhead_s=1e-6"
t 4 fail model-1e999 "\$H model loggp --param bytes=1e999 --param latency_s=1e-6 --param send_overhead_s=1e-6 --param recv_overhead_s=1e-6"
t 4 fail model-stencil-py0 "\$H model stencil --param nx=512 --param ny=512 --param nz=512 --param py=0 --param pz=1 --param flops_per_point=13 --param bytes_per_boundary_point=4 --param gpus_per_node=3 --param single_gpu_flops_per_sec=1e11 --param ib_b0_bytes_per_sec=1e9 --param ib_t0_s=1e-6"
t 4 fail model-mmgp-n_apu0 "\$H model mmgp-search --param t_hpu_s=1 --param t_apu_s=1 --param c_apu_s=1 --param g_s=1 --param n_apu=0"
t 4 fail model-unknown-kind "\$H model nosuch"
t 4 fail model-from-unknown "printf 'nosuch = 1\n' >pf.toml && \$H $LOGGP --from pf.toml"
t 4 fail model-roofline-zero-bw "\$H model roofline --param peak_flops_per_sec=1e12 --param peak_bytes_per_sec=0 --param intensity_flops_per_byte=1"

# --- class 5: one exit-code contract ------------------------------------------------------
t 5 fail run-paje-missing-dir "\$H run $CH --paje nodir/x.paje"
t 5 fail run-chrome-missing-dir "\$H run $CH --chrome nodir/x.json"
t 5 fail run-gantt-missing-dir "\$H run $CH --gantt nodir/x.svg"
t 5 fail run-gantt-proc "\$H run $CH --gantt /proc/x.svg"
t 5 fail run-paje-proc-version "\$H run $CH --paje /proc/version"
t 5 fail sweep-o-missing-dir "\$H sweep $CH -q -o nodir/x.csv"
t 5 fail sweep-plot-missing-dir "\$H sweep $CH -q -o x8.csv --plot nodir/x.svg"
t 5 fail sweep-o-proc "\$H sweep $CH -q -o /proc/x.csv"
t 5 fail import-o-missing-dir "\$H calibrate import-starpu sp --host mirage -o nodir/m.toml"
t 5 fail import-o-proc "\$H calibrate import-starpu sp --host mirage -o /proc/m.toml"
t 5 fail export-o-missing-dir "\$H export-graph $CH -o nodir/g.json"
t 5 fail merge-o-missing-dir "\$H sweep $CH -q --sched eager,dm --shard 1/1 -o s2.csv && \$H sweep merge s2.csv -o nodir/m.csv"
t 5 fail run-missing "\$H run nosuch.toml"
t 5 fail check-missing "\$H check nosuch.toml"
t 5 fail net-missing "\$H net nosuch.json"
t 5 fail show-missing "\$H calibrate show nosuch.toml"
t 5 fail import-missing "\$H calibrate import-starpu nosuchdir --host mirage"
t 5 fail import-no-host "\$H calibrate import-starpu sp --host nosuchhost"
t 5 fail model-from-missing "\$H $LOGGP --from nosuch.toml"
t 5 fail crosscheck-missing "\$H crosscheck nosuch.toml"
t 5 fail crosscheck-not-program "\$H crosscheck $CH"
t 5 fail scenario-machine-missing "\$H run scenarios/machine-missing.toml"
t 5 fail unknown-subcommand "\$H nosuch"
t 5 fail bad-seed "\$H run $CH --seed -1"

# --- tabulate -----------------------------------------------------------------------------
[ -n "$DETAILS" ] && cp "$RES" "$DETAILS"
python3 - "$RES" <<'EOF'
import collections, sys
names = {1: "1 no data loss", 2: "2 no panic (environment)", 3: "3 bounded resources",
         4: "4 no nonsense with exit 0", 5: "5 exit-code contract"}
cols = ["exit2", "exit1", "panic", "hang", "runaway", "nonsense", "data_lost", "ok", "other"]
heads = ["exit 2", "exit 1", "panic", "hang", "runaway memory", "exit 0 nonsense",
         "file lost", "exit 0 fine", "other exit"]
count = collections.defaultdict(collections.Counter)
for line in open(sys.argv[1]):
    c, _, outcome, *_ = line.rstrip("\n").split("\t")
    count[int(c)][outcome] += 1
print("| class | tried | " + " | ".join(heads) + " |")
print("|---" * (len(cols) + 2) + "|")
total = collections.Counter()
for c in sorted(count):
    total.update(count[c])
    print(f"| {names[c]} | {sum(count[c].values())} | "
          + " | ".join(str(count[c][k]) for k in cols) + " |")
print(f"| all | {sum(total.values())} | " + " | ".join(str(total[k]) for k in cols) + " |")
EOF

//! Clusters end to end: cluster files, the MPI-style executor on small clusters with
//! hand-derived times, bad cluster files through the CLI, determinism, and network size.
//!
//! The test node (`node.toml` below): RAM and two GPUs, each GPU on its own split-duplex PCIe
//! link of 10 GB/s per direction and 1 µs latency, no GPU↔GPU route. The test cluster: NICs of
//! 5 GB/s per direction and 2 µs, a crossbar of 0.5 µs, o_s = 3 µs and o_r = 4 µs at every size.

use crate::common::hetsim;
use std::path::{Path, PathBuf};

use hetsim::cluster::{self, ClusterNetwork};
use hetsim::fluid::SharingMode;

const NODE: &str = r#"
[machine]
name = "testnode"
[[memory_nodes]]
name = "RAM"
kind = "ram"
capacity = "64 GiB"
[[memory_nodes]]
name = "GPU0"
kind = "gpu"
capacity = "8 GiB"
[[memory_nodes]]
name = "GPU1"
kind = "gpu"
capacity = "8 GiB"
[[cpus]]
count = 4
model = "c"
memory = "RAM"
[[gpus]]
name = "GPU0"
model = "g"
memory = "GPU0"
[[gpus]]
name = "GPU1"
model = "g"
memory = "GPU1"
[[links]]
name = "P0"
bandwidth = "10 GB/s"
latency = "1 us"
sharing = "split-duplex"
[[links]]
name = "P1"
bandwidth = "10 GB/s"
latency = "1 us"
sharing = "split-duplex"
[[routes]]
src = "RAM"
dst = "GPU0"
links = ["P0_DOWN"]
symmetric = true
[[routes]]
src = "RAM"
dst = "GPU1"
links = ["P1_DOWN"]
symmetric = true
"#;

const CLUSTER: &str = r#"[cluster]
name = "testcluster"
node = "node.toml"
nodes = 2
gpus_per_node = 2

[nic]
bandwidth = "5 GB/s"
latency = "2 us"
count = 1

[switch]
kind = "crossbar"
latency = "0.5 us"

[overheads]
rows = [{ bytes = 1, send = "3 us", recv = "4 us" }]
"#;

fn dir(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("cluster")
        .join(name);
    std::fs::create_dir_all(&d).expect("create test directory");
    std::fs::write(d.join("node.toml"), NODE).expect("write node file");
    d
}

/// A directory with the node file, `cluster` as cluster.toml and a scenario naming it.
fn setup(name: &str, cluster: &str, workload: &str) -> PathBuf {
    let d = dir(name);
    std::fs::write(d.join("cluster.toml"), cluster).expect("write cluster");
    let sc = d.join("scenario.toml");
    std::fs::write(
        &sc,
        format!(
            "[scenario]\nname = \"{name}\"\nmachine = \"cluster.toml\"\n[workload]\n{workload}"
        ),
    )
    .expect("write scenario");
    sc
}

fn run_json(sc: &Path, extra: &[&str]) -> serde_json::Value {
    let mut args = vec!["run", sc.to_str().unwrap(), "--json"];
    args.extend_from_slice(extra);
    let out = hetsim(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("JSON")
}

fn makespan(v: &serde_json::Value) -> f64 {
    v["makespan_s"].as_f64().expect("makespan_s")
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * b
}

#[test]
fn p2p_through_host_memory_is_the_sum_of_its_three_steps() {
    // Rank 0 (node 0, GPU0) → rank 2 (node 1, GPU0), 1 MB, device to device. By hand:
    //   o_s                       3 µs
    //   GPU0 → RAM (P0_UP)        1 µs + 1e6 B / 10 GB/s = 101 µs
    //   RAM → RAM (NIC, switch)   2 µs + 0.5 µs + 1e6 B / 5 GB/s = 202.5 µs
    //   RAM → GPU0 (P0_DOWN)      101 µs
    //   o_r                       4 µs
    // total 411.5 µs.
    let sc = setup("p2p", CLUSTER, "kind = \"p2p\"\nbytes = 1000000\n");
    let v = run_json(&sc, &[]);
    assert!(close(makespan(&v), 411.5e-6), "{v}");
    assert_eq!(v["cluster"]["message_steps"].as_u64(), Some(3));
    assert_eq!(v["cluster"]["ranks"].as_u64(), Some(4));
    // One rank per GPU, each under its own instance of the programs' default scheduler.
    assert_eq!(v["sched"].as_str(), Some("prio"));
    // Host to host: only the middle step and the overheads: 3 + 202.5 + 4 = 209.5 µs.
    let v = run_json(
        &sc,
        &["--set", "workload.from=host", "--set", "workload.to=host"],
    );
    assert!(close(makespan(&v), 209.5e-6), "{v}");
    // Ping-pong of 4 messages: 4 × 411.5 µs, each sent when the previous is received.
    let v = run_json(
        &sc,
        &[
            "--set",
            "workload.pingpong=true",
            "--set",
            "workload.repeat=4",
        ],
    );
    assert!(close(makespan(&v), 4.0 * 411.5e-6), "{v}");
}

#[test]
fn two_gpus_of_one_node_share_its_nic() {
    // Ranks 0 and 1 (node 0, GPU0 and GPU1) each send 1 MB to ranks 2 and 3 at once, without
    // overheads. PCIe steps use separate links (101 µs each, in parallel); the two host→host
    // flows start together at 101 µs, pay 2.5 µs of latency and then share node 0's NIC up and
    // node 1's NIC down at 2.5 GB/s each: 1e6 B / 2.5 GB/s = 400 µs; then 101 µs of PCIe.
    // Total 101 + 2.5 + 400 + 101 = 604.5 µs (alone it would be 404.5 µs).
    let c = cluster::load(
        setup("share", CLUSTER, "kind = \"p2p\"\nbytes = 1\n").with_file_name("cluster.toml"),
    )
    .expect("cluster");
    let c = c
        .clone()
        .with_network(
            c.nic().unwrap().clone(),
            c.switch().clone(),
            false,
            Default::default(),
        )
        .unwrap();
    use hetsim::mpi::{Message, ProgramBuilder, RankId};
    let one = |pairs: &[(u32, u32)]| {
        let mut b = ProgramBuilder::new(4);
        for &(s, d) in pairs {
            b.message(Message::device(RankId(s), RankId(d), 1e6), &[]);
        }
        hetsim::programs::simulate_program_default(&b.build(), &c)
            .unwrap()
            .makespan_s
    };
    assert!(close(one(&[(0, 2)]), 404.5e-6));
    assert!(close(one(&[(0, 2), (1, 3)]), 604.5e-6));
}

#[test]
fn binomial_broadcast_on_8_nodes_takes_3_rounds() {
    // 8 nodes × 1 GPU, 1 MB from rank 0, binomial tree: round 1 0→4; round 2 0→2, 4→6;
    // round 3 0→1, 2→3, 4→5, 6→7. Sends are blocking (1 MB is rendezvous: a send returns when
    // delivered) and every message of a round uses its own NICs and PCIe links, so each round
    // takes one message's time alone: 411.5 µs for 1 MB (see p2p_through_host_memory...), plus
    // MPI's 16-byte envelope over two PCIe steps at 10 GB/s and the NIC at 5 GB/s, 6.4 ns:
    // 3 × 411.5064 = 1234.5192 µs.
    let sc = setup(
        "bcast",
        &CLUSTER
            .replace("nodes = 2", "nodes = 8")
            .replace("gpus_per_node = 2", "gpus_per_node = 1"),
        "kind = \"bcast\"\nbytes = 1000000\nalgorithm = \"binomial\"\n",
    );
    let v = run_json(&sc, &[]);
    assert!(close(makespan(&v), 3.0 * 411.5064e-6), "{v}");
    assert_eq!(v["cluster"]["messages"].as_u64(), Some(7));
    assert_eq!(v["cluster"]["nodes"].as_u64(), Some(8));
}

#[test]
fn nodes_and_gpus_are_parameters() {
    let sc = setup("shape", CLUSTER, "kind = \"bcast\"\nbytes = 4096\n");
    let v = run_json(
        &sc,
        &[
            "--set",
            "machine.nodes=4",
            "--set",
            "machine.gpus_per_node=1",
        ],
    );
    assert_eq!(v["cluster"]["ranks"].as_u64(), Some(4));
    // A binomial tree over 4 ranks: 3 messages.
    assert_eq!(v["cluster"]["messages"].as_u64(), Some(3));
    let out = hetsim(&[
        "run",
        sc.to_str().unwrap(),
        "--set",
        "machine.gpus_per_node=3",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("machine.gpus_per_node") && err.contains("has 2 GPU"),
        "{err}"
    );
}

#[test]
fn runs_are_deterministic() {
    let sc = setup("det", CLUSTER, "kind = \"bcast\"\nbytes = \"1 MiB\"\n");
    let args = [
        "--set",
        "machine.nodes=16",
        "--set",
        "machine.gpus_per_node=2",
    ];
    let a = hetsim(&[&["run", sc.to_str().unwrap(), "--json"][..], &args[..]].concat());
    let b = hetsim(&[&["run", sc.to_str().unwrap(), "--json"][..], &args[..]].concat());
    assert!(a.status.success());
    assert!(!a.stdout.is_empty());
    assert_eq!(a.stdout, b.stdout);
}

#[test]
fn sweep_over_nodes() {
    let sc = setup("sweep", CLUSTER, "kind = \"bcast\"\nbytes = \"64 KiB\"\n");
    let csv = sc.with_file_name("out.csv");
    let out = hetsim(&[
        "sweep",
        sc.to_str().unwrap(),
        "--vary",
        "machine.nodes=1,2,4",
        "--output",
        csv.to_str().unwrap(),
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = std::fs::read_to_string(&csv).expect("csv");
    // Header + 3 rows, under the programs' default scheduler.
    assert_eq!(text.lines().count(), 4, "{text}");
    assert!(text.lines().nth(1).unwrap().starts_with("prio,"), "{text}");
}

/// `hetsim run` on a scenario naming a cluster file with `from` replaced by `to`: exit 2, the
/// cluster file, a line and each of `words` in the message, no panic.
fn rejected(name: &str, from: &str, to: &str, words: &[&str]) {
    assert!(CLUSTER.contains(from), "{from}");
    let sc = setup(
        name,
        &CLUSTER.replace(from, to),
        "kind = \"p2p\"\nbytes = 1\n",
    );
    let out = hetsim(&["run", sc.to_str().unwrap()]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{name}: {err}");
    assert!(!err.contains("panicked"), "{name}: {err}");
    assert!(err.contains("cluster.toml:line "), "{name}: {err}");
    for w in words {
        assert!(err.contains(w), "{name}: {err}\nexpected {w:?}");
    }
}

#[test]
fn bad_cluster_files_are_located() {
    rejected(
        "missing_node",
        "node = \"node.toml\"",
        "node = \"nonode.toml\"",
        &["`cluster.node`", "nonode.toml", "not found"],
    );
    rejected(
        "too_many_gpus",
        "gpus_per_node = 2",
        "gpus_per_node = 3",
        &["`cluster.gpus_per_node`", "has 2"],
    );
    rejected(
        "zero_nic",
        "bandwidth = \"5 GB/s\"",
        "bandwidth = \"0 GB/s\"",
        &["`nic.bandwidth`", "zero NIC bandwidth"],
    );
    rejected(
        "nan_overhead",
        "send = \"3 us\"",
        "send = nan",
        &["`overheads.rows[0].send`"],
    );
    rejected(
        "unknown_switch",
        "kind = \"crossbar\"",
        "kind = \"torus\"",
        &["`switch.kind`", "torus", "fat-tree"],
    );
    rejected(
        "oversubscription",
        "kind = \"crossbar\"",
        "kind = \"fat-tree\"\nnodes_per_leaf = 2\noversubscription = 0",
        &["`switch.oversubscription`", "ratio > 0"],
    );
    rejected(
        "negative_oversubscription",
        "kind = \"crossbar\"",
        "kind = \"fat-tree\"\nnodes_per_leaf = 2\noversubscription = -1.5",
        &["`switch.oversubscription`", "-1.5"],
    );
    rejected(
        "unknown_field",
        "count = 1",
        "count = 1\nports = 2",
        &["`nic.ports`", "unknown field"],
    );
}

#[test]
fn a_thousand_node_network_is_linear() {
    let d = dir("big");
    let text = |n: u32| {
        CLUSTER
            .replace("nodes = 2", &format!("nodes = {n}"))
            .replace(
                "kind = \"crossbar\"",
                "kind = \"fat-tree\"\nnodes_per_leaf = 20\noversubscription = 2",
            )
    };
    let links = |n: u32| {
        let p = d.join(format!("c{n}.toml"));
        std::fs::write(&p, text(n)).unwrap();
        let c = cluster::load(&p).unwrap();
        ClusterNetwork::new(&c, SharingMode::Plain)
            .unwrap()
            .link_count()
    };
    // Per node: 2 split-duplex PCIe links = 4 fluid links, 1 NIC = 2; per leaf of 20: 2.
    // 1000 nodes: 6000 + 50 × 2 = 6100; 2000 nodes: 12200 — twice as many, not four times.
    assert_eq!(links(1000), 6100);
    assert_eq!(links(2000), 12200);
}

/// A task-graph workload on several nodes runs as StarPU-MPI's distributed graph: the number of
/// data messages equals what StarPU-MPI 1.4.12 itself sent (`STARPU_MPI_STATS`, summed over the
/// ranks) for its distributed Cholesky on 2 and 4 mirage nodes at every size measured
/// (docs/validation/starpu14-mpi-cholesky.csv).
#[test]
fn distributed_cholesky_sends_what_starpu_mpi_sends() {
    let mut checked = 0;
    for c in crate::common::starpu_mpi_cells() {
        if c.sched != "dmda" {
            continue;
        }
        let out = hetsim(&[
            "run",
            "scenarios/cholesky-mirage-mpi.toml",
            "--json",
            "--set",
            &format!("machine.nodes={}", c.nodes),
            "--set",
            &format!("workload.n={}", c.n),
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        assert_eq!(
            v["cluster"]["messages"].as_u64().unwrap().to_string(),
            c.mpi_sends,
            "{} nodes, n = {}",
            c.nodes,
            c.n
        );
        checked += 1;
    }
    assert_eq!(checked, 6, "2 and 4 nodes at three sizes");
}

#[test]
fn overheads_from_a_csv_file() {
    // Liu et al. 2012's format: comment lines, a header, microseconds. o_s = oscn, o_r = orn.
    let d = dir("csv");
    std::fs::write(
        d.join("o.csv"),
        "# test\nmessage_bytes,oscd_ord,oscn,orn\n1,9,3,4\n1048576,9,13,24\n",
    )
    .unwrap();
    let text = CLUSTER.replace(
        "rows = [{ bytes = 1, send = \"3 us\", recv = \"4 us\" }]",
        "csv = \"o.csv\"",
    );
    std::fs::write(d.join("cluster.toml"), &text).unwrap();
    let c = cluster::load(d.join("cluster.toml")).unwrap();
    // Halfway in size, halfway in value: (3 + 13) / 2 µs and (4 + 24) / 2 µs.
    let mid = (1.0 + 1048576.0) / 2.0;
    assert!((c.overheads().send_s(mid) - 8e-6).abs() < 1e-15);
    assert!((c.overheads().recv_s(mid) - 14e-6).abs() < 1e-15);
    // A NaN in the table: the CSV file, its line and column are named.
    std::fs::write(
        d.join("o.csv"),
        "message_bytes,oscn,orn\n1,3,4\n1048576,nan,24\n",
    )
    .unwrap();
    let e = cluster::load(d.join("cluster.toml")).unwrap_err();
    assert!(e.location.file.as_ref().unwrap().ends_with("o.csv"), "{e}");
    assert_eq!(e.location.line, Some(3), "{e}");
    assert_eq!(e.location.field.as_deref(), Some("oscn"), "{e}");
}

#[test]
fn check_summarises_a_cluster_file() {
    // Every expected figure is CLUSTER's own text: 2 nodes × 2 GPUs, one 5 GB/s NIC with 2 us
    // latency, a 0.5 us crossbar, one overhead row (3 us / 4 us at 1 byte).
    let sc = setup("check", CLUSTER, "kind = \"p2p\"\nbytes = 1\n");
    let file = sc.with_file_name("cluster.toml");
    let out = hetsim(&["check", file.to_str().unwrap()]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for want in [
        "cluster testcluster",
        "2 nodes x 2 GPUs used",
        "= 4 ranks",
        "NIC: 1 x 5.000 GB/s per direction, latency 2.000 us",
        "non-blocking crossbar, latency 500.000 ns",
        "MPI overheads: 1 rows, o_s 3.000 us / o_r 4.000 us",
    ] {
        assert!(text.contains(want), "missing {want:?} in\n{text}");
    }
    // The node machine's own summary follows.
    assert!(text.contains("\nmachine "), "{text}");
    // A bad cluster file is refused by check too, located, with status 2.
    std::fs::write(&file, CLUSTER.replace("count = 1", "count = 0")).unwrap();
    let out = hetsim(&["check", file.to_str().unwrap()]);
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("cluster.toml:line "));
}

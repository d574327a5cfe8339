//! What a run on one machine gives, a cluster run gives too: Paje (checked by `pj_dump`), Chrome
//! and Gantt traces, the text report and sweeps of StarPU-MPI's distributed Cholesky on mirage
//! nodes. The expected message counts and bytes are StarPU-MPI 1.4.12's own
//! (`STARPU_MPI_STATS`, docs/validation/starpu14-mpi-cholesky.csv); the task counts are a 10×10
//! tiled Cholesky's (10 potrf, 45 trsm, 45 syrk, 120 gemm).

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::common::hetsim;
use crate::traces::{check_chrome_file, check_paje_text, pj_dump, vite_reads};

const SCENARIO: &str = "scenarios/cholesky-mirage-mpi.toml";
/// One 960×960 single-precision tile: what every message carries.
const TILE_BYTES: u64 = 960 * 960 * 4;

fn tmp(name: &str) -> PathBuf {
    let d = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cluster-traces");
    std::fs::create_dir_all(&d).expect("create test directory");
    d.join(name)
}

/// StarPU-MPI's (messages, bytes) for its distributed Cholesky at n = 9600 on `nodes` mirage
/// nodes under `sched`.
fn starpu_mpi(nodes: u32, sched: &str) -> (u64, u64) {
    crate::common::starpu_mpi_rows()
        .into_iter()
        .find(|c| c.nodes == nodes.to_string() && c.sched == sched && c.n == "9600")
        .map(|c| (c.mpi_sends.parse().unwrap(), c.mpi_bytes.parse().unwrap()))
        .expect("a row for n = 9600")
}

fn run(args: &[&str]) -> String {
    let out = hetsim(args);
    assert!(
        out.status.success(),
        "hetsim {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The JSON report of the scenario on `nodes` nodes under dmda, with `extra` arguments.
fn report(nodes: u32, extra: &[&str]) -> Value {
    let set = format!("machine.nodes={nodes}");
    let mut args = vec!["run", SCENARIO, "--sched", "dmda", "--set", &set, "--json"];
    args.extend_from_slice(extra);
    serde_json::from_str(&run(&args)).unwrap()
}

/// Fields of a `pj_dump` line.
fn fields(line: &str) -> Vec<&str> {
    line.split(", ").map(str::trim).collect()
}

#[test]
fn paje_of_four_nodes_has_a_link_per_mpi_message() {
    let paje = tmp("four.paje");
    let v = report(4, &["--paje", paje.to_str().unwrap()]);
    let (messages, bytes) = starpu_mpi(4, "dmda");
    assert_eq!(messages, 106, "the brief's figure");
    assert_eq!(v["cluster"]["messages"], messages);
    check_paje_text(&paje);
    vite_reads(&paje);
    let Some(dump) = pj_dump(&paje) else { return };
    // Link, container, type, start, end, duration, value, start container, end container, key.
    let mpi: Vec<Vec<&str>> = dump
        .lines()
        .filter(|l| l.starts_with("Link, "))
        .map(fields)
        .filter(|f| f[2] == "MPI communication")
        .collect();
    assert_eq!(mpi.len() as u64, messages);
    let sum: u64 = mpi.iter().map(|f| f[6].parse::<u64>().unwrap()).sum();
    assert_eq!(sum, bytes);
    assert!(mpi.iter().all(|f| f[6].parse::<u64>() == Ok(TILE_BYTES)));
    // Every message ends after it starts, between two ranks' communication threads.
    for f in &mpi {
        let (start, end): (f64, f64) = (f[3].parse().unwrap(), f[4].parse().unwrap());
        assert!(end >= start, "{f:?}");
        assert!(f[7].starts_with("rank") && f[8].starts_with("rank") && f[7] != f[8]);
    }
    // Per node, what it sent and received (one rank per node: rank k on node k).
    for (k, node) in v["cluster"]["per_node"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let rank = format!("rank{k}");
        let sent = mpi.iter().filter(|f| f[7] == rank).count() as u64;
        let received = mpi.iter().filter(|f| f[8] == rank).count() as u64;
        assert_eq!(sent, node["messages_sent"].as_u64().unwrap(), "{rank}");
        assert_eq!(received, node["messages_received"].as_u64().unwrap());
    }
    // A program per node under the root, each with its 3 CUDA and 8 CPU workers.
    let containers: Vec<Vec<&str>> = dump
        .lines()
        .filter(|l| l.starts_with("Container, "))
        .map(fields)
        .collect();
    let programs: BTreeSet<&str> = containers
        .iter()
        .filter(|f| f[2] == "Program")
        .map(|f| f[6])
        .collect();
    assert_eq!(programs, BTreeSet::from(["n0", "n1", "n2", "n3"]));
    let workers = containers.iter().filter(|f| f[2] == "Worker").count();
    assert_eq!(workers, 4 * 11);
    // Every task ran once: executing states per codelet.
    let mut executing: BTreeMap<&str, usize> = BTreeMap::new();
    for l in dump.lines().filter(|l| l.starts_with("State, ")) {
        let f = fields(l);
        if f[2] == "Worker State" && f[7] != "Idle" && f[7] != "FetchingInput" {
            *executing.entry(f[7]).or_default() += 1;
        }
    }
    assert_eq!(
        executing,
        BTreeMap::from([
            ("chol_model_gemm", 120),
            ("chol_model_potrf", 10),
            ("chol_model_syrk", 45),
            ("chol_model_trsm", 45),
        ])
    );
    // Intra-node transfers are complete links inside a node's program.
    assert!(dump.lines().any(|l| {
        let f = fields(l);
        f[0] == "Link" && f[2].starts_with("Intra-node data ") && f[1].starts_with('n')
    }));
}

#[test]
fn paje_with_three_ranks_per_node_links_the_ranks() {
    let paje = tmp("ranks.paje");
    let v = report(
        2,
        &[
            "--set",
            "machine.ranks_per_node=3",
            "--set",
            "workload.grid=\"2x3\"",
            "--paje",
            paje.to_str().unwrap(),
        ],
    );
    check_paje_text(&paje);
    let Some(dump) = pj_dump(&paje) else { return };
    let mpi = dump
        .lines()
        .filter(|l| l.starts_with("Link, ") && fields(l)[2] == "MPI communication")
        .count();
    assert_eq!(Some(mpi as u64), v["cluster"]["messages"].as_u64());
    let threads: BTreeSet<&str> = dump
        .lines()
        .map(fields)
        .filter(|f| f[0] == "Container" && f[2] == "MPI Communication Thread")
        .map(|f| f[6])
        .collect();
    assert_eq!(threads.len(), 6, "{threads:?}");
}

#[test]
fn chrome_of_four_nodes_has_an_arrow_per_message() {
    let json = tmp("four.json");
    let v = report(4, &["--chrome", json.to_str().unwrap()]);
    let tasks = check_chrome_file(&json, 220);
    assert_eq!(tasks.values().sum::<usize>(), 220);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let events = doc["traceEvents"].as_array().unwrap();
    let processes: BTreeMap<u64, &str> = events
        .iter()
        .filter(|e| e["ph"] == "M" && e["name"] == "process_name")
        .map(|e| {
            (
                e["pid"].as_u64().unwrap(),
                e["args"]["name"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        processes.values().copied().collect::<Vec<_>>(),
        ["n0", "n1", "n2", "n3"]
    );
    let pid_of = |name: &str| *processes.iter().find(|p| *p.1 == name).unwrap().0;
    // Each message: a send in the sender's process starting an arrow that ends at its receive
    // in the receiver's.
    let begins = |name: &str| -> Vec<&Value> {
        events
            .iter()
            .filter(|e| e["ph"] == "b" && e["cat"] == "mpi")
            .filter(|e| e["name"].as_str().unwrap().starts_with(name))
            .collect()
    };
    let (sends, receives) = (begins("send"), begins("receive"));
    assert_eq!(sends.len() as u64, starpu_mpi(4, "dmda").0);
    assert_eq!(receives.len(), sends.len());
    let into: BTreeMap<u64, u64> = receives
        .iter()
        .map(|e| (e["bind_id"].as_u64().unwrap(), e["pid"].as_u64().unwrap()))
        .collect();
    for s in &sends {
        assert_eq!(s["flow_out"], true);
        let to = into[&s["bind_id"].as_u64().unwrap()];
        assert_ne!(
            to,
            s["pid"].as_u64().unwrap(),
            "a message between two nodes"
        );
        assert_eq!(s["args"]["bytes"], TILE_BYTES);
    }
    for (k, node) in v["cluster"]["per_node"]
        .as_array()
        .unwrap()
        .iter()
        .enumerate()
    {
        let pid = pid_of(&format!("n{k}"));
        let sent = sends.iter().filter(|e| e["pid"] == pid).count() as u64;
        assert_eq!(sent, node["messages_sent"].as_u64().unwrap());
        // Its memory and link counters are in its process.
        for counter in ["memory RAM", "memory CUDA0", "GB/s"] {
            assert!(
                events
                    .iter()
                    .any(|e| e["ph"] == "C" && e["pid"] == pid && e["name"] == counter),
                "n{k} has no {counter} counter"
            );
        }
    }
    // The NICs are their node's links.
    assert!(events.iter().any(|e| {
        e["ph"] == "C" && e["pid"] == pid_of("n2") && e["args"].get("NIC0_UP").is_some()
    }));
}

/// The rows labels, and the node names, of a Gantt chart.
fn gantt_labels(svg: &str) -> (Vec<String>, Vec<String>) {
    let texts = |marker: &str| -> Vec<String> {
        svg.split(marker)
            .skip(1)
            .map(|t| t[..t.find('<').unwrap()].to_string())
            .collect()
    };
    let rows = texts("text-anchor=\"end\">")
        .into_iter()
        .filter(|l| l != "time (s)")
        .collect();
    (rows, texts("font-weight=\"bold\">"))
}

#[test]
fn gantt_rows_are_grouped_by_node_and_messages_counted() {
    let svg_path = tmp("four.svg");
    let v = report(4, &["--gantt", svg_path.to_str().unwrap()]);
    let svg = std::fs::read_to_string(&svg_path).unwrap();
    assert!(svg.contains("· 106 MPI messages (372.656 MiB)"), "title");
    let (rows, nodes) = gantt_labels(&svg);
    assert_eq!(nodes, ["n0", "n1", "n2", "n3"]);
    // Each node's 11 workers by their own names, and a row of the messages it sends.
    assert_eq!(rows.iter().filter(|r| *r == "CUDA0").count(), 4);
    assert_eq!(rows.iter().filter(|r| *r == "CPU7").count(), 4);
    let senders = v["cluster"]["per_node"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|n| n["messages_sent"].as_u64().unwrap() > 0)
        .count();
    assert_eq!(rows.iter().filter(|r| *r == "MPI send").count(), senders);

    // 16 nodes, grouped and busy only: a name per node, a CPU row at most per node, and far
    // fewer rows than a row per worker.
    let chart = |name: &str, options: &[&str]| -> (Value, String) {
        let path = tmp(name);
        let mut extra = vec!["--gantt", path.to_str().unwrap()];
        extra.extend_from_slice(options);
        let v = report(16, &extra);
        (v, std::fs::read_to_string(&path).unwrap())
    };
    let height = |svg: &str| -> f64 {
        let h = svg.split("height=\"").nth(1).unwrap();
        h[..h.find('"').unwrap()].parse().unwrap()
    };
    let grouping = ["--gantt-group", "identical", "--gantt-rows", "busy"];
    let (v16, svg) = chart("sixteen.svg", &grouping);
    let (rows, nodes) = gantt_labels(&svg);
    assert_eq!(nodes.iter().collect::<BTreeSet<_>>().len(), 16);
    assert!(rows.iter().filter(|r| r.starts_with("CPU ×")).count() <= 16);
    assert!(
        !rows
            .iter()
            .any(|r| r.starts_with("CPU") && !r.starts_with("CPU ×"))
    );
    let messages = v16["cluster"]["messages"].as_u64().unwrap();
    assert!(svg.contains(&format!("· {messages} MPI messages")));
    let (_, every_row) = chart("sixteen-all.svg", &[]);
    assert!(gantt_labels(&every_row).0.len() >= 16 * 11);
    assert!(height(&svg) < height(&every_row) / 2.0);
    // Grouped without `busy`: each node's 8 CPU workers in one row.
    let svg_path = tmp("grouped.svg");
    report(
        4,
        &[
            "--gantt",
            svg_path.to_str().unwrap(),
            "--gantt-group",
            "identical",
        ],
    );
    let (rows, _) = gantt_labels(&std::fs::read_to_string(&svg_path).unwrap());
    assert_eq!(rows.iter().filter(|r| *r == "CPU ×8").count(), 4);
}

#[test]
fn text_report_has_a_table_per_node() {
    let text = run(&[
        "run",
        SCENARIO,
        "--sched",
        "dmda",
        "--set",
        "machine.nodes=4",
    ]);
    let (messages, _) = starpu_mpi(4, "dmda");
    assert!(
        text.contains(&format!(
            "cluster      4 nodes, 4 ranks: {messages} messages, 372.656 MiB"
        )),
        "{text}"
    );
    let lines: Vec<&str> = text.lines().collect();
    let head = lines
        .iter()
        .position(|l| l.starts_with("node "))
        .expect("node table");
    let table: Vec<Vec<&str>> = lines[head + 1..head + 5]
        .iter()
        .map(|l| l.split_whitespace().collect())
        .collect();
    // node, tasks, busy (value unit), GFlop/s, sent, bytes (value unit), received, bytes.
    let col = |i: usize| -> u64 { table.iter().map(|r| r[i].parse::<u64>().unwrap()).sum() };
    assert_eq!(col(1), 220);
    assert_eq!(col(5), messages);
    assert_eq!(col(8), messages);
    // What a node sends leaves by its NIC: the link table's NIC traffic, from the network's
    // own accounting, is the node table's bytes.
    for (k, row) in table.iter().enumerate() {
        assert_eq!(row[0], format!("n{k}"));
        let link = |name: &str| -> String {
            let l = lines
                .iter()
                .find(|l| l.starts_with(&format!("n{k}.{name} ")))
                .unwrap_or_else(|| panic!("no {name} of n{k} in the link table"));
            let f: Vec<&str> = l.split_whitespace().collect();
            format!("{} {}", f[1], f[2])
        };
        assert_eq!(link("NIC0_UP"), format!("{} {}", row[6], row[7]));
        assert_eq!(link("NIC0_DOWN"), format!("{} {}", row[9], row[10]));
    }
    // The nodes' PCI trees are hidden as on one machine.
    assert!(!text.contains(".PCI:"));
    assert!(text.contains("links of the PCI tree not shown"));
    // One machine: no cluster line, no node table.
    let one = run(&["run", SCENARIO, "--set", "machine.nodes=1"]);
    assert!(
        !one.lines()
            .any(|l| l.starts_with("cluster ") || l.starts_with("node "))
    );
}

#[test]
fn sweep_over_nodes_and_schedulers_counts_messages() {
    let (csv_path, svg) = (tmp("nodes.csv"), tmp("nodes.svg"));
    run(&[
        "sweep",
        SCENARIO,
        "--quiet",
        "--sched",
        "dmda,ws",
        "--vary",
        "machine.nodes=1,2,4",
        "-o",
        csv_path.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    let csv = std::fs::read_to_string(&csv_path).unwrap();
    let mut lines = csv.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let rows: Vec<Vec<&str>> = lines.map(|l| l.split(',').collect()).collect();
    assert_eq!(rows.len(), 6);
    for r in &rows {
        let nodes: u32 = r[col("machine.nodes")].parse().unwrap();
        let (messages, bytes) = starpu_mpi(nodes, r[col("sched")]);
        assert_eq!(r[col("messages")], messages.to_string(), "{r:?}");
        assert_eq!(r[col("message_bytes")], bytes.to_string(), "{r:?}");
        assert_eq!(r[col("tasks")], "220");
    }
    let plot = std::fs::read_to_string(&svg).unwrap();
    assert!(plot.starts_with("<svg") && plot.contains("dmda") && plot.contains("ws"));
}

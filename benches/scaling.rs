//! How hetsim's cost grows with what it simulates: one table per part, each row with the
//! growth exponent of the wall time from the previous row of its group, ln(t₂/t₁) / ln(x₂/x₁)
//! (1: the cost per unit of work stays the same).
//!
//! - **Runtime**: tiled Cholesky on mirage (StarPU's calibrated kernels, 960 × 960 single
//!   precision tiles), 20, 40, 80 and 120 tiles per side (1 540 to 295 240 tasks), one run per
//!   scheduler of each family (eager: one central queue; ws: work stealing; dmda, dmdar, dmdas:
//!   model-based), in two memory regimes: *eviction* (RAM raised to 512 GiB so that every matrix
//!   fits in it, the GPUs' 5.6 GB as calibrated, so the larger runs evict) and *roomy* (every
//!   memory at 512 GiB: no eviction). x is tasks + transfers, the work a run is made of; the
//!   table also gives tasks/s and the peak resident set per task.
//! - **HPL** on the HD-PEX cluster file (4 P100 per node, collapsed pivot searches), 16, 64 and
//!   256 nodes with N = 100 000 · √(nodes / 16) (so the work per GPU grows with N like a weak
//!   scaling run): the task graph's build (as `hetsim run` writes it) and the simulation apart,
//!   operations/s, bytes per operation. x is the operations.
//!
//! The network's growth is in `benches/network.rs` (flow events/s per topology and flow count).
//!
//! Each configuration runs in a child process so that its peak resident set (`VmHWM`) is its own.
//! `cargo bench -p hetsim-benches --bench scaling` runs everything (about 3 minutes on 2 cores);
//! `-- runtime` or `-- hpl` one part; `-- runtime 80` or `-- dmdas` the rows whose label
//! contains every word given. Without `--bench` (as `cargo test --benches` runs it) only the
//! smallest row of each part runs.

use std::process::Command;
use std::time::Instant;

use hetsim::runtime::{RunConfig, kernels_for, simulate};
use hetsim::workload::{PivotSearch, Precision, ProgramGenerator, cholesky};

mod common;
use common::{growth, hpl_case, vm_hwm_kb};

const MIRAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../calibration/mirage.toml");
const CHILD: &str = "HETSIM_SCALING_CHILD";
const SCHEDULERS: [&str; 5] = ["eager", "ws", "dmda", "dmdar", "dmdas"];
const TILES: [u64; 4] = [20, 40, 80, 120];
const HPL_NODES: [u64; 3] = [16, 64, 256];

/// mirage with RAM, and in the roomy regime every GPU too, at 512 GiB.
fn mirage(roomy: bool) -> hetsim::machine::Machine {
    let text = std::fs::read_to_string(MIRAGE).expect("mirage reads");
    let mut doc: toml::Table = toml::from_str(&text).expect("mirage parses");
    let nodes = doc
        .get_mut("memory_nodes")
        .and_then(toml::Value::as_array_mut)
        .expect("memory nodes");
    for node in nodes {
        let node = node.as_table_mut().expect("a memory node table");
        if roomy || node.get("kind").and_then(toml::Value::as_str) == Some("ram") {
            node.insert("capacity".into(), "512 GiB".into());
        }
    }
    let text = toml::to_string(&doc).expect("mirage serialises");
    hetsim::machine::from_str(&text, MIRAGE).expect("the raised mirage loads")
}

/// One Cholesky run; prints `tasks transfers wall_s peak_kb makespan_s`.
fn runtime_child(tiles: u64, sched: &str, roomy: bool) {
    let m = mirage(roomy);
    let g = cholesky(tiles * 960, 960, Precision::Single).expect("valid size");
    let k = kernels_for(&m).expect("mirage has models");
    let mut s = hetsim::sched::by_name(sched, 1).expect("known scheduler");
    let t = Instant::now();
    let r = simulate(&m, &g, k.as_ref(), s.as_mut(), &RunConfig::default()).expect("runs");
    let wall_s = t.elapsed().as_secs_f64();
    println!(
        "{} {} {wall_s} {} {}",
        r.tasks,
        r.transfers,
        vm_hwm_kb().unwrap_or(0),
        r.makespan_s
    );
}

/// HPL's N on `nodes` nodes: 100 000 on 16, growing as the square root of the GPUs.
fn hpl_n(nodes: u64) -> u64 {
    (100_000.0 * (nodes as f64 / 16.0).sqrt()).round() as u64
}

/// One HPL run; prints `ops build_s sim_s peak_kb makespan_s`.
fn hpl_child(nodes: u64) {
    let n = hpl_n(nodes);
    let (cluster, spec) = hpl_case(nodes, 4, n, 384, PivotSearch::Collapsed);
    let t0 = Instant::now();
    // As `hetsim run` does: the task graph without the program beside it.
    let graph = spec.generate_graph(&cluster).expect("task graph");
    let ops = graph.num_tasks();
    let build_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let report = hetsim::programs::simulate_program_graph_default(&graph, &cluster).expect("run");
    let sim_s = t1.elapsed().as_secs_f64();
    println!(
        "{ops} {build_s} {sim_s} {} {}",
        vm_hwm_kb().unwrap_or(0),
        report.makespan_s
    );
}

/// Run this binary as a child for `spec`; its one line of output, split.
fn child(spec: &str) -> Vec<f64> {
    let exe = std::env::current_exe().expect("own path");
    let out = Command::new(exe)
        .env(CHILD, spec)
        .output()
        .expect("child runs");
    assert!(
        out.status.success(),
        "child {spec} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout)
        .split_whitespace()
        .map(|x| x.parse().expect("a number"))
        .collect()
}

fn main() {
    if let Ok(spec) = std::env::var(CHILD) {
        let parts: Vec<&str> = spec.split(',').collect();
        match parts[..] {
            ["runtime", tiles, sched, regime] => {
                runtime_child(tiles.parse().expect("tiles"), sched, regime == "roomy")
            }
            ["hpl", nodes] => hpl_child(nodes.parse().expect("nodes")),
            _ => panic!("unknown child spec {spec}"),
        }
        return;
    }
    let args: Vec<String> = std::env::args().skip(1).collect();
    let full = args.iter().any(|a| a == "--bench");
    let words: Vec<&str> = args
        .iter()
        .filter(|a| !a.starts_with('-'))
        .map(String::as_str)
        .collect();
    let keep = |label: &str| words.iter().all(|w| label.split(' ').any(|l| l == *w));
    let tiles: &[u64] = if full { &TILES } else { &TILES[..1] };
    let hpl_nodes: &[u64] = if full { &HPL_NODES } else { &HPL_NODES[..1] };

    println!(
        "| regime | sched | tiles | tasks | transfers | wall (s) | tasks/s | \
         (tasks + transfers)/s | peak RSS (MB) | B per task | makespan (s) | growth |"
    );
    println!("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    for regime in ["eviction", "roomy"] {
        for sched in SCHEDULERS {
            let mut prev = None;
            for &t in tiles {
                if !keep(&format!("runtime {regime} {sched} {t}")) {
                    continue;
                }
                let v = child(&format!("runtime,{t},{sched},{regime}"));
                let (tasks, transfers, wall_s, peak_kb, makespan_s) =
                    (v[0], v[1], v[2], v[3], v[4]);
                let work = tasks + transfers;
                println!(
                    "| {regime} | {sched} | {t} | {tasks} | {transfers} | {wall_s:.3} | {:.0} | \
                     {:.0} | {:.1} | {:.0} | {makespan_s:.3} | {} |",
                    tasks / wall_s,
                    work / wall_s,
                    peak_kb / 1e3,
                    peak_kb * 1e3 / tasks,
                    growth(prev, work, wall_s),
                );
                prev = Some((work, wall_s));
            }
        }
    }

    println!();
    println!(
        "| HPL nodes × GPUs | N | operations | build (s) | simulation (s) | operations/s \
         (simulation) | peak RSS (MB) | B per operation | makespan (s) | growth |"
    );
    println!("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
    let mut prev = None;
    for &nodes in hpl_nodes {
        if !keep(&format!("hpl {nodes}")) {
            continue;
        }
        let v = child(&format!("hpl,{nodes}"));
        let (ops, build_s, sim_s, peak_kb, makespan_s) = (v[0], v[1], v[2], v[3], v[4]);
        let n = hpl_n(nodes);
        let total_s = build_s + sim_s;
        println!(
            "| {nodes} × 4 | {n} | {ops} | {build_s:.2} | {sim_s:.2} | {:.0} | {:.1} | {:.0} | \
             {makespan_s:.3} | {} |",
            ops / sim_s,
            peak_kb / 1e3,
            peak_kb * 1e3 / ops,
            growth(prev, ops, total_s),
        );
        prev = Some((ops, total_s));
    }
}

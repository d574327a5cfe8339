//! Whole-run benchmark: tiled Cholesky on mirage (StarPU's calibration, 960×960 single
//! precision tiles) with 20, 40, 80 and 120 tiles per side, under eager and prio.
//!
//! `cargo bench -p hetsim-benches --bench runtime` prints a markdown table: tasks, simulated makespan, wall time of
//! the simulation alone (best of 3; graph generation and machine loading excluded and reported
//! apart), tasks per second, and the peak resident set of a process that does only that run
//! (each configuration runs in a child process so its peak RSS is its own).
//! `cargo bench -p hetsim-benches --bench runtime -- 80` runs only the sizes given.

use std::process::Command;
use std::time::Instant;

use hetsim::runtime::{RunConfig, kernels_for, simulate};
use hetsim::workload::{Precision, cholesky};

const MIRAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../calibration/mirage.toml");
const CHILD: &str = "HETSIM_BENCH_CHILD";

mod common;

fn child(tiles: u64, sched: &str, repeats: u32) {
    let t0 = Instant::now();
    let m = hetsim::machine::load(MIRAGE).expect("mirage loads");
    let load_s = t0.elapsed().as_secs_f64();
    let t1 = Instant::now();
    let g = cholesky(tiles * 960, 960, Precision::Single).expect("valid size");
    let gen_s = t1.elapsed().as_secs_f64();
    let k = kernels_for(&m).expect("mirage has models");
    let mut best = f64::INFINITY;
    let mut report = None;
    for _ in 0..repeats {
        let mut s = hetsim::sched::by_name(sched, 1).expect("known scheduler");
        let t = Instant::now();
        let r = simulate(&m, &g, k.as_ref(), s.as_mut(), &RunConfig::default()).expect("runs");
        best = best.min(t.elapsed().as_secs_f64());
        report = Some(r);
    }
    let r = report.expect("at least one run");
    let rss_kb = common::vm_hwm_kb().unwrap_or(0);
    println!(
        "| {tiles} | {sched} | {} | {:.3} | {:.1} | {:.3} | {:.0} | {:.1} | {:.1} | {:.1} |",
        r.tasks,
        r.makespan_s,
        r.gflops,
        best,
        r.tasks as f64 / best,
        rss_kb as f64 / 1024.0,
        gen_s * 1e3,
        load_s * 1e3
    );
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Ok(spec) = std::env::var(CHILD) {
        let mut it = spec.split(',');
        let tiles = it.next().and_then(|s| s.parse().ok()).expect("tiles");
        let sched = it.next().expect("sched").to_string();
        let repeats = it.next().and_then(|s| s.parse().ok()).expect("repeats");
        child(tiles, &sched, repeats);
        return;
    }
    // `cargo test --benches` runs this without `--bench`: a smoke run of the smallest size.
    let full = args.iter().any(|a| a == "--bench");
    let wanted: Vec<u64> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let sizes: Vec<u64> = if !wanted.is_empty() {
        wanted
    } else if full {
        vec![20, 40, 80, 120]
    } else {
        vec![20]
    };
    let repeats = if full { 3 } else { 1 };
    println!(
        "| tiles | sched | tasks | makespan (s) | GFlop/s | wall (s) | tasks/s | peak RSS (MiB) | graph gen (ms) | machine load (ms) |"
    );
    println!("|---:|---|---:|---:|---:|---:|---:|---:|---:|---:|");
    let exe = std::env::current_exe().expect("own path");
    for &tiles in &sizes {
        for sched in ["eager", "prio"] {
            let status = Command::new(&exe)
                .env(CHILD, format!("{tiles},{sched},{repeats}"))
                .status()
                .expect("child runs");
            assert!(status.success(), "child for {tiles} tiles failed");
        }
    }
}

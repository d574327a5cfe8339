//! Cost of writing traces: a tiled Cholesky on mirage (StarPU's calibration, 960×960 single
//! precision tiles) run without observers, with the Paje and Chrome writers (to files), and
//! with the Gantt writer as well.
//!
//! `cargo bench -p hetsim-benches --bench traces` prints a markdown table for 80 tiles per side (88 560 tasks):
//! wall time of the run (best of 3; graph generation and machine loading excluded), its ratio
//! to the run without traces, the peak resident set of a process that does only that
//! configuration (each runs in a child process), and the size of the files written.
//! `cargo bench -p hetsim-benches --bench traces -- 40` runs other sizes; `cargo test --benches` runs a smoke
//! test at 20 tiles.

use std::path::PathBuf;
use std::process::Command;
use std::time::Instant;

use hetsim::runtime::{Observer, RunConfig, kernels_for, simulate, simulate_observed};
use hetsim::trace::{ChromeWriter, GanttWriter, PajeWriter};
use hetsim::workload::{Precision, cholesky};

const MIRAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/../calibration/mirage.toml");
const CHILD: &str = "HETSIM_TRACE_BENCH_CHILD";
const MODES: [&str; 3] = ["none", "paje+chrome", "paje+chrome+gantt"];

mod common;

fn out_dir() -> PathBuf {
    let d = std::env::temp_dir().join(format!("hetsim-trace-bench-{}", std::process::id()));
    std::fs::create_dir_all(&d).expect("temp dir");
    d
}

fn peak_rss_mib() -> f64 {
    common::vm_hwm_kb().unwrap_or(0) as f64 / 1024.0
}

/// One configuration, in this process: prints `mode wall_s rss_mib bytes`.
fn child(tiles: u64, mode: &str, repeats: u32) {
    let m = hetsim::machine::load(MIRAGE).expect("mirage loads");
    let g = cholesky(tiles * 960, 960, Precision::Single).expect("valid size");
    let k = kernels_for(&m).expect("mirage has models");
    let dir = out_dir();
    let (paje, chrome, gantt) = (dir.join("t.paje"), dir.join("t.json"), dir.join("t.svg"));
    let mut best = f64::INFINITY;
    let mut tasks = 0;
    for _ in 0..repeats {
        let mut s = hetsim::sched::by_name("eager", 1).expect("known scheduler");
        let config = RunConfig::default();
        let t = Instant::now();
        let r = match mode {
            "none" => simulate(&m, &g, k.as_ref(), s.as_mut(), &config),
            _ => {
                let mut p = PajeWriter::create(&paje).expect("paje file");
                let mut c = ChromeWriter::create(&chrome).expect("chrome file");
                let r = if mode == "paje+chrome" {
                    simulate_observed(
                        &m,
                        &g,
                        k.as_ref(),
                        s.as_mut(),
                        &config,
                        &mut [&mut p as &mut dyn Observer, &mut c],
                    )
                } else {
                    let mut gw = GanttWriter::create(&gantt).expect("svg file");
                    let r = simulate_observed(
                        &m,
                        &g,
                        k.as_ref(),
                        s.as_mut(),
                        &config,
                        &mut [&mut p as &mut dyn Observer, &mut c, &mut gw],
                    );
                    gw.finish().expect("svg written");
                    r
                };
                p.finish().expect("paje written");
                c.finish().expect("chrome written");
                r
            }
        }
        .expect("runs");
        best = best.min(t.elapsed().as_secs_f64());
        tasks = r.tasks;
    }
    let bytes: u64 = [&paje, &chrome, &gantt]
        .iter()
        .filter_map(|p| std::fs::metadata(p).ok())
        .map(|m| m.len())
        .sum();
    let _ = std::fs::remove_dir_all(&dir);
    println!("{mode} {tasks} {best} {} {bytes}", peak_rss_mib());
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Ok(spec) = std::env::var(CHILD) {
        let mut it = spec.split(',');
        let tiles = it.next().and_then(|s| s.parse().ok()).expect("tiles");
        let mode = it.next().expect("mode").to_string();
        let repeats = it.next().and_then(|s| s.parse().ok()).expect("repeats");
        child(tiles, &mode, repeats);
        return;
    }
    let full = args.iter().any(|a| a == "--bench");
    let wanted: Vec<u64> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let sizes = if !wanted.is_empty() {
        wanted
    } else if full {
        vec![80]
    } else {
        vec![20]
    };
    let repeats = if full { 3 } else { 1 };
    println!("| tiles | tasks | observers | wall (s) | × untraced | peak RSS (MiB) | files (MB) |");
    println!("|---:|---:|---|---:|---:|---:|---:|");
    let exe = std::env::current_exe().expect("own path");
    for &tiles in &sizes {
        let mut base = None;
        for mode in MODES {
            let out = Command::new(&exe)
                .env(CHILD, format!("{tiles},{mode},{repeats}"))
                .output()
                .expect("child runs");
            assert!(
                out.status.success(),
                "child {mode} for {tiles} tiles failed"
            );
            let line = String::from_utf8(out.stdout).expect("text");
            let f: Vec<&str> = line.split_whitespace().collect();
            let wall: f64 = f[2].parse().expect("wall");
            let rss: f64 = f[3].parse().expect("rss");
            let bytes: f64 = f[4].parse().expect("bytes");
            let base_wall = *base.get_or_insert(wall);
            println!(
                "| {tiles} | {} | {mode} | {wall:.3} | {:.2} | {rss:.1} | {:.1} |",
                f[1],
                wall / base_wall,
                bytes / 1e6
            );
        }
    }
}

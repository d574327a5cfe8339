//! The plots and traces of `hetsim run` and `hetsim sweep` through the binary: Chrome flow
//! arrows with both ends, the Gantt chart's row options on a 112-core machine, and a sweep
//! plot with two varied keys.

use crate::common::hetsim;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

fn tmp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("new_plots");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn ok(args: &[&str]) {
    let o = hetsim(args);
    assert!(
        o.status.success(),
        "hetsim {args:?}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
}

#[test]
fn every_flow_arrow_of_cholesky_mirage_has_one_start_and_one_end() {
    let path = tmp("mirage.json");
    ok(&[
        "run",
        "scenarios/cholesky-mirage.toml",
        "--quiet",
        "--chrome",
        path.to_str().unwrap(),
    ]);
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    let mut ends: BTreeMap<u64, (u32, u32)> = BTreeMap::new();
    let mut transfers = 0;
    for e in doc["traceEvents"].as_array().unwrap() {
        if e["ph"] == "b" {
            transfers += 1;
        }
        if let Some(id) = e.get("bind_id").and_then(Value::as_u64) {
            let c = ends.entry(id).or_default();
            if e.get("flow_out") == Some(&Value::Bool(true)) {
                c.0 += 1;
            }
            if e.get("flow_in") == Some(&Value::Bool(true)) {
                c.1 += 1;
            }
        }
    }
    assert!(!ends.is_empty());
    for (id, n) in &ends {
        assert_eq!(*n, (1, 1), "flow {id}");
    }
    // Not every transfer starts one (write-backs, inputs that arrived earlier).
    assert!(ends.len() < transfers);
}

/// Row labels of a Gantt SVG (right-aligned texts of the label column).
fn labels(svg: &str) -> Vec<String> {
    svg.split("text-anchor=\"end\">")
        .skip(1)
        .map(|t| t[..t.find('<').unwrap()].to_string())
        .collect()
}

#[test]
fn gantt_of_112_cores_groups_the_cpu_workers() {
    // h100-sxm-8x: 112 cores and 8 GPUs, a core driving each GPU: 104 CPU workers on RAM.
    let (all, grouped) = (tmp("h100-all.svg"), tmp("h100-grouped.svg"));
    let sc = "scenarios/cholesky-h100-sxm-8x.toml";
    let small = "workload.n=9600";
    ok(&[
        "run",
        sc,
        "-q",
        "--set",
        small,
        "--gantt",
        all.to_str().unwrap(),
    ]);
    ok(&[
        "run",
        sc,
        "-q",
        "--set",
        small,
        "--gantt",
        grouped.to_str().unwrap(),
        "--gantt-group",
        "identical",
        "--gantt-rows",
        "busy",
    ]);
    let all = labels(&std::fs::read_to_string(all).unwrap());
    assert_eq!(all.iter().filter(|l| l.starts_with("CPU")).count(), 104);
    let grouped = labels(&std::fs::read_to_string(grouped).unwrap());
    let cpu: Vec<&String> = grouped.iter().filter(|l| l.starts_with("CPU")).collect();
    assert_eq!(cpu, ["CPU ×104"]);
    // The row options need a chart to apply to.
    let o = hetsim(&["run", sc, "-q", "--gantt-rows", "busy"]);
    assert_eq!(o.status.code(), Some(2));
}

#[test]
fn sweep_plot_with_two_varied_keys_has_a_line_per_value() {
    let (csv, svg) = (tmp("two.csv"), tmp("two.svg"));
    ok(&[
        "sweep",
        "tests/data/run/cholesky-tiny.toml",
        "--sched",
        "eager,dmda",
        "--vary",
        "workload.n=960,1920",
        "--vary",
        "run.prefetch=true,false",
        "--seeds",
        "1..2",
        "-q",
        "-o",
        csv.to_str().unwrap(),
        "--plot",
        svg.to_str().unwrap(),
    ]);
    let text = std::fs::read_to_string(&svg).unwrap();
    for entry in ["eager", "dmda", "run.prefetch=true", "run.prefetch=false"] {
        assert!(
            text.contains(&format!(">\n{entry}\n</text>")) || text.contains(&format!(">{entry}<")),
            "no legend entry {entry}"
        );
    }
    assert!(text.contains("mean of 2 seeds"));
}

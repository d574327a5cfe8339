//! Traces people open: Paje checked by `pj_dump` (pajeng) with the number of Executing states
//! per codelet against the task graph, Chrome/Perfetto JSON checked for structure (valid JSON,
//! required fields, every begin closed, flows paired, pids and tids named) and task counts,
//! the Gantt SVG, determinism (byte-identical files), and the makespan bounds on hand-computed
//! graphs.
//!
//! `pj_dump` is looked up on the PATH. Without it the Paje checks that need it are skipped
//! with a message, unless `CI` is set, in which case its absence fails the test.

use crate::common::assert_close;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

use hetsim::machine::{self, Machine};
use hetsim::runtime::{
    FlopRate, KernelTimes, Observer, RunConfig, RunReport, Worker, WorkerId, WorkerKind,
    kernels_for, simulate, simulate_observed,
};
use hetsim::sched;
use hetsim::trace::{self, ChromeWriter, GanttWriter, LinkResolution, PajeWriter};
use hetsim::workload::{
    self, Access, AccessMode, Handle, Precision, TaskGraph, TaskGraphBuilder, TaskId,
};
use serde_json::Value;

const NB: u64 = 960;
const TILE: u64 = NB * NB * 4;

/// RAM and `ngpu` GPUs behind their own PCIe links and one shared host link (as in the
/// runtime tests), plus direct GPU↔GPU routes, with 8 CPU cores.
fn small_machine(ngpu: usize, gpu_capacity_bytes: u64) -> Machine {
    let mut t = String::from(
        "[machine]\nname = \"small\"\n\
         [[memory_nodes]]\nname = \"RAM\"\nkind = \"ram\"\ncapacity = \"64 GiB\"\n",
    );
    for g in 0..ngpu {
        t += &format!(
            "[[memory_nodes]]\nname = \"GPU{g}\"\nkind = \"gpu\"\ncapacity = \"{gpu_capacity_bytes} B\"\n"
        );
    }
    t += "[[cpus]]\ncount = 8\nmodel = \"cpu\"\nmemory = \"RAM\"\n";
    for g in 0..ngpu {
        t += &format!("[[gpus]]\nname = \"GPU{g}\"\nmodel = \"gpu\"\nmemory = \"GPU{g}\"\n");
    }
    t += "[[links]]\nname = \"Host\"\nbandwidth = \"6e9 B/s\"\nlatency = 0\n";
    for g in 0..ngpu {
        t += &format!(
            "[[links]]\nname = \"RAM-GPU{g}\"\nbandwidth = \"6e9 B/s\"\nlatency = \"1e-5 s\"\n\
             [[links]]\nname = \"GPU{g}-RAM\"\nbandwidth = \"6e9 B/s\"\nlatency = \"1e-5 s\"\n\
             [[routes]]\nsrc = \"RAM\"\ndst = \"GPU{g}\"\nlinks = [\"RAM-GPU{g}\", \"Host\"]\n\
             [[routes]]\nsrc = \"GPU{g}\"\ndst = \"RAM\"\nlinks = [\"GPU{g}-RAM\", \"Host\"]\n"
        );
    }
    if ngpu >= 2 {
        t += "[[links]]\nname = \"Peer\"\nbandwidth = \"5e9 B/s\"\nlatency = \"1e-5 s\"\n\
              [[routes]]\nsrc = \"GPU0\"\ndst = \"GPU1\"\nlinks = [\"Peer\"]\n\
              [[routes]]\nsrc = \"GPU1\"\ndst = \"GPU0\"\nlinks = [\"Peer\"]\n";
    }
    machine::from_str(&t, "small-machine.toml").expect("test machine is valid")
}

const KERNELS: FlopRate = FlopRate {
    cpu_flops_per_sec: 1e10,
    gpu_flops_per_sec: 1e12,
};

fn mirage() -> Machine {
    machine::load(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/calibration/mirage.toml"
    ))
    .expect("mirage loads")
}

/// A fresh directory under the system's temporary one, removed when dropped.
fn tmp_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("hetsim-traces")
        .tempdir()
        .unwrap()
}

/// One run with both trace writers (and the Gantt), to files; returns the report and paths.
struct Traced {
    report: RunReport,
    paje: PathBuf,
    chrome: PathBuf,
    gantt: PathBuf,
    /// Holds the three files until the test is done with them.
    _dir: tempfile::TempDir,
}

#[allow(clippy::too_many_arguments)]
fn traced(
    tag: &str,
    m: &Machine,
    g: &TaskGraph,
    kernels: &dyn KernelTimes,
    sched_name: &str,
    config: &RunConfig,
    links: LinkResolution,
) -> Traced {
    let dir = tmp_dir();
    let (paje, chrome, gantt) = (
        dir.path().join(format!("{tag}.paje")),
        dir.path().join(format!("{tag}.json")),
        dir.path().join(format!("{tag}.svg")),
    );
    let mut p = PajeWriter::create(&paje)
        .unwrap()
        .with_link_resolution(links);
    let mut c = ChromeWriter::create(&chrome)
        .unwrap()
        .with_link_resolution(links);
    let mut gw = GanttWriter::create(&gantt).unwrap();
    let mut s = sched::by_name(sched_name, config.seed).unwrap();
    let report = simulate_observed(
        m,
        g,
        kernels,
        s.as_mut(),
        config,
        &mut [&mut p as &mut dyn Observer, &mut c, &mut gw],
    )
    .unwrap();
    p.finish().unwrap();
    c.finish().unwrap();
    gw.finish().unwrap();
    Traced {
        report,
        paje,
        chrome,
        gantt,
        _dir: dir,
    }
}

/// Tasks per codelet name, from the graph.
fn expected_counts(g: &TaskGraph) -> BTreeMap<String, usize> {
    g.codelet_names()
        .iter()
        .cloned()
        .zip(g.tasks_per_codelet())
        .filter(|&(_, n)| n > 0)
        .collect()
}

// --- Paje -------------------------------------------------------------------------------------

/// `pj_dump`'s output for `path`, or `None` if `pj_dump` is not installed (a failure if `CI`
/// is set). Panics if it rejects the file.
pub(crate) fn pj_dump(path: &Path) -> Option<String> {
    match Command::new("pj_dump").arg(path).output() {
        Ok(out) => {
            assert!(
                out.status.success(),
                "pj_dump rejected {}: {}\n{}",
                path.display(),
                out.status,
                String::from_utf8_lossy(&out.stderr)
            );
            Some(String::from_utf8(out.stdout).expect("pj_dump prints text"))
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            assert!(
                std::env::var_os("CI").is_none(),
                "pj_dump (Debian package pajeng) is required when CI is set"
            );
            eprintln!(
                "SKIPPED: pj_dump not found (install pajeng); {} not validated",
                path.display()
            );
            None
        }
        Err(e) => panic!("running pj_dump: {e}"),
    }
}

/// Executing states per codelet in `pj_dump` output: `State` lines of type `Worker State`
/// whose value is a codelet (not Idle / FetchingInput).
fn executing_per_codelet(dump: &str) -> BTreeMap<String, usize> {
    let mut counts = BTreeMap::new();
    for line in dump.lines() {
        let f: Vec<&str> = line.split(", ").collect();
        if f.first() == Some(&"State") && f.get(2) == Some(&"Worker State") {
            let value = f[7].trim();
            if value != "Idle" && value != "FetchingInput" {
                *counts.entry(value.to_string()).or_insert(0) += 1;
            }
        }
    }
    counts
}

/// Our own checks of a Paje file: no comment lines, every event line's date (field 2 of the
/// timestamped events) never decreases, definitions before events.
pub(crate) fn check_paje_text(path: &Path) {
    let text = std::fs::read_to_string(path).unwrap();
    let timestamped: BTreeSet<&str> = ["7", "8", "9", "10", "13", "18", "19", "20", "24"]
        .into_iter()
        .collect();
    let mut last = 0.0f64;
    let mut events_started = false;
    for (i, line) in text.lines().enumerate() {
        assert!(!line.starts_with('#'), "line {}: a comment line", i + 1);
        if line.starts_with('%') {
            assert!(!events_started, "line {}: a definition after events", i + 1);
            continue;
        }
        let mut f = line.split(' ');
        let id = f.next().unwrap();
        if timestamped.contains(id) {
            events_started = true;
            let t: f64 = f.next().unwrap().parse().unwrap();
            assert!(t >= last, "line {}: date {t} after {last}", i + 1);
            last = t;
        }
    }
}

fn check_paje(path: &Path, g: &TaskGraph) {
    check_paje_text(path);
    if let Some(dump) = pj_dump(path) {
        assert_eq!(
            executing_per_codelet(&dump),
            expected_counts(g),
            "Executing states per codelet in pj_dump's output of {}",
            path.display()
        );
        // Every transfer is a complete link.
        assert!(dump.lines().any(|l| l.starts_with("Link, ")));
    }
}

// --- Chrome -----------------------------------------------------------------------------------

/// Structural checks of a Chrome trace; returns the number of task events per codelet.
fn check_chrome(path: &Path, g: &TaskGraph) -> BTreeMap<String, usize> {
    check_chrome_file(path, g.num_tasks())
}

/// Structural checks of a Chrome trace of a run of `tasks` tasks (valid JSON, required
/// fields, every begin closed, every arrow with both ends, pids and tids named, slices of a
/// thread apart); returns the number of task events per codelet.
pub(crate) fn check_chrome_file(path: &Path, tasks_run: usize) -> BTreeMap<String, usize> {
    let text = std::fs::read_to_string(path).unwrap();
    let doc: Value = serde_json::from_str(&text).expect("valid JSON");
    assert!(doc["otherData"]["seed"].is_u64());
    let events = doc["traceEvents"].as_array().expect("traceEvents array");
    let mut process_names = BTreeSet::new();
    let mut thread_names = BTreeSet::new();
    let mut used_pids = BTreeSet::new();
    let mut used_threads = BTreeSet::new();
    let mut tid_pid: BTreeMap<u64, u64> = BTreeMap::new();
    let mut open_b: BTreeMap<(String, u64), f64> = BTreeMap::new();
    let mut open_big_b: BTreeMap<(u64, u64), i64> = BTreeMap::new();
    let mut slices: BTreeMap<(u64, u64), Vec<(f64, f64)>> = BTreeMap::new();
    let mut flow_out: BTreeMap<u64, f64> = BTreeMap::new();
    let mut flow_in: Vec<(u64, f64)> = Vec::new();
    let mut tasks: BTreeMap<String, usize> = BTreeMap::new();
    let mut job_ids = BTreeSet::new();
    for e in events {
        let o = e.as_object().expect("events are objects");
        for (k, v) in o {
            assert!(!v.is_array(), "top-level array field {k} in {e}");
        }
        let ph = o["ph"].as_str().expect("ph");
        let pid = o["pid"].as_u64().expect("pid");
        assert!(pid >= 1, "pid 0 in {e}");
        used_pids.insert(pid);
        if let Some(tid) = o.get("tid") {
            let tid = tid.as_u64().expect("numeric tid");
            assert!(tid >= 1);
            let prev = tid_pid.insert(tid, pid);
            assert!(prev.is_none_or(|p| p == pid), "tid {tid} in two processes");
        }
        if ph == "M" {
            match o["name"].as_str().unwrap() {
                "process_name" => {
                    assert!(o["args"]["name"].is_string());
                    process_names.insert(pid);
                }
                "thread_name" => {
                    assert!(o["args"]["name"].is_string());
                    thread_names.insert((pid, o["tid"].as_u64().unwrap()));
                }
                _ => {}
            }
            continue;
        }
        let ts = o["ts"].as_f64().expect("ts");
        assert!(ts >= 0.0);
        assert!(o["name"].is_string(), "name in {e}");
        match ph {
            "X" => {
                let tid = o["tid"].as_u64().expect("X has a tid");
                let dur = o["dur"].as_f64().expect("dur");
                assert!(dur >= 0.0);
                used_threads.insert((pid, tid));
                slices.entry((pid, tid)).or_default().push((ts, ts + dur));
                if o["cat"] == "task" {
                    let args = &o["args"];
                    for k in ["job_id", "codelet", "size", "flops", "priority"] {
                        assert!(!args[k].is_null(), "task args lack {k}: {e}");
                    }
                    assert_eq!(args["codelet"], o["name"]);
                    assert!(job_ids.insert(args["job_id"].as_u64().unwrap()));
                    *tasks
                        .entry(o["name"].as_str().unwrap().to_string())
                        .or_insert(0) += 1;
                }
                if o.get("flow_in") == Some(&Value::Bool(true)) {
                    flow_in.push((o["bind_id"].as_u64().unwrap(), ts));
                }
            }
            "B" | "E" => {
                let tid = o["tid"].as_u64().expect("B/E have a tid");
                *open_big_b.entry((pid, tid)).or_insert(0) += if ph == "B" { 1 } else { -1 };
            }
            "b" => {
                let key = (
                    o["cat"].as_str().unwrap().to_string(),
                    o["id"].as_u64().expect("numeric async id"),
                );
                assert!(open_b.insert(key, ts).is_none(), "async id reused: {e}");
                if o.get("flow_out") == Some(&Value::Bool(true)) {
                    flow_out.insert(o["bind_id"].as_u64().unwrap(), ts);
                }
                if o.get("flow_in") == Some(&Value::Bool(true)) {
                    flow_in.push((o["bind_id"].as_u64().unwrap(), ts));
                }
            }
            "e" => {
                let key = (
                    o["cat"].as_str().unwrap().to_string(),
                    o["id"].as_u64().unwrap(),
                );
                let start = open_b.remove(&key).expect("'e' without 'b'");
                assert!(ts >= start);
            }
            "C" => {
                let args = o["args"].as_object().expect("counter args");
                assert!(!args.is_empty());
                assert!(args.values().all(Value::is_number), "{e}");
            }
            "i" => assert!(["g", "p", "t"].contains(&o["s"].as_str().unwrap())),
            other => panic!("unexpected phase {other}"),
        }
    }
    assert!(open_b.is_empty(), "async events never closed: {open_b:?}");
    assert!(
        open_big_b.values().all(|&n| n == 0),
        "every 'B' closed by an 'E'"
    );
    for (id, ts) in &flow_in {
        let out = flow_out.get(id).expect("flow_in without its flow_out");
        assert!(out <= ts, "flow {id} ends before it starts");
    }
    let ends: BTreeSet<u64> = flow_in.iter().map(|f| f.0).collect();
    assert_eq!(ends.len(), flow_in.len(), "an arrow with two ends");
    for id in flow_out.keys() {
        assert!(ends.contains(id), "flow_out {id} without its flow_in");
    }
    for p in &used_pids {
        assert!(process_names.contains(p), "pid {p} has no process_name");
    }
    for t in &used_threads {
        assert!(thread_names.contains(t), "thread {t:?} has no thread_name");
    }
    for tid in tid_pid.keys() {
        assert!(!used_pids.contains(tid), "tid {tid} equals a pid");
    }
    // Slices on one thread never overlap (they nest trivially).
    for (thread, mut s) in slices {
        s.sort_by(|a, b| a.0.total_cmp(&b.0));
        for w in s.windows(2) {
            assert!(
                w[1].0 >= w[0].1 - 1e-3,
                "overlapping slices on {thread:?}: {:?} {:?}",
                w[0],
                w[1]
            );
        }
    }
    assert_eq!(job_ids.len(), tasks_run);
    assert!(
        !flow_in.is_empty(),
        "some task gets an arrow from its input"
    );
    tasks
}

// --- Tests ------------------------------------------------------------------------------------

#[test]
fn paje_and_chrome_of_small_machine_runs() {
    let m = small_machine(2, 1 << 30);
    for (kind, tiles) in [
        (workload::TiledAlgorithm::Cholesky, 5),
        (workload::TiledAlgorithm::Lu, 4),
        (workload::TiledAlgorithm::Gemm, 3),
    ] {
        let g = kind.generate(tiles * NB, NB, Precision::Single).unwrap();
        for sched_name in ["eager", "dmda"] {
            let config = RunConfig {
                ncpu: Some(3),
                ..RunConfig::default()
            };
            let tag = format!("small-{kind:?}-{sched_name}");
            let t = traced(
                &tag,
                &m,
                &g,
                &KERNELS,
                sched_name,
                &config,
                LinkResolution::default(),
            );
            assert_eq!(t.report.tasks as usize, g.num_tasks());
            check_paje(&t.paje, &g);
            assert_eq!(check_chrome(&t.chrome, &g), expected_counts(&g), "{tag}");
        }
    }
}

#[test]
fn paje_and_chrome_under_memory_pressure() {
    // Six tiles per GPU: evictions, write-backs (WB links), eviction events.
    let m = small_machine(2, 6 * TILE);
    let g = workload::cholesky(6 * NB, NB, Precision::Single).unwrap();
    let config = RunConfig {
        ncpu: Some(2),
        ..RunConfig::default()
    };
    let t = traced(
        "tight",
        &m,
        &g,
        &KERNELS,
        "eager",
        &config,
        LinkResolution::Exact,
    );
    assert!(t.report.evictions > 0);
    check_paje(&t.paje, &g);
    let text = std::fs::read_to_string(&t.paje).unwrap();
    assert!(
        text.lines()
            .any(|l| l.starts_with("24 ") && l.contains(" WB p "))
    );
    assert!(
        text.lines()
            .any(|l| l.starts_with("9 ") && l.contains(" evict "))
    );
    check_chrome(&t.chrome, &g);
}

#[test]
fn paje_and_chrome_of_mirage_with_its_calibrated_models() {
    let m = mirage();
    let k = kernels_for(&m).unwrap();
    for (kind, tiles) in [
        (workload::TiledAlgorithm::Cholesky, 8),
        (workload::TiledAlgorithm::Lu, 5),
    ] {
        let g = kind.generate(tiles * NB, NB, Precision::Single).unwrap();
        for links in [LinkResolution::Exact, LinkResolution::default()] {
            let tag = format!("mirage-{kind:?}-{links:?}");
            let t = traced(
                &tag,
                &m,
                &g,
                k.as_ref(),
                "dmda",
                &RunConfig::default(),
                links,
            );
            check_paje(&t.paje, &g);
            assert_eq!(check_chrome(&t.chrome, &g), expected_counts(&g), "{tag}");
            // Containers and names as StarPU's tools expect them.
            let text = std::fs::read_to_string(&t.paje).unwrap();
            for needle in [
                "7 0.000000 mn0 Mn p MEMNODE0",
                "7 0.000000 mm1 Mm mn1 MEMMANAGER1",
                "w0 W t0 \"CUDA0\"",
                "6 I WS Idle",
                "6 Fi WS FetchingInput",
                "5 F P Mm Mm",
                "5 PF P Mm Mm",
            ] {
                assert!(text.contains(needle), "{tag}: no `{needle}`");
            }
            if let Some(dump) = pj_dump(&t.paje) {
                // Link bandwidth and GPU memory variables made it through.
                assert!(dump.lines().any(|l| l.contains(", Bandwidth (MB/s), ")));
                assert!(
                    dump.lines()
                        .any(|l| l.starts_with("Variable, MEMMANAGER1, Used (MB)"))
                );
            }
        }
    }
}

#[test]
fn same_run_gives_byte_identical_traces() {
    let m = mirage();
    let k = kernels_for(&m).unwrap();
    let g = workload::cholesky(6 * NB, NB, Precision::Single).unwrap();
    let a = traced(
        "det-a",
        &m,
        &g,
        k.as_ref(),
        "dmda",
        &RunConfig::default(),
        LinkResolution::default(),
    );
    let b = traced(
        "det-b",
        &m,
        &g,
        k.as_ref(),
        "dmda",
        &RunConfig::default(),
        LinkResolution::default(),
    );
    assert_eq!(a.report, b.report);
    for (x, y) in [
        (&a.paje, &b.paje),
        (&a.chrome, &b.chrome),
        (&a.gantt, &b.gantt),
    ] {
        assert!(
            std::fs::read(x).unwrap() == std::fs::read(y).unwrap(),
            "{} and {} differ",
            x.display(),
            y.display()
        );
    }
}

#[test]
fn traces_do_not_change_the_run() {
    let m = mirage();
    let k = kernels_for(&m).unwrap();
    let g = workload::cholesky(8 * NB, NB, Precision::Single).unwrap();
    let mut s = sched::by_name("dmda", 1).unwrap();
    let plain = simulate(&m, &g, k.as_ref(), s.as_mut(), &RunConfig::default()).unwrap();
    let t = traced(
        "same",
        &m,
        &g,
        k.as_ref(),
        "dmda",
        &RunConfig::default(),
        LinkResolution::Exact,
    );
    assert_eq!(plain, t.report);
}

#[test]
fn unfinished_writers_still_leave_valid_files() {
    // A Chrome writer dropped before any run: a complete, empty trace.
    let dir = tmp_dir();
    let path = dir.path().join("empty.json");
    drop(ChromeWriter::create(&path).unwrap());
    let doc: Value = serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    assert_eq!(doc["traceEvents"].as_array().unwrap().len(), 0);
    // Writers handed back their output.
    let out = ChromeWriter::new(Vec::new()).finish().unwrap();
    assert!(serde_json::from_slice::<Value>(&out).is_ok());
    assert!(PajeWriter::new(Vec::new()).finish().unwrap().is_empty());
}

#[test]
fn gantt_of_a_ten_thousand_task_run_stays_small_and_labelled() {
    let m = mirage();
    let k = kernels_for(&m).unwrap();
    // 40 tiles: 11 480 tasks.
    let g = workload::cholesky(40 * NB, NB, Precision::Single).unwrap();
    assert!(g.num_tasks() > 10_000);
    let dir = tmp_dir();
    let path = dir.path().join("big.svg");
    let mut gw = GanttWriter::create(&path).unwrap();
    let mut s = sched::by_name("dmda", 1).unwrap();
    simulate_observed(
        &m,
        &g,
        k.as_ref(),
        s.as_mut(),
        &RunConfig::default(),
        &mut gw,
    )
    .unwrap();
    gw.finish().unwrap();
    let svg = std::fs::read_to_string(&path).unwrap();
    assert!(svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"));
    for label in [
        "CUDA0",
        "CPU0",
        "RAM-&gt;CUDA0",
        "chol_model_gemm",
        "FetchingInput",
    ] {
        assert!(svg.contains(label), "no {label}");
    }
    let rects = svg.matches("<rect").count();
    // Sub-pixel boxes merged: far fewer rectangles than tasks and transfers.
    assert!(rects < 12_000, "{rects} rectangles");
    assert!(svg.len() < 1_500_000, "{} bytes", svg.len());
}

// --- Bounds -----------------------------------------------------------------------------------

fn workers(ncpu: u32, ngpu: u32) -> Vec<Worker> {
    let mut w = Vec::new();
    for i in 0..ngpu {
        w.push(Worker {
            id: WorkerId(w.len() as u32),
            name: format!("GPU{i}"),
            kind: WorkerKind::Gpu,
            device: "gpu".into(),
            memory: hetsim::machine::MemNodeId(1 + i),
            pipeline_depth: 2,
        });
    }
    for i in 0..ncpu {
        w.push(Worker {
            id: WorkerId(w.len() as u32),
            name: format!("CPU{i}"),
            kind: WorkerKind::Cpu,
            device: "CPU".into(),
            memory: hetsim::machine::MemNodeId(0),
            pipeline_depth: 1,
        });
    }
    w
}

/// Tasks of one codelet with the given flops, dependencies as given.
fn graph(flops: &[f64], deps: &[(u32, u32)]) -> TaskGraph {
    let mut b = TaskGraphBuilder::new();
    let cl = b.codelet("k").unwrap();
    for &f in flops {
        let h = b.add_handle(Handle::bytes(8)).unwrap();
        b.submit(cl, f, 0, &[Access::new(h, AccessMode::RW)])
            .unwrap();
    }
    for &(a, c) in deps {
        b.add_dependency(TaskId(a), TaskId(c)).unwrap();
    }
    b.build().unwrap()
}

#[test]
fn bounds_of_hand_computed_graphs() {
    // CPU 1 flop/s, GPU 4 flop/s (ratio 4 for every task).
    let k = FlopRate {
        cpu_flops_per_sec: 1.0,
        gpu_flops_per_sec: 4.0,
    };
    // Independent tasks of 4, 4, 8 flops on 2 CPUs + 1 GPU: the area bound spreads 16 flops
    // over 2 + 4 flop/s; the critical path is the largest task on the GPU.
    let g = graph(&[4.0, 4.0, 8.0], &[]);
    let b = trace::bounds(&g, &k, &workers(2, 1));
    assert_close(b.area_bound_s, 16.0 / 6.0, 1e-12);
    assert_close(b.critical_path_s, 2.0, 1e-12);
    // A diamond 0 → {1, 2} → 3 of 4, 8, 12, 4 flops: longest path 0, 2, 3 at GPU speed.
    let g = graph(&[4.0, 8.0, 12.0, 4.0], &[(0, 1), (0, 2), (1, 3), (2, 3)]);
    let b = trace::bounds(&g, &k, &workers(1, 1));
    assert_close(b.critical_path_s, (4.0 + 12.0 + 4.0) / 4.0, 1e-12);
    assert_close(b.area_bound_s, 28.0 / 5.0, 1e-12);
    // CPUs only: the work over the cores.
    let b = trace::bounds(&g, &k, &workers(4, 0));
    assert_close(b.area_bound_s, 28.0 / 4.0, 1e-12);
    assert_close(b.critical_path_s, 20.0, 1e-12);
    // Dependencies declared against submission order are followed.
    let g = graph(&[4.0, 4.0, 4.0], &[(2, 1), (1, 0)]);
    assert_close(
        trace::bounds(&g, &k, &workers(1, 1)).critical_path_s,
        3.0,
        1e-12,
    );
}

/// Kernel times per codelet: (cpu, gpu) seconds.
struct PerCodelet(Vec<(f64, f64)>);

impl KernelTimes for PerCodelet {
    fn mean_s(&self, g: &TaskGraph, t: TaskId, w: &Worker) -> Option<f64> {
        let (c, gp) = self.0[g.task(t).codelet.index()];
        let m = match w.kind {
            WorkerKind::Cpu => c,
            WorkerKind::Gpu => gp,
        };
        m.is_finite().then_some(m)
    }

    fn draw_s(
        &self,
        _: &TaskGraph,
        _: TaskId,
        _: &Worker,
        mean: f64,
        _: &mut hetsim::runtime::SimRng,
    ) -> f64 {
        mean
    }
}

#[test]
fn area_bound_splits_by_relative_speed() {
    // A: 10 s on a CPU, 1 s on a GPU; B: 2 s and 1 s. One CPU, one GPU, one task of each:
    // the GPU takes A (ratio 10) and a third of B; both then work 4/3 s.
    let mut b = TaskGraphBuilder::new();
    let a = b.codelet("A").unwrap();
    let bb = b.codelet("B").unwrap();
    for cl in [a, bb] {
        let h = b.add_handle(Handle::bytes(8)).unwrap();
        b.submit(cl, 1.0, 0, &[Access::new(h, AccessMode::RW)])
            .unwrap();
    }
    let g = b.build().unwrap();
    let k = PerCodelet(vec![(10.0, 1.0), (2.0, 1.0)]);
    let bounds = trace::bounds(&g, &k, &workers(1, 1));
    assert_close(bounds.area_bound_s, 4.0 / 3.0, 1e-12);
    assert_close(bounds.critical_path_s, 1.0, 1e-12);
    // A GPU-only codelet heavier than everything: the GPU bounds the run.
    let k = PerCodelet(vec![(f64::INFINITY, 10.0), (2.0, 1.0)]);
    assert_close(
        trace::bounds(&g, &k, &workers(4, 1)).area_bound_s,
        10.0,
        1e-12,
    );
}

#[test]
fn run_reports_carry_the_bounds() {
    let m = mirage();
    let k = kernels_for(&m).unwrap();
    let g = workload::cholesky(10 * NB, NB, Precision::Single).unwrap();
    for sched_name in ["eager", "dmda"] {
        let mut s = sched::by_name(sched_name, 1).unwrap();
        let r = simulate(&m, &g, k.as_ref(), s.as_mut(), &RunConfig::default()).unwrap();
        assert!(r.critical_path_s > 0.0 && r.area_bound_s > 0.0);
        // Without kernel noise no schedule beats either bound.
        assert!(r.makespan_s >= r.critical_path_s.max(r.area_bound_s));
        assert_close(
            r.bound_ratio,
            r.makespan_s / r.critical_path_s.max(r.area_bound_s),
            1e-12,
        );
        let json = serde_json::to_value(&r).unwrap();
        for k in ["critical_path_s", "area_bound_s", "bound_ratio"] {
            assert!(json[k].is_f64(), "{k} in --json");
        }
    }
}

// --- Example traces in traces/ ----------------------------------------------------------------

/// The example traces of `traces/`: a 6×6-tile Cholesky on mirage under dmda.
fn example_graph() -> TaskGraph {
    workload::cholesky(6 * NB, NB, Precision::Single).unwrap()
}

const EXAMPLES: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/traces");

/// Rewrites `traces/cholesky-mirage-6x6.{paje,json,svg}`:
/// `cargo test --release --test integration -- --ignored traces::regenerate_example_traces`.
#[test]
#[ignore = "writes into traces/; run by hand after changing the writers or the runtime"]
fn regenerate_example_traces() {
    let m = mirage();
    let k = kernels_for(&m).unwrap();
    let g = example_graph();
    let dir = Path::new(EXAMPLES);
    let mut p = PajeWriter::create(dir.join("cholesky-mirage-6x6.paje")).unwrap();
    let mut c = ChromeWriter::create(dir.join("cholesky-mirage-6x6.json")).unwrap();
    let mut gw = GanttWriter::create(dir.join("cholesky-mirage-6x6.svg")).unwrap();
    let mut s = sched::by_name("dmda", 1).unwrap();
    simulate_observed(
        &m,
        &g,
        k.as_ref(),
        s.as_mut(),
        &RunConfig::default(),
        &mut [&mut p as &mut dyn Observer, &mut c, &mut gw],
    )
    .unwrap();
    p.finish().unwrap();
    c.finish().unwrap();
    gw.finish().unwrap();
}

#[test]
fn example_traces_are_valid_and_small() {
    let g = example_graph();
    let dir = Path::new(EXAMPLES);
    let paje = dir.join("cholesky-mirage-6x6.paje");
    let chrome = dir.join("cholesky-mirage-6x6.json");
    check_paje(&paje, &g);
    assert_eq!(check_chrome(&chrome, &g), expected_counts(&g));
    let total: u64 = std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(total < 400_000, "traces/ holds {total} bytes");
}

/// ViTE, if installed, reads the example trace without errors or warnings (a smoke test:
/// `pj_dump` is the strict gate).
#[test]
fn vite_reads_the_example_trace() {
    vite_reads(&Path::new(EXAMPLES).join("cholesky-mirage-6x6.paje"));
}

/// ViTE (if installed) exports the Paje file at `path` and finds no error or warning in it.
pub(crate) fn vite_reads(path: &Path) {
    let stem = path.file_stem().unwrap().to_string_lossy();
    let dir = tmp_dir();
    let svg = dir.path().join(format!("vite-{stem}.svg"));
    let out = match Command::new("vite")
        .env("QT_QPA_PLATFORM", "offscreen")
        .arg(path)
        .arg("-e")
        .arg(&svg)
        .output()
    {
        Ok(out) => out,
        Err(_) => {
            eprintln!("SKIPPED: vite not found");
            return;
        }
    };
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("0 errors and 0 warnings"),
        "vite complained about {}: {text}",
        path.display()
    );
}

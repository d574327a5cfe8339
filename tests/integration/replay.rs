//! Task graphs read from files (`workload.kind = "taskgraph"`): StarPU 1.4.12's own recordings
//! (`traces/starpu/`, PROVENANCE.md there) against hetsim's generators and against StarPU's
//! `starpu_replay` (`docs/validation/starpu14-replay.csv`), the other formats, and bad input.

use std::path::Path;

use crate::common::{PYTHON, hetsim, repo};
use hetsim::workload::import::json::{self, GraphFile};
use hetsim::workload::import::{GpuSynchronous, ImportOptions, Imported, import};
use hetsim::workload::{Precision, Priorities, TaskGraph, cholesky, cholesky_with};

fn read(p: &str, gpu_synchronous: GpuSynchronous) -> Imported {
    let options = ImportOptions {
        format: None,
        gpu_synchronous,
    };
    import(&repo(p), &options).unwrap_or_else(|e| panic!("{e}"))
}

/// Where `a` and `b` differ as graphs: tasks (codelet, priority, flops to the 6 decimals of a
/// GFlop figure, model size, accesses with handles matched by first use), edges, hints.
fn differences(a: &TaskGraph, b: &TaskGraph) -> Vec<String> {
    let mut out = Vec::new();
    if a.num_tasks() != b.num_tasks() {
        return vec![format!("{} tasks against {}", a.num_tasks(), b.num_tasks())];
    }
    // Handles are numbered differently (file: by first use; generator: by tile); match them
    // by first use in submission order.
    let mut map: Vec<Option<u32>> = vec![None; a.handles().len()];
    for t in a.task_ids() {
        let (x, y) = (a.task(t), b.task(t));
        if a.task_codelet_name(t) != b.task_codelet_name(t) || x.priority != y.priority {
            out.push(format!(
                "task {}: {} prio {} against {} prio {}",
                t.0,
                a.task_codelet_name(t),
                x.priority,
                b.task_codelet_name(t),
                y.priority
            ));
        }
        if (x.flops() / 1e9 - y.flops() / 1e9).abs() > 1e-6
            || x.model_size_bytes() != y.model_size_bytes()
        {
            out.push(format!("task {}: flops or size differ", t.0));
        }
        let (aa, ba) = (a.accesses(t), b.accesses(t));
        if aa.len() != ba.len() {
            out.push(format!(
                "task {}: {} buffers against {}",
                t.0,
                aa.len(),
                ba.len()
            ));
            continue;
        }
        for (p, q) in aa.iter().zip(ba) {
            let m = map[p.handle.index()].get_or_insert(q.handle.0);
            if *m != q.handle.0 || p.mode != q.mode {
                out.push(format!("task {}: access {:?} against {:?}", t.0, p, q));
            }
        }
        if a.successors(t) != b.successors(t) {
            out.push(format!(
                "task {}: successors {:?} against {:?}",
                t.0,
                a.successors(t),
                b.successors(t)
            ));
        }
    }
    let hints = |g: &TaskGraph| -> Vec<(u32, u32)> {
        g.wont_use_hints()
            .iter()
            .map(|h| (h.handle.0, h.after.0))
            .collect()
    };
    let mapped: Vec<(u32, u32)> = hints(a)
        .into_iter()
        .map(|(h, t)| (map[h as usize].unwrap_or(u32::MAX), t))
        .collect();
    if mapped != hints(b) {
        out.push(format!("hints {mapped:?} against {:?}", hints(b)));
    }
    if a.gpu_synchronous_codelets().collect::<Vec<_>>()
        != b.gpu_synchronous_codelets().collect::<Vec<_>>()
    {
        out.push("GPU-synchronous codelets differ".into());
    }
    out
}

/// StarPU 1.4.12's `cholesky_implicit.c` gives syrk(n, k) the priority 2T − 2k − n, as hetsim's
/// generator does; StarPU 1.3's gave 2T − 2k − 2n (`workload.priorities = "starpu-1.3"`), so a
/// recorded syrk's priority is 1.3's plus n.
const SYRK: &str = "chol_model_syrk";

/// The tile row of the tile `t` writes (syrk(n, k) writes A(n, n)).
fn written_row(g: &TaskGraph, t: hetsim::workload::TaskId) -> i32 {
    let a = g.accesses(t).iter().find(|a| a.mode.writes()).unwrap();
    g.handle(a.handle).tile.unwrap().row as i32
}

#[test]
fn the_recorded_cholesky_is_hetsims_cholesky() {
    let generated = cholesky(9600, 960, Precision::Single).unwrap();
    let potrf = || GpuSynchronous::Codelets(vec!["chol_model_potrf".into()]);
    // Recorded under dmda and eager: every priority clamped to 0 (PROVENANCE.md).
    for trace in ["cholesky-9600-dmda", "cholesky-9600-eager"] {
        let rec = read(&format!("traces/starpu/{trace}/tasks.rec"), potrf());
        assert!(rec.graph.tasks().iter().all(|t| t.priority == 0), "{trace}");
        let diff = differences(&rec.graph, &generated);
        let not_prio: Vec<_> = diff.iter().filter(|d| !d.contains(" prio ")).collect();
        assert!(not_prio.is_empty(), "{trace}: {not_prio:?}");
        // 220 tasks, StarPU's 121 acquire and 11 unnamed records contracted, 55 hints; the 11
        // acquisitions before the first task are the partitioning's, as the generator has them.
        assert_eq!(rec.graph.num_tasks(), 220);
        assert_eq!(rec.graph.startup_acquires(), 11, "{trace}");
        assert_eq!(generated.startup_acquires(), 11);
        assert_eq!(
            (rec.stats.contracted, rec.stats.wont_use),
            (132, 55),
            "{trace}"
        );
    }
    let rec = read("traces/starpu/cholesky-9600-dmdas/tasks.rec", potrf());
    let diff = differences(&rec.graph, &generated);
    assert!(diff.is_empty(), "{diff:?}");
    let v13 = cholesky_with(9600, 960, Precision::Single, Priorities::StarPu13).unwrap();
    assert_eq!(
        differences(&rec.graph, &v13).len(),
        45,
        "only the 45 syrks differ"
    );
    for t in rec.graph.task_ids() {
        let (r, g) = (rec.graph.task(t).priority, v13.task(t).priority);
        if generated.task_codelet_name(t) == SYRK {
            assert_eq!(r, g + written_row(&generated, t), "task {}", t.0);
        } else {
            assert_eq!(r, g, "task {}", t.0);
        }
    }
}

fn makespan(args: &[&str]) -> f64 {
    let mut all = vec!["run"];
    all.extend_from_slice(args);
    all.push("--json");
    let out = hetsim(&all);
    assert!(
        out.status.success(),
        "{args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["makespan_s"].as_f64().unwrap()
}

/// Same graph, same makespan to the last digit, under every registered scheduler: the replay
/// of StarPU's dmdas recording against hetsim's own Cholesky, and the dmda recording (its
/// priorities all 0) against it under the schedulers that ignore priorities.
#[test]
fn replaying_the_recorded_cholesky_gives_hetsims_makespans_under_every_scheduler() {
    let dmda_set = "workload.file=traces/starpu/cholesky-9600-dmda/tasks.rec";
    let replay = "scenarios/replay-cholesky-mirage.toml";
    for e in hetsim::sched::REGISTRY
        .iter()
        .filter(|e| e.name != "recorded")
    {
        let s = e.name;
        let own = makespan(&["scenarios/cholesky-mirage.toml", "--sched", s]);
        assert_eq!(makespan(&[replay, "--sched", s]), own, "{s}");
        if !e.default_config().build(1).takes_priorities() {
            assert_eq!(
                makespan(&[replay, "--sched", s, "--set", dmda_set]),
                own,
                "{s}"
            );
        }
    }
}

/// A graph written as JSON and read back is the same graph, startup acquisitions included.
#[test]
fn the_json_format_round_trips() {
    for (kind, n) in [("cholesky", 4800), ("lu", 4800), ("gemm", 2880)] {
        let g = hetsim::workload::TiledAlgorithm::generate(
            kind.parse().unwrap(),
            n,
            960,
            Precision::Single,
        )
        .unwrap();
        let text = json::write(&g, Some(kind.into())).unwrap();
        let file: GraphFile = serde_json::from_str(&text).unwrap();
        let (back, _, _) = json::from_file(&file, &GpuSynchronous::None).unwrap();
        assert!(differences(&back, &g).is_empty(), "{kind}");
        assert_eq!(back.startup_acquires(), g.startup_acquires(), "{kind}");
    }
}

/// hetsim's replay of each recorded `tasks.rec` against StarPU's own `starpu_replay` of the same
/// file (`docs/validation/starpu14-replay.csv`), under the same scheduler on mirage. hetsim runs
/// the file as starpu_replay does: one codelet without `STARPU_CUDA_ASYNC` (every codelet
/// GPU-synchronous), the stencil's model-less init tasks at their recorded durations, memory
/// only counted (starpu_replay's data interface allocates nothing, so no cudaMalloc cost),
/// SimGrid's sharing. Targets as in the StarPU agreement study: 5 % for the dmda family, 10 % for ws and
/// eager; random draws differ between the two, so the mean of the three seeds is held to 10 %.
/// Cells outside their target are explained in `docs/taskgraph-files.md` and held to their
/// figure now plus a margin.
#[test]
fn agrees_with_starpu_replay() {
    let csv = std::fs::read_to_string(repo("docs/validation/starpu14-replay.csv")).unwrap();
    let mut rows = csv.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    let col = |n: &str| header.iter().position(|h| *h == n).unwrap();
    let (trace_c, sched_c, seed_c, ms_c) = (
        col("trace"),
        col("sched"),
        col("seed"),
        col("replay_sim_ms"),
    );
    // (trace, sched) → (starpu_replay ms, hetsim ms) sums over seeds, for random.
    let mut random: std::collections::BTreeMap<String, (f64, f64)> = Default::default();
    let mut checked = 0;
    for row in rows {
        let f: Vec<&str> = row.split(',').collect();
        let (trace, sched) = (f[trace_c], f[sched_c]);
        let seed = if f[seed_c].is_empty() { "1" } else { f[seed_c] };
        let starpu: f64 = f[ms_c].parse().unwrap();
        let mut file = format!("traces/starpu/{trace}/tasks.rec");
        if !repo(&file).exists() {
            file.push_str(".gz");
        }
        let file_set = format!("workload.file={file}");
        let ms = 1e3
            * makespan(&[
                "scenarios/replay-cholesky-mirage.toml",
                "--set",
                &file_set,
                "--set",
                "workload.gpu_synchronous=all",
                "--set",
                "workload.durations=recorded",
                // starpu_replay's data interface only counts memory: no cudaMalloc, no pinning.
                "--set",
                "runtime.cuda_malloc=0",
                "--set",
                "runtime.cuda_free=0",
                "--set",
                "runtime.pinned_alloc_per_mib=0",
                "--sched",
                sched,
                "--seed",
                seed,
            ]);
        if sched == "random" {
            let e = random.entry(trace.to_string()).or_default();
            e.0 += starpu;
            e.1 += ms;
            continue;
        }
        let diff = (ms - starpu) / starpu;
        // The cells outside their target (docs/taskgraph-files.md), each held to its
        // difference rounded up plus two points.
        let bound = match (trace, sched) {
            // Eager's order at shared dates is SimGrid's among its actors.
            (t, "eager") if t.starts_with("lu") => 0.17,
            (_, "dmda" | "dmdar" | "dmdas") => 0.05,
            _ => 0.10,
        };
        assert!(
            diff.abs() <= bound,
            "{trace} {sched}: hetsim {ms:.1} ms, starpu_replay {starpu} ms ({:+.1} %, bound {} %)",
            100.0 * diff,
            100.0 * bound
        );
        checked += 1;
    }
    assert_eq!(checked, 30);
    assert_eq!(random.len(), 6);
    for (trace, (starpu, ms)) in random {
        let diff = (ms - starpu) / starpu;
        assert!(diff.abs() <= 0.10, "{trace} random: {:+.1} %", 100.0 * diff);
    }
}

/// The stencil (not linear algebra: a banded chain of slabs with halo copies) replays end to
/// end, with its traces: every task in the Paje trace, each as the codelet it was recorded as.
#[test]
fn the_recorded_stencil_replays_with_traces() {
    let dir = std::env::temp_dir().join(format!("hetsim-replay-stencil-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (paje, chrome) = (dir.join("s.paje"), dir.join("s.json"));
    let out = hetsim(&[
        "run",
        "scenarios/replay-stencil-mirage.toml",
        "--paje",
        paje.to_str().unwrap(),
        "--chrome",
        chrome.to_str().unwrap(),
        "--quiet",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains(": 1600 tasks,"), "{text}");
    // Codelet states in the Paje trace, per codelet: the file's task counts (PROVENANCE.md).
    let paje_text = std::fs::read_to_string(&paje).unwrap();
    for (codelet, n) in [
        ("cl_update", 512),
        ("save_cl_top", 512),
        ("save_cl_bottom", 512),
        ("memset", 32),
        ("initlayer", 32),
    ] {
        let starts = paje_text
            .lines()
            .filter(|l| {
                l.split_ascii_whitespace()
                    .any(|w| w == codelet || w == format!("\"{codelet}\""))
            })
            .count();
        assert!(
            starts >= n,
            "{codelet}: {starts} lines in the Paje trace, expected >= {n}"
        );
    }
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&chrome).unwrap()).unwrap();
    let events = v["traceEvents"].as_array().or(v.as_array()).unwrap();
    let updates = events
        .iter()
        .filter(|e| e["name"] == "cl_update" && e["ph"] == "X")
        .count();
    assert_eq!(updates, 512);
    // The Paje trace of a replay is one ViTE reads without an error or a warning, and one
    // pj_dump parses (both skipped where they are not installed).
    crate::traces::vite_reads(&paje);
    if let Some(dump) = crate::traces::pj_dump(&paje) {
        let states = dump.lines().filter(|l| l.starts_with("State")).count();
        assert!(states >= 1600, "{states} states in pj_dump's output");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The WfCommons epigenomics instance (traces/wfcommons/, PROVENANCE.md there): its tasks run
/// on CPU cores for their measured runtimes, and its widest level has 9 tasks, so on mirage's
/// 9 CPU workers the makespan is its critical path, computed here from the file alone, plus
/// the 1 µs of the workers' first progress call (StarPU's drivers start awake and pop after
/// it; without runtime costs everything else takes no time).
#[test]
fn a_wfcommons_workflow_runs_for_its_critical_path() {
    let path = "traces/wfcommons/epigenomics-chameleon-hep-1seq-100k-001.json";
    let doc: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(repo(path)).unwrap()).unwrap();
    let w = &doc["workflow"];
    let runtime: std::collections::HashMap<&str, f64> = w["execution"]["tasks"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap(),
                t["runtimeInSeconds"].as_f64().unwrap(),
            )
        })
        .collect();
    let tasks = w["specification"]["tasks"].as_array().unwrap();
    let mut finish: std::collections::HashMap<&str, f64> = Default::default();
    while finish.len() < tasks.len() {
        for t in tasks {
            let id = t["id"].as_str().unwrap();
            let parents: Vec<&str> = t["parents"]
                .as_array()
                .unwrap()
                .iter()
                .map(|p| p.as_str().unwrap())
                .collect();
            if !finish.contains_key(id) && parents.iter().all(|p| finish.contains_key(p)) {
                let start = parents.iter().map(|p| finish[p]).fold(0.0, f64::max);
                finish.insert(id, start + runtime[id]);
            }
        }
    }
    let critical = finish.values().copied().fold(0.0, f64::max);
    let first_pop_s = 1e-6;
    let ms = makespan(&["scenarios/replay-epigenomics-mirage.toml"]);
    assert!(
        (ms - critical - first_pop_s).abs() <= 1e-9 * critical,
        "makespan {ms} s, critical path {critical} s"
    );
}

/// StarPU's dag.dot draws the edges of tasks.rec's DependsOn: read it, with the same internal
/// tasks contracted, and each of its edges is an edge of the tasks.rec graph (which adds
/// the dependencies the data accesses imply), between tasks of the same names.
#[test]
fn the_recorded_dag_dot_has_the_edges_of_tasks_rec() {
    let dot = read(
        "traces/starpu/cholesky-9600-dmdas/dag.dot",
        GpuSynchronous::None,
    );
    let rec = read(
        "traces/starpu/cholesky-9600-dmdas/tasks.rec",
        GpuSynchronous::None,
    );
    assert_eq!(dot.graph.num_tasks(), 220);
    let by_job: std::collections::HashMap<String, usize> = rec
        .origins
        .iter()
        .enumerate()
        .map(|(i, o)| (o.id.to_string(), i))
        .collect();
    let rec_task = |t: hetsim::workload::TaskId| {
        let node = dot.origins[t.index()].id.to_string();
        let job = node.strip_prefix("task_").unwrap();
        hetsim::workload::TaskId(by_job[job] as u32)
    };
    let names = |n: &str| match n {
        "POTRF" => "chol_model_potrf",
        "TRSM" => "chol_model_trsm",
        "SYRK" => "chol_model_syrk",
        "GEMM" => "chol_model_gemm",
        other => panic!("{other}"),
    };
    let mut edges = 0;
    for t in dot.graph.task_ids() {
        let r = rec_task(t);
        assert_eq!(
            names(dot.graph.task_codelet_name(t)),
            rec.graph.task_codelet_name(r)
        );
        for &s in dot.graph.successors(t) {
            assert!(rec.graph.has_edge(r, rec_task(s)), "{} -> {}", t.0, s.0);
            edges += 1;
        }
    }
    assert!(edges > 0 && edges <= rec.graph.num_edges());
}

/// `--sched recorded` runs every task where StarPU ran it: the replay's workers each run the
/// tasks the recording put on them.
#[test]
fn the_recorded_scheduler_keeps_the_recorded_mapping() {
    let out = hetsim(&[
        "run",
        "scenarios/replay-cholesky-mirage.toml",
        "--sched",
        "recorded",
        "--json",
    ]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let rec = read(
        "traces/starpu/cholesky-9600-dmdas/tasks.rec",
        GpuSynchronous::None,
    );
    let mut per_worker = vec![0u64; 12];
    for t in rec.graph.task_ids() {
        per_worker[rec.graph.recorded_worker(t).unwrap().id as usize] += 1;
    }
    let ran: Vec<u64> = v["workers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|w| w["tasks"].as_u64().unwrap())
        .collect();
    assert_eq!(ran, per_worker);
}

/// `hetsim run` of the recorded Cholesky's scenario with its graph replaced by `file` in
/// `format`: the exit status and stderr.
fn run_graph_file(file: &Path, format: &str) -> (Option<i32>, String) {
    let set_file = format!("workload.file={}", file.display());
    let set_format = format!("workload.format={format}");
    let out = hetsim(&[
        "run",
        "scenarios/replay-cholesky-mirage.toml",
        "--quiet",
        "--set",
        &set_file,
        "--set",
        &set_format,
    ]);
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Write each `(name, body, message)` case as `dir/name.EXT` (EXT `dot` for the dot format,
/// `json` otherwise), run it as a graph file of `format` and check that hetsim exits 2 naming
/// the file (followed by `located`, such as `:line `) and giving `message`.
fn assert_each_refused<M: AsRef<str>>(
    dir: &Path,
    format: &str,
    located: &str,
    cases: impl IntoIterator<Item = (&'static str, String, M)>,
) {
    let ext = if format == "dot" { "dot" } else { "json" };
    for (name, body, message) in cases {
        let file = dir.join(format!("{name}.{ext}"));
        std::fs::write(&file, body).unwrap();
        let (code, err) = run_graph_file(&file, format);
        assert_eq!(code, Some(2), "{name}: {err}");
        assert!(
            err.contains(&format!("{name}.{ext}{located}")) && err.contains(message.as_ref()),
            "{name}: {err}"
        );
    }
}

/// Bad files: exit status 2, the file and line named, and what is wrong.
#[test]
fn bad_task_graph_files_are_refused_with_their_line() {
    let dir = std::env::temp_dir().join(format!("hetsim-replay-bad-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let record = |job: u32, deps: &str, handles: &str, sizes: &str| {
        format!(
            "Name: T{job}\nModel: chol_model_trsm\nJobId: {job}\nSubmitOrder: {job}\n\
             DependsOn: {deps}\nWorkerId: 3\nMemoryNode: 0\nStartTime: 1.0\nEndTime: 2.0\n\
             Handles: {handles}\nModes: R RW\nSizes: {sizes}\n"
        )
    };
    let ok = "3686400 3686400";
    let cases = [
        (
            "cycle",
            format!(
                "{}\n{}",
                record(1, "2", "a0 b0", ok),
                record(2, "1", "a0 c0", ok)
            ),
            "cycle.rec:line 14: the dependencies contain a cycle through job 2: a task cannot wait \
             for itself",
        ),
        (
            "unknown",
            format!(
                "{}\n{}",
                record(1, "", "a0 b0", ok),
                record(2, "9", "a0 c0", ok)
            ),
            "unknown.rec:line 18: a task depends on job 9, which has no record in the file",
        ),
        (
            "sizes",
            format!(
                "{}\n{}",
                record(1, "", "a0 b0", ok),
                record(2, "1", "a0 b0", "3686400 7372800")
            ),
            "sizes.rec:line 25: field `Sizes`: handle b0 is accessed with 7372800 bytes here and \
             with 3686400 bytes at line 12",
        ),
        (
            "truncated",
            format!(
                "{}\n{}",
                record(1, "", "a0 b0", ok),
                &record(2, "1", "a0 b0", ok)[..150]
            ),
            "truncated.rec:line 14: job 2: `Handles` lists 2 buffers, `Modes` 2 and `Sizes` 0 \
             (truncated record?)",
        ),
    ];
    for (name, text, want) in cases {
        let file = dir.join(format!("{name}.rec"));
        std::fs::write(&file, text).unwrap();
        let (code, err) = run_graph_file(&file, "starpu-rec");
        assert_eq!(code, Some(2), "{name}");
        let want = format!("hetsim: error: {}/{want}\n", dir.display());
        assert_eq!(err, want, "{name}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// What `export-graph` writes is valid under `docs/taskgraph.schema.json`, checked by an
/// independent validator (python3-jsonschema), and files the schema refuses hetsim refuses too,
/// with exit status 2, naming the file and what is wrong.
#[test]
fn exported_graphs_follow_the_json_schema() {
    let ready = std::process::Command::new(PYTHON)
        .args(["-c", "import jsonschema"])
        .stdin(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !ready {
        assert!(
            std::env::var_os("CI").is_none_or(|v| v.is_empty()),
            "`{PYTHON} -c 'import jsonschema'` fails under CI: .ci/run must install \
             python3-jsonschema"
        );
        use std::io::Write;
        let _ = writeln!(
            std::io::stderr(),
            "skipped: python3-jsonschema not installed; the JSON Schema test did not run"
        );
        return;
    }
    let dir = std::env::temp_dir().join(format!("hetsim-schema-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut files = Vec::new();
    for scenario in [
        "scenarios/lu-mirage.toml",
        "scenarios/replay-cholesky-mirage.toml",
        "scenarios/replay-epigenomics-mirage.toml",
    ] {
        let out_file = dir.join(format!("{}.json", files.len()));
        let out = hetsim(&["export-graph", scenario, "-o", out_file.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{scenario}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        files.push((out_file, true));
    }
    // Refused by both: a field the format does not have, an unknown mode, a task without codelet.
    let good: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&files[0].0).unwrap()).unwrap();
    let mut bad = Vec::new();
    let mut v = good.clone();
    v["tasks"][0]["colour"] = "red".into();
    bad.push((v, "colour"));
    let mut v = good.clone();
    v["tasks"][1]["accesses"][0][1] = "X".into();
    bad.push((v, "`X`"));
    let mut v = good;
    v["tasks"][2].as_object_mut().unwrap().remove("codelet");
    bad.push((v, "codelet"));
    for (i, (v, field)) in bad.into_iter().enumerate() {
        let f = dir.join(format!("bad{i}.json"));
        std::fs::write(&f, serde_json::to_string(&v).unwrap()).unwrap();
        let set = format!("workload.file={}", f.display());
        let out = hetsim(&[
            "run",
            "scenarios/replay-cholesky-mirage.toml",
            "--set",
            &set,
        ]);
        assert_eq!(out.status.code(), Some(2), "bad{i}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("bad{i}.json")) && err.contains(field),
            "bad{i}: {err}"
        );
        files.push((f, false));
    }
    let script = "import json, sys, jsonschema\n\
        schema = json.load(open(sys.argv[1]))\n\
        jsonschema.Draft202012Validator.check_schema(schema)\n\
        v = jsonschema.Draft202012Validator(schema)\n\
        for f in sys.argv[2:]:\n    print(f, v.is_valid(json.load(open(f))))\n";
    let mut cmd = std::process::Command::new(PYTHON);
    cmd.args([
        "-c",
        script,
        repo("docs/taskgraph.schema.json").to_str().unwrap(),
    ]);
    cmd.args(files.iter().map(|(f, _)| f.as_os_str()));
    let out = cmd.stdin(std::process::Stdio::null()).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let verdicts = String::from_utf8(out.stdout).unwrap();
    let want: String = files
        .iter()
        .map(|(f, ok)| format!("{} {}\n", f.display(), if *ok { "True" } else { "False" }))
        .collect();
    assert_eq!(verdicts, want);
    std::fs::remove_dir_all(&dir).ok();
}

/// The run refuses what it cannot simulate, naming the record: a task whose codelet the
/// machine has no model of (the stencil's `memset`, job 1, whose record opens the file), and
/// `--sched recorded` on a machine whose workers differ from the recording's (job 108, the
/// first task recorded on worker 3, a CPU core of mirage: the record starting at line 2155;
/// gemini's worker 3 is a GPU).
#[test]
fn replays_the_machine_cannot_run_are_refused_with_the_task_named() {
    let out = hetsim(&[
        "run",
        "scenarios/replay-stencil-mirage.toml",
        "--set",
        "workload.durations=models",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "hetsim: error: scenarios/../traces/starpu/stencil-32x16-dmda/tasks.rec.gz:line 1: task 1 \
         (`memset`, 4461600 bytes of data): machine `mirage` has no kernel model of codelet \
         `memset` for that size on any unit; add one to the machine file, or set \
         workload.durations = \"recorded\" to use the duration the file recorded\n"
    );
    let out = hetsim(&[
        "run",
        "scenarios/replay-cholesky-mirage.toml",
        "--set",
        "scenario.machine=calibration/gemini.toml",
        "--sched",
        "recorded",
    ]);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.starts_with(
            "hetsim: error: scenarios/../traces/starpu/cholesky-9600-dmdas/tasks.rec:line 2155: \
             task 108 ran on worker 3 (a CPU), but this run of machine `gemini` has 8 GPU workers"
        ),
        "{err}"
    );
}

/// hetsim's JSON format, broken four ways (a cycle, a dependency on a task that does not exist,
/// an access to a handle that does not exist, a truncated file): exit 2, naming the file and the
/// field or line.
#[test]
fn bad_json_graphs_exit_2_naming_the_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let graph = dir.path().join("g.json");
    let scenario = repo("scenarios/cholesky-mirage.toml");
    let o = hetsim(&[
        "export-graph",
        scenario.to_str().unwrap(),
        "--set",
        "workload.n=2880",
        "-o",
        graph.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let text = std::fs::read_to_string(&graph).unwrap();
    let good: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(
        good["tasks"].as_array().map(Vec::len),
        Some(10),
        "3x3 tiles: 10 tasks"
    );
    let edited = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut g = good.clone();
        edit(&mut g);
        serde_json::to_string_pretty(&g).unwrap()
    };
    let cases = [
        (
            "cycle",
            edited(&|g| g["tasks"][0]["after"] = serde_json::json!([9])),
            "field `tasks`: the dependencies contain a cycle",
        ),
        (
            "unknown",
            edited(&|g| g["tasks"][3]["after"] = serde_json::json!([99])),
            "field `tasks[3].after[0]`: task 99 does not exist",
        ),
        (
            "handle",
            edited(&|g| g["tasks"][3]["accesses"] = serde_json::json!([[42, "R"]])),
            "field `tasks[3].accesses[0]`: handle 42 does not exist",
        ),
        (
            "truncated",
            text[..text.len() / 2].to_string(),
            "not a hetsim task graph: EOF while parsing",
        ),
    ];
    assert_each_refused(dir.path(), "json", "", cases);
}

/// StarPU's `dag.dot`, broken two ways (an edge back that closes a cycle, a file cut in the
/// middle of an attribute list): exit 2, naming the file and a line.
#[test]
fn bad_dot_graphs_exit_2_naming_the_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(repo("traces/starpu/cholesky-9600-dmdas/dag.dot")).unwrap();
    let edge = "\t \"task_108\"->\"task_109\"\n";
    assert!(text.contains(edge), "the recording has this edge");
    let cut = text.find("[ style=filled").unwrap() + 5;
    let cases = [
        (
            "cycle",
            text.replacen(edge, &format!("{edge}\t \"task_109\"->\"task_108\"\n"), 1),
            "the dependencies contain a cycle through job task_10",
        ),
        (
            "truncated",
            text[..cut].to_string(),
            "an attribute list `[` is not closed by `]`",
        ),
    ];
    assert_each_refused(dir.path(), "dot", ":line ", cases);
}

/// The WfCommons instance broken five ways (a cycle, an unknown parent, a file cut in half, a
/// negative runtime, no task list): exit 2, naming the file and what is wrong.
#[test]
fn bad_wfformat_files_exit_2_naming_the_file_and_field() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read_to_string(repo(
        "traces/wfcommons/epigenomics-chameleon-hep-1seq-100k-001.json",
    ))
    .unwrap();
    let good: serde_json::Value = serde_json::from_str(&text).unwrap();
    let edited = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut g = good.clone();
        edit(&mut g);
        serde_json::to_string_pretty(&g).unwrap()
    };
    let first = good["workflow"]["specification"]["tasks"][0]["id"]
        .as_str()
        .unwrap()
        .to_string();
    let cases = [
        (
            "cycle",
            edited(&|g| {
                // The first task's parent also waits for it.
                let tasks = g["workflow"]["specification"]["tasks"]
                    .as_array_mut()
                    .unwrap();
                let parent = tasks[0]["parents"][0].clone();
                for t in tasks.iter_mut().filter(|t| t["id"] == parent) {
                    t["parents"]
                        .as_array_mut()
                        .unwrap()
                        .push(first.clone().into());
                }
            }),
            format!("field `parents`: the dependencies contain a cycle through task `{first}`"),
        ),
        (
            "unknown",
            edited(&|g| {
                g["workflow"]["specification"]["tasks"][0]["parents"] =
                    serde_json::json!(["nosuchtask"])
            }),
            format!("task `{first}` has parent `nosuchtask`, which is not a task"),
        ),
        (
            "truncated",
            text[..text.len() / 2].to_string(),
            "not a WfFormat instance: EOF while parsing".to_string(),
        ),
        (
            "negative",
            edited(&|g| g["workflow"]["execution"]["tasks"][0]["runtimeInSeconds"] = (-5).into()),
            "field `runtimeInSeconds`: task `chr21_chr21_ID0000001`: runtimeInSeconds -5 is not \
             a duration"
                .to_string(),
        ),
        (
            "nospec",
            edited(&|g| {
                g["workflow"]
                    .as_object_mut()
                    .unwrap()
                    .remove("specification");
            }),
            "expected `workflow.specification.tasks` (WfFormat 1.5) or `workflow.tasks`"
                .to_string(),
        ),
    ];
    assert_each_refused(dir.path(), "wfformat", "", cases);
}

//! `hetsim run`: the JSON and text outputs on a small test machine (figures checked against
//! closed forms), determinism, `--set` overrides, bad input (exit status 2, a message naming
//! the file or override, the line and the field, no panic) and a closed stdout pipe.
//!
//! The test machine (`tests/data/run/tiny.toml`) has peak flop rates, so kernel durations come
//! from the flop-rate model and no calibration is needed.

use crate::common::close;
use crate::common::hetsim;
use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};

use serde_json::Value;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/run")
        .join(name)
}

fn scenario() -> PathBuf {
    data("cholesky-tiny.toml")
}

fn run(scenario: &Path, extra: &[&str]) -> Output {
    let mut args = vec!["run", scenario.to_str().expect("utf-8 path")];
    args.extend_from_slice(extra);
    hetsim(&args)
}

fn stdout(out: &Output) -> String {
    String::from_utf8(out.stdout.clone()).expect("utf-8 stdout")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn ok(out: &Output) -> String {
    assert!(
        out.status.success(),
        "status {}\nstderr: {}",
        out.status,
        stderr(out)
    );
    stdout(out)
}

fn json(out: &Output) -> Value {
    let text = ok(out);
    assert_eq!(
        text.lines().count(),
        1,
        "--json prints exactly one line: {text}"
    );
    serde_json::from_str(&text).expect("stdout is one JSON object")
}

/// Tasks of a tiled Cholesky with T tiles per side: T potrf, T(T−1)/2 trsm and as many syrk,
/// T(T−1)(T−2)/6 gemm.
fn cholesky_tasks(t: u64) -> u64 {
    t + t * (t - 1) + t * (t - 1) * t.saturating_sub(2) / 6
}

/// Flops of a tiled Cholesky (StarPU's per-task counts, `docs/workloads.md`).
fn cholesky_flops(t: u64, nb: u64) -> f64 {
    let (t, nb) = (t as f64, nb as f64);
    let potrf = nb * nb * nb / 3.0 + nb * nb / 2.0 + nb / 6.0;
    let trsm = nb * nb * (nb + 1.0);
    let syrk = trsm;
    let gemm = 2.0 * nb * nb * nb;
    t * potrf + t * (t - 1.0) / 2.0 * (trsm + syrk) + t * (t - 1.0) * (t - 2.0) / 6.0 * gemm
}

/// Tasks of a tiled LU: T getrf, T(T−1)/2 trsm of each kind, Σ (T−k−1)² gemm.
fn lu_tasks(t: u64) -> u64 {
    t + t * (t - 1) + (t - 1) * t * (2 * t - 1) / 6
}

#[test]
fn json_has_the_required_fields_with_sane_values() {
    let v = json(&run(&scenario(), &["--json"]));
    for field in [
        "makespan_s",
        "gflops",
        "tasks",
        "bytes_transferred",
        "sched",
        "seed",
        "workers",
        "links",
        "scenario",
        "workload",
        "hetsim_version",
        "codelets",
        "memory",
    ] {
        assert!(v.get(field).is_some(), "missing `{field}` in {v}");
    }
    // 1920 / 192 = 10 tiles per side.
    let t = 10;
    assert_eq!(v["tasks"].as_u64(), Some(cholesky_tasks(t)));
    assert_eq!(v["tasks"].as_u64(), Some(220));
    let flops = v["total_flops"].as_f64().unwrap();
    assert!(close(flops, cholesky_flops(t, 192), 1e-12), "{flops}");
    let makespan = v["makespan_s"].as_f64().unwrap();
    assert!(makespan > 0.0 && makespan.is_finite());
    let gflops = v["gflops"].as_f64().unwrap();
    assert!(close(gflops, flops / makespan / 1e9, 1e-9), "{gflops}");
    // No faster than every worker at its peak rate: 2 GPUs at 200 and 4 CPU cores at 10.
    assert!(gflops <= 2.0 * 200.0 + 4.0 * 10.0, "{gflops}");
    assert!(v["end_with_writeback_s"].as_f64().unwrap() >= makespan);
    assert_eq!(v["sched"], "eager");
    assert_eq!(v["seed"], 1);
    assert_eq!(v["scenario"], "cholesky-tiny");
    assert_eq!(v["machine"], "tiny");
    assert_eq!(
        v["workload"],
        serde_json::json!({
            "kind": "cholesky",
            "n": 1920,
            "nb": 192,
            "precision": "single",
            "priorities": "starpu-1.4"
        })
    );
    assert_eq!(v["hetsim_version"], env!("CARGO_PKG_VERSION"));

    // Workers: 2 GPUs and 6 − 2 driver cores; their tasks add up; each one's time adds up
    // to the run.
    let workers = v["workers"].as_array().unwrap();
    assert_eq!(workers.len(), 6);
    let ran: u64 = workers.iter().map(|w| w["tasks"].as_u64().unwrap()).sum();
    assert_eq!(ran, 220);
    for w in workers {
        let total = ["busy_s", "waiting_s", "idle_s"]
            .iter()
            .map(|k| w[k].as_f64().unwrap())
            .sum::<f64>();
        assert!(total >= makespan * (1.0 - 1e-9), "{w}");
    }

    // Bytes: the split adds up, and links carried something (GPU memories are 4 MiB, so the
    // 8 MB of tiles cannot stay there: evictions).
    let bytes = v["bytes_transferred"].as_f64().unwrap();
    let split: f64 = ["fetch_bytes", "prefetch_bytes", "writeback_bytes"]
        .iter()
        .map(|k| v[k].as_f64().unwrap())
        .sum();
    assert!(close(bytes, split, 1e-12), "{bytes} vs {split}");
    assert!(bytes > 0.0);
    assert!(v["evictions"].as_u64().unwrap() > 0);
    let links = v["links"].as_array().unwrap();
    assert_eq!(links.len(), 6);
    assert!(links.iter().any(|l| l["bytes"].as_f64().unwrap() > 0.0));
    let codelet_tasks: u64 = v["codelets"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["cpu_tasks"].as_u64().unwrap() + c["gpu_tasks"].as_u64().unwrap())
        .sum();
    assert_eq!(codelet_tasks, 220);
}

#[test]
fn text_report_has_every_section() {
    let text = ok(&run(&scenario(), &[]));
    for needle in [
        "makespan",
        "GFlop/s",
        "tasks        220",
        "bytes moved",
        "evictions",
        "write-backs",
        "allocations",
        "busy %",
        "waiting %",
        "idle %",
        "chol_model_gemm",
        "utilisation %",
        "peak used",
        "GPU0-GPU1",
    ] {
        assert!(text.contains(needle), "no {needle:?} in\n{text}");
    }
    let quiet = ok(&run(&scenario(), &["--quiet"]));
    assert!(
        quiet.contains("makespan") && !quiet.contains("busy %"),
        "{quiet}"
    );
    assert!(text.starts_with(&quiet), "--quiet is the report's head");
}

#[test]
fn same_scenario_and_seed_give_identical_stdout() {
    for extra in [
        &[][..],
        &["--json"][..],
        &["--sched", "random", "--seed", "7"][..],
        &["--sched", "random", "--seed", "7", "--json"][..],
        &["--sched", "prio", "--set", "run.sharing=simgrid"][..],
    ] {
        let a = ok(&run(&scenario(), extra));
        let b = ok(&run(&scenario(), extra));
        assert_eq!(a, b, "two runs with {extra:?} differ");
    }
    let v = json(&run(
        &scenario(),
        &["--sched", "random", "--seed", "7", "--json"],
    ));
    assert_eq!(v["sched"], "random");
    assert_eq!(v["seed"], 7);
}

#[test]
fn set_changes_the_workload_as_the_closed_forms_say() {
    for (n, t) in [(960, 5), (2880, 15), (192, 1)] {
        let set = format!("workload.n={n}");
        let v = json(&run(&scenario(), &["--json", "--set", &set]));
        assert_eq!(v["tasks"].as_u64(), Some(cholesky_tasks(t)), "n = {n}");
        assert_eq!(v["workload"]["n"], n);
        assert_eq!(v["overrides"], serde_json::json!([set]));
    }
    // Another kernel, by a bare word.
    let v = json(&run(
        &scenario(),
        &[
            "--json",
            "--set",
            "workload.kind=lu",
            "--set",
            "workload.n=1152",
        ],
    ));
    assert_eq!(v["tasks"].as_u64(), Some(lu_tasks(6)));
    let v = json(&run(
        &scenario(),
        &[
            "--json",
            "--set",
            "workload.kind=gemm",
            "--set",
            "workload.n=768",
        ],
    ));
    assert_eq!(v["tasks"].as_u64(), Some(4 * 4 * 4));
    // Run options: fewer workers, no prefetch, a quoted string.
    let v = json(&run(
        &scenario(),
        &[
            "--json",
            "--set",
            "run.ncpu=1",
            "--set",
            "run.ncuda=1",
            "--set",
            "run.prefetch=false",
            "--set",
            "scheduler.name=\"prio\"",
        ],
    ));
    assert_eq!(v["workers"].as_array().unwrap().len(), 2);
    assert_eq!(v["sched"], "prio");
    assert_eq!(v["run"]["prefetch"], false);
    // --sched and --seed win over the file.
    let v = json(&run(
        &scenario(),
        &["--json", "--sched", "prio", "--seed", "5"],
    ));
    assert_eq!(
        (v["sched"].as_str(), v["seed"].as_u64()),
        (Some("prio"), Some(5))
    );
}

/// `workload.priorities` picks the StarPU release whose example priorities the graph carries:
/// under a scheduler that takes priorities (ws) Cholesky's order moves with syrk's priority,
/// under one that does not (dmda) nothing moves; the report names the choice. A cluster's
/// distributed graph has StarPU-MPI 1.4's only: asking for 1.3's is refused (exit 2).
#[test]
fn priorities_choose_the_starpu_release() {
    let makespan = |sched: &str, prios: &str| {
        let set = format!("workload.priorities={prios}");
        let v = json(&run(
            &scenario(),
            &["--json", "--sched", sched, "--set", &set],
        ));
        assert_eq!(v["workload"]["priorities"], prios);
        v["makespan_s"].as_f64().unwrap()
    };
    assert_ne!(makespan("ws", "starpu-1.4"), makespan("ws", "starpu-1.3"));
    assert_eq!(
        makespan("dmda", "starpu-1.4"),
        makespan("dmda", "starpu-1.3")
    );
    let bad = run(&scenario(), &["--set", "workload.priorities=starpu-1.2"]);
    assert_eq!(bad.status.code(), Some(2));
    assert!(
        stderr(&bad).contains("field `workload.priorities`: unknown priorities `starpu-1.2`"),
        "{}",
        stderr(&bad)
    );
    let mpi = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/cholesky-mirage-mpi.toml");
    let refused = run(&mpi, &["--set", "workload.priorities=starpu-1.3"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(
        stderr(&refused).contains("field `workload.priorities`: priorities `starpu-1.3` apply"),
        "{}",
        stderr(&refused)
    );
}

// ---- bad input --------------------------------------------------------------------------

fn fixture_dir() -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("cli_run");
    std::fs::create_dir_all(&dir).expect("create fixture directory");
    dir
}

/// The test scenario with `from` replaced by `to`, written as fixture `name`; the machine path
/// is made absolute so the fixture can live anywhere.
fn broken(name: &str, from: &str, to: &str) -> (PathBuf, String) {
    let text = std::fs::read_to_string(scenario()).expect("read test scenario");
    let machine = data("tiny.toml");
    let text = text.replace(
        "machine = \"tiny.toml\"",
        &format!("machine = '{}'", machine.display()),
    );
    assert!(text.contains(from), "test scenario has no {from:?}");
    let text = text.replacen(from, to, 1);
    let path = fixture_dir().join(name);
    std::fs::write(&path, &text).expect("write fixture");
    (path, text)
}

fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|l| l.contains(needle))
        .unwrap_or_else(|| panic!("no line with {needle:?}"))
        + 1
}

/// Exit 2, nothing on stdout, no panic, and stderr containing every one of `words`.
fn assert_rejected(what: &str, out: &Output, words: &[&str]) {
    let err = stderr(out);
    let show = format!(
        "{what}: status {}\nstdout: {}\nstderr: {err}",
        out.status,
        stdout(out)
    );
    assert_eq!(out.status.code(), Some(2), "{show}");
    assert!(out.stdout.is_empty(), "{show}");
    assert!(!err.contains("panicked"), "{show}");
    for w in words {
        assert!(err.contains(w), "{show}\nexpected {w:?}");
    }
}

#[test]
fn unknown_scheduler() {
    let (path, text) = broken("unknown_sched.toml", "\"eager\"", "\"eagre\"");
    let line = format!("line {}", line_of(&text, "eagre"));
    assert_rejected(
        "unknown scheduler in the file",
        &run(&path, &[]),
        &[
            "unknown_sched.toml",
            &line,
            "`scheduler.name`",
            "eagre",
            "eager, prio, random",
        ],
    );
    assert_rejected(
        "--sched",
        &run(&scenario(), &["--sched", "dmdaa"]),
        &["--sched dmdaa", "`scheduler.name`", "eager, prio, random"],
    );
}

#[test]
fn unknown_workload_kind() {
    let (path, text) = broken("unknown_kind.toml", "\"cholesky\"", "\"qr\"");
    let line = format!("line {}", line_of(&text, "\"qr\""));
    assert_rejected(
        "unknown kind",
        &run(&path, &[]),
        &[
            "unknown_kind.toml",
            &line,
            "`workload.kind`",
            "qr",
            "cholesky",
        ],
    );
}

#[test]
fn unknown_field_in_the_file() {
    let (path, text) = broken("unknown_field.toml", "nb = 192", "nbb = 192");
    let line = format!("line {}", line_of(&text, "nbb"));
    assert_rejected(
        "misspelt field",
        &run(&path, &[]),
        &[
            "unknown_field.toml",
            &line,
            "`workload.nbb`",
            "unknown field",
        ],
    );
}

#[test]
fn set_to_an_unknown_field() {
    assert_rejected(
        "--set workload.nn=5",
        &run(&scenario(), &["--set", "workload.nn=5"]),
        &[
            "--set workload.nn=5",
            "`workload.nn`",
            "unknown field `nn`",
            "`n`",
            "`nb`",
            "`precision`",
            "`kind`",
        ],
    );
    assert_rejected(
        "--set to a new table",
        &run(&scenario(), &["--set", "sweep.n=5"]),
        &["--set sweep.n=5", "unknown field `sweep`"],
    );
    assert_rejected(
        "--set of a reserved scheduler option",
        &run(&scenario(), &["--set", "scheduler.alpha=0.5"]),
        &["--set scheduler.alpha=0.5", "`scheduler.alpha`", "eager"],
    );
    assert_rejected(
        "--set of the wrong type",
        &run(&scenario(), &["--set", "workload.n=lots"]),
        &["--set workload.n=lots", "`workload.n`", "integer"],
    );
}

#[test]
fn malformed_set() {
    assert_rejected(
        "--set without =",
        &run(&scenario(), &["--set", "workload.n"]),
        &["--set workload.n", "KEY=VALUE"],
    );
    assert_rejected(
        "--set with an empty segment",
        &run(&scenario(), &["--set", "workload..n=3"]),
        &["--set workload..n=3", "empty segment"],
    );
}

#[test]
fn missing_machine_file() {
    let (path, text) = broken(
        "missing_machine.toml",
        "machine = '",
        "machine = 'no/such/dir/",
    );
    let line = format!("line {}", line_of(&text, "machine = "));
    assert_rejected(
        "missing machine",
        &run(&path, &[]),
        &[
            "missing_machine.toml",
            &line,
            "`scenario.machine`",
            "no/such/dir",
        ],
    );
}

#[test]
fn tile_size_not_dividing_n() {
    let (path, text) = broken("ragged.toml", "nb = 192", "nb = 100");
    let line = format!("line {}", line_of(&text, "nb = 100"));
    assert_rejected(
        "ragged tiles",
        &run(&path, &[]),
        &["ragged.toml", &line, "`workload.nb`", "does not divide"],
    );
    assert_rejected(
        "ragged tiles by --set",
        &run(&scenario(), &["--set", "workload.nb=7"]),
        &["--set workload.nb=7", "`workload.nb`", "does not divide"],
    );
}

#[test]
fn too_many_workers() {
    assert_rejected(
        "ncpu",
        &run(&scenario(), &["--set", "run.ncpu=64"]),
        &["--set run.ncpu=64", "`run.ncpu`", "cores"],
    );
}

#[test]
fn not_a_toml_file() {
    let path = fixture_dir().join("not_toml.toml");
    std::fs::write(&path, "{\"scenario\": {\"name\": \"x\"}}\n").expect("write fixture");
    assert_rejected(
        "JSON scenario",
        &run(&path, &[]),
        &["not_toml.toml", "line 1"],
    );
    let path = fixture_dir().join("prose.toml");
    std::fs::write(&path, "[scenario]\nname = \"x\"\nthis is prose\n").expect("write fixture");
    assert_rejected("prose", &run(&path, &[]), &["prose.toml", "line 3"]);
    assert_rejected(
        "no such scenario",
        &run(&fixture_dir().join("absent.toml"), &[]),
        &["absent.toml", "cannot read"],
    );
}

#[test]
fn missing_table() {
    let path = fixture_dir().join("no_workload.toml");
    std::fs::write(
        &path,
        format!(
            "[scenario]\nname = \"x\"\nmachine = '{}'\n",
            data("tiny.toml").display()
        ),
    )
    .expect("write fixture");
    assert_rejected(
        "no [workload]",
        &run(&path, &[]),
        &["no_workload.toml", "line 1", "`workload`", "missing field"],
    );
    // --set can supply what is missing.
    let v = json(&run(
        &path,
        &[
            "--json",
            "--set",
            "workload.kind=cholesky",
            "--set",
            "workload.n=384",
            "--set",
            "workload.nb=192",
        ],
    ));
    assert_eq!(v["tasks"].as_u64(), Some(cholesky_tasks(2)));
}

/// `hetsim run` on the test scenario with `extra` arguments and stdout/stderr piped; a larger
/// run (n = 3840), so that output is still being written when the pipe closes.
fn spawn_piped(extra: &[&str]) -> std::process::Child {
    Command::new(env!("CARGO_BIN_EXE_hetsim"))
        .arg("run")
        .arg(scenario())
        .args(extra)
        .args(["--set", "workload.n=3840"])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn hetsim")
}

#[test]
fn closed_stdout_pipe_is_not_an_error() {
    for extra in [&[][..], &["--json"][..]] {
        let mut child = spawn_piped(extra);
        let mut first = String::new();
        {
            let out = child.stdout.take().expect("stdout");
            let mut reader = BufReader::new(out);
            reader.read_line(&mut first).expect("read a line");
            // Dropping the reader closes the pipe, as `head -1` does.
        }
        let out = child.wait_with_output().expect("wait");
        let err = stderr(&out);
        assert!(!first.is_empty());
        assert!(!err.contains("panicked"), "{err}");
        assert!(out.status.success(), "status {} stderr {err}", out.status);
    }
}

/// The pipe closed before hetsim writes anything (the reader exits at once): every write fails
/// with EPIPE, which must still be a clean exit.
#[test]
fn stdout_closed_before_the_first_write_is_not_an_error() {
    for extra in [&[][..], &["--json"][..]] {
        let mut child = spawn_piped(extra);
        drop(child.stdout.take());
        let out = child.wait_with_output().expect("wait");
        let err = stderr(&out);
        assert!(!err.contains("panicked"), "{err}");
        assert!(out.status.success(), "status {} stderr {err}", out.status);
    }
}

/// Every shipped scenario runs as it is (mirage and attila with their calibrated kernel
/// models, tsubame2-node with its GPUs' peak rate), twice with the same output.
#[test]
fn shipped_scenarios_run() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios");
    let mut entries: Vec<_> = std::fs::read_dir(&dir)
        .expect("read scenarios/")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "toml"))
        .collect();
    entries.sort();
    assert!(
        entries.len() >= 5,
        "expected the shipped scenarios in {}",
        dir.display()
    );
    for path in entries {
        let sc = hetsim::scenario::load(&path, &[])
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        let out = run(&path, &["--json"]);
        let v = json(&out);
        assert_eq!(v["scenario"].as_str(), Some(sc.name.as_str()));
        assert!(
            v["makespan_s"].as_f64().unwrap() > 0.0,
            "{}",
            path.display()
        );
        if sc.program.is_some() {
            // Program scenarios run one rank per GPU under the programs' default scheduler.
            assert_eq!(v["sched"].as_str(), Some("prio"), "{}", path.display());
        }
        let ran: u64 = v["workers"]
            .as_array()
            .unwrap()
            .iter()
            .map(|w| w["tasks"].as_u64().unwrap())
            .sum();
        assert_eq!(Some(ran), v["tasks"].as_u64(), "{}", path.display());
        assert_eq!(
            stdout(&out),
            ok(&run(&path, &["--json"])),
            "{}",
            path.display()
        );
    }
}

#[test]
fn trace_flags_write_the_three_traces() {
    let dir = fixture_dir().join("traces");
    std::fs::create_dir_all(&dir).unwrap();
    let (paje, chrome, gantt) = (dir.join("t.paje"), dir.join("t.json"), dir.join("t.svg"));
    let args = [
        "--quiet",
        "--paje",
        paje.to_str().unwrap(),
        "--chrome",
        chrome.to_str().unwrap(),
        "--gantt",
        gantt.to_str().unwrap(),
    ];
    let text = ok(&run(&scenario(), &args));
    // The traced run reports what the untraced run reports.
    assert_eq!(text, ok(&run(&scenario(), &["--quiet"])));
    let p = std::fs::read_to_string(&paje).unwrap();
    assert!(p.starts_with("%EventDef"), "Paje header");
    let c: Value = serde_json::from_str(&std::fs::read_to_string(&chrome).unwrap()).unwrap();
    let tasks = c["traceEvents"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|e| e["ph"] == "X" && e["cat"] == "task")
        .count() as u64;
    assert_eq!(
        tasks,
        cholesky_tasks(10),
        "one complete task event per task"
    );
    let g = std::fs::read_to_string(&gantt).unwrap();
    assert!(g.starts_with("<svg") || g.starts_with("<?xml"), "SVG");
}

#[test]
fn an_unwritable_trace_path_is_bad_input() {
    let out = run(&scenario(), &["--chrome", "/nonexistent-dir/t.json"]);
    assert_eq!(out.status.code(), Some(2));
    let err = stderr(&out);
    assert!(err.contains("/nonexistent-dir/t.json"), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

/// The exit status and the whole of stderr of a run that must fail on its input.
fn refused(args: &[&str]) -> String {
    let out = hetsim(args);
    assert_eq!(out.status.code(), Some(2), "{}", stderr(&out));
    stderr(&out)
}

/// A machine file given where a scenario is expected says so and points the way.
#[test]
fn a_machine_file_given_to_run_says_what_it_is() {
    assert_eq!(
        refused(&["run", "calibration/mirage.toml"]),
        "hetsim: error: calibration/mirage.toml: this is a machine file, not a scenario: a \
         scenario names a machine, a workload and a scheduler (docs/scenarios.md). Check it with \
         `hetsim check calibration/mirage.toml`, or run a scenario that uses it, e.g. one of \
         scenarios/*.toml with --set scenario.machine=calibration/mirage.toml\n"
    );
    assert!(
        refused(&["run", "calibration/example-cluster.toml"])
            .contains("this is a cluster file, not a scenario")
    );
}

/// Double precision on mirage, whose StarPU calibration has single-precision tiles only: one
/// short message listing the calibrated sizes as tiles (StarPU's chol_model_potrf.mirage has
/// entries at 4096, 409600, 1638400 and 3686400 bytes: 32², 320², 640² and 960² floats).
#[test]
fn an_uncalibrated_tile_size_lists_the_calibrated_ones_once() {
    let e = refused(&[
        "run",
        "scenarios/cholesky-mirage.toml",
        "--set",
        "workload.precision=double",
    ]);
    assert!(
        e.contains(
            "the models of codelet `chol_model_potrf` do not cover size 7372800 B (960×960 \
             double); they are calibrated for 4096 B (32×32 single), 409600 B (320×320 single), \
             1638400 B (640×640 single), 3686400 B (960×960 single)"
        ),
        "{e}"
    );
    assert!(e.contains("workload.nb = 960"), "{e}");
    assert_eq!(e.matches("calibrated for").count(), 1, "{e}");
    assert!(e.len() < 700, "{} characters: {e}", e.len());
}

/// A workload too big for the RAM is refused from its parameters: n = 374 400 in single
/// precision is 390·391/2 lower-triangle tiles of 3 686 400 B = 261.766 GiB; mirage has
/// 36 GiB, and 144·145/2 tiles (n = 138 240, 35.84 GiB) is the most that fits.
#[test]
fn a_workload_larger_than_ram_is_refused_before_its_graph_is_built() {
    assert_eq!(
        refused(&[
            "run",
            "scenarios/cholesky-mirage.toml",
            "--set",
            "workload.n=374400",
        ]),
        "hetsim: error: --set workload.n=374400: field `workload.n`: the workload's data \
         (261.766 GiB, n = 374400 in tiles of 960) does not fit in the RAM of machine `mirage` \
         (36.000 GiB); the largest order that fits is about n = 138240\n"
    );
}

/// A path given with --set is relative to the working directory, as on any command line; one in
/// the scenario file is relative to the file.
#[test]
fn a_machine_path_given_with_set_is_relative_to_the_working_directory() {
    let v = json(&hetsim(&[
        "run",
        "scenarios/cholesky-mirage.toml",
        "--set",
        "scenario.machine=calibration/attila.toml",
        "--json",
    ]));
    assert_eq!(v["machine"], "attila", "{v}");
}

/// One way to print quantities: `check` and `run` print mirage's GPU memory alike (5636554752 B
/// = 5.249 GiB), and the run's link table hides the PCI tree's internal links unless asked.
#[test]
fn check_and_run_agree_on_units_and_pci_links_are_shown_on_request() {
    let check = ok(&hetsim(&["check", "calibration/mirage.toml"]));
    assert!(check.contains("5.249 GiB"), "{check}");
    let text = ok(&hetsim(&["run", "scenarios/cholesky-mirage.toml"]));
    assert!(
        text.lines()
            .any(|l| l.starts_with("CUDA0 ") && l.contains("5.249 GiB")),
        "{text}"
    );
    assert!(!text.contains("GB "), "decimal GB in the report: {text}");
    assert!(!text.contains("PCI:"), "{text}");
    let hidden = text
        .lines()
        .find(|l| l.contains("links of the PCI tree not shown"))
        .expect("the report says links are hidden");
    let all = ok(&hetsim(&[
        "run",
        "scenarios/cholesky-mirage.toml",
        "--links",
        "all",
    ]));
    let pci = all.lines().filter(|l| l.starts_with("PCI:")).count();
    assert!(pci > 0, "{all}");
    assert_eq!(
        hidden,
        format!("({pci} links of the PCI tree not shown: `--links all` shows them)")
    );
}

/// A scenario's `[runtime]` (here through `--set`) replaces the machine file's settings for the
/// run: with free transfers no link carries a byte; asking for driver
/// cores on a machine with more GPUs than cores is refused with the field.
#[test]
fn runtime_overrides_reach_the_machine() {
    let s = Path::new(env!("CARGO_MANIFEST_DIR")).join("scenarios/cholesky-mirage.toml");
    let base = json(&run(&s, &["--json"]));
    let free = json(&run(
        &s,
        &["--json", "--set", "runtime.transfer_cost=false"],
    ));
    assert!(
        base["links"]
            .as_array()
            .unwrap()
            .iter()
            .any(|l| l["bytes"].as_f64().unwrap() > 0.0)
    );
    for l in free["links"].as_array().unwrap() {
        assert_eq!(l["bytes"].as_f64(), Some(0.0), "{l}");
    }
    let out = run(
        &s,
        &[
            "--set",
            "run.ncpu=0",
            "--set",
            "runtime.gpu_driver_cores=false",
            "--json",
        ],
    );
    assert!(out.status.success(), "{}", stderr(&out));
    let out = run(&s, &["--set", "runtime.push_cost=2"]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        stderr(&out).contains("--set runtime.push_cost=2: field `runtime.push_cost`"),
        "{}",
        stderr(&out)
    );
}

#[test]
fn reshare_delay_is_a_duration_reported_in_the_run() {
    let exact = json(&run(&scenario(), &["--json"]));
    assert_eq!(exact["run"]["reshare_delay_s"], 0.0);
    let zero = json(&run(
        &scenario(),
        &["--json", "--set", "run.reshare_delay=0"],
    ));
    assert_eq!(zero["makespan_s"], exact["makespan_s"]);
    let delayed = json(&run(
        &scenario(),
        &["--json", "--set", "run.reshare_delay=\"250 us\""],
    ));
    let delay_s = delayed["run"]["reshare_delay_s"]
        .as_f64()
        .expect("a number");
    assert!((delay_s - 250e-6).abs() < 1e-18, "{delay_s}");
    // The text report says the network is approximate; an exact run's does not.
    let text = ok(&run(
        &scenario(),
        &["--set", "run.reshare_delay=\"250 us\""],
    ));
    assert!(text.contains("(re-share delay 250.000 us)"), "{text}");
    assert!(!ok(&run(&scenario(), &[])).contains("re-share"));
    for (bad, words) in [
        ("5", &["run.reshare_delay", "no unit"][..]),
        ("\"-1 us\"", &["run.reshare_delay", "negative"][..]),
        ("\"soon\"", &["run.reshare_delay", "soon"][..]),
    ] {
        let set = format!("run.reshare_delay={bad}");
        assert_rejected(&set, &run(&scenario(), &["--set", &set]), words);
    }
}

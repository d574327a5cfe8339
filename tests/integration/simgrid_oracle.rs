//! Differential test of `hetsim net` against SimGrid 3.32 (the oracle).
//!
//! For seeds 1..=120, `scripts/oracle/gen_cases.py` writes random flow-set cases;
//! `scripts/oracle/run_simgrid.py` computes every flow's finish time with SimGrid, and
//! `hetsim net` must agree within 1e-9 relative on every flow:
//!
//! - `--sharing plain`   against SimGrid with `--latency-mode sleep` (plain max-min);
//! - `--sharing simgrid` against SimGrid with `--latency-mode native` (CM02, RTT-weighted).
//!
//! SimGrid comes from Debian's `python3-simgrid`, used through `/usr/bin/python3`. Without it the
//! tests are skipped with a message on stderr, except under CI (env `CI` set), where they fail:
//! `.ci/run` installs the package. See `scripts/oracle/README.md`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::io::{Read, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::thread;
use std::time::{Duration, Instant};

use serde_json::Value;

use crate::common::PYTHON;

const FIRST_SEED: u32 = 1;
const LAST_SEED: u32 = 120;
const RTOL: f64 = 1e-9;
const SIMGRID_JOBS: &str = "2";
const HETSIM_TIMEOUT: Duration = Duration::from_secs(60);

/// One pairing of a hetsim sharing model with a SimGrid latency mode.
struct Mode {
    sharing: &'static str,
    latency_mode: &'static str,
}

const PLAIN: Mode = Mode {
    sharing: "plain",
    latency_mode: "sleep",
};
const SIMGRID: Mode = Mode {
    sharing: "simgrid",
    latency_mode: "native",
};

#[test]
fn plain_sharing_matches_simgrid_sleep_mode() {
    differential(&PLAIN);
}

#[test]
fn simgrid_sharing_matches_simgrid_native_mode() {
    differential(&SIMGRID);
}

fn oracle_script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("scripts/oracle")
        .join(name)
}

/// True when Debian's python can import SimGrid; otherwise skip (locally) or fail (CI).
fn simgrid_ready() -> bool {
    let works = Command::new(PYTHON)
        .args(["-c", "import simgrid"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if works {
        return true;
    }
    let in_ci = std::env::var_os("CI").is_some_and(|v| !v.is_empty());
    assert!(
        !in_ci,
        "`{PYTHON} -c 'import simgrid'` fails under CI: .ci/run must install python3-simgrid \
         (apt-get install -y python3-simgrid)"
    );
    // Written to the stderr handle directly: libtest captures `eprintln!` of passing tests,
    // and a skip must be visible in a plain `cargo test`.
    let _ = writeln!(
        std::io::stderr(),
        "skipped: SimGrid not installed (apt-get install python3-simgrid); \
         the SimGrid oracle test did not run"
    );
    false
}

/// Run a helper script to completion; panic with its output if it fails.
fn run_script(what: &str, cmd: &mut Command) {
    let out = cmd
        .stdin(Stdio::null())
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}):\n--- stdout\n{}\n--- stderr\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

fn read_json(path: &Path) -> Value {
    let text = std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{}: bad JSON: {e}", path.display()))
}

/// Flow ids of a case, in file order.
fn flow_ids(case: &Value, path: &Path) -> Vec<String> {
    case["flows"]
        .as_array()
        .unwrap_or_else(|| panic!("{}: no flows array", path.display()))
        .iter()
        .map(|f| {
            f["id"]
                .as_str()
                .unwrap_or_else(|| panic!("{}: flow without string id", path.display()))
                .to_owned()
        })
        .collect()
}

/// A `{"flow": time}` object as a map; `None` if it is not one.
fn finish_times(v: &Value) -> Option<BTreeMap<String, f64>> {
    v.as_object()?
        .iter()
        .map(|(k, t)| Some((k.clone(), t.as_f64()?)))
        .collect()
}

struct Outcome {
    status: std::process::ExitStatus,
    stdout: String,
    stderr: String,
}

/// Run `hetsim net CASE --sharing MODE`, killing it if it runs longer than `HETSIM_TIMEOUT`.
fn run_hetsim(case: &Path, sharing: &str) -> Result<Outcome, String> {
    let mut child = Command::new(env!("CARGO_BIN_EXE_hetsim"))
        .arg("net")
        .arg(case)
        .args(["--sharing", sharing])
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot start hetsim: {e}"))?;
    let mut out_pipe = child.stdout.take().expect("piped stdout");
    let mut err_pipe = child.stderr.take().expect("piped stderr");
    let out_reader = thread::spawn(move || {
        let mut s = String::new();
        let _ = out_pipe.read_to_string(&mut s);
        s
    });
    let err_reader = thread::spawn(move || {
        let mut s = String::new();
        let _ = err_pipe.read_to_string(&mut s);
        s
    });
    let began = Instant::now();
    let status = loop {
        match child.try_wait() {
            Ok(Some(status)) => break status,
            Ok(None) if began.elapsed() > HETSIM_TIMEOUT => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("timed out after {HETSIM_TIMEOUT:?}"));
            }
            Ok(None) => thread::sleep(Duration::from_millis(2)),
            Err(e) => return Err(format!("wait failed: {e}")),
        }
    };
    Ok(Outcome {
        status,
        stdout: out_reader.join().unwrap_or_default(),
        stderr: err_reader.join().unwrap_or_default(),
    })
}

fn relative_error(expected: f64, got: f64) -> f64 {
    if expected == got {
        0.0
    } else {
        (got - expected).abs() / expected.abs().max(f64::MIN_POSITIVE)
    }
}

fn differential(mode: &Mode) {
    if !simgrid_ready() {
        return;
    }
    let work = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join("simgrid_oracle")
        .join(mode.sharing);
    if work.exists() {
        std::fs::remove_dir_all(&work).expect("clean the work directory");
    }
    let cases_dir = work.join("cases");
    let expected_dir = work.join(format!("simgrid_{}", mode.latency_mode));

    let t0 = Instant::now();
    run_script(
        "gen_cases.py",
        Command::new(PYTHON)
            .arg(oracle_script("gen_cases.py"))
            .arg("--seeds")
            .arg(format!("{FIRST_SEED}..{LAST_SEED}"))
            .arg("--out")
            .arg(&cases_dir),
    );
    let t1 = Instant::now();
    run_script(
        "run_simgrid.py --batch",
        Command::new(PYTHON)
            .arg(oracle_script("run_simgrid.py"))
            .arg("--batch")
            .arg(&cases_dir)
            .arg(&expected_dir)
            .args(["-j", SIMGRID_JOBS, "--latency-mode", mode.latency_mode]),
    );
    let t2 = Instant::now();

    let mut cases: Vec<PathBuf> = std::fs::read_dir(&cases_dir)
        .expect("list cases")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.extension().is_some_and(|x| x == "json"))
        .collect();
    cases.sort();
    let n_seeds = (LAST_SEED - FIRST_SEED + 1) as usize;
    assert_eq!(
        cases.len(),
        n_seeds,
        "gen_cases.py wrote the wrong number of cases"
    );

    let mut problems: Vec<(usize, String)> = Vec::new(); // (flows in case, message)
    let mut expected_total = 0usize;
    let mut compared = 0usize;
    let mut worst = (0.0f64, String::from("-"));

    for case_path in &cases {
        let name = case_path
            .file_name()
            .unwrap()
            .to_string_lossy()
            .into_owned();
        let ids = flow_ids(&read_json(case_path), case_path);
        expected_total += ids.len();
        let size = ids.len();

        let oracle_value = read_json(&expected_dir.join(&name));
        let oracle = finish_times(&oracle_value)
            .unwrap_or_else(|| panic!("SimGrid result for {name} is not a {{flow: time}} object"));
        let mut oracle_ids: Vec<&String> = oracle.keys().collect();
        let mut case_ids: Vec<&String> = ids.iter().collect();
        oracle_ids.sort();
        case_ids.sort();
        assert_eq!(
            oracle_ids, case_ids,
            "SimGrid result for {name} has other flows than the case"
        );

        let outcome = match run_hetsim(case_path, mode.sharing) {
            Ok(o) => o,
            Err(why) => {
                problems.push((size, format!("{name}: hetsim {why}")));
                continue;
            }
        };
        if !outcome.status.success() {
            problems.push((
                size,
                format!(
                    "{name}: hetsim exited with {}: {}",
                    outcome.status,
                    outcome.stderr.trim()
                ),
            ));
            continue;
        }
        let got = match serde_json::from_str::<Value>(&outcome.stdout)
            .ok()
            .as_ref()
            .and_then(finish_times)
        {
            Some(got) => got,
            None => {
                problems.push((
                    size,
                    format!(
                        "{name}: hetsim stdout is not a {{flow: time}} JSON object: {:?}",
                        outcome.stdout
                    ),
                ));
                continue;
            }
        };
        for id in got.keys().filter(|k| !oracle.contains_key(*k)) {
            problems.push((size, format!("{name}: flow {id}: not in the case")));
        }
        for (id, &want) in &oracle {
            let Some(&have) = got.get(id) else {
                problems.push((
                    size,
                    format!("{name}: flow {id}: missing from hetsim's output"),
                ));
                continue;
            };
            compared += 1;
            let err = relative_error(want, have);
            if err > worst.0 || err.is_nan() {
                worst = (err, format!("{name} flow {id}"));
            }
            if err > RTOL || err.is_nan() {
                problems.push((
                    size,
                    format!(
                        "{name}: flow {id}: expected {want:?} (SimGrid) got {have:?} (hetsim), \
                         rel err {err:.3e}"
                    ),
                ));
            }
        }
    }
    let t3 = Instant::now();

    let mut summary = String::new();
    let _ = write!(
        summary,
        "hetsim --sharing {} vs SimGrid --latency-mode {}: {} cases, {compared} of \
         {expected_total} flows compared, worst relative error {:.3e} ({}), {} problem(s); \
         times: gen {:.1}s, SimGrid {:.1}s, hetsim {:.1}s",
        mode.sharing,
        mode.latency_mode,
        cases.len(),
        worst.0,
        worst.1,
        problems.len(),
        (t1 - t0).as_secs_f64(),
        (t2 - t1).as_secs_f64(),
        (t3 - t2).as_secs_f64(),
    );
    // Shown even when the test passes (libtest only captures the print macros).
    let _ = writeln!(std::io::stderr(), "{summary}");
    if !problems.is_empty() {
        for (_, p) in &problems {
            eprintln!("MISMATCH {p}");
        }
        let (smallest, _) = problems.iter().min_by_key(|(n, _)| *n).unwrap();
        let first_small = problems.iter().find(|(n, _)| n == smallest).unwrap();
        panic!(
            "{summary}\nsmallest failing case has {smallest} flow(s): {}\n(all {} problems are \
             listed above; cases are in {})",
            first_small.1,
            problems.len(),
            cases_dir.display()
        );
    }
    assert!(
        expected_total >= 2 * n_seeds,
        "cases have suspiciously few flows ({expected_total})"
    );
    assert_eq!(
        compared, expected_total,
        "not every flow of every case was compared"
    );
}

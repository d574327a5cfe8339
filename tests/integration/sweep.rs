//! `hetsim sweep` and the `sweep` library: row count and order, a CSV identical whatever the
//! number of threads, the StarPU GFlop/s column, the plot, and bad arguments (exit status 2,
//! the offending `--vary` named).

use crate::common::hetsim;
use std::path::{Path, PathBuf};
use std::process::Output;

use hetsim::sweep::{self, Sweep, Vary};

fn scenario() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/run/cholesky-tiny.toml")
}

fn stderr(out: &Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

fn tmp(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sweep");
    std::fs::create_dir_all(&dir).unwrap();
    dir.join(name)
}

fn sweep_cli(jobs: &str, out: &Path, extra: &[&str]) -> Output {
    let sc = scenario();
    let mut args = vec![
        "sweep",
        sc.to_str().unwrap(),
        "--sched",
        "eager,dmda,ws,heft",
        "--vary",
        "workload.n=960,1920",
        "--seeds",
        "1..2",
        "-j",
        jobs,
        "-o",
        out.to_str().unwrap(),
        "--quiet",
    ];
    args.extend_from_slice(extra);
    hetsim(&args)
}

#[test]
fn csv_is_identical_whatever_the_number_of_threads() {
    let (a, b) = (tmp("j1.csv"), tmp("j2.csv"));
    for (j, out) in [("1", &a), ("2", &b)] {
        let o = sweep_cli(j, out, &[]);
        assert!(o.status.success(), "{}", stderr(&o));
    }
    let (ca, cb) = (
        std::fs::read_to_string(&a).unwrap(),
        std::fs::read_to_string(&b).unwrap(),
    );
    assert_eq!(ca, cb);
    let lines: Vec<&str> = ca.lines().collect();
    // 4 schedulers × 2 sizes × 2 seeds, plus the header.
    assert_eq!(lines.len(), 1 + 4 * 2 * 2);
    assert_eq!(
        lines[0],
        "sched,seed,workload.n,makespan_s,gflops,gflops_starpu,bytes_transferred,fetch_bytes,\
         prefetch_bytes,writeback_bytes,evictions,writebacks,tasks"
    );
    // Order: scheduler, then size, then seed.
    let keys: Vec<(String, String, String)> = lines[1..]
        .iter()
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            (f[0].into(), f[2].into(), f[1].into())
        })
        .collect();
    let mut want = Vec::new();
    for s in ["eager", "dmda", "ws", "heft"] {
        for n in ["960", "1920"] {
            for seed in ["1", "2"] {
                want.push((s.to_string(), n.to_string(), seed.to_string()));
            }
        }
    }
    assert_eq!(keys, want);
}

#[test]
fn library_rows_and_starpu_gflops() {
    let sw = Sweep {
        scenario: scenario(),
        scheds: vec!["dmdas".into(), "lws".into()],
        vary: vec![
            Vary::parse("workload.n=960,1920,2880").unwrap(),
            Vary::parse("run.prefetch=true,false").unwrap(),
        ],
        seeds: sweep::parse_seeds("4..=6").unwrap(),
        sets: Vec::new(),
    };
    let done = std::sync::atomic::AtomicUsize::new(0);
    let rows = sweep::run(&sw, 2, &|| {
        done.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    })
    .unwrap();
    assert_eq!(rows.len(), 2 * 3 * 2 * 3);
    assert_eq!(done.into_inner(), rows.len());
    assert_eq!(rows[0].values, ["960", "true"]);
    assert_eq!(rows[3].values, ["960", "false"]);
    assert_eq!(
        rows.iter().map(|r| r.seed).take(3).collect::<Vec<_>>(),
        [4, 5, 6]
    );
    for r in &rows {
        let n: f64 = r.values[0].parse().unwrap();
        let want = n.powi(3) / 3.0 / r.makespan_s / 1e9;
        let got = r.gflops_starpu.expect("Cholesky has the StarPU count");
        assert!((got - want).abs() <= 1e-9 * want);
        assert!(r.tasks > 0 && r.gflops > 0.0);
        if r.values[1] == "false" {
            assert_eq!(r.prefetch_bytes, 0.0, "{r:?}");
        }
    }
    // The plotted series: one per scheduler, three sizes each.
    let (xs, series) = sweep::series(&sw, &rows);
    assert_eq!(xs, ["960", "1920", "2880"]);
    assert_eq!(series.len(), 2);
    for s in &series {
        assert_eq!(s.points.len(), 3);
        for &(_, min, mean, max) in &s.points {
            // The mean of equal values may round one ulp past them.
            let ulp = 1e-12 * max.abs();
            assert!(min <= mean + ulp && mean <= max + ulp, "{min} {mean} {max}");
        }
    }
}

#[test]
fn plot_is_written() {
    let (csv, svg) = (tmp("plot.csv"), tmp("plot.svg"));
    let o = sweep_cli("2", &csv, &["--plot", svg.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let text = std::fs::read_to_string(&svg).unwrap();
    assert!(text.starts_with("<svg"), "{}", &text[..100.min(text.len())]);
    for s in ["eager", "dmda", "ws", "heft", "workload.n"] {
        assert!(text.contains(s), "{s} missing from the plot");
    }
}

#[test]
fn bad_vary_exits_2_naming_it() {
    let out = tmp("bad.csv");
    for (vary, want) in [
        ("workload.nn=960", "--vary workload.nn=960"),
        ("workload.n", "--vary workload.n"),
        ("workload.n=960,,1920", "--vary workload.n=960,,1920"),
        ("workload.n=abc", "--vary workload.n=abc"),
    ] {
        let sc = scenario();
        let o = hetsim(&[
            "sweep",
            sc.to_str().unwrap(),
            "--vary",
            vary,
            "-o",
            out.to_str().unwrap(),
            "--quiet",
        ]);
        assert_eq!(o.status.code(), Some(2), "{vary}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{vary}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"));
    }
}

#[test]
fn bad_sched_and_seeds_exit_2() {
    let out = tmp("bad2.csv");
    let sc = scenario();
    let sc = sc.to_str().unwrap();
    let o = hetsim(&[
        "sweep",
        sc,
        "--sched",
        "dmda,nope",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("nope"), "{}", stderr(&o));
    let o = hetsim(&["sweep", sc, "--seeds", "5..2", "-o", out.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("--seeds 5..2"), "{}", stderr(&o));
    // A scheduler option given to every run must be one each scheduler takes.
    let o = hetsim(&[
        "sweep",
        sc,
        "--sched",
        "dmdar,ws",
        "--set",
        "scheduler.ready_first=false",
        "-o",
        out.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(2), "{}", stderr(&o));
    assert!(stderr(&o).contains("ws"), "{}", stderr(&o));
}

/// A sweep ends with one line on stderr: runs, wall time, files written; `--quiet` drops it.
#[test]
fn a_sweep_ends_with_a_summary_line() {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join("sweep");
    std::fs::create_dir_all(&dir).unwrap();
    let csv = dir.join("summary.csv");
    let svg = dir.join("summary.svg");
    let run = |quiet: bool| {
        let mut args = vec![
            "sweep",
            "scenarios/cholesky-mirage.toml",
            "--sched",
            "eager,dmda",
            "--seeds",
            "1..2",
            "-o",
            csv.to_str().unwrap(),
            "--plot",
            svg.to_str().unwrap(),
        ];
        if quiet {
            args.push("--quiet");
        }
        let out = hetsim(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stderr).unwrap()
    };
    let err = run(false);
    let line = err.lines().last().unwrap_or_default();
    assert!(line.starts_with("sweep: 4 runs in "), "{err}");
    assert!(
        line.ends_with(&format!(
            " s, wrote {} and {}",
            csv.display(),
            svg.display()
        )),
        "{err}"
    );
    assert_eq!(run(true), "");
}

//! Kernel noise comes from the run's seed: the same seed gives the same run, another seed a
//! different schedule; without noise the seed does not matter to a deterministic policy.

use hetsim::machine;
use hetsim::runtime::{RunConfig, RunReport, kernels_for, simulate};
use hetsim::sched;
use hetsim::workload::{Precision, cholesky};

const MIRAGE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/calibration/mirage.toml");

fn run(noise: Option<&str>, seed: u64) -> RunReport {
    let text = std::fs::read_to_string(MIRAGE).unwrap();
    assert!(
        !text.contains("[perfmodels]"),
        "mirage.toml sets no noise of its own"
    );
    let text = match noise {
        Some(kind) => format!("[perfmodels]\nnoise = {{ kind = \"{kind}\" }}\n{text}"),
        None => text,
    };
    let m = machine::from_str(&text, MIRAGE).unwrap();
    let g = cholesky(10 * 960, 960, Precision::Single).unwrap();
    let k = kernels_for(&m).unwrap();
    let mut s = sched::by_name("eager", seed).unwrap();
    let config = RunConfig {
        seed,
        ..RunConfig::default()
    };
    simulate(&m, &g, k.as_ref(), s.as_mut(), &config).unwrap()
}

#[test]
fn noise_follows_the_seed() {
    for kind in ["normal", "lognormal"] {
        let a = run(Some(kind), 1);
        let b = run(Some(kind), 1);
        let c = run(Some(kind), 2);
        assert_eq!(a, b, "{kind}: same seed, same run");
        assert_ne!(
            a.makespan_s, c.makespan_s,
            "{kind}: another seed, other durations"
        );
        let per_worker = |r: &RunReport| r.workers.iter().map(|w| w.tasks).collect::<Vec<_>>();
        assert_ne!(
            per_worker(&a),
            per_worker(&c),
            "{kind}: another seed, another schedule"
        );
    }
}

#[test]
fn without_noise_the_seed_does_not_change_an_eager_run() {
    let a = run(None, 1);
    let c = run(None, 2);
    assert_eq!(a.makespan_s, c.makespan_s);
    assert_eq!(a.bytes_transferred, c.bytes_transferred);
}

/// `run.noise` switches noise on from a scenario or `--set`, whatever the machine file says:
/// the seed then changes the makespan, and the same seed gives the same bytes.
#[test]
fn run_noise_from_the_command_line_makes_seeds_matter() {
    let makespan = |seed: &str, noise: &str| -> (f64, String) {
        let out = crate::common::hetsim(&[
            "run",
            "scenarios/cholesky-mirage.toml",
            "--set",
            &format!("run.noise={noise}"),
            "--seed",
            seed,
            "--json",
        ]);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let v: serde_json::Value = serde_json::from_str(&text).unwrap();
        assert_eq!(v["run"]["noise"], noise);
        (v["makespan_s"].as_f64().unwrap(), text)
    };
    let (a, ta) = makespan("1", "lognormal");
    let (b, tb) = makespan("1", "lognormal");
    let (c, _) = makespan("2", "lognormal");
    assert_eq!(ta, tb, "same seed, same output");
    assert_eq!(a, b);
    assert_ne!(a, c, "another seed, another draw");
    let (d, _) = makespan("1", "none");
    let (e, _) = makespan("2", "none");
    assert_eq!(d, e, "eager without noise does not depend on the seed");

    let out = crate::common::hetsim(&[
        "run",
        "scenarios/cholesky-mirage.toml",
        "--set",
        "run.noise=gauss",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert_eq!(
        String::from_utf8_lossy(&out.stderr),
        "hetsim: error: --set run.noise=gauss: field `run.noise`: unknown noise `gauss`: \
         expected `none`, `normal` or `lognormal` (a histogram is set in the machine file's \
         [perfmodels])\n"
    );
}

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

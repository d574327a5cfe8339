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

/// Every history mean of mirage's models, codelet by codelet, in file order.
fn history_means(m: &machine::Machine) -> Vec<f64> {
    let mut out = Vec::new();
    for c in m.perf_models().codelets() {
        for d in c.models() {
            out.extend(d.history().entries().iter().map(|e| e.mean_s));
        }
    }
    out
}

/// `run.perturb_means` multiplies each calibrated duration by its own factor within the width:
/// every mean moves, none by more than 1 %, both ways, and the seed alone decides the factors.
#[test]
fn perturbed_means_stay_within_their_width_and_follow_the_seed() {
    let m = machine::from_str(&std::fs::read_to_string(MIRAGE).unwrap(), MIRAGE).unwrap();
    let perturbed = |seed: u64| {
        let mut p = m.clone();
        p.perturb_means(0.01, seed).unwrap();
        history_means(&p)
    };
    let calibrated = history_means(&m);
    let mut refused = m.clone();
    assert!(
        refused.perturb_means(1.0, 1).is_err(),
        "a factor could reach 0"
    );
    assert!(refused.perturb_means(f64::NAN, 1).is_err());
    assert!(calibrated.len() > 50, "mirage has many history entries");
    let a = perturbed(1);
    assert_eq!(a, perturbed(1), "same seed, same factors");
    assert_ne!(a, perturbed(2), "another seed, other factors");
    let ratios: Vec<f64> = a.iter().zip(&calibrated).map(|(p, c)| p / c).collect();
    assert!(
        ratios
            .iter()
            .all(|&r| (0.99..=1.01).contains(&r) && r != 1.0),
        "{ratios:?}"
    );
    let (lo, hi) = ratios
        .iter()
        .fold((f64::INFINITY, 0.0_f64), |(lo, hi), &r| {
            (lo.min(r), hi.max(r))
        });
    assert!(
        lo < 0.995 && hi > 1.005,
        "factors spread over the width: {lo} to {hi}"
    );
}

/// `run.jitter` and `run.perturb_means` from the command line: the seed decides the run, the
/// same seed gives the same bytes, a width of 0 changes nothing, and a width out of range, or
/// a jitter beside `run.noise`, is refused with exit status 2.
#[test]
fn jitter_and_perturbed_means_from_the_command_line() {
    let run = |sets: &[&str], seed: &str| -> serde_json::Value {
        let mut args = vec![
            "run",
            "scenarios/cholesky-mirage.toml",
            "--json",
            "--seed",
            seed,
        ];
        args.extend(["--sched", "dmda", "--set", "workload.n=9600"]);
        for s in sets {
            args.extend(["--set", s]);
        }
        let out = crate::common::hetsim(&args);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        serde_json::from_slice(&out.stdout).unwrap()
    };
    let plain = run(&[], "1");
    for key in ["run.jitter", "run.perturb_means"] {
        let zero = run(&[&format!("{key}=0")], "2");
        assert_eq!(zero["makespan_s"], plain["makespan_s"], "{key}=0");
        assert_eq!(zero["workers"], plain["workers"], "{key}=0");
        let set = format!("{key}=0.001");
        let a = run(&[&set], "1");
        assert_eq!(a, run(&[&set], "1"), "{key}: same seed, same output");
        assert_ne!(
            a["makespan_s"],
            run(&[&set], "2")["makespan_s"],
            "{key}: seeds differ"
        );
        let field = key.trim_start_matches("run.");
        assert_eq!(a["run"][field], 0.001);

        let out = crate::common::hetsim(&[
            "run",
            "scenarios/cholesky-mirage.toml",
            "--set",
            &format!("{key}=0.6"),
        ]);
        assert_eq!(out.status.code(), Some(2));
        assert_eq!(
            String::from_utf8_lossy(&out.stderr),
            format!(
                "hetsim: error: --set {key}=0.6: field `{key}`: expected a relative half-width \
                 between 0 and 0.5 (0.001 is ±0.1 %), found 0.6\n"
            )
        );
    }
    let out = crate::common::hetsim(&[
        "run",
        "scenarios/cholesky-mirage.toml",
        "--set",
        "run.noise=normal",
        "--set",
        "run.jitter=0.01",
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains(
            "field `run.jitter`: run.jitter and run.noise both set: the jitter is a noise of \
             its own; expected one of them"
        ),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

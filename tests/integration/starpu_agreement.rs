//! Agreement with StarPU 1.3.10: hetsim's makespans against StarPU-SimGrid's, cell by cell,
//! for StarPU's Cholesky example (and, not an issue target, its LU example). StarPU 1.4's
//! figures, every machine, application and scheduler, are checked in `starpu14_cells`.
//!
//! - StarPU 1.3.10, measured for hetsim (`docs/validation/starpu13-simgrid-cholesky.csv`,
//!   provenance in its header) on mirage, attila, idgraf and sirocco, each machine given
//!   StarPU 1.3's two different runtime settings (no push cost; 20 / 10 pending fetches /
//!   prefetches per pair).
//!
//! Targets: 5 % for dmda, dmdar, dmdas; 10 % for ws, lws and eager. StarPU-SimGrid has no
//! hwloc, so its lws is its ws: hetsim's lws runs with `scheduler.hwloc = false`, as a StarPU
//! user's would (checked on mirage only). Six cells (four of the dmda family at n = 9 600 and
//! 19 200, idgraf's ws at 19 200 and 38 400) miss their target (listed at the test). They are
//! held to the figure they have now plus a margin, so that a change making them worse fails
//! here too.

use crate::common::hetsim;
use std::path::{Path, PathBuf};

const SIZES: [u32; 3] = [9600, 19200, 38400];
const SCHEDS: [&str; 6] = ["dmda", "dmdar", "dmdas", "ws", "lws", "eager"];
/// StarPU's lws is its ws: on machines with `[affinity]` hetsim's lws is another policy.
const SCHEDS_NO_LWS: [&str; 5] = ["dmda", "dmdar", "dmdas", "ws", "eager"];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// StarPU's simulated makespan (ms) for `sched` at order `n` on `machine` from a validation
/// CSV (`app,machine,sched,ncpu,ncuda,n,nblocks,tile,sim_ms,gflops`).
fn starpu_ms(csv: &Path, machine: &str, sched: &str, n: u32) -> f64 {
    let text = std::fs::read_to_string(csv)
        .unwrap_or_else(|e| panic!("cannot read StarPU's figures {}: {e}", csv.display()));
    let sched = if sched == "lws" { "ws" } else { sched };
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| l.split(',').collect::<Vec<_>>())
        .find(|f| f.len() == 10 && f[1] == machine && f[2] == sched && f[5] == n.to_string())
        .and_then(|f| f[8].parse().ok())
        .unwrap_or_else(|| panic!("no {machine} {sched} n={n} row in {}", csv.display()))
}

fn hetsim_ms(app: &str, name: &str, sched: &str, n: u32, machine: Option<&Path>) -> f64 {
    let scenario = format!("scenarios/{app}-{name}.toml");
    let n_set = format!("workload.n={n}");
    let machine_set = machine.map(|m| format!("scenario.machine={}", m.display()));
    // StarPU 1.3's examples: Cholesky's syrk at the priority of a gemm with m = n.
    let mut args = vec![
        "run",
        &scenario,
        "--sched",
        sched,
        "--set",
        &n_set,
        "--set",
        "workload.priorities=starpu-1.3",
        "--json",
    ];
    if sched == "lws" {
        args.extend(["--set", "scheduler.hwloc=false"]);
    }
    if let Some(m) = &machine_set {
        args.extend(["--set", m]);
    }
    let out = hetsim(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    v["makespan_s"].as_f64().unwrap() * 1e3
}

/// One application compared at some orders, with a target per scheduler, against one CSV.
struct Study {
    app: &'static str,
    sizes: &'static [u32],
    target: fn(&str) -> f64,
    csv: PathBuf,
}

/// The targets: 5 % for the dmda family, 10 % for the others.
fn target_pct(sched: &str) -> f64 {
    if sched.starts_with("dmda") { 5.0 } else { 10.0 }
}

impl Study {
    fn cholesky(csv: PathBuf) -> Self {
        Study {
            app: "cholesky",
            sizes: &SIZES,
            target: target_pct,
            csv,
        }
    }

    /// Compare every cell of machine `name` (its file replaced by `machine` if given); `known`
    /// lists the (sched, n, bound %) cells that miss their target. Returns the sum of absolute
    /// differences, % and the number of cells.
    fn check(
        &self,
        name: &str,
        scheds: &[&str],
        machine: Option<&Path>,
        known: &[(&str, u32, f64)],
    ) -> (f64, f64) {
        let app = self.app;
        let mut sum = 0.0;
        let mut cells = 0.0;
        for &sched in scheds {
            for &n in self.sizes {
                let h = hetsim_ms(app, name, sched, n, machine);
                let s = starpu_ms(&self.csv, name, sched, n);
                let diff = 100.0 * (h - s) / s;
                let bound = known
                    .iter()
                    .find(|k| k.0 == sched && k.1 == n)
                    .map_or((self.target)(sched), |k| k.2);
                assert!(
                    diff.abs() <= bound,
                    "{app} {name} {sched} n={n}: hetsim {h:.1} ms, StarPU {s} ms ({diff:+.1} %, \
                     bound {bound} %)"
                );
                sum += diff.abs();
                cells += 1.0;
            }
        }
        (sum, cells)
    }

    /// [`Study::check`] on each machine StarPU 1.3.10 was run on, each given 1.3's settings;
    /// `cell` gives the schedulers and known misses of a machine. Returns the mean absolute
    /// difference, % and the number of cells.
    fn check_starpu13(
        &self,
        cell: impl Fn(&str) -> (&'static [&'static str], Known),
    ) -> (f64, f64) {
        let (mut sum, mut cells) = (0.0, 0.0);
        for name in ["mirage", "attila", "idgraf", "sirocco"] {
            let (scheds, known) = cell(name);
            let machine = starpu13_machine(self.app, name);
            let (s, c) = self.check(name, scheds, Some(&machine), known);
            sum += s;
            cells += c;
        }
        (sum / cells, cells)
    }
}

/// (sched, n, bound %) of the cells that miss their target.
type Known = &'static [(&'static str, u32, f64)];

/// A copy of `calibration/{name}.toml` with StarPU 1.3's runtime settings
/// (`docs/validation/starpu13-runtime.toml`: no push cost; 20 / 10 pending fetches /
/// prefetches per pair), as `scripts/validate-starpu-mirage.sh --starpu13` builds it. One file
/// per study (`app`): the tests run in parallel threads, and one must not read a copy another is
/// rewriting.
fn starpu13_machine(app: &str, name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("starpu13");
    std::fs::create_dir_all(&dir).unwrap();
    let machine = dir.join(format!("{app}-{name}.toml"));
    let read = |p: &str| std::fs::read_to_string(root().join(p)).unwrap();
    let text = read(&format!("calibration/{name}.toml"))
        + "\n"
        + &read("docs/validation/starpu13-runtime.toml");
    std::fs::write(&machine, text).unwrap();
    machine
}

#[test]
fn agrees_with_starpu_1_3_on_four_machines() {
    let study = Study::cholesky(root().join("docs/validation/starpu13-simgrid-cholesky.csv"));
    // The cells that miss, where a few µs decide which worker takes a task on the critical
    // path (docs/schedulers.md): at n = 9 600 mirage's dmdas (+7.4 %) and dmdar (+5.5 %); at
    // 19 200 attila's dmda (+5.2 %): cells that move with every µs-level rule (here the
    // drivers' passes over their requests, their seeing completions only in those passes, the
    // duplicate requests, the pushes' handle locks, the pushes of one date not seeing each
    // other and the allocations in pass order, docs/validation/README.md), not explained one
    // by one;
    // idgraf's ws at 19 200 (-14.7 %) and 38 400 (-11.2 %), where which thief SimGrid runs
    // first at a shared date decides who steals what (1.3.10's failed trylock leaves the thief
    // asleep until the next push, so one lost race weighs more than under 1.4).
    let (mean, cells) = study.check_starpu13(|name| match name {
        "mirage" => (&SCHEDS, &[("dmdas", 9600, 10.0), ("dmdar", 9600, 8.0)]),
        "idgraf" => (&SCHEDS_NO_LWS, &[("ws", 19200, 17.0), ("ws", 38400, 14.0)]),
        "attila" => (&SCHEDS_NO_LWS, &[("dmda", 19200, 8.0)]),
        _ => (&SCHEDS_NO_LWS, &[]),
    });
    eprintln!("StarPU 1.3.10 Cholesky: mean absolute difference {mean:.2} % over {cells} cells");
    assert!(
        mean <= 3.0,
        "mean absolute difference {mean:.2} % over {cells} cells"
    );
}

/// StarPU 1.3.10's LU example (`docs/validation/starpu13-simgrid-lu.csv`: dmda, dmdar, eager at
/// n = 9 600 and 19 200). Not an issue target: held to 12 % per cell and 4.5 % on average, the
/// figures it has had with some margin (the worst cell was idgraf's dmda at 19 200, +11.1 %,
/// and the mean 4.0 %; with the drivers' request passes every cell is within 9 % and the mean
/// 3.0 %; since the drivers see completions only in those passes, the worst is mirage's eager
/// at 19 200, +10.5 %, and the mean 3.0 %).
#[test]
fn lu_agrees_with_starpu_1_3_on_four_machines() {
    let study = Study {
        app: "lu",
        sizes: &[9600, 19200],
        target: |_| 12.0,
        csv: root().join("docs/validation/starpu13-simgrid-lu.csv"),
    };
    let (mean, cells) = study.check_starpu13(|_| (&["dmda", "dmdar", "eager"], &[]));
    eprintln!("StarPU 1.3.10 LU: mean absolute difference {mean:.2} % over {cells} cells");
    assert!(
        mean <= 4.5,
        "mean absolute difference {mean:.2} % over {cells} cells"
    );
}

//! Agreement with StarPU 1.4.12 in SimGrid mode, every cell of
//! `docs/validation/starpu14-simgrid.csv` (StarPU's Cholesky, LU and GEMM examples on mirage,
//! attila, sirocco, idgraf and gemini under every scheduler, with the tile sizes, worker-count and
//! runtime-cost variants listed there).
//!
//! Each cell runs the bundled scenario of its application with the machine, scheduler, size and
//! tile of the row, StarPU's worker counts (the `ncpu`/`ncuda` columns: `starpu_machine_display`'s
//! under the same environment), and the variant's settings as a StarPU user would give them:
//! `STARPU_SIMGRID_TRANSFER_COST=0` is `runtime.transfer_cost = false`, every cost off is
//! `run.runtime_costs = false` with it; lws runs with `hwloc = false`, as a SimGrid build of
//! StarPU has no hwloc. random compares the mean over StarPU's seeds (twenty) with
//! hetsim's mean over as many.
//!
//! Targets: 5 % for dmda, dmdar, dmdas; 10 % for the others. The cells that miss are listed in
//! `docs/validation/starpu14-gaps.csv`, each with the rule or overhead that explains it (or
//! "unexplained"), and held to a bound there, so that a change making them worse fails; a listed
//! cell that comes back into its target fails too, so the list stays true. The mean absolute
//! difference is held to its value today plus half a point (the target, 2 %, is not met).
//!
//! The comparison table (with StarPU's and hetsim's wall time per cell) is written to
//! `target/tmp/starpu14-agreement.csv` and `.md`; `scripts/starpu14-agreement.sh` copies them to
//! `docs/validation/`.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::path::PathBuf;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

use hetsim_testkit::repo;

/// (app, machine, sched, n, tile, variant): one cell of the StarPU table.
type Key = (String, String, String, u32, u32, String);

/// One cell: StarPU's figures (the mean over seeds for random) and how to run it.
struct Cell {
    key: Key,
    ncpu: u32,
    ncuda: u32,
    seeds: usize,
    starpu_ms: f64,
    starpu_wall_s: f64,
}

/// A cell's result.
struct Outcome {
    hetsim_ms: f64,
    hetsim_wall_s: f64,
}

/// A listed miss: its bound (%) and why.
struct Gap {
    bound_pct: f64,
    why: String,
}

fn target_pct(sched: &str) -> f64 {
    if sched.starts_with("dmda") { 5.0 } else { 10.0 }
}

fn read_csv(path: &str) -> Vec<BTreeMap<String, String>> {
    let text = std::fs::read_to_string(repo(path)).unwrap();
    let body: String = text
        .lines()
        .filter(|l| !l.starts_with('#'))
        .map(|l| format!("{l}\n"))
        .collect();
    let mut r = csv::Reader::from_reader(body.as_bytes());
    let headers = r.headers().unwrap().clone();
    r.records()
        .map(|rec| {
            let rec = rec.unwrap();
            headers
                .iter()
                .zip(rec.iter())
                .map(|(h, v)| (h.to_string(), v.to_string()))
                .collect()
        })
        .collect()
}

fn key_of(row: &BTreeMap<String, String>) -> Key {
    (
        row["app"].clone(),
        row["machine"].clone(),
        row["sched"].clone(),
        row["n"].parse().unwrap(),
        row["tile"].parse().unwrap(),
        row["variant"].clone(),
    )
}

/// The cells of StarPU's table, seeds of one cell merged, in file order.
fn cells() -> Vec<Cell> {
    let mut out: Vec<Cell> = Vec::new();
    let mut index: BTreeMap<Key, usize> = BTreeMap::new();
    let mut sums: Vec<(f64, f64)> = Vec::new();
    for row in read_csv("docs/validation/starpu14-simgrid.csv") {
        let key = key_of(&row);
        let ms: f64 = row["sim_ms"].parse().unwrap();
        let wall: f64 = row["starpu_wall_s"].parse().unwrap();
        let i = *index.entry(key.clone()).or_insert_with(|| {
            out.push(Cell {
                key,
                ncpu: row["ncpu"].parse().unwrap(),
                ncuda: row["ncuda"].parse().unwrap(),
                seeds: 0,
                starpu_ms: 0.0,
                starpu_wall_s: 0.0,
            });
            sums.push((0.0, 0.0));
            out.len() - 1
        });
        out[i].seeds += 1;
        sums[i].0 += ms;
        sums[i].1 += wall;
    }
    for (c, (ms, wall)) in out.iter_mut().zip(sums) {
        c.starpu_ms = ms / c.seeds as f64;
        c.starpu_wall_s = wall / c.seeds as f64;
    }
    out
}

fn gaps() -> BTreeMap<Key, Gap> {
    read_csv("docs/validation/starpu14-gaps.csv")
        .into_iter()
        .map(|row| {
            let gap = Gap {
                bound_pct: row["bound_pct"].parse().unwrap(),
                why: row["why"].clone(),
            };
            (key_of(&row), gap)
        })
        .collect()
}

/// Per measured cell, the lowest and highest of StarPU's figures with its sampled calibration
/// and with each perturbed one (`docs/validation/starpu14-sensitivity.csv`, written by
/// `scripts/starpu14-sensitivity.sh`), in ms.
fn starpu_ranges() -> BTreeMap<Key, (f64, f64)> {
    read_csv("docs/validation/starpu14-sensitivity.csv")
        .into_iter()
        .map(|row| {
            let figures: Vec<f64> = std::iter::once(row["starpu_ms"].as_str())
                .chain(row["starpu_perturbed_ms"].split(';'))
                .map(|v| v.parse().unwrap())
                .collect();
            let lo = figures.iter().copied().fold(f64::INFINITY, f64::min);
            let hi = figures.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            (key_of(&row), (lo, hi))
        })
        .collect()
}

/// A gap explained as `sensitive`: hetsim's figure is one StarPU itself gives when its
/// calibration moves by the measured width. StarPU prints whole milliseconds, hence the half
/// millisecond either side.
fn within_starpu_range(range: Option<&(f64, f64)>, hetsim_ms: f64) -> bool {
    range.is_some_and(|&(lo, hi)| lo - 0.5 <= hetsim_ms && hetsim_ms <= hi + 0.5)
}

/// The `hetsim run` arguments of a cell with `seed`.
fn args(c: &Cell, seed: usize) -> Vec<String> {
    let (app, machine, sched, n, tile, variant) = &c.key;
    let scenario = match app.as_str() {
        "chol" => "cholesky",
        other => other,
    };
    let mut a: Vec<String> = vec![
        "run".into(),
        format!("scenarios/{scenario}-mirage.toml"),
        "--json".into(),
        "--sched".into(),
        sched.clone(),
        "--seed".into(),
        seed.to_string(),
    ];
    let mut set = |kv: String| a.extend(["--set".to_string(), kv]);
    set(format!("scenario.machine=calibration/{machine}.toml"));
    set(format!("workload.n={n}"));
    set(format!("workload.nb={tile}"));
    set(format!("run.ncpu={}", c.ncpu));
    set(format!("run.ncuda={}", c.ncuda));
    if sched == "lws" {
        // StarPU-SimGrid has no hwloc: its lws steals round-robin, as ws.
        set("scheduler.hwloc=false".into());
    }
    match variant.as_str() {
        "default" | "cpu-only" | "gpu-only" => {}
        "transfers-off" => set("runtime.transfer_cost=false".into()),
        "costs-off" => {
            set("run.runtime_costs=false".into());
            set("runtime.transfer_cost=false".into());
        }
        other => panic!("unknown variant {other} in docs/validation/starpu14-simgrid.csv"),
    }
    a
}

fn run(c: &Cell) -> Outcome {
    let (mut ms, mut wall) = (0.0, 0.0);
    for seed in 1..=c.seeds {
        let a = args(c, seed);
        let a: Vec<&str> = a.iter().map(String::as_str).collect();
        let t0 = Instant::now();
        let out = crate::common::hetsim(&a);
        wall += t0.elapsed().as_secs_f64();
        assert!(
            out.status.success(),
            "{:?}: {}",
            c.key,
            String::from_utf8_lossy(&out.stderr)
        );
        let v: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
        ms += v["makespan_s"].as_f64().unwrap() * 1e3;
    }
    Outcome {
        hetsim_ms: ms / c.seeds as f64,
        hetsim_wall_s: wall / c.seeds as f64,
    }
}

/// Every cell, on two threads (one when measuring wall times for the table, so that runs do not
/// share the cores).
fn run_all(cells: &[Cell]) -> Vec<Outcome> {
    let threads = if std::env::var_os("HETSIM_AGREEMENT_TIMING").is_some() {
        1
    } else {
        2
    };
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<Option<Outcome>>> = Mutex::new((0..cells.len()).map(|_| None).collect());
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    if i >= cells.len() {
                        break;
                    }
                    let o = run(&cells[i]);
                    results.lock().unwrap()[i] = Some(o);
                }
            });
        }
    });
    results
        .into_inner()
        .unwrap()
        .into_iter()
        .map(|o| o.expect("every cell ran"))
        .collect()
}

fn diff_pct(c: &Cell, o: &Outcome) -> f64 {
    100.0 * (o.hetsim_ms - c.starpu_ms) / c.starpu_ms
}

/// One app × machine × scheduler line of the summary.
#[derive(Default)]
struct Summary {
    cells: u32,
    in_target: u32,
    sum_abs_pct: f64,
    worst_pct: f64,
    starpu_wall_s: f64,
    hetsim_wall_s: f64,
}

/// The per-cell table (CSV) and its summary per app × machine × scheduler (Markdown).
fn write_table(cells: &[Cell], outcomes: &[Outcome], gaps: &BTreeMap<Key, Gap>) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let mut w = csv::Writer::from_path(dir.join("starpu14-agreement.csv")).unwrap();
    w.write_record([
        "app",
        "machine",
        "sched",
        "n",
        "tile",
        "variant",
        "seeds",
        "starpu_ms",
        "hetsim_ms",
        "diff_pct",
        "target_pct",
        "in_target",
        "why",
        "starpu_wall_s",
        "hetsim_wall_s",
    ])
    .unwrap();
    let mut groups: BTreeMap<(String, String, String), Summary> = BTreeMap::new();
    for (c, o) in cells.iter().zip(outcomes) {
        let (app, machine, sched, n, tile, variant) = &c.key;
        let d = diff_pct(c, o);
        let ok = d.abs() <= target_pct(sched);
        let why = gaps.get(&c.key).map_or("", |g| g.why.as_str());
        w.write_record([
            app.clone(),
            machine.clone(),
            sched.clone(),
            n.to_string(),
            tile.to_string(),
            variant.clone(),
            c.seeds.to_string(),
            format!("{:.1}", c.starpu_ms),
            format!("{:.1}", o.hetsim_ms),
            format!("{d:+.2}"),
            format!("{}", target_pct(sched)),
            ok.to_string(),
            why.to_string(),
            format!("{:.2}", c.starpu_wall_s),
            format!("{:.3}", o.hetsim_wall_s),
        ])
        .unwrap();
        let g = groups
            .entry((app.clone(), machine.clone(), sched.clone()))
            .or_default();
        g.cells += 1;
        g.in_target += u32::from(ok);
        g.sum_abs_pct += d.abs();
        if d.abs() > g.worst_pct.abs() {
            g.worst_pct = d;
        }
        g.starpu_wall_s += c.starpu_wall_s * c.seeds as f64;
        g.hetsim_wall_s += o.hetsim_wall_s * c.seeds as f64;
    }
    w.flush().unwrap();
    let mut md = String::from(
        "| app | machine | sched | cells in target | mean abs. diff. % | worst diff. % | \
         StarPU wall s | hetsim wall s | ratio |\n|---|---|---|---:|---:|---:|---:|---:|---:|\n",
    );
    for ((app, machine, sched), g) in &groups {
        let _ = writeln!(
            md,
            "| {app} | {machine} | {sched} | {}/{} | {:.1} | {:+.1} | {:.1} | {:.2} | {:.0} |",
            g.in_target,
            g.cells,
            g.sum_abs_pct / f64::from(g.cells),
            g.worst_pct,
            g.starpu_wall_s,
            g.hetsim_wall_s,
            g.starpu_wall_s / g.hetsim_wall_s
        );
    }
    std::fs::write(dir.join("starpu14-agreement.md"), md).unwrap();
}

#[test]
fn every_cell_of_starpu_1_4_within_target_or_explained() {
    let cells = cells();
    let gaps = gaps();
    let ranges = starpu_ranges();
    for k in ranges.keys() {
        assert!(
            cells.iter().any(|c| &c.key == k),
            "docs/validation/starpu14-sensitivity.csv measures {k:?}, which is not a cell of \
             starpu14-simgrid.csv"
        );
    }
    for k in gaps.keys() {
        assert!(
            cells.iter().any(|c| &c.key == k),
            "docs/validation/starpu14-gaps.csv lists {k:?}, which is not a cell of \
             starpu14-simgrid.csv"
        );
    }
    let outcomes = run_all(&cells);
    write_table(&cells, &outcomes, &gaps);
    let mut failures = Vec::new();
    let mut sum = 0.0;
    for (c, o) in cells.iter().zip(&outcomes) {
        let d = diff_pct(c, o);
        sum += d.abs();
        let target = target_pct(&c.key.2);
        let line = format!(
            "{:?}: hetsim {:.1} ms, StarPU {:.1} ms ({d:+.1} %",
            c.key, o.hetsim_ms, c.starpu_ms
        );
        match gaps.get(&c.key) {
            None if d.abs() > target => {
                failures.push(format!("{line}, target {target} %, not in the gaps list)"));
            }
            Some(g) if d.abs() > g.bound_pct => {
                failures.push(format!("{line}, listed gap held to {} %)", g.bound_pct));
            }
            Some(_) if d.abs() <= target => failures.push(format!(
                "{line}): within its {target} % target now; take it off \
                 docs/validation/starpu14-gaps.csv"
            )),
            Some(g)
                if g.why == "sensitive"
                    && !within_starpu_range(ranges.get(&c.key), o.hetsim_ms) =>
            {
                failures.push(format!(
                    "{line}): listed as sensitive, but outside StarPU's own range {:?} in \
                     docs/validation/starpu14-sensitivity.csv",
                    ranges.get(&c.key)
                ));
            }
            _ => {}
        }
    }
    assert!(
        failures.is_empty(),
        "{} cells:\n{}",
        failures.len(),
        failures.join("\n")
    );
    let mean = sum / cells.len() as f64;
    assert!(
        mean <= MEAN_BOUND_PCT,
        "mean absolute difference {mean:.2} % over {} cells",
        cells.len()
    );
}

/// The mean absolute difference over every cell today plus half a point.
const MEAN_BOUND_PCT: f64 = 3.5;

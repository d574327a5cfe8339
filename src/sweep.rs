//! Parameter sweeps: one scenario run over the cross-product of schedulers, varied scenario
//! values and seeds, in parallel, with one [`Row`] of figures per run (`hetsim sweep`).
//!
//! ```no_run
//! use hetsim::sweep::{Sweep, Vary};
//! let sweep = Sweep {
//!     scenario: "scenarios/cholesky-mirage.toml".into(),
//!     scheds: vec!["dmda".into(), "dmdas".into()],
//!     vary: vec![Vary::parse("workload.n=9600,19200").unwrap()],
//!     seeds: vec![1, 2],
//!     sets: Vec::new(),
//! };
//! let rows = sweep.run(2, &|| {}).unwrap();
//! assert_eq!(rows.len(), 2 * 2 * 2);
//! print!("{}", hetsim::sweep::csv(&sweep, &rows));
//! ```
//!
//! Each run is the scenario with, applied in this order, every `--set`, the run's value of
//! each `--vary`, its scheduler (`scheduler.name`) and its seed (`run.seed`). Rows come in a
//! fixed order — scheduler (as given), then the varied values (first `--vary` outermost, values
//! as given), then seed — whatever the number of threads, and every run is deterministic, so
//! the CSV is identical for any `-j`.

use std::io::Write;
use std::path::{Path, PathBuf};

use rayon::prelude::*;

use crate::error::{Error, InputError};
use crate::scenario::{self, Override, Scenario};
use crate::workload::Kernel;

/// One `--vary KEY=V1,V2,...`: a dotted scenario path and the values it takes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Vary {
    /// Dotted path, e.g. `workload.n`.
    pub key: String,
    /// Values, as TOML value text (bare words are strings), in the order given.
    pub values: Vec<String>,
}

impl Vary {
    /// Parse `KEY=V1,V2,...`. The key is checked against the scenario when the sweep runs.
    pub fn parse(arg: &str) -> Result<Vary, InputError> {
        let label = format!("--vary {arg}");
        let Some((key, values)) = arg.split_once('=') else {
            return Err(InputError::new(format!(
                "{label}: expected KEY=V1,V2,..., with KEY a dotted path such as `workload.n` \
                 (for example --vary workload.n=9600,19200)"
            )));
        };
        let key = key.trim();
        // Check the key's syntax the way --set does.
        Override::parse_set(&format!("{key}=0")).map_err(|e| {
            let why = e.message.strip_prefix(&format!("--set {key}=0: "));
            InputError::new(format!("{label}: {}", why.unwrap_or(&e.message)))
        })?;
        let values: Vec<String> = values.split(',').map(|v| v.trim().to_string()).collect();
        if values.iter().any(String::is_empty) {
            return Err(InputError::new(format!(
                "{label}: empty value in the list: expected KEY=V1,V2,... with no empty item"
            )));
        }
        Ok(Vary {
            key: key.to_string(),
            values,
        })
    }
}

/// Parse `--seeds`: `A..B` (inclusive: `1..5` is five seeds), `A..=B`, a comma-separated list
/// (`1,4,9`) or one seed.
pub fn parse_seeds(arg: &str) -> Result<Vec<u64>, InputError> {
    let bad = |why: &str| {
        InputError::new(format!(
            "--seeds {arg}: {why}: expected A..B (inclusive, e.g. 1..5), a list such as 1,4,9, \
             or one seed"
        ))
    };
    let num = |s: &str| {
        s.trim()
            .parse::<u64>()
            .map_err(|_| bad("not a seed number"))
    };
    let arg = arg.trim();
    if let Some((a, b)) = arg.split_once("..") {
        let (a, b) = (num(a)?, num(b.strip_prefix('=').unwrap_or(b))?);
        if a > b {
            return Err(bad("empty range"));
        }
        if b - a >= 1_000_000 {
            return Err(bad("more than a million seeds"));
        }
        return Ok((a..=b).collect());
    }
    arg.split(',').map(num).collect()
}

/// A sweep: what to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Sweep {
    /// The scenario file.
    pub scenario: PathBuf,
    /// Schedulers, in output order; empty: the scenario's own.
    pub scheds: Vec<String>,
    /// Varied values; the first one is the plot's x axis.
    pub vary: Vec<Vary>,
    /// Seeds; empty: the scenario's own.
    pub seeds: Vec<u64>,
    /// `--set` overrides applied to every run, before the varied values.
    pub sets: Vec<Override>,
}

/// One run of a sweep.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Point {
    /// Scheduler, or `None` for the scenario's own.
    pub sched: Option<String>,
    /// One value per [`Sweep::vary`], in order.
    pub values: Vec<String>,
    /// Seed, or `None` for the scenario's own.
    pub seed: Option<u64>,
}

/// The figures of one run: one CSV line.
#[derive(Debug, Clone, PartialEq)]
pub struct Row {
    /// Scheduler.
    pub sched: String,
    /// Seed.
    pub seed: u64,
    /// The varied values, as given.
    pub values: Vec<String>,
    /// Date the last task ended, s.
    pub makespan_s: f64,
    /// Graph flops / makespan, GFlop/s.
    pub gflops: f64,
    /// For Cholesky, n³/3 / makespan in GFlop/s, as StarPU's example counts.
    pub gflops_starpu: Option<f64>,
    /// All bytes moved between memory nodes.
    pub bytes_transferred: f64,
    /// Bytes fetched for popped tasks.
    pub fetch_bytes: f64,
    /// Bytes prefetched.
    pub prefetch_bytes: f64,
    /// Bytes written back to RAM.
    pub writeback_bytes: f64,
    /// Replicas evicted.
    pub evictions: u64,
    /// Write-backs.
    pub writebacks: u64,
    /// Tasks run.
    pub tasks: u64,
}

impl Sweep {
    /// Every run, in output order: scheduler, then varied values (first outermost), then seed.
    pub fn points(&self) -> Vec<Point> {
        let scheds: Vec<Option<String>> = if self.scheds.is_empty() {
            vec![None]
        } else {
            self.scheds.iter().cloned().map(Some).collect()
        };
        let seeds: Vec<Option<u64>> = if self.seeds.is_empty() {
            vec![None]
        } else {
            self.seeds.iter().copied().map(Some).collect()
        };
        let mut combos: Vec<Vec<String>> = vec![Vec::new()];
        for v in &self.vary {
            combos = combos
                .into_iter()
                .flat_map(|c| {
                    v.values.iter().map(move |x| {
                        let mut c = c.clone();
                        c.push(x.clone());
                        c
                    })
                })
                .collect();
        }
        let mut points = Vec::new();
        for sched in &scheds {
            for values in &combos {
                for seed in &seeds {
                    points.push(Point {
                        sched: sched.clone(),
                        values: values.clone(),
                        seed: *seed,
                    });
                }
            }
        }
        points
    }

    /// The overrides of one run: `--set`s, varied values, scheduler, seed.
    pub fn overrides(&self, p: &Point) -> Vec<Override> {
        let mut ovs = self.sets.clone();
        for (v, x) in self.vary.iter().zip(&p.values) {
            let mut ov = Override::parse_set(&format!("{}={x}", v.key))
                .expect("keys are checked by Vary::parse");
            ov.label = format!("--vary {}={x}", v.key);
            ovs.push(ov);
        }
        if let Some(s) = &p.sched {
            ovs.push(Override::string(
                format!("--sched {s}"),
                "scheduler.name",
                s.clone(),
            ));
        }
        if let Some(seed) = p.seed {
            ovs.push(Override::integer(
                format!("--seeds {seed}"),
                "run.seed",
                seed,
            ));
        }
        ovs
    }

    /// The scenario of one run.
    pub fn scenario_for(&self, p: &Point) -> Result<Scenario, InputError> {
        scenario::load(&self.scenario, &self.overrides(p))
    }

    /// Load the scenario of every run (not the machine), so that a bad `--vary`, `--set` or
    /// `--sched` fails before anything runs, with the first offending argument named.
    pub fn check(&self) -> Result<(), InputError> {
        if self.vary.iter().any(|v| v.values.is_empty()) {
            return Err(InputError::new("--vary with no value"));
        }
        for p in self.points() {
            self.scenario_for(&p)?;
        }
        Ok(())
    }

    /// Check, then run every point on `threads` threads (0: as many as cores), calling
    /// `progress` after each run. Rows are in [`Sweep::points`] order. A failed run fails the
    /// sweep, its error naming the run.
    pub fn run(&self, threads: usize, progress: &(dyn Fn() + Sync)) -> Result<Vec<Row>, Error> {
        self.check()?;
        let points = self.points();
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .map_err(|e| Error::Internal(format!("cannot start the thread pool: {e}")))?;
        let results: Vec<Result<Row, Error>> = pool.install(|| {
            points
                .par_iter()
                .map(|p| {
                    let r = self.run_point(p);
                    progress();
                    r
                })
                .collect()
        });
        results.into_iter().collect()
    }

    fn run_point(&self, p: &Point) -> Result<Row, Error> {
        let sc = self.scenario_for(p)?;
        let located = |e: Error| match e {
            Error::Input(mut e) => {
                e.message = format!("{}: {}", self.describe(p, &sc), e.message);
                Error::Input(e)
            }
            Error::Internal(m) => Error::Internal(format!("{}: {m}", self.describe(p, &sc))),
        };
        if let Some(prog) = &sc.program {
            // Program scenarios: owner computes, no scheduler; bytes are the network's (NIC
            // and intra-node flows), tasks are the program's operations.
            let (cluster, report) = sc.run_program(true).map_err(located)?;
            let flops = prog.generator().counted_flops_on(&cluster);
            return Ok(Row {
                sched: "owner-computes".into(),
                seed: sc.run.seed,
                values: p.values.clone(),
                makespan_s: report.makespan_s,
                gflops: if report.makespan_s > 0.0 {
                    flops / report.makespan_s / 1e9
                } else {
                    0.0
                },
                gflops_starpu: None,
                bytes_transferred: report.internode_bytes + report.intranode_bytes,
                fetch_bytes: 0.0,
                prefetch_bytes: 0.0,
                writeback_bytes: 0.0,
                evictions: 0,
                writebacks: 0,
                tasks: report.ops,
            });
        }
        let report = sc.run().map_err(located)?;
        let w = sc.graph_workload()?;
        let gflops_starpu = (w.kind == Kernel::Cholesky)
            .then(|| (w.n as f64).powi(3) / 3.0 / report.makespan_s / 1e9);
        Ok(Row {
            sched: sc.scheduler.name.clone(),
            seed: sc.run.seed,
            values: p.values.clone(),
            makespan_s: report.makespan_s,
            gflops: report.gflops,
            gflops_starpu,
            bytes_transferred: report.bytes_transferred,
            fetch_bytes: report.fetch_bytes,
            prefetch_bytes: report.prefetch_bytes,
            writeback_bytes: report.writeback_bytes,
            evictions: report.evictions,
            writebacks: report.writebacks,
            tasks: report.tasks,
        })
    }

    fn describe(&self, p: &Point, sc: &Scenario) -> String {
        let mut s = format!("run with sched {}, seed {}", sc.scheduler.name, sc.run.seed);
        for (v, x) in self.vary.iter().zip(&p.values) {
            s.push_str(&format!(", {}={x}", v.key));
        }
        s
    }
}

/// The CSV of a sweep's rows: a header (`sched,seed,<varied keys>,makespan_s,gflops,
/// gflops_starpu,bytes_transferred,fetch_bytes,prefetch_bytes,writeback_bytes,evictions,
/// writebacks,tasks`), then one line per row. Floats are written in Rust's shortest
/// round-trip form; `gflops_starpu` is empty for workloads other than Cholesky.
pub fn csv(sweep: &Sweep, rows: &[Row]) -> String {
    let mut out = String::from("sched,seed");
    for v in &sweep.vary {
        out.push(',');
        out.push_str(&csv_field(&v.key));
    }
    out.push_str(
        ",makespan_s,gflops,gflops_starpu,bytes_transferred,fetch_bytes,prefetch_bytes,\
         writeback_bytes,evictions,writebacks,tasks\n",
    );
    for r in rows {
        out.push_str(&csv_field(&r.sched));
        out.push_str(&format!(",{}", r.seed));
        for v in &r.values {
            out.push(',');
            out.push_str(&csv_field(v));
        }
        let starpu = r.gflops_starpu.map_or(String::new(), |g| g.to_string());
        out.push_str(&format!(
            ",{},{},{starpu},{},{},{},{},{},{},{}\n",
            r.makespan_s,
            r.gflops,
            r.bytes_transferred,
            r.fetch_bytes,
            r.prefetch_bytes,
            r.writeback_bytes,
            r.evictions,
            r.writebacks,
            r.tasks
        ));
    }
    out
}

/// Quote a CSV field if it needs it.
fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

/// Write the CSV to `path`.
pub fn write_csv(sweep: &Sweep, rows: &[Row], path: &Path) -> Result<(), Error> {
    let mut f = std::fs::File::create(path)
        .map_err(|e| InputError::new(format!("cannot create {}: {e}", path.display())))?;
    f.write_all(csv(sweep, rows).as_bytes())
        .map_err(|e| Error::Internal(format!("cannot write {}: {e}", path.display())))
}

/// One scheduler's line on the plot: per x, (x, min, mean, max) of GFlop/s over the other
/// varied values and seeds.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Scheduler.
    pub sched: String,
    /// (x, min, mean, max), in the order of the first varied value.
    pub points: Vec<(f64, f64, f64, f64)>,
}

/// The plotted figures: GFlop/s against the first varied value (its position if it is not a
/// number), one series per scheduler in sweep order, min/mean/max over seeds (and over the
/// other varied values, if any).
pub fn series(sweep: &Sweep, rows: &[Row]) -> (Vec<String>, Vec<Series>) {
    let xs: Vec<String> = sweep
        .vary
        .first()
        .map_or_else(|| vec![String::new()], |v| v.values.clone());
    let numeric = xs.iter().all(|x| x.parse::<f64>().is_ok());
    let xval = |i: usize| {
        if numeric {
            xs[i].parse::<f64>().expect("checked")
        } else {
            i as f64
        }
    };
    let mut scheds: Vec<String> = Vec::new();
    for r in rows {
        if !scheds.contains(&r.sched) {
            scheds.push(r.sched.clone());
        }
    }
    let series = scheds
        .into_iter()
        .map(|s| {
            let points = (0..xs.len())
                .filter_map(|i| {
                    let g: Vec<f64> = rows
                        .iter()
                        .filter(|r| r.sched == s && r.values.first().is_none_or(|v| *v == xs[i]))
                        .map(|r| r.gflops)
                        .collect();
                    if g.is_empty() {
                        return None;
                    }
                    let min = g.iter().copied().fold(f64::INFINITY, f64::min);
                    let max = g.iter().copied().fold(f64::NEG_INFINITY, f64::max);
                    let mean = g.iter().sum::<f64>() / g.len() as f64;
                    Some((xval(i), min, mean, max))
                })
                .collect();
            Series { sched: s, points }
        })
        .collect();
    (xs, series)
}

/// Twelve distinguishable colours (Tableau's, then four darker ones).
const COLOURS: [(u8, u8, u8); 12] = [
    (31, 119, 180),
    (255, 127, 14),
    (44, 160, 44),
    (214, 39, 40),
    (148, 103, 189),
    (140, 86, 75),
    (227, 119, 194),
    (127, 127, 127),
    (188, 189, 34),
    (23, 190, 207),
    (0, 0, 0),
    (100, 60, 0),
];

/// Draw the SVG plot of GFlop/s against the first varied value: one line (mean over seeds)
/// per scheduler with a band from min to max.
pub fn plot_svg(sweep: &Sweep, rows: &[Row], title: &str, path: &Path) -> Result<(), Error> {
    use plotters::prelude::*;
    let (xs, series) = series(sweep, rows);
    let numeric = xs.iter().all(|x| x.parse::<f64>().is_ok());
    let all = series.iter().flat_map(|s| s.points.iter());
    let (mut x0, mut x1, mut y1) = (f64::INFINITY, f64::NEG_INFINITY, 0.0f64);
    for &(x, _, _, max) in all {
        x0 = x0.min(x);
        x1 = x1.max(x);
        y1 = y1.max(max);
    }
    if !x0.is_finite() {
        (x0, x1) = (0.0, 1.0);
    }
    if x1 <= x0 {
        (x0, x1) = (x0 - 0.5, x1 + 0.5);
    }
    let pad = (x1 - x0) * 0.03;
    let y1 = if y1 > 0.0 { y1 * 1.08 } else { 1.0 };
    let xlabel = sweep.vary.first().map_or("", |v| v.key.as_str());
    let draw = || -> Result<(), Box<dyn std::error::Error>> {
        let root = SVGBackend::new(path, (1000, 620)).into_drawing_area();
        root.fill(&WHITE)?;
        let mut chart = ChartBuilder::on(&root)
            .caption(title, ("sans-serif", 22))
            .margin(16)
            .x_label_area_size(48)
            .y_label_area_size(64)
            .build_cartesian_2d((x0 - pad)..(x1 + pad), 0.0..y1)?;
        let label_of = |x: &f64| {
            if numeric {
                format!("{x}")
            } else {
                let i = x.round();
                if (x - i).abs() < 1e-9 && i >= 0.0 && (i as usize) < xs.len() {
                    xs[i as usize].clone()
                } else {
                    String::new()
                }
            }
        };
        chart
            .configure_mesh()
            .x_desc(xlabel)
            .y_desc("GFlop/s (mean over seeds; band: min to max)")
            .x_labels(xs.len().clamp(2, 12))
            .x_label_formatter(&label_of)
            .draw()?;
        for (i, s) in series.iter().enumerate() {
            let (r, g, b) = COLOURS[i % COLOURS.len()];
            let colour = RGBColor(r, g, b);
            let mut band: Vec<(f64, f64)> = s.points.iter().map(|p| (p.0, p.3)).collect();
            band.extend(s.points.iter().rev().map(|p| (p.0, p.1)));
            chart.draw_series(std::iter::once(Polygon::new(
                band,
                colour.mix(0.15).filled(),
            )))?;
            chart
                .draw_series(LineSeries::new(
                    s.points.iter().map(|p| (p.0, p.2)),
                    colour.stroke_width(2),
                ))?
                .label(s.sched.as_str())
                .legend(move |(x, y)| {
                    PathElement::new(vec![(x, y), (x + 20, y)], colour.stroke_width(2))
                });
            chart.draw_series(
                s.points
                    .iter()
                    .map(|p| Circle::new((p.0, p.2), 3, colour.filled())),
            )?;
        }
        chart
            .configure_series_labels()
            .position(SeriesLabelPosition::LowerLeft)
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .draw()?;
        root.present()?;
        Ok(())
    };
    draw().map_err(|e| Error::Internal(format!("cannot draw {}: {e}", path.display())))
}

//! Parameter sweeps: one scenario run over the cross-product of schedulers, varied scenario
//! values and seeds, in parallel, with one [`Row`] of figures per run (`hetsim sweep`).
//!
//! ```no_run
//! use hetsim_app::sweep::{Sweep, Vary};
//! let sweep = Sweep {
//!     scenario: "scenarios/cholesky-mirage.toml".into(),
//!     scheds: vec!["dmda".into(), "dmdas".into()],
//!     vary: vec![Vary::parse("workload.n=9600,19200").unwrap()],
//!     seeds: vec![1, 2],
//!     sets: Vec::new(),
//! };
//! assert_eq!(sweep.points().len(), 2 * 2 * 2);
//! // One run; the `hetsim` crate's `sweep::run` runs them all in parallel.
//! let row = sweep.run_point(&sweep.points()[0]).unwrap();
//! print!("{}", hetsim_app::sweep::csv(&sweep, &[row]));
//! ```
//!
//! Each run is the scenario with, applied in this order, every `--set`, the run's value of
//! each `--vary`, its scheduler (`scheduler.name`) and its seed (`run.seed`). Rows come in a
//! fixed order — scheduler (as given), then the varied values (first `--vary` outermost, values
//! as given), then seed — whatever the number of threads, and every run is deterministic, so
//! the CSV is identical for any `-j`.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::scenario::{self, Override, Scenario};
use hetsim_core::error::{Error, InputError};
use hetsim_taskgraph::Kernel;

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
    /// A task graph run on several nodes or ranks: its messages between ranks and their
    /// payload in bytes (`None` on one machine and for program workloads).
    pub messages: Option<(u64, f64)>,
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

    /// Run one point of the sweep (the CLI runs them in parallel; rows go back in
    /// [`Sweep::points`] order). A failed run's error names the run.
    pub fn run_point(&self, p: &Point) -> Result<Row, Error> {
        let sc = self.scenario_for(p)?;
        let located = |e: Error| match e {
            Error::Input(mut e) => {
                e.message = format!("{}: {}", self.describe(p, &sc), e.message);
                Error::Input(e)
            }
            Error::Internal(m) => Error::Internal(format!("{}: {m}", self.describe(p, &sc))),
        };
        let report = sc.run().map_err(located)?;
        let gflops_starpu = sc
            .workload
            .filter(|w| w.kind == Kernel::Cholesky)
            .map(|w| (w.n as f64).powi(3) / 3.0 / report.makespan_s / 1e9);
        // Program workloads: GFlop/s as the application counts them (HPL's formula).
        let counted = match &sc.program {
            Some(_) => sc.counted_flops_on(&sc.load_cluster()?),
            None => None,
        };
        let gflops = match counted {
            Some(flops) if report.makespan_s > 0.0 => flops / report.makespan_s / 1e9,
            Some(_) => 0.0,
            None => report.gflops,
        };
        Ok(Row {
            sched: sc.scheduler.name().to_string(),
            seed: sc.run.seed,
            values: p.values.clone(),
            makespan_s: report.makespan_s,
            gflops,
            gflops_starpu,
            bytes_transferred: report.bytes_transferred,
            fetch_bytes: report.fetch_bytes,
            prefetch_bytes: report.prefetch_bytes,
            writeback_bytes: report.writeback_bytes,
            evictions: report.evictions,
            writebacks: report.writebacks,
            tasks: report.tasks,
            messages: report
                .cluster
                .as_ref()
                .map(|c| (c.messages, c.message_bytes)),
        })
    }

    fn describe(&self, p: &Point, sc: &Scenario) -> String {
        let mut s = format!(
            "run with sched {}, seed {}",
            sc.scheduler.name(),
            sc.run.seed
        );
        for (v, x) in self.vary.iter().zip(&p.values) {
            s.push_str(&format!(", {}={x}", v.key));
        }
        s
    }
}

/// The CSV of a sweep's rows: a header (`sched,seed,<varied keys>,makespan_s,gflops,
/// gflops_starpu,bytes_transferred,fetch_bytes,prefetch_bytes,writeback_bytes,evictions,
/// writebacks,tasks`, then `messages,message_bytes` if a run of the sweep was distributed over
/// several nodes or ranks), then one line per row, written by the `csv` crate (fields quoted
/// only when they need it). Floats are written in Rust's shortest round-trip form;
/// `gflops_starpu` is empty for workloads other than Cholesky; in a sweep with the message
/// columns a run on one machine (`machine.nodes=1`) sent 0 messages of 0 bytes.
pub fn csv(sweep: &Sweep, rows: &[Row]) -> String {
    let mut w = csv::Writer::from_writer(Vec::new());
    write_records(&mut w, sweep, rows).expect("writing to memory cannot fail");
    let bytes = w.into_inner().expect("writing to memory cannot fail");
    String::from_utf8(bytes).expect("fields are UTF-8")
}

fn write_records<W: Write>(w: &mut csv::Writer<W>, sweep: &Sweep, rows: &[Row]) -> csv::Result<()> {
    let mut header = vec!["sched", "seed"];
    header.extend(sweep.vary.iter().map(|v| v.key.as_str()));
    header.extend([
        "makespan_s",
        "gflops",
        "gflops_starpu",
        "bytes_transferred",
        "fetch_bytes",
        "prefetch_bytes",
        "writeback_bytes",
        "evictions",
        "writebacks",
        "tasks",
    ]);
    let distributed = rows.iter().any(|r| r.messages.is_some());
    if distributed {
        header.extend(["messages", "message_bytes"]);
    }
    w.write_record(&header)?;
    for r in rows {
        let mut rec: Vec<String> = vec![r.sched.clone(), r.seed.to_string()];
        rec.extend(r.values.iter().cloned());
        rec.extend([
            r.makespan_s.to_string(),
            r.gflops.to_string(),
            r.gflops_starpu.map_or(String::new(), |g| g.to_string()),
            r.bytes_transferred.to_string(),
            r.fetch_bytes.to_string(),
            r.prefetch_bytes.to_string(),
            r.writeback_bytes.to_string(),
            r.evictions.to_string(),
            r.writebacks.to_string(),
            r.tasks.to_string(),
        ]);
        if distributed {
            let (n, bytes) = r.messages.unwrap_or((0, 0.0));
            rec.extend([n.to_string(), bytes.to_string()]);
        }
        w.write_record(&rec)?;
    }
    w.flush()?;
    Ok(())
}

/// Write the CSV to `path`, all of it or nothing ([`hetsim_core::files::write_output`]).
pub fn write_csv(sweep: &Sweep, rows: &[Row], path: &Path) -> Result<(), InputError> {
    hetsim_core::files::write_output(path, csv(sweep, rows).as_bytes())
}

/// One scheduler's figures against the first varied value: per x, (x, min, mean, max) of
/// GFlop/s over the seeds *and the other varied values*. A summary per scheduler; the plot
/// draws [`lines`] instead, which keep the other varied values apart.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// Scheduler.
    pub sched: String,
    /// (x, min, mean, max), in the order of the first varied value.
    pub points: Vec<(f64, f64, f64, f64)>,
}

/// GFlop/s against the first varied value (its position if it is not a number), one series
/// per scheduler in sweep order, min/mean/max over seeds and over the other varied values,
/// if any (see [`lines`] for one line per scheduler and other varied values).
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

/// One line of the plot: a scheduler at fixed values of the varied keys after the first, with
/// per x (x, min, mean, max) of GFlop/s over the seeds only.
#[derive(Debug, Clone, PartialEq)]
pub struct Line {
    /// Scheduler.
    pub sched: String,
    /// The values of the second and later varied keys, in `--vary` order.
    pub rest: Vec<String>,
    /// (x, min, mean, max) over seeds, in the order of the first varied value.
    pub points: Vec<(f64, f64, f64, f64)>,
}

/// The plotted lines: GFlop/s against the first varied value (its position if it is not a
/// number), one line per scheduler and combination of the other varied values, in row order
/// (scheduler, then the other values as given); min, mean and max over seeds at each x. A
/// varied value is never folded into the min-max spread.
pub fn lines(sweep: &Sweep, rows: &[Row]) -> (Vec<String>, Vec<Line>) {
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
    let rest_of = |r: &Row| r.values.get(1..).unwrap_or_default().to_vec();
    let mut keys: Vec<(String, Vec<String>)> = Vec::new();
    for r in rows {
        let k = (r.sched.clone(), rest_of(r));
        if !keys.contains(&k) {
            keys.push(k);
        }
    }
    let lines = keys
        .into_iter()
        .map(|(sched, rest)| {
            let points = (0..xs.len())
                .filter_map(|i| {
                    let g: Vec<f64> = rows
                        .iter()
                        .filter(|r| {
                            r.sched == sched
                                && r.values.first().is_none_or(|v| *v == xs[i])
                                && rest_of(r) == rest
                        })
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
            Line {
                sched,
                rest,
                points,
            }
        })
        .collect();
    (xs, lines)
}

/// How the lines of a plot are told apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// One panel; a colour per scheduler (no other varied key, or one value of it).
    Schedulers,
    /// One panel; a colour per combination of the other varied values (one scheduler).
    Values,
    /// One panel; a colour per scheduler, a dash pattern per combination of the other
    /// varied values (at most three).
    Dashes,
    /// One panel per combination of the other varied values, a colour per scheduler, one
    /// y scale.
    Panels,
}

/// The layout [`plot_svg`] uses for `nsched` schedulers and `ncombos` combinations of the
/// varied values after the first.
pub fn layout(nsched: usize, ncombos: usize) -> Layout {
    if ncombos <= 1 {
        Layout::Schedulers
    } else if nsched <= 1 {
        Layout::Values
    } else if ncombos <= 3 && nsched * ncombos <= 12 {
        Layout::Dashes
    } else {
        Layout::Panels
    }
}

/// `key=value, key=value` of the varied keys after the first.
pub fn rest_label(sweep: &Sweep, rest: &[String]) -> String {
    sweep
        .vary
        .iter()
        .skip(1)
        .zip(rest)
        .map(|(v, x)| format!("{}={x}", v.key))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sweep_of(keys: &[&str]) -> Sweep {
        Sweep {
            scenario: "s.toml".into(),
            scheds: Vec::new(),
            vary: keys
                .iter()
                .map(|k| Vary {
                    key: (*k).to_string(),
                    values: Vec::new(),
                })
                .collect(),
            seeds: Vec::new(),
            sets: Vec::new(),
        }
    }

    fn row(sched: &str, seed: u64, values: &[&str], gflops: f64) -> Row {
        Row {
            sched: sched.into(),
            seed,
            values: values.iter().map(|v| (*v).to_string()).collect(),
            makespan_s: 0.5,
            gflops,
            gflops_starpu: None,
            bytes_transferred: 1e9,
            fetch_bytes: 0.25,
            prefetch_bytes: 0.0,
            writeback_bytes: 3.0,
            evictions: 4,
            writebacks: 5,
            tasks: 6,
            messages: None,
        }
    }

    #[test]
    fn csv_by_hand() {
        let mut sw = sweep_of(&["workload.n", "machine.name"]);
        sw.vary[0].values = vec!["9600".into()];
        let mut r = row("dmda", 1, &["9600", "\"a b\""], 1.25);
        r.gflops_starpu = Some(2.0);
        let rows = [r, row("eager", 2, &["9600", "c"], 0.1)];
        assert_eq!(
            csv(&sw, &rows),
            "sched,seed,workload.n,machine.name,makespan_s,gflops,gflops_starpu,\
             bytes_transferred,fetch_bytes,prefetch_bytes,writeback_bytes,evictions,writebacks,\
             tasks\n\
             dmda,1,9600,\"\"\"a b\"\"\",0.5,1.25,2,1000000000,0.25,0,3,4,5,6\n\
             eager,2,9600,c,0.5,0.1,,1000000000,0.25,0,3,4,5,6\n"
        );
    }

    #[test]
    fn message_columns_only_when_a_run_was_distributed() {
        let mut sw = sweep_of(&["machine.nodes"]);
        sw.vary[0].values = vec!["1".into(), "2".into()];
        let one = row("dmda", 1, &["1"], 1.0);
        let mut two = row("dmda", 1, &["2"], 2.0);
        two.messages = Some((3, 7.5e6));
        let head = "sched,seed,machine.nodes,makespan_s,gflops,gflops_starpu,bytes_transferred,\
                    fetch_bytes,prefetch_bytes,writeback_bytes,evictions,writebacks,tasks";
        assert_eq!(
            csv(&sw, &[one.clone(), two]),
            format!(
                "{head},messages,message_bytes\n\
                 dmda,1,1,0.5,1,,1000000000,0.25,0,3,4,5,6,0,0\n\
                 dmda,1,2,0.5,2,,1000000000,0.25,0,3,4,5,6,3,7500000\n"
            )
        );
        assert_eq!(
            csv(&sw, &[one]),
            format!("{head}\ndmda,1,1,0.5,1,,1000000000,0.25,0,3,4,5,6\n")
        );
    }

    /// Two schedulers, x = 1 and 2, method a or b, seeds 1 and 2: GFlop/s = 10 x, plus 1 for
    /// method b, plus seed / 10.
    fn two_keys() -> (Sweep, Vec<Row>) {
        let mut sw = sweep_of(&["machine.nodes", "workload.method"]);
        sw.vary[0].values = vec!["1".into(), "2".into()];
        sw.vary[1].values = vec!["a".into(), "b".into()];
        let mut rows = Vec::new();
        for s in ["s1", "s2"] {
            for x in ["1", "2"] {
                for m in ["a", "b"] {
                    for seed in [1, 2] {
                        let g = 10.0 * x.parse::<f64>().unwrap()
                            + if m == "b" { 1.0 } else { 0.0 }
                            + seed as f64 / 10.0;
                        rows.push(row(s, seed, &[x, m], g));
                    }
                }
            }
        }
        (sw, rows)
    }

    #[test]
    fn a_second_varied_key_makes_lines_not_bands() {
        let (sw, rows) = two_keys();
        let (xs, ls) = lines(&sw, &rows);
        assert_eq!(xs, ["1", "2"]);
        let keys: Vec<(&str, &str)> = ls
            .iter()
            .map(|l| (l.sched.as_str(), l.rest[0].as_str()))
            .collect();
        assert_eq!(keys, [("s1", "a"), ("s1", "b"), ("s2", "a"), ("s2", "b")]);
        // The band is the spread over the two seeds only: 0.1 wide.
        let close = |a: (f64, f64, f64, f64), b: (f64, f64, f64, f64)| {
            (a.0 - b.0).abs() + (a.1 - b.1).abs() + (a.2 - b.2).abs() + (a.3 - b.3).abs() < 1e-9
        };
        assert!(close(ls[0].points[0], (1.0, 10.1, 10.15, 10.2)), "{ls:?}");
        assert!(close(ls[1].points[1], (2.0, 21.1, 21.15, 21.2)), "{ls:?}");
        // The per-scheduler summary still spans both methods.
        let (_, summary) = series(&sw, &rows);
        assert!(close(summary[0].points[0], (1.0, 10.1, 10.65, 11.2)));
    }

    #[test]
    fn layouts() {
        assert_eq!(layout(12, 1), Layout::Schedulers);
        assert_eq!(layout(1, 2), Layout::Values);
        assert_eq!(layout(2, 2), Layout::Dashes);
        assert_eq!(layout(4, 3), Layout::Dashes);
        // 24 lines in one panel would be too many; four combinations, too many dashes.
        assert_eq!(layout(12, 2), Layout::Panels);
        assert_eq!(layout(2, 4), Layout::Panels);
    }
}

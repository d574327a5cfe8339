//! `hetsim run SCENARIO.toml [--sched NAME] [--seed N] [--set KEY=VALUE]... [--json] [--quiet]
//! [--paje FILE] [--chrome FILE] [--gantt FILE.svg [--gantt-rows all|busy]
//! [--gantt-group none|identical]]`: load a scenario, simulate it, print the
//! report (or one JSON object), and write the traces asked for.

use std::fs::File;
use std::io::{BufWriter, ErrorKind, Write};
use std::path::{Path, PathBuf};

use clap::Args;

use super::json_line;
use crate::report_text::{self, Detail, Links};
use crate::runtime::Observer;
use crate::scenario::{self, Override};
use crate::trace::{ChromeWriter, GanttGroup, GanttOptions, GanttRows, GanttWriter, PajeWriter};
use crate::{Error, InputError};

/// Options of `hetsim run`.
#[derive(Debug, Args)]
#[command(after_help = super::schedulers_help())]
pub struct RunArgs {
    /// Scenario file (e.g. scenarios/cholesky-mirage.toml; format in docs/scenarios.md).
    pub scenario: PathBuf,
    /// Scheduler, overriding `scheduler.name` (listed below).
    #[arg(long, value_name = "NAME")]
    pub sched: Option<String>,
    /// Seed of the run's random number generator, overriding `run.seed`.
    #[arg(long, value_name = "N")]
    pub seed: Option<u64>,
    /// Override a scenario value by dotted path, e.g. `--set workload.n=48000`; VALUE is read
    /// as a TOML value (bare words are strings). Repeatable; applied in order, before --sched
    /// and --seed.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Print one JSON object (the run report plus scenario, workload, overrides, run,
    /// hetsim_version) instead of the text report.
    #[arg(long)]
    pub json: bool,
    /// Text report: print only the header and headline figures, no tables.
    #[arg(long, short)]
    pub quiet: bool,
    /// Write a Paje trace (ViTE, pj_dump, StarPU's Paje tools) to FILE.
    #[arg(long, value_name = "FILE")]
    pub paje: Option<PathBuf>,
    /// Write a Chrome trace event JSON (Perfetto UI, chrome://tracing) to FILE.
    #[arg(long, value_name = "FILE")]
    pub chrome: Option<PathBuf>,
    /// Draw a Gantt chart of the run (one row per worker, transfers per link) as SVG to FILE.
    #[arg(long, value_name = "FILE")]
    pub gantt: Option<PathBuf>,
    /// Gantt chart: which workers get a row: `all`, or `busy` (only those that ran a task;
    /// the title counts the others).
    #[arg(long, value_name = "WHICH", default_value = "all", requires = "gantt")]
    pub gantt_rows: GanttRowsArg,
    /// Gantt chart: `identical` draws the CPU workers of one memory node as one taller row
    /// that stacks how many of them run each codelet over time; `none`: a row per worker.
    #[arg(long, value_name = "HOW", default_value = "none", requires = "gantt")]
    pub gantt_group: GanttGroupArg,
    /// Text report: which links the link table lists: `main` hides the internal links of an
    /// imported PCI tree (names starting with `PCI:`), `all` lists every link that moved bytes.
    #[arg(long, value_name = "WHICH", default_value = "main")]
    pub links: LinksArg,
}

/// `--links`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LinksArg {
    /// Every link but the internal links of an imported PCI tree.
    Main,
    /// Every link that moved bytes.
    All,
}

impl From<LinksArg> for Links {
    fn from(a: LinksArg) -> Links {
        match a {
            LinksArg::Main => Links::Main,
            LinksArg::All => Links::All,
        }
    }
}

/// `--gantt-rows`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GanttRowsArg {
    /// Every worker.
    All,
    /// The workers that ran a task.
    Busy,
}

/// `--gantt-group`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum GanttGroupArg {
    /// A row per worker.
    None,
    /// The CPU workers of one memory node share a row.
    Identical,
}

/// The Gantt chart's options from the arguments.
fn gantt_options(args: &RunArgs) -> GanttOptions {
    GanttOptions {
        rows: match args.gantt_rows {
            GanttRowsArg::All => GanttRows::All,
            GanttRowsArg::Busy => GanttRows::Busy,
        },
        group: match args.gantt_group {
            GanttGroupArg::None => GanttGroup::None,
            GanttGroupArg::Identical => GanttGroup::Identical,
        },
        ..GanttOptions::default()
    }
}

/// The trace writers asked for, each with its file.
struct Writers {
    paje: Option<(PathBuf, PajeWriter<BufWriter<File>>)>,
    chrome: Option<(PathBuf, ChromeWriter<BufWriter<File>>)>,
    gantt: Option<(PathBuf, GanttWriter<BufWriter<File>>)>,
}

fn output_error(path: &Path, e: std::io::Error) -> Error {
    InputError::new(format!("cannot write trace: {e}"))
        .in_file(path)
        .into()
}

impl Writers {
    fn create(args: &RunArgs) -> crate::Result<Self> {
        fn open<T>(
            path: &Option<PathBuf>,
            create: fn(&Path) -> std::io::Result<T>,
        ) -> crate::Result<Option<(PathBuf, T)>> {
            path.as_ref()
                .map(|p| {
                    create(p)
                        .map(|w| (p.clone(), w))
                        .map_err(|e| output_error(p, e))
                })
                .transpose()
        }
        Ok(Writers {
            paje: open(&args.paje, |p| PajeWriter::create(p))?,
            chrome: open(&args.chrome, |p| ChromeWriter::create(p))?,
            gantt: args
                .gantt
                .as_ref()
                .map(|p| {
                    GanttWriter::create_with(p, gantt_options(args))
                        .map(|w| (p.clone(), w))
                        .map_err(|e| output_error(p, e))
                })
                .transpose()?,
        })
    }

    fn observers(&mut self) -> Vec<&mut dyn Observer> {
        let mut v: Vec<&mut dyn Observer> = Vec::new();
        if let Some((_, w)) = &mut self.paje {
            v.push(w);
        }
        if let Some((_, w)) = &mut self.chrome {
            v.push(w);
        }
        if let Some((_, w)) = &mut self.gantt {
            v.push(w);
        }
        v
    }

    /// Flush every file; the first failure is reported with its file.
    fn finish(self) -> crate::Result<()> {
        if let Some((p, w)) = self.paje {
            w.finish().map_err(|e| output_error(&p, e))?;
        }
        if let Some((p, w)) = self.chrome {
            w.finish().map_err(|e| output_error(&p, e))?;
        }
        if let Some((p, w)) = self.gantt {
            w.finish().map_err(|e| output_error(&p, e))?;
        }
        Ok(())
    }
}

/// The overrides the arguments ask for: every `--set` in order, then `--sched`, then `--seed`.
pub fn overrides(args: &RunArgs) -> crate::Result<Vec<Override>> {
    let mut ovs = Vec::with_capacity(args.set.len() + 2);
    for s in &args.set {
        ovs.push(Override::parse_set(s)?);
    }
    if let Some(name) = &args.sched {
        ovs.push(Override::string(
            format!("--sched {name}"),
            "scheduler.name",
            name.clone(),
        ));
    }
    if let Some(seed) = args.seed {
        ovs.push(Override::integer(
            format!("--seed {seed}"),
            "run.seed",
            seed,
        ));
    }
    Ok(ovs)
}

/// Load, simulate, print. Bad input of any kind (scenario, overrides, machine, workload) is an
/// input error (exit status 2) naming where it is.
pub fn run(args: &RunArgs) -> crate::Result<()> {
    let ovs = overrides(args)?;
    let sc = scenario::load(&args.scenario, &ovs)?;
    if sc.program.is_some() {
        return run_program(args, &sc);
    }
    let mut writers = Writers::create(args)?;
    let mut progress = Progress::new(!(args.quiet || args.json));
    let mut observers = writers.observers();
    observers.push(&mut progress);
    let report = sc.run_observed(&mut observers)?;
    drop(observers);
    writers.finish()?;
    let text = if args.json {
        json_line(&sc.json(&report)?)?
    } else {
        report_text::render(&sc, &report, detail(args), args.links.into())
    };
    write_stdout(&text)
}

/// A progress bar on stderr (tasks done out of total) for runs that take more than a second;
/// indicatif draws nothing when stderr is not a terminal.
struct Progress {
    enabled: bool,
    start: std::time::Instant,
    total: u64,
    done: u64,
    bar: Option<indicatif::ProgressBar>,
}

impl Progress {
    /// Events between two looks at the clock: reading it per event would cost more than the
    /// event.
    const CHECK_EVERY: u64 = 1024;

    fn new(enabled: bool) -> Self {
        Progress {
            enabled,
            start: std::time::Instant::now(),
            total: 0,
            done: 0,
            bar: None,
        }
    }

    fn task_done(&mut self) {
        self.done += 1;
        if let Some(bar) = &self.bar {
            bar.set_position(self.done);
        } else if self.done.is_multiple_of(Self::CHECK_EVERY)
            && self.start.elapsed() >= std::time::Duration::from_secs(1)
        {
            let bar = indicatif::ProgressBar::with_draw_target(
                Some(self.total),
                indicatif::ProgressDrawTarget::stderr(),
            )
            .with_elapsed(self.start.elapsed());
            if let Ok(style) = indicatif::ProgressStyle::with_template(
                "{elapsed_precise} [{bar:40}] {pos}/{len} tasks, eta {eta}",
            ) {
                bar.set_style(style.progress_chars("=> "));
            }
            bar.set_position(self.done);
            self.bar = Some(bar);
        }
    }
}

impl Observer for Progress {
    fn event(&mut self, _at_s: f64, event: &crate::runtime::SimEvent<'_>) {
        if !self.enabled {
            return;
        }
        match event {
            crate::runtime::SimEvent::RunStart { graph, .. } => {
                self.total = graph.tasks().len() as u64;
            }
            crate::runtime::SimEvent::TaskEnd { .. } => self.task_done(),
            crate::runtime::SimEvent::RunEnd { .. } => {
                if let Some(bar) = self.bar.take() {
                    bar.finish_and_clear();
                }
            }
            _ => {}
        }
    }
}

/// How much of the text report to print: the summary with `--quiet`.
fn detail(args: &RunArgs) -> Detail {
    if args.quiet {
        Detail::Summary
    } else {
        Detail::Full
    }
}

/// A program scenario (p2p, bcast, hpl, stencil, ...): execute it on its cluster and print.
fn run_program(args: &RunArgs, sc: &scenario::Scenario) -> crate::Result<()> {
    for (flag, given) in [
        ("--paje", args.paje.is_some()),
        ("--chrome", args.chrome.is_some()),
        ("--gantt", args.gantt.is_some()),
    ] {
        if given {
            return Err(InputError::new(format!(
                "{flag}: traces of program workloads are not written yet (task graphs only)"
            ))
            .into());
        }
    }
    let (cluster, report) = sc.run_program()?;
    let text = if args.json {
        json_line(&sc.program_json(&cluster, &report)?)?
    } else {
        report_text::render_program(sc, &cluster, &report, detail(args))
    };
    write_stdout(&text)
}

/// Write to stdout; a closed pipe (`hetsim run ... | head -1`) is not an error.
fn write_stdout(text: &str) -> crate::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        Err(e) => Err(Error::Internal(format!("cannot write to stdout: {e}"))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine::MemNodeId;
    use crate::runtime::{SimEvent, WorkerId};
    use crate::workload::TaskId;
    use std::time::{Duration, Instant};

    fn end_tasks(p: &mut Progress, n: u32) {
        for t in 0..n {
            let e = SimEvent::TaskEnd {
                task: TaskId(t),
                worker: WorkerId(0),
                node: MemNodeId(0),
            };
            p.event(0.0, &e);
        }
    }

    /// The bar appears once the run has lasted a second, at the first clock check after it
    /// (every 1024 task ends), and follows the count; a quick run, or `--quiet`/`--json`,
    /// gets none.
    #[test]
    fn the_bar_appears_after_a_second_and_counts_tasks() {
        let mut quick = Progress::new(true);
        end_tasks(&mut quick, 2048);
        assert!(quick.bar.is_none(), "under a second: no bar");

        let mut slow = Progress::new(true);
        slow.start = Instant::now() - Duration::from_secs(2);
        end_tasks(&mut slow, 1023);
        assert!(slow.bar.is_none(), "the clock is read every 1024 tasks");
        end_tasks(&mut slow, 1);
        assert_eq!(slow.bar.as_ref().map(|b| b.position()), Some(1024));
        end_tasks(&mut slow, 5);
        assert_eq!(slow.bar.as_ref().map(|b| b.position()), Some(1029));

        let mut quiet = Progress::new(false);
        quiet.start = Instant::now() - Duration::from_secs(2);
        end_tasks(&mut quiet, 4096);
        assert!(quiet.bar.is_none());
    }
}

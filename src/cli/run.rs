//! `hetsim run SCENARIO.toml [--sched NAME] [--seed N] [--set KEY=VALUE]... [--json] [--quiet]
//! [--paje FILE] [--chrome FILE] [--gantt FILE.svg [--gantt-rows all|busy]
//! [--gantt-group none|identical]]`: load a scenario, simulate it, print the
//! report (or one JSON object), and write the traces asked for (a flag per registered trace
//! format, [`crate::trace::FORMATS`]).

use std::path::PathBuf;

use clap::Args;

use super::json_line;
use super::progress::{CountBar, Spinner};
use crate::files::{FileRole, OutputFile, RoleFile, check_distinct};
use crate::report_text::{self, Detail, Links};
use crate::runtime::Observer;
use crate::scenario::{self, Override};
use crate::trace::formats::{OptionDoc, OptionValues};
use crate::trace::{FORMATS, TraceFormat, TraceOptions, TraceWriter};

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
    /// hetsim_version) instead of the text report, and no progress on stderr.
    #[arg(long)]
    pub json: bool,
    /// Text report: print only the header and headline figures, no tables; no progress on
    /// stderr (otherwise, on a terminal, a spinner while the workload is built and a bar of
    /// tasks done, each once it has lasted a second).
    #[arg(long, short)]
    pub quiet: bool,
    /// The traces asked for: `--NAME FILE` per registered format, `--NAME-OPTION VALUE` per
    /// option of a format.
    #[command(flatten)]
    pub traces: TraceArgs,
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

/// The traces asked for, from the flags [`crate::trace::FORMATS`] gives: `--NAME FILE` per
/// format and `--NAME-OPTION VALUE` per option of a format (which requires `--NAME`).
#[derive(Debug, Clone, Default)]
pub struct TraceArgs {
    /// Each format asked for, in registry order, with its file and the options given.
    pub traces: Vec<(&'static TraceFormat, PathBuf, TraceOptions)>,
}

/// The flag of one option of a format: `gantt-rows`.
fn option_flag(f: &TraceFormat, o: &OptionDoc) -> String {
    format!("{}-{}", f.name, o.name)
}

impl clap::FromArgMatches for TraceArgs {
    fn from_arg_matches(m: &clap::ArgMatches) -> Result<Self, clap::Error> {
        let mut traces = Vec::new();
        for f in FORMATS {
            let Some(path) = m.get_one::<PathBuf>(f.name) else {
                continue;
            };
            let options = f
                .options
                .iter()
                .filter_map(|o| {
                    let v = m.get_one::<String>(&option_flag(f, o))?;
                    Some((o.name.to_string(), v.clone()))
                })
                .collect();
            traces.push((f, path.clone(), options));
        }
        Ok(TraceArgs { traces })
    }

    fn update_from_arg_matches(&mut self, m: &clap::ArgMatches) -> Result<(), clap::Error> {
        *self = Self::from_arg_matches(m)?;
        Ok(())
    }
}

impl clap::Args for TraceArgs {
    fn augment_args(cmd: clap::Command) -> clap::Command {
        use clap::Arg;
        let mut cmd = cmd;
        for f in FORMATS {
            cmd = cmd.arg(
                Arg::new(f.name)
                    .long(f.name)
                    .value_name("FILE")
                    .value_parser(clap::value_parser!(PathBuf))
                    .help(format!("Write {} to FILE", f.help)),
            );
            for o in f.options {
                let flag = option_flag(f, o);
                let OptionValues::Choice(choices) = o.values else {
                    unreachable!("trace options are words (tested in the trace crate)")
                };
                cmd = cmd.arg(
                    Arg::new(flag.clone())
                        .long(flag)
                        .value_name(o.values.describe())
                        .value_parser(clap::builder::PossibleValuesParser::new(choices))
                        .default_value(o.default)
                        .requires(f.name)
                        .help(format!("With --{}: {}", f.name, o.help)),
                );
            }
        }
        cmd
    }

    fn augment_args_for_update(cmd: clap::Command) -> clap::Command {
        Self::augment_args(cmd)
    }
}

/// The trace writers asked for, each with its file (a temporary file renamed into place by
/// [`Writers::finish`]; dropped before, it leaves the target as it was).
struct Writers(Vec<(OutputFile, Box<dyn TraceWriter>)>);

impl Writers {
    /// Refuse traces that would overwrite an input or each other, then start writing them.
    fn create(args: &TraceArgs, inputs: &[RoleFile]) -> crate::Result<Self> {
        let outputs: Vec<RoleFile> = args
            .traces
            .iter()
            .map(|(f, path, _)| RoleFile::new(FileRole::Output(f.name), path))
            .collect();
        check_distinct(inputs, &outputs)?;
        let mut v = Vec::with_capacity(args.traces.len());
        for (f, path, options) in &args.traces {
            let out = OutputFile::create(path)?;
            let w = (f.create)(out.writer()?, options)?;
            v.push((out, w));
        }
        Ok(Writers(v))
    }

    fn observers(&mut self) -> Vec<&mut dyn Observer> {
        self.0
            .iter_mut()
            .map(|(_, w)| w.as_mut() as &mut dyn Observer)
            .collect()
    }

    /// Complete every file, then put them all in place; the first failure is reported with
    /// its file, and then none is replaced.
    fn finish(self) -> crate::Result<()> {
        let mut done = Vec::with_capacity(self.0.len());
        for (out, w) in self.0 {
            w.finish().map_err(|e| out.error(&e))?;
            done.push(out);
        }
        for out in done {
            out.commit()?;
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
    let inputs = if args.traces.traces.is_empty() {
        Vec::new()
    } else {
        sc.input_files()?
    };
    let mut writers = Writers::create(&args.traces, &inputs)?;
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
    super::print(&text)
}

/// The run's progress on stderr: a spinner while the workload is built, then a bar of tasks
/// done (see [`super::progress`]). A distributed graph's messages count as tasks (they are most
/// of an MPI program's); its delays, which no event reports, do not.
struct Progress {
    enabled: bool,
    bar: CountBar,
    /// Until the run starts: the workload is being loaded and built (a large cluster program
    /// takes minutes).
    preparing: Spinner,
}

impl Progress {
    fn new(enabled: bool) -> Self {
        Progress {
            enabled,
            bar: CountBar::new(enabled, "tasks"),
            preparing: Spinner::start(enabled, "building the workload"),
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
                self.preparing.finish();
                self.bar.set_total(counted(graph));
            }
            crate::runtime::SimEvent::TaskEnd { .. }
            | crate::runtime::SimEvent::MessageEnd { .. } => self.bar.advance(1),
            crate::runtime::SimEvent::RunEnd { .. } => self.bar.finish(),
            _ => {}
        }
    }
}

/// The tasks whose end the bar counts: computations and messages.
fn counted(graph: &crate::workload::TaskGraph) -> u64 {
    graph
        .tasks()
        .iter()
        .filter(|t| t.is_compute() || t.is_message())
        .count() as u64
}

/// How much of the text report to print: the summary with `--quiet`.
fn detail(args: &RunArgs) -> Detail {
    if args.quiet {
        Detail::Summary
    } else {
        Detail::Full
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

    /// An MPI program's graph: its messages are counted and their ends move the bar, so that it
    /// reaches its total; its delays (no event reports their end) are left out of the total.
    #[test]
    fn messages_count_and_delays_do_not() {
        use crate::workload::{NodeId, Place, TaskGraphBuilder, Unit};
        let mut b = TaskGraphBuilder::new();
        let (k, m, d) = (
            b.codelet("k").unwrap(),
            b.codelet("message").unwrap(),
            b.codelet("delay").unwrap(),
        );
        let (n0, n1) = (NodeId(0), NodeId(1));
        let a = b.submit_fixed(k, n0, Unit::Gpu, 1.0, 0.0, 0, &[]).unwrap();
        let msg = b
            .submit_payload(m, (n0, Place::Host), (n1, Place::Host), 8.0, 0, &[a])
            .unwrap();
        let wait = b.submit_delay(d, n1, 0.5, &[msg]).unwrap();
        b.submit_fixed(k, n1, Unit::Gpu, 1.0, 0.0, 0, &[wait])
            .unwrap();
        let g = b.build().unwrap();
        assert_eq!(g.num_tasks(), 4);
        assert_eq!(counted(&g), 3, "two computations and one message");

        let mut p = Progress::new(true);
        p.bar.start = Instant::now() - Duration::from_secs(2);
        p.bar.set_total(counted(&g));
        end_tasks(&mut p, 1023);
        p.event(
            0.0,
            &SimEvent::MessageEnd {
                task: msg,
                from_rank: 0,
                to_rank: 1,
                src: MemNodeId(0),
                dst: MemNodeId(1),
                bytes: 8.0,
            },
        );
        assert_eq!(p.bar.shown_at(), Some(1024));
    }
}

//! `hetsim sweep SCENARIO.toml --sched a,b --vary key=v1,v2 [--vary ...] --seeds 1..5 [-j N]
//! [--set K=V]... -o OUT.csv [--plot OUT.svg] [--quiet]`: run a scenario over the
//! cross-product, in parallel, and write one CSV row per run (and a plot). See
//! [`crate::sweep`].

use std::path::PathBuf;

use clap::Args;

use crate::files::{FileRole, RoleFile, check_distinct};
use crate::scenario::Override;
use crate::shard::Shard;
use crate::sweep::{self, Sweep, Vary};

/// Options of `hetsim sweep`.
#[derive(Debug, Args)]
#[command(
    after_help = super::schedulers_help(),
    args_conflicts_with_subcommands = true,
    subcommand_negates_reqs = true
)]
pub struct SweepArgs {
    /// `hetsim sweep merge SHARD.csv...`: join the CSV files of `--shard` runs.
    #[command(subcommand)]
    pub command: Option<SweepCommand>,
    /// Scenario file (format in docs/scenarios.md).
    #[arg(required = true)]
    pub scenario: Option<PathBuf>,
    /// Schedulers, comma-separated (default: the scenario's; listed below).
    #[arg(long, value_name = "A,B,...", value_delimiter = ',')]
    pub sched: Vec<String>,
    /// A scenario value to vary: dotted path and values, e.g. `workload.n=9600,19200`.
    /// Repeatable (cross-product, first outermost); the first is the plot's x axis.
    #[arg(long, value_name = "KEY=V1,V2,...")]
    pub vary: Vec<String>,
    /// Seeds: `A..B` (inclusive), `A..=B`, a list `1,4,9`, or one seed (default: the
    /// scenario's).
    #[arg(long, value_name = "SEEDS")]
    pub seeds: Option<String>,
    /// Threads (default and 0: the available cores; never more than the runs; at most
    /// 256).
    #[arg(short = 'j', long = "jobs", value_name = "N")]
    pub jobs: Option<usize>,
    /// Override a scenario value in every run, e.g. `--set run.prefetch=false`. Repeatable;
    /// applied before the varied values.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// CSV output file.
    #[arg(short = 'o', long = "output", value_name = "OUT.csv", required = true)]
    pub output: Option<PathBuf>,
    /// Run only shard I of N of the runs (1 ≤ I ≤ N; round robin over the sweep's order), to
    /// spread a sweep over jobs; `hetsim sweep merge` joins the shards' CSV files.
    #[arg(long, value_name = "I/N", conflicts_with = "plot")]
    pub shard: Option<String>,
    /// Also draw GFlop/s against the first varied value to this SVG file.
    #[arg(long, value_name = "OUT.svg")]
    pub plot: Option<PathBuf>,
    /// No progress bar.
    #[arg(long, short)]
    pub quiet: bool,
}

/// `hetsim sweep` subcommands.
#[derive(Debug, clap::Subcommand)]
pub enum SweepCommand {
    /// Join the CSV files of the shards of one sweep (`--shard I/N`, in any order) into the CSV,
    /// and the plot, that one unsharded run writes.
    Merge(MergeArgs),
}

/// Options of `hetsim sweep merge`.
#[derive(Debug, clap::Args)]
pub struct MergeArgs {
    /// The shards' CSV files, every shard of the sweep once.
    #[arg(required = true)]
    pub shards: Vec<PathBuf>,
    /// CSV output file.
    #[arg(short = 'o', long = "output", value_name = "OUT.csv")]
    pub output: PathBuf,
    /// Also draw GFlop/s against the first varied value to this SVG file.
    #[arg(long, value_name = "OUT.svg")]
    pub plot: Option<PathBuf>,
}

/// Parse the arguments into a [`Sweep`]; bad arguments are input errors (exit status 2).
pub fn sweep_of(args: &SweepArgs) -> crate::Result<Sweep> {
    let vary = args
        .vary
        .iter()
        .map(|v| Vary::parse(v))
        .collect::<Result<Vec<_>, _>>()?;
    let seeds = match &args.seeds {
        Some(s) => sweep::parse_seeds(s)?,
        None => Vec::new(),
    };
    let sets = args
        .set
        .iter()
        .map(|s| Override::parse_set(s))
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Sweep {
        scenario: args.scenario.clone().unwrap_or_default(),
        scheds: args.sched.iter().map(|s| s.trim().to_string()).collect(),
        vary,
        seeds,
        sets,
    })
}

/// The most threads `-j` may ask for: more would only cost memory on any machine hetsim
/// targets (each run is single-threaded).
pub const MAX_JOBS: usize = 256;

/// The threads to run `runs` runs on: `-j N` (0 or absent: the available cores), never more
/// than the runs; more than [`MAX_JOBS`] is refused.
pub fn threads(jobs: Option<usize>, runs: usize) -> crate::Result<usize> {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let asked = match jobs {
        Some(j) if j > MAX_JOBS => {
            return Err(crate::InputError::new(format!(
                "-j {j}: at most {MAX_JOBS} threads (each run uses one; this sweep has {runs} \
                 run{})",
                if runs == 1 { "" } else { "s" }
            ))
            .into());
        }
        Some(0) | None => cores,
        Some(j) => j,
    };
    Ok(asked.min(runs).max(1))
}

/// Run the sweep (or one shard of it), write the CSV and the plot; or merge shards.
pub fn run(args: &SweepArgs) -> crate::Result<()> {
    if let Some(SweepCommand::Merge(m)) = &args.command {
        return merge(m);
    }
    let sw = sweep_of(args)?;
    let output = args.output.clone().unwrap_or_default();
    sw.check()?;
    let shard = args.shard.as_deref().map(Shard::parse).transpose()?;
    let all = sw.points().len();
    let n = match shard {
        Some(s) => (0..all).filter(|&i| s.owns(i)).count(),
        None => all,
    } as u64;
    let threads = threads(args.jobs, n as usize)?;
    let mut outputs = vec![RoleFile::new(FileRole::Output("output"), &output)];
    if let Some(svg) = &args.plot {
        outputs.push(RoleFile::new(FileRole::Output("plot"), svg));
    }
    check_distinct(&sw.input_files()?, &outputs)?;
    let bar = if args.quiet {
        indicatif::ProgressBar::hidden()
    } else {
        super::progress::count_bar(n, "runs")
    };
    let start = std::time::Instant::now();
    let rows = crate::parallel::run_shard(&sw, shard, threads, &|| bar.inc(1))?;
    bar.finish_and_clear();
    let name = sw
        .scenario
        .file_stem()
        .map_or_else(String::new, |s| s.to_string_lossy().into_owned());
    match shard {
        Some(s) => crate::files::write_output(
            &output,
            crate::shard::shard_csv(&sw, s, all, &name, &rows).as_bytes(),
        )?,
        None => sweep::write_csv(&sw, &rows, &output)?,
    }
    let mut wrote = output.display().to_string();
    if let Some(svg) = &args.plot {
        sweep::plot_svg(&sw, &rows, &name, svg)?;
        wrote.push_str(&format!(" and {}", svg.display()));
    }
    if !args.quiet {
        super::note(&format!(
            "sweep{}: {n} run{} in {:.1} s, wrote {wrote}",
            shard.map_or_else(String::new, |s| format!(" shard {}/{}", s.index, s.count)),
            if n == 1 { "" } else { "s" },
            start.elapsed().as_secs_f64()
        ));
    }
    Ok(())
}

/// `hetsim sweep merge`: the shards' CSV files joined in sweep order, and the plot.
fn merge(args: &MergeArgs) -> crate::Result<()> {
    let mut shards = Vec::with_capacity(args.shards.len());
    for p in &args.shards {
        shards.push((p.display().to_string(), crate::error::read_input(p)?));
    }
    let mut outputs = vec![RoleFile::new(FileRole::Output("output"), &args.output)];
    if let Some(svg) = &args.plot {
        outputs.push(RoleFile::new(FileRole::Output("plot"), svg));
    }
    let inputs: Vec<RoleFile> = args
        .shards
        .iter()
        .map(|p| RoleFile::new(FileRole::SweepShard, p))
        .collect();
    check_distinct(&inputs, &outputs)?;
    let m = crate::shard::merge(&shards)?;
    crate::files::write_output(&args.output, m.csv.as_bytes())?;
    if let Some(svg) = &args.plot {
        sweep::plot_svg(&m.sweep, &m.rows, &m.title, svg)?;
    }
    Ok(())
}

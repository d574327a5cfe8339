//! `hetsim run SCENARIO.toml [--sched NAME] [--seed N] [--set KEY=VALUE]... [--json] [--quiet]`:
//! load a scenario, simulate it, print the report (or one JSON object).

use std::io::{ErrorKind, Write};
use std::path::PathBuf;

use clap::Args;

use crate::Error;
use crate::report_text::{self, Detail};
use crate::scenario::{self, Override};

/// Options of `hetsim run`.
#[derive(Debug, Args)]
pub struct RunArgs {
    /// Scenario file (e.g. scenarios/cholesky-mirage.toml; format in docs/scenarios.md).
    pub scenario: PathBuf,
    /// Scheduler, overriding `scheduler.name` (eager, prio, random).
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
    let report = sc.run()?;
    let text = if args.json {
        let value = sc.json(&report)?;
        let mut line = serde_json::to_string(&value)
            .map_err(|e| Error::Internal(format!("cannot write JSON: {e}")))?;
        line.push('\n');
        line
    } else {
        let detail = if args.quiet {
            Detail::Summary
        } else {
            Detail::Full
        };
        report_text::render(&sc, &report, detail)
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

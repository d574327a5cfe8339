//! The command-line front end. `main.rs` calls [`main`]; each subcommand lives in its own
//! module and returns a [`crate::Result`], so the exit status is decided in one place:
//! 0 on success, 2 for bad input (usage errors included) and for an output that cannot be
//! written (a bad path, a full disk), 1 for internal errors. Every command prints through
//! [`print`] and writes files through [`crate::files`], so a closed pipe ends it quietly and
//! a file is replaced only when complete.

use std::io::{ErrorKind, Write};
use std::process::ExitCode;

use clap::{Parser, Subcommand};

mod calibrate;
mod check;
mod crosscheck;
mod export_graph;
pub mod model;
mod net;
mod progress;
mod run;
mod sweep;

/// hetsim: predict how a task graph runs on a hybrid CPU/GPU machine.
#[derive(Debug, Parser)]
#[command(name = "hetsim", version, about, long_about = None)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Simulate a set of flows on a fluid network (the SimGrid oracle's JSON case format) and
    /// print each flow's finish time.
    Net(net::NetArgs),
    /// Validate a machine file and print a short summary of it.
    Check(check::CheckArgs),
    /// Simulate a scenario (machine + workload + scheduler) and print the report.
    Run(run::RunArgs),
    /// Run a scenario over schedulers × varied values × seeds in parallel; write a CSV (and an
    /// SVG plot of GFlop/s).
    Sweep(sweep::SweepArgs),
    /// Evaluate an analytic model from the papers (LogGP, mHLogGP, broadcast, HPL, MCL-HPL,
    /// MMGP, Improved Roofline, stencil scalability) and print the prediction and its terms.
    Model(model::ModelArgs),
    /// Simulate a program scenario and evaluate its workload's analytic model side by side.
    Crosscheck(crosscheck::CrosscheckArgs),
    /// Import StarPU's calibrations into machine files; show a machine's kernel models.
    Calibrate(calibrate::CalibrateArgs),
    /// Write a scenario's task graph (generated or read from a file) in hetsim's JSON format.
    ExportGraph(export_graph::ExportGraphArgs),
}

/// Parse the command line, run the subcommand and turn its outcome into an exit status.
pub fn main() -> ExitCode {
    init_logging();
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        // clap exits 2 on usage errors and 0 for --help/--version, as we want.
        Err(e) => e.exit(),
    };
    let outcome = match cli.command {
        Command::Net(args) => net::run(&args),
        Command::Check(args) => check::run(&args),
        Command::Run(args) => run::run(&args),
        Command::Sweep(args) => sweep::run(&args),
        Command::Model(args) => model::run(&args),
        Command::Crosscheck(args) => crosscheck::run(&args),
        Command::Calibrate(args) => calibrate::run(&args),
        Command::ExportGraph(args) => export_graph::run(&args),
    };
    match outcome {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            // Not `eprintln!`, which panics when stderr cannot be written (`2>/dev/full`).
            let _ = writeln!(std::io::stderr().lock(), "hetsim: error: {e}");
            ExitCode::from(e.exit_code())
        }
    }
}

/// Print `text` on stdout. A closed pipe (`hetsim check FILE | head -1`) is not an error: the
/// reader has what it wanted, and the command ends quietly with status 0, as other Unix tools
/// do. Any other failure (`> /dev/full`) is an error (exit status 2).
fn print(text: &str) -> crate::Result<()> {
    let mut out = std::io::stdout().lock();
    match out.write_all(text.as_bytes()).and_then(|()| out.flush()) {
        Ok(()) => Ok(()),
        Err(e) if e.kind() == ErrorKind::BrokenPipe => Ok(()),
        Err(e) => {
            Err(crate::InputError::new(format!("cannot write to standard output: {e}")).into())
        }
    }
}

/// A note on stderr (`eprintln!` without its panic when stderr cannot be written).
fn note(text: &str) {
    let _ = writeln!(std::io::stderr().lock(), "{text}");
}

/// The registered schedulers, one per line with its rule and its options (the text after
/// `hetsim run --help` and `hetsim sweep --help`).
fn schedulers_help() -> String {
    use std::fmt::Write as _;
    let width = crate::sched::names().map(str::len).max().unwrap_or(0);
    let mut out = String::from(
        "Schedulers (--sched, scheduler.name; options: [scheduler] or --set scheduler.KEY=VALUE):\n",
    );
    for e in crate::sched::REGISTRY {
        let _ = writeln!(out, "  {:<width$}  {}", e.name, e.help);
        if !e.options.is_empty() {
            let names: Vec<&str> = e.options.iter().map(|o| o.name).collect();
            let _ = writeln!(out, "  {:<width$}  options: {}", "", names.join(", "));
        }
    }
    out.push_str("Options, values and defaults: docs/scenarios.md; the rules: docs/schedulers.md");
    out
}

/// `v` as one line of JSON, newline included (the `--json` output of `run` and `model`).
fn json_line(v: &serde_json::Value) -> crate::Result<String> {
    let mut s = serde_json::to_string(v)
        .map_err(|e| crate::Error::Internal(format!("cannot write JSON: {e}")))?;
    s.push('\n');
    Ok(s)
}

/// Diagnostics go to stderr, filtered by `RUST_LOG` (default: warnings), so stdout stays clean
/// for results.
fn init_logging() {
    use tracing_subscriber::filter::LevelFilter;
    // A level name (`error`, `warn`, `info`, `debug`, `trace`, `off`); anything else: warnings.
    let level = std::env::var("RUST_LOG")
        .ok()
        .and_then(|v| v.trim().parse::<LevelFilter>().ok())
        .unwrap_or(LevelFilter::WARN);
    let _ = tracing_subscriber::fmt()
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .without_time()
        .try_init();
}

//! `hetsim crosscheck SCENARIO.toml [--set KEY=VALUE]... [--json]`: simulate a program scenario
//! and evaluate the analytic model of its workload, side by side ([`crate::crosscheck`]).

use std::path::PathBuf;

use clap::Args;

use crate::crosscheck;
use crate::scenario::Override;
use crate::{Error, InputError};

/// Options of `hetsim crosscheck`.
#[derive(Debug, Args)]
pub struct CrosscheckArgs {
    /// The scenario file (a program workload: offload, p2p, bcast, stencil, hpl).
    pub scenario: PathBuf,
    /// Override a scenario value by dotted path, e.g. `--set workload.hpu_threads=16`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// Run the command.
pub fn run(args: &CrosscheckArgs) -> Result<(), Error> {
    let overrides = args
        .set
        .iter()
        .map(|s| Override::parse_set(s))
        .collect::<Result<Vec<_>, InputError>>()?;
    let sc = crosscheck::load_scenario(&args.scenario, &overrides)?;
    let outcome = match &sc.workload {
        Some(w) => crosscheck::crosscheck(w, &sc.cluster).map_err(|e| e.in_file(&args.scenario))?,
        None => crosscheck::no_workload(&sc.kind),
    };
    if args.json {
        let value = serde_json::json!({
            "scenario": sc.name,
            "machine": sc.cluster.name(),
            "nodes": sc.cluster.nodes(),
            "ranks": sc.cluster.ranks(),
            "kind": sc.kind,
            "crosscheck": outcome,
        });
        println!(
            "{}",
            serde_json::to_string_pretty(&value).map_err(|e| Error::Internal(e.to_string()))?
        );
    } else {
        print!(
            "{}",
            crosscheck::text(
                &format!(
                    "{} ({} on {}, {} node(s), {} rank(s))",
                    sc.name,
                    sc.kind,
                    sc.cluster.name(),
                    sc.cluster.nodes(),
                    sc.cluster.ranks()
                ),
                &outcome
            )
        );
    }
    Ok(())
}

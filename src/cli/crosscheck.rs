//! `hetsim crosscheck SCENARIO.toml [--set KEY=VALUE]... [--json]`: simulate a program scenario
//! and evaluate the analytic model of its workload, side by side ([`crate::crosscheck`]).

use std::path::PathBuf;

use clap::Args;

use crate::crosscheck;
use crate::scenario::{self, Override};
use crate::workload::ProgramWorkload;
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
    let sc = scenario::load(&args.scenario, &overrides)?;
    let Some(workload) = &sc.program else {
        return Err(InputError::new(format!(
            "a task-graph workload has no analytic model to cross-check: crosscheck takes the \
             program kinds {}",
            ProgramWorkload::KINDS.join(", ")
        ))
        .at_field("workload.kind"))
        .map_err(|e| sc.locate(e).into());
    };
    let cluster = sc.load_cluster()?;
    let kind = workload.kind_name();
    let outcome = crosscheck::crosscheck(workload, &cluster).map_err(|e| match e {
        crate::Error::Input(e) => crate::Error::Input(sc.locate(e)),
        other => other,
    })?;
    if args.json {
        let value = serde_json::json!({
            "scenario": sc.name,
            "machine": cluster.name(),
            "nodes": cluster.nodes(),
            "ranks": cluster.ranks(),
            "kind": kind,
            "crosscheck": outcome,
        });
        let mut text =
            serde_json::to_string_pretty(&value).map_err(|e| Error::Internal(e.to_string()))?;
        text.push('\n');
        super::print(&text)
    } else {
        super::print(&crosscheck::text(
            &format!(
                "{} ({} on {}, {} node(s), {} rank(s))",
                sc.name,
                kind,
                cluster.name(),
                cluster.nodes(),
                cluster.ranks()
            ),
            &outcome,
        ))
    }
}

//! `hetsim export-graph SCENARIO.toml [--set KEY=VALUE]... [-o FILE.json]`: the scenario's task
//! graph in hetsim's JSON format (`docs/taskgraph-files.md`, schema
//! `docs/taskgraph.schema.json`), for any task-graph workload: a generated one (cholesky, lu,
//! gemm) or one read from a file (converted: a `tasks.rec` becomes JSON).

use std::path::PathBuf;

use clap::Args;

use crate::files::{FileRole, RoleFile, check_distinct, write_output};

use crate::InputError;
use crate::scenario::{self, Override};

/// Options of `hetsim export-graph`.
#[derive(Debug, Args)]
pub struct ExportGraphArgs {
    /// Scenario file (e.g. scenarios/cholesky-mirage.toml).
    pub scenario: PathBuf,
    /// Override a scenario value by dotted path, e.g. `--set workload.n=19200`.
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub set: Vec<String>,
    /// Write the JSON to FILE instead of standard output.
    #[arg(short = 'o', long = "output", value_name = "FILE")]
    pub output: Option<PathBuf>,
}

/// Build or read the scenario's graph and write it as JSON.
pub fn run(args: &ExportGraphArgs) -> crate::Result<()> {
    let ovs = args
        .set
        .iter()
        .map(|s| Override::parse_set(s))
        .collect::<Result<Vec<_>, _>>()?;
    let sc = scenario::load(&args.scenario, &ovs)?;
    if let Some(path) = &args.output {
        check_distinct(
            &sc.input_files()?,
            &[RoleFile::new(FileRole::Output("output"), path)],
        )?;
    }
    if sc.program.is_some() {
        return Err(sc
            .locate(
                InputError::new(
                    "export-graph writes task-graph workloads (cholesky, lu, gemm, taskgraph); \
                     this is a program workload",
                )
                .at_field("workload.kind"),
            )
            .into());
    }
    let graph = sc.task_graph()?;
    let name = Some(match &sc.description {
        Some(d) => format!("{}: {d}", sc.name),
        None => sc.name.clone(),
    });
    let text = crate::workload::import::json::write(&graph, name).map_err(|e| sc.locate(e))?;
    match &args.output {
        Some(path) => Ok(write_output(path, text.as_bytes())?),
        None => super::print(&text),
    }
}

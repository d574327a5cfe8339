//! `hetsim check FILE`: validate a machine or cluster file and print its summary.

use std::path::PathBuf;

use clap::Args;

/// Options of `hetsim check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Machine or cluster file to validate (e.g. calibration/mirage.toml,
    /// calibration/hdpex-p100-cluster.toml).
    pub file: PathBuf,
}

/// Load and validate the machine or cluster file, then print its summary on stdout. Any problem
/// with the file is an input error (exit status 2) naming the file, the line and the field.
pub fn run(args: &CheckArgs) -> crate::Result<()> {
    let cluster = crate::cluster::load(&args.file)?;
    if cluster.nic().is_none() {
        // A plain machine file: its own summary, as always.
        super::print(&cluster.node_machine().summary())
    } else {
        super::print(&cluster.summary().map_err(|e| e.in_file(&args.file))?)
    }
}

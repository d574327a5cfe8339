//! `hetsim check FILE`: validate a machine file and print its summary.

use std::path::PathBuf;

use clap::Args;

/// Options of `hetsim check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Machine file to validate (e.g. calibration/mirage.toml).
    pub file: PathBuf,
}

pub fn run(args: &CheckArgs) -> crate::Result<()> {
    let _ = args;
    Err(crate::Error::Internal("machine files are not wired yet".into()))
}

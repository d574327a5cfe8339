//! `hetsim net CASE.json`: finish times of a flow set on a fluid network.

use std::path::PathBuf;

use clap::Args;

/// Options of `hetsim net`.
#[derive(Debug, Args)]
pub struct NetArgs {
    /// Case file in the SimGrid oracle's JSON format.
    pub case: PathBuf,
}

pub fn run(args: &NetArgs) -> crate::Result<()> {
    let _ = args;
    Err(crate::Error::Internal("not wired yet".into()))
}

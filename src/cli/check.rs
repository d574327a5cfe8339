//! `hetsim check FILE`: validate a machine file and print its summary.

use std::path::PathBuf;

use clap::Args;

/// Options of `hetsim check`.
#[derive(Debug, Args)]
pub struct CheckArgs {
    /// Machine file to validate (e.g. calibration/mirage.toml).
    pub file: PathBuf,
}

/// Load and validate the machine file, then print its summary on stdout. Any problem with the
/// file is an input error (exit status 2) naming the file, the line and the field.
pub fn run(args: &CheckArgs) -> crate::Result<()> {
    let machine = crate::machine::load(&args.file)?;
    print!("{}", machine.summary());
    Ok(())
}

//! `hetsim net CASE.json [--sharing plain|simgrid] [--quiet]`: finish times of a flow set on a
//! fluid network, printed as `{"flow_id": finish_time_s, ...}`.

use std::path::PathBuf;

use clap::{Args, ValueEnum};

use super::progress::CountBar;
use crate::fluid::SharingMode;
use crate::netcase;

/// Options of `hetsim net`.
#[derive(Debug, Args)]
pub struct NetArgs {
    /// Case file in the SimGrid oracle's JSON format (hosts, links, routes, flows; see
    /// scripts/oracle/README.md).
    pub case: PathBuf,
    /// How flows share a link: `plain` is unweighted max-min (each flow waits its route
    /// latency, then shares); `simgrid` weights each flow by 1/route latency, as SimGrid CM02.
    #[arg(long, value_enum, default_value_t = SharingArg::Plain)]
    pub sharing: SharingArg,
    /// No progress on stderr (otherwise, on a terminal, a bar of flows finished once the run
    /// has lasted a second).
    #[arg(long, short)]
    pub quiet: bool,
}

/// Sharing mode on the command line.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum SharingArg {
    /// Unweighted max-min.
    Plain,
    /// SimGrid CM02 latency weighting.
    Simgrid,
}

impl From<SharingArg> for SharingMode {
    fn from(s: SharingArg) -> Self {
        match s {
            SharingArg::Plain => SharingMode::Plain,
            SharingArg::Simgrid => SharingMode::SimGrid,
        }
    }
}

pub fn run(args: &NetArgs) -> crate::Result<()> {
    let case = netcase::load(&args.case)?;
    let mut bar = CountBar::new(!args.quiet, "flows");
    bar.set_total(case.flows().len() as u64);
    let results = case.run_observed(args.sharing.into(), &mut |n| bar.advance(n as u64));
    bar.finish();
    super::print(&format!("{}\n", netcase::finish_times_json(&results)))
}

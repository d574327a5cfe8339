//! `hetsim net CASE.json [--sharing plain|simgrid] [--reshare-delay DURATION] [--quiet]`: finish
//! times of a flow set on a fluid network, printed as `{"flow_id": finish_time_s, ...}`.

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
    /// Approximate: let the re-share of the links that follows completions wait up to this
    /// long ("100us", "1 ms"; default 0: exact). Completions within it share one re-solve, the
    /// capacity they free stays unused until then, and flows whose latency ends meanwhile join
    /// only then; finish dates move by up to a few times the delay, mostly later. For flow sets
    /// where most flows share links with most others (an all-to-all), where an exact re-share
    /// after every completion costs in proportion to the whole set.
    #[arg(long, value_name = "DURATION", value_parser = parse_delay, default_value = "0")]
    pub reshare_delay: f64,
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

/// A duration with its unit, as the scenarios write them.
fn parse_delay(text: &str) -> Result<f64, String> {
    crate::units::parse_secs(text).map_err(|e| e.to_string())
}

pub fn run(args: &NetArgs) -> crate::Result<()> {
    let case = netcase::load(&args.case)?;
    let mut bar = CountBar::new(!args.quiet, "flows");
    bar.set_total(case.flows().len() as u64);
    let results = case.run_observed(args.sharing.into(), args.reshare_delay, &mut |n| {
        bar.advance(n as u64)
    });
    bar.finish();
    super::print(&format!("{}\n", netcase::finish_times_json(&results)))
}

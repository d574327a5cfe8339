//! The `bcast` workload: broadcast microbenchmark, as an MPI-style program built by
//! [`crate::collective::bcast`].

use serde::Deserialize;

use crate::collective::{self, Bcast, BcastAlgorithm, Selection};
use crate::{Program, RankId};
use hetsim_core::error::InputError;
use hetsim_platform::cluster::Cluster;

use super::ProgramGenerator;
use super::collectives::{Members, members, program};
use super::p2p::{BufferSpec, ByteCount};

/// `workload.algorithm` of `bcast`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BcastChoice {
    /// MPICH's selection rule.
    #[default]
    Auto,
    /// SimGrid 3.32's `mpich` selector (one rank per node): the binomial tree, through rank 0.
    SmpiMpich,
    /// Binomial tree.
    Binomial,
    /// Scatter + recursive-doubling allgather.
    ScatterDoubling,
    /// Scatter + ring allgather.
    ScatterRing,
}

impl BcastChoice {
    /// How the algorithm is chosen.
    pub fn selection(self) -> Selection<BcastAlgorithm> {
        match self {
            BcastChoice::Auto => Selection::Mpich,
            BcastChoice::SmpiMpich => Selection::SmpiMpich,
            BcastChoice::Binomial => Selection::Forced(BcastAlgorithm::Binomial),
            BcastChoice::ScatterDoubling => Selection::Forced(BcastAlgorithm::RecursiveDoubling),
            BcastChoice::ScatterRing => Selection::Forced(BcastAlgorithm::Ring),
        }
    }
}

/// `[workload]` with `kind = "bcast"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct BcastSpec {
    /// Message size.
    pub bytes: ByteCount,
    /// Root rank (default 0).
    #[serde(default)]
    pub root: u32,
    /// Algorithm (default `auto`: MPICH's rule).
    #[serde(default)]
    pub algorithm: BcastChoice,
    /// The ranks taking part (default: all); must contain the root.
    #[serde(default)]
    pub ranks: Option<Vec<u32>>,
    /// Where the data is on every rank (default device).
    #[serde(default)]
    pub buffer: BufferSpec,
}

impl BcastSpec {
    /// The group for `cluster`, checked.
    pub fn group(&self, cluster: &Cluster) -> Result<Vec<RankId>, InputError> {
        Ok(self.members(cluster)?.group)
    }

    fn members(&self, cluster: &Cluster) -> Result<Members, InputError> {
        members(
            cluster,
            self.ranks.as_deref(),
            Some(self.root),
            self.algorithm == BcastChoice::SmpiMpich,
        )
    }

    /// The algorithm the broadcast runs on a group of `procs` ranks.
    pub fn chosen_algorithm(&self, procs: usize) -> BcastAlgorithm {
        let group = vec![RankId(0); procs];
        self.collective(&group, 0).chosen_algorithm()
    }

    fn collective<'a>(&self, group: &'a [RankId], root: usize) -> Bcast<'a> {
        Bcast {
            group,
            root,
            bytes: self.bytes.0,
            buffer: self.buffer.into(),
            algorithm: self.algorithm.selection(),
        }
    }
}

impl ProgramGenerator for BcastSpec {
    fn generate(&self, cluster: &Cluster) -> Result<Program, InputError> {
        let m = self.members(cluster)?;
        let spec = self.collective(&m.group, m.root);
        Ok(program(cluster, |b| {
            collective::bcast(b, &spec, &[]);
        }))
    }

    fn counted_flops(&self) -> f64 {
        0.0
    }
}

//! The `bcast` workload: broadcast microbenchmark, as an MPI-style program built by
//! [`crate::collective::bcast`].

use serde::Deserialize;

use crate::collective::{self, Bcast};
use crate::{Program, ProgramBuilder, RankId};
use hetsim_core::error::InputError;
use hetsim_core::mpich::BcastAlgorithm;
use hetsim_platform::cluster::Cluster;

use super::ProgramGenerator;
use super::p2p::{BufferSpec, ByteCount};

/// `workload.algorithm`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum BcastChoice {
    /// MPICH's selection rule.
    #[default]
    Auto,
    /// Binomial tree.
    Binomial,
    /// Scatter + recursive-doubling allgather (power-of-two groups; others get the ring).
    ScatterDoubling,
    /// Scatter + ring allgather.
    ScatterRing,
}

impl BcastChoice {
    /// The forced algorithm, if any.
    pub fn algorithm(self) -> Option<BcastAlgorithm> {
        match self {
            BcastChoice::Auto => None,
            BcastChoice::Binomial => Some(BcastAlgorithm::Binomial),
            BcastChoice::ScatterDoubling => Some(BcastAlgorithm::RecursiveDoubling),
            BcastChoice::ScatterRing => Some(BcastAlgorithm::Ring),
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
    /// The group for `cluster`.
    pub fn group(&self, cluster: &Cluster) -> Result<Vec<RankId>, InputError> {
        let n = cluster.ranks();
        let group: Vec<u32> = match &self.ranks {
            Some(r) => r.clone(),
            None => (0..n).collect(),
        };
        let mut seen = std::collections::BTreeSet::new();
        for &r in &group {
            if r >= n {
                return Err(InputError::new(format!(
                    "rank {r} does not exist: the cluster has {n} ranks"
                ))
                .at_field("workload.ranks"));
            }
            if !seen.insert(r) {
                return Err(
                    InputError::new(format!("rank {r} is listed twice")).at_field("workload.ranks")
                );
            }
        }
        if !seen.contains(&self.root) {
            return Err(InputError::new(format!(
                "the root, rank {}, is not among the ranks taking part",
                self.root
            ))
            .at_field("workload.root"));
        }
        Ok(group.into_iter().map(RankId).collect())
    }
}

impl ProgramGenerator for BcastSpec {
    fn generate(&self, cluster: &Cluster) -> Result<Program, InputError> {
        let group = self.group(cluster)?;
        let root = group
            .iter()
            .position(|r| r.0 == self.root)
            .expect("checked by group()");
        let mut b = ProgramBuilder::new(cluster.ranks());
        let spec = Bcast {
            group: &group,
            root,
            bytes: self.bytes.0,
            buffer: self.buffer.into(),
            algorithm: self.algorithm.algorithm(),
        };
        collective::bcast(&mut b, &spec, &[]);
        Ok(b.build())
    }

    fn counted_flops(&self) -> f64 {
        0.0
    }
}

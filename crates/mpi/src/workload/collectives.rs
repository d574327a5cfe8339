//! The `reduce`, `allreduce` and `alltoall` workloads: collective microbenchmarks, as MPI-style
//! programs built by [`crate::collective`], and what they share with `bcast` (the group).

use serde::Deserialize;

use crate::collective::{
    self, Allreduce, AllreduceAlgorithm, Alltoall, AlltoallAlgorithm, Reduce, ReduceAlgorithm,
    Selection,
};
use crate::{Program, ProgramBuilder, RankId};
use hetsim_core::error::InputError;
use hetsim_core::mpich::MPICH_ALLTOALL_THROTTLE;
use hetsim_platform::cluster::Cluster;

use super::ProgramGenerator;
use super::p2p::{BufferSpec, ByteCount};

/// A collective's group, checked, and the root's index in it.
pub(super) struct Members {
    pub group: Vec<RankId>,
    pub root: usize,
}

/// The group of `workload.ranks` (default: every rank) on `cluster`: ranks that exist, none
/// twice, the root (if any) among them; with SimGrid's selector (`smpi`), one rank per node,
/// the only case it is modelled for.
pub(super) fn members(
    cluster: &Cluster,
    ranks: Option<&[u32]>,
    root: Option<u32>,
    smpi: bool,
) -> Result<Members, InputError> {
    let n = cluster.ranks();
    let group: Vec<u32> = ranks.map_or_else(|| (0..n).collect(), <[u32]>::to_vec);
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
    let root = match root {
        None => 0,
        Some(root) => group.iter().position(|&r| r == root).ok_or_else(|| {
            InputError::new(format!(
                "the root, rank {root}, is not among the ranks taking part"
            ))
            .at_field("workload.root")
        })?,
    };
    let group: Vec<RankId> = group.into_iter().map(RankId).collect();
    if smpi {
        let mut nodes = std::collections::BTreeMap::new();
        for &r in &group {
            let node = cluster.rank_location(r).0;
            if let Some(other) = nodes.insert(node, r) {
                return Err(InputError::new(format!(
                    "algorithm \"smpi-mpich\" models SimGrid's mpich selector with one rank per \
                     node, but {other} and {r} are both on node {}: its SMP algorithms' \
                     intra-node phases are not modelled (set machine.gpus_per_node = 1, or \
                     choose an algorithm)",
                    node.0
                ))
                .at_field("workload.algorithm"));
            }
        }
    }
    Ok(Members { group, root })
}

/// The program `build` writes on a builder over `cluster`'s ranks.
pub(super) fn program(cluster: &Cluster, build: impl FnOnce(&mut ProgramBuilder)) -> Program {
    let mut b = ProgramBuilder::new(cluster.ranks());
    build(&mut b);
    b.build()
}

fn default_element_bytes() -> u64 {
    8
}

/// Elements of `element_bytes` in `bytes`, checked: a whole, positive number of them.
fn element_count(bytes: ByteCount, element_bytes: u64) -> Result<u64, InputError> {
    if element_bytes == 0 {
        return Err(
            InputError::new("an element has at least one byte").at_field("workload.element_bytes")
        );
    }
    let count = bytes.0 / element_bytes as f64;
    if count.fract() != 0.0 {
        return Err(InputError::new(format!(
            "{} bytes is not a whole number of {element_bytes}-byte elements (set \
             workload.element_bytes, e.g. 1)",
            bytes.0
        ))
        .at_field("workload.bytes"));
    }
    Ok(count as u64)
}

fn check_op_cost(op_s_per_byte: f64) -> Result<(), InputError> {
    if op_s_per_byte.is_finite() && op_s_per_byte >= 0.0 {
        Ok(())
    } else {
        Err(InputError::new(format!(
            "{op_s_per_byte} s per byte: expected a finite number ≥ 0"
        ))
        .at_field("workload.op_s_per_byte"))
    }
}

/// `workload.algorithm` of `reduce`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum ReduceChoice {
    /// MPICH's selection rule.
    #[default]
    Auto,
    /// SimGrid 3.32's `mpich` selector (one rank per node).
    SmpiMpich,
    /// Binomial tree.
    Binomial,
    /// Reduce-scatter + gather (Rabenseifner).
    ReduceScatterGather,
}

impl ReduceChoice {
    /// How the algorithm is chosen.
    pub fn selection(self) -> Selection<ReduceAlgorithm> {
        match self {
            ReduceChoice::Auto => Selection::Mpich,
            ReduceChoice::SmpiMpich => Selection::SmpiMpich,
            ReduceChoice::Binomial => Selection::Forced(ReduceAlgorithm::Binomial),
            ReduceChoice::ReduceScatterGather => {
                Selection::Forced(ReduceAlgorithm::ReduceScatterGather)
            }
        }
    }
}

/// `[workload]` with `kind = "reduce"`: `MPI_Reduce` with a commutative built-in operation
/// (`MPI_SUM`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReduceSpec {
    /// Size of the vector reduced.
    pub bytes: ByteCount,
    /// Bytes per element (default 8, `MPI_DOUBLE`): MPICH's choice counts elements.
    #[serde(default = "default_element_bytes")]
    pub element_bytes: u64,
    /// Root rank (default 0).
    #[serde(default)]
    pub root: u32,
    /// Algorithm (default `auto`: MPICH's rule).
    #[serde(default)]
    pub algorithm: ReduceChoice,
    /// The ranks taking part (default: all); must contain the root.
    #[serde(default)]
    pub ranks: Option<Vec<u32>>,
    /// Where the data is on every rank (default device).
    #[serde(default)]
    pub buffer: BufferSpec,
    /// CPU seconds per byte the operation reduces (default 0: free, as in SMPI).
    #[serde(default)]
    pub op_s_per_byte: f64,
}

impl ReduceSpec {
    /// The algorithm the reduce runs on a group of `procs` ranks.
    pub fn chosen_algorithm(&self, procs: usize) -> Result<ReduceAlgorithm, InputError> {
        let group = vec![RankId(0); procs];
        Ok(self.collective(&group, 0)?.chosen_algorithm())
    }

    fn collective<'a>(&self, group: &'a [RankId], root: usize) -> Result<Reduce<'a>, InputError> {
        check_op_cost(self.op_s_per_byte)?;
        Ok(Reduce {
            group,
            root,
            count: element_count(self.bytes, self.element_bytes)?,
            element_bytes: self.element_bytes,
            buffer: self.buffer.into(),
            algorithm: self.algorithm.selection(),
            op_s_per_byte: self.op_s_per_byte,
        })
    }
}

impl ProgramGenerator for ReduceSpec {
    fn generate(&self, cluster: &Cluster) -> Result<Program, InputError> {
        let smpi = self.algorithm == ReduceChoice::SmpiMpich;
        let m = members(cluster, self.ranks.as_deref(), Some(self.root), smpi)?;
        let spec = self.collective(&m.group, m.root)?;
        Ok(program(cluster, |b| {
            collective::reduce(b, &spec, &[]);
        }))
    }

    fn counted_flops(&self) -> f64 {
        0.0
    }
}

/// `workload.algorithm` of `allreduce`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AllreduceChoice {
    /// MPICH's selection rule.
    #[default]
    Auto,
    /// SimGrid 3.32's `mpich` selector (one rank per node): recursive doubling.
    SmpiMpich,
    /// Recursive doubling.
    RecursiveDoubling,
    /// Reduce-scatter + allgather (Rabenseifner).
    ReduceScatterAllgather,
}

impl AllreduceChoice {
    /// How the algorithm is chosen.
    pub fn selection(self) -> Selection<AllreduceAlgorithm> {
        match self {
            AllreduceChoice::Auto => Selection::Mpich,
            AllreduceChoice::SmpiMpich => Selection::SmpiMpich,
            AllreduceChoice::RecursiveDoubling => {
                Selection::Forced(AllreduceAlgorithm::RecursiveDoubling)
            }
            AllreduceChoice::ReduceScatterAllgather => {
                Selection::Forced(AllreduceAlgorithm::ReduceScatterAllgather)
            }
        }
    }
}

/// `[workload]` with `kind = "allreduce"`: `MPI_Allreduce` with a commutative built-in
/// operation (`MPI_SUM`).
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AllreduceSpec {
    /// Size of the vector reduced.
    pub bytes: ByteCount,
    /// Bytes per element (default 8, `MPI_DOUBLE`): MPICH's choice counts elements.
    #[serde(default = "default_element_bytes")]
    pub element_bytes: u64,
    /// Algorithm (default `auto`: MPICH's rule).
    #[serde(default)]
    pub algorithm: AllreduceChoice,
    /// The ranks taking part (default: all).
    #[serde(default)]
    pub ranks: Option<Vec<u32>>,
    /// Where the data is on every rank (default device).
    #[serde(default)]
    pub buffer: BufferSpec,
    /// CPU seconds per byte the operation reduces (default 0: free, as in SMPI).
    #[serde(default)]
    pub op_s_per_byte: f64,
}

impl AllreduceSpec {
    /// The algorithm the allreduce runs on a group of `procs` ranks.
    pub fn chosen_algorithm(&self, procs: usize) -> Result<AllreduceAlgorithm, InputError> {
        let group = vec![RankId(0); procs];
        Ok(self.collective(&group)?.chosen_algorithm())
    }

    fn collective<'a>(&self, group: &'a [RankId]) -> Result<Allreduce<'a>, InputError> {
        check_op_cost(self.op_s_per_byte)?;
        Ok(Allreduce {
            group,
            count: element_count(self.bytes, self.element_bytes)?,
            element_bytes: self.element_bytes,
            buffer: self.buffer.into(),
            algorithm: self.algorithm.selection(),
            op_s_per_byte: self.op_s_per_byte,
        })
    }
}

impl ProgramGenerator for AllreduceSpec {
    fn generate(&self, cluster: &Cluster) -> Result<Program, InputError> {
        let smpi = self.algorithm == AllreduceChoice::SmpiMpich;
        let m = members(cluster, self.ranks.as_deref(), None, smpi)?;
        let spec = self.collective(&m.group)?;
        Ok(program(cluster, |b| {
            collective::allreduce(b, &spec, &[]);
        }))
    }

    fn counted_flops(&self) -> f64 {
        0.0
    }
}

/// `workload.algorithm` of `alltoall`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum AlltoallChoice {
    /// MPICH's selection rule.
    #[default]
    Auto,
    /// SimGrid 3.32's `mpich` selector (one rank per node).
    SmpiMpich,
    /// Bruck et al.'s.
    Bruck,
    /// Irecvs and isends posted `throttle` peers at a time.
    Scattered,
    /// Pairwise exchange (partner rank XOR i on a power of two, else ring order).
    Pairwise,
    /// To rank + i, from rank − i.
    Ring,
}

/// `[workload]` with `kind = "alltoall"`: `MPI_Alltoall`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AlltoallSpec {
    /// What each rank sends to each other rank.
    pub bytes: ByteCount,
    /// Algorithm (default `auto`: MPICH's rule).
    #[serde(default)]
    pub algorithm: AlltoallChoice,
    /// Peers per round of `scattered` (default MPICH's 32).
    #[serde(default)]
    pub throttle: Option<u32>,
    /// The ranks taking part (default: all).
    #[serde(default)]
    pub ranks: Option<Vec<u32>>,
    /// Where the data is on every rank (default device).
    #[serde(default)]
    pub buffer: BufferSpec,
}

impl AlltoallSpec {
    /// How the algorithm is chosen.
    pub fn selection(&self) -> Result<Selection<AlltoallAlgorithm>, InputError> {
        if self.throttle.is_some() && self.algorithm != AlltoallChoice::Scattered {
            return Err(InputError::new(
                "a throttle is for algorithm \"scattered\" (the rules choose their own)",
            )
            .at_field("workload.throttle"));
        }
        let throttle = self.throttle.unwrap_or(MPICH_ALLTOALL_THROTTLE);
        if throttle == 0 {
            return Err(
                InputError::new("at least one peer per round").at_field("workload.throttle")
            );
        }
        Ok(match self.algorithm {
            AlltoallChoice::Auto => Selection::Mpich,
            AlltoallChoice::SmpiMpich => Selection::SmpiMpich,
            AlltoallChoice::Bruck => Selection::Forced(AlltoallAlgorithm::Bruck),
            AlltoallChoice::Scattered => {
                Selection::Forced(AlltoallAlgorithm::Scattered { throttle })
            }
            AlltoallChoice::Pairwise => Selection::Forced(AlltoallAlgorithm::Pairwise),
            AlltoallChoice::Ring => Selection::Forced(AlltoallAlgorithm::Ring),
        })
    }

    fn collective<'a>(&self, group: &'a [RankId]) -> Result<Alltoall<'a>, InputError> {
        let spec = Alltoall {
            group,
            bytes: self.bytes.0,
            buffer: self.buffer.into(),
            algorithm: self.selection()?,
        };
        spec.chosen_algorithm()
            .map_err(|e| InputError::new(e).at_field("workload.algorithm"))?;
        Ok(spec)
    }

    /// The algorithm the all-to-all runs on a group of `procs` ranks.
    pub fn chosen_algorithm(&self, procs: usize) -> Result<AlltoallAlgorithm, InputError> {
        let group = vec![RankId(0); procs];
        let spec = self.collective(&group)?;
        Ok(spec.chosen_algorithm().expect("checked by collective()"))
    }
}

impl ProgramGenerator for AlltoallSpec {
    fn generate(&self, cluster: &Cluster) -> Result<Program, InputError> {
        let smpi = self.algorithm == AlltoallChoice::SmpiMpich;
        let m = members(cluster, self.ranks.as_deref(), None, smpi)?;
        let spec = self.collective(&m.group)?;
        Ok(program(cluster, |b| {
            collective::alltoall(b, &spec, &[]);
        }))
    }

    fn counted_flops(&self) -> f64 {
        0.0
    }
}

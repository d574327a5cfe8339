//! Collectives built from point-to-point messages, so that the executor simulates their
//! contention instead of assuming it: `MPI_Bcast`, `MPI_Reduce`, `MPI_Allreduce` and
//! `MPI_Alltoall` by MPICH's algorithms, chosen by MPICH's rule, by SimGrid's `mpich` selector,
//! or forced ([`Selection`], [`hetsim_core::mpich`]).
//!
//! Each algorithm is written as the MPI calls every member posts, in MPICH's order (SimGrid
//! 3.32's copies of MPICH's code, which SMPI runs; module documentation of each algorithm), and
//! those calls become messages following MPI's eager and rendezvous protocols as SMPI runs them
//! ([`calls`]): a send of fewer than [`EAGER_BELOW_BYTES`] leaves at once and its sender goes
//! on; a longer one leaves when its receive is posted too, and a blocking send returns when it is
//! delivered. Every message carries an [`ENVELOPE_BYTES`] envelope. A member's messages to
//! itself are local copies: free. The reduction operation costs `op_s_per_byte` of the member's
//! CPU per byte reduced, 0 by default as in SMPI (which applies it without timing it).
//!
//! Every function takes `ready`, per member the operation after which it enters the collective
//! (an empty slice: all at the start), and returns per member the operation after which its
//! call has returned: the root of an eager broadcast returns at once, a receiver once it holds
//! the data.

mod alltoall;
mod bcast;
mod calls;
mod reduce;

pub use calls::{EAGER_BELOW_BYTES, ENVELOPE_BYTES};
pub use hetsim_core::mpich::{
    AllreduceAlgorithm, AlltoallAlgorithm, BcastAlgorithm, MpichBcastThresholds, ReduceAlgorithm,
    Selection,
};

use hetsim_core::mpich::{
    mpich_allreduce_algorithm, mpich_alltoall_algorithm, mpich_bcast_algorithm,
    mpich_reduce_algorithm, smpi_mpich_allreduce_algorithm, smpi_mpich_alltoall_algorithm,
    smpi_mpich_bcast_algorithm, smpi_mpich_reduce_algorithm,
};

use super::program::{Buffer, OpId, ProgramBuilder, RankId};
use calls::{Calls, Lowering, lower};

/// A broadcast to build.
#[derive(Debug, Clone, Copy)]
pub struct Bcast<'a> {
    /// The ranks taking part, in the order that defines communicator ranks.
    pub group: &'a [RankId],
    /// Index in `group` of the root.
    pub root: usize,
    /// Message size, bytes (rounded up to a whole byte by the scatter algorithms).
    pub bytes: f64,
    /// Where the data lives on every rank (sent from and received into).
    pub buffer: Buffer,
    /// How the algorithm is chosen.
    pub algorithm: Selection<BcastAlgorithm>,
}

impl Bcast<'_> {
    /// The algorithm used: forced, or the selector's choice for this group and message size.
    pub fn chosen_algorithm(&self) -> BcastAlgorithm {
        match self.algorithm {
            Selection::Forced(a) => a,
            Selection::Mpich => mpich_bcast_algorithm(
                self.group.len() as u64,
                self.bytes,
                &MpichBcastThresholds::default(),
            ),
            Selection::SmpiMpich => smpi_mpich_bcast_algorithm(),
        }
    }
}

/// Build a broadcast (module documentation for `ready` and the result).
///
/// # Panics
/// If `root` is out of range or `ready` has another length than `group` (generator bugs).
pub fn bcast(b: &mut ProgramBuilder, spec: &Bcast<'_>, ready: &[Option<OpId>]) -> Vec<OpId> {
    let n = spec.group.len();
    assert!(spec.root < n, "broadcast root {} of {n} ranks", spec.root);
    let mut c = Calls::new(n);
    if n > 1 {
        match (spec.algorithm, spec.chosen_algorithm()) {
            (Selection::SmpiMpich, _) => bcast::smp_binomial(&mut c, spec.root, spec.bytes),
            (_, BcastAlgorithm::Binomial) => bcast::binomial(&mut c, spec.root, spec.bytes),
            (_, BcastAlgorithm::RecursiveDoubling) => {
                bcast::scatter_recursive_doubling(&mut c, spec.root, spec.bytes)
            }
            (_, BcastAlgorithm::Ring) => bcast::scatter_ring(&mut c, spec.root, spec.bytes),
        }
    }
    lower(b, lowering(spec.group, spec.buffer, 0.0), c, ready)
}

fn lowering(group: &[RankId], buffer: Buffer, op_s_per_byte: f64) -> Lowering<'_> {
    Lowering {
        group,
        buffer,
        op_s_per_byte,
    }
}

/// A reduce to build (the operation commutative and built in, as `MPI_SUM`).
#[derive(Debug, Clone, Copy)]
pub struct Reduce<'a> {
    /// The ranks taking part, in the order that defines communicator ranks.
    pub group: &'a [RankId],
    /// Index in `group` of the root.
    pub root: usize,
    /// Elements reduced.
    pub count: u64,
    /// Bytes per element (8 for `MPI_DOUBLE`).
    pub element_bytes: u64,
    /// Where the data lives on every rank.
    pub buffer: Buffer,
    /// How the algorithm is chosen.
    pub algorithm: Selection<ReduceAlgorithm>,
    /// CPU seconds per byte the operation reduces (0: free, as SMPI has it).
    pub op_s_per_byte: f64,
}

impl Reduce<'_> {
    /// Bytes of the vector.
    pub fn bytes(&self) -> f64 {
        (self.count * self.element_bytes) as f64
    }

    /// The algorithm used: forced, or the selector's choice.
    pub fn chosen_algorithm(&self) -> ReduceAlgorithm {
        let p = self.group.len() as u64;
        match self.algorithm {
            Selection::Forced(a) => a,
            Selection::Mpich => mpich_reduce_algorithm(p, self.count, self.bytes()),
            Selection::SmpiMpich => smpi_mpich_reduce_algorithm(p, self.count, self.bytes()),
        }
    }
}

/// Build a reduce (module documentation for `ready` and the result).
///
/// # Panics
/// If `root` is out of range or `ready` has another length than `group` (generator bugs).
pub fn reduce(b: &mut ProgramBuilder, spec: &Reduce<'_>, ready: &[Option<OpId>]) -> Vec<OpId> {
    let n = spec.group.len();
    assert!(spec.root < n, "reduce root {} of {n} ranks", spec.root);
    let mut c = Calls::new(n);
    if n > 1 && spec.count > 0 {
        match spec.chosen_algorithm() {
            ReduceAlgorithm::Binomial => reduce::reduce_binomial(&mut c, spec.root, spec.bytes()),
            ReduceAlgorithm::ReduceScatterGather => reduce::reduce_scatter_gather(
                &mut c,
                spec.root,
                spec.count,
                spec.element_bytes as f64,
            ),
        }
    }
    let how = lowering(spec.group, spec.buffer, spec.op_s_per_byte);
    lower(b, how, c, ready)
}

/// An allreduce to build (the operation commutative and built in, as `MPI_SUM`).
#[derive(Debug, Clone, Copy)]
pub struct Allreduce<'a> {
    /// The ranks taking part, in the order that defines communicator ranks.
    pub group: &'a [RankId],
    /// Elements reduced.
    pub count: u64,
    /// Bytes per element (8 for `MPI_DOUBLE`).
    pub element_bytes: u64,
    /// Where the data lives on every rank.
    pub buffer: Buffer,
    /// How the algorithm is chosen.
    pub algorithm: Selection<AllreduceAlgorithm>,
    /// CPU seconds per byte the operation reduces (0: free, as SMPI has it).
    pub op_s_per_byte: f64,
}

impl Allreduce<'_> {
    /// Bytes of the vector.
    pub fn bytes(&self) -> f64 {
        (self.count * self.element_bytes) as f64
    }

    /// The algorithm used: forced, or the selector's choice.
    pub fn chosen_algorithm(&self) -> AllreduceAlgorithm {
        let p = self.group.len() as u64;
        match self.algorithm {
            Selection::Forced(a) => a,
            Selection::Mpich => mpich_allreduce_algorithm(p, self.count, self.bytes()),
            Selection::SmpiMpich => smpi_mpich_allreduce_algorithm(),
        }
    }
}

/// Build an allreduce (module documentation for `ready` and the result).
///
/// # Panics
/// If `ready` has another length than `group` (a generator bug).
pub fn allreduce(
    b: &mut ProgramBuilder,
    spec: &Allreduce<'_>,
    ready: &[Option<OpId>],
) -> Vec<OpId> {
    let n = spec.group.len();
    let mut c = Calls::new(n);
    if n > 1 && spec.count > 0 {
        match spec.chosen_algorithm() {
            AllreduceAlgorithm::RecursiveDoubling => {
                reduce::allreduce_recursive_doubling(&mut c, spec.bytes())
            }
            AllreduceAlgorithm::ReduceScatterAllgather => {
                reduce::allreduce_reduce_scatter_allgather(
                    &mut c,
                    spec.count,
                    spec.element_bytes as f64,
                )
            }
        }
    }
    let how = lowering(spec.group, spec.buffer, spec.op_s_per_byte);
    lower(b, how, c, ready)
}

/// An all-to-all to build.
#[derive(Debug, Clone, Copy)]
pub struct Alltoall<'a> {
    /// The ranks taking part, in the order that defines communicator ranks.
    pub group: &'a [RankId],
    /// Bytes each rank sends to each other rank.
    pub bytes: f64,
    /// Where the data lives on every rank.
    pub buffer: Buffer,
    /// How the algorithm is chosen.
    pub algorithm: Selection<AlltoallAlgorithm>,
}

impl Alltoall<'_> {
    /// The algorithm used: forced, or the selector's choice; `Err` says why SimGrid's selector
    /// has none (it aborts).
    pub fn chosen_algorithm(&self) -> Result<AlltoallAlgorithm, String> {
        let p = self.group.len() as u64;
        match self.algorithm {
            Selection::Forced(a) => Ok(a),
            Selection::Mpich => Ok(mpich_alltoall_algorithm(p, self.bytes)),
            Selection::SmpiMpich => smpi_mpich_alltoall_algorithm(p, self.bytes),
        }
    }
}

/// Build an all-to-all (module documentation for `ready` and the result).
///
/// # Panics
/// If [`Alltoall::chosen_algorithm`] fails (generators check it first) or `ready` has another
/// length than `group`.
pub fn alltoall(b: &mut ProgramBuilder, spec: &Alltoall<'_>, ready: &[Option<OpId>]) -> Vec<OpId> {
    let n = spec.group.len();
    let alg = spec
        .chosen_algorithm()
        .unwrap_or_else(|e| panic!("no all-to-all algorithm: {e}"));
    let mut c = Calls::new(n);
    if n > 1 {
        match alg {
            AlltoallAlgorithm::Bruck => alltoall::bruck(&mut c, spec.bytes),
            AlltoallAlgorithm::Scattered { throttle } => {
                alltoall::scattered(&mut c, spec.bytes, throttle)
            }
            AlltoallAlgorithm::Pairwise => alltoall::pairwise(&mut c, spec.bytes),
            AlltoallAlgorithm::Ring => alltoall::ring(&mut c, spec.bytes),
        }
    }
    lower(b, lowering(spec.group, spec.buffer, 0.0), c, ready)
}

#[cfg(test)]
mod tests;

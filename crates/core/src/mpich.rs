//! MPICH's choice of collective algorithm: facts about the MPI library, shared by the simulated
//! collectives and by the analytic broadcast model (Thakur, Rabenseifner and Gropp, "Optimization
//! of Collective Communication Operations in MPICH", 2005; Liu et al. 2012 §3.2).
//!
//! Two rules are written here:
//! - **MPICH's own** (the `auto` choice): the decisions of MPICH's `MPIR_*_intra_auto` functions,
//!   with the defaults of `MPIR_CVAR_BCAST_*`, `MPIR_CVAR_REDUCE_SHORT_MSG_SIZE`,
//!   `MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE`, `MPIR_CVAR_ALLTOALL_*` (MPICH's
//!   `src/mpi/coll/cvars.txt` and `mpir_coll_sched_auto.c`);
//! - **SimGrid's** `smpi/coll-selector:mpich` (SimGrid 3.32, `src/smpi/colls/smpi_mpich_selector.cpp`)
//!   on a communicator with one rank per host: it is not MPICH's rule (see each function).

/// How a collective's algorithm is chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Selection<A> {
    /// MPICH's own decision rule.
    Mpich,
    /// SimGrid 3.32's `smpi/coll-selector:mpich` on a communicator with one rank per host.
    SmpiMpich,
    /// This algorithm.
    Forced(A),
}

/// A broadcast algorithm of MPICH's `MPI_Bcast`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BcastAlgorithm {
    /// Binomial tree (short messages or fewer than 8 processes).
    Binomial,
    /// Scatter then recursive-doubling allgather (medium messages, power-of-two processes).
    RecursiveDoubling,
    /// Scatter then ring allgather (long messages, or medium ones on other process counts).
    Ring,
}

impl BcastAlgorithm {
    /// `binomial`, `recursive-doubling` or `ring`.
    pub fn name(self) -> &'static str {
        match self {
            BcastAlgorithm::Binomial => "binomial",
            BcastAlgorithm::RecursiveDoubling => "recursive-doubling",
            BcastAlgorithm::Ring => "ring",
        }
    }

    /// Parse a name as [`BcastAlgorithm::name`] writes it.
    pub fn parse(text: &str) -> Option<Self> {
        match text {
            "binomial" => Some(BcastAlgorithm::Binomial),
            "recursive-doubling" => Some(BcastAlgorithm::RecursiveDoubling),
            "ring" => Some(BcastAlgorithm::Ring),
            _ => None,
        }
    }
}

/// The thresholds of MPICH's broadcast selection (`MPIR_CVAR_BCAST_SHORT_MSG_SIZE`,
/// `MPIR_CVAR_BCAST_LONG_MSG_SIZE`, `MPIR_CVAR_BCAST_MIN_PROCS`; MPICH2's `MPIR_BCAST_*`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MpichBcastThresholds {
    /// Messages shorter than this are short (MPICH: 12288 bytes).
    pub short_msg_bytes: f64,
    /// Messages shorter than this (and not short) are medium (MPICH: 524288 bytes).
    pub long_msg_bytes: f64,
    /// Below this many processes the binomial tree is always used (MPICH: 8).
    pub min_procs: u64,
}

impl Default for MpichBcastThresholds {
    fn default() -> Self {
        MpichBcastThresholds {
            short_msg_bytes: 12288.0,
            long_msg_bytes: 524288.0,
            min_procs: 8,
        }
    }
}

/// MPICH's choice of broadcast algorithm (Liu et al. 2012 §3.2): binomial tree for short messages or
/// fewer than `min_procs` processes; recursive doubling for medium messages on a power-of-two
/// number of processes; ring otherwise.
pub fn mpich_bcast_algorithm(procs: u64, bytes: f64, t: &MpichBcastThresholds) -> BcastAlgorithm {
    if bytes < t.short_msg_bytes || procs < t.min_procs {
        BcastAlgorithm::Binomial
    } else if bytes < t.long_msg_bytes && procs.is_power_of_two() {
        BcastAlgorithm::RecursiveDoubling
    } else {
        BcastAlgorithm::Ring
    }
}

/// SimGrid's `mpich` selector for `MPI_Bcast` on a communicator with one rank per host:
/// `bcast__mpich` hands every communicator that is not an SMP one to `bcast__SMP_binomial`, a
/// binomial tree over the hosts (preceded, when the root is not rank 0, by a send from the root
/// to rank 0, which then roots the tree). The scatter algorithms are never run.
pub fn smpi_mpich_bcast_algorithm() -> BcastAlgorithm {
    BcastAlgorithm::Binomial
}

/// Largest power of two ≤ `n` (`n` ≥ 1): MPICH's `pof2`.
pub fn pof2_floor(n: u64) -> u64 {
    if n == 0 {
        0
    } else {
        1 << (63 - n.leading_zeros())
    }
}

/// A reduce algorithm of MPICH's `MPI_Reduce`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReduceAlgorithm {
    /// Binomial tree (short messages, or fewer elements than the power of two ≤ the processes).
    Binomial,
    /// Rabenseifner's: reduce-scatter by recursive halving, then a binomial gather to the root.
    ReduceScatterGather,
}

impl ReduceAlgorithm {
    /// `binomial` or `reduce-scatter-gather`.
    pub fn name(self) -> &'static str {
        match self {
            ReduceAlgorithm::Binomial => "binomial",
            ReduceAlgorithm::ReduceScatterGather => "reduce-scatter-gather",
        }
    }
}

/// `MPIR_CVAR_REDUCE_SHORT_MSG_SIZE` and `MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE`: 2048 bytes.
pub const MPICH_REDUCE_SHORT_MSG_BYTES: f64 = 2048.0;

/// MPICH's choice for `MPI_Reduce` of `count` elements of `bytes` in all with a built-in
/// (commutative) operation: reduce-scatter + gather if the message is longer than 2048 bytes and
/// has at least as many elements as the largest power of two ≤ `procs`; the binomial tree
/// otherwise.
pub fn mpich_reduce_algorithm(procs: u64, count: u64, bytes: f64) -> ReduceAlgorithm {
    if bytes > MPICH_REDUCE_SHORT_MSG_BYTES && count >= pof2_floor(procs) {
        ReduceAlgorithm::ReduceScatterGather
    } else {
        ReduceAlgorithm::Binomial
    }
}

/// SimGrid's `mpich` selector for `MPI_Reduce` (commutative operation) with one rank per host:
/// `reduce__mvapich2_two_level`, whose only phase is then `reduce__mpich` over the hosts' leaders,
/// i.e. MPICH's rule with a strict bound: binomial if `count` < pof2 or `bytes` < 2048.
pub fn smpi_mpich_reduce_algorithm(procs: u64, count: u64, bytes: f64) -> ReduceAlgorithm {
    if count < pof2_floor(procs) || bytes < MPICH_REDUCE_SHORT_MSG_BYTES {
        ReduceAlgorithm::Binomial
    } else {
        ReduceAlgorithm::ReduceScatterGather
    }
}

/// An allreduce algorithm of MPICH's `MPI_Allreduce`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AllreduceAlgorithm {
    /// Recursive doubling: log₂ steps exchanging the whole vector.
    RecursiveDoubling,
    /// Rabenseifner's: reduce-scatter by recursive halving, allgather by recursive doubling.
    ReduceScatterAllgather,
}

impl AllreduceAlgorithm {
    /// `recursive-doubling` or `reduce-scatter-allgather`.
    pub fn name(self) -> &'static str {
        match self {
            AllreduceAlgorithm::RecursiveDoubling => "recursive-doubling",
            AllreduceAlgorithm::ReduceScatterAllgather => "reduce-scatter-allgather",
        }
    }
}

/// MPICH's choice for `MPI_Allreduce` with a built-in operation: recursive doubling if the
/// message is at most 2048 bytes or has fewer elements than the largest power of two ≤ `procs`;
/// reduce-scatter + allgather otherwise. (MPICH 4's `maint/tuning/coll/mpir/generic.json` has
/// since lowered the bound to 8 bytes; this is the rule of `MPIR_CVAR_ALLREDUCE_SHORT_MSG_SIZE`.)
pub fn mpich_allreduce_algorithm(procs: u64, count: u64, bytes: f64) -> AllreduceAlgorithm {
    if bytes <= MPICH_REDUCE_SHORT_MSG_BYTES || count < pof2_floor(procs) {
        AllreduceAlgorithm::RecursiveDoubling
    } else {
        AllreduceAlgorithm::ReduceScatterAllgather
    }
}

/// SimGrid's `mpich` selector for `MPI_Allreduce` (commutative operation) with one rank per host:
/// `allreduce__mvapich2_two_level`, whose inter-host phase is always `allreduce__rdb`.
pub fn smpi_mpich_allreduce_algorithm() -> AllreduceAlgorithm {
    AllreduceAlgorithm::RecursiveDoubling
}

/// An all-to-all algorithm of MPICH's `MPI_Alltoall`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AlltoallAlgorithm {
    /// Bruck et al. 1997: ⌈log₂ p⌉ steps, each forwarding the blocks whose index has that bit.
    Bruck,
    /// Every irecv and isend posted at once, `throttle` pairs at a time (then a waitall),
    /// destinations scattered by rank.
    Scattered {
        /// Pairs of isend/irecv posted per round (MPICH's `MPIR_CVAR_ALLTOALL_THROTTLE`: 32;
        /// SimGrid's `mvapich2_scatter_dest`: 4).
        throttle: u32,
    },
    /// p − 1 sendrecv steps with partner rank XOR i on a power of two, else to rank + i from
    /// rank − i.
    Pairwise,
    /// p − 1 sendrecv steps to rank + i from rank − i (SimGrid's `alltoall__ring`).
    Ring,
}

impl AlltoallAlgorithm {
    /// `bruck`, `scattered`, `pairwise` or `ring`.
    pub fn name(self) -> &'static str {
        match self {
            AlltoallAlgorithm::Bruck => "bruck",
            AlltoallAlgorithm::Scattered { .. } => "scattered",
            AlltoallAlgorithm::Pairwise => "pairwise",
            AlltoallAlgorithm::Ring => "ring",
        }
    }
}

/// `MPIR_CVAR_ALLTOALL_SHORT_MSG_SIZE`: 256 bytes per destination.
pub const MPICH_ALLTOALL_SHORT_MSG_BYTES: f64 = 256.0;
/// `MPIR_CVAR_ALLTOALL_MEDIUM_MSG_SIZE`: 32768 bytes per destination.
pub const MPICH_ALLTOALL_MEDIUM_MSG_BYTES: f64 = 32768.0;
/// `MPIR_CVAR_ALLTOALL_THROTTLE`: 32 pairs posted at a time.
pub const MPICH_ALLTOALL_THROTTLE: u32 = 32;
/// SimGrid's `MV2_ALLTOALL_THROTTLE_FACTOR` (`alltoall-mvapich-scatter-dest.cpp`): 4.
pub const SMPI_ALLTOALL_THROTTLE: u32 = 4;

/// MPICH's choice for `MPI_Alltoall` of `bytes` per destination: Bruck if at most 256 bytes on
/// 8 processes or more; scattered if at most 32768 bytes; pairwise otherwise.
pub fn mpich_alltoall_algorithm(procs: u64, bytes: f64) -> AlltoallAlgorithm {
    if bytes <= MPICH_ALLTOALL_SHORT_MSG_BYTES && procs >= 8 {
        AlltoallAlgorithm::Bruck
    } else if bytes <= MPICH_ALLTOALL_MEDIUM_MSG_BYTES {
        AlltoallAlgorithm::Scattered {
            throttle: MPICH_ALLTOALL_THROTTLE,
        }
    } else {
        AlltoallAlgorithm::Pairwise
    }
}

/// SimGrid's `mpich` selector for `MPI_Alltoall` (`alltoall__mpich`): Bruck below 256 bytes on 8
/// processes or more; `mvapich2_scatter_dest` (scattered, 4 pairs at a time) below 32768 bytes;
/// otherwise `ring` on an even number of processes and `pair` (pairwise exchange) on an odd one,
/// which SimGrid refuses unless it is a power of two: `Err` names that case.
pub fn smpi_mpich_alltoall_algorithm(procs: u64, bytes: f64) -> Result<AlltoallAlgorithm, String> {
    if bytes < MPICH_ALLTOALL_SHORT_MSG_BYTES && procs >= 8 {
        Ok(AlltoallAlgorithm::Bruck)
    } else if bytes < MPICH_ALLTOALL_MEDIUM_MSG_BYTES {
        Ok(AlltoallAlgorithm::Scattered {
            throttle: SMPI_ALLTOALL_THROTTLE,
        })
    } else if procs.is_multiple_of(2) {
        Ok(AlltoallAlgorithm::Ring)
    } else if procs.is_power_of_two() {
        Ok(AlltoallAlgorithm::Pairwise)
    } else {
        Err(format!(
            "SimGrid 3.32's mpich selector runs alltoall `pair` on an odd number of ranks, \
             which aborts on {procs} ranks (not a power of two)"
        ))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pof2_floor_by_hand() {
        let got: Vec<u64> = [1, 2, 3, 4, 5, 7, 8, 63, 64].map(pof2_floor).to_vec();
        assert_eq!(got, vec![1, 2, 2, 4, 4, 4, 8, 32, 64]);
    }

    #[test]
    fn rules_at_their_bounds() {
        use AllreduceAlgorithm as A;
        use AlltoallAlgorithm as T;
        use ReduceAlgorithm as R;
        // 2048 bytes is short for MPICH (≤), long for SimGrid's reduce__mpich (<).
        assert_eq!(mpich_reduce_algorithm(4, 256, 2048.0), R::Binomial);
        assert_eq!(
            smpi_mpich_reduce_algorithm(4, 256, 2048.0),
            R::ReduceScatterGather
        );
        // One element of 4 KiB on 4 ranks: fewer elements than pof2.
        assert_eq!(mpich_reduce_algorithm(4, 1, 4096.0), R::Binomial);
        assert_eq!(
            mpich_allreduce_algorithm(4, 256, 2048.0),
            A::RecursiveDoubling
        );
        assert_eq!(
            mpich_allreduce_algorithm(3, 257, 2056.0),
            A::ReduceScatterAllgather
        );
        assert_eq!(mpich_alltoall_algorithm(8, 256.0), T::Bruck);
        assert_eq!(
            mpich_alltoall_algorithm(7, 256.0),
            T::Scattered { throttle: 32 }
        );
        assert_eq!(mpich_alltoall_algorithm(8, 32769.0), T::Pairwise);
        assert_eq!(
            smpi_mpich_alltoall_algorithm(8, 256.0),
            Ok(T::Scattered { throttle: 4 })
        );
        assert_eq!(smpi_mpich_alltoall_algorithm(6, 32768.0), Ok(T::Ring));
        assert!(smpi_mpich_alltoall_algorithm(3, 32768.0).is_err());
    }
}

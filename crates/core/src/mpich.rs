//! MPICH's choice of collective algorithm: a fact about the MPI library, shared by the
//! simulated collectives and by the analytic broadcast model (Thakur, Rabenseifner and Gropp
//! 2005; Liu et al. 2012 §3.2).

/// A broadcast algorithm of MPICH2's `MPI_Bcast`.
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

/// The thresholds of MPICH2's broadcast selection (`MPIR_BCAST_SHORT_MSG`,
/// `MPIR_BCAST_LONG_MSG`, `MPIR_BCAST_MIN_PROCS` in MPICH2's `bcast.c`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MpichBcastThresholds {
    /// Messages shorter than this are short (MPICH2: 12288 bytes).
    pub short_msg_bytes: f64,
    /// Messages shorter than this (and not short) are medium (MPICH2: 524288 bytes).
    pub long_msg_bytes: f64,
    /// Below this many processes the binomial tree is always used (MPICH2: 8).
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

/// MPICH2's choice of broadcast algorithm (Liu et al. 2012 §3.2): binomial tree for short messages or
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

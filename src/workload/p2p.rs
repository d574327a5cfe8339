//! The `p2p` workload: point-to-point microbenchmark, as an MPI-style program.

use serde::Deserialize;

use crate::cluster::Cluster;
use crate::error::InputError;
use crate::mpi::Program;

use super::ProgramGenerator;

/// `[workload]` with `kind = "p2p"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct P2pSpec {}

impl ProgramGenerator for P2pSpec {
    fn generate(&self, _cluster: &Cluster) -> Result<Program, InputError> {
        Err(InputError::new("workload kind `p2p` is not built yet").at_field("workload.kind"))
    }

    fn counted_flops(&self) -> f64 {
        0.0
    }
}

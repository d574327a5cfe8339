//! The `stencil` workload: stencil halo exchange, as an MPI-style program.

use serde::Deserialize;

use crate::cluster::Cluster;
use crate::error::InputError;
use crate::mpi::Program;

use super::ProgramGenerator;

/// `[workload]` with `kind = "stencil"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StencilSpec {}

impl ProgramGenerator for StencilSpec {
    fn generate(&self, _cluster: &Cluster) -> Result<Program, InputError> {
        Err(InputError::new("workload kind `stencil` is not built yet").at_field("workload.kind"))
    }

    fn counted_flops(&self) -> f64 {
        0.0
    }
}

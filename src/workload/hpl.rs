//! The `hpl` workload: HPL panels, as an MPI-style program.

use serde::Deserialize;

use crate::cluster::Cluster;
use crate::error::InputError;
use crate::mpi::Program;

use super::ProgramGenerator;

/// `[workload]` with `kind = "hpl"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HplSpec {}

impl ProgramGenerator for HplSpec {
    fn generate(&self, _cluster: &Cluster) -> Result<Program, InputError> {
        Err(InputError::new("workload kind `hpl` is not built yet").at_field("workload.kind"))
    }

    fn counted_flops(&self) -> f64 {
        0.0
    }
}

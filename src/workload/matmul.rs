//! The `matmul` workload: master/worker matrix product (seed 000 §5), as an MPI-style program.

use serde::Deserialize;

use crate::cluster::Cluster;
use crate::error::InputError;
use crate::mpi::Program;

use super::ProgramGenerator;

/// `[workload]` with `kind = "matmul"`.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MatmulSpec {}

impl ProgramGenerator for MatmulSpec {
    fn generate(&self, _cluster: &Cluster) -> Result<Program, InputError> {
        Err(InputError::new("workload kind `matmul` is not built yet").at_field("workload.kind"))
    }

    fn counted_flops(&self) -> f64 {
        0.0
    }
}

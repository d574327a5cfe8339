//! What the `hetsim` command does, as a library: scenario files and their overrides
//! ([`scenario`]), sweeps over schedulers, values and seeds ([`sweep`]), the text report
//! ([`report_text`]), the simulation beside the analytic model ([`crosscheck`]), StarPU
//! calibration import ([`calibrate`]), the flow-set format of `hetsim net` ([`netcase`]) and
//! the run of MPI-program workloads through the runtime ([`programs`]).

pub mod calibrate;
pub mod crosscheck;
mod inputs;
pub mod netcase;
pub mod programs;
pub mod report_text;
pub mod scenario;
pub mod shard;
pub mod sweep;

//! What the `hetsim` command does, as a library: scenario files and their overrides
//! ([`scenario`]), sweeps over schedulers, values and seeds ([`sweep`]), the text report
//! ([`report_text`]), the simulation beside the analytic model ([`crosscheck`]), StarPU
//! calibration import ([`calibrate`]) and the flow-set format of `hetsim net` ([`netcase`]).

pub mod calibrate;
pub mod crosscheck;
mod inputs;
pub mod netcase;
pub mod report_text;
pub mod scenario;
pub mod sweep;

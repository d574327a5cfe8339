//! hetsim: a discrete-event simulator of hybrid CPU/GPU machines.
//!
//! The crate is a library first; the `hetsim` binary is a thin command line over it.
//! Layers, bottom up (see `docs/` and the README):
//!
//! - [`engine`]: simulated clock and the event calendar (typed events, deterministic ties);
//! - [`fluid`]: max-min fair sharing of link bandwidth among flows, solved incrementally;
//! - [`netcase`]: the JSON flow-set format of `hetsim net` (the SimGrid oracle's format);
//! - [`units`] and [`machine`]: human-writable machine files (`calibration/*.toml`);
//! - [`workload`]: task graphs (implicit dependencies) and the Cholesky, LU and GEMM generators;
//! - [`scenario`]: scenario files (machine + workload + scheduler + run options), `--set`
//!   overrides, and [`report_text`], the human-readable report of `hetsim run`;
//! - [`sweep`]: runs of one scenario over schedulers × varied values × seeds, in parallel;
//! - [`analytic`]: the papers' analytic models (LogGP/mHLogGP, HPL/MCL-HPL, MMGP, Improved
//!   Roofline, stencil scalability), behind `hetsim model`;
//! - [`calibrate`]: importing StarPU's calibration directories into machine files;
//! - [`cli`]: the command-line front end.

pub mod analytic;
pub mod calibrate;
pub mod cli;
pub mod engine;
pub mod error;
pub mod fluid;
pub mod machine;
pub mod netcase;
pub mod perfmodel;
pub mod report_text;
pub mod runtime;
pub mod scenario;
pub mod sched;
pub mod sweep;
pub mod units;
pub mod workload;

pub use error::{Error, InputError, Result};

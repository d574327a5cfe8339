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
//! - [`perfmodel`]: kernel durations per codelet and device (history, regression, flop rate,
//!   noise);
//! - [`runtime`]: the StarPU-like runtime (workers, data replicas, memory, transfers) and the
//!   simulation loop, with its observer stream of events;
//! - [`sched`]: the scheduling policies (eager, prio, random, the dmda family, ws, lws, heft);
//! - [`trace`]: Paje and Chrome traces, Gantt charts and makespan bounds, as observers of a run;
//! - [`scenario`]: scenario files (machine + workload + scheduler + run options), `--set`
//!   overrides, and [`report_text`], the human-readable report of `hetsim run`;
//! - [`sweep`]: runs of one scenario over schedulers × varied values × seeds, in parallel;
//! - [`cluster`] and [`mpi`]: clusters of nodes joined by NICs and a switch, and MPI-style
//!   programs (kernels, point-to-point messages, collectives) run on them;
//! - [`analytic`]: the papers' analytic models (LogGP/mHLogGP, HPL/MCL-HPL, MMGP, Improved
//!   Roofline, stencil scalability), behind `hetsim model`;
//! - [`calibrate`]: importing StarPU's calibration directories into machine files;
//! - [`cli`]: the command-line front end.

pub mod analytic;
pub mod calibrate;
pub mod cli;
pub mod cluster;
pub mod crosscheck;
pub mod engine;
pub mod error;
pub mod fluid;
pub mod machine;
pub mod mpi;
pub mod netcase;
pub mod perfmodel;
pub mod report_text;
pub mod runtime;
pub mod scenario;
pub mod sched;
pub mod sweep;
pub mod trace;
pub mod units;
pub mod workload;

pub use error::{Error, InputError, Result};

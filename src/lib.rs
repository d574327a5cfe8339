//! hetsim: a discrete-event simulator of hybrid CPU/GPU machines, from one node to a cluster.
//!
//! This crate is the `hetsim` command and a facade over the workspace's layered crates, each of
//! which can also be used on its own:
//!
//! | layer | crate | here as |
//! |---|---|---|
//! | event calendar, fluid network, units, errors, RNG | `hetsim-core` | [`engine`], [`fluid`], [`units`], [`error`] |
//! | kernel performance models | `hetsim-models` | [`perfmodel`] |
//! | machines and clusters | `hetsim-platform` | [`machine`], [`cluster`] |
//! | task graphs and their generators | `hetsim-taskgraph` | [`workload`] |
//! | the StarPU-like runtime, the `Scheduler` trait, the event stream | `hetsim-runtime` | [`runtime`] |
//! | scheduling policies | `hetsim-sched` | [`sched`] |
//! | traces (observers) | `hetsim-trace` | [`trace`] |
//! | MPI-style programs on clusters | `hetsim-mpi` | [`mpi`], part of [`workload`] |
//! | the papers' analytic models | `hetsim-analytic` | [`analytic`] |
//! | scenarios, sweeps, reports, crosschecks, calibration import | `hetsim-app` | [`scenario`], [`sweep`], ... |
//!
//! Lower layers never import upper ones (a cycle would not compile). To simulate a task graph:
//! load or build a [`machine::Machine`], generate or build a [`workload::TaskGraph`], pick a
//! scheduler from [`sched`], and call [`runtime::simulate`] (or
//! [`runtime::simulate_observed`] with observers such as [`trace::ChromeWriter`]); see
//! `examples/` for a task graph built in Rust, a scheduler and an observer written outside the
//! crates.

pub use hetsim_analytic as analytic;
pub use hetsim_app::{calibrate, crosscheck, netcase, programs, report_text, scenario, shard};
pub use hetsim_core::{Error, InputError, Result, engine, error, files, fluid, units};
pub use hetsim_models as perfmodel;
pub use hetsim_mpi as mpi;
pub use hetsim_platform::{cluster, machine};
pub use hetsim_runtime as runtime;
pub use hetsim_sched as sched;

pub mod cli;
mod parallel;
mod plot;

/// Task graphs and their generators (`hetsim-taskgraph`), and the cluster workloads that run
/// as MPI-style programs (`hetsim-mpi`).
pub mod workload {
    pub use hetsim_mpi::workload::*;
    pub use hetsim_taskgraph::*;
}

/// Observers of a run: Paje and Chrome traces, Gantt charts (`hetsim-trace`), and the makespan
/// bounds every report carries.
pub mod trace {
    pub use hetsim_trace::*;

    /// Lower bounds on the makespan (critical path, area bound).
    pub mod stats {
        pub use hetsim_runtime::bounds::*;
    }
}

/// Sweeps (`hetsim-app`), run in parallel and plotted here.
pub mod sweep {
    pub use crate::parallel::run;
    pub use crate::plot::plot_svg;
    pub use hetsim_app::sweep::*;
}

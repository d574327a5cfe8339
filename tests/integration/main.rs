//! The integration tests, gathered in one binary so that `cargo test` links it once: each
//! module is one concern, and `common` holds what they share.

mod common;

mod analytic_papers;
mod calibrate_import;
mod check_summary;
mod cli_net;
mod cli_run;
mod cluster;
mod cluster_traces;
mod crosscheck;
mod fluid_properties;
mod gpu_memory_effect;
mod hpl_hdpex;
mod machine_files;
mod mpi_messages;
mod noise_runs;
mod perfmodel;
mod plots;
mod random_runs;
mod readme;
mod registry_docs;
mod replay;
mod robustness;
mod runtime_semantics;
mod sched_ws_heft;
mod seed_machines;
mod simgrid_oracle;
mod smpi_collectives;
mod smpi_hpl;
mod starpu14_cells;
mod starpu_agreement;
mod starpu_mpi_agreement;
mod stencil_cluster;
mod sweep;
mod sweep_shards;
mod traces;
mod workload_graphs;

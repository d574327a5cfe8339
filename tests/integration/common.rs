//! Helpers shared by the integration tests (the `common` module of this test binary).

use std::process::{Command, Output, Stdio};

pub use hetsim_testkit::{assert_close, close, repo};

/// Run the `hetsim` binary with `args` from the crate root, stdin closed (as in CI).
pub fn hetsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hetsim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run hetsim")
}

/// One row of `docs/validation/starpu14-mpi-cholesky.csv` (StarPU-MPI 1.4.12's distributed
/// Cholesky in SimGrid mode), with the fields as the CSV writes them.
pub struct MpiCell {
    pub nodes: String,
    pub sched: String,
    pub n: String,
    pub sim_ms: f64,
    pub mpi_sends: String,
    pub mpi_bytes: String,
}

/// The multi-node rows of `docs/validation/starpu14-mpi-cholesky.csv`, in file order.
pub fn starpu_mpi_cells() -> Vec<MpiCell> {
    starpu_mpi_rows()
        .into_iter()
        .filter(|c| c.nodes != "1")
        .collect()
}

/// Every row of `docs/validation/starpu14-mpi-cholesky.csv` (one node too), in file order.
pub fn starpu_mpi_rows() -> Vec<MpiCell> {
    let csv = std::fs::read_to_string(hetsim_testkit::repo(
        "docs/validation/starpu14-mpi-cholesky.csv",
    ))
    .unwrap();
    let mut rows = csv.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    let col = |name: &str| header.iter().position(|h| *h == name).unwrap();
    let (nodes, sched, n) = (col("nodes"), col("sched"), col("n"));
    let (sim_ms, sends, bytes) = (col("sim_ms"), col("mpi_sends"), col("mpi_bytes"));
    rows.map(|row| row.split(',').collect::<Vec<_>>())
        .map(|f| MpiCell {
            nodes: f[nodes].to_string(),
            sched: f[sched].to_string(),
            n: f[n].to_string(),
            sim_ms: f[sim_ms].parse().unwrap(),
            mpi_sends: f[sends].to_string(),
            mpi_bytes: f[bytes].to_string(),
        })
        .collect()
}

/// The interpreter of the Python oracles (SimGrid's bindings, jsonschema): Debian's, where
/// `apt-get install python3-simgrid python3-jsonschema` puts the modules, not whichever
/// `python3` (a virtualenv, a conda) comes first on the PATH.
pub const PYTHON: &str = "/usr/bin/python3";

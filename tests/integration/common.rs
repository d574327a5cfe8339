//! Helpers shared by the integration tests (the `common` module of this test binary).

use std::collections::BTreeMap;
use std::process::{Command, Output, Stdio};

/// Run the `hetsim` binary with `args` from the crate root, stdin closed (as in CI).
pub fn hetsim(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_hetsim"))
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .args(args)
        .stdin(Stdio::null())
        .output()
        .expect("run hetsim")
}

/// What StarPU-MPI 1.4.12 measured for its distributed Cholesky on mirage nodes
/// (docs/validation/starpu14-mpi-cholesky.csv): one row per run, column name → value.
pub fn starpu_mpi_cholesky() -> Vec<BTreeMap<String, String>> {
    let csv = std::fs::read_to_string(hetsim_testkit::repo(
        "docs/validation/starpu14-mpi-cholesky.csv",
    ))
    .unwrap();
    let mut rows = csv.lines().filter(|l| !l.starts_with('#'));
    let header: Vec<&str> = rows.next().unwrap().split(',').collect();
    rows.map(|r| {
        header
            .iter()
            .map(|h| h.to_string())
            .zip(r.split(',').map(str::to_string))
            .collect()
    })
    .collect()
}

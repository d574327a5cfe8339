//! Helpers shared by the integration tests (the `common` module of this test binary).

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

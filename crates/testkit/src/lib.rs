//! What hetsim's tests share, for every crate of the workspace: small machine files built in
//! code (as text, so that a crate's own unit tests can read them with its own types) and
//! comparison helpers, and copies of the repository's sample files. A dev-dependency (and a
//! dependency of the fuzzer, which is not part of the product).

/// A path in the repository, from any crate's tests: `repo("calibration/mirage.toml")`.
pub fn repo(rel: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../..")
        .join(rel)
}

/// Link figures of [`star_machine_text`]: 1 GB/s, 10 µs.
pub const STAR_BW: f64 = 1e9;
/// See [`STAR_BW`].
pub const STAR_LAT: f64 = 1e-5;

/// RAM (64 GiB) with `ncores` CPU cores and `ngpu` GPUs (8 GiB each), each GPU on its own
/// link to RAM used both ways ([`STAR_BW`], [`STAR_LAT`]); no GPU↔GPU route.
pub fn star_machine_text(ngpu: usize, ncores: u32) -> String {
    let mut t = header("t", ngpu);
    t += &format!("[[cpus]]\ncount = {ncores}\nmodel = \"c\"\nmemory = \"RAM\"\n");
    for g in 0..ngpu {
        t += &format!(
            "[[gpus]]\nname = \"GPU{g}\"\nmodel = \"g\"\nmemory = \"GPU{g}\"\n\
             [[links]]\nname = \"L{g}\"\nbandwidth = \"{STAR_BW} B/s\"\nlatency = \"{STAR_LAT} s\"\n\
             [[routes]]\nsrc = \"RAM\"\ndst = \"GPU{g}\"\nlinks = [\"L{g}\"]\nsymmetric = true\n"
        );
    }
    t
}

/// PCIe figures of [`split_duplex_node_text`]: 10 GB/s per direction, 1 µs.
pub const PCIE_BW: f64 = 10e9;
/// See [`PCIE_BW`].
pub const PCIE_LAT: f64 = 1e-6;

/// A cluster node: RAM (64 GiB), 4 CPU cores and `ngpu` GPUs (8 GiB each), each GPU on its own
/// split-duplex PCIe link to RAM ([`PCIE_BW`], [`PCIE_LAT`]); no GPU↔GPU route.
pub fn split_duplex_node_text(ngpu: usize) -> String {
    let mut t = header("n", ngpu);
    t += "[[cpus]]\ncount = 4\nmodel = \"c\"\nmemory = \"RAM\"\n";
    for g in 0..ngpu {
        t += &format!(
            "[[gpus]]\nname = \"GPU{g}\"\nmodel = \"g\"\nmemory = \"GPU{g}\"\n\
             [[links]]\nname = \"P{g}\"\nbandwidth = \"{PCIE_BW} B/s\"\nlatency = \"{PCIE_LAT} s\"\n\
             sharing = \"split-duplex\"\n\
             [[routes]]\nsrc = \"RAM\"\ndst = \"GPU{g}\"\nlinks = [\"P{g}_DOWN\"]\n\
             symmetric = true\n"
        );
    }
    t
}

/// `[machine]` and the memory nodes: RAM (64 GiB) and one 8 GiB node per GPU.
fn header(name: &str, ngpu: usize) -> String {
    let mut t = format!(
        "[machine]\nname = \"{name}\"\n[[memory_nodes]]\nname = \"RAM\"\nkind = \"ram\"\n\
         capacity = \"64 GiB\"\n"
    );
    for g in 0..ngpu {
        t +=
            &format!("[[memory_nodes]]\nname = \"GPU{g}\"\nkind = \"gpu\"\ncapacity = \"8 GiB\"\n");
    }
    t
}

/// Whether `a` and `b` agree to `rel` relative (or to `rel` absolute near zero).
pub fn close(a: f64, b: f64, rel: f64) -> bool {
    (a - b).abs() <= rel * a.abs().max(b.abs()).max(1.0e-300) || (a - b).abs() <= rel
}

/// Assert that `got` agrees with `want` to `rel` (see [`close`]), printing both.
#[track_caller]
pub fn assert_close(got: f64, want: f64, rel: f64) {
    assert!(
        close(got, want, rel),
        "got {got:.12e}, expected {want:.12e}"
    );
}

/// Fill `dir` with a StarPU calibration of host `hannibal` from the repository's sample
/// (`tests/data/starpu-samples/starpu-sampling`): its five bus files and the codelet models
/// named in `codelets` (e.g. `"chol_model_gemm"`), laid out as `STARPU_PERF_MODEL_DIR` is.
pub fn hannibal_calibration(dir: &std::path::Path, codelets: &[&str]) -> std::io::Result<()> {
    let samples = repo("tests/data/starpu-samples/starpu-sampling");
    std::fs::create_dir_all(dir.join("bus"))?;
    std::fs::create_dir_all(dir.join("codelets/45"))?;
    let bus = [
        "config",
        "bandwidth",
        "latency",
        "affinity",
        "platform.v4.xml",
    ]
    .map(|ext| format!("bus/hannibal.{ext}"));
    let models = codelets.iter().map(|c| format!("codelets/45/{c}.hannibal"));
    for f in bus.into_iter().chain(models) {
        std::fs::copy(samples.join(&f), dir.join(&f))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builders_name_every_gpu_once() {
        let t = star_machine_text(3, 5);
        assert_eq!(t.matches("[[gpus]]").count(), 3);
        assert_eq!(t.matches("kind = \"gpu\"").count(), 3);
        assert!(t.contains("count = 5"));
        let n = split_duplex_node_text(2);
        assert_eq!(n.matches("split-duplex").count(), 2);
    }

    #[test]
    fn closeness_is_relative() {
        assert!(close(1.0, 1.0 + 1e-10, 1e-9));
        assert!(!close(1.0, 1.001, 1e-9));
        assert!(close(0.0, 1e-12, 1e-9));
    }
}

//! The StarPU-SimGrid paper's most influential parameter (Stanisic et al. 2015): GPU memory capacity. On
//! attila (3 × C2050 with 3 GB each, StarPU's calibration), a Cholesky whose matrix is far
//! larger than the GPUs' memory makes eager evict and re-fetch tiles over PCIe; the same run
//! with GPU memories large enough for the whole matrix does not.

use hetsim::machine;
use hetsim::runtime::{RunConfig, RunReport, kernels_for, simulate};
use hetsim::sched;
use hetsim::workload::{Precision, cholesky};

const ATTILA: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/calibration/attila.toml");

fn run(gpu_capacity: Option<&str>, n: u64) -> RunReport {
    let text = std::fs::read_to_string(ATTILA).unwrap();
    let text = match gpu_capacity {
        // Every GPU memory node of attila.toml is written `capacity = "3220897792 B"`.
        Some(c) => {
            assert_eq!(text.matches("capacity = \"3220897792 B\"").count(), 3);
            text.replace(
                "capacity = \"3220897792 B\"",
                &format!("capacity = \"{c}\""),
            )
        }
        None => text,
    };
    let m = machine::from_str(&text, ATTILA).unwrap();
    let g = cholesky(n, 960, Precision::Single).unwrap();
    let k = kernels_for(&m).unwrap();
    let mut s = sched::by_name("eager", 1).unwrap();
    simulate(&m, &g, k.as_ref(), s.as_mut(), &RunConfig::default()).unwrap()
}

#[test]
fn a_matrix_that_fits_moves_what_coherence_needs_and_nothing_more() {
    // n = 38 400: the matrix (5.9 GB, 2.9 GB of it the lower triangle the tasks touch) fits in
    // the three GPUs' 9.7 GB: no eviction, and the same traffic as with unlimited memory.
    let real = run(None, 38_400);
    let roomy = run(Some("64 GiB"), 38_400);
    assert_eq!(real.evictions, 0);
    assert_eq!(real.bytes_transferred, roomy.bytes_transferred);
}

#[test]
fn a_matrix_far_larger_than_gpu_memory_is_evicted_and_refetched() {
    // n = 96 000: the lower triangle alone is 96000² × 4 / 2 ≈ 18 GB, against 3 × 3.2 GB of
    // GPU memory. The same run with 64 GiB per GPU shows what capacity costs.
    let n = 96_000;
    let real = run(None, n);
    let roomy = run(Some("64 GiB"), n);
    assert_eq!(roomy.evictions, 0, "with 64 GiB per GPU nothing is evicted");
    assert!(real.evictions > 10_000, "evictions: {}", real.evictions);
    assert!(
        real.bytes_transferred > 1.5 * roomy.bytes_transferred,
        "moved {:.3e} B with 3 GB GPUs vs {:.3e} B with room for all",
        real.bytes_transferred,
        roomy.bytes_transferred
    );
    // Dirty tiles evicted must go back to RAM first.
    assert!(real.writeback_bytes > 10.0 * roomy.writeback_bytes);
    assert!(real.gflops < roomy.gflops);
    // The per-node report shows where: each GPU's peak use reaches its capacity.
    for mem in real.memory.iter().filter(|m| m.name.starts_with("CUDA")) {
        assert!(mem.evictions > 0);
        assert!(mem.peak_used_bytes as f64 > 0.95 * mem.capacity_bytes as f64);
    }
}

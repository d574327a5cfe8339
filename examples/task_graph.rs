//! A task graph built in Rust, simulated on a machine shipped with hetsim.
//!
//! Eight independent tile products (StarPU's `chol_model_gemm` codelet on 960 × 960 single
//! precision tiles, which mirage's calibration times on its CPUs and GPUs), then a chain that
//! accumulates their results into one tile, all under the dmda scheduler.
//!
//! `cargo run --release --example task_graph`

use hetsim::runtime::{RunConfig, kernels_for, simulate};
use hetsim::workload::{Access, AccessMode, Handle, TaskGraphBuilder};

fn main() -> Result<(), hetsim::Error> {
    let machine = hetsim::machine::load(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/calibration/mirage.toml"
    ))?;

    // Tiles of 960 × 960 floats: StarPU's models are indexed by the sum of the buffers' sizes.
    let tile = Handle {
        dims: Some((960, 960)),
        ..Handle::bytes(960 * 960 * 4)
    };
    let mut b = TaskGraphBuilder::new();
    let gemm = b.codelet("chol_model_gemm")?;
    let flops = 2.0 * 960f64.powi(3);
    let (a, x) = (b.add_handle(tile)?, b.add_handle(tile)?);
    let sum = b.add_handle(tile)?;
    let mut parts = Vec::new();
    for _ in 0..8 {
        let c = b.add_handle(tile)?;
        // Dependencies follow from the accesses, in submission order, as in StarPU.
        b.submit(
            gemm,
            flops,
            0,
            &[
                Access::new(a, AccessMode::R),
                Access::new(x, AccessMode::R),
                Access::new(c, AccessMode::RW),
            ],
        )?;
        parts.push(c);
    }
    for (i, &c) in parts.iter().enumerate() {
        let other = parts[(i + 1) % parts.len()];
        b.submit(
            gemm,
            flops,
            0,
            &[
                Access::new(c, AccessMode::R),
                Access::new(other, AccessMode::R),
                Access::new(sum, AccessMode::RW),
            ],
        )?;
    }
    let graph = b.build()?;

    let kernels = kernels_for(&machine)?;
    let mut sched = hetsim::sched::by_name("dmda", 1).expect("dmda is registered");
    let report = simulate(
        &machine,
        &graph,
        kernels.as_ref(),
        sched.as_mut(),
        &RunConfig::default(),
    )?;
    println!(
        "{} tasks on {} under {}: {:.3} ms, {:.1} GFlop/s, {} bytes moved",
        report.tasks,
        report.machine,
        report.sched,
        report.makespan_s * 1e3,
        report.gflops,
        report.bytes_transferred
    );
    for w in report.workers.iter().filter(|w| w.tasks > 0) {
        println!(
            "  {:6} {:2} tasks, busy {:.3} ms",
            w.name,
            w.tasks,
            w.busy_s * 1e3
        );
    }
    Ok(())
}

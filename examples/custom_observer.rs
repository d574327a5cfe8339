//! An observer written outside hetsim's crates: it watches the event stream of a run and reports
//! the transfers it saw, per codelet its tasks' count and mean duration, and the five longest
//! tasks.
//!
//! `cargo run --release --example custom_observer`

use std::collections::BTreeMap;

use hetsim::runtime::{Observer, RunConfig, SimEvent, kernels_for, simulate_observed};
use hetsim::workload::{Precision, TaskId, cholesky};

#[derive(Default)]
struct Watch {
    /// Per codelet name: tasks and their summed duration.
    per_codelet: BTreeMap<String, (u64, f64)>,
    /// (duration, task, codelet) of every task.
    longest: Vec<(f64, TaskId, String)>,
    transfers: u64,
}

impl Observer for Watch {
    fn event(&mut self, _at_s: f64, event: &SimEvent<'_>) {
        match event {
            SimEvent::TaskStart {
                task,
                duration_s,
                codelet_name,
                ..
            } => {
                let e = self
                    .per_codelet
                    .entry(codelet_name.to_string())
                    .or_default();
                e.0 += 1;
                e.1 += duration_s;
                self.longest
                    .push((*duration_s, *task, codelet_name.to_string()));
            }
            SimEvent::TransferEnd { .. } => self.transfers += 1,
            // The stream may gain new events: ignore the others.
            _ => {}
        }
    }
}

fn main() -> Result<(), hetsim::Error> {
    let machine = hetsim::machine::load(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/calibration/mirage.toml"
    ))?;
    let graph = cholesky(9600, 960, Precision::Single)?;
    let kernels = kernels_for(&machine)?;
    let mut sched = hetsim::sched::by_name("dmdas", 1).expect("dmdas is registered");
    let mut watch = Watch::default();
    let report = simulate_observed(
        &machine,
        &graph,
        kernels.as_ref(),
        sched.as_mut(),
        &RunConfig::default(),
        &mut watch,
    )?;
    println!(
        "makespan {:.2} ms, {} transfers seen",
        report.makespan_s * 1e3,
        watch.transfers
    );
    for (name, (n, secs)) in &watch.per_codelet {
        println!(
            "  {name:20} {n:4} tasks, mean {:.3} ms",
            secs / *n as f64 * 1e3
        );
    }
    watch.longest.sort_by(|a, b| b.0.total_cmp(&a.0));
    for (d, t, name) in watch.longest.iter().take(5) {
        println!("  task {:4} ({name}) ran {:.3} ms", t.0, d * 1e3);
    }
    Ok(())
}

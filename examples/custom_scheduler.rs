//! A scheduler written outside hetsim's crates, with only the `View`'s public queries: each task
//! goes, when it becomes ready, to the worker where it would end first — the worker's queue end
//! plus the transfer of its inputs plus its predicted length (StarPU's `dm` without the
//! scheduler's own bookkeeping of transfers). Compared with the shipped dmda on the tiled
//! Cholesky of mirage.
//!
//! `cargo run --release --example custom_scheduler`

use std::collections::VecDeque;

use hetsim::runtime::{Decision, RunConfig, Scheduler, View, WorkerId, kernels_for, simulate};
use hetsim::workload::{Precision, TaskId, cholesky};

/// Earliest predicted finish, one FIFO per worker.
#[derive(Default)]
struct EarliestFinish {
    queues: Vec<VecDeque<TaskId>>,
    /// Per worker, when its queued work is predicted to end.
    free_at_s: Vec<f64>,
    queued: usize,
}

impl Scheduler for EarliestFinish {
    fn name(&self) -> &'static str {
        "earliest-finish"
    }

    fn push(&mut self, task: TaskId, view: &View<'_>, decisions: &mut Vec<Decision>) {
        let n = view.workers().len();
        if self.queues.len() < n {
            self.queues.resize_with(n, VecDeque::new);
            self.free_at_s.resize(n, 0.0);
        }
        let now = view.now_s();
        let best = view
            .workers()
            .iter()
            .filter_map(|w| {
                let length = view.predicted_length_s(task, w.id)?;
                let start = self.free_at_s[w.id.index()].max(now)
                    + view.nominal_transfer_estimate_s(task, w.id);
                Some((start + length, w.id))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .expect("the runtime refuses tasks no worker can run");
        let (end, w) = best;
        self.free_at_s[w.index()] = end;
        self.queues[w.index()].push_back(task);
        self.queued += 1;
        // Start moving the inputs now, as StarPU's dm* policies do at push time.
        decisions.push(Decision::Prefetch { task, worker: w });
    }

    fn pop(&mut self, worker: WorkerId, _view: &View<'_>) -> Option<TaskId> {
        let t = self.queues.get_mut(worker.index())?.pop_front()?;
        self.queued -= 1;
        Some(t)
    }

    fn queued(&self) -> usize {
        self.queued
    }
}

fn main() -> Result<(), hetsim::Error> {
    let machine = hetsim::machine::load(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/calibration/mirage.toml"
    ))?;
    let graph = cholesky(19200, 960, Precision::Single)?;
    let kernels = kernels_for(&machine)?;
    let config = RunConfig::default();
    let mut mine = EarliestFinish::default();
    let ours = simulate(&machine, &graph, kernels.as_ref(), &mut mine, &config)?;
    let mut dmda = hetsim::sched::by_name("dmda", 1).expect("dmda is registered");
    let shipped = simulate(&machine, &graph, kernels.as_ref(), dmda.as_mut(), &config)?;
    for r in [&ours, &shipped] {
        println!(
            "{:16} {:8.1} ms  {:7.1} GFlop/s  {:6.2} GB moved",
            r.sched,
            r.makespan_s * 1e3,
            r.gflops,
            r.bytes_transferred / 1e9
        );
    }
    Ok(())
}

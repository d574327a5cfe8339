//! `random`: each ready task goes to a worker drawn with probability proportional to the
//! worker's relative speed (StarPU `random_policy.c`: CPU core 0.5, CUDA 13.33), among the
//! workers that can run it; workers pop their own queue in FIFO order. Seeded, so runs are
//! reproducible (StarPU seeds with the clock).

use std::collections::VecDeque;

use rand::{RngExt, SeedableRng};

use super::{Decision, Scheduler};
use hetsim_runtime::{View, Wakes, WorkerId};
use hetsim_taskgraph::TaskId;

/// Random placement weighted by relative speed.
#[derive(Debug)]
pub struct Random {
    rng: rand::rngs::Xoshiro256PlusPlus,
    queues: Vec<VecDeque<TaskId>>,
    queued: usize,
}

impl Random {
    /// A policy drawing from its own generator seeded with `seed`.
    pub fn new(seed: u64) -> Self {
        Random {
            // A fixed odd constant separates this stream from the kernel-noise stream.
            rng: rand::rngs::Xoshiro256PlusPlus::seed_from_u64(seed ^ 0x9E37_79B9_7F4A_7C15),
            queues: Vec::new(),
            queued: 0,
        }
    }
}

impl Scheduler for Random {
    fn name(&self) -> &'static str {
        "random"
    }

    fn push(&mut self, task: TaskId, view: &View<'_>, decisions: &mut Vec<Decision>) {
        let workers = view.workers();
        if self.queues.len() < workers.len() {
            self.queues.resize_with(workers.len(), VecDeque::new);
        }
        let weight = |w: WorkerId| {
            if view.can_run(task, w) {
                view.relative_speedup(w)
            } else {
                0.0
            }
        };
        let total: f64 = workers.iter().map(|w| weight(w.id)).sum();
        // The runtime only pushes tasks some worker can run, so total > 0.
        let mut r = self.rng.random::<f64>() * total;
        let mut chosen = None;
        for w in workers {
            let x = weight(w.id);
            if x > 0.0 {
                chosen = Some(w.id);
                if r < x {
                    break;
                }
                r -= x;
            }
        }
        let w = chosen.expect("a pushed task can run on some worker");
        self.queues[w.index()].push_back(task);
        self.queued += 1;
        // `starpu_push_local_task` wakes the worker it queues the task to.
        decisions.push(Decision::Wake { worker: w });
    }

    fn pop(&mut self, worker: WorkerId, _view: &View<'_>) -> Option<TaskId> {
        let t = self.queues.get_mut(worker.index())?.pop_front()?;
        self.queued -= 1;
        Some(t)
    }

    fn queued(&self) -> usize {
        self.queued
    }

    /// A worker finds nothing when its own queue is empty: so it stays until a push.
    fn pop_fails_alike(&self) -> bool {
        true
    }

    fn wakes(&self) -> Wakes {
        Wakes::Chosen
    }
}

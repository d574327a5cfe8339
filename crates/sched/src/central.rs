//! Central-queue policies: `eager` (one FIFO) and `prio` (one queue by priority).
//!
//! StarPU: `eager_central_policy.c` pushes at the back and each worker pops the first task it
//! can run; `eager_central_priority_policy.c` pops the highest priority first, FIFO within a
//! priority. Neither prefetches (the decision is made at pop time).

use std::cmp::Reverse;
use std::collections::{BTreeMap, VecDeque};

use super::{Decision, Scheduler};
use hetsim_runtime::{View, WorkerId};
use hetsim_taskgraph::TaskId;

/// One central FIFO; a worker takes the first task it can run.
#[derive(Debug, Default)]
pub struct Eager {
    queue: VecDeque<TaskId>,
}

impl Scheduler for Eager {
    fn name(&self) -> &'static str {
        "eager"
    }

    fn push(&mut self, task: TaskId, _view: &View<'_>, _decisions: &mut Vec<Decision>) {
        self.queue.push_back(task);
    }

    fn pop(&mut self, worker: WorkerId, view: &View<'_>) -> Option<TaskId> {
        let pos = self.queue.iter().position(|&t| view.can_run(t, worker))?;
        self.queue.remove(pos)
    }

    fn queued(&self) -> usize {
        self.queue.len()
    }

    /// A worker finds nothing when no queued task can run on it: so it stays until a push.
    fn pop_fails_alike(&self) -> bool {
        true
    }
}

/// One central queue ordered by priority (highest first), FIFO within a priority.
#[derive(Debug, Default)]
pub struct Prio {
    queue: BTreeMap<(Reverse<i32>, u64), TaskId>,
    next_seq: u64,
}

impl Scheduler for Prio {
    fn name(&self) -> &'static str {
        "prio"
    }

    fn push(&mut self, task: TaskId, view: &View<'_>, _decisions: &mut Vec<Decision>) {
        let prio = self.priority(task, view);
        self.queue.insert((Reverse(prio), self.next_seq), task);
        self.next_seq += 1;
    }

    fn pop(&mut self, worker: WorkerId, view: &View<'_>) -> Option<TaskId> {
        let key = *self
            .queue
            .iter()
            .find(|&(_, &t)| view.can_run(t, worker))?
            .0;
        self.queue.remove(&key)
    }

    fn queued(&self) -> usize {
        self.queue.len()
    }

    /// A worker finds nothing when no queued task can run on it: so it stays until a push.
    fn pop_fails_alike(&self) -> bool {
        true
    }

    /// StarPU's prio sets its context's priority bounds (`DEFAULT_MIN_LEVEL`..
    /// `DEFAULT_MAX_LEVEL`); hetsim passes the graph's priorities through unclamped.
    fn takes_priorities(&self) -> bool {
        true
    }
}

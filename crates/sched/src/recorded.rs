//! `recorded`: each task on the worker it ran on in a recorded run (the `WorkerId` of StarPU's
//! `tasks.rec`, kept in the graph as [`hetsim_taskgraph::RecordedWorker`]), so that a replay
//! separates the machine's effects from the scheduler's: the mapping is fixed, only the times
//! change.
//!
//! As StarPU runs a task pinned to a worker (`execute_on_a_specific_worker`, what
//! `starpu_replay --static-workerid` sets), each worker takes its tasks in the order they became
//! ready (FIFO); nothing is prefetched. A task without a recorded worker, or whose worker this
//! run does not have or cannot run it, goes to a central FIFO that any worker able to run it
//! takes from when its own queue is empty (the scenario loader refuses such graphs before
//! running, so this only serves library users).

use std::collections::VecDeque;

use super::{Decision, Scheduler};
use hetsim_runtime::{View, WorkerId};
use hetsim_taskgraph::TaskId;

/// Each task on its recorded worker, FIFO per worker.
#[derive(Debug, Default)]
pub struct Recorded {
    own: Vec<VecDeque<TaskId>>,
    shared: VecDeque<TaskId>,
    queued: usize,
}

impl Recorded {
    /// The worker `task` goes to, if it has a recorded one this run can use.
    fn worker_of(task: TaskId, view: &View<'_>) -> Option<WorkerId> {
        let w = view.graph().recorded_worker(task)?;
        let id = WorkerId(w.id);
        let worker = view.workers().get(id.index())?;
        (worker.kind.unit() == w.unit && view.can_run(task, id)).then_some(id)
    }
}

impl Scheduler for Recorded {
    fn name(&self) -> &'static str {
        "recorded"
    }

    fn push(&mut self, task: TaskId, view: &View<'_>, _decisions: &mut Vec<Decision>) {
        if self.own.len() < view.workers().len() {
            self.own.resize_with(view.workers().len(), VecDeque::new);
        }
        match Self::worker_of(task, view) {
            Some(w) => self.own[w.index()].push_back(task),
            None => self.shared.push_back(task),
        }
        self.queued += 1;
    }

    fn pop(&mut self, worker: WorkerId, view: &View<'_>) -> Option<TaskId> {
        let t = match self
            .own
            .get_mut(worker.index())
            .and_then(VecDeque::pop_front)
        {
            Some(t) => t,
            None => {
                let pos = self.shared.iter().position(|&t| view.can_run(t, worker))?;
                self.shared.remove(pos)?
            }
        };
        self.queued -= 1;
        Some(t)
    }

    fn queued(&self) -> usize {
        self.queued
    }
}

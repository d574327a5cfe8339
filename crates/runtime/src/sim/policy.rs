//! A rank's scheduler as the simulation holds it: every call that may change what a pop finds
//! goes through here and is counted, so that a worker whose last pop found nothing is not asked
//! again before something changed.

use std::ops::Deref;

use hetsim_taskgraph::{HandleId, TaskId};

use crate::sched::{Decision, Scheduler};
use crate::{MemNodeId, View, WorkerId};

/// A rank's scheduler, and what the simulation knows of its state. Its read-only methods are
/// the scheduler's (through `Deref`); the ones that may change it are this type's own.
pub(super) struct Policy<'a> {
    sched: &'a mut dyn Scheduler,
    /// The calls so far that may have changed what a pop finds.
    changes: u64,
    /// Per local worker, `changes` when its last pop found nothing, under a policy whose empty
    /// pops repeat ([`Scheduler::pop_fails_alike`]); `u64::MAX` if none did.
    empty_at: Vec<u64>,
}

impl<'a> Policy<'a> {
    pub fn new(sched: &'a mut dyn Scheduler, workers: usize) -> Self {
        Policy {
            sched,
            changes: 0,
            empty_at: vec![u64::MAX; workers],
        }
    }

    /// `task` became ready: [`Scheduler::push`].
    pub fn push(&mut self, task: TaskId, view: &View<'_>, decisions: &mut Vec<Decision>) {
        self.changes += 1;
        self.sched.push(task, view, decisions);
    }

    /// [`Scheduler::pop`]. A pop that finds nothing under a policy whose empty pops repeat
    /// leaves it as it was, so it is not counted.
    pub fn pop(&mut self, worker: WorkerId, view: &View<'_>) -> Option<TaskId> {
        let task = self.sched.pop(worker, view);
        if task.is_some() || !self.sched.pop_fails_alike() {
            self.changes += 1;
        }
        task
    }

    /// [`Scheduler::pop_again_after_s`], after a pop that found nothing; then, if the worker
    /// does not come back by itself and the policy's empty pops repeat, the worker is noted as
    /// finding nothing until the next change.
    pub fn pop_again_after_s(&mut self, worker: WorkerId) -> Option<f64> {
        let fails_alike = self.sched.pop_fails_alike();
        if !fails_alike {
            self.changes += 1;
        }
        let again = self.sched.pop_again_after_s(worker);
        if again.is_none() && fails_alike {
            self.empty_at[worker.index()] = self.changes;
        }
        again
    }

    /// Whether a pop by `worker` now would find nothing, as its last one did, nothing having
    /// changed since (a policy that follows replicas hears of their changes at its pops: it is
    /// always asked).
    pub fn finds_nothing(&self, worker: WorkerId) -> bool {
        self.empty_at[worker.index()] == self.changes && !self.sched.watches_replicas()
    }

    /// [`Scheduler::replicas_changed`].
    pub fn replicas_changed(&mut self, changes: &[(HandleId, MemNodeId)], view: &View<'_>) {
        self.changes += 1;
        self.sched.replicas_changed(changes, view);
    }

    /// [`Scheduler::task_started`].
    pub fn task_started(&mut self, task: TaskId, worker: WorkerId, view: &View<'_>) {
        self.changes += 1;
        self.sched.task_started(task, worker, view);
    }

    /// [`Scheduler::task_ended`].
    pub fn task_ended(&mut self, task: TaskId, worker: WorkerId, view: &View<'_>) {
        self.changes += 1;
        self.sched.task_ended(task, worker, view);
    }
}

impl<'a> Deref for Policy<'a> {
    type Target = dyn Scheduler + 'a;

    fn deref(&self) -> &Self::Target {
        self.sched
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fixture::{Fixture, RATES, star_machine, workers};
    use hetsim_taskgraph::{Access, AccessMode, Handle, TaskGraphBuilder};

    /// One FIFO, each pop taking the first task; `fails_alike` says whether it promises that
    /// its empty pops repeat.
    struct Fifo {
        queue: Vec<TaskId>,
        fails_alike: bool,
    }

    impl Scheduler for Fifo {
        fn name(&self) -> &'static str {
            "fifo"
        }
        fn push(&mut self, task: TaskId, _view: &View<'_>, _decisions: &mut Vec<Decision>) {
            self.queue.push(task);
        }
        fn pop(&mut self, _worker: WorkerId, _view: &View<'_>) -> Option<TaskId> {
            (!self.queue.is_empty()).then(|| self.queue.remove(0))
        }
        fn queued(&self) -> usize {
            self.queue.len()
        }
        fn pop_fails_alike(&self) -> bool {
            self.fails_alike
        }
    }

    fn graph() -> hetsim_taskgraph::TaskGraph {
        let mut b = TaskGraphBuilder::new();
        let cl = b.codelet("k").unwrap();
        let h = b.add_handle(Handle::bytes(1 << 20)).unwrap();
        for _ in 0..2 {
            b.submit(cl, 1e6, 0, &[Access::new(h, AccessMode::R)])
                .unwrap();
        }
        b.build().unwrap()
    }

    #[test]
    fn an_empty_pop_holds_until_the_policy_changes() {
        let (m, g) = (star_machine(1, 3), graph());
        let f = Fixture::new(&m, &g, &RATES, &workers(2, 1));
        let view = f.view(0.0);
        let (w0, w1) = (WorkerId(0), WorkerId(1));
        let mut fifo = Fifo {
            queue: Vec::new(),
            fails_alike: true,
        };
        let mut p = Policy::new(&mut fifo, 3);
        assert!(!p.finds_nothing(w0), "never asked yet");
        // Both workers find nothing: each holds, the other's empty pop changing nothing.
        for w in [w0, w1] {
            assert_eq!(p.pop(w, &view), None);
            assert_eq!(p.pop_again_after_s(w), None);
        }
        assert!(p.finds_nothing(w0) && p.finds_nothing(w1));
        assert!(!p.finds_nothing(WorkerId(2)), "worker 2 never popped");
        // A push changes the policy: both must ask again, and one finds the task.
        p.push(TaskId(0), &view, &mut Vec::new());
        assert!(!p.finds_nothing(w0) && !p.finds_nothing(w1));
        assert_eq!(p.pop(w1, &view), Some(TaskId(0)));
        // So does a task's end.
        assert_eq!(p.pop(w0, &view), None);
        assert_eq!(p.pop_again_after_s(w0), None);
        assert!(p.finds_nothing(w0));
        p.task_ended(TaskId(0), w1, &view);
        assert!(!p.finds_nothing(w0));
    }

    #[test]
    fn a_policy_that_promises_nothing_is_always_asked() {
        let (m, g) = (star_machine(1, 3), graph());
        let f = Fixture::new(&m, &g, &RATES, &workers(2, 1));
        let view = f.view(0.0);
        let mut fifo = Fifo {
            queue: Vec::new(),
            fails_alike: false,
        };
        let mut p = Policy::new(&mut fifo, 3);
        assert_eq!(p.pop(WorkerId(0), &view), None);
        assert_eq!(p.pop_again_after_s(WorkerId(0)), None);
        assert!(!p.finds_nothing(WorkerId(0)));
    }
}

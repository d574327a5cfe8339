//! The interface between the runtime and a scheduling policy (the policies themselves are in
//! the `hetsim-sched` crate).
//!
//! A scheduler never touches the simulation. The runtime tells it that a task became ready
//! ([`Scheduler::push`]) and asks it for work when a worker has room ([`Scheduler::pop`]); it
//! answers from its own queues, looking at the world only through a read-only [`View`]
//! (clock, predicted task lengths, predicted transfer times, where data is valid, what workers
//! hold), and may ask for [`Decision`]s such as prefetches. This is StarPU's push/pop shape, so
//! the dmda family and work stealing fit the same trait.

use hetsim_platform::machine::{Machine, MemNodeId};
use hetsim_taskgraph::{HandleId, TaskId};

use crate::{View, Worker, WorkerId};

/// Something a scheduler asks the runtime to do besides running tasks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Decision {
    /// Start moving `task`'s input data to `worker`'s memory now (StarPU prefetches at push
    /// time). Prefetches yield to fetches of tasks about to run.
    Prefetch {
        /// The task whose inputs to move.
        task: TaskId,
        /// Where it will run.
        worker: WorkerId,
    },
    /// The push woke `worker` (a [`Wakes::Chosen`] policy's `starpu_wake_worker_locked` of the
    /// worker it queued the task to).
    Wake {
        /// The worker woken.
        worker: WorkerId,
    },
}

/// Which sleeping workers a push wakes, as StarPU's policies do in SimGrid builds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Wakes {
    /// eager's wake loop (`push_task_eager_policy`), taken as: the first sleeping worker by
    /// id. Which of the workers such pushes wake pops first at a shared date is SimGrid's
    /// order among its actors, so under this rule the pops are not dated: every worker pops at
    /// the event, the woken ones first.
    Eager,
    /// Every worker (`ws_push_task`: `starpu_wake_worker_relax_light` on all).
    All,
    /// The worker each push names in a [`Decision::Wake`] (dmda's and random's
    /// `starpu_wake_worker_locked` of the worker they queued the task to).
    Chosen,
}

/// A scheduling policy.
pub trait Scheduler {
    /// The policy's name, as given to `--sched`.
    fn name(&self) -> &'static str;

    /// Called once before the first push with the machine and the run's workers, for policies
    /// that need the machine's topology (`lws` reads `[affinity]`).
    fn prepare(&mut self, _machine: &Machine, _workers: &[Worker]) {}

    /// `task` became ready (all its predecessors ended). Queue it; optionally add decisions.
    fn push(&mut self, task: TaskId, view: &View<'_>, decisions: &mut Vec<Decision>);

    /// `worker` can take a task: return one from the queues, or `None`. Only tasks that
    /// [`View::can_run`] allows on this worker may be returned.
    fn pop(&mut self, worker: WorkerId, view: &View<'_>) -> Option<TaskId>;

    /// After a pop of `worker` that returned nothing: the delay after which it pops again
    /// without waiting for a push, if it does (a ws thief that failed to lock its victim
    /// sleeps and wakes itself), before its driver's progress call.
    fn pop_again_after_s(&mut self, _worker: WorkerId) -> Option<f64> {
        None
    }

    /// Whether a pop that finds nothing, and the [`Scheduler::pop_again_after_s`] after it
    /// (which must then be `None`), leave the policy as it was, and a pop by the same worker
    /// finds nothing again, whatever the [`View`], until the policy is next pushed to, popped
    /// from or told of a change (replicas, a task's start or end). The runtime then does not
    /// ask a worker again in between: an awake worker with room would otherwise be asked at
    /// every event of its rank. `false` (the default) when unsure.
    fn pop_fails_alike(&self) -> bool {
        false
    }

    /// Whether the policy follows the state of replicas ([`Scheduler::replicas_changed`]), to
    /// keep keys that depend on it up to date instead of querying the [`View`] at each pop.
    fn watches_replicas(&self) -> bool {
        false
    }

    /// Before each pop, for a policy that [`Scheduler::watches_replicas`]: the replicas
    /// (handle, memory node of this rank) whose valid, loading or allocated state
    /// ([`View::is_valid_on`], [`View::is_loading_on`], [`View::is_allocated_on`]) changed
    /// since the policy last heard, in order (one may appear more than once).
    fn replicas_changed(&mut self, _changes: &[(HandleId, MemNodeId)], _view: &View<'_>) {}

    /// A popped task starts executing on `worker` (its data is there).
    fn task_started(&mut self, _task: TaskId, _worker: WorkerId, _view: &View<'_>) {}

    /// A task ended on `worker`.
    fn task_ended(&mut self, _task: TaskId, _worker: WorkerId, _view: &View<'_>) {}

    /// Tasks pushed and not yet popped (for diagnoses and invariant checks).
    fn queued(&self) -> usize;

    /// Which sleeping workers a push wakes; each reaches its pop after a datawizard progress
    /// call (`runtime::workers`, `pop_order`).
    fn wakes(&self) -> Wakes {
        Wakes::Eager
    }

    /// Whether task priorities reach this policy. In StarPU only the policies that set their
    /// context's priority bounds see them (dmdap, dmdas and dmdasd accept any integer, prio a
    /// range); under the others the bounds stay 0..0 and StarPU's examples submit every task
    /// at priority 0 (`cholesky_implicit.c` uses its priority numbers only when the bounds are
    /// unbounded, `STARPU_MAX_PRIO` = 0 otherwise). The runtime's data requests follow the
    /// same rule.
    fn takes_priorities(&self) -> bool {
        false
    }

    /// `task`'s priority as this policy sees it: the graph's, or 0 if it takes none.
    fn priority(&self, task: TaskId, view: &View<'_>) -> i32 {
        if self.takes_priorities() {
            view.graph().task(task).priority
        } else {
            0
        }
    }
}

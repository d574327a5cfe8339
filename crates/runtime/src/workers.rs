//! The workers of one runtime: what each holds (its pipeline of popped tasks), what it runs,
//! the order in which woken workers reach their pop, and where each worker's time went.
//!
//! A worker holds up to `pipeline_depth` popped tasks, front first; the front one runs once
//! its buffers are in place. The part knows nothing of data or schedulers: the loop tells it
//! that a worker took, started or ended a task, and it answers with the worker's new state
//! (for the observers) and the order of the next pops.

use std::collections::VecDeque;

use hetsim_taskgraph::TaskId;

use super::observe::WorkerStatus;
use super::{Worker, WorkerId, WorkerKind, WorkerLoad};

/// Simulated time of one datawizard progress call per memory node a driver handles
/// (`___starpu_datawizard_progress` sleeps 1 µs in SimGrid builds). A CPU driver handles RAM;
/// a GPU's handles its memory and RAM.
const PROGRESS_S_PER_NODE: f64 = 1e-6;

/// Where a worker's time goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Activity {
    /// Holds no task.
    Idle,
    /// Holds a task whose inputs are not all there.
    Waiting,
    /// Runs a task.
    Busy,
}

impl Activity {
    fn status(self) -> WorkerStatus {
        match self {
            Activity::Idle => WorkerStatus::Idle,
            Activity::Waiting => WorkerStatus::FetchingInput,
            Activity::Busy => WorkerStatus::Executing,
        }
    }
}

/// One worker's pipeline and time.
#[derive(Debug)]
struct Slot {
    held: VecDeque<TaskId>,
    running: Option<TaskId>,
    started_at_s: f64,
    activity: Activity,
    since_s: f64,
    busy_s: f64,
    waiting_s: f64,
    idle_s: f64,
    tasks: u64,
}

/// Time and work of one worker over a run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct WorkerTimes {
    pub tasks: u64,
    pub busy_s: f64,
    pub waiting_s: f64,
    pub idle_s: f64,
}

/// The workers of one runtime (ids local to it, `0..len`).
#[derive(Debug)]
pub(crate) struct WorkerPool {
    workers: Vec<Worker>,
    slots: Vec<Slot>,
    loads: Vec<WorkerLoad>,
    scratch_dated: Vec<(f64, u32)>,
}

impl WorkerPool {
    pub fn new(workers: Vec<Worker>) -> Self {
        let slots = workers
            .iter()
            .map(|_| Slot {
                held: VecDeque::new(),
                running: None,
                started_at_s: 0.0,
                activity: Activity::Idle,
                since_s: 0.0,
                busy_s: 0.0,
                waiting_s: 0.0,
                idle_s: 0.0,
                tasks: 0,
            })
            .collect();
        WorkerPool {
            loads: vec![WorkerLoad::default(); workers.len()],
            workers,
            slots,
            scratch_dated: Vec::new(),
        }
    }

    pub fn workers(&self) -> &[Worker] {
        &self.workers
    }

    pub fn worker(&self, w: WorkerId) -> &Worker {
        &self.workers[w.index()]
    }

    pub fn loads(&self) -> &[WorkerLoad] {
        &self.loads
    }

    /// The tasks `w` holds, front (next to run) first.
    pub fn held(&self, w: WorkerId) -> &VecDeque<TaskId> {
        &self.slots[w.index()].held
    }

    /// The task `w` would start next: the front of its pipeline, if it runs nothing.
    pub fn next_to_start(&self, w: WorkerId) -> Option<TaskId> {
        let s = &self.slots[w.index()];
        if s.running.is_some() {
            None
        } else {
            s.held.front().copied()
        }
    }

    /// Whether `w` holds no task: its driver thread sleeps, and a push may wake it
    /// (`starpu_wake_worker` wakes only a sleeping worker; a GPU with a kernel in flight is
    /// not one, it comes back when its driver loop does).
    pub fn is_asleep(&self, w: WorkerId) -> bool {
        self.slots[w.index()].held.is_empty()
    }

    /// `w` took task `t` (popped it): it joins the back of its pipeline.
    pub fn hold(&mut self, w: WorkerId, t: TaskId, now_s: f64) -> Option<WorkerStatus> {
        let s = &mut self.slots[w.index()];
        s.held.push_back(t);
        self.loads[w.index()].held = s.held.len() as u32;
        self.account(w, now_s)
    }

    /// `w` starts its front task `t`.
    pub fn start(&mut self, w: WorkerId, t: TaskId, now_s: f64) -> Option<WorkerStatus> {
        let s = &mut self.slots[w.index()];
        debug_assert_eq!(s.held.front(), Some(&t));
        s.running = Some(t);
        s.started_at_s = now_s;
        self.loads[w.index()].running = true;
        self.account(w, now_s)
    }

    /// `w`'s running task ends: returns it, how long it ran, and the worker's new state.
    pub fn end(&mut self, w: WorkerId, now_s: f64) -> (TaskId, f64, Option<WorkerStatus>) {
        let s = &mut self.slots[w.index()];
        let t = s
            .running
            .take()
            .expect("a task ends on a worker running it");
        let front = s.held.pop_front();
        debug_assert_eq!(front, Some(t));
        s.tasks += 1;
        let ran_s = now_s - s.started_at_s;
        self.loads[w.index()] = WorkerLoad {
            held: s.held.len() as u32,
            running: false,
        };
        (t, ran_s, self.account(w, now_s))
    }

    /// Add the time since `w`'s last change to its current activity and set the new one;
    /// returns the new state if it changed.
    fn account(&mut self, w: WorkerId, now_s: f64) -> Option<WorkerStatus> {
        let s = &mut self.slots[w.index()];
        let dt = now_s - s.since_s;
        match s.activity {
            Activity::Idle => s.idle_s += dt,
            Activity::Waiting => s.waiting_s += dt,
            Activity::Busy => s.busy_s += dt,
        }
        s.since_s = now_s;
        let old = s.activity;
        s.activity = if s.running.is_some() {
            Activity::Busy
        } else if s.held.is_empty() {
            Activity::Idle
        } else {
            Activity::Waiting
        };
        (s.activity != old).then(|| s.activity.status())
    }

    /// Close every worker's accounts at the end of the run and return its figures.
    pub fn finish(&mut self, now_s: f64) -> Vec<WorkerTimes> {
        (0..self.workers.len())
            .map(|w| {
                self.account(WorkerId(w as u32), now_s);
                let s = &self.slots[w];
                WorkerTimes {
                    tasks: s.tasks,
                    busy_s: s.busy_s,
                    waiting_s: s.waiting_s,
                    idle_s: s.idle_s,
                }
            })
            .collect()
    }

    /// The order in which workers pop after an event, in the order StarPU's simulated driver
    /// threads reach their pop (`starpu-reference.md` §1a eager and the overheads table;
    /// `driver_cuda.c`, `driver_cpu.c`, `datawizard.c`):
    ///
    /// - the thread that ended a task (`releasing`) pushes the `pushes` successors it released
    ///   one after the other, each push costing it `push_s`; when `wakes_all` is false (eager),
    ///   push `j` (from 0) wakes the first sleeping worker by id (one holding no task; a GPU
    ///   with a kernel in flight is not asleep); when it is true (ws, lws) all sleeping
    ///   workers wake at push 0;
    /// - a woken worker pops after one datawizard progress call, which sleeps 1 µs per memory
    ///   node its driver handles (1 µs for a CPU core, 2 µs for a GPU's driver, which also
    ///   handles RAM): at `j·push_s + 1 µs` or `+ 2 µs`;
    /// - the releasing worker pops after its pushes and its own progress call, at
    ///   `pushes·push_s + 1 µs` or `+ 2 µs`.
    ///
    /// Fills `order` with the woken workers and the releaser in order of those dates (ties: the
    /// earlier push first, the releaser last), then every other worker by id, and returns how
    /// many lead (each of those takes one task before everyone fills its room). With StarPU
    /// 1.4's 1 µs per push and GPUs numbered first this is id order, the releaser last; with no
    /// push cost (StarPU 1.3) the woken CPUs pop before the woken GPUs.
    pub fn pop_order(
        &mut self,
        releasing: Option<WorkerId>,
        pushes: usize,
        wakes_all: bool,
        push_s: f64,
        order: &mut Vec<u32>,
    ) -> usize {
        order.clear();
        let n = self.workers.len() as u32;
        let others = (0..n).filter(|&w| Some(WorkerId(w)) != releasing);
        let wake = match (wakes_all, pushes) {
            (_, 0) => 0,
            (true, _) => usize::MAX,
            (false, k) => k,
        };
        let pop_at_s = |pushes_before: usize, w: u32| {
            let progress_s = match self.workers[w as usize].kind {
                WorkerKind::Cpu => PROGRESS_S_PER_NODE,
                WorkerKind::Gpu => 2.0 * PROGRESS_S_PER_NODE,
            };
            pushes_before as f64 * push_s + progress_s
        };
        let mut dated = std::mem::take(&mut self.scratch_dated);
        dated.clear();
        let asleep = others.clone().filter(|&w| self.is_asleep(WorkerId(w)));
        for (j, w) in asleep.take(wake).enumerate() {
            dated.push((pop_at_s(if wakes_all { 0 } else { j }, w), w));
        }
        let woken = dated.len();
        dated.extend(releasing.map(|w| (pop_at_s(pushes, w.0), w.0)));
        // Stable: equal dates keep push order, the releaser last.
        dated.sort_by(|a, b| a.0.total_cmp(&b.0));
        order.extend(dated.iter().map(|&(_, w)| w));
        self.scratch_dated = dated;
        let leading = order.len();
        let mut skipped = 0;
        for w in others {
            if skipped < woken && self.is_asleep(WorkerId(w)) {
                skipped += 1;
            } else {
                order.push(w);
            }
        }
        leading
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetsim_platform::machine::MemNodeId;

    /// Two GPUs (workers 0, 1) then three CPU cores (2, 3, 4), all idle.
    fn pool() -> WorkerPool {
        let w = |id: u32, kind| Worker {
            id: WorkerId(id),
            name: format!("W{id}"),
            kind,
            device: String::new(),
            memory: MemNodeId(0),
            pipeline_depth: 1,
        };
        WorkerPool::new(vec![
            w(0, WorkerKind::Gpu),
            w(1, WorkerKind::Gpu),
            w(2, WorkerKind::Cpu),
            w(3, WorkerKind::Cpu),
            w(4, WorkerKind::Cpu),
        ])
    }

    /// By hand, CPU 3 ends a task and pushes two successors, everyone else asleep:
    /// - eager, 1 µs per push: push 0 wakes GPU0 (pops at 0 + 2 µs), push 1 wakes GPU1
    ///   (1 + 2 = 3 µs); the releaser pops after both pushes and its own progress call
    ///   (2 + 1 = 3 µs), after GPU1 at the same date: 0, 1, 3 lead, then 2 and 4 by id;
    /// - eager, no push cost: GPU0 and GPU1 at 2 µs, the releaser at 1 µs: 3, 0, 1 lead;
    /// - ws (every sleeping worker wakes at the first push), 1 µs per push, one push: CPUs 2
    ///   and 4 at 1 µs, GPUs at 2 µs, the releaser at 1 + 1 = 2 µs, last among equals.
    #[test]
    fn pop_order_follows_the_dates_drivers_reach_their_pop() {
        let mut order = Vec::new();
        let mut p = pool();
        assert_eq!(
            p.pop_order(Some(WorkerId(3)), 2, false, 1e-6, &mut order),
            3
        );
        assert_eq!(order, [0, 1, 3, 2, 4]);
        assert_eq!(p.pop_order(Some(WorkerId(3)), 2, false, 0.0, &mut order), 3);
        assert_eq!(order, [3, 0, 1, 2, 4]);
        assert_eq!(p.pop_order(Some(WorkerId(3)), 1, true, 1e-6, &mut order), 5);
        assert_eq!(order, [2, 4, 0, 1, 3]);
        // A worker holding a task is not asleep: no push wakes it.
        p.hold(WorkerId(0), TaskId(0), 0.0);
        assert_eq!(p.pop_order(None, 1, false, 1e-6, &mut order), 1);
        assert_eq!(order, [1, 0, 2, 3, 4]);
    }

    /// Time goes to the activity a worker had since its last change: idle 0-1 s, waiting for
    /// its task's data 1-3 s, busy 3-4 s, idle again 4-6 s.
    #[test]
    fn time_is_split_by_activity() {
        let mut p = pool();
        let w = WorkerId(2);
        assert_eq!(p.hold(w, TaskId(7), 1.0), Some(WorkerStatus::FetchingInput));
        assert_eq!(p.start(w, TaskId(7), 3.0), Some(WorkerStatus::Executing));
        let (t, ran_s, state) = p.end(w, 4.0);
        assert_eq!(
            (t, ran_s, state),
            (TaskId(7), 1.0, Some(WorkerStatus::Idle))
        );
        let times = p.finish(6.0)[2];
        assert_eq!(
            times,
            WorkerTimes {
                tasks: 1,
                busy_s: 1.0,
                waiting_s: 2.0,
                idle_s: 3.0
            }
        );
    }
}

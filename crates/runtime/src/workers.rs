//! The workers of one runtime: what each holds (its pipeline of popped tasks), what it runs,
//! the order in which woken workers reach their pop, and where each worker's time went.
//!
//! A worker holds up to `pipeline_depth` popped tasks, front first; the front one runs once
//! its buffers are in place. The part knows nothing of data or schedulers: the loop tells it
//! that a worker took, started or ended a task, and it answers with the worker's new state
//! (for the observers) and the order of the next pops.

use std::collections::VecDeque;

use fixedbitset::FixedBitSet;

use hetsim_core::engine::to_tick_s;
use hetsim_taskgraph::TaskId;

use super::observe::WorkerStatus;
use super::{Worker, WorkerId, WorkerKind, WorkerLoad};

/// Simulated time of one datawizard progress call per memory node a driver handles
/// (`___starpu_datawizard_progress` sleeps 1 µs in SimGrid builds). A CPU driver handles RAM;
/// a GPU's handles its memory and RAM.
const PROGRESS_S_PER_NODE: f64 = 1e-6;

/// How long a driver's progress call takes before it reads its requests or pulls a task: one
/// [`PROGRESS_S_PER_NODE`] per memory node it drives (RAM's, then a GPU's own for a GPU's).
pub(crate) fn progress_s(gpu_driver: bool) -> f64 {
    if gpu_driver {
        2.0 * PROGRESS_S_PER_NODE
    } else {
        PROGRESS_S_PER_NODE
    }
}

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
    /// After [`WorkerPool::pop_order`]: when, after the event, each leading worker pops.
    lead_pop_s: Vec<f64>,
    /// Per worker: asleep, woken, or awake.
    rest: Vec<Rest>,
    /// Per worker: the tasks it holds that keep it from popping (still fetching their inputs,
    /// or synchronous), as the runtime reports them ([`WorkerPool::set_stuck`]).
    stuck: Vec<u32>,
    /// The workers awake ([`Rest::Awake`]), and those that may pop (room in their pipeline,
    /// nothing held that keeps them from it): kept as they change, so that a pop order does
    /// not ask every worker at every event.
    awake: FixedBitSet,
    room: FixedBitSet,
    scratch_woken: Vec<bool>,
    /// Whether a driver that holds tasks sleeps when its pop finds nothing, as an idle one
    /// does ([`WorkerPool::new`]).
    holders_sleep: bool,
}

impl WorkerPool {
    /// The pool of `workers`, all asleep. With `holders_sleep` (StarPU's drivers), a driver
    /// whose pop finds nothing sleeps even while it holds tasks: StarPU's CUDA driver waits
    /// (`starpu_pthread_wait_wait` in `_starpu_cuda_driver_run_once`) whenever its progress
    /// call did nothing and its pull found no task, a kernel in flight or not, until a push
    /// wakes it, a broadcast reaches one of its memory nodes or its kernel ends. Without it
    /// (an MPI program's ranks, which have no driver threads), a worker holding tasks pops
    /// whenever its rank's workers do.
    pub fn new(workers: Vec<Worker>, holders_sleep: bool) -> Self {
        let n = workers.len();
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
        let mut pool = WorkerPool {
            loads: vec![WorkerLoad::default(); workers.len()],
            workers,
            slots,
            scratch_dated: Vec::new(),
            lead_pop_s: Vec::new(),
            rest: vec![Rest::Sleeping; n],
            stuck: vec![0; n],
            awake: FixedBitSet::with_capacity(n),
            room: FixedBitSet::with_capacity(n),
            scratch_woken: Vec::new(),
            holders_sleep,
        };
        for w in 0..n {
            pool.note(w);
        }
        pool
    }

    /// Bring `w`'s bits in `awake` and `room` up to date.
    fn note(&mut self, w: usize) {
        self.awake.set(w, self.rest[w] == Rest::Awake);
        self.room.set(
            w,
            self.loads[w].held < self.workers[w].pipeline_depth && self.stuck[w] == 0,
        );
    }

    /// A task `w` holds starts (`true`) or stops (`false`) keeping it from popping: StarPU's
    /// driver pops nothing while a popped task still fetches its inputs or a synchronous one
    /// is in its pipeline.
    pub fn set_stuck(&mut self, w: WorkerId, stuck: bool) {
        let count = &mut self.stuck[w.index()];
        if stuck {
            *count += 1;
        } else {
            *count = count
                .checked_sub(1)
                .expect("a worker unstuck more often than stuck");
        }
        self.note(w.index());
    }

    /// How long `w`'s driver's progress call takes ([`progress_s`]).
    pub fn progress_s(&self, w: WorkerId) -> f64 {
        progress_s(self.workers[w.index()].kind == WorkerKind::Gpu)
    }

    /// Whether `w` may pop as far as its pipeline goes: not full, and no held task keeps it
    /// from popping.
    pub fn has_room(&self, w: WorkerId) -> bool {
        self.room.contains(w.index())
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

    /// Whether `w`'s driver thread sleeps, so that a push or a broadcast may wake it: its last
    /// pop found nothing and, unless holders sleep ([`WorkerPool::new`]), it holds no task.
    pub fn is_asleep(&self, w: WorkerId) -> bool {
        self.rest[w.index()] == Rest::Sleeping
            && (self.holders_sleep || self.slots[w.index()].held.is_empty())
    }

    /// `w` is woken, on its way to a pop at a later date.
    pub fn set_waking(&mut self, w: WorkerId) {
        self.rest[w.index()] = Rest::Waking;
        self.note(w.index());
    }

    /// `w` reaches its pop, or found a task: it is awake.
    pub fn set_awake(&mut self, w: WorkerId) {
        self.rest[w.index()] = Rest::Awake;
        self.note(w.index());
    }

    /// `w`'s pop found nothing: its driver thread waits for a wake, unless it holds a task
    /// and holders do not sleep.
    pub fn found_nothing(&mut self, w: WorkerId) {
        if !self.keeps_on_nothing(w) {
            self.rest[w.index()] = Rest::Sleeping;
            self.note(w.index());
        }
    }

    /// Whether a pop of `w` that finds nothing leaves it as it is: it sleeps already, or it
    /// holds a task and holders do not sleep.
    pub fn keeps_on_nothing(&self, w: WorkerId) -> bool {
        self.rest[w.index()] == Rest::Sleeping
            || (!self.holders_sleep && !self.slots[w.index()].held.is_empty())
    }

    /// How long after the event the `i`-th leading worker of the last
    /// [`WorkerPool::pop_order`] reaches its pop.
    pub fn lead_pop_s(&self, i: usize) -> f64 {
        self.lead_pop_s[i]
    }

    /// `w` took task `t` (popped it): it joins the back of its pipeline.
    pub fn hold(&mut self, w: WorkerId, t: TaskId, now_s: f64) -> Option<WorkerStatus> {
        let s = &mut self.slots[w.index()];
        s.held.push_back(t);
        self.loads[w.index()].held = s.held.len() as u32;
        self.note(w.index());
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
        self.note(w.index());
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

    /// The order in which workers pop after an event at `now_s`, and when, in the order
    /// StarPU's simulated driver threads reach their pop (`starpu-reference.md` §1a eager and
    /// the overheads table; `driver_cuda.c`, `driver_cpu.c`, `datawizard.c`):
    ///
    /// - `pushes` are the pushes made in the event, each with the date it was done (a push
    ///   costs its thread `push_s` before it takes effect, `_starpu_push_task` sleeps first,
    ///   and may wait for the header lock of a handle it prefetches); each wakes the sleeping
    ///   workers its [`PushWake`] says (a worker holding a task sleeps only if holders sleep,
    ///   [`WorkerPool::new`]; otherwise it comes back whenever its rank's workers pop);
    /// - a woken worker pops after one datawizard progress call, which sleeps 1 µs per memory
    ///   node its driver handles (1 µs for a CPU core, 2 µs for a GPU's driver, which also
    ///   handles RAM), from the date its push was done;
    /// - the thread that ended a task (`releasing`) pops after the last push and its own
    ///   progress call.
    ///
    /// Fills `order` with the woken workers and the releaser in order of those dates (ties: the
    /// earlier push first, the releaser last), their delays after the event in
    /// [`WorkerPool::lead_pop_s`], then by id the other workers that are awake (a GPU with room
    /// in its pipeline); a sleeping worker no push woke does not pop, unless `all_pop` (every
    /// other worker, awake or not). Of those others, a worker whose pipeline is full is left
    /// out: it could not pop. Returns how many lead.
    pub fn pop_order(
        &mut self,
        releasing: Option<WorkerId>,
        pushes: &[(PushWake, f64)],
        now_s: f64,
        all_pop: bool,
        order: &mut Vec<u32>,
    ) -> usize {
        order.clear();
        self.lead_pop_s.clear();
        if pushes.is_empty() && releasing.is_none() {
            // Nobody woken and nobody releasing (most events): only the others pop.
            self.others_with_room(all_pop, |_| true, order);
            return 0;
        }
        let n = self.workers.len() as u32;
        // Delays rounded to the picosecond: dates summed in different orders differ in their
        // last bits, and equal dates must tie.
        let pop_at_s = |done_s: f64, w: u32| {
            to_tick_s(done_s - now_s) + progress_s(self.workers[w as usize].kind == WorkerKind::Gpu)
        };
        let mut dated = std::mem::take(&mut self.scratch_dated);
        dated.clear();
        let mut woken = std::mem::take(&mut self.scratch_woken);
        woken.clear();
        woken.resize(n as usize, false);
        let asleep = |w: u32, woken: &[bool]| {
            Some(WorkerId(w)) != releasing && !woken[w as usize] && self.is_asleep(WorkerId(w))
        };
        for &(wake, done_s) in pushes {
            match wake {
                PushWake::All => {
                    // SimGrid runs the threads a broadcast wakes from the highest id down.
                    for w in (0..n).rev() {
                        if asleep(w, &woken) {
                            woken[w as usize] = true;
                            dated.push((pop_at_s(done_s, w), w));
                        }
                    }
                }
                PushWake::Worker(w) => {
                    if asleep(w, &woken) {
                        woken[w as usize] = true;
                        dated.push((pop_at_s(done_s, w), w));
                    }
                }
                PushWake::Nobody => {}
                PushWake::FirstAsleep => {
                    // Eager's push wakes up to the first worker never woken before (a SimGrid
                    // build never clears `state_keep_awake`); one holding a task has been.
                    let idle = |w: u32| self.slots[w as usize].held.is_empty();
                    if let Some(w) = (0..n).find(|&w| asleep(w, &woken) && idle(w)) {
                        woken[w as usize] = true;
                        dated.push((pop_at_s(done_s, w), w));
                    }
                }
            }
        }
        let last_s = pushes.last().map_or(now_s, |p| p.1);
        dated.extend(releasing.map(|w| (pop_at_s(last_s, w.0), w.0)));
        // Stable: equal dates keep push order, the releaser last.
        dated.sort_by(|a, b| a.0.total_cmp(&b.0));
        order.extend(dated.iter().map(|&(_, w)| w));
        self.lead_pop_s.extend(dated.iter().map(|&(at, _)| at));
        self.scratch_dated = dated;
        let leading = order.len();
        let others = |w: usize| Some(WorkerId(w as u32)) != releasing && !woken[w];
        self.others_with_room(all_pop, others, order);
        self.scratch_woken = woken;
        leading
    }

    /// Append to `order` the workers `other` accepts that have room in their pipeline, awake
    /// or (if `all_pop`) not: a worker whose pipeline is full, or stuck behind a task still
    /// fetching or a synchronous one, could not pop, so it is left out here rather than asked
    /// again for each event.
    fn others_with_room(&self, all_pop: bool, other: impl Fn(usize) -> bool, order: &mut Vec<u32>) {
        if all_pop {
            // A waking worker pops at its own date.
            order.extend(
                self.room
                    .ones()
                    .filter(|&w| other(w) && self.rest[w] != Rest::Waking)
                    .map(|w| w as u32),
            );
        } else {
            order.extend(
                self.room
                    .intersection(&self.awake)
                    .filter(|&w| other(w))
                    .map(|w| w as u32),
            );
        }
    }
}

/// Where a worker's driver thread is between pops.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Rest {
    /// Its last pop found nothing (and it holds no task, unless holders sleep): it waits for
    /// a push or a broadcast to wake it.
    Sleeping,
    /// Woken, on its way to a pop at a later date (`Event::Pop`).
    Waking,
    /// Holding tasks (where holders do not sleep), or woken and not yet served (it could not
    /// pop): it pops whenever its rank's workers do.
    Awake,
}

/// Which sleeping workers one push wakes ([`WorkerPool::pop_order`]).
#[derive(Debug, Clone, Copy)]
pub(crate) enum PushWake {
    /// Every one.
    All,
    /// This one.
    Worker(u32),
    /// The first sleeping one by id.
    FirstAsleep,
    /// None (an internal task without a codelet: its push costs the pusher all the same).
    Nobody,
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
        WorkerPool::new(
            vec![
                w(0, WorkerKind::Gpu),
                w(1, WorkerKind::Gpu),
                w(2, WorkerKind::Cpu),
                w(3, WorkerKind::Cpu),
                w(4, WorkerKind::Cpu),
            ],
            false,
        )
    }

    /// By hand, CPU 3 ends a task and pushes two successors, everyone else asleep. A push
    /// pays its cost before it wakes anyone:
    /// - eager, 1 µs per push: push 0 wakes GPU0 at 1 µs (it pops at 1 + 2 µs), push 1 wakes
    ///   GPU1 at 2 µs (pops at 2 + 2 = 4 µs); the releaser pops after both pushes and its own
    ///   progress call (2 + 1 = 3 µs), after GPU0 at the same date: 0, 3, 1 lead; no one else
    ///   is awake;
    /// - eager, no push cost: GPU0 and GPU1 at 2 µs, the releaser at 1 µs: 3, 0, 1 lead;
    /// - ws (every sleeping worker wakes at the first push), 1 µs per push, one push: CPUs 4
    ///   and 2 at 1 + 1 = 2 µs (the woken from the highest id down, as StarPU 1.4's traces
    ///   show its thieves), the releaser at 1 + 1 = 2 µs, last among equals, GPUs 1 and 0 at
    ///   1 + 2 = 3 µs;
    /// - dmda (a push wakes the worker it queued the task to), pushes to CPU 4, GPU 1 and CPU 4
    ///   again: CPU 4 at 1 + 1 µs, GPU 1 at 2 + 2 µs, the releaser at 3 + 1 µs; the same with
    ///   the push to GPU 1 done only at 9 µs (it waited for a handle's lock) and the next at
    ///   10 µs: GPU 1 at 9 + 2 µs, the releaser at 10 + 1 µs, after it.
    #[test]
    fn pop_order_follows_the_dates_drivers_reach_their_pop() {
        let mut order = Vec::new();
        let mut p = pool();
        // Pushes made one after the other from date 0 by worker 3's thread, `push_s` each;
        // returns how many lead.
        let from_3 = |p: &mut WorkerPool,
                      wakes: &[PushWake],
                      push_s: f64,
                      all_pop: bool,
                      order: &mut Vec<u32>| {
            let timed: Vec<(PushWake, f64)> = (1..=wakes.len())
                .map(|j| (wakes[j - 1], j as f64 * push_s))
                .collect();
            p.pop_order(Some(WorkerId(3)), &timed, 0.0, all_pop, order)
        };
        let eager2 = [PushWake::FirstAsleep, PushWake::FirstAsleep];
        assert_eq!(from_3(&mut p, &eager2, 1e-6, false, &mut order), 3);
        assert_eq!(order, [0, 3, 1]);
        assert_eq!(
            (p.lead_pop_s(0), p.lead_pop_s(1), p.lead_pop_s(2)),
            (3e-6, 3e-6, 4e-6)
        );
        // Under eager every other worker pops after them, asleep or not.
        from_3(&mut p, &eager2, 1e-6, true, &mut order);
        assert_eq!(order, [0, 3, 1, 2, 4]);
        assert_eq!(from_3(&mut p, &eager2, 0.0, false, &mut order), 3);
        assert_eq!(order, [3, 0, 1]);
        assert_eq!(from_3(&mut p, &[PushWake::All], 1e-6, false, &mut order), 5);
        assert_eq!(order, [4, 2, 3, 1, 0]);
        let dmda = [
            PushWake::Worker(4),
            PushWake::Worker(1),
            PushWake::Worker(4),
        ];
        assert_eq!(from_3(&mut p, &dmda, 1e-6, false, &mut order), 3);
        assert_eq!(order, [4, 1, 3]);
        assert_eq!(
            (p.lead_pop_s(0), p.lead_pop_s(1), p.lead_pop_s(2)),
            (2e-6, 4e-6, 4e-6)
        );
        // The push to GPU 1 waited for a handle's lock until 9 µs, the next one at 10 µs;
        // dates are counted from the event (here at 5 µs).
        let locked = [
            (PushWake::Worker(4), 6e-6),
            (PushWake::Worker(1), 14e-6),
            (PushWake::Worker(4), 15e-6),
        ];
        p.pop_order(Some(WorkerId(3)), &locked, 5e-6, false, &mut order);
        assert_eq!(order, [4, 1, 3]);
        let near = |a: f64, b: f64| (a - b).abs() < 1e-15;
        assert!(near(p.lead_pop_s(0), 2e-6));
        assert!(near(p.lead_pop_s(1), 11e-6) && near(p.lead_pop_s(2), 11e-6));
        // A worker holding a task is not asleep: no push wakes it, and it pops now, after the
        // woken ones, if its pipeline has room (GPU 0 holds 2 here); nor is one already on its
        // way to a pop.
        p.workers[0].pipeline_depth = 2;
        p.hold(WorkerId(0), TaskId(0), 0.0);
        p.set_awake(WorkerId(0));
        let one = [(PushWake::FirstAsleep, 1e-6)];
        assert_eq!(p.pop_order(None, &one, 0.0, false, &mut order), 1);
        assert_eq!(order, [1, 0]);
        p.set_waking(WorkerId(1));
        assert_eq!(p.pop_order(None, &one, 0.0, false, &mut order), 1);
        assert_eq!(order, [2, 0]);
        // Its pipeline full, it could not pop: it is left out.
        p.hold(WorkerId(0), TaskId(1), 0.0);
        assert_eq!(p.pop_order(None, &one, 0.0, false, &mut order), 1);
        assert_eq!(order, [2]);
    }

    /// Where holders sleep (StarPU's drivers), a GPU holding a task whose pop found nothing is
    /// asleep like an idle worker: a push that wakes every sleeping worker wakes it too, and it
    /// pops after its driver's progress call (2 µs after the push, where the CPUs woken with it
    /// pop after 1 µs), not at the push; eager's one wake per push passes it over, since
    /// it has been woken before. Where holders do not sleep it is awake and pops at the push.
    #[test]
    fn a_gpu_holding_a_task_sleeps_when_holders_sleep() {
        let mut order = Vec::new();
        for holders_sleep in [true, false] {
            let mut p = pool();
            p.holders_sleep = holders_sleep;
            p.workers[0].pipeline_depth = 2;
            p.hold(WorkerId(0), TaskId(0), 0.0);
            p.set_awake(WorkerId(0));
            // Its pop found nothing (GPU 1 and the CPUs never popped: asleep).
            p.found_nothing(WorkerId(0));
            assert_eq!(p.is_asleep(WorkerId(0)), holders_sleep);
            let all = [(PushWake::All, 1e-6)];
            let leading = p.pop_order(None, &all, 0.0, false, &mut order);
            if holders_sleep {
                // Woken from the highest id down: CPUs 4, 3, 2 at 1 + 1 µs, GPUs 1, 0 at
                // 1 + 2 µs.
                assert_eq!((leading, order.as_slice()), (5, &[4, 3, 2, 1, 0][..]));
                assert_eq!(p.lead_pop_s(4), 3e-6);
            } else {
                // GPU 0 is not woken: it pops now, after the woken ones.
                assert_eq!((leading, order.as_slice()), (4, &[4, 3, 2, 1, 0][..]));
            }
            let first = [(PushWake::FirstAsleep, 1e-6)];
            p.pop_order(None, &first, 0.0, false, &mut order);
            assert_eq!(order[0], 1, "eager wakes the first idle one, GPU 1");
        }
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

//! Work stealing: `ws` and `lws`, after StarPU's `work_stealing_policy.c` (rules in
//! `starpu-reference.md` §1a, written here from that description).
//!
//! - **Queues.** Each worker owns a deque ordered by priority: highest level first, FIFO within
//!   a level (StarPU's `prio_deque`).
//! - **Push.** A task made ready by the end of a task on worker `w`
//!   ([`View::released_by`]) goes to `w`'s deque if `w` can run it. Otherwise (a task ready at
//!   the start, or one `w` cannot run) it goes round-robin: to the next worker after the last
//!   one chosen this way that can run it (StarPU's `select_worker_round_robin`, whose cursor
//!   starts at worker 0, so the first such task goes to worker 1).
//! - **Pop.** The owner takes the front of its deque: the first task of the highest level.
//! - **Steal.** A worker whose deque is empty steals. `ws` walks the workers round-robin from
//!   the thief's cursor (StarPU's per-worker `last_pop_worker`: where the previous walk stopped,
//!   plus one) and takes the first victim that is **busy** and whose deque is not empty; the
//!   cursor moves past that victim. Busy is StarPU's flag (`select_victim_round_robin`): the
//!   worker's last pop returned a task. A worker whose task has just ended is therefore still
//!   busy while it pushes the tasks it released, and a GPU whose last pop found nothing is not,
//!   though a kernel of its runs. The thief takes the **back** of the victim's highest level:
//!   the last task it can run of that level, then of the level below (StarPU 1.4.12's
//!   `starpu_st_prio_deque_deque_task_for_worker` walks from `list_back_highest`). StarPU
//!   1.3.10's `REMOVE_TASK` ignored the end it was given and walked from the list's
//!   beginning, as the owner does (`runtime.steal_from_back = false`). If the victim holds
//!   nothing the thief
//!   can run, the steal fails. A walk that finds no victim leaves the worker idle until the
//!   next event, and still moves its cursor one place (StarPU's walk ends where it began).
//! - **Thieves at one date** alternate at a victim's lock: the one after a thief that took it
//!   fails its trylock (having chosen the victim while the holder's take was under way), sleeps
//!   `runtime.steal_retry` and pops again ([`Scheduler::pop_again_after_s`]), as StarPU 1.4's
//!   traces show in SimGrid mode.
//! - **Wake-up.** A push wakes every sleeping worker (`ws_push_task`), so at the first push
//!   all of them head for their pop ([`Scheduler::wakes`]).
//! - `lws` walks victims nearest first instead, along a proximity list per worker. StarPU
//!   builds it from the hwloc tree (`lws_add_workers`): the workers bound near the thief's core
//!   first. hetsim builds it from the machine's `[affinity]` when it has one for every GPU
//!   worker ([`affinity_proximity`]): each worker gets a home core (a CPU worker its own core,
//!   a GPU worker the first core of its GPU's list, where StarPU binds its driver) and a
//!   reference list (a GPU worker its GPU's list; a CPU worker the list of the GPU that has its
//!   core earliest, ties to the lower GPU id); victims are sorted by the position of their
//!   home core in the thief's reference list, ties to the lower worker id. Without
//!   `[affinity]` the list is the older one, unchanged: the workers in the thief's memory node
//!   first, then the others, each group by distance of worker ids (ties to the lower id).
//!   StarPU built without hwloc has no list at all: its lws keeps ws's round-robin walk
//!   (`lws_select_victim` exists only under `STARPU_HAVE_HWLOC`), so it behaves as **ws**;
//!   StarPU-SimGrid's validation runs of mirage are that case (see `docs/schedulers.md`).
//!
//! No prefetch: the data moves when the worker that finally runs the task pops it. Steals are
//! counted ([`WorkStealing::steals`]); the Paje traces of StarPU show them as `WSL` links.

use std::cmp::Reverse;
use std::collections::{BTreeMap, VecDeque};

use super::{Decision, Scheduler};
use hetsim_platform::machine::{Machine, RuntimeConfig};
use hetsim_runtime::{View, Wakes, Worker, WorkerId, WorkerKind};
use hetsim_taskgraph::TaskId;

/// How a thief chooses its victim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Victims {
    /// `ws`: round-robin from the thief's cursor.
    RoundRobin,
    /// `lws`: nearest first (by `[affinity]`, or else same memory node, then worker id
    /// distance).
    Nearest,
    /// `lws` with `hwloc = false`: StarPU's lws built without hwloc, as every SimGrid build of
    /// StarPU is, has no proximity list and steals round-robin as `ws` does.
    RoundRobinAsLws,
}

/// `[scheduler]` options of `lws` ([`LWS_OPTIONS`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, serde::Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LwsOptions {
    /// Whether the victim lists know the machine's topology (default true).
    #[serde(default)]
    pub hwloc: Option<bool>,
}

/// The options of `lws`.
pub const LWS_OPTIONS: &[hetsim_core::options::OptionDoc] = &[hetsim_core::options::OptionDoc {
    name: "hwloc",
    values: hetsim_core::options::OptionValues::Bool,
    default: "true",
    help: "victims nearest first; false: round-robin as ws, as StarPU's lws without hwloc (every \
           StarPU-SimGrid build)",
}];

/// One worker's deque: priority levels, highest first; FIFO within a level.
#[derive(Debug, Default, Clone)]
struct PrioDeque {
    levels: BTreeMap<Reverse<i32>, VecDeque<TaskId>>,
    len: usize,
}

impl PrioDeque {
    fn push_back(&mut self, task: TaskId, prio: i32) {
        self.levels
            .entry(Reverse(prio))
            .or_default()
            .push_back(task);
        self.len += 1;
    }

    /// The first task `ok` accepts of the highest level that has one, walking levels highest
    /// first and each level front to back, or back to front if `from_back`; removed.
    fn take(&mut self, from_back: bool, ok: impl Fn(TaskId) -> bool) -> Option<TaskId> {
        let find = |level: &VecDeque<TaskId>| {
            if from_back {
                level.iter().rposition(|&t| ok(t))
            } else {
                level.iter().position(|&t| ok(t))
            }
        };
        let (key, pos) = self
            .levels
            .iter()
            .find_map(|(key, level)| find(level).map(|p| (*key, p)))?;
        let level = self.levels.get_mut(&key).expect("level found");
        let t = level.remove(pos).expect("position found");
        if level.is_empty() {
            self.levels.remove(&key);
        }
        self.len -= 1;
        Some(t)
    }

    /// Tasks in pop order (front first), for tests and diagnoses.
    fn tasks(&self) -> Vec<TaskId> {
        self.levels.values().flatten().copied().collect()
    }
}

/// The work-stealing policies `ws` and `lws`.
#[derive(Debug)]
pub struct WorkStealing {
    victims: Victims,
    deques: Vec<PrioDeque>,
    /// Round-robin push cursor: the last worker chosen (StarPU's `last_push_worker`, 0 at
    /// start).
    last_push: usize,
    /// Per thief: where its next round-robin walk starts (StarPU's `last_pop_worker`).
    next_victim: Vec<usize>,
    /// Per worker: whether its last pop returned a task (StarPU's `busy`). A worker whose
    /// task has just ended is still busy while it pushes the tasks it released.
    busy: Vec<bool>,
    /// Per worker: the other workers, nearest first (`lws`).
    proximity: Vec<Vec<WorkerId>>,
    /// Whether `proximity` comes from the machine's `[affinity]`.
    by_affinity: bool,
    /// Per victim: the date of the last steal attempt on it and whether that thief took its
    /// lock.
    last_attempt: Vec<(f64, bool)>,
    /// Per thief: whether its last pop failed to take its victim's lock, so that it comes back
    /// without waiting for a push.
    trylock_failed: Vec<bool>,
    /// How long such a thief sleeps before it pops again (`runtime.steal_retry`; 0: until a
    /// push wakes it).
    retry_s: f64,
    /// Whether a thief takes the back of the victim's highest level
    /// (`runtime.steal_from_back`) or its front.
    from_back: bool,
    queued: usize,
    steals: u64,
}

impl WorkStealing {
    /// `ws` (round-robin victims) or `lws` (nearest victims first).
    pub fn new(victims: Victims) -> Self {
        WorkStealing {
            victims,
            deques: Vec::new(),
            last_push: 0,
            next_victim: Vec::new(),
            busy: Vec::new(),
            proximity: Vec::new(),
            by_affinity: false,
            last_attempt: Vec::new(),
            trylock_failed: Vec::new(),
            retry_s: RuntimeConfig::default().steal_retry_s,
            from_back: RuntimeConfig::default().steal_from_back,
            queued: 0,
            steals: 0,
        }
    }

    /// `ws`.
    pub fn ws() -> Self {
        Self::new(Victims::RoundRobin)
    }

    /// `lws` with `hwloc = false`: `ws` under lws's name.
    pub fn ws_named_lws() -> Self {
        Self::new(Victims::RoundRobinAsLws)
    }

    /// `lws`.
    pub fn lws() -> Self {
        Self::new(Victims::Nearest)
    }

    /// Tasks taken from another worker's deque so far.
    pub fn steals(&self) -> u64 {
        self.steals
    }

    /// The tasks in `worker`'s deque, in the order its owner would pop them.
    pub fn deque(&self, worker: WorkerId) -> Vec<TaskId> {
        self.deques
            .get(worker.index())
            .map_or_else(Vec::new, PrioDeque::tasks)
    }

    /// The order in which `thief` looks at victims under `lws` (see the module doc): from
    /// `[affinity]` if [`WorkStealing::uses_affinity`], else the other workers of its memory
    /// node, then the rest, each group by distance of worker ids, ties to the lower id.
    pub fn proximity(&self, thief: WorkerId) -> &[WorkerId] {
        self.proximity.get(thief.index()).map_or(&[], Vec::as_slice)
    }

    /// Whether `lws`'s victim order comes from the machine's `[affinity]`.
    pub fn uses_affinity(&self) -> bool {
        self.by_affinity
    }

    fn ensure(&mut self, view: &View<'_>) {
        let n = view.workers().len();
        if self.deques.len() == n {
            return;
        }
        self.deques = vec![PrioDeque::default(); n];
        self.next_victim = vec![0; n];
        self.busy = vec![false; n];
        self.last_attempt = vec![(f64::NEG_INFINITY, false); n];
        self.trylock_failed = vec![false; n];
        if self.proximity.len() != n {
            self.proximity = memory_node_proximity(view.workers());
            self.by_affinity = false;
        }
    }

    /// The worker a task goes to when it cannot stay where it was released: the next one after
    /// the cursor that can run it.
    fn round_robin(&mut self, task: TaskId, view: &View<'_>) -> WorkerId {
        let n = self.deques.len();
        for step in 1..=n {
            let w = (self.last_push + step) % n;
            if view.can_run(task, WorkerId(w as u32)) {
                self.last_push = w;
                return WorkerId(w as u32);
            }
        }
        panic!("the runtime pushes only tasks some worker can run");
    }

    /// Whether `thief` picks `v` as its victim at `now_s`. While another thread holds `v`'s
    /// lock at this date, `thief` still sees the deque as it was before that thread's take.
    fn is_victim(&self, v: WorkerId, thief: WorkerId, now_s: f64) -> bool {
        v != thief
            && self.busy[v.index()]
            && (self.deques[v.index()].len > 0 || self.last_attempt[v.index()] == (now_s, true))
    }

    /// The victim `thief` steals from, if any (moves the round-robin cursor).
    fn victim(&mut self, thief: WorkerId, now_s: f64) -> Option<WorkerId> {
        match self.victims {
            Victims::RoundRobin | Victims::RoundRobinAsLws => {
                let n = self.deques.len();
                let start = self.next_victim[thief.index()];
                let v = (0..n)
                    .map(|k| WorkerId(((start + k) % n) as u32))
                    .find(|&v| self.is_victim(v, thief, now_s));
                // A walk that finds no victim ends where it began: the cursor still moves one
                // past it.
                let end = v.map_or(start, WorkerId::index);
                self.next_victim[thief.index()] = (end + 1) % n;
                v
            }
            Victims::Nearest => self.proximity[thief.index()]
                .iter()
                .copied()
                .find(|&v| self.is_victim(v, thief, now_s)),
        }
    }
}

/// The victim order without `[affinity]`: the workers of the thief's memory node first, then
/// the others, each group by distance of worker ids, ties to the lower id.
fn memory_node_proximity(workers: &[Worker]) -> Vec<Vec<WorkerId>> {
    workers
        .iter()
        .map(|me| {
            let mut others: Vec<WorkerId> = workers
                .iter()
                .filter(|w| w.id != me.id)
                .map(|w| w.id)
                .collect();
            others.sort_by_key(|w| {
                let other = &workers[w.index()];
                (other.memory != me.memory, w.0.abs_diff(me.id.0), w.0)
            });
            others
        })
        .collect()
}

/// `lws`'s victim lists from the machine's `[affinity]` (per GPU, the CPU cores nearest first),
/// one per worker, nearest first; `None` when the file gives no list for one of the GPU workers
/// or leaves a CPU worker's core out of every list (then the memory-node order applies).
///
/// A CPU worker is the core of the same rank (the runtime numbers CPU workers `CPU0`, `CPU1`,
/// ... along the `[[cpus]]` cores in file order); a GPU worker is the GPU of the same name.
/// Each worker has a *home core* — its own core, or for a GPU worker the first core of its
/// GPU's list (StarPU binds a GPU's driver thread near the GPU) — and a *reference list* — its
/// GPU's list, or for a CPU worker the list of the GPU that has its core earliest (ties to the
/// lower GPU id). A thief looks at the other workers by the position of their home core in its
/// reference list, ties to the lower worker id: on a two-socket machine, the workers of its own
/// socket, then those of the other.
pub fn affinity_proximity(machine: &Machine, workers: &[Worker]) -> Option<Vec<Vec<WorkerId>>> {
    let lists: Vec<&[u32]> = machine
        .gpus()
        .iter()
        .map(|g| machine.gpu_affinity(g.id))
        .collect();
    let mut home = Vec::with_capacity(workers.len());
    let mut reference: Vec<&[u32]> = Vec::with_capacity(workers.len());
    let mut next_core = 0u32;
    for w in workers {
        match w.kind {
            WorkerKind::Gpu => {
                let g = machine.gpus().iter().position(|g| g.name == w.device)?;
                home.push(*lists[g].first()?);
                reference.push(lists[g]);
            }
            WorkerKind::Cpu => {
                let core = next_core;
                next_core += 1;
                // `min_by_key` keeps the first of equal minima: the lower GPU id.
                let (_, list) = lists
                    .iter()
                    .filter_map(|l| l.iter().position(|&c| c == core).map(|p| (p, *l)))
                    .min_by_key(|&(p, _)| p)?;
                home.push(core);
                reference.push(list);
            }
        }
    }
    let ncores = machine.cpu_cores() as usize;
    Some(
        workers
            .iter()
            .map(|me| {
                let list = reference[me.id.index()];
                // Position of each core in the reference list; cores it leaves out come last.
                let mut pos = vec![list.len(); ncores];
                for (p, &c) in list.iter().enumerate() {
                    pos[c as usize] = p;
                }
                let mut others: Vec<WorkerId> = workers
                    .iter()
                    .filter(|w| w.id != me.id)
                    .map(|w| w.id)
                    .collect();
                others.sort_by_key(|w| (pos[home[w.index()] as usize], w.0));
                others
            })
            .collect(),
    )
}

impl Scheduler for WorkStealing {
    fn name(&self) -> &'static str {
        match self.victims {
            Victims::RoundRobin => "ws",
            Victims::Nearest | Victims::RoundRobinAsLws => "lws",
        }
    }

    fn prepare(&mut self, machine: &Machine, workers: &[Worker]) {
        // A new run: queues and lists are rebuilt for its workers.
        self.deques.clear();
        self.proximity.clear();
        self.by_affinity = false;
        self.retry_s = machine.runtime().steal_retry_s;
        self.from_back = machine.runtime().steal_from_back;
        if self.victims == Victims::Nearest
            && let Some(p) = affinity_proximity(machine, workers)
        {
            self.proximity = p;
            self.by_affinity = true;
        }
    }

    fn push(&mut self, task: TaskId, view: &View<'_>, _decisions: &mut Vec<Decision>) {
        self.ensure(view);
        let w = match view.released_by() {
            Some(w) if view.can_run(task, w) => w,
            _ => self.round_robin(task, view),
        };
        let prio = self.priority(task, view);
        self.deques[w.index()].push_back(task, prio);
        self.queued += 1;
    }

    fn pop(&mut self, worker: WorkerId, view: &View<'_>) -> Option<TaskId> {
        self.ensure(view);
        let can_run = |t| view.can_run(t, worker);
        let own = self.deques[worker.index()].take(false, can_run);
        let task = own.or_else(|| {
            let now_s = view.now_s();
            let v = self.victim(worker, now_s)?;
            // Thieves that reach one victim at one date alternate: while one holds its lock,
            // the next one's trylock fails.
            let taken = self.last_attempt[v.index()] != (now_s, true);
            self.last_attempt[v.index()] = (now_s, taken);
            if !taken {
                self.trylock_failed[worker.index()] = true;
                return None;
            }
            let t = self.deques[v.index()].take(self.from_back, can_run);
            self.steals += u64::from(t.is_some());
            t
        });
        self.busy[worker.index()] = task.is_some();
        self.queued -= usize::from(task.is_some());
        task
    }

    fn queued(&self) -> usize {
        self.queued
    }

    /// A thief whose trylock of its victim failed sleeps and wakes itself (StarPU 1.4's
    /// `ws_pop_task` in SimGrid builds: 1 µs).
    fn pop_again_after_s(&mut self, worker: WorkerId) -> Option<f64> {
        let failed = std::mem::take(&mut self.trylock_failed[worker.index()]);
        (failed && self.retry_s > 0.0).then_some(self.retry_s)
    }

    /// `ws_push_task` wakes every worker, whatever the task.
    fn wakes(&self) -> Wakes {
        Wakes::All
    }

    /// `initialize_ws_policy` (also lws's) sets its context's priority bounds to any integer.
    fn takes_priorities(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetsim_platform::machine;
    use hetsim_runtime::FlopRate;
    use hetsim_runtime::fixture::{Fixture, star_machine};
    use hetsim_taskgraph::{Access, AccessMode, Handle, TaskGraph, TaskGraphBuilder};

    /// RAM with 8 CPU cores (one per GPU drives it), and `ngpu` GPUs each with its own memory.
    fn machine(ngpu: usize) -> machine::Machine {
        star_machine(ngpu, 8)
    }

    /// Independent tasks, one small handle each, with the given priorities.
    fn graph(prios: &[i32]) -> TaskGraph {
        let mut b = TaskGraphBuilder::new();
        let cl = b.codelet("k").unwrap();
        for &p in prios {
            let h = b.add_handle(Handle::bytes(1000)).unwrap();
            b.submit(cl, 1e6, p, &[Access::new(h, AccessMode::R)])
                .unwrap();
        }
        b.build().unwrap()
    }

    /// Workers: GPU0, GPU1 (ids 0, 1), then CPU cores (ids 2..).
    use hetsim_runtime::fixture::{RATES, workers as config};

    /// Rates under which CPUs cannot run anything.
    const GPU_ONLY: FlopRate = FlopRate {
        cpu_flops_per_sec: 0.0,
        gpu_flops_per_sec: 1e11,
    };

    fn push_from(s: &mut WorkStealing, f: &Fixture<'_>, t: u32, released_by: Option<u32>) {
        let view = Fixture::released_by_worker(f.view(0.0), released_by.map(WorkerId));
        s.push(TaskId(t), &view, &mut Vec::new());
    }

    #[test]
    fn a_released_task_stays_with_the_worker_that_released_it() {
        let m = machine(2);
        let g = graph(&[0, 0, 0]);
        let f = Fixture::new(&m, &g, &RATES, &config(2, 2));
        let mut s = WorkStealing::ws();
        push_from(&mut s, &f, 0, Some(3));
        push_from(&mut s, &f, 1, Some(3));
        push_from(&mut s, &f, 2, Some(0));
        assert_eq!(s.deque(WorkerId(3)), [TaskId(0), TaskId(1)]);
        assert_eq!(s.deque(WorkerId(0)), [TaskId(2)]);
        assert_eq!(s.queued(), 3);
    }

    #[test]
    fn other_tasks_go_round_robin_skipping_workers_that_cannot_run_them() {
        // 2 GPUs (0, 1) and 2 CPU cores (2, 3), all able: the cursor starts at worker 0, so
        // tasks ready at the start go to 1, 2, 3, 0, 1.
        let m = machine(2);
        let g = graph(&[0; 5]);
        let f = Fixture::new(&m, &g, &RATES, &config(2, 2));
        let mut s = WorkStealing::ws();
        for t in 0..5 {
            push_from(&mut s, &f, t, None);
        }
        assert_eq!(s.deque(WorkerId(1)), [TaskId(0), TaskId(4)]);
        assert_eq!(s.deque(WorkerId(2)), [TaskId(1)]);
        assert_eq!(s.deque(WorkerId(3)), [TaskId(2)]);
        assert_eq!(s.deque(WorkerId(0)), [TaskId(3)]);

        // CPUs cannot run the tasks: they go to the GPUs only, and a task released by a CPU
        // worker goes round-robin too.
        let f = Fixture::new(&m, &g, &GPU_ONLY, &config(2, 2));
        let mut s = WorkStealing::ws();
        push_from(&mut s, &f, 0, None);
        push_from(&mut s, &f, 1, None);
        push_from(&mut s, &f, 2, Some(2));
        assert_eq!(s.deque(WorkerId(1)), [TaskId(0), TaskId(2)]);
        assert_eq!(s.deque(WorkerId(0)), [TaskId(1)]);
        assert!(s.deque(WorkerId(2)).is_empty());
    }

    #[test]
    fn the_owner_pops_the_front_highest_priority_first() {
        let m = machine(1);
        let g = graph(&[0, 5, 0, 5]);
        let f = Fixture::new(&m, &g, &RATES, &config(1, 1));
        let mut s = WorkStealing::ws();
        for t in 0..4 {
            push_from(&mut s, &f, t, Some(0));
        }
        let got: Vec<_> = (0..4)
            .map(|_| s.pop(WorkerId(0), &f.view(0.0)).unwrap())
            .collect();
        assert_eq!(got, [TaskId(1), TaskId(3), TaskId(0), TaskId(2)]);
        assert_eq!(s.steals(), 0);
        assert_eq!(s.queued(), 0);
    }

    /// Make `w` busy as StarPU's `busy` flag counts it: push `tasks` as released by `w`,
    /// then let `w` pop once (it takes the first, all at one priority).
    fn busy_with(s: &mut WorkStealing, f: &Fixture<'_>, w: u32, tasks: &[u32]) {
        for &t in tasks {
            push_from(s, f, t, Some(w));
        }
        assert_eq!(s.pop(WorkerId(w), &f.view(0.0)), Some(TaskId(tasks[0])));
    }

    /// [`machine`]`(1)` with `runtime` appended (a `[runtime]` section's keys).
    fn machine_with_runtime(runtime: &str) -> machine::Machine {
        let text = hetsim_runtime::fixture::star_machine_text(1, 8) + "\n[runtime]\n" + runtime;
        machine::from_str(&text, "star.toml").unwrap()
    }

    #[test]
    fn a_thief_takes_the_back_of_the_highest_level_of_a_busy_victim() {
        // GPU0 (worker 0) holds tasks 0..5 with priorities 0, 5, 5, 0, 0. StarPU's `busy` is
        // "the last pop returned a task": GPU0 has not popped yet, so CPU worker 1 cannot
        // steal. GPU0 pops the front of its highest level, task 1. Its deque is then
        // [2 | 0, 3, 4] and it is busy. StarPU 1.4's thief walks from the back of the highest
        // level (`starpu_st_prio_deque_deque_task_for_worker`: `list_back_highest`, then
        // `list_prev_highest`): it takes 2, 4, 3, and GPU0's next pop returns 0. StarPU
        // 1.3.10's (`steal_from_back = false`) walks from the list's beginning whatever end it
        // is given, as the owner's pop does: 2, 0, 3, then GPU0 pops 4. One more pop returns
        // nothing, after which GPU0 is no longer busy and a task pushed to it cannot be stolen.
        let modes = [
            ("", [2, 4, 3, 0]),
            ("steal_from_back = false\n", [2, 0, 3, 4]),
        ];
        for (runtime, stolen_then_own) in modes {
            let m = machine_with_runtime(runtime);
            let g = graph(&[0, 5, 5, 0, 0, 0]);
            let f = Fixture::new(&m, &g, &RATES, &config(1, 1));
            let mut s = WorkStealing::ws();
            s.prepare(&m, &f.workers);
            for t in 0..5 {
                push_from(&mut s, &f, t, Some(0));
            }
            assert_eq!(s.pop(WorkerId(1), &f.view(0.0)), None);
            assert_eq!(s.steals(), 0);
            assert_eq!(s.pop(WorkerId(0), &f.view(0.0)), Some(TaskId(1)));
            // One steal per date: at one date the victim's lock alternates between thieves.
            let mut got: Vec<_> = (1..=3)
                .map(|k| s.pop(WorkerId(1), &f.view(f64::from(k))).unwrap().0)
                .collect();
            assert_eq!(s.steals(), 3);
            got.push(s.pop(WorkerId(0), &f.view(4.0)).unwrap().0);
            assert_eq!(got, stolen_then_own, "{runtime}");
            assert_eq!(s.pop(WorkerId(0), &f.view(4.0)), None);
            push_from(&mut s, &f, 5, Some(0));
            assert_eq!(s.pop(WorkerId(1), &f.view(5.0)), None);
            assert_eq!(s.queued(), 1);
        }
    }

    #[test]
    fn a_thief_skips_tasks_it_cannot_run() {
        // A CPU thief with no model for the tasks steals nothing from a busy GPU.
        let m = machine(1);
        let g = graph(&[0, 0, 0]);
        let f = Fixture::new(&m, &g, &GPU_ONLY, &config(1, 1));
        let mut s = WorkStealing::ws();
        busy_with(&mut s, &f, 0, &[0, 1, 2]);
        assert_eq!(s.pop(WorkerId(1), &f.view(0.0)), None);
        assert_eq!(s.deque(WorkerId(0)), [TaskId(1), TaskId(2)]);
    }

    #[test]
    fn ws_walks_victims_round_robin_from_past_the_last_one() {
        // Workers 0..4 (2 GPUs, 3 CPUs); 1, 2 and 4 are busy with one task each queued. Thief
        // 3's cursor starts at 0: first victim 1; then from 2: victim 2; then from 3: victim 4.
        let m = machine(2);
        let g = graph(&[0; 6]);
        let f = Fixture::new(&m, &g, &RATES, &config(3, 2));
        let mut s = WorkStealing::ws();
        for (t, w) in [(0, 4), (1, 2), (2, 1)] {
            busy_with(&mut s, &f, w, &[t + 3, t]);
        }
        let got: Vec<_> = (0..3)
            .map(|_| s.pop(WorkerId(3), &f.view(0.0)).unwrap())
            .collect();
        assert_eq!(got, [TaskId(2), TaskId(1), TaskId(0)]);
    }

    #[test]
    fn lws_looks_at_the_same_memory_node_first_then_by_id_distance() {
        // Workers: GPU0 (0, own memory), GPU1 (1, own memory), CPUs 2..5 in RAM.
        let m = machine(2);
        let g = graph(&[0; 5]);
        let f = Fixture::new(&m, &g, &RATES, &config(4, 2));
        let mut s = WorkStealing::lws();
        s.ensure(&f.view(0.0));
        let ids = |v: &[WorkerId]| v.iter().map(|w| w.0).collect::<Vec<_>>();
        assert_eq!(ids(s.proximity(WorkerId(3))), [2, 4, 5, 1, 0]);
        assert_eq!(ids(s.proximity(WorkerId(0))), [1, 2, 3, 4, 5]);
        assert_eq!(ids(s.proximity(WorkerId(1))), [0, 2, 3, 4, 5]);
        // CPU 3 steals from busy CPU 5 before busy GPU 1, though ws would reach 1 first.
        for (t, w) in [(0, 1), (1, 5)] {
            busy_with(&mut s, &f, w, &[t + 3, t]);
        }
        assert_eq!(s.pop(WorkerId(3), &f.view(0.0)), Some(TaskId(1)));
        assert_eq!(s.pop(WorkerId(3), &f.view(1.0)), Some(TaskId(0)));
        assert_eq!(s.steals(), 2);
    }

    /// GPU0's and GPU1's lists of [`two_sockets`]: GPU0 near cores 0-2, GPU1 near cores 3-5.
    const TWO_SOCKETS: &str = "[affinity]\nGPU0 = [0, 1, 2, 3, 4, 5]\nGPU1 = [3, 4, 5, 0, 1, 2]\n";

    /// [`star_machine_text`](hetsim_runtime::fixture::star_machine_text) with two GPUs and
    /// six cores, followed by `affinity` (an `[affinity]` section, or nothing).
    fn two_sockets(affinity: &str) -> machine::Machine {
        let t = hetsim_runtime::fixture::star_machine_text(2, 6) + affinity;
        machine::from_str(&t, "two-sockets.toml").unwrap()
    }

    #[test]
    fn lws_orders_victims_by_affinity_when_the_machine_has_it() {
        // Workers (config(4, 2)): GPU0 = 0, GPU1 = 1, CPU0..CPU3 = 2..5 on cores 0..3 (two
        // cores drive the GPUs). Home cores: GPU0 → 0 and GPU1 → 3 (the heads of their lists),
        // CPUk → k. Reference lists: GPU0 and CPU0-2 use GPU0's [0..5] (core 2 is at position
        // 2 there, 5 in GPU1's list); GPU1 and CPU3 use GPU1's [3, 4, 5, 0, 1, 2].
        // Victims sorted by (position of home core, worker id):
        //   GPU0: CPU0 (0), CPU1 (1), CPU2 (2), GPU1 (3, id 1), CPU3 (3, id 5)
        //   GPU1: CPU3 (0), GPU0 (3, id 0), CPU0 (3, id 2), CPU1 (4), CPU2 (5)
        //   CPU2: GPU0 (0, id 0), CPU0 (0, id 2), CPU1 (1), GPU1 (3, id 1), CPU3 (3, id 5)
        //   CPU3: GPU1 (0), GPU0 (3, id 0), CPU0 (3, id 2), CPU1 (4), CPU2 (5)
        let m = two_sockets(TWO_SOCKETS);
        let g = graph(&[0]);
        let f = Fixture::new(&m, &g, &RATES, &config(4, 2));
        let mut s = WorkStealing::lws();
        s.prepare(&m, &f.workers);
        s.ensure(&f.view(0.0));
        assert!(s.uses_affinity());
        let ids = |v: &[WorkerId]| v.iter().map(|w| w.0).collect::<Vec<_>>();
        assert_eq!(ids(s.proximity(WorkerId(0))), [2, 3, 4, 1, 5]);
        assert_eq!(ids(s.proximity(WorkerId(1))), [5, 0, 2, 3, 4]);
        assert_eq!(ids(s.proximity(WorkerId(4))), [0, 2, 3, 1, 5]);
        assert_eq!(ids(s.proximity(WorkerId(5))), [1, 0, 2, 3, 4]);

        // Without [affinity], the memory-node order as before: CPU3 (id 5) looks at the other
        // CPUs by id distance (4, 3, 2), then the GPUs (1, 0).
        let m = two_sockets("");
        let f = Fixture::new(&m, &g, &RATES, &config(4, 2));
        let mut s = WorkStealing::lws();
        s.prepare(&m, &f.workers);
        s.ensure(&f.view(0.0));
        assert!(!s.uses_affinity());
        assert_eq!(ids(s.proximity(WorkerId(5))), [4, 3, 2, 1, 0]);
    }

    #[test]
    fn which_victim_a_thief_picks_with_and_without_affinity() {
        // CPU3 (worker 5, core 3) steals; GPU1 (worker 1) and CPU2 (worker 4) are busy, each
        // holding one task. With affinity GPU1 is nearest (core 3 heads GPU1's list, and CPU3's
        // reference list is GPU1's): it takes GPU1's task 0. Without, its memory-node neighbour
        // CPU2 comes first: it takes task 1.
        for (affinity, first, second) in [(TWO_SOCKETS, 0, 1), ("", 1, 0)] {
            let m = two_sockets(affinity);
            let g = graph(&[0; 4]);
            let f = Fixture::new(&m, &g, &RATES, &config(4, 2));
            let mut s = WorkStealing::lws();
            s.prepare(&m, &f.workers);
            for (t, w) in [(0, 1), (1, 4)] {
                busy_with(&mut s, &f, w, &[t + 2, t]);
            }
            let got = [
                s.pop(WorkerId(5), &f.view(0.0)),
                s.pop(WorkerId(5), &f.view(1.0)),
            ];
            assert_eq!(
                got,
                [Some(TaskId(first)), Some(TaskId(second))],
                "{affinity}"
            );
        }
    }

    #[test]
    fn a_walk_that_finds_no_victim_still_moves_the_cursor() {
        // Workers 0..4 (2 GPUs, 3 CPUs), nobody busy: thief 3's walk from 0 finds nothing and
        // leaves its cursor at 1 (StarPU's `select_victim_round_robin` sets `last_pop_worker`
        // one past where the walk ended, which is where it began). Then workers 0 and 1 are
        // busy with one queued task each: the walk from 1 takes worker 1's task first, where a
        // walk from 0 would have taken worker 0's.
        let m = machine(2);
        let g = graph(&[0; 4]);
        let f = Fixture::new(&m, &g, &RATES, &config(3, 2));
        let mut s = WorkStealing::ws();
        s.ensure(&f.view(0.0));
        assert_eq!(s.pop(WorkerId(3), &f.view(0.0)), None);
        busy_with(&mut s, &f, 0, &[2, 0]);
        busy_with(&mut s, &f, 1, &[3, 1]);
        assert_eq!(s.pop(WorkerId(3), &f.view(1.0)), Some(TaskId(1)));
        assert_eq!(s.pop(WorkerId(3), &f.view(2.0)), Some(TaskId(0)));
    }

    #[test]
    fn thieves_of_one_victim_at_one_date_alternate_and_the_losers_retry() {
        // GPU0 (worker 0) is busy, tasks 1 and 2 queued; CPUs are workers 1..3. At date 1 s
        // CPUs 3, 2, 1 steal in turn (StarPU 1.4's traces: the thief after one that locked the
        // victim fails its trylock). CPU 3 locks GPU0 and takes task 2 (the back); CPU 2
        // fails: it sleeps 1 µs (`runtime.steal_retry`) and pops again; CPU 1 takes task 1.
        let m = machine(1);
        let g = graph(&[0; 5]);
        let f = Fixture::new(&m, &g, &RATES, &config(3, 1));
        let mut s = WorkStealing::ws();
        s.prepare(&m, &f.workers);
        busy_with(&mut s, &f, 0, &[0, 1, 2]);
        let at = f.view(1.0);
        assert_eq!(s.pop(WorkerId(3), &at), Some(TaskId(2)));
        assert_eq!(s.pop_again_after_s(WorkerId(3)), None);
        assert_eq!(s.pop(WorkerId(2), &at), None);
        assert_eq!(s.pop_again_after_s(WorkerId(2)), Some(1e-6));
        assert_eq!(
            s.pop_again_after_s(WorkerId(2)),
            None,
            "asked once per failure"
        );
        assert_eq!(s.pop(WorkerId(1), &at), Some(TaskId(1)));

        // One task queued (task 4) at date 2 s: CPU 3 takes it; CPU 2, whose walk runs while
        // CPU 3 holds the lock, still sees the task there, picks GPU0 and fails; CPU 1 then
        // sees an empty deque: no victim, and it waits for a push.
        push_from(&mut s, &f, 4, Some(0));
        let at = f.view(2.0);
        assert_eq!(s.pop(WorkerId(3), &at), Some(TaskId(4)));
        assert_eq!(s.pop(WorkerId(2), &at), None);
        assert_eq!(s.pop_again_after_s(WorkerId(2)), Some(1e-6));
        assert_eq!(s.pop(WorkerId(1), &at), None);
        assert_eq!(s.pop_again_after_s(WorkerId(1)), None);

        // StarPU 1.3.10 (`steal_retry = 0`): the loser waits for a push.
        let m13 = machine_with_runtime("steal_retry = 0\n");
        let f = Fixture::new(&m13, &g, &RATES, &config(3, 1));
        let mut s = WorkStealing::ws();
        s.prepare(&m13, &f.workers);
        busy_with(&mut s, &f, 0, &[0, 1, 2]);
        let at = f.view(1.0);
        assert_eq!(s.pop(WorkerId(3), &at), Some(TaskId(2)));
        assert_eq!(s.pop(WorkerId(2), &at), None);
        assert_eq!(s.pop_again_after_s(WorkerId(2)), None);
    }

    #[test]
    fn affinity_missing_for_a_gpu_worker_or_ignored_by_ws() {
        // A list for GPU0 only: GPU1's worker has no home core, so the memory-node order holds.
        let m = two_sockets("[affinity]\nGPU0 = [0, 1, 2, 3, 4, 5]\n");
        let g = graph(&[0]);
        let f = Fixture::new(&m, &g, &RATES, &config(4, 2));
        assert!(affinity_proximity(&m, &f.workers).is_none());
        let mut s = WorkStealing::lws();
        s.prepare(&m, &f.workers);
        assert!(!s.uses_affinity());
        // With only GPU0 used (config(4, 1)), its list covers every worker.
        let f1 = Fixture::new(&m, &g, &RATES, &config(4, 1));
        assert!(affinity_proximity(&m, &f1.workers).is_some());
        // ws never looks at the affinity.
        let m = two_sockets(TWO_SOCKETS);
        let f = Fixture::new(&m, &g, &RATES, &config(4, 2));
        let mut s = WorkStealing::ws();
        s.prepare(&m, &f.workers);
        assert!(!s.uses_affinity());
    }
}

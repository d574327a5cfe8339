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
//!   plus one) and takes the first victim that is busy — executing a task
//!   ([`crate::runtime::WorkerLoad::running`]) — and holds a task the thief can run; the cursor
//!   moves past that victim. The thief takes from the **back** of the victim's deque: within
//!   the highest priority level holding a task it can run, the last such task. A walk that finds
//!   no victim leaves the worker idle until the next event.
//! - `lws` walks victims nearest first instead: each worker has a proximity list — the workers
//!   in the same memory node first, then the others, each group by distance of worker ids
//!   (ties to the lower id). StarPU builds its list from the hwloc tree; hetsim has no such
//!   tree, so the machine's memory-node affinity stands in for it. StarPU built without hwloc
//!   has no list at all and lws uses ws's round-robin walk, i.e. **lws behaves as ws**; that is
//!   also what to expect of StarPU in SimGrid mode, where the tree it sees is not the simulated
//!   machine's.
//!
//! No prefetch: the data moves when the worker that finally runs the task pops it. Steals are
//! counted ([`WorkStealing::steals`]); the Paje traces of StarPU show them as `WSL` links.

use std::cmp::Reverse;
use std::collections::{BTreeMap, VecDeque};

use super::{Decision, Scheduler};
use crate::runtime::{View, WorkerId};
use crate::workload::TaskId;

/// How a thief chooses its victim.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Victims {
    /// `ws`: round-robin from the thief's cursor.
    RoundRobin,
    /// `lws`: nearest first (same memory node, then worker id distance).
    Nearest,
}

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

    /// The first task `ok` accepts, walking levels highest first and each level front to
    /// back (`from_back = false`) or back to front (`from_back = true`); removed.
    fn take(&mut self, from_back: bool, ok: impl Fn(TaskId) -> bool) -> Option<TaskId> {
        let (key, pos) = self.find(from_back, ok)?;
        let level = self.levels.get_mut(&key).expect("level found");
        let t = level.remove(pos).expect("position found");
        if level.is_empty() {
            self.levels.remove(&key);
        }
        self.len -= 1;
        Some(t)
    }

    fn find(&self, from_back: bool, ok: impl Fn(TaskId) -> bool) -> Option<(Reverse<i32>, usize)> {
        for (key, level) in &self.levels {
            let pos = if from_back {
                level.iter().rposition(|&t| ok(t))
            } else {
                level.iter().position(|&t| ok(t))
            };
            if let Some(p) = pos {
                return Some((*key, p));
            }
        }
        None
    }

    fn has(&self, ok: impl Fn(TaskId) -> bool) -> bool {
        self.levels.values().flatten().any(|&t| ok(t))
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
    /// Per worker: the other workers, nearest first (`lws`).
    proximity: Vec<Vec<WorkerId>>,
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
            proximity: Vec::new(),
            queued: 0,
            steals: 0,
        }
    }

    /// `ws`.
    pub fn ws() -> Self {
        Self::new(Victims::RoundRobin)
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

    /// The order in which `thief` looks at victims under `lws`: the other workers of its memory
    /// node, then the rest, each group by distance of worker ids, ties to the lower id.
    pub fn proximity(&self, thief: WorkerId) -> &[WorkerId] {
        self.proximity.get(thief.index()).map_or(&[], Vec::as_slice)
    }

    fn ensure(&mut self, view: &View<'_>) {
        let n = view.workers().len();
        if self.deques.len() == n {
            return;
        }
        self.deques = vec![PrioDeque::default(); n];
        self.next_victim = vec![0; n];
        self.proximity = view
            .workers()
            .iter()
            .map(|me| {
                let mut others: Vec<WorkerId> = view
                    .workers()
                    .iter()
                    .filter(|w| w.id != me.id)
                    .map(|w| w.id)
                    .collect();
                others.sort_by_key(|w| {
                    let other = &view.workers()[w.index()];
                    (other.memory != me.memory, w.0.abs_diff(me.id.0), w.0)
                });
                others
            })
            .collect();
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

    fn is_victim(&self, v: WorkerId, thief: WorkerId, view: &View<'_>) -> bool {
        v != thief && view.load(v).running && self.deques[v.index()].has(|t| view.can_run(t, thief))
    }

    /// The victim `thief` steals from, if any (moves the round-robin cursor).
    fn victim(&mut self, thief: WorkerId, view: &View<'_>) -> Option<WorkerId> {
        match self.victims {
            Victims::RoundRobin => {
                let n = self.deques.len();
                let start = self.next_victim[thief.index()];
                let v = (0..n)
                    .map(|k| WorkerId(((start + k) % n) as u32))
                    .find(|&v| self.is_victim(v, thief, view))?;
                self.next_victim[thief.index()] = (v.index() + 1) % n;
                Some(v)
            }
            Victims::Nearest => self.proximity[thief.index()]
                .iter()
                .copied()
                .find(|&v| self.is_victim(v, thief, view)),
        }
    }
}

impl Scheduler for WorkStealing {
    fn name(&self) -> &'static str {
        match self.victims {
            Victims::RoundRobin => "ws",
            Victims::Nearest => "lws",
        }
    }

    fn push(&mut self, task: TaskId, view: &View<'_>, _decisions: &mut Vec<Decision>) {
        self.ensure(view);
        let w = match view.released_by() {
            Some(w) if view.can_run(task, w) => w,
            _ => self.round_robin(task, view),
        };
        let prio = view.graph().task(task).priority;
        self.deques[w.index()].push_back(task, prio);
        self.queued += 1;
    }

    fn pop(&mut self, worker: WorkerId, view: &View<'_>) -> Option<TaskId> {
        self.ensure(view);
        let own = self.deques[worker.index()].take(false, |t| view.can_run(t, worker));
        let task = match own {
            Some(t) => t,
            None => {
                let v = self.victim(worker, view)?;
                let t = self.deques[v.index()]
                    .take(true, |t| view.can_run(t, worker))
                    .expect("the victim holds a task the thief can run");
                self.steals += 1;
                t
            }
        };
        self.queued -= 1;
        Some(task)
    }

    fn queued(&self) -> usize {
        self.queued
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::machine;
    use crate::runtime::fixture::{Fixture, star_machine};
    use crate::runtime::{FlopRate, WorkerLoad};
    use crate::workload::{Access, AccessMode, Handle, TaskGraph, TaskGraphBuilder};

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
    use crate::runtime::fixture::{RATES, workers as config};

    /// Rates under which CPUs cannot run anything.
    const GPU_ONLY: FlopRate = FlopRate {
        cpu_flops_per_sec: 0.0,
        gpu_flops_per_sec: 1e11,
    };

    fn push_from(s: &mut WorkStealing, f: &Fixture<'_>, t: u32, released_by: Option<u32>) {
        let view = View {
            released_by: released_by.map(WorkerId),
            ..f.view(0.0)
        };
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

    #[test]
    fn a_thief_takes_the_back_of_the_highest_level_of_a_busy_victim() {
        // GPU0 holds tasks 0..4 with priorities 0, 5, 5, 0: the back of the highest level is
        // task 2. CPU worker 1 steals it, then task 1, then task 3 (back of level 0).
        let m = machine(1);
        let g = graph(&[0, 5, 5, 0]);
        let mut f = Fixture::new(&m, &g, &RATES, &config(1, 1));
        let mut s = WorkStealing::ws();
        for t in 0..4 {
            push_from(&mut s, &f, t, Some(0));
        }
        // The victim is not executing anything: no steal.
        assert_eq!(s.pop(WorkerId(1), &f.view(0.0)), None);
        assert_eq!(s.steals(), 0);
        f.loads[0] = WorkerLoad {
            held: 1,
            running: true,
        };
        let stolen: Vec<_> = (0..3)
            .map(|_| s.pop(WorkerId(1), &f.view(0.0)).unwrap())
            .collect();
        assert_eq!(stolen, [TaskId(2), TaskId(1), TaskId(3)]);
        assert_eq!(s.steals(), 3);
        // The owner still pops its front.
        assert_eq!(s.pop(WorkerId(0), &f.view(0.0)), Some(TaskId(0)));
        assert_eq!(s.queued(), 0);
    }

    #[test]
    fn a_thief_skips_tasks_it_cannot_run() {
        // A CPU thief with no model for the tasks steals nothing from a busy GPU.
        let m = machine(1);
        let g = graph(&[0, 0]);
        let mut f = Fixture::new(&m, &g, &GPU_ONLY, &config(1, 1));
        let mut s = WorkStealing::ws();
        push_from(&mut s, &f, 0, Some(0));
        push_from(&mut s, &f, 1, Some(0));
        f.loads[0].running = true;
        assert_eq!(s.pop(WorkerId(1), &f.view(0.0)), None);
        assert_eq!(s.deque(WorkerId(0)), [TaskId(0), TaskId(1)]);
    }

    #[test]
    fn ws_walks_victims_round_robin_from_past_the_last_one() {
        // Workers 0..4 (2 GPUs, 3 CPUs); 1, 2 and 4 are busy with one task each queued. Thief
        // 3's cursor starts at 0: first victim 1; then from 2: victim 2; then from 3: victim 4.
        let m = machine(2);
        let g = graph(&[0, 0, 0]);
        let mut f = Fixture::new(&m, &g, &RATES, &config(3, 2));
        let mut s = WorkStealing::ws();
        for (t, w) in [(0, 4), (1, 2), (2, 1)] {
            push_from(&mut s, &f, t, Some(w));
            f.loads[w as usize].running = true;
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
        let g = graph(&[0, 0, 0]);
        let mut f = Fixture::new(&m, &g, &RATES, &config(4, 2));
        let mut s = WorkStealing::lws();
        s.ensure(&f.view(0.0));
        let ids = |v: &[WorkerId]| v.iter().map(|w| w.0).collect::<Vec<_>>();
        assert_eq!(ids(s.proximity(WorkerId(3))), [2, 4, 5, 1, 0]);
        assert_eq!(ids(s.proximity(WorkerId(0))), [1, 2, 3, 4, 5]);
        assert_eq!(ids(s.proximity(WorkerId(1))), [0, 2, 3, 4, 5]);
        // CPU 3 steals from busy CPU 5 before busy GPU 1, though ws would reach 1 first.
        for (t, w) in [(0, 1), (1, 5)] {
            push_from(&mut s, &f, t, Some(w));
            f.loads[w as usize].running = true;
        }
        assert_eq!(s.pop(WorkerId(3), &f.view(0.0)), Some(TaskId(1)));
        assert_eq!(s.pop(WorkerId(3), &f.view(0.0)), Some(TaskId(0)));
        assert_eq!(s.steals(), 2);
    }
}

//! What the static list schedulers (`heft`, and any policy that plans the whole graph at the
//! first push) share: the costs they plan with, placement with insertion, and the execution of
//! a plan. Only [`View`]'s public queries are used.
//!
//! - *Costs* ([`Costs`]). A task's length on each worker is its predicted length; its mean cost
//!   `w̄` the mean over the workers that can run it. The data on an edge `p → s` is the bytes of
//!   the handles `s` reads whose last writer before `s` is `p` (0 for pure ordering edges such
//!   as write-after-read). Moving `b` bytes between two distinct memory nodes costs
//!   `L̄ + b / B̄`, where `L̄` and `B̄` are the means, over the ordered pairs of distinct memory
//!   nodes among the workers' nodes and RAM, of the route's nominal (contention-free) latency
//!   and bandwidth; within one node it is free. Data no predecessor wrote (the matrix as
//!   registered) is in RAM at the start.
//! - *Placement* ([`Placement`]). A task's earliest finish time on a worker is `EST + length`,
//!   `EST` the start of the worker's earliest idle slot at or after the data-ready time that is
//!   long enough for the task (insertion policy). The data-ready time is the latest of, over
//!   predecessors `p`, `finish(p)` plus the transfer cost of the edge's bytes if `p`'s worker is
//!   in another memory node, and the cost of bringing the initial data from RAM.
//! - *Execution* ([`ListScheduler`]). Each worker runs its planned tasks in planned start order: it
//!   pops only its next planned task, and only once that task is ready (pushed). The runtime
//!   times everything itself; the plan fixes only who runs what, in which order. A worker's
//!   order never waits for a later task, since a task's planned start is after its
//!   predecessors' planned finishes.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};
use std::fmt;

use crate::{Decision, Scheduler};

use hetsim_platform::machine::MemNodeId;
use hetsim_runtime::{View, Worker, WorkerId};
use hetsim_taskgraph::TaskId;

/// Where and when a plan puts one task (seconds from the first push).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slot {
    /// The worker.
    pub worker: WorkerId,
    /// Planned start.
    pub start_s: f64,
    /// Planned finish.
    pub finish_s: f64,
}

/// A static schedule of the whole graph.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// The priority of each task the placement order follows, seconds (HEFT's upward rank,
    /// PEFT's rank_oct).
    pub rank_s: Vec<f64>,
    /// Tasks in the order they were placed.
    pub order: Vec<TaskId>,
    /// Each task's slot.
    pub slots: Vec<Slot>,
    /// Mean latency `L̄` and bandwidth `B̄` (bytes/s) of the communication cost.
    pub mean_latency_s: f64,
    /// See `mean_latency_s`.
    pub mean_bandwidth: f64,
}

impl Plan {
    /// The planned finish of the last task.
    pub fn makespan_s(&self) -> f64 {
        self.slots.iter().map(|s| s.finish_s).fold(0.0, f64::max)
    }
}

/// Per task: its predecessors with the bytes it reads from what each wrote, and the bytes it
/// reads that no predecessor wrote (initially in RAM).
pub(crate) struct Inputs {
    pub preds: Vec<Vec<(TaskId, u64)>>,
    pub initial: Vec<u64>,
}

fn inputs(view: &View<'_>) -> Inputs {
    let g = view.graph();
    let n = g.num_tasks();
    let mut preds: Vec<Vec<(TaskId, u64)>> = vec![Vec::new(); n];
    for t in g.task_ids() {
        for &s in g.successors(t) {
            preds[s.index()].push((t, 0));
        }
    }
    // Last writer of each handle, in submission order (as the graph's implicit dependencies).
    let mut last_writer: Vec<Option<TaskId>> = vec![None; g.handles().len()];
    let mut initial = vec![0u64; n];
    for t in g.task_ids() {
        let accesses = g.accesses(t);
        for (i, a) in accesses.iter().enumerate() {
            // A handle accessed twice by one task counts once.
            if !a.mode.reads() || accesses[..i].iter().any(|b| b.handle == a.handle) {
                continue;
            }
            let bytes = g.handle(a.handle).size_bytes;
            let from = last_writer[a.handle.index()]
                .and_then(|w| preds[t.index()].iter_mut().find(|(p, _)| *p == w));
            match from {
                Some((_, b)) => *b += bytes,
                None => initial[t.index()] += bytes,
            }
        }
        for a in accesses.iter().filter(|a| a.mode.writes()) {
            last_writer[a.handle.index()] = Some(t);
        }
    }
    Inputs { preds, initial }
}

/// Topological order, smallest task id first among the available ones.
fn topological(view: &View<'_>) -> Vec<TaskId> {
    let g = view.graph();
    let mut left: Vec<u32> = g.in_degrees();
    let mut heap: BinaryHeap<Reverse<TaskId>> = g
        .task_ids()
        .filter(|t| left[t.index()] == 0)
        .map(Reverse)
        .collect();
    let mut order = Vec::with_capacity(g.num_tasks());
    while let Some(Reverse(t)) = heap.pop() {
        order.push(t);
        for &s in g.successors(t) {
            left[s.index()] -= 1;
            if left[s.index()] == 0 {
                heap.push(Reverse(s));
            }
        }
    }
    assert_eq!(order.len(), g.num_tasks(), "task graphs are acyclic");
    order
}

/// `L̄` and `B̄` over ordered pairs of distinct memory nodes among the workers' and RAM.
fn mean_link(view: &View<'_>) -> (f64, f64) {
    let mut nodes: Vec<MemNodeId> = view.workers().iter().map(|w| w.memory).collect();
    nodes.push(view.ram_node());
    nodes.sort();
    nodes.dedup();
    const PROBE: f64 = 1e9;
    let (mut lat, mut bw, mut pairs) = (0.0, 0.0, 0u32);
    for &a in &nodes {
        for &b in &nodes {
            if a == b {
                continue;
            }
            let l = view.nominal_transfer_s(a, b, 0.0);
            let t = view.nominal_transfer_s(a, b, PROBE);
            if !(l.is_finite() && t.is_finite() && t > l) {
                continue;
            }
            lat += l;
            bw += PROBE / (t - l);
            pairs += 1;
        }
    }
    if pairs == 0 {
        (0.0, f64::INFINITY)
    } else {
        (lat / f64::from(pairs), bw / f64::from(pairs))
    }
}

/// The costs a list scheduler plans with (see the module documentation).
pub(crate) struct Costs {
    /// Workers.
    pub nw: usize,
    /// Predicted lengths, task-major, NaN where a worker cannot run the task.
    len: Vec<f64>,
    /// Mean length over the workers that can run each task.
    pub mean: Vec<f64>,
    /// Per worker: the shortest task it can run (0 if none).
    min_len: Vec<f64>,
    /// `L̄`.
    pub lat: f64,
    /// `B̄`.
    pub bw: f64,
    /// The edges' bytes and the initial data.
    pub inputs: Inputs,
    /// A topological order (smallest id first).
    pub topo: Vec<TaskId>,
    /// Each task's position in `topo`.
    pub pos: Vec<usize>,
}

impl Costs {
    /// The costs of `view`'s graph on its workers.
    pub fn of(view: &View<'_>) -> Self {
        let g = view.graph();
        let n = g.num_tasks();
        let workers = view.workers();
        let nw = workers.len();
        let mut len = vec![f64::NAN; n * nw];
        let mut mean = vec![0.0; n];
        let mut min_len = vec![f64::INFINITY; nw];
        for t in g.task_ids() {
            if !view.is_local(t) {
                // Another rank's task or a message: a zero-length step, planned elsewhere
                // ([`Placement::place_elsewhere`]).
                for w in workers {
                    len[t.index() * nw + w.id.index()] = 0.0;
                }
                continue;
            }
            let (mut sum, mut k) = (0.0, 0u32);
            for w in workers {
                if let Some(l) = view.predicted_length_s(t, w.id) {
                    len[t.index() * nw + w.id.index()] = l;
                    min_len[w.id.index()] = min_len[w.id.index()].min(l);
                    sum += l;
                    k += 1;
                }
            }
            assert!(k > 0, "the runtime refuses tasks no worker can run");
            mean[t.index()] = sum / f64::from(k);
        }
        for m in &mut min_len {
            if !m.is_finite() {
                *m = 0.0;
            }
        }
        let (lat, bw) = mean_link(view);
        let topo = topological(view);
        let mut pos = vec![0usize; n];
        for (i, &t) in topo.iter().enumerate() {
            pos[t.index()] = i;
        }
        Costs {
            nw,
            len,
            mean,
            min_len,
            lat,
            bw,
            inputs: inputs(view),
            topo,
            pos,
        }
    }

    /// `task`'s predicted length on `worker`, `None` if it cannot run there.
    pub fn len(&self, task: TaskId, worker: WorkerId) -> Option<f64> {
        let l = self.len[task.index() * self.nw + worker.index()];
        (!l.is_nan()).then_some(l)
    }

    /// The cost of moving `bytes` between distinct memory nodes: `L̄ + bytes / B̄` (0 without
    /// bytes).
    pub fn transfer_s(&self, bytes: u64) -> f64 {
        if bytes == 0 {
            0.0
        } else {
            self.lat + bytes as f64 / self.bw
        }
    }

    /// The bytes on the edge `pred → succ`.
    pub fn edge_bytes(&self, pred: TaskId, succ: TaskId) -> u64 {
        self.inputs.preds[succ.index()]
            .iter()
            .find(|(p, _)| *p == pred)
            .map_or(0, |&(_, b)| b)
    }
}

/// The worker of a slot that is not this rank's: another rank's task or a message, which runs
/// elsewhere ([`Placement::place_elsewhere`]).
pub const ELSEWHERE: WorkerId = WorkerId(u32::MAX);

/// Idle intervals of one worker, sorted; the last one is open-ended.
struct Gaps {
    gaps: Vec<(f64, f64)>,
    /// Gaps shorter than this (the shortest task the worker can run) are dropped.
    min_len: f64,
}

impl Gaps {
    /// The earliest start ≥ `ready` of an idle interval of length `len`, and its gap.
    fn find(&self, ready: f64, len: f64) -> (f64, usize) {
        let first = self.gaps.partition_point(|g| g.1 <= ready);
        for (i, &(a, b)) in self.gaps.iter().enumerate().skip(first) {
            let st = ready.max(a);
            if st + len <= b {
                return (st, i);
            }
        }
        unreachable!("the last gap is open-ended")
    }

    fn book(&mut self, i: usize, start: f64, end: f64) {
        let (a, b) = self.gaps[i];
        let mut keep = Vec::with_capacity(2);
        if start - a >= self.min_len && start > a {
            keep.push((a, start));
        }
        if b == f64::INFINITY || (b > end && b - end >= self.min_len) {
            keep.push((end, b));
        }
        self.gaps.splice(i..=i, keep);
    }
}

/// Where a task could go on one worker.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Fit {
    /// Earliest start (EST).
    pub start_s: f64,
    /// Earliest finish (EFT).
    pub finish_s: f64,
    gap: usize,
}

/// Tasks placed so far, with insertion into each worker's idle slots.
pub(crate) struct Placement {
    gaps: Vec<Gaps>,
    slots: Vec<Slot>,
    ram: MemNodeId,
}

impl Placement {
    /// Nothing placed yet.
    pub fn new(costs: &Costs, view: &View<'_>) -> Self {
        let placeholder = Slot {
            worker: WorkerId(0),
            start_s: f64::NAN,
            finish_s: f64::NAN,
        };
        Placement {
            gaps: costs
                .min_len
                .iter()
                .map(|&m| Gaps {
                    gaps: vec![(0.0, f64::INFINITY)],
                    min_len: m,
                })
                .collect(),
            slots: vec![placeholder; view.graph().num_tasks()],
            ram: view.ram_node(),
        }
    }

    /// The earliest start and finish of `task` on worker `w`, its predecessors placed; `None`
    /// if `w` cannot run it.
    pub fn fit(&self, costs: &Costs, workers: &[Worker], task: TaskId, w: &Worker) -> Option<Fit> {
        let l = costs.len(task, w.id)?;
        let node = w.memory;
        let mut ready = if node == self.ram {
            0.0
        } else {
            costs.transfer_s(costs.inputs.initial[task.index()])
        };
        for &(p, bytes) in &costs.inputs.preds[task.index()] {
            let ps = self.slots[p.index()];
            debug_assert!(!ps.finish_s.is_nan(), "predecessors are placed first");
            let there = if ps.worker == ELSEWHERE {
                self.ram
            } else {
                workers[ps.worker.index()].memory
            };
            let moved = if there == node {
                0.0
            } else {
                costs.transfer_s(bytes)
            };
            ready = ready.max(ps.finish_s + moved);
        }
        let (start_s, gap) = self.gaps[w.id.index()].find(ready, l);
        Some(Fit {
            start_s,
            finish_s: start_s + l,
            gap,
        })
    }

    /// Put `task` on `worker` where `fit` says.
    pub fn place(&mut self, task: TaskId, worker: WorkerId, fit: Fit) {
        self.gaps[worker.index()].book(fit.gap, fit.start_s, fit.finish_s);
        self.slots[task.index()] = Slot {
            worker,
            start_s: fit.start_s,
            finish_s: fit.finish_s,
        };
    }

    /// Place a task of another rank or a message (not [`View::is_local`]): it runs elsewhere,
    /// taking no time here, when its last predecessor ends; what it produces is then in RAM.
    pub fn place_elsewhere(&mut self, costs: &Costs, task: TaskId) {
        let at = costs.inputs.preds[task.index()]
            .iter()
            .map(|&(p, _)| self.slots[p.index()].finish_s)
            .fold(0.0, f64::max);
        self.slots[task.index()] = Slot {
            worker: ELSEWHERE,
            start_s: at,
            finish_s: at,
        };
    }

    /// Every task's slot.
    pub fn into_slots(self) -> Vec<Slot> {
        self.slots
    }
}

/// The rule of a static list scheduler: how it plans the whole graph.
pub trait ListPlanner {
    /// Its name, as given to `--sched`.
    const NAME: &'static str;
    /// What it computes: the schedule, and what it derived it from.
    type Output: fmt::Debug;
    /// Plan the whole graph.
    fn compute_plan(view: &View<'_>) -> Self::Output;
    /// The schedule in `output`.
    fn schedule(output: &Self::Output) -> &Plan;
}

/// A static list scheduler: plans the whole graph with `P` at the first push, then executes
/// the plan: each worker pops its planned tasks in planned start order, once ready. No
/// prefetch.
///
/// On a cluster each rank plans its own tasks with the others' as zero-length steps, so two
/// ranks' orders can disagree about when data crosses between them; run strictly in order they
/// could each wait for the other. There a worker pops its first *ready* planned task.
#[derive(Debug)]
pub struct ListScheduler<P: ListPlanner> {
    plan: Option<P::Output>,
    exec: Execution,
}

impl<P: ListPlanner> Default for ListScheduler<P> {
    fn default() -> Self {
        ListScheduler {
            plan: None,
            exec: Execution::default(),
        }
    }
}

impl<P: ListPlanner> ListScheduler<P> {
    /// A policy that will plan at its first push.
    pub fn new() -> Self {
        Self::default()
    }

    /// `P`'s plan of `view`'s graph.
    pub fn compute_plan(view: &View<'_>) -> P::Output {
        P::compute_plan(view)
    }

    /// The plan, once computed.
    pub fn plan(&self) -> Option<&P::Output> {
        self.plan.as_ref()
    }

    /// `worker`'s planned tasks not yet popped, in order.
    pub fn planned(&self, worker: WorkerId) -> Vec<TaskId> {
        self.exec.planned(worker)
    }
}

impl<P: ListPlanner> Scheduler for ListScheduler<P> {
    fn name(&self) -> &'static str {
        P::NAME
    }

    fn push(&mut self, task: TaskId, view: &View<'_>, _decisions: &mut Vec<Decision>) {
        if self.plan.is_none() {
            let plan = P::compute_plan(view);
            self.exec = Execution::new(P::schedule(&plan), view.workers().len());
            self.exec.skip_ahead = view.graph().nodes() > 1;
            self.plan = Some(plan);
        }
        self.exec.push(task);
    }

    fn pop(&mut self, worker: WorkerId, _view: &View<'_>) -> Option<TaskId> {
        self.exec.pop(worker)
    }

    fn queued(&self) -> usize {
        self.exec.queued()
    }
}

/// A plan being executed: each worker's planned tasks not yet popped, and which are ready.
#[derive(Debug, Default)]
struct Execution {
    /// Per worker: planned tasks not yet popped, in planned start order.
    next: Vec<VecDeque<TaskId>>,
    ready: Vec<bool>,
    queued: usize,
    /// Pop the first ready planned task rather than only the first planned one.
    skip_ahead: bool,
}

impl Execution {
    /// The execution of `plan` on `nw` workers.
    fn new(plan: &Plan, nw: usize) -> Self {
        let mut per: Vec<Vec<(f64, usize, TaskId)>> = vec![Vec::new(); nw];
        for (i, &t) in plan.order.iter().enumerate() {
            let s = plan.slots[t.index()];
            if s.worker != ELSEWHERE {
                per[s.worker.index()].push((s.start_s, i, t));
            }
        }
        let next = per
            .into_iter()
            .map(|mut v| {
                v.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                v.into_iter().map(|(_, _, t)| t).collect()
            })
            .collect();
        Execution {
            next,
            ready: vec![false; plan.slots.len()],
            queued: 0,
            skip_ahead: false,
        }
    }

    /// `task` became ready.
    fn push(&mut self, task: TaskId) {
        self.ready[task.index()] = true;
        self.queued += 1;
    }

    /// `worker`'s next planned task, if it is ready.
    fn pop(&mut self, worker: WorkerId) -> Option<TaskId> {
        let q = self.next.get_mut(worker.index())?;
        let i = if self.skip_ahead {
            q.iter().position(|t| self.ready[t.index()])?
        } else {
            q.front().filter(|t| self.ready[t.index()]).map(|_| 0)?
        };
        let t = q.remove(i).expect("a position in the queue");
        self.queued -= 1;
        Some(t)
    }

    /// Tasks pushed and not popped.
    fn queued(&self) -> usize {
        self.queued
    }

    /// `worker`'s planned tasks not yet popped, in order.
    fn planned(&self, worker: WorkerId) -> Vec<TaskId> {
        self.next
            .get(worker.index())
            .map_or_else(Vec::new, |q| q.iter().copied().collect())
    }
}

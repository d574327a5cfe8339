//! `heft`: classic HEFT (Topcuoglu, Hariri and Wu, 2002) as a static list scheduler, for
//! comparison with StarPU's dynamic policies. (StarPU itself maps the name `heft` to `dmda`;
//! this is the textbook algorithm.)
//!
//! **Planning**, once, at the first push, over the whole graph ([`View::graph`]):
//!
//! - *Costs.* A task's mean cost `w̄` is the mean of its predicted lengths over the workers that
//!   can run it. The data on an edge `p → s` is the bytes of the handles `s` reads whose last
//!   writer before `s` is `p` (0 for pure ordering edges such as write-after-read). Moving `b`
//!   bytes between two distinct memory nodes costs `L̄ + b / B̄`, where `L̄` and `B̄` are the
//!   means, over the ordered pairs of distinct memory nodes among the workers' nodes and RAM, of
//!   the route's nominal (contention-free) latency and bandwidth; within one node it is free.
//!   Data no predecessor wrote (the matrix as registered) is in RAM at the start.
//! - *Upward rank.* `rank(t) = w̄(t) + max over successors s of (c̄(t, s) + rank(s))`, with
//!   `c̄(t, s)` the cost above of the edge's bytes (0 without bytes).
//! - *Assignment.* Tasks by decreasing rank (ties: topological position, which is submission
//!   order for generated workloads). Each goes to the worker with the earliest finish time
//!   `EFT = EST + length`, where `EST` is the start of the earliest idle slot of the worker, at
//!   or after the data-ready time, long enough for the task (insertion policy). The data-ready
//!   time on worker `w` is the latest of, over predecessors `p`, `finish(p)` plus the transfer
//!   cost of the edge's bytes if `p`'s worker is in another memory node than `w`, and the cost
//!   of bringing the initial data from RAM. Ties go to the lowest worker id.
//!
//! **Execution.** Each worker runs its planned tasks in planned start order: it pops only its
//! next planned task, and only once that task is ready (pushed); otherwise nothing. The runtime
//! then times everything itself (real transfers with contention, drawn kernel durations); the
//! plan fixes only who runs what, in which order. No prefetch. The plan's per-worker order
//! never waits for a later task, since a task's planned start is after its predecessors'
//! planned finishes.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

use super::{Decision, Scheduler};
use hetsim_platform::machine::MemNodeId;
use hetsim_runtime::{View, WorkerId};
use hetsim_taskgraph::TaskId;

/// Where and when the plan puts one task (seconds from the first push).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Slot {
    /// The worker.
    pub worker: WorkerId,
    /// Planned start.
    pub start_s: f64,
    /// Planned finish.
    pub finish_s: f64,
}

/// The static schedule HEFT computed.
#[derive(Debug, Clone, PartialEq)]
pub struct Plan {
    /// Upward rank of each task, seconds.
    pub rank_s: Vec<f64>,
    /// Tasks in the order they were placed (decreasing rank).
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

/// The worker of a slot that is not this rank's: another rank's task or a message (it runs
/// elsewhere and is not planned here).
pub const ELSEWHERE: WorkerId = WorkerId(u32::MAX);

/// The HEFT policy: plans at the first push, then executes the plan.
#[derive(Debug, Default)]
pub struct Heft {
    plan: Option<Plan>,
    /// Per worker: planned tasks not yet popped, in planned start order.
    next: Vec<VecDeque<TaskId>>,
    ready: Vec<bool>,
    queued: usize,
}

/// Per task: its predecessors with the bytes it reads from what each wrote, and the bytes it
/// reads that no predecessor wrote (initially in RAM).
struct Inputs {
    preds: Vec<Vec<(TaskId, u64)>>,
    initial: Vec<u64>,
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
    let mut left: Vec<u32> = g.task_ids().map(|t| g.predecessor_count(t)).collect();
    let mut heap: BinaryHeap<Reverse<TaskId>> = g.roots().map(Reverse).collect();
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

impl Heft {
    /// A policy that will plan at its first push.
    pub fn new() -> Self {
        Self::default()
    }

    /// The plan, once computed.
    pub fn plan(&self) -> Option<&Plan> {
        self.plan.as_ref()
    }

    /// Compute the HEFT plan of the whole graph.
    pub fn compute_plan(view: &View<'_>) -> Plan {
        let g = view.graph();
        let n = g.num_tasks();
        let workers = view.workers();
        let nw = workers.len();
        // Predicted lengths, NaN where a worker cannot run the task.
        let mut len = vec![f64::NAN; n * nw];
        let mut mean = vec![0.0; n];
        let mut min_len = vec![f64::INFINITY; nw];
        for t in g.task_ids() {
            let (mut sum, mut k) = (0.0, 0u32);
            for w in workers {
                if let Some(l) = view.predicted_length_s(t, w.id) {
                    len[t.index() * nw + w.id.index()] = l;
                    min_len[w.id.index()] = min_len[w.id.index()].min(l);
                    sum += l;
                    k += 1;
                }
            }
            if !view.is_local(t) {
                // Another rank's task or a message: a zero-length step of the graph.
                continue;
            }
            assert!(k > 0, "the runtime refuses tasks no worker can run");
            mean[t.index()] = sum / f64::from(k);
        }
        let (lat, bw) = mean_link(view);
        let cost = |bytes: u64| {
            if bytes == 0 {
                0.0
            } else {
                lat + bytes as f64 / bw
            }
        };
        let inputs = inputs(view);
        let topo = topological(view);

        // Upward ranks, successors first.
        let mut rank = vec![0.0; n];
        for &t in topo.iter().rev() {
            let mut tail: f64 = 0.0;
            for &s in g.successors(t) {
                let bytes = inputs.preds[s.index()]
                    .iter()
                    .find(|(p, _)| *p == t)
                    .map_or(0, |&(_, b)| b);
                tail = tail.max(cost(bytes) + rank[s.index()]);
            }
            rank[t.index()] = mean[t.index()] + tail;
        }
        let mut pos = vec![0usize; n];
        for (i, &t) in topo.iter().enumerate() {
            pos[t.index()] = i;
        }
        let mut order: Vec<TaskId> = topo;
        order.sort_by(|a, b| {
            rank[b.index()]
                .total_cmp(&rank[a.index()])
                .then(pos[a.index()].cmp(&pos[b.index()]))
        });

        // Earliest finish time with insertion.
        let ram = view.ram_node();
        let mut gaps: Vec<Gaps> = min_len
            .iter()
            .map(|&m| Gaps {
                gaps: vec![(0.0, f64::INFINITY)],
                min_len: if m.is_finite() { m } else { 0.0 },
            })
            .collect();
        let placeholder = Slot {
            worker: WorkerId(0),
            start_s: f64::NAN,
            finish_s: f64::NAN,
        };
        let mut slots = vec![placeholder; n];
        for &t in &order {
            if !view.is_local(t) {
                // Not planned here: it ends when its last predecessor does.
                let at = inputs.preds[t.index()]
                    .iter()
                    .map(|&(p, _)| slots[p.index()].finish_s)
                    .fold(0.0, f64::max);
                slots[t.index()] = Slot {
                    worker: ELSEWHERE,
                    start_s: at,
                    finish_s: at,
                };
                continue;
            }
            let mut best: Option<(f64, f64, WorkerId, usize)> = None; // (eft, est, w, gap)
            for w in workers {
                let l = len[t.index() * nw + w.id.index()];
                if l.is_nan() {
                    continue;
                }
                let node = w.memory;
                let mut ready = if node == ram {
                    0.0
                } else {
                    cost(inputs.initial[t.index()])
                };
                for &(p, bytes) in &inputs.preds[t.index()] {
                    let ps = slots[p.index()];
                    debug_assert!(!ps.finish_s.is_nan(), "predecessors are placed first");
                    let here = if ps.worker == ELSEWHERE {
                        ram
                    } else {
                        workers[ps.worker.index()].memory
                    };
                    let moved = if here == node { 0.0 } else { cost(bytes) };
                    ready = ready.max(ps.finish_s + moved);
                }
                let (est, gap) = gaps[w.id.index()].find(ready, l);
                if best.is_none_or(|b| est + l < b.0) {
                    best = Some((est + l, est, w.id, gap));
                }
            }
            let (eft, est, w, gap) = best.expect("some worker can run the task");
            gaps[w.index()].book(gap, est, eft);
            slots[t.index()] = Slot {
                worker: w,
                start_s: est,
                finish_s: eft,
            };
        }
        Plan {
            rank_s: rank,
            order,
            slots,
            mean_latency_s: lat,
            mean_bandwidth: bw,
        }
    }

    fn ensure_plan(&mut self, view: &View<'_>) {
        if self.plan.is_some() {
            return;
        }
        let plan = Self::compute_plan(view);
        let nw = view.workers().len();
        let mut per: Vec<Vec<(f64, usize, TaskId)>> = vec![Vec::new(); nw];
        for (i, &t) in plan.order.iter().enumerate() {
            let s = plan.slots[t.index()];
            if s.worker != ELSEWHERE {
                per[s.worker.index()].push((s.start_s, i, t));
            }
        }
        self.next = per
            .into_iter()
            .map(|mut v| {
                v.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
                v.into_iter().map(|(_, _, t)| t).collect()
            })
            .collect();
        self.ready = vec![false; view.graph().num_tasks()];
        self.plan = Some(plan);
    }

    /// `worker`'s planned tasks not yet popped, in order.
    pub fn planned(&self, worker: WorkerId) -> Vec<TaskId> {
        self.next
            .get(worker.index())
            .map_or_else(Vec::new, |q| q.iter().copied().collect())
    }
}

impl Scheduler for Heft {
    fn name(&self) -> &'static str {
        "heft"
    }

    fn push(&mut self, task: TaskId, view: &View<'_>, _decisions: &mut Vec<Decision>) {
        self.ensure_plan(view);
        self.ready[task.index()] = true;
        self.queued += 1;
    }

    fn pop(&mut self, worker: WorkerId, _view: &View<'_>) -> Option<TaskId> {
        let q = self.next.get_mut(worker.index())?;
        let &t = q.front()?;
        if !self.ready[t.index()] {
            return None;
        }
        q.pop_front();
        self.queued -= 1;
        Some(t)
    }

    fn queued(&self) -> usize {
        self.queued
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hetsim_platform::machine;
    use hetsim_runtime::fixture::Fixture;
    use hetsim_runtime::{FlopRate, RunConfig};
    use hetsim_taskgraph::{Access, AccessMode, Handle, TaskGraph, TaskGraphBuilder};

    /// RAM and one GPU, linked at 1 GB/s with 1 ms latency; two CPU cores.
    fn machine() -> machine::Machine {
        let t = "[machine]\nname = \"t\"\n\
                 [[memory_nodes]]\nname = \"RAM\"\nkind = \"ram\"\ncapacity = \"64 GiB\"\n\
                 [[memory_nodes]]\nname = \"GPU0\"\nkind = \"gpu\"\ncapacity = \"8 GiB\"\n\
                 [[cpus]]\ncount = 2\nmodel = \"c\"\nmemory = \"RAM\"\n\
                 [[gpus]]\nname = \"GPU0\"\nmodel = \"g\"\nmemory = \"GPU0\"\n\
                 [[links]]\nname = \"L\"\nbandwidth = \"1e9 B/s\"\nlatency = \"1e-3 s\"\n\
                 [[routes]]\nsrc = \"RAM\"\ndst = \"GPU0\"\nlinks = [\"L\"]\nsymmetric = true\n";
        machine::from_str(t, "t.toml").unwrap()
    }

    /// GPU 4 Gflop/s, CPU 1 Gflop/s: a task of f Mflop takes f/4 ms on the GPU, f ms on a CPU.
    const RATES: FlopRate = FlopRate {
        cpu_flops_per_sec: 1e9,
        gpu_flops_per_sec: 4e9,
    };

    const S: u64 = 1_000_000;

    /// Fork-join A → {B, C} → D on 1 MB tiles (A writes h0; B, C read it and write h1, h2; D
    /// reads h1, h2), plus an independent task E writing h3. Mflop: A 4, B 40, C 2, D 4, E 1.
    fn fork_join() -> TaskGraph {
        let mut b = TaskGraphBuilder::new();
        let cl = b.codelet("k").unwrap();
        let h: Vec<_> = (0..4)
            .map(|_| b.add_handle(Handle::bytes(S)).unwrap())
            .collect();
        let (r, w) = (AccessMode::R, AccessMode::W);
        b.submit(cl, 4e6, 0, &[Access::new(h[0], w)]).unwrap();
        b.submit(cl, 40e6, 0, &[Access::new(h[0], r), Access::new(h[1], w)])
            .unwrap();
        b.submit(cl, 2e6, 0, &[Access::new(h[0], r), Access::new(h[2], w)])
            .unwrap();
        b.submit(cl, 4e6, 0, &[Access::new(h[1], r), Access::new(h[2], r)])
            .unwrap();
        b.submit(cl, 1e6, 0, &[Access::new(h[3], w)]).unwrap();
        b.build().unwrap()
    }

    fn config() -> RunConfig {
        RunConfig {
            ncpu: Some(1),
            ncuda: Some(1),
            ..RunConfig::default()
        }
    }

    fn close(got: f64, want_ms: f64) {
        assert!(
            (got - want_ms * 1e-3).abs() < 1e-12,
            "{got} s vs {want_ms} ms"
        );
    }

    #[test]
    fn ranks_and_earliest_finish_times_on_a_fork_join() {
        // Workers: GPU0 = 0, CPU = 1. Edge cost c̄ = L̄ + 1 MB / B̄ = 1 + 1 = 2 ms.
        // Mean costs (ms): A 2.5, B 25, C 1.25, D 2.5, E 0.625.
        // Ranks: D 2.5; B 25 + 2 + 2.5 = 29.5; C 1.25 + 2 + 2.5 = 5.75;
        //        A 2.5 + max(2 + 29.5, 2 + 5.75) = 34; E 0.625.
        let m = machine();
        let g = fork_join();
        let f = Fixture::new(&m, &g, &RATES, &config());
        let plan = Heft::compute_plan(&f.view(0.0));
        close(plan.mean_latency_s, 1.0);
        assert!((plan.mean_bandwidth - 1e9).abs() < 1e-3);
        for (t, want) in [34.0, 29.5, 5.75, 2.5, 0.625].into_iter().enumerate() {
            close(plan.rank_s[t], want);
        }
        assert_eq!(
            plan.order,
            [TaskId(0), TaskId(1), TaskId(2), TaskId(3), TaskId(4)]
        );
        // EFTs (ms):
        // A: GPU 0 + 1 = 1, CPU 4 → GPU [0, 1].
        // B: GPU ready 1 → 1 + 10 = 11; CPU ready 1 + 2 = 3 → 43 → GPU [1, 11].
        // C: GPU free at 11 → 11.5; CPU ready 3 → 5 → CPU [3, 5].
        // D: GPU ready max(11, 5 + 2) = 11 → 12; CPU ready max(11 + 2, 5) = 13 → 17
        //    → GPU [11, 12].
        // E: GPU free at 12 → 12.25; CPU idle slot [0, 3) fits it: 0 + 1 = 1 → CPU [0, 1],
        //    inserted before C.
        let want = [
            (0, 0.0, 1.0),
            (0, 1.0, 11.0),
            (1, 3.0, 5.0),
            (0, 11.0, 12.0),
            (1, 0.0, 1.0),
        ];
        for (t, &(w, st, fin)) in want.iter().enumerate() {
            let s = plan.slots[t];
            assert_eq!(s.worker, WorkerId(w), "task {t}");
            close(s.start_s, st);
            close(s.finish_s, fin);
        }
        close(plan.makespan_s(), 12.0);
    }

    #[test]
    fn workers_pop_their_planned_tasks_in_order_once_ready() {
        let m = machine();
        let g = fork_join();
        let f = Fixture::new(&m, &g, &RATES, &config());
        let view = f.view(0.0);
        let mut s = Heft::new();
        // Roots A and E are ready at the start.
        s.push(TaskId(0), &view, &mut Vec::new());
        s.push(TaskId(4), &view, &mut Vec::new());
        assert_eq!(s.planned(WorkerId(0)), [TaskId(0), TaskId(1), TaskId(3)]);
        assert_eq!(s.planned(WorkerId(1)), [TaskId(4), TaskId(2)]);
        assert_eq!(s.pop(WorkerId(1), &view), Some(TaskId(4)));
        // C is the CPU's next task but is not ready: nothing, though A is queued.
        assert_eq!(s.pop(WorkerId(1), &view), None);
        assert_eq!(s.pop(WorkerId(0), &view), Some(TaskId(0)));
        // A ended: B and C ready. C was pushed first, but the GPU's next is B.
        s.push(TaskId(2), &view, &mut Vec::new());
        s.push(TaskId(1), &view, &mut Vec::new());
        assert_eq!(s.pop(WorkerId(0), &view), Some(TaskId(1)));
        assert_eq!(s.pop(WorkerId(0), &view), None);
        assert_eq!(s.pop(WorkerId(1), &view), Some(TaskId(2)));
        s.push(TaskId(3), &view, &mut Vec::new());
        assert_eq!(s.pop(WorkerId(1), &view), None);
        assert_eq!(s.pop(WorkerId(0), &view), Some(TaskId(3)));
        assert_eq!(s.queued(), 0);
    }

    #[test]
    fn initial_data_in_ram_counts_on_other_nodes() {
        // One task reading 1 GB from RAM: GPU 0.25 ms + 1 ms + 1 s transfer, CPU 1 ms → CPU.
        let m = machine();
        let mut b = TaskGraphBuilder::new();
        let cl = b.codelet("k").unwrap();
        let h = b.add_handle(Handle::bytes(1_000_000_000)).unwrap();
        b.submit(cl, 1e6, 0, &[Access::new(h, AccessMode::R)])
            .unwrap();
        let g = b.build().unwrap();
        let f = Fixture::new(&m, &g, &RATES, &config());
        let plan = Heft::compute_plan(&f.view(0.0));
        assert_eq!(plan.slots[0].worker, WorkerId(1));
        close(plan.slots[0].finish_s, 1.0);
    }
}

//! `peft`: PEFT, Predict Earliest Finish Time (Arabnejad and Barbosa, "List Scheduling
//! Algorithm for Heterogeneous Systems by an Optimistic Cost Table", IEEE TPDS 25(3), 2014), a
//! static list scheduler like `heft`, whose priorities and processor choice look ahead through
//! an Optimistic Cost Table.
//!
//! The processors are the workers; costs, placement with insertion and execution are HEFT's
//! (`crate::list`): `w(t, p)` is the predicted length of `t` on worker `p`, `c̄(i, j)` the cost
//! `L̄ + bytes / B̄` of the edge's bytes between two workers in distinct memory nodes, 0
//! within one memory node (the paper's "0 if p_w = p_k", where a processor's memory is its
//! own).
//!
//! - *Optimistic Cost Table* (eq. 5): `OCT(t_i, p_k) = max over successors t_j of min over
//!   workers p_w that can run t_j of [OCT(t_j, p_w) + w(t_j, p_w) + c̄(i, j)]`, the `c̄` term 0
//!   when `p_w` and `p_k` share a memory node; `OCT = 0` for exit tasks. Workers in one memory
//!   node with the same predicted length for every task have the same row, so the table is
//!   kept per such class of workers (mirage: the CPU cores, and each GPU).
//! - *Rank* (eq. 6): `rank_oct(t_i)` is the mean of `OCT(t_i, p)` over the workers that can
//!   run `t_i`.
//! - *Selection.* A ready list holds the tasks whose predecessors are all placed; the task of
//!   highest `rank_oct` goes first (ties: topological position, which is submission order for
//!   generated workloads). It goes to the worker minimising (eq. 7)
//!   `O_EFT(t_i, p_j) = EFT(t_i, p_j) + OCT(t_i, p_j)`, with HEFT's EFT (insertion, data-ready
//!   time); ties go to the lowest worker id.
//!
//! **Execution** as `heft` ([`ListScheduler`]): each worker pops its planned tasks in planned
//! start order, each once it is ready; no prefetch.

use std::cmp::Ordering;
use std::collections::BinaryHeap;

use crate::list::{Costs, Fit, ListPlanner, ListScheduler, Placement, Plan};
use hetsim_platform::machine::MemNodeId;
use hetsim_runtime::{View, WorkerId};
use hetsim_taskgraph::TaskId;

/// The PEFT plan: the schedule, and the Optimistic Cost Table behind it.
#[derive(Debug, Clone, PartialEq)]
pub struct PeftPlan {
    /// The schedule; its `rank_s` is `rank_oct`.
    pub plan: Plan,
    /// Per worker: its class (workers of one memory node with the same lengths).
    class_of: Vec<usize>,
    classes: usize,
    /// `OCT(t, class)`, task-major, seconds.
    oct: Vec<f64>,
}

impl PeftPlan {
    /// `OCT(task, worker)`, seconds.
    pub fn oct_s(&self, task: TaskId, worker: WorkerId) -> f64 {
        self.oct[task.index() * self.classes + self.class_of[worker.index()]]
    }
}

/// The PEFT policy: plans at the first push, then executes the plan.
pub type Peft = ListScheduler<PeftRule>;

/// PEFT's planning rule.
#[derive(Debug)]
pub struct PeftRule;

/// A ready task, ordered for the ready list's max-heap: highest rank first, then earliest
/// topological position.
struct Ready {
    rank_s: f64,
    pos: usize,
    task: TaskId,
}

impl Ord for Ready {
    fn cmp(&self, other: &Self) -> Ordering {
        self.rank_s
            .total_cmp(&other.rank_s)
            .then(other.pos.cmp(&self.pos))
    }
}

impl PartialOrd for Ready {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

impl PartialEq for Ready {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == Ordering::Equal
    }
}

impl Eq for Ready {}

/// Per worker its class, and per class a worker of it (workers of one memory node whose
/// predicted lengths agree on every task).
fn classes(view: &View<'_>, costs: &Costs) -> (Vec<usize>, Vec<WorkerId>) {
    let tasks: Vec<TaskId> = view.graph().task_ids().collect();
    let workers = view.workers();
    let mut class_of = Vec::with_capacity(workers.len());
    let mut reps: Vec<WorkerId> = Vec::new();
    for w in workers {
        let same = |r: &WorkerId| {
            workers[r.index()].memory == w.memory
                && tasks
                    .iter()
                    .all(|&t| costs.len(t, *r) == costs.len(t, w.id))
        };
        match reps.iter().position(same) {
            Some(c) => class_of.push(c),
            None => {
                class_of.push(reps.len());
                reps.push(w.id);
            }
        }
    }
    (class_of, reps)
}

impl ListPlanner for PeftRule {
    const NAME: &'static str = "peft";
    type Output = PeftPlan;

    fn schedule(output: &PeftPlan) -> &Plan {
        &output.plan
    }

    /// The PEFT plan of the whole graph.
    fn compute_plan(view: &View<'_>) -> PeftPlan {
        let g = view.graph();
        let n = g.num_tasks();
        let workers = view.workers();
        let costs = Costs::of(view);
        let (class_of, reps) = classes(view, &costs);
        let nc = reps.len();
        let memory: Vec<MemNodeId> = reps.iter().map(|r| workers[r.index()].memory).collect();

        // Eq. 5, successors first.
        let mut oct = vec![0.0; n * nc];
        for &t in costs.topo.iter().rev() {
            for &s in g.successors(t) {
                let c_bar = costs.transfer_s(costs.edge_bytes(t, s));
                for k in 0..nc {
                    let mut best = f64::INFINITY;
                    for (w, &rep) in reps.iter().enumerate() {
                        let Some(len) = costs.len(s, rep) else {
                            continue;
                        };
                        let comm = if memory[w] == memory[k] { 0.0 } else { c_bar };
                        best = best.min(oct[s.index() * nc + w] + len + comm);
                    }
                    let cell = &mut oct[t.index() * nc + k];
                    *cell = cell.max(best);
                }
            }
        }

        // Eq. 6, over the workers that can run the task.
        let rank: Vec<f64> = g
            .task_ids()
            .map(|t| {
                let (mut sum, mut k) = (0.0, 0u32);
                for w in workers.iter().filter(|w| costs.len(t, w.id).is_some()) {
                    sum += oct[t.index() * nc + class_of[w.id.index()]];
                    k += 1;
                }
                sum / f64::from(k)
            })
            .collect();

        // The ready list, highest rank_oct first; eq. 7 picks the worker.
        let mut left: Vec<u32> = g.in_degrees();
        let ready = |t: TaskId| Ready {
            rank_s: rank[t.index()],
            pos: costs.pos[t.index()],
            task: t,
        };
        let mut list: BinaryHeap<Ready> = g
            .task_ids()
            .filter(|t| left[t.index()] == 0)
            .map(ready)
            .collect();
        let mut placed = Placement::new(&costs, view);
        let mut order = Vec::with_capacity(n);
        while let Some(Ready { task: t, .. }) = list.pop() {
            let mut best: Option<(f64, WorkerId, Fit)> = None;
            let local = view.is_local(t);
            for w in workers.iter().filter(|_| local) {
                let Some(fit) = placed.fit(&costs, workers, t, w) else {
                    continue;
                };
                let o_eft = fit.finish_s + oct[t.index() * nc + class_of[w.id.index()]];
                if best.is_none_or(|b| o_eft < b.0) {
                    best = Some((o_eft, w.id, fit));
                }
            }
            if local {
                let (_, w, fit) = best.expect("some worker can run the task");
                placed.place(t, w, fit);
            } else {
                placed.place_elsewhere(&costs, t);
            }
            order.push(t);
            for &s in g.successors(t) {
                left[s.index()] -= 1;
                if left[s.index()] == 0 {
                    list.push(ready(s));
                }
            }
        }
        assert_eq!(order.len(), n, "task graphs are acyclic");
        PeftPlan {
            plan: Plan {
                rank_s: rank,
                order,
                slots: placed.into_slots(),
                mean_latency_s: costs.lat,
                mean_bandwidth: costs.bw,
            },
            class_of,
            classes: nc,
            oct,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::runtime_rules::WhoRan;
    use crate::{Heft, Scheduler};
    use hetsim_platform::machine;
    use hetsim_runtime::fixture::Fixture;
    use hetsim_runtime::{KernelTimes, RunConfig, SimRng, Worker, WorkerKind, simulate_observed};
    use hetsim_taskgraph::{Access, AccessMode, Handle, TaskGraph, TaskGraphBuilder};

    /// RAM and one GPU, linked at 1 GB/s with 1 ms latency both ways; three CPU cores.
    fn machine() -> machine::Machine {
        let t = "[machine]\nname = \"t\"\n\
                 [[memory_nodes]]\nname = \"RAM\"\nkind = \"ram\"\ncapacity = \"64 GiB\"\n\
                 [[memory_nodes]]\nname = \"GPU0\"\nkind = \"gpu\"\ncapacity = \"8 GiB\"\n\
                 [[cpus]]\ncount = 3\nmodel = \"c\"\nmemory = \"RAM\"\n\
                 [[gpus]]\nname = \"GPU0\"\nmodel = \"g\"\nmemory = \"GPU0\"\n\
                 [[links]]\nname = \"L\"\nbandwidth = \"1e9 B/s\"\nlatency = \"1e-3 s\"\n\
                 [[routes]]\nsrc = \"RAM\"\ndst = \"GPU0\"\nlinks = [\"L\"]\nsymmetric = true\n";
        machine::from_str(t, "t.toml").unwrap()
    }

    /// One GPU and two CPU workers.
    fn config() -> RunConfig {
        RunConfig {
            ncpu: Some(2),
            ncuda: Some(1),
            ..RunConfig::default()
        }
    }

    /// Predicted lengths per task, (GPU, CPU) in ms: a task can prefer either kind.
    struct Lengths(&'static [(f64, f64)]);

    impl KernelTimes for Lengths {
        fn mean_s(&self, _: &TaskGraph, task: TaskId, worker: &Worker) -> Option<f64> {
            let (gpu, cpu) = self.0[task.index()];
            Some(
                1e-3 * if worker.kind == WorkerKind::Gpu {
                    gpu
                } else {
                    cpu
                },
            )
        }

        fn draw_s(&self, _: &TaskGraph, _: TaskId, _: &Worker, mean_s: f64, _: &mut SimRng) -> f64 {
            mean_s
        }
    }

    const S: u64 = 1_000_000;

    /// A → C, A → B → D on 1 MB tiles, submitted A, C, B, D (task ids 0 to 3): A writes h0;
    /// C and B read it and write h1, h2; D reads h2. C and D are exits. Lengths (GPU, CPU),
    /// ms: A (1, 2), C (1, 4) prefers the GPU, B (10, 3) the CPU, D (2, 2).
    fn graph() -> TaskGraph {
        let mut b = TaskGraphBuilder::new();
        let cl = b.codelet("k").unwrap();
        let h: Vec<_> = (0..4)
            .map(|_| b.add_handle(Handle::bytes(S)).unwrap())
            .collect();
        let (r, w) = (AccessMode::R, AccessMode::W);
        b.submit(cl, 1.0, 0, &[Access::new(h[0], w)]).unwrap();
        b.submit(cl, 1.0, 0, &[Access::new(h[0], r), Access::new(h[1], w)])
            .unwrap();
        b.submit(cl, 1.0, 0, &[Access::new(h[0], r), Access::new(h[2], w)])
            .unwrap();
        b.submit(cl, 1.0, 0, &[Access::new(h[2], r), Access::new(h[3], w)])
            .unwrap();
        b.build().unwrap()
    }

    const LENGTHS: Lengths = Lengths(&[(1.0, 2.0), (1.0, 4.0), (10.0, 3.0), (2.0, 2.0)]);
    const A: TaskId = TaskId(0);
    const C: TaskId = TaskId(1);
    const B: TaskId = TaskId(2);
    const D: TaskId = TaskId(3);
    const GPU: WorkerId = WorkerId(0);
    const CPU0: WorkerId = WorkerId(1);
    const CPU1: WorkerId = WorkerId(2);

    fn close(got: f64, want_ms: f64) {
        assert!(
            (got - want_ms * 1e-3).abs() < 1e-12,
            "{got} s vs {want_ms} ms"
        );
    }

    #[test]
    fn optimistic_costs_ranks_and_mapping_by_hand() {
        let (m, g) = (machine(), graph());
        let f = Fixture::new(&m, &g, &LENGTHS, &config());
        let kinds: Vec<WorkerKind> = f.workers.iter().map(|w| w.kind).collect();
        assert_eq!(kinds, [WorkerKind::Gpu, WorkerKind::Cpu, WorkerKind::Cpu]);
        let p = Peft::compute_plan(&f.view(0.0));
        // Edge cost c̄ = L̄ + 1 MB / B̄ = 1 + 1 = 2 ms between RAM and GPU0, 0 within one.
        //
        // OCT (eq. 5), ms; "G" the GPU, "C" a CPU (both CPUs alike: one class):
        // C, D exits: 0.
        // B (succ D):  G: min(G 0 + 2 + 0, C 0 + 2 + 2) = 2;  C: min(G 0 + 2 + 2, C 0 + 2 + 0) = 2.
        // A (succ C, B):
        //   G: max(C: min(G 0 + 1 + 0, C 0 + 4 + 2) = 1,  B: min(G 2 + 10 + 0, C 2 + 3 + 2) = 7) = 7
        //   C: max(C: min(G 0 + 1 + 2, C 0 + 4 + 0) = 3,  B: min(G 2 + 10 + 2, C 2 + 3 + 0) = 5) = 5
        let want_oct = [
            (A, [7.0, 5.0, 5.0]),
            (C, [0.0; 3]),
            (B, [2.0; 3]),
            (D, [0.0; 3]),
        ];
        for (t, row) in want_oct {
            for (w, want) in [GPU, CPU0, CPU1].into_iter().zip(row) {
                close(p.oct_s(t, w), want);
            }
        }
        // rank_oct (eq. 6), the mean over the three workers: A 17/3, C 0, B 2, D 0.
        for (t, want) in [(A, 17.0 / 3.0), (C, 0.0), (B, 2.0), (D, 0.0)] {
            close(p.plan.rank_s[t.index()], want);
        }
        // Mapping by O_EFT = EFT + OCT (eq. 7), ms:
        // A: G 1 + 7 = 8, CPU0 2 + 5 = 7, CPU1 7 → CPU0 [0, 2] (HEFT's EFT would take the GPU).
        // Ready {C (rank 0), B (rank 2)}: B first, though submitted after C.
        // B: G ready 2 + 2 = 4 → 14 + 2 = 16; CPU0 ready 2 → 5 + 2 = 7; CPU1 7 → CPU0 [2, 5].
        // Ready {C, D}, both rank 0: C, the earlier in topological order.
        // C: G ready 4 → 5 + 0 = 5; CPU0 free at 5 → 9; CPU1 2 → 6 → GPU [4, 5].
        // D: G ready 5 + 2 = 7 → 9; CPU0 ready 5 → 7; CPU1 7 → CPU0 [5, 7]. Makespan 7.
        assert_eq!(p.plan.order, [A, B, C, D]);
        let want = [
            (A, CPU0, 0.0, 2.0),
            (C, GPU, 4.0, 5.0),
            (B, CPU0, 2.0, 5.0),
            (D, CPU0, 5.0, 7.0),
        ];
        for (t, w, start, finish) in want {
            let s = p.plan.slots[t.index()];
            assert_eq!(s.worker, w, "task {}", t.0);
            close(s.start_s, start);
            close(s.finish_s, finish);
        }
        close(p.plan.makespan_s(), 7.0);
    }

    #[test]
    fn heft_without_the_lookahead_plans_longer_here() {
        // HEFT, by hand: mean costs (ms) A 5/3, C 3, B 16/3, D 2; upward ranks D 2, C 3,
        // B 16/3 + 2 + 2 = 28/3, A 5/3 + max(2 + 3, 2 + 28/3) = 13: order A, B, C, D.
        // A: GPU [0, 1]. B: GPU 1 → 11, CPU0 ready 1 + 2 = 3 → 6: CPU0 [3, 6].
        // C: GPU [1, 2]. D: GPU ready 6 + 2 = 8 → 10, CPU0 6 → 8: CPU0 [6, 8]. Makespan 8,
        // against PEFT's 7: putting A on the slower CPU spares B's input transfer.
        let (m, g) = (machine(), graph());
        let f = Fixture::new(&m, &g, &LENGTHS, &config());
        let h = Heft::compute_plan(&f.view(0.0));
        assert_eq!(h.slots[A.index()].worker, GPU);
        close(h.makespan_s(), 8.0);
    }

    #[test]
    fn a_run_follows_the_plan() {
        let (m, g) = (machine(), graph());
        let mut s = Peft::new();
        let mut starts = WhoRan(Vec::new());
        let r = simulate_observed(&m, &g, &LENGTHS, &mut s, &config(), &mut starts).unwrap();
        assert_eq!(r.tasks, 4);
        assert_eq!(s.queued(), 0);
        // Each task on its planned worker; CPU0 runs A, B, D in that order.
        assert_eq!(starts.placed(), [(A, CPU0), (B, CPU0), (C, GPU), (D, CPU0)]);
        assert!(s.planned(CPU0).is_empty() && s.planned(GPU).is_empty());
    }
}
